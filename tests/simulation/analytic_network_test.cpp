// Analytic network model against closed forms: ring all-reduce inside a node, across nodes
// with one ring and with one ring per NIC, and many-to-one parameter-server pushes.
#include "sim/net/analytic_network.h"

#include <gtest/gtest.h>

#include <numeric>

#include "tests/support/clusters.h"
#include "topology/presets.h"

namespace {


sim::CommRequest all_reduce(std::int32_t members, std::int64_t bytes) {
  sim::CommRequest request;
  request.kind = program::CollectiveKind::kAllReduce;
  request.algorithm = program::Algorithm::kRing;
  request.bytes = bytes;
  request.endpoints.resize(members);
  std::iota(request.endpoints.begin(), request.endpoints.end(), 0);
  return request;
}

double seconds(const sim::CommResult& result) { return (result.end - result.start).seconds(); }

TEST(AnalyticNetworkTest, RingAllReduceInsideANodeIsTheTextbookFormula) {
  // 8 GPUs on NVSwitch: B = 450 GB/s, α = 0.6 µs (GPU → NVSwitch → GPU).
  // T = 2(P−1)·α + 2(P−1)/P · M/B.
  const topology::Cluster cluster(test_support::hgx_cluster(1));
  sim::Engine engine;
  sim::AnalyticNetwork network(engine, cluster, test_support::textbook_network_options());
  const std::int64_t m = 1'000'000'000;
  const sim::CommResult result = network.cost(all_reduce(8, m));
  EXPECT_NEAR(seconds(result), 14 * 0.6e-6 + 14.0 / 8 * m / 450e9, 1e-11);
  EXPECT_NEAR(result.latency_seconds, 14 * 0.6e-6, 1e-15);
  for (double sent : result.bytes_sent) EXPECT_DOUBLE_EQ(sent, 14.0 / 8 * m);
  EXPECT_EQ(result.algorithm, program::Algorithm::kRing);
}

TEST(AnalyticNetworkTest, ASingleRingAcrossNodesIsBoundByOneNic) {
  // 16 GPUs in 2 nodes, one ring: every step waits for the inter-node hop at 40 GB/s
  // (NDR 50 GB/s × 0.8); α = 2.7 µs (PCIe 0.5 + NIC 0.85, twice).
  const topology::Cluster cluster(test_support::hgx_cluster(2));
  sim::Engine engine;
  sim::NetworkOptions options = test_support::textbook_network_options();
  options.ring_channels = 1;
  sim::AnalyticNetwork network(engine, cluster, options);
  const std::int64_t m = 1'600'000'000;
  EXPECT_NEAR(seconds(network.cost(all_reduce(16, m))), 30 * (2.7e-6 + m / 16.0 / 40e9), 1e-9);
}

TEST(AnalyticNetworkTest, OneRingPerNicUsesEveryNic) {
  // Eight rings (one per NIC) each carry M/8; each NIC carries one ring's hop per step.
  const topology::Cluster cluster(test_support::hgx_cluster(2));
  sim::Engine engine;
  sim::AnalyticNetwork network(engine, cluster, test_support::textbook_network_options());  // ring_channels 0: one ring per NIC
  const std::int64_t m = 1'600'000'000;
  EXPECT_NEAR(seconds(network.cost(all_reduce(16, m))), 30 * (2.7e-6 + m / 128.0 / 40e9), 1e-9);
}

TEST(AnalyticNetworkTest, ParameterServerNicIsSharedByAllWorkers) {
  // 64 workers push M each into one 100 Gb/s (12.5 GB/s) server NIC: each gets 1/64 of it.
  topology::ClusterSpec spec = test_support::hgx_cluster(8);
  spec.parameter_servers.count = 1;
  spec.parameter_servers.nic = *topology::server_nic_preset("eth-100g");
  const topology::Cluster cluster(spec);
  sim::Engine engine;
  sim::AnalyticNetwork network(engine, cluster, test_support::textbook_network_options());
  sim::CommRequest push;
  push.kind = program::CollectiveKind::kPsPush;
  push.bytes = 1'000'000'000;
  push.ps_servers = 1;
  push.endpoints.resize(65);
  std::iota(push.endpoints.begin(), push.endpoints.end(), 0);
  const sim::CommResult result = network.cost(push);
  EXPECT_NEAR(result.bandwidth_seconds, 64 * 1e9 / 12.5e9, 1e-9);
  const double per_worker_gbit_s = push.bytes * 8 / seconds(result) / 1e9;
  EXPECT_NEAR(per_worker_gbit_s, 100.0 / 64, 0.01);
}

TEST(AnalyticNetworkTest, CompletionIsScheduledOnTheEngine) {
  const topology::Cluster cluster(test_support::hgx_cluster(1));
  sim::Engine engine;
  sim::AnalyticNetwork network(engine, cluster, test_support::textbook_network_options());
  engine.run_until(sim::Time::from_us(5));
  sim::Time finished;
  network.start(all_reduce(4, 4'000'000), [&](const sim::CommResult& result) {
    finished = engine.now();
    EXPECT_EQ(result.start, sim::Time::from_us(5));
  });
  engine.run();
  const sim::Time expected = sim::Time::from_us(5) + sim::Time::from_seconds(6 * 0.6e-6 + 1.5 * 4e6 / 450e9);
  EXPECT_NEAR(static_cast<double>(finished.ps()), static_cast<double>(expected.ps()), 1.0);
}

}  // namespace
