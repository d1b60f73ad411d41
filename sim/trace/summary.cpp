// Interval unions and per-rank metrics (see summary.h for the definitions).
#include "sim/trace/summary.h"

#include <algorithm>

namespace trace {

double RankSummary::overlap_ratio() const {
  if (comm_ps == 0) return 1.0;
  return 1.0 - static_cast<double>(exposed_comm_ps) / static_cast<double>(comm_ps);
}

double RankSummary::comm_compute_ratio() const {
  if (compute_ps == 0) return 0.0;
  return static_cast<double>(comm_ps) / static_cast<double>(compute_ps);
}

std::vector<Interval> merge_intervals(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> merged;
  for (const Interval& interval : intervals) {
    if (interval.end <= interval.begin) continue;
    if (!merged.empty() && interval.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, interval.end);
    } else {
      merged.push_back(interval);
    }
  }
  return merged;
}

std::int64_t total_length(const std::vector<Interval>& merged) {
  std::int64_t total = 0;
  for (const Interval& interval : merged) total += interval.end - interval.begin;
  return total;
}

std::int64_t length_not_covered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t uncovered = 0;
  std::size_t j = 0;
  for (const Interval& piece : a) {
    std::int64_t cursor = piece.begin;
    while (j < b.size() && b[j].end <= cursor) ++j;
    for (std::size_t k = j; k < b.size() && b[k].begin < piece.end; ++k) {
      if (b[k].begin > cursor) uncovered += b[k].begin - cursor;
      cursor = std::max(cursor, b[k].end);
      if (cursor >= piece.end) break;
    }
    if (cursor < piece.end) uncovered += piece.end - cursor;
  }
  return uncovered;
}

SummaryBuilder::SummaryBuilder(std::size_t ranks)
    : summaries_(ranks), compute_(ranks), comm_(ranks), seen_(ranks, false) {}

void SummaryBuilder::add(const Span& span) {
  if (span.rank < 0 || static_cast<std::size_t>(span.rank) >= summaries_.size()) return;
  RankSummary& summary = summaries_[span.rank];
  if (!seen_[span.rank]) {
    summary.begin_ps = span.start_ps;
    summary.end_ps = span.end_ps;
    seen_[span.rank] = true;
  }
  summary.begin_ps = std::min(summary.begin_ps, span.start_ps);
  summary.end_ps = std::max(summary.end_ps, span.end_ps);
  const auto category = static_cast<std::size_t>(span.category);
  summary.busy_ps_by_category[category] += span.duration_ps();
  summary.bytes_by_category[category] += span.bytes;
  if (is_compute(span.category)) {
    compute_[span.rank].push_back({span.start_ps, span.end_ps});
    summary.flops += span.flops;
  } else if (is_communication(span.category)) {
    comm_[span.rank].push_back({span.start_ps, span.end_ps});
    summary.comm_bytes += span.bytes;
  }
}

std::vector<RankSummary> SummaryBuilder::finish() {
  for (std::size_t rank = 0; rank < summaries_.size(); ++rank) {
    RankSummary& summary = summaries_[rank];
    summary.rank = static_cast<std::int32_t>(rank);
    const auto compute_union = merge_intervals(std::move(compute_[rank]));
    const auto comm_union = merge_intervals(std::move(comm_[rank]));
    summary.compute_ps = total_length(compute_union);
    summary.comm_ps = total_length(comm_union);
    summary.exposed_comm_ps = length_not_covered(comm_union, compute_union);
  }
  return std::move(summaries_);
}

std::vector<RankSummary> summarize_ranks(const Timeline& timeline) {
  if (timeline.summaries.size() == timeline.ranks.size() && !timeline.ranks.empty()) return timeline.summaries;
  SummaryBuilder builder(timeline.ranks.size());
  for (const Span& span : timeline.spans) builder.add(span);
  return builder.finish();
}

}  // namespace trace
