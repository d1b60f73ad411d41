// The roofline compute model: FLOP-bound, bandwidth-bound, dtype peaks and the time scale.
#include "sim/compute/compute_model.h"

#include <gtest/gtest.h>

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

TEST(ComputeModelTest, TimeScaleMultipliesEveryOp) {
  sim::ComputeModel model(*topology::device_preset("h100-sxm5"), efficiency());
  const auto matmul = op(program::ComputeKind::kMatmul, program::DType::kBF16, 1e12, 0);
  const double base = model.seconds(matmul);
  model.set_time_scale(2.5);
  EXPECT_DOUBLE_EQ(model.seconds(matmul), 2.5 * base);
}

}  // namespace
