// One suite, three network models (analytic, flow, packet): each matches the closed forms
// where nothing contends, and shows every topology effect the issue lists by the factor theory
// predicts. Where only the congestion-aware models can see an effect (two collectives sharing
// a link), the analytic model's blindness is checked too.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <numeric>

#include "sim/net/flow_network.h"
#include "sim/net/network_model.h"
#include "tests/support/clusters.h"
#include "topology/presets.h"

namespace {

using program::Algorithm;
using program::CollectiveKind;

struct Analytic { static constexpr const char* kName = "analytic"; };
struct Flow { static constexpr const char* kName = "flow"; };
struct Packet { static constexpr const char* kName = "packet"; };


sim::CommRequest collective(CollectiveKind kind, Algorithm algorithm, std::vector<std::int32_t> endpoints,
                            std::int64_t bytes) {
  sim::CommRequest request;
  request.kind = kind;
  request.algorithm = algorithm;
  request.endpoints = std::move(endpoints);
  request.bytes = bytes;
  return request;
}

std::vector<std::int32_t> range(std::int32_t first, std::int32_t count, std::int32_t stride = 1) {
  std::vector<std::int32_t> values(count);
  for (std::int32_t i = 0; i < count; ++i) values[i] = first + i * stride;
  return values;
}

template <typename Model>
class NetworkModelTest : public testing::Test {
 protected:
  // Starts every request at time 0 and runs them to completion.
  std::vector<sim::CommResult> run(const topology::ClusterSpec& spec, const std::vector<sim::CommRequest>& requests,
                                   sim::NetworkOptions options = test_support::textbook_network_options()) {
    options.model = Model::kName;
    const topology::Cluster cluster(spec);
    sim::Engine engine;
    auto model = sim::make_network_model(options, engine, cluster);
    std::vector<sim::CommResult> results(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      model->start(requests[i], [&results, i](const sim::CommResult& result) { results[i] = result; });
    }
    engine.run();
    return results;
  }
  double seconds(const topology::ClusterSpec& spec, const sim::CommRequest& request, sim::NetworkOptions options = test_support::textbook_network_options()) {
    const sim::CommResult result = run(spec, {request}, options)[0];
    return (result.end - result.start).seconds();
  }
  static constexpr bool kAnalytic = std::string_view(Model::kName) == "analytic";
  // Chunk boundaries and picosecond rounding make the packet model a hair off the formulas;
  // where chunks queue behind each other, filling the pipeline adds up to a chunk time per hop.
  static constexpr double kTolerance = std::string_view(Model::kName) == "packet" ? 1e-3 : 1e-6;
  static constexpr double kQueueTolerance = std::string_view(Model::kName) == "packet" ? 0.08 : 0.01;
};

using Models = testing::Types<Analytic, Flow, Packet>;
TYPED_TEST_SUITE(NetworkModelTest, Models);

TYPED_TEST(NetworkModelTest, RingAllReduceInsideANodeMatchesTheClosedForm) {
  // T = 2(P−1)(α + M/(P·B)), P = 8, α = 0.6 µs (NVLink hop), B = 450 GB/s.
  const std::int64_t m = 64 << 20;
  const double expected = 14 * (0.6e-6 + m / 8.0 / 450e9);
  const double t = this->seconds(test_support::hgx_cluster(1), collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 8), m));
  EXPECT_NEAR(t, expected, this->kTolerance * expected);
}

// With collectives.library = "nccl" a step's α is NCCL's latency, which every model pays: alone,
// a small collective takes NCCL's tuner's latency (NVIDIA/nccl src/graph/tuning.cc): ring/LL on
// 8 H100 in one node 6.6 µs base + 2·7 NVLink steps × 0.6 µs = 15.0 µs; NVLSTree across two
// nodes 25 µs + 2·log2(2)·20.9 µs = 66.8 µs. (The packet model once paid the links' α alone:
// 2.7 µs for the NVLSTree, and less for 2 MiB than for 8 B.)
TYPED_TEST(NetworkModelTest, SmallCollectivesPayNcclsLatencyInEveryModel) {
  sim::NetworkOptions nccl;
  nccl.library = "nccl";
  const double ring =
      this->seconds(test_support::hgx_cluster(1),
                    collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 8), 8), nccl);
  EXPECT_NEAR(ring * 1e6, 15.0, 0.01);
  const double small_tree = this->seconds(
      test_support::hgx_cluster(2),
      collective(CollectiveKind::kAllReduce, Algorithm::kNvlsTree, range(0, 16), 8 << 10), nccl);
  EXPECT_NEAR(small_tree * 1e6, 66.8, 0.1);
  const double large_tree = this->seconds(
      test_support::hgx_cluster(2),
      collective(CollectiveKind::kAllReduce, Algorithm::kNvlsTree, range(0, 16), 2 << 20), nccl);
  EXPECT_GT(large_tree, small_tree);
}

// With collectives.library = "nccl" a send inside a node runs no faster than NCCL's CTAs copy
// (sim/net/nccl_p2p.h): 32 MiB on H100 in an eight-rank communicator takes 4 CTAs at 18.9 GB/s
// each (605.29 GB/s both ways on 16 CTAs, meta-pytorch/torchcomms P2pNvlSendRecvBenchmark.md),
// in a two-rank one 16. Two such sends from one GPU each keep their rate: the CTAs, not the
// GPU's 450 GB/s link, bind them.
TYPED_TEST(NetworkModelTest, AnNcclSendInsideANodeRunsAtItsCtasRate) {
  sim::NetworkOptions nccl;
  nccl.library = "nccl";
  const std::int64_t m = 32 << 20;
  const double per_cta = 605.29e9 / 2 / 16;
  const auto send = [m](std::int32_t from, std::int32_t to, std::int32_t ranks) {
    sim::CommRequest request;
    request.endpoints = {from, to};
    request.bytes = m;
    request.communicator_ranks = ranks;
    return request;
  };
  const double alpha = 0.6e-6;  // two NVLink hops
  const double group = this->seconds(test_support::hgx_cluster(1), send(0, 1, 8), nccl);
  EXPECT_NEAR(group, alpha + m / (4 * per_cta), this->kQueueTolerance * group);
  const double pair = this->seconds(test_support::hgx_cluster(1), send(0, 1, 2), nccl);
  EXPECT_NEAR(pair, alpha + m / (16 * per_cta), this->kQueueTolerance * pair);
  for (const sim::CommResult& both :
       this->run(test_support::hgx_cluster(1), {send(0, 1, 8), send(0, 2, 8)}, nccl)) {
    EXPECT_NEAR((both.end - both.start).seconds(), group, this->kQueueTolerance * group);
  }
  const double ideal = this->seconds(test_support::hgx_cluster(1), send(0, 1, 8));
  EXPECT_NEAR(ideal, alpha + m / 450e9, this->kQueueTolerance * ideal);
}

TYPED_TEST(NetworkModelTest, RingAllReduceOnAFullMeshUsesEveryLink) {
  // MI300X: 8 GPUs, a 64 GB/s link (48 usable) between every two. The ring all-reduce runs 7
  // rings over disjoint Hamiltonian cycles, each hop on its own link, M/7 per ring:
  // T = 2(P−1)(α + M/(7·P·B)), P = 8, α = 0.6 µs (one direct link), B = 48 GB/s.
  topology::ClusterSpec mesh = test_support::hgx_cluster(1);
  mesh.node = *topology::node_preset("mi300x-8");
  const std::int64_t m = 64 << 20;
  const double expected = 14 * (0.6e-6 + m / 56.0 / 48e9);
  const double t = this->seconds(mesh, collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 8), m));
  EXPECT_NEAR(t, expected, this->kTolerance * expected);
}

TYPED_TEST(NetworkModelTest, RingAllReduceAcrossNodesUsesEveryNic) {
  // 16 GPUs, one ring per NIC: every step is bound by a NIC hop carrying M/(16·8):
  // T = 30 (α + M/(16·8·40 GB/s)), α = 2.7 µs.
  const std::int64_t m = 256 << 20;
  const double expected = 30 * (2.7e-6 + m / 128.0 / 40e9);
  const double t = this->seconds(test_support::hgx_cluster(2), collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 16), m));
  EXPECT_NEAR(t, expected, this->kTolerance * expected);
}

TYPED_TEST(NetworkModelTest, TreeAllReduceInsideANodeIsAPipelinedChain) {
  // One node: the tree is a chain of 8 GPUs, d = 7. K = 16 chunks of 512 KiB. The first chunk
  // climbs and comes back one hop per step (2d = 14 steps of α + c/B); then 15 steps move a
  // chunk on every edge, each GPU sending up and down at once (α + 2c/B).
  const std::int64_t m = 8 << 20;
  const double c = 512 * 1024;
  const double expected = 14 * (0.6e-6 + c / 450e9) + 15 * (0.6e-6 + 2 * c / 450e9);
  const double t =
      this->seconds(test_support::hgx_cluster(1), collective(CollectiveKind::kAllReduce, Algorithm::kTree, range(0, 8), m));
  EXPECT_NEAR(t, expected, 2 * this->kQueueTolerance * expected);
}

TYPED_TEST(NetworkModelTest, ChainBroadcastPipelinesItsChunks) {
  // 4 MiB from GPU 0 down a chain of 8: 7 fill steps and K − 1 = 7 steady steps, each α + c/B.
  const double c = 512 * 1024;
  const double expected = 14 * (0.6e-6 + c / 450e9);
  const double t = this->seconds(test_support::hgx_cluster(1),
                                 collective(CollectiveKind::kBroadcast, Algorithm::kRing, range(0, 8), 4 << 20));
  EXPECT_NEAR(t, expected, 2 * this->kQueueTolerance * expected);
}

TYPED_TEST(NetworkModelTest, DirectAllGatherSharesEachSendersLink) {
  // 4 GPUs each send M/4 to 3 others at once: α + 3·(M/4)/B.
  const std::int64_t m = 64 << 20;
  const double expected = 0.6e-6 + 3 * (m / 4.0) / 450e9;
  const double t = this->seconds(test_support::hgx_cluster(1),
                                 collective(CollectiveKind::kAllGather, Algorithm::kDirect, range(0, 4), m));
  EXPECT_NEAR(t, expected, this->kQueueTolerance * expected);
}

TYPED_TEST(NetworkModelTest, AnNcclAllToAllAcrossNodesKeepsEveryPeerInFlight) {
  // 2 × 8 GPUs, a 40 GB/s NIC each. Every member sends M/16 to each of its 15 peers, 8 of them
  // across its NIC. NCCL has every peer in flight at once: 8·M/16 through the NIC (bus bandwidth
  // N/(N−1) × the NIC on N nodes, NVIDIA/nccl-tests#130). The textbook pairwise exchange waits
  // in each of its 15 steps for a pair across a NIC: 15·M/16. Both pay 15 step latencies.
  const std::int64_t m = 1 << 30;
  const auto request = collective(CollectiveKind::kAllToAll, Algorithm::kDirect, range(0, 16), m);
  sim::NetworkOptions nccl = test_support::textbook_network_options();
  nccl.library = "nccl";
  const double concurrent = 15 * 2.7e-6 + 8 * (m / 16.0) / 40e9;
  const double pairwise = 15 * (2.7e-6 + (m / 16.0) / 40e9);
  EXPECT_NEAR(this->seconds(test_support::hgx_cluster(2), request, nccl), concurrent,
              this->kQueueTolerance * concurrent);
  EXPECT_NEAR(this->seconds(test_support::hgx_cluster(2), request), pairwise,
              this->kQueueTolerance * pairwise);
}

TYPED_TEST(NetworkModelTest, HierarchicalAllReduceIsItsThreePhases) {
  // 2 nodes × 8: reduce-scatter in the node (7 × (0.6 µs + (M/8)/450 GB/s)), all-reduce of
  // the shards across nodes (2 × (2.7 µs + (M/16)/40 GB/s), a NIC per GPU), all-gather.
  const std::int64_t m = 256 << 20;
  const double expected = 2 * 7 * (0.6e-6 + m / 8.0 / 450e9) + 2 * (2.7e-6 + m / 16.0 / 40e9);
  const double t = this->seconds(test_support::hgx_cluster(2),
                                 collective(CollectiveKind::kAllReduce, Algorithm::kHierarchical, range(0, 16), m));
  EXPECT_NEAR(t, expected, this->kTolerance * 10 * expected);
}

TYPED_TEST(NetworkModelTest, HalvingDoublingTakesTwoLog2PLatencySteps) {
  // A tiny all-reduce on 8 GPUs of one node: 2·log2 8 = 6 steps of α.
  const double t = this->seconds(test_support::hgx_cluster(1), collective(CollectiveKind::kAllReduce, Algorithm::kHalvingDoubling, range(0, 8), 64));
  EXPECT_NEAR(t, 6 * 0.6e-6, 0.01 * 6 * 0.6e-6);
}

TYPED_TEST(NetworkModelTest, TreeLatencyGrowsWithLogPAndRingLatencyWithP) {
  // One GPU per node, tiny message: the tree's steps grow with log2 N, the ring's with N.
  auto time = [&](Algorithm algorithm, int nodes) {
    return this->seconds(test_support::hgx_cluster(nodes), collective(CollectiveKind::kAllReduce, algorithm, range(0, nodes, 8), 64));
  };
  const double tree_ratio = time(Algorithm::kTree, 32) / time(Algorithm::kTree, 4);
  const double ring_ratio = time(Algorithm::kRing, 32) / time(Algorithm::kRing, 4);
  EXPECT_LT(tree_ratio, 3.0);   // steps 1+2·5−1 = 10 against 1+2·2−1 = 4 (+ spine hops)
  EXPECT_GT(ring_ratio, 8.0);   // 2·31 against 2·3
}

TYPED_TEST(NetworkModelTest, ParameterServerNicIsSharedByAllWorkers) {
  // 64 workers push 100 MB each into one 100 Gb/s server NIC: ≈ 1.5625 Gb/s each (C5).
  topology::ClusterSpec spec = test_support::hgx_cluster(8);
  spec.parameter_servers.count = 1;
  spec.parameter_servers.nic = *topology::server_nic_preset("eth-100g");
  sim::CommRequest push = collective(CollectiveKind::kPsPush, Algorithm::kParameterServer, range(0, 65), 100'000'000);
  push.ps_servers = 1;
  const double gbit_per_worker = 100'000'000 * 8 / this->seconds(spec, push) / 1e9;
  EXPECT_NEAR(gbit_per_worker, 100.0 / 64, 0.01 * 100.0 / 64);
}

TYPED_TEST(NetworkModelTest, AnOversubscribedSpineSlowsCrossNodeTrafficByItsRatio) {
  // One node per leaf (8 down ports) and 2 nodes: the 8 rings' node hops cross the spine. At
  // 1:1 each takes its own uplink; at 2:1 two share one, at 4:1 four: the bandwidth term of
  // the NIC-bound all-reduce grows by the ratio.
  auto bandwidth_term = [&](double oversubscription) {
    topology::ClusterSpec spec = test_support::hgx_cluster(2);
    spec.fabric.leaf_down_ports = 8;
    spec.fabric.oversubscription = oversubscription;
    const std::int64_t m = 256 << 20;
    const double t = this->seconds(spec, collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 16), m));
    return t - 30 * 3.1e-6;  // α via the spine: 2.7 µs + 2 × 0.2 µs
  };
  const double full = bandwidth_term(1);
  EXPECT_NEAR(bandwidth_term(2) / full, 2.0, 0.02);
  EXPECT_NEAR(bandwidth_term(4) / full, 4.0, 0.04);
}

TYPED_TEST(NetworkModelTest, RailOptimizedFabricKeepsSameRailTrafficOffAnOversubscribedSpine) {
  // Hierarchical all-reduce on 8 nodes, one node per leaf in the classic fabric and 4:1
  // oversubscription: its inter-node rings (same GPU index across nodes) share 2 uplinks 4 to
  // one. Rail-optimized, the same rings stay on their rail leaf at full NIC speed. Only the
  // inter-node phase differs: 14 steps of M/64 at 10 GB/s instead of 40, plus the spine's
  // 0.4 µs per step.
  const std::int64_t m = 256 << 20;
  auto time = [&](bool rail_optimized) {
    topology::ClusterSpec spec = test_support::hgx_cluster(8);
    spec.fabric.leaf_down_ports = 8;
    spec.fabric.oversubscription = 4;
    spec.fabric.rail_optimized = rail_optimized;
    return this->seconds(spec, collective(CollectiveKind::kAllReduce, Algorithm::kHierarchical, range(0, 64), m));
  };
  const double expected = 14 * (m / 64.0 / 10e9 - m / 64.0 / 40e9 + 0.4e-6);
  EXPECT_NEAR(time(false) - time(true), expected, 0.03 * expected);
}

TYPED_TEST(NetworkModelTest, GpusSharingANicShareItsBandwidth) {
  // Eight rings leave each node from eight GPUs; with 2 NICs per node four of them share
  // each NIC, so the NIC-bound bandwidth term is 4× that with 8 NICs.
  auto bandwidth_term = [&](int nics) {
    topology::ClusterSpec spec = test_support::hgx_cluster(2);
    spec.node.nics = nics;
    sim::NetworkOptions options = test_support::textbook_network_options();
    options.ring_channels = 8;
    const std::int64_t m = 256 << 20;
    return this->seconds(spec, collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 16), m), options) -
           30 * 2.7e-6;
  };
  EXPECT_NEAR(bandwidth_term(2) / bandwidth_term(8), 4.0, 4.0 * this->kQueueTolerance);
}

TYPED_TEST(NetworkModelTest, NvswitchNodeAgainstPcieOnlyServer) {
  // Ring all-reduce on 8 GPUs: NVLink at 450 GB/s against PCIe Gen5 at 0.87 of 64 GB/s (through
  // the host between PCIe switches): the bandwidth terms differ by 450/55.68.
  const std::int64_t m = 256 << 20;
  topology::ClusterSpec nvswitch = test_support::hgx_cluster(1);
  topology::ClusterSpec pcie = test_support::hgx_cluster(1);
  pcie.node = *topology::node_preset("pcie-h100");
  pcie.node.gpu = nvswitch.node.gpu;
  const auto request = collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 8), m);
  const double fast = this->seconds(nvswitch, request) - 14 * 0.6e-6;
  const double slow = this->seconds(pcie, request) - 14 * 1.0e-6;  // α through the host: 4 × 0.25 µs
  EXPECT_NEAR(slow / fast, 450.0 / (64 * 0.87), 0.01 * 450.0 / (64 * 0.87));
}

TYPED_TEST(NetworkModelTest, ProtocolEfficiencyScalesTheNetworkBandwidth) {
  const std::int64_t m = 256 << 20;
  auto bandwidth_term = [&](double efficiency) {
    topology::ClusterSpec spec = test_support::hgx_cluster(2);
    spec.fabric.nic.efficiency = efficiency;
    return this->seconds(spec, collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 16), m)) -
           30 * 2.7e-6;
  };
  EXPECT_NEAR(bandwidth_term(0.4) / bandwidth_term(0.8), 2.0, 0.02);
}

TYPED_TEST(NetworkModelTest, DataParallelTrafficContendsWithPipelineTrafficOnANic) {
  // A single-ring all-reduce across 2 nodes leaves node 0 through GPU 7's NIC; a pipeline
  // send from GPU 7 to GPU 15 (node 1) uses the same NIC at the same time. The congestion-
  // aware models slow both; the analytic model prices each as if alone.
  const std::int64_t m = 256 << 20;
  sim::NetworkOptions options = test_support::textbook_network_options();
  options.ring_channels = 1;
  const auto all_reduce = collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 16), m);
  sim::CommRequest send;
  send.bytes = 2 * m;
  send.endpoints = {7, 15};
  const double alone = this->seconds(test_support::hgx_cluster(2), all_reduce, options);
  const auto together = this->run(test_support::hgx_cluster(2), {all_reduce, send}, options);
  const double shared = (together[0].end - together[0].start).seconds();
  if (this->kAnalytic) {
    EXPECT_NEAR(shared, alone, 1e-12);
  } else {
    // The send outlasts the all-reduce, so the NIC-bound bandwidth term doubles exactly.
    const double latency = 30 * 2.7e-6;
    EXPECT_NEAR((shared - latency) / (alone - latency), 2.0, 2.0 * this->kQueueTolerance);
  }
}

TYPED_TEST(NetworkModelTest, TwoAllReducesOnTheSameLinksTakeTwiceAsLong) {
  const std::int64_t m = 256 << 20;
  const auto request = collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 8), m);
  const double alone = this->seconds(test_support::hgx_cluster(1), request);
  const auto both = this->run(test_support::hgx_cluster(1), {request, request});
  const double ratio = (both[1].end - both[1].start).seconds() / alone;
  if (this->kAnalytic) {
    EXPECT_NEAR(ratio, 1.0, 1e-9);
  } else {
    EXPECT_NEAR(ratio, 2.0, 0.05);  // the bandwidth term doubles; latency is small here
  }
}

// The flow model solves a phase's rates once for its routes and replays them for the same
// collective at other sizes: a collective that follows others on the same routes takes, to the
// picosecond, what it takes on a fresh network.
TYPED_TEST(NetworkModelTest, ACollectiveTakesTheSameTimeAfterOthersOnItsRoutesAsAlone) {
  const topology::ClusterSpec spec = test_support::hgx_cluster(2);
  const auto all_reduce = [](std::int64_t bytes) {
    return collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 16), bytes);
  };
  const topology::Cluster cluster(spec);
  sim::NetworkOptions options = test_support::textbook_network_options();
  options.model = TypeParam::kName;
  sim::Engine engine;
  auto model = sim::make_network_model(options, engine, cluster);
  std::vector<sim::CommResult> results;
  const std::vector<std::int64_t> sizes = {64 << 20, 1 << 20, 4096, 64 << 20};
  std::function<void(std::size_t)> start = [&](std::size_t i) {
    model->start(all_reduce(sizes[i]), [&, i](const sim::CommResult& result) {
      results.push_back(result);
      if (i + 1 < sizes.size()) start(i + 1);
    });
  };
  start(0);
  engine.run();
  ASSERT_EQ(results.size(), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const sim::CommResult alone = this->run(spec, {all_reduce(sizes[i])}, options)[0];
    EXPECT_EQ((results[i].end - results[i].start).ps(), (alone.end - alone.start).ps()) << sizes[i] << " bytes";
  }
}

TYPED_TEST(NetworkModelTest, BarrierCostGrowsLinearlyWithTheRanks) {
  // Ring barrier: 2(P−1) latency-bound steps (§6.2.5), α = 2.7 µs between nodes on one leaf.
  auto time = [&](int nodes) {
    topology::ClusterSpec spec = test_support::hgx_cluster(nodes);
    spec.fabric.leaf_down_ports = 64;
    return this->seconds(spec, collective(CollectiveKind::kBarrier, Algorithm::kRing, range(0, nodes, 8), 0));
  };
  EXPECT_NEAR(time(4), 2 * 3 * 2.7e-6, 0.01 * 2 * 3 * 2.7e-6);
  EXPECT_NEAR(time(8), 2 * 7 * 2.7e-6, 0.01 * 2 * 7 * 2.7e-6);
}

TYPED_TEST(NetworkModelTest, EveryBytesSentIsReported) {
  const std::int64_t m = 8 << 20;
  const auto result = this->run(test_support::hgx_cluster(1), {collective(CollectiveKind::kAllGather, Algorithm::kRing, range(0, 4), m)})[0];
  ASSERT_EQ(result.bytes_sent.size(), 4u);
  for (double sent : result.bytes_sent) EXPECT_DOUBLE_EQ(sent, 3.0 / 4 * m);
}

}  // namespace

namespace {

// Bisection of a three-tier fat-tree: with every GPU sending across pods at once (a shift by
// half the cluster), each transfer gets the NIC's rate divided by both tiers' oversubscription
// (the leaf's down : up and the spine's), D-mod-K spreading the shift evenly over the uplinks.
// Returns each transfer's bandwidth time for `bytes`.
std::vector<double> half_shift_seconds(const topology::ClusterSpec& spec, std::int64_t bytes) {
  const topology::Cluster cluster(spec);
  sim::NetworkOptions options = test_support::textbook_network_options();
  options.model = "flow";
  sim::Engine engine;
  auto model = sim::make_network_model(options, engine, cluster);
  const std::int32_t gpus = spec.gpu_count();
  std::vector<double> seconds(static_cast<std::size_t>(gpus));
  for (std::int32_t gpu = 0; gpu < gpus; ++gpu) {
    sim::CommRequest transfer;
    transfer.bytes = bytes;
    transfer.endpoints = {gpu, (gpu + gpus / 2) % gpus};
    model->start(transfer, [&seconds, gpu](const sim::CommResult& result) { seconds[gpu] = result.bandwidth_seconds; });
  }
  engine.run();
  return seconds;
}

TEST(FlowNetworkTest, AThreeTierFatTreesBisectionIsTheNicRateOverBothOversubscriptions) {
  topology::ClusterSpec spec = test_support::hgx_cluster(8);  // 64 GPUs, NDR at 40 GB/s effective
  spec.fabric.leaf_down_ports = 16;                             // 2 nodes per leaf
  spec.fabric.oversubscription = 2;                             // 8 uplinks per leaf
  spec.fabric.pod_leaves = 2;                                   // 4 pods
  spec.fabric.spine_oversubscription = 2;                       // 1 uplink per spine
  const std::int64_t bytes = 1 << 30;
  const double per_gpu = 40e9 / (2 * 2);
  for (double seconds : half_shift_seconds(spec, bytes)) EXPECT_NEAR(seconds, bytes / per_gpu, 1e-9 * bytes / per_gpu);
}

// The rail-optimized NDR preset as large clusters build it (64-port switches: leaves of 32 NICs,
// pods of 32 leaves = 1,024 GPUs), two pods, with each tier oversubscribed in turn.
TEST(FlowNetworkTest, TheRailOptimizedNdrPresetsBisectionIsTheNicRateOverBothOversubscriptions) {
  topology::ClusterSpec spec = test_support::hgx_cluster(256);
  spec.fabric = *topology::fabric_preset("ib-ndr-rail");
  ASSERT_EQ(spec.fabric.pod_leaves * spec.fabric.leaf_down_ports, 1024);
  const std::int64_t bytes = 1 << 30;
  for (const auto& [leaf, spine] : {std::pair{1.0, 1.0}, std::pair{2.0, 1.0}, std::pair{1.0, 4.0}}) {
    spec.fabric.oversubscription = leaf;
    spec.fabric.spine_oversubscription = spine;
    const double per_gpu = spec.fabric.nic.effective_bandwidth() / (leaf * spine);
    for (double seconds : half_shift_seconds(spec, bytes)) {
      ASSERT_NEAR(seconds, bytes / per_gpu, 1e-9 * bytes / per_gpu) << leaf << ":1 at the leaves, " << spine << ":1 at the spines";
    }
  }
}

// The packet model refuses work past its limit instead of running on and on (network.chunk_kib = 1
// on the default scenario had not finished after 120 s).
TEST(PacketNetworkTest, MoreChunkMovesThanTheLimitThrowInsteadOfRunningForHours) {
  sim::NetworkOptions options = test_support::textbook_network_options();
  options.model = "packet";
  options.packet_chunk_hop_limit = 1000;
  const topology::Cluster cluster(test_support::hgx_cluster(1));
  sim::Engine engine;
  auto model = sim::make_network_model(options, engine, cluster);
  // A ring all-reduce of 64 MiB on 8 GPUs: 14 steps × 8 transfers × 16 chunks of 512 KiB, 2 links each.
  model->start(collective(CollectiveKind::kAllReduce, Algorithm::kRing, range(0, 8), 64 << 20), [](const sim::CommResult&) {});
  try {
    engine.run();
    FAIL() << "expected NetworkWorkLimit";
  } catch (const sim::NetworkWorkLimit& error) {
    EXPECT_NE(std::string(error.what()).find("raise network.chunk_kib (now 512)"), std::string::npos) << error.what();
  }
}

}  // namespace

namespace {

// Copies started together (FlowNetwork::start_with_copies) run folded into one flow per
// transfer where the network treats them alike, and apart where it does not; either way each
// finishes when it would have if started on its own. Sends across a 4-node leaf: the class's
// leader from node 0 to node 1, its copy from node 2 to node 3; `busy` lists earlier sends that
// are still running when the class starts.
struct FoldRun {
  std::vector<sim::CommResult> results;  // the busy sends', then the leader's and the copy's
  sim::FlowNetwork::FoldCounts counts;
};

FoldRun run_class(const std::vector<std::array<std::int32_t, 2>>& busy, bool folded) {
  const topology::Cluster cluster(test_support::hgx_cluster(4));
  sim::NetworkOptions options = test_support::textbook_network_options();
  options.model = "flow";
  sim::Engine engine;
  sim::FlowNetwork network(engine, cluster, options);
  const auto send = [](std::int32_t from, std::int32_t to, std::int64_t bytes) {
    sim::CommRequest request;
    request.bytes = bytes;
    request.endpoints = {from, to};
    return request;
  };
  FoldRun run;
  run.results.resize(busy.size() + 2);
  for (std::size_t i = 0; i < busy.size(); ++i) {
    network.start(send(busy[i][0], busy[i][1], std::int64_t{4} << 30),
                  [&run, i](const sim::CommResult& result) { run.results[i] = result; });
  }
  engine.schedule_after(sim::Time::from_seconds(1e-3), [&] {
    const sim::CommRequest leader = send(1, 9, 1 << 30);
    const sim::CommRequest copy = send(17, 25, 1 << 30);
    const auto leader_done = [&run](const sim::CommResult& result) {
      run.results[run.results.size() - 2] = result;
    };
    const auto copy_done = [&run](std::size_t, const sim::CommResult& result) {
      run.results.back() = result;
    };
    if (folded) {
      network.start_with_copies(leader, {copy}, leader_done, copy_done);
    } else {
      network.start(leader, leader_done);
      network.start(copy, [copy_done](const sim::CommResult& result) { copy_done(0, result); });
    }
  });
  engine.run();
  run.counts = network.fold_counts();
  return run;
}

void expect_same_times(const FoldRun& folded, const FoldRun& apart) {
  ASSERT_EQ(folded.results.size(), apart.results.size());
  for (std::size_t i = 0; i < apart.results.size(); ++i) {
    EXPECT_EQ(folded.results[i].start.ps(), apart.results[i].start.ps()) << "communication " << i;
    EXPECT_NEAR(folded.results[i].end.ps(), apart.results[i].end.ps(), 1) << "communication " << i;
    EXPECT_EQ(folded.results[i].bytes_sent, apart.results[i].bytes_sent) << "communication " << i;
  }
}

TEST(FlowNetworkTest, CopiesSharingTheirLinksAlikeRunFoldedAndFinishAsApart) {
  // Each of the two sends shares its route with a busy send: both run at half their NIC's rate.
  const std::vector<std::array<std::int32_t, 2>> busy = {{1, 9}, {17, 25}};
  const FoldRun folded = run_class(busy, true);
  expect_same_times(folded, run_class(busy, false));
  EXPECT_EQ(folded.counts.started, 1u);
  EXPECT_EQ(folded.counts.run_apart, 0u);
  EXPECT_EQ(folded.counts.unfolded, 0u);
  EXPECT_EQ(folded.results[2].end, folded.results[3].end);
}

TEST(FlowNetworkTest, ACopyTheNetworkTreatsDifferentlyIsUnfoldedAndFinishesAsApart) {
  // Only the leader's route is busy: its copy, alone on its links, runs twice as fast.
  const std::vector<std::array<std::int32_t, 2>> busy = {{1, 9}};
  const FoldRun folded = run_class(busy, true);
  expect_same_times(folded, run_class(busy, false));
  EXPECT_EQ(folded.counts.unfolded, 1u);
  EXPECT_LT(folded.results[2].end, folded.results[1].end);  // the copy before the leader
}

TEST(FlowNetworkTest, CopiesOnFreeLinksRunApartEachAlone) {
  const FoldRun folded = run_class({}, true);
  expect_same_times(folded, run_class({}, false));
  EXPECT_EQ(folded.counts.run_apart, 1u);
  EXPECT_EQ(folded.results[0].end, folded.results[1].end);
}

}  // namespace
