// How long the math of one GEMM (or a batch of equal GEMMs) takes on a GPU, by its shape.
//
// cuBLAS computes C = A·B in output tiles, one thread block per tile, each block on one
// streaming multiprocessor (SM); the blocks run in waves of #SM (NVIDIA, "Matrix
// Multiplication Background User's Guide", DU-09799-001, §2.3 typical tile sizes, §3.1 tile
// quantisation, §3.2 wave quantisation). So a GEMM costs whole tiles and whole waves:
//
//   tiles = batch · ⌈M/Tm⌉ · ⌈N/Tn⌉ · split,   waves = ⌈tiles / #SM⌉
//   t     = waves · 2·Tm·Tn·⌈K/split⌉ / (peak/#SM · ceiling)  +  split-K reduction
//
// over cuBLAS's large tiles Tm×Tn ∈ {256×128, 128×256, 128×128}, taking the fastest (as its
// heuristics aim to). A problem with fewer tiles than SMs and a long K is split along K
// (split-K: each of `split` blocks sums a slice of K, then the fp32 partial products are
// written, read back and added: 2·split·M·N·4 bytes at memory bandwidth).
//
// `ceiling` is the fraction of the datasheet peak one SM's tensor cores sustain inside a full
// wave, the GPU at its power limit: ComputeModel derives it from a measured GEMM
// (DeviceSpec::gemm_sustained). The memory traffic is the caller's: ComputeModel adds it.
#pragma once

#include <cstdint>

namespace sim {

struct GemmShape {
  double batch = 1, m = 0, n = 0, k = 0;
};

struct GemmTile {
  std::int64_t m = 0, n = 0;
};

struct GemmPlan {
  GemmTile tile;
  std::int64_t split_k = 1;
  double waves = 0;
  double seconds = 0;       // math, quantised, plus the split-K reduction
  double quantisation = 1;  // useful FLOPs / FLOPs of the whole tiles in whole waves (≤ 1)
};

class GemmModel {
 public:
  // `sms` 0: no tiles or waves (the GEMM runs at ceiling · peak, whatever its shape).
  GemmModel(int sms, double peak_flops, double ceiling, double memory_bandwidth);

  GemmPlan plan(const GemmShape& shape) const;
  double ceiling() const { return ceiling_; }

 private:
  GemmPlan plan_with(const GemmShape& shape, GemmTile tile, std::int64_t split) const;

  int sms_;
  double peak_flops_;
  double ceiling_;
  double memory_bandwidth_;
};

}  // namespace sim
