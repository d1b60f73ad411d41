// NCCL's cost model (sim/net/nccl_model.h) against NCCL's own formulas worked by hand from
// src/graph/tuning.cc (docs/research/nccl_tuning.md §6), and the planner's use of it: `auto`
// chooses only what NCCL runs, LL for small messages and Simple for large ones.
#include "sim/net/nccl_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "sim/net/comm_planner.h"
#include "tests/support/clusters.h"
#include "topology/presets.h"

namespace {

using program::Algorithm;
using program::CollectiveKind;
using sim::nccl::Protocol;

constexpr double kMicro = 1e-6;

// `channels`: NCCL's graph channels (a ring or tree each), one per NIC of a node.
sim::nccl::GroupShape shape(int nodes, int per_node, int channels = 1) {
  return {.members = nodes * per_node,
          .nodes = nodes,
          .per_node = per_node,
          .nvlink = true,
          .channels = channels};
}

// NCCL's latency of a collective of `bytes` in µs (nccl::latency_s).
double latency_us(CollectiveKind kind, Algorithm algorithm, Protocol protocol,
                  const sim::nccl::GroupShape& group, double bytes) {
  return sim::nccl::latency_s(kind, algorithm, protocol, group, bytes) / kMicro;
}

sim::CommRequest all_reduce(std::int32_t members, std::int64_t bytes) {
  sim::CommRequest request;
  request.kind = CollectiveKind::kAllReduce;
  request.algorithm = Algorithm::kAuto;
  request.bytes = bytes;
  for (std::int32_t r = 0; r < members; ++r) request.endpoints.push_back(r);
  return request;
}

TEST(NcclModelTest, OneNodeRingAndTreeLatenciesAreBasePlusOneNvlinkHopPerStep) {
  // 8 GPUs, all-reduce, 14 steps: ring LL 6.6 + 14·0.6, tree LL 6.8 + 2·7·0.6, ring Simple
  // 8.4 + 14·3.4, tree LL128 14 + 2·7·1.25.
  const auto group = shape(1, 8, 12);
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kRing, Protocol::kLL, group, 8),
              15.0, 1e-6);
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kLL, group, 8),
              15.2, 1e-6);
  EXPECT_NEAR(
      latency_us(CollectiveKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, group, 1 << 30),
      56.0, 1e-6);
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kLL128, group, 8),
              31.5, 1e-6);
  // All-gather: 7 steps.
  EXPECT_NEAR(latency_us(CollectiveKind::kAllGather, Algorithm::kRing, Protocol::kLL, group, 8),
              (6.6 + 7 * 0.6), 1e-6);
}

TEST(NcclModelTest, TwoNodesAddNetworkHopsAndTheMultiNodeSimpleFactor) {
  // 2 × 8 GPUs: tree LL 6.8 + 2(7·0.6 + 1·5.0); ring LL: 28 steps inside nodes at the network
  // post overhead (1 µs > 0.6) and 2 across at 2.7; ring Simple: 28·max(3.4, 3·1) + 2·14, ×1.4
  // once a channel's share of each rank passes 64 bytes.
  const auto group = shape(2, 8, 8);
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kLL, group, 8),
              25.2, 1e-6);
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kRing, Protocol::kLL, group, 8),
              40.0, 1e-6);
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, group, 8),
              131.6, 1e-6);
  EXPECT_NEAR(
      latency_us(CollectiveKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, group, 1 << 30),
      1.4 * 131.6, 1e-6);
}

TEST(NcclModelTest, AmdHostsPayTwiceTheNetworkOverheadAndOneGpuPerNodeTakesTheTreesNetworkHop) {
  // docs/research/nccl_tuning.md §6, 2 × 8 A100 on AMD CPUs: ring LL 6.6 + 28·2 + 2·2.7 = 68.0;
  // the tree's latency has no per-step overhead.
  auto amd = shape(2, 8, 8);
  amd.amd_host = true;
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kRing, Protocol::kLL, amd, 8), 68.0,
              1e-6);
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kLL, amd, 8), 25.2,
              1e-6);
  // One GPU per node (tuning.cc: ppn == 1): every step crosses the network at the tree's hop,
  // LL 5.0 rather than the ring's 2.7: 2 nodes, 2 steps, 6.6 + 2·5.0; LL128 14 + 2·8.5.
  const auto spread = shape(2, 1);
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kRing, Protocol::kLL, spread, 8),
              16.6, 1e-6);
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kRing, Protocol::kLL128, spread, 8),
              31.0, 1e-6);
}

TEST(NcclModelTest, LLIsCappedByTheGpusArchitectureInOneNodeAndByTheHostsCpuAcrossNodes) {
  // llMaxBws (tuning.cc): inside one node the GPU's row; across nodes 39 / 20.4 GB/s on Intel
  // hosts, 22.5 / 19.0 on AMD, for two nodes / more.
  const auto hopper = [](int nodes) {
    auto group = shape(nodes, 8);
    group.architecture = topology::NcclArchitecture::kHopper;
    group.channels = 8;  // a graph channel per NIC
    return group;
  };
  const auto one_node = hopper(1);
  EXPECT_DOUBLE_EQ(sim::nccl::ll_bus_bandwidth(one_node), 141e9);
  const auto two = hopper(2);
  EXPECT_DOUBLE_EQ(sim::nccl::ll_bus_bandwidth(two), 39e9);
  EXPECT_DOUBLE_EQ(sim::nccl::ll_bus_bandwidth(hopper(4)), 20.4e9);
  EXPECT_DOUBLE_EQ(sim::nccl::ll_bus_bandwidth(shape(4, 8)), 0);  // no architecture, no cap
  auto amd = hopper(3);
  amd.amd_host = true;
  EXPECT_DOUBLE_EQ(sim::nccl::ll_bus_bandwidth(amd), 19.0e9);
  amd.nodes = 2;
  EXPECT_DOUBLE_EQ(sim::nccl::ll_bus_bandwidth(amd), 22.5e9);
  // Ring/LL on 8 H100s: 1 MiB carries 2 · 7/8 MiB of bus bytes, 13.0 µs at 141 GB/s, however
  // fast the links; inside one node LL128 and Simple are not capped.
  const double mib = 1 << 20;
  EXPECT_DOUBLE_EQ(sim::nccl::tuner_data_s(CollectiveKind::kAllReduce, Algorithm::kRing,
                                           Protocol::kLL, one_node, mib, 1e-6),
                   mib * 14 / 8 / 141e9);
  EXPECT_DOUBLE_EQ(sim::nccl::tuner_data_s(CollectiveKind::kAllReduce, Algorithm::kRing,
                                           Protocol::kLL128, one_node, mib, 1e-6),
                   1e-6 / 0.92);
  // All-gather: 7 steps of 8, bytes · 7/8 of bus bytes.
  EXPECT_DOUBLE_EQ(sim::nccl::tuner_data_s(CollectiveKind::kAllGather, Algorithm::kRing,
                                           Protocol::kLL, one_node, mib, 1e-6),
                   mib * 7 / 8 / 141e9);
  // Tree/LL across two Intel nodes at 64 KiB: NCCL's tree turns bus bandwidth into the
  // algorithm's at 1/2, then its correction (0.6 at 64 KiB): 65536 · 2 / 39 GB/s / 0.6.
  EXPECT_DOUBLE_EQ(sim::nccl::tuner_data_s(CollectiveKind::kAllReduce, Algorithm::kTree,
                                           Protocol::kLL, two, 65536, 1e-7),
                   65536.0 * 2 / 39e9 / 0.6);
  // Slower links than the cap: the links'.
  EXPECT_DOUBLE_EQ(sim::nccl::tuner_data_s(CollectiveKind::kAllReduce, Algorithm::kRing,
                                           Protocol::kLL, one_node, mib, 1e-3),
                   2e-3);
  // The presets: an A100 node's GPUs are Ampere on AMD hosts; H100 Hopper on Intel.
  const topology::NodeSpec dgx = *topology::node_preset("dgx-a100");
  EXPECT_EQ(dgx.gpu.nccl_architecture, topology::NcclArchitecture::kAmpere);
  EXPECT_EQ(dgx.host_cpu, topology::HostCpu::kAmd);
  const topology::NodeSpec hgx = *topology::node_preset("hgx-h100");
  EXPECT_EQ(hgx.gpu.nccl_architecture, topology::NcclArchitecture::kHopper);
  EXPECT_EQ(hgx.host_cpu, topology::HostCpu::kIntel);
  // The planner hands them to the model: 1 MiB ring/LL on 8 A100s (NVLink at its 300 GB/s
  // line rate would allow 2 · 7/8 MiB in 12.2 µs at LL's 1/2) takes Ampere's cap, 20.9 µs, and
  // the LL channels' floor stays below it (32 channels at 13.7 GB/s: 4.2 µs).
  topology::ClusterSpec a100 = test_support::hgx_cluster(1);
  a100.node = dgx;
  a100.node.nvlink.efficiency = 1.0;
  sim::NetworkOptions ring_ll;
  const topology::Cluster cluster(a100);
  sim::CommPlanner planner(cluster, ring_ll);
  sim::CommRequest request = all_reduce(8, 1 << 20);
  request.algorithm = Algorithm::kRing;
  const sim::CommPlan& plan = planner.plan(request);
  ASSERT_EQ(plan.protocol, Protocol::kLL);
  EXPECT_NEAR(plan.seconds(), 15.0 * kMicro + mib * 14 / 8 / 87.7e9, 1e-9);
}

TEST(NcclModelTest, AcrossNodesTheRingsLL128AndTheTreeAreCappedPerGraphChannel) {
  // 2 × 8 A100 on AMD hosts, 8 graph channels (docs/research/nccl_tuning.md §6): the tree at
  // 8 × 23.6 GB/s of bus bandwidth, its LL128 at min(188.8 · 120/128, 8 × 20) = 160, its LL at
  // min(188.8 / 3.8, 22.5) = 22.5; the ring's LL128 at 8 × 20 = 160; the ring's Simple free.
  auto two = shape(2, 8);
  two.architecture = topology::NcclArchitecture::kAmpere;
  two.amd_host = true;
  two.channels = 8;
  using sim::nccl::bus_bandwidth_cap;
  constexpr auto kAllReduce = CollectiveKind::kAllReduce;
  EXPECT_NEAR(bus_bandwidth_cap(kAllReduce, Algorithm::kTree, Protocol::kSimple, two), 188.8e9,
              1e3);
  EXPECT_NEAR(bus_bandwidth_cap(kAllReduce, Algorithm::kTree, Protocol::kLL128, two), 160e9, 1e3);
  EXPECT_NEAR(bus_bandwidth_cap(kAllReduce, Algorithm::kTree, Protocol::kLL, two), 22.5e9, 1e3);
  EXPECT_NEAR(bus_bandwidth_cap(kAllReduce, Algorithm::kRing, Protocol::kLL128, two), 160e9, 1e3);
  EXPECT_EQ(bus_bandwidth_cap(kAllReduce, Algorithm::kRing, Protocol::kSimple, two), 0);
  // More nodes take the third column: the tree at 8 × 17.8.
  auto four = two;
  four.nodes = 4;
  four.members = 32;
  EXPECT_NEAR(bus_bandwidth_cap(kAllReduce, Algorithm::kTree, Protocol::kSimple, four), 142.4e9,
              1e3);
  // Inside one node none of the per-channel caps applies.
  auto one = two;
  one.nodes = 1;
  one.members = 8;
  EXPECT_EQ(bus_bandwidth_cap(kAllReduce, Algorithm::kTree, Protocol::kSimple, one), 0);
  EXPECT_EQ(bus_bandwidth_cap(kAllReduce, Algorithm::kRing, Protocol::kLL128, one), 0);
  // The tree's bus bandwidth is twice its data's: 1 GiB takes at least 2 GiB / 188.8 GB/s.
  const double gib = 1 << 30;
  EXPECT_NEAR(
      sim::nccl::tuner_data_s(kAllReduce, Algorithm::kTree, Protocol::kSimple, two, gib, 1e-3),
      2 * gib / 188.8e9, 1e-12);
  // So NCCL runs the ring for 1 GiB on two DGX A100s with eight HDR NICs (tuning.cc's worked
  // example, nccl_tuning.md §6: ring/Simple 10.8 ms, tree/Simple 11.5 ms), and so does `auto`.
  topology::ClusterSpec dgx;
  dgx.node = *topology::node_preset("dgx-a100");
  dgx.nodes = 2;
  dgx.fabric = *topology::fabric_preset("ib-hdr");
  const topology::Cluster cluster(dgx);
  sim::CommPlanner planner(cluster, sim::NetworkOptions{});
  EXPECT_EQ(planner.plan(all_reduce(16, std::int64_t{1} << 30)).schedule.algorithm,
            Algorithm::kRing);
}

TEST(NcclModelTest, ProtocolsPayTheirBandwidthFactorsAsBytesOnTheWire) {
  const auto one_node = shape(1, 8);
  EXPECT_DOUBLE_EQ(sim::nccl::wire_factor(Algorithm::kRing, Protocol::kSimple, one_node), 1.0);
  EXPECT_DOUBLE_EQ(sim::nccl::wire_factor(Algorithm::kRing, Protocol::kLL, one_node), 2.0);
  EXPECT_DOUBLE_EQ(sim::nccl::wire_factor(Algorithm::kRing, Protocol::kLL128, one_node), 1 / 0.92);
  EXPECT_DOUBLE_EQ(sim::nccl::wire_factor(Algorithm::kTree, Protocol::kSimple, one_node), 1 / 0.92);
  EXPECT_DOUBLE_EQ(sim::nccl::wire_factor(Algorithm::kTree, Protocol::kLL, one_node), 3.8 / 0.92);
  EXPECT_DOUBLE_EQ(sim::nccl::wire_factor(Algorithm::kTree, Protocol::kLL128, one_node), 9.0 / 7.0 / 0.92);
}

TEST(NcclModelTest, TheTreeAllReducePaysNcclsCorrectionAtMediumSizes) {
  // treeCorrectionFactor (tuning.cc) by log2(bytes / 64): LL at 64 KiB (index 10) 0.6, at 1 MiB
  // (index 14) 0.5; Simple at 64 B 0.9; none below 64 B, from 512 MiB, or for another algorithm.
  using sim::nccl::tree_correction;
  EXPECT_DOUBLE_EQ(
      tree_correction(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kLL, 65536), 0.6);
  EXPECT_DOUBLE_EQ(
      tree_correction(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kLL, 1 << 20), 0.5);
  EXPECT_DOUBLE_EQ(
      tree_correction(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kLL, 100000), 0.6);
  // The runtime's: interpolated in log2(bytes) between them — 100,000 B is 0.61 of the way from
  // 64 KiB (0.6) to 128 KiB (0.5); 3 × 128 MiB 0.585 of the way from 0.9 to 1 (past the table);
  // equal to the tuner's at powers of two.
  using sim::nccl::tree_correction_by_size;
  EXPECT_NEAR(
      tree_correction_by_size(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kLL, 100000),
      0.6 - 0.1 * std::log2(100000.0 / 65536), 1e-12);
  EXPECT_NEAR(tree_correction_by_size(CollectiveKind::kAllReduce, Algorithm::kTree,
                                      Protocol::kSimple, 3 << 27),
              0.9 + 0.1 * std::log2(3.0 / 2), 1e-12);
  EXPECT_DOUBLE_EQ(
      tree_correction_by_size(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kLL, 1 << 20),
      0.5);
  EXPECT_DOUBLE_EQ(
      tree_correction(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, 64), 0.9);
  EXPECT_DOUBLE_EQ(
      tree_correction(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, 8), 1.0);
  EXPECT_DOUBLE_EQ(
      tree_correction(CollectiveKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, 1 << 29),
      1.0);
  EXPECT_DOUBLE_EQ(
      tree_correction(CollectiveKind::kAllReduce, Algorithm::kRing, Protocol::kLL, 65536), 1.0);
  EXPECT_DOUBLE_EQ(
      tree_correction(CollectiveKind::kBroadcast, Algorithm::kTree, Protocol::kLL, 65536), 1.0);
  // The tuner's data time, and so the time dtsim gives: the links' by the wire factor, over it.
  const auto group = shape(2, 8);
  EXPECT_DOUBLE_EQ(sim::nccl::tuner_data_s(CollectiveKind::kAllReduce, Algorithm::kTree,
                                           Protocol::kLL, group, 65536, 1e-6),
                   1e-6 * sim::nccl::wire_factor(Algorithm::kTree, Protocol::kLL, group) / 0.6);
}

// A few bytes more never take noticeably less time: a black-box scan found a tree all-reduce
// 20–26 % faster for 4 more bytes (NCCL's correction read as steps, and a pipeline split evenly
// into one more chunk). What is left is under 1 %: the correction still rises by up to 4/3 per
// doubling where the pipeline's fill, not its size, sets the time (0.3 % from 2 to 2.7 MiB on one
// node). Sizes around every power of two from 256 B to 64 MiB and between them, 1 and 4 nodes,
// while the protocol stays: where NCCL's tuner, choosing by its step table, changes protocol at a
// power of two, the next size may run faster, as it would under NCCL.
TEST(NcclModelTest, ATreeAllReduceNeverTakesLessTimeForMoreBytes) {
  for (const int nodes : {1, 4}) {
    const topology::Cluster cluster(test_support::hgx_cluster(nodes));
    sim::CommPlanner planner(cluster, sim::NetworkOptions{});
    double previous = 0;
    std::int64_t previous_bytes = 0;
    std::optional<Protocol> previous_protocol;
    int compared = 0;
    for (std::int64_t power = 256; power <= (std::int64_t{64} << 20); power *= 2) {
      for (const std::int64_t bytes : {power - 8, power, power + 4, power + power / 3}) {
        sim::CommRequest request = all_reduce(8 * nodes, bytes);
        request.algorithm = Algorithm::kTree;
        const sim::CommPlan& plan = planner.plan(request);
        if (plan.protocol == previous_protocol) {
          EXPECT_GE(plan.seconds(), 0.99 * previous)
              << nodes << " nodes: " << bytes << " B after " << previous_bytes << " B";
          ++compared;
        }
        previous = plan.seconds();
        previous_bytes = bytes;
        previous_protocol = plan.protocol;
      }
    }
    EXPECT_GE(compared, 60) << nodes << " nodes";  // of 71 neighbouring sizes
  }
}

TEST(NcclModelTest, NcclRunsRingAndTreeOnlyWhereItHasTheKernels) {
  EXPECT_TRUE(sim::nccl::runs(CollectiveKind::kAllReduce, Algorithm::kTree));
  EXPECT_FALSE(sim::nccl::runs(CollectiveKind::kAllReduce, Algorithm::kHalvingDoubling));
  EXPECT_FALSE(sim::nccl::runs(CollectiveKind::kAllReduce, Algorithm::kHierarchical));
  EXPECT_FALSE(sim::nccl::runs(CollectiveKind::kAllGather, Algorithm::kTree));
  EXPECT_TRUE(sim::nccl::runs(CollectiveKind::kReduceScatter, Algorithm::kRing));
}

TEST(NcclModelTest, AutoChoosesOnlyWhatNcclRunsAndTheProtocolBySize) {
  const topology::Cluster cluster(test_support::hgx_cluster(8));
  sim::NetworkOptions nccl;  // collectives.library = "nccl", the default
  sim::CommPlanner planner(cluster, nccl);
  for (std::int64_t bytes = 8; bytes <= (std::int64_t{1} << 32); bytes *= 8) {
    const sim::CommPlan& plan = planner.plan(all_reduce(64, bytes));
    EXPECT_TRUE(plan.schedule.algorithm == Algorithm::kRing ||
                plan.schedule.algorithm == Algorithm::kTree ||
                plan.schedule.algorithm == Algorithm::kNvlsTree)
        << bytes;
    ASSERT_TRUE(plan.protocol.has_value()) << bytes;
  }
  EXPECT_EQ(*planner.plan(all_reduce(64, 8)).protocol, Protocol::kLL);
  EXPECT_EQ(*planner.plan(all_reduce(64, std::int64_t{1} << 32)).protocol, Protocol::kSimple);
  // The ideal library may choose a schedule NCCL does not have.
  sim::CommPlanner ideal(cluster, test_support::textbook_network_options());
  bool other = false;
  for (std::int64_t bytes = 8; bytes <= (std::int64_t{1} << 32); bytes *= 8) {
    const Algorithm chosen = ideal.plan(all_reduce(64, bytes)).schedule.algorithm;
    other = other || (chosen != Algorithm::kRing && chosen != Algorithm::kTree);
    EXPECT_FALSE(ideal.plan(all_reduce(64, bytes)).protocol.has_value());
  }
  EXPECT_TRUE(other);
}

TEST(NcclModelTest, UserbuffersChunksAreARingOfCopiesWithoutNcclsLatency) {
  // Transformer Engine's userbuffers (tensor-parallel overlap chunks): an all-gather of 8 MiB on
  // one node is a ring — 7 steps of 1 MiB over 450 GB/s NVLink, each at the GPU–NVSwitch–GPU
  // latency (2 × 0.3 µs) — with no NCCL protocol, whatever algorithm the scenario fixes.
  const topology::Cluster cluster(test_support::hgx_cluster(1));
  sim::CommPlanner planner(cluster, sim::NetworkOptions{});
  sim::CommRequest request = all_reduce(8, 8 << 20);
  request.kind = CollectiveKind::kAllGather;
  request.userbuffers = true;
  const sim::CommPlan& plan = planner.plan(request);
  EXPECT_EQ(plan.schedule.algorithm, Algorithm::kRing);
  EXPECT_FALSE(plan.protocol.has_value());
  EXPECT_NEAR(plan.latency_seconds, 7 * 0.6 * kMicro, 1e-12);
  EXPECT_NEAR(plan.bandwidth_seconds, 7.0 * (1 << 20) / 450e9, 1e-12);
  request.userbuffers = false;  // the same request through NCCL pays its base latency
  EXPECT_GT(planner.plan(request).latency_seconds, plan.latency_seconds + 5 * kMicro);
}

TEST(NcclModelTest, CollNetIsSimpleOnlyAtItsNvlinkArityAndNetworkLatencies) {
  // 8 GPUs per node: 2 · (3.7 + 7 · 0.4) + 31 = 44 µs; one GPU per node: 31 µs.
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kCollNet, Protocol::kSimple,
                         shape(4, 8), 1 << 20),
              44.0, 1e-6);
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kCollNet, Protocol::kSimple,
                         shape(4, 1), 1 << 20),
              31.0, 1e-6);
  EXPECT_TRUE(std::isinf(
      latency_us(CollectiveKind::kAllReduce, Algorithm::kCollNet, Protocol::kLL, shape(4, 8), 8)));
  // `auto` considers it only on a fabric with SHARP, and takes it for mid-sized all-reduces
  // across nodes, where its one network step beats the ring's 2(N−1).
  topology::ClusterSpec sharp = test_support::hgx_cluster(4);
  sharp.fabric.sharp = true;
  const topology::Cluster with_sharp(sharp), without_sharp(test_support::hgx_cluster(4));
  EXPECT_EQ(sim::CommPlanner(with_sharp, sim::NetworkOptions{}).plan(all_reduce(32, 1 << 20)).schedule.algorithm,
            Algorithm::kCollNet);
  EXPECT_NE(sim::CommPlanner(without_sharp, sim::NetworkOptions{}).plan(all_reduce(32, 1 << 20)).schedule.algorithm,
            Algorithm::kCollNet);
}

TEST(NcclModelTest, NvlsIsSimpleOnlyAtItsHardwareLatencyAndNcclsBandwidthRatio) {
  const auto group = shape(1, 8);
  EXPECT_NEAR(
      latency_us(CollectiveKind::kAllReduce, Algorithm::kNvls, Protocol::kSimple, group, 1 << 30),
      25.0, 1e-6);
  EXPECT_TRUE(std::isinf(
      latency_us(CollectiveKind::kAllReduce, Algorithm::kNvls, Protocol::kLL, group, 8)));
  // NCCL's NVLS bus bandwidth over its ring's on an 8-GPU Hopper node: 8 · min(40·0.85·7/8·2, 60)
  // over 12 · 30 = 476/360; dtsim's schedule alone would give 2·7/9 of the ring's.
  EXPECT_DOUBLE_EQ(sim::nccl::wire_factor(Algorithm::kNvls, Protocol::kSimple, group), (14.0 / 9.0) / (476.0 / 360.0));
  EXPECT_TRUE(sim::nccl::runs(CollectiveKind::kAllReduce, Algorithm::kNvls));
  EXPECT_FALSE(sim::nccl::runs(CollectiveKind::kAllGather, Algorithm::kNvls));
  EXPECT_NE(sim::nccl::missing_algorithm(CollectiveKind::kAllReduce, Algorithm::kHalvingDoubling).value_or("").find("nvls"),
            std::string::npos);
}

TEST(NcclModelTest, NvlsTreeIsSimpleOnlyAtItsLatenciesAndNoFasterThanItsChannelsCap) {
  // tuning.cc: 25 µs for the NVLink SHARP hop, then 2 · log2i(nodes) tree levels at 20.9 µs.
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kNvlsTree, Protocol::kSimple,
                         shape(2, 8), 1 << 30),
              66.8, 1e-6);
  EXPECT_NEAR(latency_us(CollectiveKind::kAllReduce, Algorithm::kNvlsTree, Protocol::kSimple,
                         shape(5, 8), 1 << 30),
              108.6, 1e-6);
  EXPECT_TRUE(std::isinf(
      latency_us(CollectiveKind::kAllReduce, Algorithm::kNvlsTree, Protocol::kLL, shape(2, 8), 8)));
  // Hopper across two nodes: 8 channels × 57.7 GB/s of bus bandwidth at most; 1 GB on 16 ranks
  // is 2 · 15/16 GB of bus bytes, 4.06 ms, whatever faster the links would be.
  sim::nccl::GroupShape two = shape(2, 8);
  two.architecture = topology::NcclArchitecture::kHopper;
  const double capped = 1e9 * 30 / 16 / (8 * 57.7e9);
  EXPECT_DOUBLE_EQ(sim::nccl::tuner_data_s(CollectiveKind::kAllReduce, Algorithm::kNvlsTree,
                                           Protocol::kSimple, two, 1e9, 1e-3),
                   capped);
  EXPECT_DOUBLE_EQ(sim::nccl::tuner_data_s(CollectiveKind::kAllReduce, Algorithm::kNvlsTree,
                                           Protocol::kSimple, two, 1e9, 5e-3),
                   5e-3);
  EXPECT_DOUBLE_EQ(sim::nccl::tuner_data_s(CollectiveKind::kAllReduce, Algorithm::kRing,
                                           Protocol::kSimple, two, 1e9, 1e-3),
                   1e-3);
  // `auto` on two HGX H100 nodes takes it for large all-reduces, at the cap: the links (NDR at
  // 40 GB/s here, NVLink at 450) would allow more.
  const topology::Cluster two_nodes(test_support::hgx_cluster(2));
  sim::CommPlanner planner(two_nodes, sim::NetworkOptions{});
  const std::int64_t bytes = std::int64_t{1} << 33;
  const sim::CommPlan& large = planner.plan(all_reduce(16, bytes));
  EXPECT_EQ(large.schedule.algorithm, Algorithm::kNvlsTree);
  const double bus_gbyte_s =
      static_cast<double>(bytes) * 30 / 16 / (large.seconds() - 66.8 * kMicro) / 1e9;
  EXPECT_NEAR(bus_gbyte_s, 8 * 57.7, 1e-6);
  EXPECT_NE(planner.plan(all_reduce(16, 64 << 10)).schedule.algorithm,
            Algorithm::kNvlsTree);  // latency-bound
  // Not on nodes without NVLink SHARP, nor with the ideal library.
  topology::ClusterSpec no_sharp = test_support::hgx_cluster(2);
  no_sharp.node.nvlink_sharp = false;
  const topology::Cluster plain(no_sharp);
  EXPECT_NE(
      sim::CommPlanner(plain, sim::NetworkOptions{}).plan(all_reduce(16, bytes)).schedule.algorithm,
      Algorithm::kNvlsTree);
  EXPECT_NE(sim::CommPlanner(two_nodes, test_support::textbook_network_options())
                .plan(all_reduce(16, bytes))
                .schedule.algorithm,
            Algorithm::kNvlsTree);
}

// NVLSTree's stage inside each node is an NVLS all-reduce of the whole message, so across racks
// it cannot beat NVLS inside one rack at the same chunk size (16 GiB: 128 KiB chunks for both).
// On GB200 NVL72 racks, 72 NICs each, the NICs outrun the racks' NVLink SHARP and that stage
// sets the pace. (Before, the NVLink stage was priced at the links' rate without NVLS's
// bandwidth ratio: two racks all-reduced 16 GiB in 23.9 ms, one rack's NVLS took 28.1.)
TEST(NcclModelTest, NvlsTreeAcrossNvl72RacksIsNoFasterThanNvlsInsideOneRack) {
  const auto seconds = [](int racks, Algorithm algorithm) {
    topology::ClusterSpec spec;
    spec.node = *topology::node_preset("gb200-nvl72");
    spec.fabric = *topology::fabric_preset("ib-ndr-rail");
    spec.nodes = racks;
    const topology::Cluster cluster(spec);
    sim::CommPlanner planner(cluster, sim::NetworkOptions{});
    sim::CommRequest request = all_reduce(72 * racks, std::int64_t{16} << 30);
    request.algorithm = algorithm;
    return planner.plan(request).seconds();
  };
  EXPECT_GE(seconds(2, Algorithm::kNvlsTree), seconds(1, Algorithm::kNvls));
}

TEST(NcclModelTest, NvlsAndNvlsTreeChunksShrinkWithTheMessageAndEachCostsAFixedSynchronisation) {
  // 8 GPUs × 16 channels = 128 concurrent operations: 128 KiB chunks from 64 · 128 · 128 KiB =
  // 1 GiB, 64 KiB from 8 · 128 · 64 KiB = 64 MiB, 32 KiB from 2 · 128 · 32 KiB = 8 MiB, then 16 KiB
  // (NCCL's calcCollChunking).
  const auto eight = shape(1, 8);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvls, 1 << 30, eight), 128 * 1024);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvls, (1 << 30) - 1, eight), 64 * 1024);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvls, 64 << 20, eight), 64 * 1024);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvls, (64 << 20) - 1, eight), 32 * 1024);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvls, 8 << 20, eight), 32 * 1024);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvls, (8 << 20) - 1, eight), 16 * 1024);
  // Four GPUs and Blackwell's 24 channels move the thresholds with the concurrent operations.
  auto four = shape(1, 4);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvls, 512 << 20, four), 128 * 1024);
  four.nvls_channels = 24;
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvls, 512 << 20, four), 64 * 1024);
  // Each chunk costs 26 KiB's worth of time beside its data: the bandwidth term at 32 KiB chunks
  // runs (1 + 26/32) / (1 + 26/128) = 1.51× that at 128 KiB.
  EXPECT_DOUBLE_EQ(sim::nccl::nvls_chunk_factor(Algorithm::kNvls, 1 << 30, eight), 1.0);
  EXPECT_DOUBLE_EQ(sim::nccl::nvls_chunk_factor(Algorithm::kNvls, 16 << 20, eight),
                   (1 + 26.0 / 32) / (1 + 26.0 / 128));
  EXPECT_DOUBLE_EQ(sim::nccl::runtime_bandwidth_factor(Algorithm::kNvls, eight, 16 << 20),
                   (1 + 26.0 / 32) / (1 + 26.0 / 128));
  EXPECT_DOUBLE_EQ(sim::nccl::runtime_bandwidth_factor(Algorithm::kRing, eight, 16 << 20), 1.0);
  // NVLSTree (calcCollChunking, nvls.cc ncclNvlsTuning): 128 KiB across two or three nodes, cut
  // to 64 KiB below 4 chunks per concurrent operation (64 MiB here) and to 32 KiB below one (8
  // MiB); across four nodes or more it starts at 64 KiB. Each chunk costs what NVLS's does.
  const auto two_nodes = shape(2, 8);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvlsTree, 64 << 20, two_nodes), 128 * 1024);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvlsTree, (64 << 20) - 1, two_nodes),
            64 * 1024);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvlsTree, 8 << 20, two_nodes), 64 * 1024);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvlsTree, (8 << 20) - 1, two_nodes), 32 * 1024);
  const auto four_nodes = shape(4, 8);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvlsTree, 1 << 30, four_nodes), 64 * 1024);
  EXPECT_EQ(sim::nccl::nvls_chunk_bytes(Algorithm::kNvlsTree, (8 << 20) - 1, four_nodes),
            32 * 1024);
  EXPECT_DOUBLE_EQ(sim::nccl::runtime_bandwidth_factor(Algorithm::kNvlsTree, two_nodes, 16 << 20),
                   (1 + 26.0 / 64) / (1 + 26.0 / 128));
  EXPECT_DOUBLE_EQ(sim::nccl::runtime_bandwidth_factor(Algorithm::kNvlsTree, two_nodes, 1 << 30),
                   1.0);
  // NVLS has no channel floor: the runtime stretches the tuner's bandwidth term by that factor.
  EXPECT_DOUBLE_EQ(sim::nccl::runtime_bandwidth_s(CollectiveKind::kAllReduce, Algorithm::kNvls,
                                                  Protocol::kSimple, eight, 16 << 20, 1e-4),
                   1e-4 * (1 + 26.0 / 32) / (1 + 26.0 / 128));
}

TEST(NcclModelTest, ASmallRingLLCollectiveRunsOnAChannelPer32KiBOnEightRanks) {
  // 512 threads × 8 bytes × 8 ranks = 32 KiB per channel (NCCL's topoGetAlgoInfo), at least one.
  const auto eight = shape(1, 8);
  EXPECT_EQ(sim::nccl::ring_ll_channels(8, eight), 1);
  EXPECT_EQ(sim::nccl::ring_ll_channels(64 * 1024 - 1, eight), 1);
  EXPECT_EQ(sim::nccl::ring_ll_channels(64 * 1024, eight), 2);
  EXPECT_EQ(sim::nccl::ring_ll_channels(512 * 1024, eight), 16);
  EXPECT_EQ(sim::nccl::ring_ll_channels(512 * 1024, shape(2, 8)), 8);  // 16 ranks: 64 KiB each
  // The channels move the ring's 2·7/8 of the data through each rank at 13.7 GB/s each.
  EXPECT_DOUBLE_EQ(sim::nccl::runtime_channel_floor_s(CollectiveKind::kAllReduce, Algorithm::kRing,
                                                      Protocol::kLL, eight, 64 * 1024),
                   2 * 7.0 / 8 * 64 * 1024 / (2 * 13.7e9));
  EXPECT_DOUBLE_EQ(sim::nccl::runtime_channel_floor_s(CollectiveKind::kAllGather, Algorithm::kRing,
                                                      Protocol::kLL, eight, 64 * 1024),
                   7.0 / 8 * 64 * 1024 / (2 * 13.7e9));
  // A broadcast's ring passes the whole message through every rank (NCCL's nsteps = nRanks).
  EXPECT_DOUBLE_EQ(sim::nccl::runtime_channel_floor_s(CollectiveKind::kBroadcast, Algorithm::kRing,
                                                      Protocol::kLL, eight, 64 * 1024),
                   64 * 1024 / (2 * 13.7e9));
  EXPECT_EQ(sim::nccl::runtime_channel_floor_s(CollectiveKind::kAllReduce, Algorithm::kRing,
                                               Protocol::kSimple, eight, 64 * 1024),
            0);
  EXPECT_EQ(sim::nccl::runtime_channel_floor_s(CollectiveKind::kAllReduce, Algorithm::kTree,
                                               Protocol::kLL, eight, 64 * 1024),
            0);
  // The runtime's bandwidth term is the larger of the links' (here 1 µs) and that floor (4.2 µs).
  EXPECT_DOUBLE_EQ(sim::nccl::runtime_bandwidth_s(CollectiveKind::kAllReduce, Algorithm::kRing,
                                                  Protocol::kLL, eight, 64 * 1024, 1e-6),
                   2 * 7.0 / 8 * 64 * 1024 / (2 * 13.7e9));
  EXPECT_DOUBLE_EQ(sim::nccl::runtime_bandwidth_s(CollectiveKind::kAllReduce, Algorithm::kRing,
                                                  Protocol::kLL, eight, 64 * 1024, 1e-5),
                   1e-5);
  // On one HGX H100 node the 64 KiB all-reduce's time is then set by its two channels, not by
  // NVLink: NCCL's latency plus that floor.
  const topology::Cluster cluster(test_support::hgx_cluster(1));
  sim::CommPlanner planner(cluster, sim::NetworkOptions{});
  const sim::CommPlan& plan = planner.plan(all_reduce(8, 64 * 1024));
  EXPECT_EQ(plan.protocol, sim::nccl::Protocol::kLL);
  EXPECT_NEAR(plan.bandwidth_seconds, 2 * 7.0 / 8 * 64 * 1024 / (2 * 13.7e9), 1e-15);
}

TEST(NcclModelTest, NvlsIsChosenByTheTunersEstimateAndTimedWithItsChunksCost) {
  // At 2 MiB on 8 GPUs NVLS moves 16 KiB chunks: NCCL's tuner, blind to them, still prefers it
  // to ring/LL (nccl-tests on 8 × H100 switch to NVLS at 2 MiB); the plan is NVLS, timed with
  // the chunks' cost, which makes it slower than the tuner said.
  const topology::Cluster cluster(test_support::hgx_cluster(1));
  sim::CommPlanner planner(cluster, sim::NetworkOptions{});
  const sim::CommPlan& plan = planner.plan(all_reduce(8, 2 << 20));
  EXPECT_EQ(plan.schedule.algorithm, Algorithm::kNvls);
  ASSERT_TRUE(plan.tuner_seconds.has_value());
  const double factor = (1 + 26.0 / 16) / (1 + 26.0 / 128);
  EXPECT_NEAR(plan.seconds() - plan.latency_seconds,
              (*plan.tuner_seconds - plan.latency_seconds) * factor, 1e-12);
  EXPECT_GT(plan.seconds(), *plan.tuner_seconds);
}

TEST(NcclModelTest, AutoTakesNvlsForLargeAllReducesInsideOneSharpNode) {
  // One HGX H100 node at NVLink line rate (450 GB/s): NVLS moves 9/8 of the data per link at
  // NCCL's bandwidth factor, so its bus bandwidth is 450 · 476/360 GB/s, plus 25 µs.
  const topology::Cluster cluster(test_support::hgx_cluster(1));
  sim::CommPlanner planner(cluster, sim::NetworkOptions{});
  const std::int64_t bytes = std::int64_t{1} << 33;
  const sim::CommPlan& large = planner.plan(all_reduce(8, bytes));
  EXPECT_EQ(large.schedule.algorithm, Algorithm::kNvls);
  EXPECT_EQ(*large.protocol, Protocol::kSimple);
  const double bus_gbyte_s = static_cast<double>(bytes) * 14 / 8 / (large.seconds() - 25 * kMicro) / 1e9;
  EXPECT_NEAR(bus_gbyte_s, 450.0 * 476 / 360, 1e-6);
  EXPECT_NE(planner.plan(all_reduce(8, 64 << 10)).schedule.algorithm, Algorithm::kNvls);  // latency-bound: ring/LL
  // Across nodes, on a node without NVLink SHARP, or with the ideal library: never NVLS.
  const topology::Cluster two_nodes(test_support::hgx_cluster(2));
  EXPECT_NE(sim::CommPlanner(two_nodes, sim::NetworkOptions{}).plan(all_reduce(16, bytes)).schedule.algorithm, Algorithm::kNvls);
  topology::ClusterSpec no_sharp = test_support::hgx_cluster(1);
  no_sharp.node.nvlink_sharp = false;
  const topology::Cluster plain(no_sharp);
  EXPECT_NE(sim::CommPlanner(plain, sim::NetworkOptions{}).plan(all_reduce(8, bytes)).schedule.algorithm, Algorithm::kNvls);
  EXPECT_NE(sim::CommPlanner(cluster, test_support::textbook_network_options()).plan(all_reduce(8, bytes)).schedule.algorithm,
            Algorithm::kNvls);
}

}  // namespace
