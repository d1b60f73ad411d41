// Bookkeeping shared by the stateful network models (flow, packet): the collectives in flight,
// kept in reusable slots, and how each reports its result when it ends.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "sim/net/comm_planner.h"

namespace sim {

// A collective in flight: its plan, the phase it is in, and the result it will report.
struct RunningComm {
  const CommPlan* plan = nullptr;
  std::size_t phase = 0;
  CommResult result;
  std::function<void(const CommResult&)> done;

  RunningComm() = default;
  RunningComm(const CommPlan& plan_in, Time now, std::function<void(const CommResult&)> done_in);
  // Ends the collective now: fills in the end time and the bandwidth share of the duration,
  // and hands back the callback and its result (to be called once the slot is released).
  std::pair<std::function<void(const CommResult&)>, CommResult> finish(Time now);
};

// Slots indexed by a small integer, reused once released (ids stay valid while in use).
template <typename T>
class SlotPool {
 public:
  std::uint32_t acquire(T value) {
    if (free_.empty()) {
      items_.push_back(std::move(value));
      return static_cast<std::uint32_t>(items_.size() - 1);
    }
    const std::uint32_t id = free_.back();
    free_.pop_back();
    items_[id] = std::move(value);
    return id;
  }
  void release(std::uint32_t id) { free_.push_back(id); }
  T& operator[](std::uint32_t id) { return items_[id]; }
  const T& operator[](std::uint32_t id) const { return items_[id]; }

 private:
  std::vector<T> items_;
  std::vector<std::uint32_t> free_;
};

}  // namespace sim
