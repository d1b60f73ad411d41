// sim::Engine — the deterministic discrete-event engine at the bottom of dtsim.
//
// Events are callbacks scheduled at a simulated time. They run in order of (time, insertion
// sequence): two events at the same picosecond run in the order they were scheduled, so the
// same inputs always give the same run (the queue: event_queue.h). A scheduled event can be
// cancelled through its EventId; cancellation is O(1) (the slot is marked and skipped when it
// reaches the front of the queue). The engine knows nothing about networks, GPUs or neural networks: models plug
// in by scheduling events.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/core/event_queue.h"
#include "sim/core/time.h"

namespace sim {

// Identifies one scheduled event. Slots are reused; the generation tells a stale id apart.
struct EventId {
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;
};

class Engine {
 public:
  using Handler = std::function<void()>;

  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Schedules `handler` at absolute time `when` (never earlier than now()).
  EventId schedule_at(Time when, Handler handler);
  EventId schedule_after(Time delay, Handler handler) {
    return schedule_at(now_ + delay, std::move(handler));
  }
  // Cancels a pending event. Returns false if it already ran or was cancelled.
  bool cancel(EventId id);
  bool is_pending(EventId id) const;

  // Runs the next event; returns false when none is pending.
  bool step();
  // Runs events until none is left.
  void run();
  // Runs every event with time <= `limit`, then sets now() to `limit` if it is later.
  void run_until(Time limit);

  Time now() const { return now_; }
  std::uint64_t events_processed() const { return events_processed_; }
  std::size_t pending_events() const { return pending_; }

 private:
  using QueueEntry = EventQueue::Entry;
  struct Slot {
    Handler handler;
    std::uint32_t generation = 0;
    bool pending = false;
  };
  // Pops the next live event into `out`; false when the queue holds none at or before `limit`.
  bool pop_next(Time limit, QueueEntry& out);
  void dispatch(const QueueEntry& entry);

  EventQueue queue_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  Time now_ = Time::zero();
  std::uint64_t events_processed_ = 0;
  std::size_t pending_ = 0;
};

}  // namespace sim
