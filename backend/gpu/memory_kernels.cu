// The memory-pass kernel (see memory_kernels.h): a grid-stride loop, so any size runs with a
// grid that fills the device.
#include "backend/gpu/memory_kernels.h"

#include <algorithm>

namespace backend::gpu {
namespace {

__global__ void scale_copy(const float* __restrict__ x, float* __restrict__ y, std::int64_t elements, float scale) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < elements; i += stride) {
    y[i] = scale * x[i];
  }
}

}  // namespace

cudaError_t launch_memory_pass(const float* x, float* y, std::int64_t elements, float scale, cudaStream_t stream) {
  if (elements <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  constexpr std::int64_t kMostBlocks = 4096;  // a few waves on any current GPU; the loop covers the rest
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((elements + kThreads - 1) / kThreads, kMostBlocks));
  scale_copy<<<blocks, kThreads, 0, stream>>>(x, y, elements, scale);
  return cudaGetLastError();
}

}  // namespace backend::gpu
