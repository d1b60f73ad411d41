// sim::Time — simulated time as a strong type over integer picoseconds.
//
// Every timestamp and duration inside the engine is an exact integer count of picoseconds,
// so equal times compare equal and a run is reproducible bit for bit (no floating-point
// drift in the event order). int64 picoseconds span ±106 days of simulated time.
// Conversions from seconds round to the nearest picosecond; they are the only place where a
// double enters.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace sim {

class Time {
 public:
  constexpr Time() = default;

  static constexpr Time from_ps(std::int64_t ps) { return Time(ps); }
  static constexpr Time from_ns(std::int64_t ns) { return Time(ns * 1'000); }
  static constexpr Time from_us(std::int64_t us) { return Time(us * 1'000'000); }
  // Rounds to the nearest picosecond; negative, NaN and out-of-range inputs are clamped to
  // [0, max()] because simulated durations are never negative.
  static Time from_seconds(double seconds) {
    const double ps = std::round(seconds * 1e12);
    if (!(ps > 0)) return Time(0);
    if (ps >= static_cast<double>(std::numeric_limits<std::int64_t>::max())) return max();
    return Time(static_cast<std::int64_t>(ps));
  }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }

  constexpr std::int64_t ps() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double microseconds() const { return static_cast<double>(ps_) * 1e-6; }

  constexpr auto operator<=>(const Time&) const = default;

  // Saturates at max() instead of overflowing: a sum past ±106 days stays "the end of time".
  constexpr Time operator+(Time other) const {
    if (other.ps_ > 0 && ps_ > std::numeric_limits<std::int64_t>::max() - other.ps_) return max();
    return Time(ps_ + other.ps_);
  }
  constexpr Time operator-(Time other) const { return Time(ps_ - other.ps_); }
  constexpr Time& operator+=(Time other) { return *this = *this + other; }
  constexpr Time& operator-=(Time other) {
    ps_ -= other.ps_;
    return *this;
  }

 private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  std::int64_t ps_ = 0;
};

constexpr Time max(Time a, Time b) { return a < b ? b : a; }
constexpr Time min(Time a, Time b) { return a < b ? a : b; }

}  // namespace sim
