// Probe for builds without CUDA/NCCL: says so.
#include "backend/gpu/gpu_probe.h"

namespace backend {

void probe_gpus(Capabilities& capabilities) {
  capabilities.built_with_cuda = false;
  capabilities.gpu_status = "built without CUDA";
}

}  // namespace backend
