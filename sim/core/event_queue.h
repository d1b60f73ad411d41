// sim::EventQueue — the engine's pending events, in order of (time, insertion).
//
// A discrete-event simulation never schedules before the event it is running, so its keys
// only grow: a monotone priority queue. This is a radix heap (Ahuja, Mehlhorn, Orlin and
// Tarjan, "Faster algorithms for the shortest path problem", JACM 1990): bucket b > 0 holds
// the entries whose time first differs from the last time taken out in bit b − 1, bucket 0
// those at exactly that time. Taking out the earliest entry empties the lowest non-empty
// bucket into lower ones; an entry moves at most 64 times in its life and usually a few, in
// sequential memory — far cheaper than a binary heap's sifts through a large array.
//
// Ties keep insertion order without storing a sequence number: an entry is appended to its
// bucket, and a bucket is only ever emptied, in order, into buckets that are empty, so every
// bucket stays in insertion order — and entries of equal time always share a bucket.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "sim/core/time.h"

namespace sim {

class EventQueue {
 public:
  struct Entry {
    Time when;
    std::uint32_t slot;  // the engine's slot of the event's callback
  };

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  // `entry.when` must not be earlier than the last entry taken out, unless the queue is empty.
  void push(Entry entry) {
    if (size_ == 0) restart();
    place(entry);
    ++size_;
  }

  // Takes out the earliest entry (the first pushed among equals) into `out` if its time is at
  // or before `limit`; otherwise leaves the queue as it is and returns false.
  bool pop_if_not_after(Time limit, Entry& out) {
    if (now_head_ == buckets_[0].size()) {
      if (occupied_ == 0) return false;
      buckets_[0].clear();
      now_head_ = 0;
      const int lowest = std::countr_zero(occupied_) + 1;
      if (earliest_[lowest] > limit) return false;
      last_ = earliest_[lowest];
      spill(lowest);
    } else if (last_ > limit) {
      return false;
    }
    out = buckets_[0][now_head_++];
    --size_;
    // A long run of events at one time (each scheduling the next) would grow bucket 0 without
    // bound: drop what was taken out once it is most of the bucket.
    if (now_head_ >= kKeptCapacity && 2 * now_head_ >= buckets_[0].size()) {
      buckets_[0].erase(buckets_[0].begin(), buckets_[0].begin() + static_cast<std::ptrdiff_t>(now_head_));
      now_head_ = 0;
    }
    return true;
  }

 private:
  static constexpr int kBuckets = 65;  // bucket 0, and one per bit of a 64-bit time
  static constexpr std::size_t kKeptCapacity = 4096;  // entries (64 KiB) an emptied bucket keeps

  int bucket_of(Time when) const {
    return static_cast<int>(
        std::bit_width(static_cast<std::uint64_t>(when.ps()) ^ static_cast<std::uint64_t>(last_.ps())));
  }
  void place(const Entry& entry) {
    const int bucket = bucket_of(entry.when);
    buckets_[bucket].push_back(entry);
    if (bucket == 0) return;
    if ((occupied_ & bit(bucket)) == 0 || entry.when < earliest_[bucket]) earliest_[bucket] = entry.when;
    occupied_ |= bit(bucket);
  }
  // Moves every entry of `bucket` (> 0) into lower buckets, relative to the new last_.
  void spill(int bucket) {
    std::vector<Entry> entries;
    entries.swap(buckets_[bucket]);
    occupied_ &= ~bit(bucket);
    for (const Entry& entry : entries) place(entry);
    // The emptied bucket keeps its capacity for the next time it fills, unless it is large: a
    // burst passes down every bucket on its way to bucket 0, and each would keep room for all
    // of it.
    if (entries.capacity() <= kKeptCapacity) {
      entries.clear();
      buckets_[bucket].swap(entries);
    }
  }
  // An empty queue forgets the last time taken out: the engine's clock may be earlier than it
  // (a cancelled event taken out last), and any time is at or after zero.
  void restart() {
    buckets_[0].clear();
    now_head_ = 0;
    last_ = Time::zero();
  }
  static std::uint64_t bit(int bucket) { return std::uint64_t{1} << (bucket - 1); }

  std::array<std::vector<Entry>, kBuckets> buckets_;
  std::array<Time, kBuckets> earliest_{};  // of buckets 1..64 while occupied
  std::uint64_t occupied_ = 0;              // bit b − 1: bucket b is not empty
  std::size_t now_head_ = 0;                // next entry of bucket 0 to take out
  std::size_t size_ = 0;
  Time last_ = Time::zero();
};

}  // namespace sim
