// Per-rank metrics computed from a timeline alone, so that simulated and measured timelines
// are summarised by the same code.
//
//   compute time   = length of the union of compute spans (forward, backward, recompute,
//                    optimizer) on every stream of the rank;
//   comm time      = length of the union of communication spans;
//   exposed comm   = length of (comm union) minus (compute union): communication during
//                    which the rank computes nothing, i.e. time communication adds to the step;
//   overlap ratio  = 1 − exposed / comm (1 when the rank does not communicate);
//   R              = comm / compute (the chapter's communication/computation ratio, §6.1.7).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/trace/timeline.h"

namespace trace {

struct RankSummary {
  std::int32_t rank = 0;
  std::int64_t begin_ps = 0;  // first span start (0 if the rank has no span)
  std::int64_t end_ps = 0;    // last span end
  std::int64_t compute_ps = 0;
  std::int64_t comm_ps = 0;
  std::int64_t exposed_comm_ps = 0;
  std::int64_t comm_bytes = 0;  // sum of bytes sent by communication spans
  double flops = 0;             // sum of FLOPs of compute spans
  std::array<std::int64_t, kCategoryCount> busy_ps_by_category{};  // sum of span durations
  std::array<std::int64_t, kCategoryCount> bytes_by_category{};    // sum of span bytes

  double overlap_ratio() const;
  double comm_compute_ratio() const;
};

// One entry per rank of the timeline, in rank order.
std::vector<RankSummary> summarize_ranks(const Timeline& timeline);

struct Interval {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};
// Sorts and merges overlapping or touching intervals in place; returns the merged list.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);
std::int64_t total_length(const std::vector<Interval>& merged);
// Length of `a` not covered by `b`; both must be merged (sorted, disjoint).
std::int64_t length_not_covered(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace trace
