// gui::TimelineIndex — a loaded timeline arranged for drawing. Spans go into rows, one per
// (rank, stream, nesting depth); a row's spans are in start order next to a running maximum
// of their ends, so the spans visible in a time window are found by binary search. Nesting
// depth matters for foreign traces (a PyTorch profiler's CPU ops nest on one thread); dtsim's
// own streams never nest. Rows are grouped by node, nodes in ascending order.
//
// No Qt here: the viewer's logic is tested without a display.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace/timeline.h"

namespace gui {

struct Row {
  std::int32_t rank = 0;
  std::uint16_t stream = 0;
  std::uint8_t depth = 0;
  std::vector<std::uint32_t> spans;       // indices into Timeline::spans, by start time
  std::vector<std::int64_t> running_end;  // running_end[i] = latest end of spans[0..i]
  // category_changes[i] = how many times the category changes along spans[0..i]: a run of one
  // category ends where this count steps up.
  std::vector<std::uint32_t> category_changes;
};

// Consecutive ranks of one node whose lanes are identical — the same ops on the same streams at
// the same times, as the ranks of a tensor-parallel group are in a simulation: the viewer shows
// them as one lane group with a count.
struct RankRun {
  std::int32_t first_rank = 0;
  std::int32_t ranks = 1;
  std::size_t first_row = 0;      // position in NodeGroup::rows of the first rank's first row
  std::size_t rows_per_rank = 0;  // its rows (every rank of the run has as many)
};

struct NodeGroup {
  std::int32_t node = 0;
  std::vector<std::size_t> rows;  // indices into TimelineIndex::rows(), by rank, stream, depth
  std::vector<RankRun> runs;      // its ranks, in order, identical neighbours together
};

// A time interval in picoseconds.
struct Window {
  double begin_ps = 0;
  double end_ps = 0;
  double length() const { return end_ps - begin_ps; }
};

class TimelineIndex {
 public:
  explicit TimelineIndex(std::shared_ptr<const trace::Timeline> timeline);

  const trace::Timeline& timeline() const { return *timeline_; }
  std::shared_ptr<const trace::Timeline> shared_timeline() const { return timeline_; }
  const std::vector<Row>& rows() const { return rows_; }
  const std::vector<NodeGroup>& nodes() const { return nodes_; }
  // From the first span's start to the last span's end (0..1 ps for an empty timeline).
  Window extent() const { return extent_; }
  // Training steps, told apart by the optimizer phases that end them; one window covering
  // the whole timeline when the timeline has no optimizer spans.
  const std::vector<Window>& steps() const { return steps_; }

  // Position in row.spans of the first span that may reach into [time_ps, …).
  std::size_t first_reaching(const Row& row, double time_ps) const;
  // The span of `row` under `time_ps`, or the nearest one within `tolerance_ps`.
  std::optional<std::uint32_t> span_at(const Row& row, double time_ps, double tolerance_ps) const;
  // The row that holds a span.
  std::size_t row_of(std::uint32_t span) const { return row_of_span_[span]; }
  std::string row_label(const Row& row) const;
  std::int32_t node_of(const Row& row) const;

 private:
  void build_rows();
  void find_rank_runs();
  void find_steps();
  bool same_lanes(const NodeGroup& node, const RankRun& run, std::size_t first_row) const;

  std::shared_ptr<const trace::Timeline> timeline_;
  std::vector<Row> rows_;
  std::vector<std::uint32_t> row_of_span_;
  std::vector<NodeGroup> nodes_;
  Window extent_;
  std::vector<Window> steps_;
};

}  // namespace gui
