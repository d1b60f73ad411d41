// Collective schedules: steps, chunk sizes and traffic of every algorithm, their topology
// awareness, and the groups they refuse.
#include "sim/collectives/schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

#include "sim/collectives/schedule_builders.h"

namespace {

using collectives::CollectiveSpec;
using collectives::MemberLocation;
using program::Algorithm;
using program::CollectiveKind;

// `nodes` nodes of `per_node` members, node-major.
std::vector<MemberLocation> grid(std::int32_t nodes, std::int32_t per_node) {
  std::vector<MemberLocation> locations;
  for (std::int32_t n = 0; n < nodes; ++n) {
    for (std::int32_t g = 0; g < per_node; ++g) locations.push_back({n, g});
  }
  return locations;
}

CollectiveSpec spec(CollectiveKind kind, Algorithm algorithm, std::vector<MemberLocation> locations,
                    std::int64_t bytes) {
  CollectiveSpec s;
  s.kind = kind;
  s.algorithm = algorithm;
  s.members = static_cast<std::int32_t>(locations.size());
  s.locations = std::move(locations);
  s.bytes = bytes;
  return s;
}

void expect_each_sends(const collectives::Schedule& schedule, std::int32_t members, double bytes) {
  for (double sent : collectives::bytes_sent(schedule, members)) EXPECT_NEAR(sent, bytes, 1e-6 * bytes);
}

TEST(RingScheduleTest, AllReduceIsReduceScatterThenAllGather) {
  const auto schedule = collectives::build_schedule(spec(CollectiveKind::kAllReduce, Algorithm::kRing, grid(1, 8), 8'000));
  ASSERT_EQ(schedule.phases.size(), 2u);
  for (const auto& phase : schedule.phases) {
    EXPECT_EQ(phase.steps, 7);
    EXPECT_DOUBLE_EQ(phase.bytes_per_transfer, 1'000);
    EXPECT_EQ(phase.transfers.size(), 8u);
  }
  expect_each_sends(schedule, 8, 2.0 * 7 / 8 * 8'000);  // 2(P−1)/P · M
}

TEST(RingScheduleTest, OneRingPerChannelSplitsTheMessageAndSpreadsNodeExits) {
  CollectiveSpec s = spec(CollectiveKind::kAllReduce, Algorithm::kRing, grid(2, 8), 16'000);
  s.channels = 4;
  const auto schedule = collectives::build_schedule(s);
  EXPECT_DOUBLE_EQ(schedule.phases[0].bytes_per_transfer, 16'000.0 / (16 * 4));
  EXPECT_EQ(schedule.phases[0].transfers.size(), 4u * 16);
  expect_each_sends(schedule, 16, 2.0 * 15 / 16 * 16'000);
  // The four rings leave node 0 from four different GPUs, evenly spread (a NIC each even when
  // two GPUs share one).
  std::set<std::int32_t> exits;
  for (const auto& t : schedule.phases[0].transfers) {
    if (t.src < 8 && t.dst >= 8) exits.insert(t.src);
  }
  EXPECT_EQ(exits, (std::set<std::int32_t>{1, 3, 5, 7}));
}

// Full-mesh nodes (MI300X): inside one node, one ring per disjoint Hamiltonian cycle — every
// directed GPU–GPU link carries exactly one ring; across nodes, the 8 rings (one per NIC) enter
// and leave each node through 8 different GPUs and spread their in-node hops over the links.
TEST(RingScheduleTest, OnAFullMeshRingsUseEveryLinkAndEveryNic) {
  CollectiveSpec one_node = spec(CollectiveKind::kAllReduce, Algorithm::kRing, grid(1, 8), 56'000);
  one_node.full_mesh = true;
  const auto inside = collectives::build_schedule(one_node);
  std::set<std::pair<std::int32_t, std::int32_t>> arcs;
  for (const auto& t : inside.phases[0].transfers) arcs.insert({t.src, t.dst});
  EXPECT_EQ(inside.phases[0].transfers.size(), 56u);  // 7 rings × 8 hops
  EXPECT_EQ(arcs.size(), 56u);                        // each of the 8 × 7 links once
  expect_each_sends(inside, 8, 2.0 * 7 / 8 * 56'000);

  CollectiveSpec two_nodes = spec(CollectiveKind::kAllReduce, Algorithm::kRing, grid(2, 8), 16'000);
  two_nodes.full_mesh = true;
  two_nodes.channels = 8;
  const auto across = collectives::build_schedule(two_nodes);
  std::set<std::int32_t> exits, entries;
  std::map<std::pair<std::int32_t, std::int32_t>, int> in_node_uses;
  for (const auto& t : across.phases[0].transfers) {
    if (t.src < 8 && t.dst >= 8) exits.insert(t.src);
    if (t.src >= 8 && t.dst < 8) entries.insert(t.dst);
    if (t.src < 8 && t.dst < 8) ++in_node_uses[{t.src, t.dst}];
  }
  EXPECT_EQ(exits.size(), 8u);
  EXPECT_EQ(entries.size(), 8u);
  int most = 0;
  for (const auto& [arc, uses] : in_node_uses) most = std::max(most, uses);
  EXPECT_LE(most, 2);  // 8 rings on 7 cycles: no link carries more than two
  expect_each_sends(across, 16, 2.0 * 15 / 16 * 16'000);
}

TEST(RingScheduleTest, AGroupInsideOneNodeRunsOneRing) {
  CollectiveSpec s = spec(CollectiveKind::kAllGather, Algorithm::kRing, grid(1, 4), 4'000);
  s.channels = 8;
  const auto schedule = collectives::build_schedule(s);
  ASSERT_EQ(schedule.phases.size(), 1u);
  EXPECT_EQ(schedule.phases[0].steps, 3);
  EXPECT_EQ(schedule.phases[0].transfers.size(), 4u);
  expect_each_sends(schedule, 4, 3'000);
}

TEST(RingScheduleTest, BroadcastIsAPipelinedChainFromTheRoot) {
  CollectiveSpec s = spec(CollectiveKind::kBroadcast, Algorithm::kRing, grid(1, 4), 10 << 20);
  s.root = 2;
  s.chunk_bytes = 1 << 20;
  const auto schedule = collectives::build_schedule(s);
  // The first chunk crosses the 3 hops one wave at a time, then 9 steps move a chunk on every
  // hop: P − 1 + K − 1 steps, K chunks per hop.
  ASSERT_EQ(schedule.phases.size(), 4u);
  EXPECT_EQ(collectives::total_steps(schedule), 3 + 9);
  for (int wave = 0; wave < 3; ++wave) ASSERT_EQ(schedule.phases[wave].transfers.size(), 1u);
  EXPECT_EQ(schedule.phases[0].transfers[0].src, 2);  // from the root
  EXPECT_EQ(schedule.phases[1].transfers[0].src, schedule.phases[0].transfers[0].dst);
  EXPECT_EQ(schedule.phases[3].steps, 9);
  EXPECT_EQ(schedule.phases[3].transfers.size(), 3u);
  const auto sent = collectives::bytes_sent(schedule, 4);
  EXPECT_DOUBLE_EQ(sent[2], 10 << 20);  // every hop carries the whole message once
  EXPECT_DOUBLE_EQ(sent[1], 0);         // the chain ends before the root
  EXPECT_DOUBLE_EQ(sent[0] + sent[1] + sent[2] + sent[3], 3.0 * (10 << 20));
}

TEST(TreeScheduleTest, NcclBinaryTreeParents) {
  // n = 8: 0 → 4; 4 → 2, 6; 2 → 1, 3; 6 → 5, 7 (children listed under their parent).
  const std::vector<std::int32_t> expected = {-1, 2, 4, 2, 0, 6, 4, 6};
  for (std::int32_t r = 0; r < 8; ++r) EXPECT_EQ(collectives::detail::binary_tree_parent(r, 8), expected[r]) << r;
  // n = 6: 5's parent would be 6, out of range: it climbs to 4 instead.
  EXPECT_EQ(collectives::detail::binary_tree_parent(5, 6), 4);
}

TEST(TreeScheduleTest, EveryRankButTheRootIsALeafInOneOfTheTwoTrees) {
  // Mirroring (even n) makes every inner rank of one tree a leaf of the other; shifting (odd n)
  // does so for all but rank 0, the first tree's root.
  for (std::int32_t n = 2; n <= 40; ++n) {
    std::vector<int> inner(n, 0);
    for (std::int32_t r = 0; r < n; ++r) {
      const std::int32_t first = collectives::detail::binary_tree_parent(r, n);
      const std::int32_t second = collectives::detail::second_tree_parent(r, n);
      if (first >= 0) inner[first] |= 1;
      if (second >= 0) inner[second] |= 2;
    }
    for (std::int32_t r = n % 2; r < n; ++r) EXPECT_NE(inner[r], 3) << "n=" << n << " rank " << r;
  }
}

TEST(TreeScheduleTest, DepthGrowsWithTheLogarithmOfTheNodeCount) {
  auto steps = [](std::int32_t nodes) {
    CollectiveSpec s = spec(CollectiveKind::kAllReduce, Algorithm::kTree, grid(nodes, 1), 1 << 20);
    s.chunk_bytes = 1 << 20;
    return collectives::total_steps(collectives::build_schedule(s));
  };
  // K = 1 chunk per tree: 2d waves (up then down), d = ⌈log2 nodes⌉ for NCCL's btree.
  EXPECT_EQ(steps(2), 2 * 1);
  EXPECT_EQ(steps(16), 2 * 4);
  EXPECT_EQ(steps(256), 2 * 8);
}

TEST(TreeScheduleTest, AllReduceChainsInsideNodesAndSplitsDataOverTwoTrees) {
  CollectiveSpec s = spec(CollectiveKind::kAllReduce, Algorithm::kTree, grid(4, 8), 8 << 20);
  s.chunk_bytes = 1 << 20;
  const auto schedule = collectives::build_schedule(s);
  // Two trees of 4 MiB each in 1 MiB chunks; depth d = 7 (chain) + 2 (4 nodes): 2d fill
  // waves, then K − 1 = 3 steps on every edge.
  EXPECT_EQ(schedule.phases.size(), 2u * 9 + 1);
  EXPECT_EQ(collectives::total_steps(schedule), 2 * 9 + 3);
  const auto& steady = schedule.phases.back();
  EXPECT_DOUBLE_EQ(steady.bytes_per_transfer, 1 << 20);
  // Per tree 31 up and 31 down edges; intra-node edges join neighbouring GPUs.
  EXPECT_EQ(steady.transfers.size(), 2u * 2 * 31);
  for (const auto& t : steady.transfers) {
    if (t.src / 8 == t.dst / 8) EXPECT_EQ(std::abs(t.src - t.dst), 1);
    else EXPECT_TRUE(t.src % 8 == 0 && t.dst % 8 == 0);  // nodes meet through their heads
  }
  // Every edge carries the whole 4 MiB of its tree exactly once.
  const auto sent = collectives::bytes_sent(schedule, 32);
  EXPECT_DOUBLE_EQ(std::accumulate(sent.begin(), sent.end(), 0.0), 124.0 * (4 << 20));
  // The first wave is the leaves' climb inside their node; the first down wave leaves a root.
  EXPECT_EQ(schedule.phases.front().name, "tree fill");
}

TEST(NvlsScheduleTest, EachMemberMovesItsBufferOnceUpAndOnceDownPlusOneShard) {
  // 8 members, 8 MB: (8+1)/8 · 8 MB = 9 MB up per member (the buffer to be reduced, its shard
  // of the sum), in one step of 9 MB / 7 to each other member.
  CollectiveSpec s = spec(CollectiveKind::kAllReduce, Algorithm::kNvls, grid(1, 8), 8'000'000);
  s.nvlink_sharp = true;
  const auto schedule = collectives::build_schedule(s);
  ASSERT_EQ(schedule.phases.size(), 1u);
  EXPECT_EQ(schedule.phases[0].transfers.size(), 56u);
  EXPECT_NEAR(schedule.phases[0].bytes_per_transfer, 9e6 / 7, 1e-6);
  expect_each_sends(schedule, 8, 9e6);
}

TEST(NvlsScheduleTest, NeedsAnNvlinkSharpSwitchAndOneNode) {
  CollectiveSpec no_sharp = spec(CollectiveKind::kAllReduce, Algorithm::kNvls, grid(1, 8), 1000);
  EXPECT_NE(collectives::unsupported_reason(no_sharp).value_or("").find("NVLink SHARP"), std::string::npos);
  CollectiveSpec two_nodes = spec(CollectiveKind::kAllReduce, Algorithm::kNvls, grid(2, 8), 1000);
  two_nodes.nvlink_sharp = true;
  EXPECT_NE(collectives::unsupported_reason(two_nodes).value_or("").find("spans nodes"), std::string::npos);
  CollectiveSpec all_gather = spec(CollectiveKind::kAllGather, Algorithm::kNvls, grid(1, 8), 1000);
  all_gather.nvlink_sharp = true;
  EXPECT_THROW(collectives::build_schedule(all_gather), collectives::UnsupportedCollective);
}

TEST(NvlsTreeScheduleTest, TheSwitchAndTheNicsRunAtOnceInUnitsOfAShard) {
  // 2 nodes × 8, 8 MB: one step of 1 MB shards. Inside each node 9 copies of a ring put (8+1)/8
  // · 8 MB = 9 MB through each member's NVSwitch port, as NVLS does; across, each member swaps
  // its 1 MB shard with its peer on the other node: 10 MB sent per member.
  CollectiveSpec two =
      spec(CollectiveKind::kAllReduce, Algorithm::kNvlsTree, grid(2, 8), 8'000'000);
  two.nvlink_sharp = true;
  const auto schedule = collectives::build_schedule(two);
  ASSERT_EQ(schedule.phases.size(), 1u);
  EXPECT_EQ(schedule.phases[0].steps, 1);
  EXPECT_NEAR(schedule.phases[0].bytes_per_transfer, 1e6, 1e-6);
  std::size_t across = 0;
  for (const collectives::Transfer& transfer : schedule.phases[0].transfers) {
    if (transfer.src / 8 == transfer.dst / 8) continue;
    ++across;
    EXPECT_EQ(transfer.src % 8, transfer.dst % 8);  // each NIC carries its own shard
  }
  EXPECT_EQ(across, 16u);
  EXPECT_EQ(schedule.phases[0].transfers.size(), 2u * 8 * 9 + 16);
  expect_each_sends(schedule, 16, 10e6);
  // 4 nodes: a double binary tree of the nodes, each NIC a parent in one and a leaf in the other,
  // 2 MB each way per member.
  CollectiveSpec four =
      spec(CollectiveKind::kAllReduce, Algorithm::kNvlsTree, grid(4, 8), 8'000'000);
  four.nvlink_sharp = true;
  expect_each_sends(collectives::build_schedule(four), 32, 11e6);
}

TEST(NvlsTreeScheduleTest, NeedsNvlinkSharpAndTwoOrMoreNodesOfSeveralMembersEach) {
  const auto reason = [](std::vector<MemberLocation> locations, bool sharp) {
    CollectiveSpec s =
        spec(CollectiveKind::kAllReduce, Algorithm::kNvlsTree, std::move(locations), 1000);
    s.nvlink_sharp = sharp;
    return collectives::unsupported_reason(s).value_or("");
  };
  EXPECT_NE(reason(grid(2, 8), false).find("NVLink SHARP"), std::string::npos);
  EXPECT_NE(reason(grid(1, 8), true).find("sits on one node"), std::string::npos);
  EXPECT_NE(reason(grid(4, 1), true).find("one rank per node"), std::string::npos);
  std::vector<MemberLocation> uneven = grid(1, 8);
  uneven.push_back({1, 0});
  uneven.push_back({1, 1});
  EXPECT_NE(reason(uneven, true).find("uneven"), std::string::npos);
  EXPECT_EQ(reason(grid(2, 8), true), "");
}

TEST(CollNetScheduleTest, ShardsCrossTheFabricOnceUpAndOnceDownBetweenIntraNodeRings) {
  // 4 nodes × 8, 32 MB: a ring reduce-scatter of 4 MB shards inside each node (7 steps), then
  // each member's NIC carries its 4 MB shard up and the 4 MB sum down, 4/3 MB to and from each
  // of its 3 peers with its local index, then the ring all-gather.
  CollectiveSpec s = spec(CollectiveKind::kAllReduce, Algorithm::kCollNet, grid(4, 8), 32'000'000);
  s.fabric_sharp = true;
  const auto schedule = collectives::build_schedule(s);
  ASSERT_EQ(schedule.phases.size(), 3u);
  EXPECT_EQ(schedule.phases[0].steps, 7);
  EXPECT_NEAR(schedule.phases[0].bytes_per_transfer, 4e6, 1e-6);
  EXPECT_EQ(schedule.phases[1].steps, 1);
  EXPECT_EQ(schedule.phases[1].transfers.size(), 8u * 4 * 3);
  EXPECT_NEAR(schedule.phases[1].bytes_per_transfer, 4e6 / 3, 1e-6);
  for (const collectives::Transfer& transfer : schedule.phases[1].transfers) {
    EXPECT_EQ(transfer.src % 8, transfer.dst % 8);  // same local index, another node
    EXPECT_NE(transfer.src / 8, transfer.dst / 8);
  }
  EXPECT_EQ(schedule.phases[2].name, "intra-node all-gather");
}

TEST(CollNetScheduleTest, NeedsASharpFabricAndSeveralEvenNodes) {
  CollectiveSpec no_sharp = spec(CollectiveKind::kAllReduce, Algorithm::kCollNet, grid(2, 8), 1000);
  EXPECT_NE(collectives::unsupported_reason(no_sharp).value_or("").find("sharp = true"), std::string::npos);
  CollectiveSpec one_node = spec(CollectiveKind::kAllReduce, Algorithm::kCollNet, grid(1, 8), 1000);
  one_node.fabric_sharp = true;
  EXPECT_NE(collectives::unsupported_reason(one_node).value_or("").find("sits on one node"), std::string::npos);
  CollectiveSpec all_gather = spec(CollectiveKind::kAllGather, Algorithm::kCollNet, grid(2, 8), 1000);
  all_gather.fabric_sharp = true;
  EXPECT_THROW(collectives::build_schedule(all_gather), collectives::UnsupportedCollective);
}

TEST(HalvingDoublingScheduleTest, PowerOfTwoTakesTwoLog2PSteps) {
  const auto schedule =
      collectives::build_schedule(spec(CollectiveKind::kAllReduce, Algorithm::kHalvingDoubling, grid(2, 8), 16'000));
  ASSERT_EQ(schedule.phases.size(), 8u);  // 2 · log2 16
  const std::vector<double> sizes = {8'000, 4'000, 2'000, 1'000, 1'000, 2'000, 4'000, 8'000};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(schedule.phases[i].steps, 1);
    EXPECT_DOUBLE_EQ(schedule.phases[i].bytes_per_transfer, sizes[i]) << i;
  }
  // The largest exchanges are between neighbours, inside a node.
  EXPECT_EQ(schedule.phases[0].transfers[0].src ^ schedule.phases[0].transfers[0].dst, 1);
  expect_each_sends(schedule, 16, 2.0 * 15 / 16 * 16'000);
}

TEST(HalvingDoublingScheduleTest, OtherGroupSizesFoldAndUnfold) {
  const auto schedule =
      collectives::build_schedule(spec(CollectiveKind::kAllReduce, Algorithm::kHalvingDoubling, grid(1, 6), 6'000));
  // 6 = 4 + 2 extras: fold, 2 halvings, 2 doublings, unfold.
  ASSERT_EQ(schedule.phases.size(), 6u);
  EXPECT_EQ(schedule.phases.front().name, "fold");
  EXPECT_EQ(schedule.phases.front().transfers.size(), 2u);
  EXPECT_DOUBLE_EQ(schedule.phases.front().bytes_per_transfer, 6'000);
  EXPECT_EQ(schedule.phases.back().name, "unfold");
  EXPECT_EQ(schedule.phases[1].transfers.size(), 4u);  // the power-of-two core
}

TEST(HalvingDoublingScheduleTest, BarrierIsDissemination) {
  const auto schedule =
      collectives::build_schedule(spec(CollectiveKind::kBarrier, Algorithm::kHalvingDoubling, grid(1, 5), 0));
  EXPECT_EQ(schedule.phases.size(), 3u);  // ⌈log2 5⌉
  for (const auto& phase : schedule.phases) EXPECT_EQ(phase.transfers.size(), 5u);
}

TEST(HierarchicalScheduleTest, AllReduceIsIntraReduceScatterInterAllReduceIntraAllGather) {
  const auto schedule =
      collectives::build_schedule(spec(CollectiveKind::kAllReduce, Algorithm::kHierarchical, grid(2, 4), 8'000));
  ASSERT_EQ(schedule.phases.size(), 3u);
  EXPECT_EQ(schedule.phases[0].steps, 3);
  EXPECT_DOUBLE_EQ(schedule.phases[0].bytes_per_transfer, 2'000);  // M / G
  EXPECT_EQ(schedule.phases[1].steps, 2);                           // 2(N − 1)
  EXPECT_DOUBLE_EQ(schedule.phases[1].bytes_per_transfer, 1'000);  // M / (G·N)
  for (const auto& t : schedule.phases[1].transfers) EXPECT_EQ(t.src % 4, t.dst % 4);  // same local index
  expect_each_sends(schedule, 8, 2.0 * 7 / 8 * 8'000);
}

TEST(HierarchicalScheduleTest, AllGatherAndReduceScatterMoveEverythingOnce) {
  for (auto kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    const auto schedule = collectives::build_schedule(spec(kind, Algorithm::kHierarchical, grid(4, 2), 8'000));
    ASSERT_EQ(schedule.phases.size(), 2u);
    expect_each_sends(schedule, 8, 7.0 / 8 * 8'000);
  }
}

TEST(HierarchicalScheduleTest, AllToAllGathersOnTheRailInsideTheNodeThenCrossesOnce) {
  // 3 nodes of 4: each member owes every member M/12. Inside the node it hands each local peer
  // the 3 blocks for that peer's rail (M/4 per pair); across nodes each rail member sends the 4
  // blocks its node owes one remote member (M/3 per pair). What leaves a node is the flat
  // exchange's 2/3 of M per member, in 2 messages instead of 8.
  const double m = 12'000;
  const auto schedule = collectives::build_schedule(spec(CollectiveKind::kAllToAll, Algorithm::kHierarchical, grid(3, 4), 12'000));
  ASSERT_EQ(schedule.phases.size(), 2u);
  EXPECT_DOUBLE_EQ(schedule.phases[0].bytes_per_transfer, m / 4);
  EXPECT_EQ(schedule.phases[0].transfers.size(), 3u * 4 * 3);
  for (const auto& t : schedule.phases[0].transfers) EXPECT_EQ(t.src / 4, t.dst / 4);  // inside a node
  EXPECT_DOUBLE_EQ(schedule.phases[1].bytes_per_transfer, m / 3);
  for (const auto& t : schedule.phases[1].transfers) EXPECT_EQ(t.src % 4, t.dst % 4);  // on a rail
  EXPECT_EQ(schedule.phases[1].transfers.size() / 12, 2u);  // each member's inter-node messages
  expect_each_sends(schedule, 12, 3 * m / 4 + 2 * m / 3);
}

TEST(DirectScheduleTest, AllToAllIsPairwiseExchange) {
  const auto schedule = collectives::build_schedule(spec(CollectiveKind::kAllToAll, Algorithm::kDirect, grid(1, 4), 4'000));
  ASSERT_EQ(schedule.phases.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    for (const auto& t : schedule.phases[k].transfers) EXPECT_EQ((t.dst - t.src + 4) % 4, static_cast<int>(k + 1));
  }
  expect_each_sends(schedule, 4, 3'000);
}

TEST(DirectScheduleTest, AllToAllAsNcclRunsItSendsToEveryPeerAtOnce) {
  CollectiveSpec s = spec(CollectiveKind::kAllToAll, Algorithm::kDirect, grid(1, 4), 4'000);
  s.all_peers_at_once = true;
  const auto schedule = collectives::build_schedule(s);
  ASSERT_EQ(schedule.phases.size(), 1u);
  EXPECT_EQ(schedule.phases[0].steps, 1);
  EXPECT_EQ(schedule.phases[0].transfers.size(), 12u);  // every pair at once
  EXPECT_DOUBLE_EQ(schedule.phases[0].bytes_per_transfer, 1'000);
  expect_each_sends(schedule, 4, 3'000);
}

TEST(DirectScheduleTest, EveryoneToEveryoneInOneStep) {
  const auto gather = collectives::build_schedule(spec(CollectiveKind::kAllGather, Algorithm::kDirect, grid(1, 4), 4'000));
  ASSERT_EQ(gather.phases.size(), 1u);
  EXPECT_EQ(gather.phases[0].transfers.size(), 12u);
  expect_each_sends(gather, 4, 3'000);
}

TEST(ParameterServerScheduleTest, PushSendsEachShardToItsServer) {
  CollectiveSpec s = spec(CollectiveKind::kPsPush, Algorithm::kParameterServer, grid(6, 1), 12'000);
  s.ps_servers = 2;  // 4 workers, 2 servers
  const auto schedule = collectives::build_schedule(s);
  ASSERT_EQ(schedule.phases.size(), 1u);
  EXPECT_EQ(schedule.phases[0].transfers.size(), 8u);
  EXPECT_DOUBLE_EQ(schedule.phases[0].bytes_per_transfer, 6'000);
  const auto sent = collectives::bytes_sent(schedule, 6);
  EXPECT_DOUBLE_EQ(sent[0], 12'000);  // a worker pushes all its gradients
  EXPECT_DOUBLE_EQ(sent[5], 0);
  s.kind = CollectiveKind::kPsPull;
  EXPECT_DOUBLE_EQ(collectives::bytes_sent(collectives::build_schedule(s), 6)[4], 4 * 6'000);
}

TEST(ScheduleTest, ImpossibleCombinationsAreRejectedWithAReason) {
  auto reason = [](const CollectiveSpec& s) { return collectives::unsupported_reason(s).value_or(""); };
  EXPECT_NE(reason(spec(CollectiveKind::kAllReduce, Algorithm::kHierarchical, grid(1, 8), 100)).find("one node"),
            std::string::npos);
  auto uneven = grid(2, 4);
  uneven.pop_back();
  EXPECT_NE(reason(spec(CollectiveKind::kAllReduce, Algorithm::kHierarchical, uneven, 100)).find("same number"),
            std::string::npos);
  EXPECT_NE(reason(spec(CollectiveKind::kAllToAll, Algorithm::kRing, grid(1, 4), 100)).find("it runs with: direct"),
            std::string::npos);
  EXPECT_NE(reason(spec(CollectiveKind::kPsPush, Algorithm::kParameterServer, grid(1, 4), 100)).find("server"),
            std::string::npos);
  CollectiveSpec bad_root = spec(CollectiveKind::kBroadcast, Algorithm::kRing, grid(1, 4), 100);
  bad_root.root = 4;
  EXPECT_NE(reason(bad_root).find("root"), std::string::npos);
  EXPECT_THROW(collectives::build_schedule(spec(CollectiveKind::kAllReduce, Algorithm::kHierarchical, grid(1, 8), 100)),
               collectives::UnsupportedCollective);
}

TEST(ScheduleTest, BusBandwidthFactorsAreThoseOfNcclTests) {
  EXPECT_DOUBLE_EQ(collectives::bus_bandwidth_factor(CollectiveKind::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(collectives::bus_bandwidth_factor(CollectiveKind::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(collectives::bus_bandwidth_factor(CollectiveKind::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(collectives::bus_bandwidth_factor(CollectiveKind::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(collectives::bus_bandwidth_factor(CollectiveKind::kBroadcast, 8), 1.0);
}

}  // namespace
