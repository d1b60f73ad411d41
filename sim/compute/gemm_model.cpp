// Tile- and wave-quantised GEMM timing (see gemm_model.h).
#include "sim/compute/gemm_model.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace sim {
namespace {

// cuBLAS's most efficient tiles on A100 and later: "256 × 128 and 128 × 256 being the most
// efficient" (Matrix Multiplication Background User's Guide §2.3), and 128 × 128. Smaller
// tiles are less efficient per FLOP and are not modelled: a problem too small for these is
// split along K instead.
constexpr std::array<GemmTile, 3> kTiles = {{{256, 128}, {128, 256}, {128, 128}}};
constexpr double kPartialBytes = 4;        // split-K partial sums are fp32
constexpr double kMinSplitDepth = 256;     // K per split-K slice: a few 32-deep main-loop steps at least
constexpr std::int64_t kMaxSplit = 16;

double ceil_div(double a, double b) { return std::ceil(a / b); }

}  // namespace

GemmModel::GemmModel(int sms, double peak_flops, double ceiling, double memory_bandwidth)
    : sms_(sms), peak_flops_(peak_flops), ceiling_(ceiling), memory_bandwidth_(memory_bandwidth) {}

GemmPlan GemmModel::plan_with(const GemmShape& shape, GemmTile tile, std::int64_t split) const {
  const double useful = 2 * shape.batch * shape.m * shape.n * shape.k;
  const double depth = ceil_div(shape.k, static_cast<double>(split));
  const double tiles = shape.batch * ceil_div(shape.m, static_cast<double>(tile.m)) *
                       ceil_div(shape.n, static_cast<double>(tile.n)) * static_cast<double>(split);
  GemmPlan plan;
  plan.tile = tile;
  plan.split_k = split;
  plan.waves = ceil_div(tiles, sms_);
  const double per_sm_rate = peak_flops_ * ceiling_ / sms_;
  const double tile_seconds = 2 * static_cast<double>(tile.m * tile.n) * depth / per_sm_rate;
  const double reduction_bytes =
      split > 1 ? 2 * static_cast<double>(split) * shape.batch * shape.m * shape.n * kPartialBytes : 0;
  plan.seconds = plan.waves * tile_seconds + reduction_bytes / memory_bandwidth_;
  plan.quantisation = useful / (plan.waves * static_cast<double>(sms_) * 2 * static_cast<double>(tile.m * tile.n) * depth);
  return plan;
}

GemmPlan GemmModel::plan(const GemmShape& shape) const {
  const double useful = 2 * shape.batch * shape.m * shape.n * shape.k;
  if (sms_ <= 0 || useful <= 0) {
    GemmPlan plan;
    plan.seconds = useful > 0 ? useful / (peak_flops_ * ceiling_) : 0;
    return plan;
  }
  GemmPlan best;
  best.seconds = INFINITY;
  for (const GemmTile& tile : kTiles) {
    const double tiles = shape.batch * ceil_div(shape.m, static_cast<double>(tile.m)) * ceil_div(shape.n, static_cast<double>(tile.n));
    // Split K only while the tiles do not fill one wave and each slice stays deep enough.
    const auto max_split = static_cast<std::int64_t>(
        std::clamp(std::min(std::floor(sms_ / tiles), std::floor(shape.k / kMinSplitDepth)), 1.0, static_cast<double>(kMaxSplit)));
    for (std::int64_t split = 1; split <= max_split; ++split) {
      const GemmPlan candidate = plan_with(shape, tile, split);
      if (candidate.seconds < best.seconds) best = candidate;
    }
  }
  return best;
}

}  // namespace sim
