// Level of detail: what to draw of one row in a time window at a given pixel scale.
//
// A span at least `min_width_px` wide is drawn as itself. A run of narrower spans of one
// category, each starting less than `min_width_px` after the run's end so far, folds into one
// box that says how many ops it holds. Where categories alternate faster than that (runs
// narrower than `min_width_px`, as tensor parallelism's all-gathers and reduce-scatters do
// zoomed out), the runs fold together into a mixed box drawn in the category of its middle
// span, until a gap, a wide span or a run wide enough to stand alone.
//
// Folds grow a pixel bucket at a time by binary search on the row's start times, and runs are
// found by binary search on its running count of category changes, so the work per row grows
// with the items drawn — at most about two per `min_width_px` of width plus the wide spans —
// not with the spans in view: a million spans zoomed out cost as little as a thousand.
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
  bool mixed = false;  // a fold of several categories (drawn in `category`, its middle span's)
};

// Appends the items of `row` visible in `window`, drawn `width_px` wide, to `items`.
void fold_row(const TimelineIndex& index, const Row& row, Window window, double width_px, double min_width_px,
              std::vector<DrawItem>& items);

}  // namespace gui
