// Summary and compare figures (see timeline_stats.h).
#include "sim/trace/timeline_stats.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "sim/trace/summary.h"

namespace trace {
namespace {

constexpr double kSecondsPerPs = 1e-12;

std::int32_t steps_of(const Timeline& timeline) {
  return static_cast<std::int32_t>(timeline.recorded_steps().value_or(1));
}

std::int64_t total(const std::vector<std::int64_t>& bytes) { return std::accumulate(bytes.begin(), bytes.end(), std::int64_t{0}); }

}  // namespace

TimelineStats timeline_stats(const Timeline& timeline) {
  TimelineStats stats;
  stats.steps = steps_of(timeline);
  const std::vector<RankSummary> ranks = summarize_ranks(timeline);
  std::int64_t begin = std::numeric_limits<std::int64_t>::max();
  std::int64_t end = std::numeric_limits<std::int64_t>::min();
  std::size_t active = 0;
  double overlap_sum = 0;
  for (const RankSummary& rank : ranks) {
    // A rank that neither computes nor communicates (a PyTorch trace's host process) is not a
    // training rank.
    if (rank.compute_ps == 0 && rank.comm_ps == 0) continue;
    ++active;
    begin = std::min(begin, rank.begin_ps);
    end = std::max(end, rank.end_ps);
    stats.comm_compute_ratio += rank.comm_compute_ratio();
    overlap_sum += rank.overlap_ratio();
    stats.exposed_comm_s += static_cast<double>(rank.exposed_comm_ps) * kSecondsPerPs;
    stats.compute_s += static_cast<double>(rank.compute_ps) * kSecondsPerPs;
    stats.comm_s += static_cast<double>(rank.comm_ps) * kSecondsPerPs;
    for (std::size_t c = 0; c < kCategoryCount; ++c) {
      stats.seconds_by_category[c] += static_cast<double>(rank.busy_ps_by_category[c]) * kSecondsPerPs;
    }
  }
  if (active > 0) {
    const double per_rank_step = 1.0 / static_cast<double>(active) / stats.steps;
    stats.step_s = static_cast<double>(end - begin) * kSecondsPerPs / stats.steps;
    stats.comm_compute_ratio /= static_cast<double>(active);
    stats.overlap_ratio = overlap_sum / static_cast<double>(active);
    stats.exposed_comm_s *= per_rank_step;
    stats.compute_s *= per_rank_step;
    stats.comm_s *= per_rank_step;
    for (double& seconds : stats.seconds_by_category) seconds *= per_rank_step;
  }
  for (const MemoryPeak& peak : memory_peaks(timeline)) stats.peak_memory_bytes.push_back(peak.bytes);
  return stats;
}

std::optional<double> Difference::relative() const {
  if (a_s == 0) return std::nullopt;
  return (b_s - a_s) / a_s;
}

std::vector<Difference> compare_timelines(const TimelineStats& a, const TimelineStats& b) {
  std::vector<Difference> rows = {{"step time", a.step_s, b.step_s},
                                  {"compute", a.compute_s, b.compute_s},
                                  {"communication", a.comm_s, b.comm_s},
                                  {"exposed communication", a.exposed_comm_s, b.exposed_comm_s}};
  for (std::size_t c = 0; c < kCategoryCount; ++c) {
    if (a.seconds_by_category[c] == 0 && b.seconds_by_category[c] == 0) continue;
    rows.push_back({std::string(category_name(static_cast<Category>(c))), a.seconds_by_category[c],
                    b.seconds_by_category[c]});
  }
  return rows;
}

std::int64_t total_bytes(const MemorySample& sample) { return total(sample.bytes); }

std::vector<MemoryPoint> memory_curve(const Timeline& timeline, std::int32_t rank) {
  std::vector<MemoryPoint> points;
  for (const MemorySample& sample : timeline.memory) {
    if (sample.rank == rank) points.push_back({sample.time_ps, total_bytes(sample)});
  }
  std::stable_sort(points.begin(), points.end(), [](const MemoryPoint& x, const MemoryPoint& y) { return x.time_ps < y.time_ps; });
  return points;
}

}  // namespace trace
