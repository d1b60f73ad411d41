// Collective schedules: steps, chunk sizes and traffic of ring, barrier and parameter server.
#include "sim/collectives/schedule.h"

#include <gtest/gtest.h>

namespace {

using collectives::CollectiveSpec;
using program::Algorithm;
using program::CollectiveKind;

CollectiveSpec spec(CollectiveKind kind, std::int32_t members, std::int64_t bytes) {
  CollectiveSpec s;
  s.kind = kind;
  s.algorithm = Algorithm::kAuto;
  s.members = members;
  s.bytes = bytes;
  return s;
}

TEST(ScheduleTest, RingAllReduceIsReduceScatterThenAllGather) {
  const auto schedule = collectives::build_schedule(spec(CollectiveKind::kAllReduce, 8, 8'000));
  EXPECT_EQ(schedule.algorithm, Algorithm::kRing);
  ASSERT_EQ(schedule.phases.size(), 2u);
  for (const auto& phase : schedule.phases) {
    EXPECT_EQ(phase.steps, 7);
    EXPECT_DOUBLE_EQ(phase.bytes_per_transfer, 1'000);
    EXPECT_EQ(phase.transfers.size(), 8u);
  }
  // Each member sends 2(P−1)/P · M.
  for (double sent : collectives::bytes_sent(schedule, 8)) EXPECT_DOUBLE_EQ(sent, 2.0 * 7 / 8 * 8'000);
}

TEST(ScheduleTest, SeveralRingsSplitTheMessageButNotTheTraffic) {
  CollectiveSpec s = spec(CollectiveKind::kAllReduce, 4, 4'000);
  s.rings = {{0, 1, 2, 3}, {1, 2, 3, 0}};
  const auto schedule = collectives::build_schedule(s);
  EXPECT_DOUBLE_EQ(schedule.phases[0].bytes_per_transfer, 500);
  EXPECT_EQ(schedule.phases[0].transfers.size(), 8u);
  for (double sent : collectives::bytes_sent(schedule, 4)) EXPECT_DOUBLE_EQ(sent, 2.0 * 3 / 4 * 4'000);
}

TEST(ScheduleTest, ReduceScatterAndAllGatherAreOneRingPhase) {
  for (auto kind : {CollectiveKind::kReduceScatter, CollectiveKind::kAllGather}) {
    const auto schedule = collectives::build_schedule(spec(kind, 4, 4'000));
    ASSERT_EQ(schedule.phases.size(), 1u);
    EXPECT_EQ(schedule.phases[0].steps, 3);
    for (double sent : collectives::bytes_sent(schedule, 4)) EXPECT_DOUBLE_EQ(sent, 3'000);
  }
}

TEST(ScheduleTest, BarrierIsALatencyBoundAllReduce) {
  const auto schedule = collectives::build_schedule(spec(CollectiveKind::kBarrier, 16, 0));
  ASSERT_EQ(schedule.phases.size(), 2u);
  EXPECT_EQ(schedule.phases[0].steps + schedule.phases[1].steps, 30);  // 2(P−1)
  EXPECT_DOUBLE_EQ(schedule.phases[0].bytes_per_transfer, 4.0 / 16);
}

TEST(ScheduleTest, ParameterServerPushSendsEachShardToItsServer) {
  CollectiveSpec s = spec(CollectiveKind::kPsPush, 6, 12'000);  // 4 workers, 2 servers
  s.ps_servers = 2;
  const auto schedule = collectives::build_schedule(s);
  EXPECT_EQ(schedule.algorithm, Algorithm::kParameterServer);
  ASSERT_EQ(schedule.phases.size(), 1u);
  EXPECT_EQ(schedule.phases[0].transfers.size(), 8u);
  EXPECT_DOUBLE_EQ(schedule.phases[0].bytes_per_transfer, 6'000);
  const auto sent = collectives::bytes_sent(schedule, 6);
  EXPECT_DOUBLE_EQ(sent[0], 12'000);  // a worker pushes all its gradients
  EXPECT_DOUBLE_EQ(sent[5], 0);       // servers send nothing in a push
  s.kind = CollectiveKind::kPsPull;
  EXPECT_DOUBLE_EQ(collectives::bytes_sent(collectives::build_schedule(s), 6)[4], 4 * 6'000);
}

TEST(ScheduleTest, ImpossibleCombinationsAreRejected) {
  CollectiveSpec ps = spec(CollectiveKind::kPsPush, 4, 100);
  EXPECT_THROW(collectives::build_schedule(ps), collectives::UnsupportedCollective);  // no server
  CollectiveSpec ring_ps = spec(CollectiveKind::kAllReduce, 4, 100);
  ring_ps.algorithm = Algorithm::kParameterServer;
  EXPECT_THROW(collectives::build_schedule(ring_ps), collectives::UnsupportedCollective);
  CollectiveSpec bad_ring = spec(CollectiveKind::kAllReduce, 4, 100);
  bad_ring.rings = {{0, 1, 2}};
  EXPECT_THROW(collectives::build_schedule(bad_ring), collectives::UnsupportedCollective);
}

TEST(ScheduleTest, BusBandwidthFactorsAreThoseOfNcclTests) {
  EXPECT_DOUBLE_EQ(collectives::bus_bandwidth_factor(CollectiveKind::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(collectives::bus_bandwidth_factor(CollectiveKind::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(collectives::bus_bandwidth_factor(CollectiveKind::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(collectives::bus_bandwidth_factor(CollectiveKind::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(collectives::bus_bandwidth_factor(CollectiveKind::kBroadcast, 8), 1.0);
}

}  // namespace
