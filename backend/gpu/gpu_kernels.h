// The GPU stand-ins for a Program's compute ops, shared by the GPU executor and
// `dtsim calibrate --backend nccl` (which times exactly these):
//  * matmul [batch, m, n, k]: cublasGemmStridedBatchedEx in the op's dtype (fp8 runs as bf16:
//    cuBLAS's fp8 GEMMs need cublasLt scale factors), fp32 accumulation;
//  * attention [batch, heads, kv_heads, seq, dim]: the Q·Kᵀ and ·V GEMMs batched over
//    batch × heads, as many pairs as the op's FLOPs hold (as the CPU executor);
//  * memory-bound kinds: the memory-pass kernel over the op's bytes (memory_kernels.h).
// Each op reads only from an input area and writes only to an output area: the inputs, filled
// once with random values (fill_random), stay random for every op of a run, however the ops'
// shapes overlap. GEMMs scale by 1/√k (as attention scales its scores), so that results keep
// the inputs' magnitude in every dtype.
// Host↔device copies and host-side ops are the executor's (they need pinned memory and host
// threads).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "strategies/program/program.h"

namespace backend::gpu {

// Device bytes the op's stand-in reads and writes.
struct ScratchBytes {
  std::int64_t inputs = 0;
  std::int64_t outputs = 0;
  std::int64_t total() const { return inputs + outputs; }
};

// `bytes` rounded up to 256, so that a buffer placed after it is aligned for any element type.
constexpr std::int64_t aligned_bytes(std::int64_t bytes) { return (bytes + 255) / 256 * 256; }
ScratchBytes compute_scratch_bytes(const program::ComputeOp& compute);

// Enqueues the op's stand-in on `stream` (`blas` is bound to it), reading `inputs` and writing
// `outputs`, of at least compute_scratch_bytes(compute) each. Returns what failed, or an empty
// string.
std::string enqueue_compute(const program::ComputeOp& compute, cublasHandle_t blas, cudaStream_t stream,
                            const char* inputs, char* outputs);

}  // namespace backend::gpu
