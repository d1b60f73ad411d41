// The roofline compute model: FLOP-bound, bandwidth-bound, dtype peaks and the time scale.
#include "sim/compute/compute_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "topology/presets.h"

namespace {

program::ComputeOp op(program::ComputeKind kind, program::DType dtype, double flops, double bytes) {
  program::ComputeOp o;
  o.kind = kind;
  o.dtype = dtype;
  o.flops = flops;
  o.bytes = bytes;
  return o;
}

sim::ComputeEfficiency efficiency() {
  sim::ComputeEfficiency e;
  e.matmul = 0.8;
  e.attention = 0.5;
  e.memory = 0.9;
  e.kernel_overhead_s = 2e-6;
  return e;
}

TEST(ComputeModelTest, MatmulIsFlopBound) {
  const sim::ComputeModel model(*topology::device_preset("h100-sxm5"), efficiency());
  // 1 TFLOP and 1 GB: 1e12 / (989.4e12 × 0.8) = 1.263 ms against 1e9 / (3.35e12 × 0.9) = 0.33 ms.
  EXPECT_DOUBLE_EQ(model.seconds(op(program::ComputeKind::kMatmul, program::DType::kBF16, 1e12, 1e9)),
                   1e12 / (989.4e12 * 0.8) + 2e-6);
}

TEST(ComputeModelTest, AttentionUsesItsOwnEfficiency) {
  const sim::ComputeModel model(*topology::device_preset("h100-sxm5"), efficiency());
  EXPECT_DOUBLE_EQ(model.seconds(op(program::ComputeKind::kAttention, program::DType::kBF16, 1e12, 0)),
                   1e12 / (989.4e12 * 0.5) + 2e-6);
}

TEST(ComputeModelTest, ElementwiseIsBandwidthBound) {
  const sim::ComputeModel model(*topology::device_preset("h100-sxm5"), efficiency());
  EXPECT_DOUBLE_EQ(model.seconds(op(program::ComputeKind::kElementwise, program::DType::kBF16, 0, 3.35e9)),
                   3.35e9 / (3.35e12 * 0.9) + 2e-6);
}

TEST(ComputeModelTest, PeakDependsOnTheDtype) {
  const sim::ComputeModel a100(*topology::device_preset("a100-sxm4-80gb"), efficiency());
  EXPECT_DOUBLE_EQ(a100.peak_flops(program::DType::kFP32), 19.5e12);
  EXPECT_DOUBLE_EQ(a100.peak_flops(program::DType::kFP8), 312e12);  // no FP8 on A100: bf16 rate
  const sim::ComputeModel h100(*topology::device_preset("h100-sxm5"), efficiency());
  EXPECT_DOUBLE_EQ(h100.peak_flops(program::DType::kFP8), 1978.9e12);
}

program::ComputeOp gemm(std::int64_t m, std::int64_t n, std::int64_t k, program::DType dtype) {
  program::ComputeOp o = op(program::ComputeKind::kMatmul, dtype, 2.0 * m * n * k, 0);
  o.shape = program::Shape::of({1, m, n, k});
  return o;
}

TEST(ComputeModelTest, AGemmsMainLoopRunsAtTheRateItsGpuSustainsAndItsMemoryTrafficAddsToIt) {
  // The A100's measurement: 257 TFLOP/s at 8192³ on random data. 8192³ runs 19 waves of 108
  // tiles of 256 × 128 (2048 tiles), 19 · 2·256·128·8192 FLOPs per SM at 312/108 TFLOP/s each
  // at full rate; its A, B and C (3 · 8192² bf16) move at BabelStream's 1.70 TB/s. So the main
  // loop runs at 19 · 2·256·128·8192 / (312e12/108) / (2·8192³/257e12 − 6·8192²/1.70e12) of peak.
  const double measured = 2.0 * 8192 * 8192 * 8192 / 257e12;
  const double traffic = 3 * 2.0 * 8192 * 8192 / 1.70e12;
  const double ceiling = 19 * 2.0 * 256 * 128 * 8192 / (312e12 / 108) / (measured - traffic);
  sim::ComputeEfficiency preset = sim::ComputeEfficiency::preset();
  preset.kernel_overhead_s = 0;
  const sim::ComputeModel a100(*topology::device_preset("a100-sxm4-80gb"), preset);
  EXPECT_NEAR(a100.gemm_ceiling(program::DType::kBF16), ceiling, 1e-9);
  // 3456 × 8192 fills 27 × 32 = 864 tiles of 128 × 256 = 8 whole waves: no quantisation.
  program::ComputeOp full_waves = gemm(3456, 8192, 4096, program::DType::kBF16);
  full_waves.bytes = 2.0 * (3456 * 4096 + 4096 * 8192 + 3456 * 8192);
  EXPECT_NEAR(a100.seconds(full_waves), full_waves.flops / (312e12 * ceiling) + full_waves.bytes / 1.70e12, 1e-12);
  // Without bytes (a bare FLOP count) only the main loop is priced; so it is when the scenario
  // says compute ∝ FLOPs.
  EXPECT_NEAR(a100.seconds(gemm(3456, 8192, 4096, program::DType::kBF16)), full_waves.flops / (312e12 * ceiling), 1e-12);
  sim::ComputeEfficiency flops_only = preset;
  flops_only.matmul_memory_traffic = false;
  EXPECT_NEAR(sim::ComputeModel(*topology::device_preset("a100-sxm4-80gb"), flops_only).seconds(full_waves),
              full_waves.flops / (312e12 * ceiling), 1e-12);
  sim::ComputeEfficiency stated = preset;
  stated.matmul = 0.6;
  EXPECT_NEAR(sim::ComputeModel(*topology::device_preset("a100-sxm4-80gb"), stated).seconds(full_waves),
              full_waves.flops / (312e12 * 0.6) + full_waves.bytes / 1.70e12, 1e-12);
}

TEST(ComputeModelTest, UnfusedAttentionsSmallKGemmsCostTheirScoresTraffic) {
  // Attention's Q·Kᵀ at head dimension 64 (batch 256 of 2048 × 2048 × 64) writes 2.15 GB of
  // scores; its main loop is a quarter of that write's time on an A100, and the two add. On an
  // H200 the write hides all but a tenth of the main loop.
  sim::ComputeEfficiency preset = sim::ComputeEfficiency::preset();
  preset.kernel_overhead_s = 0;
  const sim::ComputeModel a100(*topology::device_preset("a100-sxm4-80gb"), preset);
  program::ComputeOp scores = gemm(2048, 2048, 64, program::DType::kBF16);
  scores.shape = program::Shape::of({256, 2048, 2048, 64});
  scores.flops *= 256;
  scores.bytes = 256 * 2048.0 * 2048 * 2 + 256 * 2 * (2 * 2048.0 * 64);
  const double main_loop = a100.gemm_plan({256, 2048, 2048, 64}, program::DType::kBF16).seconds;
  EXPECT_LT(main_loop, scores.bytes / 1.70e12 / 2);
  EXPECT_NEAR(a100.seconds(scores), main_loop + scores.bytes / 1.70e12, 1e-12);

  const sim::ComputeModel h200(*topology::device_preset("h200-sxm"), preset);
  const double h200_main_loop =
      h200.gemm_plan({256, 2048, 2048, 64}, program::DType::kBF16).seconds;
  const double h200_traffic = scores.bytes / 4.15e12;
  EXPECT_LT(h200_main_loop, h200_traffic);
  EXPECT_NEAR(h200.seconds(scores), h200_traffic + 0.10 * h200_main_loop, 1e-12);
  // torch.bmm ran this GEMM in 0.649 ms on an H200 (bench/results/h200-2026-12-04-shapes);
  // adding the two would say 0.734 ms, the max alone 0.550.
  EXPECT_NEAR(h200.seconds(scores), 0.649e-3, 0.15 * 0.649e-3);
  EXPECT_LT(std::abs(h200.seconds(scores) - 0.649e-3),
            std::abs(h200_main_loop + h200_traffic - 0.649e-3));
}

TEST(ComputeModelTest, Fp8AndMemoryBoundKernelsUseTheDevicesOwnMeasurements) {
  // The H200's sustained fp8 GEMM (the H100's stand-in): 1288.7 of 1978.9 TFLOP/s at
  // 8448 × 8192 × 16384, 33 × 64 = 2112 tiles of 256 × 128 = 16 whole waves of 132; on the H100
  // its fp8 A and B and bf16 C would move at 2.97 TB/s, a tenth of that time exposed beside the
  // main loop on Hopper.
  const double measured = 2.0 * 8448 * 8192 * 16384 / 1288.7e12;
  const double traffic = (8448.0 * 16384 + 16384.0 * 8192 + 2.0 * 8448 * 8192) / 2.97e12;
  const double full_rate = 2.0 * 8448 * 8192 * 16384 / 1978.9e12;
  const sim::ComputeModel h100(*topology::device_preset("h100-sxm5"), sim::ComputeEfficiency::preset());
  EXPECT_NEAR(h100.gemm_ceiling(program::DType::kFP8), full_rate / (measured - 0.10 * traffic),
              1e-9);
  // Each kind of memory-bound kernel at its own measured rate (topology/presets.cpp).
  program::ComputeOp norm = op(program::ComputeKind::kNorm, program::DType::kBF16, 0, 1e9);
  EXPECT_DOUBLE_EQ(h100.memory_efficiency(norm), 0.525);
  norm.phase = program::Phase::kBackward;
  EXPECT_DOUBLE_EQ(h100.memory_efficiency(norm), 0.336);
  // A bias's gradient, a row reduction, at the norm forward's rate (measured alike on an H200).
  program::ComputeOp bias_gradient = op(program::ComputeKind::kReduction, program::DType::kBF16, 0, 1e9);
  bias_gradient.phase = program::Phase::kBackward;
  EXPECT_DOUBLE_EQ(h100.memory_efficiency(bias_gradient), 0.525);
  EXPECT_DOUBLE_EQ(h100.memory_efficiency(op(program::ComputeKind::kSoftmax, program::DType::kBF16, 0, 1e9)), 1.89 / 3.35);
  EXPECT_DOUBLE_EQ(h100.memory_efficiency(op(program::ComputeKind::kElementwise, program::DType::kBF16, 0, 1e9)),
                   2.97 / 3.35);
  // An unmeasured device borrows the Hopper GPU's rates as fractions of its own peaks.
  const sim::ComputeModel l40s(*topology::device_preset("l40s"), sim::ComputeEfficiency::preset());
  EXPECT_DOUBLE_EQ(l40s.memory_efficiency(op(program::ComputeKind::kElementwise, program::DType::kBF16, 0, 1e9)),
                   4.15 / 4.8);
  EXPECT_GT(l40s.gemm_ceiling(program::DType::kBF16), 708.5 / 989.4);  // less the GEMM's memory traffic
  EXPECT_LT(l40s.gemm_ceiling(program::DType::kBF16), 0.85);
  // A stated memory efficiency applies to every kind of kernel.
  sim::ComputeEfficiency stated = sim::ComputeEfficiency::preset();
  stated.memory = 0.5;
  EXPECT_DOUBLE_EQ(sim::ComputeModel(*topology::device_preset("h100-sxm5"), stated).memory_efficiency(norm), 0.5);
}

TEST(ComputeModelTest, AStreamingKernelFollowsTheMeasuredSizeCurve) {
  // Triton's vector-add tutorial on an A100 80GB (z = x + y, fp32, L2 flushed; triton-lang.org
  // tutorial 01's table): bytes moved → µs per call. An isolated call also pays its launch and
  // the CUDA events' timing, the 6.1 µs the smallest sizes take; a kernel in a stream of kernels
  // does not. dtsim's 2 µs + bytes / (0.834 · 2.039 TB/s) must follow what is left within 10 %
  // from 12 MB up (below that the floor's uncertainty is as large as the kernel).
  sim::ComputeEfficiency preset = sim::ComputeEfficiency::preset();
  const sim::ComputeModel a100(*topology::device_preset("a100-sxm4-80gb"), preset);
  constexpr double kFloorUs = 6.1;
  const std::pair<double, double> measured[] = {{12.58e6, 15.4}, {25.17e6, 24.6}, {50.33e6, 39.9},  {100.7e6, 70.7},
                                                {201.3e6, 129.0}, {402.7e6, 248.0}, {805.3e6, 482.0}, {1610.6e6, 955.0}};
  for (const auto& [bytes, us] : measured) {
    const double kernel_us = a100.seconds(op(program::ComputeKind::kElementwise, program::DType::kFP32, 0, bytes)) * 1e6;
    EXPECT_NEAR(kernel_us, us - kFloorUs, 0.10 * (us - kFloorUs)) << bytes << " bytes";
  }
}

TEST(ComputeModelTest, FusedAttentionRunsAtTheGpusFlashAttention2RateForItsSequence) {
  // FlashAttention-2 forward + backward, causal, head dim 128 (its README's benchmark): A100
  // 155 TFLOP/s at s = 2k; H100 221 at 1k and, between 2k (265) and 4k (294), linear in log(s).
  sim::ComputeEfficiency preset = sim::ComputeEfficiency::preset();
  const sim::ComputeModel a100(*topology::device_preset("a100-sxm4-80gb"), preset);
  const sim::ComputeModel h100(*topology::device_preset("h100-sxm5"), preset);
  EXPECT_DOUBLE_EQ(a100.attention_efficiency(2048), 155e12 / 312e12);
  EXPECT_DOUBLE_EQ(h100.attention_efficiency(1024), 221e12 / 989.4e12);
  EXPECT_NEAR(h100.attention_efficiency(std::sqrt(2048.0 * 4096.0)), (265e12 + 294e12) / 2 / 989.4e12, 1e-12);
  preset.kernel_overhead_s = 0;
  program::ComputeOp attention = op(program::ComputeKind::kAttention, program::DType::kBF16, 1e12, 0);
  attention.shape = program::Shape::of({1, 32, 32, 2048, 128});
  EXPECT_NEAR(sim::ComputeModel(*topology::device_preset("a100-sxm4-80gb"), preset).seconds(attention), 1e12 / 155e12, 1e-12);
  EXPECT_DOUBLE_EQ(sim::ComputeModel(*topology::device_preset("l40s"), preset).attention_efficiency(2048),
                   sim::ComputeEfficiency::kUnmeasuredAttention);
}

TEST(ComputeModelTest, TheScenariosAttentionKernelPicksItsOwnMeasuredCurve) {
  // The same README benchmark at s = 2k: A100 FlashAttention 69, Triton 68 TFLOP/s; H100
  // FlashAttention 108, and Triton (not published on H100) takes FlashAttention's curve.
  sim::ComputeEfficiency flash1 = sim::ComputeEfficiency::preset();
  flash1.attention_kernel = topology::AttentionKernel::kFlash1;
  sim::ComputeEfficiency triton = sim::ComputeEfficiency::preset();
  triton.attention_kernel = topology::AttentionKernel::kTriton;
  const topology::DeviceSpec a100 = *topology::device_preset("a100-sxm4-80gb");
  const topology::DeviceSpec h200 = *topology::device_preset("h200-sxm");
  EXPECT_DOUBLE_EQ(sim::ComputeModel(a100, flash1).attention_efficiency(2048), 69e12 / 312e12);
  EXPECT_DOUBLE_EQ(sim::ComputeModel(a100, triton).attention_efficiency(2048), 68e12 / 312e12);
  EXPECT_DOUBLE_EQ(sim::ComputeModel(h200, flash1).attention_efficiency(2048), 108e12 / 989.4e12);
  EXPECT_DOUBLE_EQ(sim::ComputeModel(h200, triton).attention_efficiency(16384), 137e12 / 989.4e12);
  // A stated efficiency still wins over any curve.
  triton.attention = 0.4;
  EXPECT_DOUBLE_EQ(sim::ComputeModel(a100, triton).attention_efficiency(2048), 0.4);
}

TEST(ComputeModelTest, ASmallGemmPaysForItsIdleSms) {
  // 1024² output: 64 tiles of 128 × 128 on 108 SMs (split-K would make slices under 256 deep
  // at K 256), so one wave with 44 SMs idle: 64/108 of the main loop's rate.
  sim::ComputeEfficiency preset = sim::ComputeEfficiency::preset();
  preset.kernel_overhead_s = 0;
  const sim::ComputeModel a100(*topology::device_preset("a100-sxm4-80gb"), preset);
  const auto small = gemm(1024, 1024, 256, program::DType::kBF16);
  EXPECT_NEAR(a100.seconds(small), small.flops / (312e12 * a100.gemm_ceiling(program::DType::kBF16) * 64.0 / 108.0), 1e-15);
}

TEST(ComputeModelTest, TimeScaleMultipliesEveryOp) {
  sim::ComputeModel model(*topology::device_preset("h100-sxm5"), efficiency());
  const auto matmul = op(program::ComputeKind::kMatmul, program::DType::kBF16, 1e12, 0);
  const double base = model.seconds(matmul);
  model.set_time_scale(2.5);
  EXPECT_DOUBLE_EQ(model.seconds(matmul), 2.5 * base);
}

}  // namespace
