// Tick steps and time formatting (see time_axis.h).
#include "gui/core/time_axis.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>

namespace gui {
namespace {

struct Unit {
  double ps;
  const char* name;
};
constexpr std::array<Unit, 5> kUnits = {{{1e12, "s"}, {1e9, "ms"}, {1e6, "µs"}, {1e3, "ns"}, {1, "ps"}}};

// The largest unit not larger than `ps` (picoseconds for anything below 1 ns).
const Unit& unit_for(double ps) {
  for (const Unit& unit : kUnits) {
    if (std::abs(ps) >= unit.ps) return unit;
  }
  return kUnits.back();
}

}  // namespace

double tick_step_ps(double window_ps, double width_px, double min_spacing_px) {
  const double raw = std::max(window_ps * min_spacing_px / std::max(width_px, 1.0), 1.0);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double factor : {1.0, 2.0, 5.0}) {
    if (factor * magnitude >= raw * (1 - 1e-12)) return factor * magnitude;
  }
  return 10 * magnitude;
}

std::vector<Tick> axis_ticks(Window window, double width_px, double origin_ps, double min_spacing_px) {
  std::vector<Tick> ticks;
  if (window.length() <= 0 || width_px <= 0) return ticks;
  const double step = tick_step_ps(window.length(), width_px, min_spacing_px);
  const Unit& unit = unit_for(step);
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step / unit.ps) + 1e-9)));
  const double first = std::ceil((window.begin_ps - origin_ps) / step);
  const double last = std::floor((window.end_ps - origin_ps) / step);
  // Counted, not stepped: far from the origin k + 1 == k in doubles. The step keeps the count
  // near width / spacing; the cap guards against rounding.
  const auto count = static_cast<std::int64_t>(std::clamp(last - first + 1, 0.0, 10000.0));
  for (std::int64_t i = 0; i < count; ++i) {
    const double relative = (first + static_cast<double>(i)) * step;
    ticks.push_back({origin_ps + relative, fmt::format("{:.{}f} {}", relative / unit.ps + 0.0, decimals, unit.name)});
  }
  return ticks;
}

std::string format_duration(double ps) {
  if (ps == 0) return "0 s";
  const Unit& unit = unit_for(ps);
  const double value = ps / unit.ps;
  const int decimals = std::abs(value) >= 100 ? 0 : std::abs(value) >= 10 ? 1 : 2;
  return fmt::format("{:.{}f} {}", value, decimals, unit.name);
}

}  // namespace gui
