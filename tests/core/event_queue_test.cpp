// sim::EventQueue against a reference: a binary heap ordered by (time, insertion sequence),
// on random monotone workloads that mix pushes at the current time, near and far in the
// future, and pops bounded by a limit.
#include "sim/core/event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <queue>
#include <random>
#include <vector>

namespace {

using sim::EventQueue;
using sim::Time;

struct Reference {
  struct Item {
    std::int64_t time;
    std::uint64_t sequence;
    std::uint32_t slot;
    bool operator>(const Item& other) const {
      return time != other.time ? time > other.time : sequence > other.sequence;
    }
  };
  std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
  std::uint64_t sequence = 0;
  void push(std::int64_t time, std::uint32_t slot) { heap.push({time, sequence++, slot}); }
  bool pop_if_not_after(std::int64_t limit, Item& out) {
    if (heap.empty() || heap.top().time > limit) return false;
    out = heap.top();
    heap.pop();
    return true;
  }
};

// Delays drawn from very different scales, and many exact ties.
std::int64_t random_delay(std::mt19937_64& random) {
  switch (random() % 5) {
    case 0: return 0;
    case 1: return static_cast<std::int64_t>(random() % 4);
    case 2: return static_cast<std::int64_t>(random() % 1'000);
    case 3: return static_cast<std::int64_t>(random() % 1'000'000'000);
    default: return static_cast<std::int64_t>(random() % (std::int64_t{1} << 50));
  }
}

TEST(EventQueueTest, TakesEntriesOutInTimeThenInsertionOrder) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 random(seed);
    EventQueue queue;
    Reference reference;
    std::int64_t now = 0;
    std::uint32_t next_slot = 0;
    for (int round = 0; round < 20'000; ++round) {
      if (random() % 3 != 0 || queue.empty()) {
        const std::int64_t when = now + random_delay(random);
        queue.push({Time::from_ps(when), next_slot});
        reference.push(when, next_slot);
        ++next_slot;
      } else {
        const std::int64_t limit = random() % 4 == 0 ? now + random_delay(random) : Time::max().ps();
        EventQueue::Entry got;
        Reference::Item expected;
        const bool popped = queue.pop_if_not_after(Time::from_ps(limit), got);
        ASSERT_EQ(popped, reference.pop_if_not_after(limit, expected)) << "seed " << seed << " round " << round;
        if (popped) {
          ASSERT_EQ(got.slot, expected.slot) << "seed " << seed << " round " << round;
          ASSERT_EQ(got.when.ps(), expected.time);
          now = expected.time;
        }
      }
      ASSERT_EQ(queue.size(), reference.heap.size());
    }
  }
}

// A long chain of events at one time, each pushing the next (the queue drops the entries it has
// handed out as it goes): still first in, first out.
TEST(EventQueueTest, AChainAtOneTimeStaysInInsertionOrder) {
  EventQueue queue;
  for (std::uint32_t slot = 0; slot < 100; ++slot) queue.push({Time::from_ps(5), slot});
  std::uint32_t next_slot = 100;
  EventQueue::Entry out;
  for (std::uint32_t expected = 0; expected < 50'000; ++expected) {
    ASSERT_TRUE(queue.pop_if_not_after(Time::max(), out));
    ASSERT_EQ(out.slot, expected);
    ASSERT_EQ(out.when, Time::from_ps(5));
    queue.push({Time::from_ps(5), next_slot++});
  }
  EXPECT_EQ(queue.size(), 100u);
}

TEST(EventQueueTest, AnEntryAfterTheLimitStaysIn) {
  EventQueue queue;
  queue.push({Time::from_ps(100), 7});
  EventQueue::Entry out;
  EXPECT_FALSE(queue.pop_if_not_after(Time::from_ps(99), out));
  EXPECT_EQ(queue.size(), 1u);
  // An earlier entry may still come in: nothing was taken out.
  queue.push({Time::from_ps(50), 8});
  ASSERT_TRUE(queue.pop_if_not_after(Time::max(), out));
  EXPECT_EQ(out.slot, 8u);
  ASSERT_TRUE(queue.pop_if_not_after(Time::max(), out));
  EXPECT_EQ(out.slot, 7u);
}

TEST(EventQueueTest, AnEmptiedQueueAcceptsAnyTime) {
  EventQueue queue;
  queue.push({Time::from_ps(1'000), 1});
  EventQueue::Entry out;
  ASSERT_TRUE(queue.pop_if_not_after(Time::max(), out));
  queue.push({Time::from_ps(10), 2});  // earlier than the last entry out: the queue was empty
  queue.push({Time::from_ps(5), 3});
  ASSERT_TRUE(queue.pop_if_not_after(Time::max(), out));
  EXPECT_EQ(out.slot, 3u);
  ASSERT_TRUE(queue.pop_if_not_after(Time::max(), out));
  EXPECT_EQ(out.slot, 2u);
  EXPECT_TRUE(queue.empty());
}

}  // namespace
