// dtsim's own GPU kernels (see memory_kernels.h): grid-stride loops, so any size runs with a
// grid that fills the device.
#include "backend/gpu/memory_kernels.h"

#include <algorithm>

namespace backend::gpu {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMostBlocks = 4096;  // a few waves on any current GPU; the loop covers the rest

unsigned blocks_for(std::int64_t elements) {
  return static_cast<unsigned>(std::min<std::int64_t>((elements + kThreads - 1) / kThreads, kMostBlocks));
}

__global__ void scale_copy(const float* __restrict__ x, float* __restrict__ y, std::int64_t elements, float scale) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < elements; i += stride) {
    y[i] = scale * x[i];
  }
}

// A bf16 bit pattern from a hash of (seed, index) (a 32-bit integer finaliser, "lowbias32" by
// Chris Wellons): sign random, exponent 119 … 127 (2⁻⁸ … 1), mantissa random.
__device__ unsigned short random_bf16(std::uint32_t seed, std::uint64_t index) {
  std::uint32_t h = seed ^ static_cast<std::uint32_t>(index) ^ static_cast<std::uint32_t>(index >> 32) * 0x9E3779B9u;
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  const unsigned sign = (h >> 31) & 1u;
  const unsigned exponent = 119u + (h >> 7) % 9u;
  const unsigned mantissa = h & 0x7Fu;
  return static_cast<unsigned short>((sign << 15) | (exponent << 7) | mantissa);
}

__global__ void random_halves(unsigned short* __restrict__ data, std::int64_t halves, std::uint32_t seed) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < halves; i += stride) {
    data[i] = random_bf16(seed, static_cast<std::uint64_t>(i));
  }
}

}  // namespace

cudaError_t launch_memory_pass(const float* x, float* y, std::int64_t elements, float scale, cudaStream_t stream) {
  if (elements <= 0) return cudaSuccess;
  scale_copy<<<blocks_for(elements), kThreads, 0, stream>>>(x, y, elements, scale);
  return cudaGetLastError();
}

cudaError_t fill_random(void* data, std::int64_t bytes, std::uint32_t seed, cudaStream_t stream) {
  const std::int64_t halves = bytes / 2;
  if (halves <= 0) return cudaSuccess;
  random_halves<<<blocks_for(halves), kThreads, 0, stream>>>(static_cast<unsigned short*>(data), halves, seed);
  return cudaGetLastError();
}

}  // namespace backend::gpu
