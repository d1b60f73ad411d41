// Level of detail: what to draw of one row in a time window at a given pixel scale.
//
// A span at least `min_width_px` wide is drawn as itself. A run of narrower spans of one
// category, each starting less than `min_width_px` after the run's end so far, folds into one
// box that says how many ops it holds. The run is extended a pixel bucket at a time by binary
// search on the row's start times, so the work per row grows with the items drawn (at most
// about width / min_width_px of them), not with the spans in view: a million spans zoomed out
// cost as little as a thousand. A category change is looked for only at the end of a bucket;
// one hidden entirely inside a fold's span of under `min_width_px` pixels is not seen (it
// could not be drawn anyway).
#pragma once

#include <cstdint>
#include <vector>

#include "gui/core/timeline_index.h"

namespace gui {

struct DrawItem {
  std::int64_t start_ps = 0;
  std::int64_t end_ps = 0;
  std::uint32_t first = 0;  // position in Row::spans of the first span
  std::uint32_t count = 1;  // 1: the span itself; more: a fold of spans first … first+count−1
  trace::Category category = trace::Category::kOther;
};

// Appends the items of `row` visible in `window`, drawn `width_px` wide, to `items`.
void fold_row(const TimelineIndex& index, const Row& row, Window window, double width_px, double min_width_px,
              std::vector<DrawItem>& items);

}  // namespace gui
