// Parallel layout: how global ranks map to data-, tensor- and pipeline-parallel coordinates,
// and the rank groups that follow from it.
//
// Megatron-LM's order: tensor-parallel rank varies fastest, then context-parallel, then
// data-parallel, then pipeline stage — rank = tp + TP·(cp + CP·(dp + DP·pp)) (Megatron-Core's
// "tp-cp-ep-dp-pp") — so a tensor-parallel group sits on consecutive GPUs of one node.
// Ranks are placed block-wise: rank r runs on GPU r.
// Expert parallelism splits the data-parallel coordinate as Megatron-Core's expert rank
// generator does (order tp-ep-dp-pp): dp = ep_rank + EP·expert_dp_rank, so an expert-parallel
// group is EP consecutive data-parallel ranks (inside a node when TP·CP·EP fits in one).
#pragma once

#include <cstdint>
#include <vector>

#include "strategies/program/program.h"

namespace strategies {

struct RankCoordinates {
  std::int32_t dp = 0;
  std::int32_t tp = 0;
  std::int32_t pp = 0;
  std::int32_t cp = 0;
};

class ParallelLayout {
 public:
  ParallelLayout(std::int32_t dp, std::int32_t tp, std::int32_t pp, std::int32_t ep = 1, std::int32_t cp = 1);
  std::int32_t world() const { return dp_ * tp_ * pp_ * cp_; }
  std::int32_t rank_of(RankCoordinates coordinates) const;
  RankCoordinates coordinates(std::int32_t rank) const;
  // "world", "dp", "tp" and "pp" families, in that order; then, with ep > 1, "ep" and
  // "expert_dp"; with cp > 1, "cp". The "dp" groups hold every rank with the same parameters:
  // dp × cp of them (context-parallel ranks innermost).
  std::vector<program::GroupFamily> group_families() const;

 private:
  std::int32_t dp_;
  std::int32_t tp_;
  std::int32_t pp_;
  std::int32_t ep_;
  std::int32_t cp_;
};

std::vector<std::int32_t> block_placement(std::int32_t world);

}  // namespace strategies
