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

void add_to_union(std::vector<Interval>& merged, Interval interval) {
  if (interval.end <= interval.begin) return;
  // The common cases: after the last interval, or touching only it.
  if (merged.empty() || merged.back().end < interval.begin) {
    merged.push_back(interval);
    return;
  }
  if (merged.back().begin <= interval.begin) {
    merged.back().end = std::max(merged.back().end, interval.end);
    return;
  }
  // The first interval that ends at or after the new one's begin (ends are sorted too, the
  // intervals being disjoint): everything before it stays.
  const auto first = std::partition_point(merged.begin(), merged.end(),
                                          [&interval](const Interval& piece) { return piece.end < interval.begin; });
  auto last = first;  // one past the last interval the new one touches
  while (last != merged.end() && last->begin <= interval.end) {
    interval.begin = std::min(interval.begin, last->begin);
    interval.end = std::max(interval.end, last->end);
    ++last;
  }
  if (first == last) {
    merged.insert(first, interval);
  } else {
    *first = interval;
    merged.erase(first + 1, last);
  }
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

void SummaryBuilder::Union::add(Interval interval) {
  if (interval.end <= interval.begin) return;
  if (empty) {
    latest = interval;
    empty = false;
  } else if (interval.begin >= latest.begin && interval.begin <= latest.end) {
    latest.end = std::max(latest.end, interval.end);
  } else if (interval.begin > latest.end) {
    earlier.push_back(latest);
    latest = interval;
  } else {  // starts before the latest interval: merge into the whole list
    earlier.push_back(latest);
    add_to_union(earlier, interval);
    latest = earlier.back();
    earlier.pop_back();
  }
}

std::vector<Interval> SummaryBuilder::Union::merged() && {
  if (!empty) earlier.push_back(latest);
  return std::move(earlier);
}

SummaryBuilder::SummaryBuilder(std::size_t ranks) : ranks_(ranks) {}

void SummaryBuilder::add(const Span& span) {
  if (span.rank < 0 || static_cast<std::size_t>(span.rank) >= ranks_.size()) return;
  PerRank& rank = ranks_[span.rank];
  RankSummary& summary = rank.summary;
  if (!rank.seen) {
    summary.begin_ps = span.start_ps;
    summary.end_ps = span.end_ps;
    rank.seen = true;
  }
  summary.begin_ps = std::min(summary.begin_ps, span.start_ps);
  summary.end_ps = std::max(summary.end_ps, span.end_ps);
  const auto category = static_cast<std::size_t>(span.category);
  summary.busy_ps_by_category[category] += span.duration_ps();
  summary.bytes_by_category[category] += span.bytes;
  if (span.bytes > 0) summary.sending_ps_by_category[category] += span.duration_ps();
  if (is_compute(span.category)) {
    rank.compute.add({span.start_ps, span.end_ps});
    summary.flops += span.flops;
  } else if (is_communication(span.category)) {
    rank.comm.add({span.start_ps, span.end_ps});
    summary.comm_bytes += span.bytes;
  }
}

std::vector<RankSummary> SummaryBuilder::finish() {
  std::vector<RankSummary> summaries;
  summaries.reserve(ranks_.size());
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    RankSummary summary = ranks_[r].summary;
    summary.rank = static_cast<std::int32_t>(r);
    const std::vector<Interval> compute_union = std::move(ranks_[r].compute).merged();
    const std::vector<Interval> comm_union = std::move(ranks_[r].comm).merged();
    summary.compute_ps = total_length(compute_union);
    summary.comm_ps = total_length(comm_union);
    summary.exposed_comm_ps = length_not_covered(comm_union, compute_union);
    summaries.push_back(summary);
  }
  return summaries;
}

std::vector<RankSummary> summarize_ranks(const Timeline& timeline) {
  if (timeline.summaries.size() == timeline.ranks.size() && !timeline.ranks.empty()) return timeline.summaries;
  SummaryBuilder builder(timeline.ranks.size());
  // Not through op_spans(): a viewer's timeline holds tens of millions of spans.
  const std::optional<StringId> step = timeline.strings.find(kAlgorithmStepKind);
  for (const Span& span : timeline.spans) {
    if (!step || span.kind != *step) builder.add(span);
  }
  return builder.finish();
}

std::vector<MemoryPeak> memory_peaks(const Timeline& timeline) {
  std::vector<MemoryPeak> peaks(timeline.ranks.size());
  for (std::size_t i = 0; i < timeline.memory.size(); ++i) {
    const MemorySample& sample = timeline.memory[i];
    if (sample.rank < 0 || static_cast<std::size_t>(sample.rank) >= peaks.size()) continue;
    std::int64_t total = 0;
    for (std::int64_t bytes : sample.bytes) total += bytes;
    MemoryPeak& peak = peaks[sample.rank];
    if (!peak.found || total > peak.bytes) peak = {total, i, true};
  }
  return peaks;
}

}  // namespace trace
