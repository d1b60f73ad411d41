// GPU stand-ins for compute ops (see gpu_kernels.h).
#include "backend/gpu/gpu_kernels.h"

#include <algorithm>
#include <cmath>

#include "backend/gpu/cublas_library.h"
#include "backend/gpu/memory_kernels.h"

namespace backend::gpu {
namespace {

std::int64_t element_bytes(program::DType dtype) { return dtype == program::DType::kFP32 ? 4 : 2; }

cudaDataType_t cuda_type(program::DType dtype) {
  switch (dtype) {
    case program::DType::kFP32: return CUDA_R_32F;
    case program::DType::kFP16: return CUDA_R_16F;
    default: return CUDA_R_16BF;  // bf16, and fp8 (see gpu_kernels.h)
  }
}

std::string blas_error(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? "" : std::string("cuBLAS error: ") + cublas().status_string(status);
}

}  // namespace

ScratchBytes compute_scratch_bytes(const program::ComputeOp& compute) {
  const program::Shape& s = compute.shape;
  const std::int64_t element = element_bytes(compute.dtype);
  switch (compute.kind) {
    case program::ComputeKind::kMatmul: return {element * (s[1] * s[3] + s[3] * s[2]), element * s[0] * s[1] * s[2]};
    case program::ComputeKind::kAttention: {
      const std::int64_t batch = s[0] * s[1];
      return {element * batch * 3 * s[3] * s[4], element * batch * (s[3] * s[3] + s[3] * s[4])};
    }
    default: {  // x and y, bytes / 2 each
      const std::int64_t half = std::max<std::int64_t>(static_cast<std::int64_t>(compute.bytes) / 2, 4);
      return {half, half};
    }
  }
}

std::string enqueue_compute(const program::ComputeOp& compute, cublasHandle_t blas, cudaStream_t stream,
                            const char* inputs, char* outputs) {
  const program::Shape& s = compute.shape;
  const std::int64_t element = element_bytes(compute.dtype);
  const cudaDataType_t type = cuda_type(compute.dtype);
  const float zero = 0.0f;
  const auto scale = [](std::int64_t k) { return static_cast<float>(1 / std::sqrt(static_cast<double>(std::max<std::int64_t>(k, 1)))); };
  if (compute.kind == program::ComputeKind::kMatmul) {
    // Column-major C[m×n] = A[m×k]·B[k×n] / √k, batch times; A and B shared by the batch.
    const auto m = static_cast<int>(s[1]), n = static_cast<int>(s[2]), k = static_cast<int>(s[3]);
    const float alpha = scale(k);
    const char* a = inputs;
    const char* b = a + element * m * k;
    return blas_error(cublas().gemm_strided_batched(blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, type, m, 0, b, type,
                                                    k, 0, &zero, outputs, type, m, std::int64_t{m} * n,
                                                    static_cast<int>(s[0]), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  if (compute.kind == program::ComputeKind::kAttention) {
    // Per (sequence, head): scores[seq×seq] = Q·Kᵀ / √dim, out[seq×dim] = scores·V / √seq.
    const auto seq = static_cast<int>(s[3]), dim = static_cast<int>(s[4]);
    const auto batch = static_cast<int>(s[0] * s[1]);
    const double pair_flops = 4.0 * seq * seq * dim * batch;
    const auto pairs = std::max<std::int64_t>(1, std::llround(compute.flops / pair_flops));
    const std::int64_t qkv = std::int64_t{seq} * dim;
    const float score_scale = scale(dim), output_scale = scale(seq);
    const char* q = inputs;
    const char* k = q + element * qkv * batch;
    const char* v = k + element * qkv * batch;
    char* scores = outputs;
    char* out = scores + element * std::int64_t{seq} * seq * batch;
    for (std::int64_t p = 0; p < pairs; ++p) {
      std::string error = blas_error(cublas().gemm_strided_batched(
          blas, CUBLAS_OP_T, CUBLAS_OP_N, seq, seq, dim, &score_scale, k, type, dim, qkv, q, type, dim, qkv, &zero, scores,
          type, seq, std::int64_t{seq} * seq, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      if (error.empty()) {
        error = blas_error(cublas().gemm_strided_batched(blas, CUBLAS_OP_N, CUBLAS_OP_N, dim, seq, seq, &output_scale, v, type,
                                                         dim, qkv, scores, type, seq, std::int64_t{seq} * seq, &zero, out,
                                                         type, dim, qkv, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      }
      if (!error.empty()) return error;
    }
    return "";
  }
  const auto elements = static_cast<std::int64_t>(compute.bytes / 8);
  const cudaError_t status = launch_memory_pass(reinterpret_cast<const float*>(inputs), reinterpret_cast<float*>(outputs),
                                                elements, -1.0f, stream);
  return status == cudaSuccess ? "" : std::string("CUDA error: ") + cudaGetErrorString(status);
}

}  // namespace backend::gpu
