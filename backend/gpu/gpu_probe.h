// Fills the CUDA/NCCL part of Capabilities. Two implementations: gpu_probe_cuda.cpp (CUDA
// runtime and NCCL, compiled when the build found them) and gpu_probe_none.cpp.
#pragma once

#include "backend/capabilities.h"

namespace backend {

void probe_gpus(Capabilities& capabilities);

}  // namespace backend
