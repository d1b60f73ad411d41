// The GPU backend's decisions that need no GPU (backend/gpu_rules.h), the bounded wait every
// real-run step goes through (backend/job.h), and the memory bandwidth a calibration keeps
// (backend/calibration_steps.h): checked here, applied on GPU machines.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>

#include "backend/calibration_steps.h"
#include "backend/gpu_rules.h"
#include "backend/job.h"

namespace {

using backend::gpu_rules::choose_gpu;

TEST(GpuRulesTest, OneGpuPerRankUnlessRanksAskToShare) {
  EXPECT_EQ(choose_gpu(0, 8, false, false).device, 0);
  EXPECT_EQ(choose_gpu(7, 8, false, false).device, 7);
  // More ranks than GPUs: refused with the way out, unless shared round-robin.
  const auto refused = choose_gpu(1, 1, false, false);
  EXPECT_EQ(refused.device, -1);
  EXPECT_NE(refused.refusal.find("--share-gpu"), std::string::npos) << refused.refusal;
  for (int local = 0; local < 6; ++local) EXPECT_EQ(choose_gpu(local, 1, false, true).device, 0);
  EXPECT_EQ(choose_gpu(5, 4, false, true).device, 1);
  EXPECT_EQ(choose_gpu(3, 2, false, true).device, 1);
  // A launcher that gave each rank one GPU (CUDA_VISIBLE_DEVICES): that one, whatever the local rank.
  EXPECT_EQ(choose_gpu(3, 1, true, false).device, 0);
  EXPECT_EQ(choose_gpu(0, 0, false, true).device, -1);
}

// CUDA_VISIBLE_DEVICES=0 for every rank of a host shows each the same one GPU: found before NCCL
// refuses it as a duplicate; distinct GPUs (bus ids) pass.
TEST(GpuRulesTest, RanksOfAHostOnOneGpuAreFoundByBusId) {
  using backend::gpu_rules::first_shared_gpu;
  EXPECT_FALSE(first_shared_gpu({"0000:18:00.0", "0000:2A:00.0", "0000:3A:00.0"}));
  EXPECT_FALSE(first_shared_gpu({"0000:18:00.0"}));
  const auto shared = first_shared_gpu({"0000:18:00.0", "0000:2A:00.0", "0000:18:00.0", "0000:2A:00.0"});
  ASSERT_TRUE(shared);
  EXPECT_EQ(*shared, (std::pair{0, 2}));
}

TEST(GpuRulesTest, RanksSharingAGpuGetDistinctHostIds) {
  std::set<std::string> ids;
  for (int rank = 0; rank < 16; ++rank) ids.insert(backend::gpu_rules::shared_gpu_host_id("gpu-node", rank));
  EXPECT_EQ(ids.size(), 16u);
  // Two hosts' rank 0 differ too (a job over two machines, each sharing its GPU).
  EXPECT_NE(backend::gpu_rules::shared_gpu_host_id("a", 0), backend::gpu_rules::shared_gpu_host_id("b", 0));
}

TEST(GpuRulesTest, NcclOlderThanWhatDtsimCallsIsRefusedWithTheVersionAndTheFix) {
  using backend::gpu_rules::nccl_version_problem;
  const auto too_old = nccl_version_problem(21703, false);
  ASSERT_TRUE(too_old);
  EXPECT_NE(too_old->find("NCCL 2.17.3"), std::string::npos) << *too_old;
  EXPECT_NE(too_old->find("2.18"), std::string::npos) << *too_old;
  EXPECT_NE(too_old->find("LD_LIBRARY_PATH"), std::string::npos) << *too_old;
  EXPECT_FALSE(nccl_version_problem(21801, false));
  // NCCL_ALGO per collective needs 2.24.
  const auto no_per_collective = nccl_version_problem(22307, true);
  ASSERT_TRUE(no_per_collective);
  EXPECT_NE(no_per_collective->find("2.24"), std::string::npos) << *no_per_collective;
  EXPECT_FALSE(nccl_version_problem(22403, true));
  EXPECT_FALSE(nccl_version_problem(22809, true));
}

// CUDA event times are floats in milliseconds; back-to-back ops share an event time (one's end,
// the next's start). Spans read from the one origin never overlap, never run backwards.
TEST(GpuRulesTest, SpansFromOneOriginNeverOverlapTheNextOp) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> gap(0.0f, 0.05f);
  float now = 0;
  std::int64_t previous_end = 0;
  for (int op = 0; op < 100000; ++op) {
    const float start = now + (op % 3 == 0 ? 0.0f : gap(random));  // a third start exactly at the last end
    const float end = start + gap(random);
    const auto span = backend::gpu_rules::span_from_origin(start, end);
    ASSERT_LE(previous_end, span.start_ps) << "op " << op;
    ASSERT_LE(span.start_ps, span.end_ps) << "op " << op;
    previous_end = span.end_ps;
    now = end;
  }
  EXPECT_EQ(backend::gpu_rules::span_from_origin(1.5f, 2.25f).start_ps, 1'500'000'000);
  EXPECT_EQ(backend::gpu_rules::span_from_origin(1.5f, 2.25f).end_ps, 2'250'000'000);
}

// A step that never finishes (a poll that never says ready, as with a hung peer) ends the wait once
// the timeout has passed — and not before; one that finishes returns at once.
TEST(BoundedWaitTest, AWaitThatNeverFinishesEndsAtItsTimeout) {
  const auto start = std::chrono::steady_clock::now();
  int polls = 0;
  EXPECT_FALSE(backend::job::poll_until([&] { return ++polls < 0; }, 0.2));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.2);
  EXPECT_GT(polls, 1);
  int ready_after = 3;
  EXPECT_TRUE(backend::job::poll_until([&] { return --ready_after <= 0; }, 3600));
  EXPECT_EQ(ready_after, 0);
}

// The profile's memory bandwidth comes from passes too large for the cache: with a 50 MB L2,
// the passes that fit (faster) are not the memory's bandwidth.
TEST(CalibrationBandwidthTest, PassesThatFitInTheCacheDoNotSetTheMemoryBandwidth) {
  const std::int64_t l2 = 50'000'000;
  const std::vector<std::pair<double, double>> rates = {
      {1 << 20, 2.0e12}, {16 << 20, 6.5e12}, {64 << 20, 4.1e12}, {256 << 20, 4.0e12}, {1 << 30, 4.2e12}};
  EXPECT_DOUBLE_EQ(backend::calibration::memory_bandwidth(rates, l2), 4.2e12);
  // None large enough: the largest pass is the best estimate there is.
  EXPECT_DOUBLE_EQ(backend::calibration::memory_bandwidth({{1 << 20, 9e11}, {64 << 20, 3e11}}, 1 << 30), 3e11);
  // Unknown cache (0): every pass counts.
  EXPECT_DOUBLE_EQ(backend::calibration::memory_bandwidth(rates, 0), 6.5e12);
}

}  // namespace
