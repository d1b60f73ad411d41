// Lane layout (see lane_layout.h).
#include "gui/core/lane_layout.h"

#include <algorithm>

namespace gui {

void LaneLayout::rebuild(const std::vector<const TimelineIndex*>& documents, const LayoutChoices& choices,
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
    if (titled) add({LayoutEntry::Kind::kTitle, d, 0, 0, 0, 0, 0}, metrics.title_height);
    const bool filtered = d < choices.shown.size() && !choices.shown[d].empty();
    const auto shown = [&](std::int32_t rank) { return !filtered || choices.shown[d].count(rank) != 0; };
    const std::vector<NodeGroup>& nodes = documents[d]->nodes();
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      const NodeGroup& node = nodes[n];
      // The ranks of each run that are shown; a node with none is left out.
      std::vector<std::vector<std::int32_t>> ranks(node.runs.size());
      bool any = false;
      for (std::size_t r = 0; r < node.runs.size(); ++r) {
        for (std::int32_t k = 0; k < node.runs[r].ranks; ++k) {
          if (shown(node.runs[r].first_rank + k)) ranks[r].push_back(k);
        }
        any = any || !ranks[r].empty();
      }
      if (!any) continue;
      add({LayoutEntry::Kind::kNode, d, n, 0, 0, 0, 0}, metrics.node_height);
      if (choices.collapsed.count({d, node.node}) != 0) continue;
      for (std::size_t r = 0; r < node.runs.size(); ++r) {
        const RankRun& run = node.runs[r];
        if (ranks[r].empty()) continue;
        const bool grouped = ranks[r].size() > 1 && choices.expanded.count({d, run.first_rank}) == 0;
        if (grouped) add({LayoutEntry::Kind::kRanks, d, n, 0, r, 0, 0}, metrics.node_height);
        for (const std::int32_t k : ranks[r]) {
          for (std::size_t i = 0; i < run.rows_per_rank; ++i) {
            const std::size_t position = run.first_row + static_cast<std::size_t>(k) * run.rows_per_rank + i;
            add({LayoutEntry::Kind::kRow, d, n, node.rows[position], r, 0, 0}, metrics.row_height + metrics.row_gap);
          }
          if (grouped) break;  // the group shows its first shown rank's lanes
        }
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
