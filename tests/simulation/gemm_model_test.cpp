// The tile- and wave-quantised GEMM model, against hand-counted tiles and waves.
#include "sim/compute/gemm_model.h"

#include <gtest/gtest.h>

namespace {

constexpr int kSms = 108;  // A100
constexpr double kPeak = 312e12;
constexpr double kCeiling = 0.8;
constexpr double kBandwidth = 1.8e12;

double tile_seconds(double tile_m, double tile_n, double depth) {
  return 2 * tile_m * tile_n * depth / (kPeak * kCeiling / kSms);
}

TEST(GemmModelTest, AShapeThatFillsWholeWavesRunsAtTheCeiling) {
  // 3456 × 4096 in 128 × 256 tiles: 27 × 16 = 432 tiles = 4 waves of 108, none idle.
  const sim::GemmPlan plan = sim::GemmModel(kSms, kPeak, kCeiling, kBandwidth).plan({1, 3456, 4096, 8192});
  EXPECT_EQ(plan.tile.m, 128);
  EXPECT_EQ(plan.tile.n, 256);
  EXPECT_EQ(plan.waves, 4);
  EXPECT_DOUBLE_EQ(plan.quantisation, 1.0);
  EXPECT_NEAR(plan.seconds, 2.0 * 3456 * 4096 * 8192 / (kPeak * kCeiling), 1e-12);
}

TEST(GemmModelTest, APartialWaveCostsAWholeOne) {
  // NVIDIA's wave-quantisation example, M 2304, K 4096: N 1664 gives 9 × 13 = 117 tiles of
  // 256 × 128 — two waves for 1.08 waves of work. 128 × 128 tiles (18 × 13 = 234, 3 waves of
  // half-size tiles) take 3 units of time against 4, so they win.
  const sim::GemmPlan plan = sim::GemmModel(kSms, kPeak, kCeiling, kBandwidth).plan({1, 2304, 1664, 4096});
  EXPECT_EQ(plan.tile.m, 128);
  EXPECT_EQ(plan.tile.n, 128);
  EXPECT_EQ(plan.split_k, 1);
  EXPECT_EQ(plan.waves, 3);
  EXPECT_NEAR(plan.quantisation, 2304.0 * 1664 / (3 * kSms * 128 * 128), 1e-12);
  EXPECT_NEAR(plan.seconds, 3 * tile_seconds(128, 128, 4096), 1e-12);
}

TEST(GemmModelTest, PartialTilesAreComputedWhole) {
  // 257 rows need three 128-row tiles: 3 × 1 tiles of 128 × 128, one wave.
  const sim::GemmPlan plan = sim::GemmModel(kSms, kPeak, kCeiling, kBandwidth).plan({1, 257, 128, 256});
  EXPECT_EQ(plan.waves, 1);
  EXPECT_NEAR(plan.quantisation, 257.0 * 128 / (kSms * 128 * 128), 1e-12);
}

TEST(GemmModelTest, FewTilesAndADeepKAreSplitAlongK) {
  // One 128 × 128 tile, K 65536: split 16 ways (the cap), each slice 4096 deep, in one wave,
  // then 16 fp32 partial products written and read back.
  const sim::GemmPlan plan = sim::GemmModel(kSms, kPeak, kCeiling, kBandwidth).plan({1, 128, 128, 65536});
  EXPECT_EQ(plan.split_k, 16);
  EXPECT_EQ(plan.waves, 1);
  EXPECT_NEAR(plan.seconds, tile_seconds(128, 128, 4096) + 2.0 * 16 * 128 * 128 * 4 / kBandwidth, 1e-15);
}

TEST(GemmModelTest, BatchedGemmsShareTheWaves) {
  // 54 GEMMs of 128 × 256: 54 tiles of 128 × 256 or 108 of 128 × 128, one wave either way;
  // the smaller tiles take half the time.
  const sim::GemmPlan plan = sim::GemmModel(kSms, kPeak, kCeiling, kBandwidth).plan({54, 128, 256, 1024});
  EXPECT_EQ(plan.waves, 1);
  EXPECT_NEAR(plan.seconds, tile_seconds(128, 128, 1024), 1e-15);
}

TEST(GemmModelTest, WithoutSmsTheShapeDoesNotMatter) {
  const sim::GemmPlan plan = sim::GemmModel(0, kPeak, kCeiling, kBandwidth).plan({1, 100, 100, 100});
  EXPECT_DOUBLE_EQ(plan.seconds, 2e6 / (kPeak * kCeiling));
}

}  // namespace
