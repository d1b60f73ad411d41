// sim::Engine: time order, insertion order at equal times, cancellation, run_until, step,
// and determinism of a self-scheduling workload.
#include "sim/core/engine.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

namespace {

using sim::Engine;
using sim::Time;

TEST(EngineTest, RunsEventsInTimeOrder) {
  Engine engine;
  std::vector<int> order;
  engine.schedule_at(Time::from_ps(30), [&] { order.push_back(3); });
  engine.schedule_at(Time::from_ps(10), [&] { order.push_back(1); });
  engine.schedule_at(Time::from_ps(20), [&] { order.push_back(2); });
  engine.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(engine.now(), Time::from_ps(30));
  EXPECT_EQ(engine.events_processed(), 3u);
}

TEST(EngineTest, EqualTimesRunInInsertionOrder) {
  Engine engine;
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) engine.schedule_at(Time::from_ps(5), [&order, i] { order.push_back(i); });
  engine.run();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(EngineTest, EventsScheduledDuringAnEventAtTheSameTimeRunAfterIt) {
  Engine engine;
  std::vector<int> order;
  engine.schedule_at(Time::from_ps(1), [&] {
    order.push_back(1);
    engine.schedule_after(Time::zero(), [&] { order.push_back(3); });
  });
  engine.schedule_at(Time::from_ps(1), [&] { order.push_back(2); });
  engine.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(EngineTest, CancelledEventsDoNotRun) {
  Engine engine;
  bool ran = false;
  const sim::EventId id = engine.schedule_at(Time::from_ps(10), [&] { ran = true; });
  EXPECT_TRUE(engine.is_pending(id));
  EXPECT_TRUE(engine.cancel(id));
  EXPECT_FALSE(engine.cancel(id));
  EXPECT_FALSE(engine.is_pending(id));
  EXPECT_EQ(engine.pending_events(), 0u);
  engine.run();
  EXPECT_FALSE(ran);
  EXPECT_EQ(engine.events_processed(), 0u);
}

TEST(EngineTest, StaleIdCannotCancelTheEventThatReusedItsSlot) {
  Engine engine;
  const sim::EventId first = engine.schedule_at(Time::from_ps(1), [] {});
  engine.run();
  bool ran = false;
  const sim::EventId second = engine.schedule_at(Time::from_ps(2), [&] { ran = true; });
  EXPECT_EQ(first.slot, second.slot);  // the slot was recycled
  EXPECT_FALSE(engine.cancel(first));
  engine.run();
  EXPECT_TRUE(ran);
}

TEST(EngineTest, CancelFromInsideAnEvent) {
  Engine engine;
  bool later_ran = false;
  const sim::EventId later = engine.schedule_at(Time::from_ps(20), [&] { later_ran = true; });
  engine.schedule_at(Time::from_ps(10), [&] { EXPECT_TRUE(engine.cancel(later)); });
  engine.run();
  EXPECT_FALSE(later_ran);
}

TEST(EngineTest, SchedulingInThePastIsAnError) {
  Engine engine;
  engine.schedule_at(Time::from_ps(10), [] {});
  engine.run();
  EXPECT_THROW(engine.schedule_at(Time::from_ps(5), [] {}), std::logic_error);
}

TEST(EngineTest, RunUntilStopsAtTheLimitAndAdvancesTheClock) {
  Engine engine;
  std::vector<int> order;
  engine.schedule_at(Time::from_ps(10), [&] { order.push_back(1); });
  engine.schedule_at(Time::from_ps(20), [&] { order.push_back(2); });
  engine.run_until(Time::from_ps(15));
  EXPECT_EQ(order, (std::vector<int>{1}));
  EXPECT_EQ(engine.now(), Time::from_ps(15));
  EXPECT_EQ(engine.pending_events(), 1u);
  engine.run_until(Time::from_ps(20));  // an event exactly at the limit runs
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(EngineTest, StepRunsOneEventAtATime) {
  Engine engine;
  int count = 0;
  engine.schedule_at(Time::from_ps(1), [&] { ++count; });
  engine.schedule_at(Time::from_ps(2), [&] { ++count; });
  EXPECT_TRUE(engine.step());
  EXPECT_EQ(count, 1);
  EXPECT_TRUE(engine.step());
  EXPECT_FALSE(engine.step());
  EXPECT_EQ(count, 2);
}

// A workload whose events schedule and cancel others pseudo-randomly; two runs must agree
// event for event.
std::vector<std::pair<std::int64_t, int>> random_workload_trace() {
  Engine engine;
  std::mt19937 random(7);
  std::vector<std::pair<std::int64_t, int>> trace;
  std::vector<sim::EventId> ids;
  std::function<void(int)> fire = [&](int label) {
    trace.emplace_back(engine.now().ps(), label);
    if (trace.size() > 5000) return;
    for (int k = 0; k < 2; ++k) {
      const int next = static_cast<int>(random() % 1000);
      ids.push_back(engine.schedule_after(Time::from_ps(random() % 50), [&fire, next] { fire(next); }));
    }
    if (random() % 3 == 0 && !ids.empty()) engine.cancel(ids[random() % ids.size()]);
  };
  engine.schedule_at(Time::zero(), [&] { fire(0); });
  engine.run();
  return trace;
}

TEST(EngineTest, SameWorkloadGivesTheSameEventSequence) {
  const auto first = random_workload_trace();
  const auto second = random_workload_trace();
  EXPECT_GT(first.size(), 1000u);
  EXPECT_EQ(first, second);
}

}  // namespace
