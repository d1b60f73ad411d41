// The GPU stand-in for memory-bound compute ops (norms, activations, optimizer updates, …):
// one pass over the op's bytes, as those kernels are bandwidth-bound. Compiled by nvcc
// (memory_kernels.cu); callable from plain C++.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace backend::gpu {

// y[i] = scale · x[i] for i < elements, on `stream`: 8 bytes of device-memory traffic per
// element (a 4-byte read and a 4-byte write), so an op of B bytes runs B / 8 elements.
cudaError_t launch_memory_pass(const float* x, float* y, std::int64_t elements, float scale, cudaStream_t stream);

}  // namespace backend::gpu
