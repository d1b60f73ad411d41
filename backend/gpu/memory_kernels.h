// The GPU kernels dtsim writes itself (compiled by nvcc in memory_kernels.cu, callable from
// plain C++):
//  * the stand-in for memory-bound compute ops (norms, activations, optimizer updates, …): one
//    pass over the op's bytes, as those kernels are bandwidth-bound;
//  * random fill of the stand-ins' inputs: tensor cores run about 13 % faster on zeros than on
//    random data (Horace He, "Strangely, Matrix Multiplications on GPUs Run Faster When Given
//    'Predictable' Data!", 2024), so GEMMs on cudaMalloc'd or cleared memory would be timed
//    faster than training runs them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace backend::gpu {

// y[i] = scale · x[i] for i < elements, on `stream`: 8 bytes of device-memory traffic per
// element (a 4-byte read and a 4-byte write), so an op of B bytes runs B / 8 elements.
cudaError_t launch_memory_pass(const float* x, float* y, std::int64_t elements, float scale, cudaStream_t stream);

// Fills `bytes` (rounded down to 2) at `data` with pseudo-random bf16 values of magnitude 2⁻⁸ … 1
// and either sign, from `seed` (a hash of the index: the same seed, the same data). Read as
// fp16 they are finite (magnitude below 2), read as fp32 every 4 bytes hold a value of
// magnitude below 2 — random, finite inputs for every dtype the stand-ins use.
cudaError_t fill_random(void* data, std::int64_t bytes, std::uint32_t seed, cudaStream_t stream);

}  // namespace backend::gpu
