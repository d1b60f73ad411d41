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

#include "sim/trace/rank_summary.h"
#include "sim/trace/timeline.h"

namespace trace {

struct Interval {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

// Accumulates spans into per-rank summaries as they come, keeping only two merged interval
// lists per rank (compute and communication unions, merged on arrival), so a producer can
// summarise every rank while storing full spans for a few. Spans arriving in end-time order,
// as a simulator commits them, merge in amortised O(1).
class SummaryBuilder {
 public:
  explicit SummaryBuilder(std::size_t ranks);
  void add(const Span& span);
  std::vector<RankSummary> finish();

 private:
  // A union of intervals: the merged list before its latest interval, and that interval kept
  // apart, next to the rank's other counters, so that the usual span (extending or following
  // the latest) touches no list.
  struct Union {
    std::vector<Interval> earlier;
    Interval latest;
    bool empty = true;
    void add(Interval interval);
    std::vector<Interval> merged() &&;
  };
  struct PerRank {
    RankSummary summary;
    Union compute;
    Union comm;
    bool seen = false;
  };
  std::vector<PerRank> ranks_;
};

// One entry per rank of the timeline, in rank order: the producer's summaries when the
// timeline carries them (Timeline::summaries), else computed from its spans (algorithm steps,
// kAlgorithmStepKind, left out).
std::vector<RankSummary> summarize_ranks(const Timeline& timeline);

// Peak of the summed memory series per rank (one entry per rank of the timeline): its bytes
// and the index of the peak sample in Timeline::memory; not found without samples.
struct MemoryPeak {
  std::int64_t bytes = 0;
  std::size_t sample = 0;
  bool found = false;
};
std::vector<MemoryPeak> memory_peaks(const Timeline& timeline);

// Adds an interval to a merged (sorted, disjoint) list, keeping it merged.
void add_to_union(std::vector<Interval>& merged, Interval interval);
// Sorts and merges overlapping or touching intervals in place; returns the merged list.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);
std::int64_t total_length(const std::vector<Interval>& merged);
// Length of `a` not covered by `b`; both must be merged (sorted, disjoint).
std::int64_t length_not_covered(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace trace
