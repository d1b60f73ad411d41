// Lane layout (see lane_layout.h).
#include "gui/core/lane_layout.h"

#include <algorithm>

namespace gui {

void LaneLayout::rebuild(const std::vector<const TimelineIndex*>& documents, const CollapsedNodes& collapsed,
                         const LaneMetrics& metrics) {
  entries_.clear();
  int y = 0;
  auto add = [&](LayoutEntry entry, int height) {
    entry.y = y;
    entry.height = height;
    entries_.push_back(entry);
    y += height;
  };
  const bool titled = documents.size() > 1;
  for (std::size_t d = 0; d < documents.size(); ++d) {
    if (titled) add({LayoutEntry::Kind::kTitle, d, 0, 0, 0, 0}, metrics.title_height);
    const std::vector<NodeGroup>& nodes = documents[d]->nodes();
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      add({LayoutEntry::Kind::kNode, d, n, 0, 0, 0}, metrics.node_height);
      if (collapsed.count({d, nodes[n].node}) != 0) continue;
      for (const std::size_t row : nodes[n].rows) {
        add({LayoutEntry::Kind::kRow, d, n, row, 0, 0}, metrics.row_height + metrics.row_gap);
      }
    }
  }
  height_ = y;
}

std::pair<std::size_t, std::size_t> LaneLayout::visible(int top, int bottom) const {
  const auto first = std::partition_point(entries_.begin(), entries_.end(),
                                          [&](const LayoutEntry& e) { return e.y + e.height <= top; });
  const auto last = std::partition_point(first, entries_.end(), [&](const LayoutEntry& e) { return e.y < bottom; });
  return {static_cast<std::size_t>(first - entries_.begin()), static_cast<std::size_t>(last - entries_.begin())};
}

const LayoutEntry* LaneLayout::entry_at(int y) const {
  const auto [first, last] = visible(y, y + 1);
  return first < last ? &entries_[first] : nullptr;
}

const LayoutEntry* LaneLayout::entry_of_row(std::size_t document, std::size_t row) const {
  const auto found = std::find_if(entries_.begin(), entries_.end(), [&](const LayoutEntry& e) {
    return e.kind == LayoutEntry::Kind::kRow && e.document == document && e.row == row;
  });
  return found == entries_.end() ? nullptr : &*found;
}

}  // namespace gui
