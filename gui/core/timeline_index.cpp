// Row building, step detection and lookups of TimelineIndex (see timeline_index.h).
#include "gui/core/timeline_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

namespace gui {

TimelineIndex::TimelineIndex(std::shared_ptr<const trace::Timeline> timeline)
    : timeline_(std::move(timeline)) {
  build_rows();
  find_steps();
}

void TimelineIndex::build_rows() {
  const std::vector<trace::Span>& spans = timeline_->spans;
  if (spans.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("more than 4 billion spans");
  }
  // Lane order: rank, stream, start, longer first (so that a parent precedes its children).
  // Producers write spans in this order; sorting is only needed for other traces.
  auto lane_order = [&](std::uint32_t a, std::uint32_t b) {
    const trace::Span& x = spans[a];
    const trace::Span& y = spans[b];
    return std::tie(x.rank, x.stream, x.start_ps, y.end_ps) < std::tie(y.rank, y.stream, y.start_ps, x.end_ps);
  };
  std::vector<std::uint32_t> order(spans.size());
  std::iota(order.begin(), order.end(), 0u);
  if (!std::is_sorted(order.begin(), order.end(), lane_order)) std::stable_sort(order.begin(), order.end(), lane_order);

  row_of_span_.assign(spans.size(), 0);
  extent_ = {std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest()};
  std::vector<std::int64_t> open_ends;  // ends of the spans enclosing the current one
  std::size_t lane_first_row = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const trace::Span& span = spans[order[i]];
    const bool new_lane = i == 0 || span.rank != spans[order[i - 1]].rank || span.stream != spans[order[i - 1]].stream;
    if (new_lane) {
      open_ends.clear();
      lane_first_row = rows_.size();
    }
    while (!open_ends.empty() && open_ends.back() <= span.start_ps) open_ends.pop_back();
    const std::size_t depth = std::min<std::size_t>(open_ends.size(), std::numeric_limits<std::uint8_t>::max());
    open_ends.push_back(span.end_ps);
    const std::size_t row_index = lane_first_row + depth;
    while (rows_.size() <= row_index) {
      rows_.push_back(Row{span.rank, span.stream, static_cast<std::uint8_t>(rows_.size() - lane_first_row), {}, {}, {}});
    }
    Row& row = rows_[row_index];
    if (row.spans.empty()) {
      row.running_end.push_back(span.end_ps);
      row.category_changes.push_back(0);
    } else {
      row.running_end.push_back(std::max(row.running_end.back(), span.end_ps));
      row.category_changes.push_back(row.category_changes.back() + (spans[row.spans.back()].category != span.category));
    }
    row.spans.push_back(order[i]);
    row_of_span_[order[i]] = static_cast<std::uint32_t>(row_index);
    extent_.begin_ps = std::min(extent_.begin_ps, static_cast<double>(span.start_ps));
    extent_.end_ps = std::max(extent_.end_ps, static_cast<double>(span.end_ps));
  }
  if (spans.empty()) extent_ = {0, 1};
  if (extent_.end_ps <= extent_.begin_ps) extent_.end_ps = extent_.begin_ps + 1;

  // Rows are in rank order; group them by node.
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    const std::int32_t node = node_of(rows_[r]);
    auto group = std::find_if(nodes_.begin(), nodes_.end(), [&](const NodeGroup& g) { return g.node == node; });
    if (group == nodes_.end()) group = nodes_.insert(nodes_.end(), NodeGroup{node, {}, {}});
    group->rows.push_back(r);
  }
  std::stable_sort(nodes_.begin(), nodes_.end(), [](const NodeGroup& a, const NodeGroup& b) { return a.node < b.node; });
  find_rank_runs();
}

// Whether the rank whose rows start at `first_row` of `node` has the lanes of `run`'s first
// rank: as many rows, each the same stream and depth with the same ops at the same times.
bool TimelineIndex::same_lanes(const NodeGroup& node, const RankRun& run, std::size_t first_row) const {
  for (std::size_t k = 0; k < run.rows_per_rank; ++k) {
    const Row& a = rows_[node.rows[run.first_row + k]];
    const Row& b = rows_[node.rows[first_row + k]];
    if (a.stream != b.stream || a.depth != b.depth || a.spans.size() != b.spans.size()) return false;
    for (std::size_t i = 0; i < a.spans.size(); ++i) {
      const trace::Span& x = timeline_->spans[a.spans[i]];
      const trace::Span& y = timeline_->spans[b.spans[i]];
      if (x.name != y.name || x.category != y.category || x.start_ps != y.start_ps || x.end_ps != y.end_ps) return false;
    }
  }
  return true;
}

void TimelineIndex::find_rank_runs() {
  for (NodeGroup& node : nodes_) {
    std::size_t position = 0;
    while (position < node.rows.size()) {
      const std::int32_t rank = rows_[node.rows[position]].rank;
      std::size_t rows = 0;
      while (position + rows < node.rows.size() && rows_[node.rows[position + rows]].rank == rank) ++rows;
      RankRun* last = node.runs.empty() ? nullptr : &node.runs.back();
      if (last != nullptr && last->first_rank + last->ranks == rank && last->rows_per_rank == rows &&
          same_lanes(node, *last, position)) {
        ++last->ranks;
      } else {
        node.runs.push_back({rank, 1, position, rows});
      }
      position += rows;
    }
  }
}

void TimelineIndex::find_steps() {
  // An optimizer phase is a run of optimizer spans (any rank) with no gap longer than the
  // phase itself between them; each phase ends a step — unless the producer recorded fewer
  // steps (metadata "steps"): then pipeline stages, or a parameter server's workers, update at
  // their own times within a step, and the steps end at the recorded count's longest gaps
  // between phases.
  std::vector<Window> phases;
  for (const trace::Span& span : timeline_->spans) {
    if (span.category == trace::Category::kOptimizer) {
      phases.push_back({static_cast<double>(span.start_ps), static_cast<double>(span.end_ps)});
    }
  }
  std::sort(phases.begin(), phases.end(), [](const Window& a, const Window& b) { return a.begin_ps < b.begin_ps; });
  std::vector<Window> merged;
  for (const Window& phase : phases) {
    if (!merged.empty() && phase.begin_ps - merged.back().end_ps <= merged.back().length()) {
      merged.back().end_ps = std::max(merged.back().end_ps, phase.end_ps);
    } else {
      merged.push_back(phase);
    }
  }
  const std::size_t steps = timeline_->recorded_steps().value_or(0);
  if (steps >= 1 && merged.size() > steps) {
    std::vector<std::size_t> by_gap(merged.size() - 1);  // gap g: between phases g and g + 1
    std::iota(by_gap.begin(), by_gap.end(), 0);
    const auto gap = [&](std::size_t g) { return merged[g + 1].begin_ps - merged[g].end_ps; };
    // Equal gaps (phases evenly spaced) split nearest an even share of phases per step.
    const double per_step = static_cast<double>(merged.size()) / static_cast<double>(steps);
    const auto off_even = [&](std::size_t g) {
      const double after =
          static_cast<double>(g + 1) / per_step;  // steps' worth of phases before the gap
      return std::abs(after - std::round(after));
    };
    std::stable_sort(by_gap.begin(), by_gap.end(), [&](std::size_t a, std::size_t b) {
      return gap(a) != gap(b) ? gap(a) > gap(b) : off_even(a) < off_even(b);
    });
    std::vector<std::size_t> ends(by_gap.begin(),
                                  by_gap.begin() + static_cast<std::ptrdiff_t>(steps - 1));
    ends.push_back(merged.size() - 1);
    std::sort(ends.begin(), ends.end());
    std::vector<Window> grouped;
    std::size_t first = 0;
    for (std::size_t last : ends) {
      grouped.push_back({merged[first].begin_ps, merged[last].end_ps});
      first = last + 1;
    }
    merged = std::move(grouped);
  }
  double begin = extent_.begin_ps;
  for (const Window& phase : merged) {
    steps_.push_back({begin, phase.end_ps});
    begin = phase.end_ps;
  }
  if (steps_.empty()) {
    steps_.push_back(extent_);
  } else {
    steps_.back().end_ps = std::max(steps_.back().end_ps, extent_.end_ps);  // work after the last update
  }
}

std::size_t TimelineIndex::first_reaching(const Row& row, double time_ps) const {
  return static_cast<std::size_t>(
      std::upper_bound(row.running_end.begin(), row.running_end.end(), time_ps,
                       [](double t, std::int64_t end) { return t < static_cast<double>(end); }) -
      row.running_end.begin());
}

std::optional<std::uint32_t> TimelineIndex::span_at(const Row& row, double time_ps, double tolerance_ps) const {
  const std::vector<trace::Span>& spans = timeline_->spans;
  std::optional<std::uint32_t> best;
  double best_distance = tolerance_ps;
  for (std::size_t p = first_reaching(row, time_ps - tolerance_ps); p < row.spans.size(); ++p) {
    const trace::Span& span = spans[row.spans[p]];
    if (static_cast<double>(span.start_ps) > time_ps + tolerance_ps) break;
    const double distance = time_ps < static_cast<double>(span.start_ps) ? static_cast<double>(span.start_ps) - time_ps
                            : time_ps > static_cast<double>(span.end_ps) ? time_ps - static_cast<double>(span.end_ps)
                                                                         : 0.0;
    if (distance <= best_distance && (!best || distance < best_distance)) {
      best = row.spans[p];
      best_distance = distance;
      if (distance == 0) break;
    }
  }
  return best;
}

std::int32_t TimelineIndex::node_of(const Row& row) const {
  const auto rank = static_cast<std::size_t>(row.rank);
  return rank < timeline_->ranks.size() ? timeline_->ranks[rank].node : row.rank;
}

std::string TimelineIndex::row_label(const Row& row) const {
  // Lanes sit under their node's header: "rank 3 (node 0, gpu 3)" is shown as "rank 3".
  const trace::Timeline& timeline = *timeline_;
  const auto rank = static_cast<std::size_t>(row.rank);
  std::string label = rank < timeline.ranks.size() ? timeline.ranks[rank].name : fmt::format("rank {}", row.rank);
  if (const std::size_t detail = label.find(" ("); detail != std::string::npos && detail > 0) label.resize(detail);
  if (row.stream < timeline.streams.size()) label += " · " + timeline.streams[row.stream];
  if (row.depth > 0) label += fmt::format(" ·{}", row.depth);
  return label;
}

}  // namespace gui
