// Time axis: tick positions at a round step (1, 2 or 5 × 10^k ps) chosen so that labels stay at
// least a given number of pixels apart, labelled in the unit that suits the step (ps, ns, µs,
// ms, s) with just the decimals the step needs; and duration formatting for tooltips.
#pragma once

#include <string>
#include <vector>

#include "gui/core/timeline_index.h"

namespace gui {

struct Tick {
  double time_ps = 0;
  std::string label;  // time since `origin_ps`
};

// Ticks inside `window`, labelled relative to `origin_ps` (the timeline's start).
std::vector<Tick> axis_ticks(Window window, double width_px, double origin_ps, double min_spacing_px = 90);

// The tick step for a window drawn `width_px` wide.
double tick_step_ps(double window_ps, double width_px, double min_spacing_px);

// A duration with three significant digits in the largest unit that keeps it ≥ 1, e.g.
// "12.3 ms", "850 ns", "0 s".
std::string format_duration(double ps);

}  // namespace gui
