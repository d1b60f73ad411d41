// The visible time window and how navigation moves it: zoom around an anchor (the cursor),
// pan, box zoom, fit; and a back/forward history of windows like a browser's. Pixel ↔ time
// mapping lives here too, so the painter, the hit test and the tests agree on it.
#pragma once

#include <cstddef>
#include <vector>

#include "gui/core/timeline_index.h"

namespace gui {

class Viewport {
 public:
  // The narrowest window: 1 ns across the view (a picosecond-exact timeline cannot say more).
  static constexpr double kMinimumLengthPs = 1e3;

  Viewport() = default;
  explicit Viewport(Window window) { set(window); }

  Window window() const { return window_; }
  void set(Window window);
  // Zooms by `factor` (> 1 zooms in) keeping the time under `anchor_fraction` of the width fixed.
  void zoom(double factor, double anchor_fraction);
  // Moves by `fraction` of the window's length (positive: later).
  void pan(double fraction);

  double x_of(double time_ps, double width_px) const;
  double time_at(double x_px, double width_px) const;

 private:
  Window window_{0, 1e6};
};

// Windows visited, newest last; back() and forward() step through them.
class ZoomHistory {
 public:
  void record(Window window);
  bool can_go_back() const { return position_ > 0; }
  bool can_go_forward() const { return position_ + 1 < windows_.size(); }
  Window back();
  Window forward();

 private:
  std::vector<Window> windows_;
  std::size_t position_ = 0;
};

}  // namespace gui
