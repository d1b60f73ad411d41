// CPU stand-ins for compute ops (see cpu_kernels.h).
#include "backend/mpi/cpu_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

namespace backend::cpu {

// GEMMs of the op's shapes in single precision; memory-bound kinds as one pass over their
// bytes (read and write, 8 bytes per element).
void run_compute(const program::ComputeOp& compute, Scratch& scratch) {
  const program::Shape& s = compute.shape;
  if (compute.kind == program::ComputeKind::kMatmul) {
    const auto m = static_cast<int>(s[1]), n = static_cast<int>(s[2]), k = static_cast<int>(s[3]);
    float* a = Scratch::sized(scratch.a, std::int64_t{m} * k);
    float* b = Scratch::sized(scratch.b, std::int64_t{k} * n);
    float* c = Scratch::sized(scratch.c, std::int64_t{m} * n);
    for (std::int64_t i = 0; i < s[0]; ++i) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    }
    return;
  }
  if (compute.kind == program::ComputeKind::kAttention) {
    // Per (sequence, head): scores = Q·Kᵀ, then out = scores·V; as many such pairs as the op's
    // FLOPs hold (backward and recompute count more than one).
    const auto seq = static_cast<int>(s[3]), dim = static_cast<int>(s[4]);
    const double pair_flops = 4.0 * seq * seq * dim;
    const auto pairs = std::max<std::int64_t>(1, std::llround(compute.flops / pair_flops));
    float* q = Scratch::sized(scratch.a, std::int64_t{3} * seq * dim);
    float* scores = Scratch::sized(scratch.b, std::int64_t{seq} * seq);
    float* out = Scratch::sized(scratch.c, std::int64_t{seq} * dim);
    for (std::int64_t p = 0; p < pairs; ++p) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, seq, seq, dim, 1.0f, q, dim, q + seq * dim, dim, 0.0f,
                  scores, seq);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, seq, dim, seq, 1.0f, scores, seq, q + 2 * seq * dim, dim,
                  0.0f, out, dim);
    }
    return;
  }
  const auto elements = static_cast<std::int64_t>(compute.bytes / 8);
  if (elements <= 0) return;
  float* x = Scratch::sized(scratch.a, elements);
  float* y = Scratch::sized(scratch.b, elements);
  cblas_saxpy(static_cast<int>(elements), 0.5f, x, 1, y, 1);
}

}  // namespace backend::cpu
