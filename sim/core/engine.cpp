// Implementation of slot reuse and lazy cancellation over the event queue (see engine.h).
#include "sim/core/engine.h"

#include <cassert>
#include <stdexcept>
#include <utility>

namespace sim {

EventId Engine::schedule_at(Time when, Handler handler) {
  if (when < now_) throw std::logic_error("sim::Engine: event scheduled in the past");
  std::uint32_t slot_index;
  if (free_slots_.empty()) {
    slot_index = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot_index = free_slots_.back();
    free_slots_.pop_back();
  }
  Slot& slot = slots_[slot_index];
  slot.handler = std::move(handler);
  slot.pending = true;
  queue_.push(QueueEntry{when, slot_index});
  ++pending_;
  return EventId{slot_index, slot.generation};
}

bool Engine::is_pending(EventId id) const {
  return id.slot < slots_.size() && slots_[id.slot].generation == id.generation &&
         slots_[id.slot].pending;
}

bool Engine::cancel(EventId id) {
  if (!is_pending(id)) return false;
  Slot& slot = slots_[id.slot];
  slot.pending = false;
  slot.handler = nullptr;
  --pending_;
  // The queue entry stays; pop_next skips it and frees the slot then.
  return true;
}

bool Engine::pop_next(Time limit, QueueEntry& out) {
  while (queue_.pop_if_not_after(limit, out)) {
    Slot& slot = slots_[out.slot];
    if (slot.pending) return true;
    ++slot.generation;  // cancelled: recycle the slot now that its queue entry is gone
    free_slots_.push_back(out.slot);
  }
  return false;
}

void Engine::dispatch(const QueueEntry& entry) {
  Slot& slot = slots_[entry.slot];
  Handler handler = std::move(slot.handler);
  slot.handler = nullptr;
  slot.pending = false;
  ++slot.generation;
  free_slots_.push_back(entry.slot);
  --pending_;
  now_ = entry.when;
  ++events_processed_;
  handler();  // may schedule more events (and grow slots_): nothing above is used after it
}

bool Engine::step() {
  QueueEntry entry;
  if (!pop_next(Time::max(), entry)) return false;
  dispatch(entry);
  return true;
}

void Engine::run_until(Time limit) {
  QueueEntry entry;
  while (pop_next(limit, entry)) dispatch(entry);
  if (limit != Time::max() && now_ < limit) now_ = limit;
}

void Engine::run() { run_until(Time::max()); }

}  // namespace sim
