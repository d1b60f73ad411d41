// Viewport arithmetic and zoom history (see viewport.h).
#include "gui/core/viewport.h"

#include <algorithm>
#include <stdexcept>

namespace gui {

void Viewport::set(Window window) {
  if (window.end_ps < window.begin_ps) std::swap(window.begin_ps, window.end_ps);
  if (window.length() < kMinimumLengthPs) {
    const double middle = (window.begin_ps + window.end_ps) / 2;
    window = {middle - kMinimumLengthPs / 2, middle + kMinimumLengthPs / 2};
  }
  window_ = window;
}

void Viewport::zoom(double factor, double anchor_fraction) {
  const double anchor = window_.begin_ps + anchor_fraction * window_.length();
  const double length = window_.length() / factor;
  if (length < kMinimumLengthPs) {
    set({anchor - anchor_fraction * kMinimumLengthPs, anchor + (1 - anchor_fraction) * kMinimumLengthPs});
    return;
  }
  set({anchor - anchor_fraction * length, anchor + (1 - anchor_fraction) * length});
}

void Viewport::pan(double fraction) {
  const double shift = fraction * window_.length();
  window_.begin_ps += shift;
  window_.end_ps += shift;
}

double Viewport::x_of(double time_ps, double width_px) const {
  return (time_ps - window_.begin_ps) * width_px / window_.length();
}

double Viewport::time_at(double x_px, double width_px) const {
  return window_.begin_ps + x_px * window_.length() / width_px;
}

void ZoomHistory::record(Window window) {
  if (!windows_.empty()) {
    const Window& current = windows_[position_];
    if (current.begin_ps == window.begin_ps && current.end_ps == window.end_ps) return;
    windows_.resize(position_ + 1);  // recording after going back drops the forward windows
  }
  windows_.push_back(window);
  position_ = windows_.size() - 1;
}

Window ZoomHistory::back() {
  if (!can_go_back()) throw std::logic_error("no earlier window");
  return windows_[--position_];
}

Window ZoomHistory::forward() {
  if (!can_go_forward()) throw std::logic_error("no later window");
  return windows_[++position_];
}

}  // namespace gui
