// Vertical layout of the timeline view: for each open timeline (several in compare mode, each
// under a title bar), its nodes as collapsible group headers and under each expanded node one
// lane per (rank, stream, nesting depth) row of its TimelineIndex. Entries are in y order, so
// the ones on screen are found by binary search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "gui/core/timeline_index.h"

namespace gui {

struct LaneMetrics {
  int title_height = 22;
  int node_height = 18;
  int row_height = 16;
  int row_gap = 2;
};

struct LayoutEntry {
  enum class Kind { kTitle, kNode, kRanks, kRow };
  Kind kind = Kind::kRow;
  std::size_t document = 0;
  std::size_t node = 0;  // index into the document's nodes()
  std::size_t row = 0;   // index into the document's rows() (kRow only)
  std::size_t run = 0;   // index into the node's runs (kRanks: the lane group it heads)
  int y = 0;
  int height = 0;
};

// A node collapsed in one document: (document index, node id).
using CollapsedNodes = std::set<std::pair<std::size_t, std::int32_t>>;
// A run of identical ranks shown rank by rank: (document index, its first rank). Other runs of
// more than one rank show a group header and the first rank's lanes only.
using ExpandedRuns = std::set<std::pair<std::size_t, std::int32_t>>;
// Per document, the ranks shown (empty: all): the pipeline view keeps one rank per stage.
using ShownRanks = std::vector<std::set<std::int32_t>>;

struct LayoutChoices {
  CollapsedNodes collapsed;
  ExpandedRuns expanded;
  ShownRanks shown;
};

class LaneLayout {
 public:
  void rebuild(const std::vector<const TimelineIndex*>& documents, const LayoutChoices& choices,
               const LaneMetrics& metrics);
  const std::vector<LayoutEntry>& entries() const { return entries_; }
  int height() const { return height_; }
  // Positions in entries() of those overlapping [top, bottom).
  std::pair<std::size_t, std::size_t> visible(int top, int bottom) const;
  const LayoutEntry* entry_at(int y) const;
  // The entry of a document's row, if it is shown (its node expanded).
  const LayoutEntry* entry_of_row(std::size_t document, std::size_t row) const;

 private:
  std::vector<LayoutEntry> entries_;
  int height_ = 0;
};

}  // namespace gui
