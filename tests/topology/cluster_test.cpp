// The cluster graph: structure, shortest-path routes, ECMP, oversubscription and rails.
#include "topology/cluster.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "tests/support/clusters.h"
#include "topology/presets.h"

namespace {

using topology::Cluster;
using topology::ClusterSpec;
using topology::VertexKind;


std::vector<VertexKind> kinds_along(const Cluster& cluster, const topology::Path& path) {
  std::vector<VertexKind> kinds;
  for (topology::LinkId link : path) kinds.push_back(cluster.graph()[cluster.link(link).to].kind);
  return kinds;
}

TEST(ClusterTest, OneHgxNodeHasTheExpectedVerticesAndLinks) {
  const Cluster cluster(test_support::hgx_cluster(1));
  // 8 GPUs, 8 PCIe switches, 8 NICs, 1 host, 1 NVSwitch, 1 leaf (no spine for one leaf).
  EXPECT_EQ(boost::num_vertices(cluster.graph()), 27u);
  // Links: switch–host 8, NIC–switch 8, GPU–switch 8, GPU–NVSwitch 8, NIC–leaf 8; two
  // directed edges each.
  EXPECT_EQ(cluster.link_count(), 80u);
  EXPECT_EQ(boost::num_edges(cluster.graph()), 80u);
  EXPECT_EQ(cluster.leaf_count(), 1);
  EXPECT_EQ(cluster.spine_count(), 0);
  EXPECT_EQ(cluster.gpu_count(), 8);
}

TEST(ClusterTest, GpusInANodeTalkOverNvswitch) {
  const Cluster cluster(test_support::hgx_cluster(1));
  const topology::Path path = cluster.route(0, 5);
  EXPECT_EQ(kinds_along(cluster, path), (std::vector<VertexKind>{VertexKind::kNvSwitch, VertexKind::kGpu}));
  EXPECT_DOUBLE_EQ(cluster.path_bottleneck(path), 450e9);
  EXPECT_NEAR(cluster.path_latency(path), 0.6e-6, 1e-12);
  EXPECT_TRUE(cluster.route(3, 3).empty());
}

TEST(ClusterTest, GpusInAPcieServerTalkThroughPcie) {
  ClusterSpec spec = test_support::hgx_cluster(1);
  spec.node = *topology::node_preset("pcie-h100");  // 8 GPUs, 4 NICs: two GPUs per PCIe switch
  const Cluster cluster(spec);
  // GPUs 0 and 1 share PCIe switch 0.
  EXPECT_EQ(kinds_along(cluster, cluster.route(0, 1)),
            (std::vector<VertexKind>{VertexKind::kPcieSwitch, VertexKind::kGpu}));
  // GPUs 0 and 7 sit under different switches: up through the host.
  EXPECT_EQ(kinds_along(cluster, cluster.route(0, 7)),
            (std::vector<VertexKind>{VertexKind::kPcieSwitch, VertexKind::kHost,
                                     VertexKind::kPcieSwitch, VertexKind::kGpu}));
  EXPECT_DOUBLE_EQ(cluster.path_bottleneck(cluster.route(0, 7)),
                   64e9 * 0.87);  // Gen5 x16 as measured
}

TEST(ClusterTest, NodesOnOneLeafTalkThroughTheirNics) {
  const Cluster cluster(test_support::hgx_cluster(2));
  const topology::Path path = cluster.route(3, 8 + 3);
  EXPECT_EQ(kinds_along(cluster, path),
            (std::vector<VertexKind>{VertexKind::kPcieSwitch, VertexKind::kNic, VertexKind::kLeaf,
                                     VertexKind::kNic, VertexKind::kPcieSwitch, VertexKind::kGpu}));
  EXPECT_DOUBLE_EQ(cluster.path_bottleneck(path), 40e9);  // NDR 50 GB/s × 0.8
}

TEST(ClusterTest, RoutesNeverTransitAnotherGpu) {
  const Cluster cluster(test_support::hgx_cluster(3));
  for (int src = 0; src < cluster.gpu_count(); src += 5) {
    for (int dst = 0; dst < cluster.gpu_count(); dst += 3) {
      const topology::Path path = cluster.route(src, dst);
      for (std::size_t i = 0; i + 1 < path.size(); ++i) {
        EXPECT_NE(cluster.graph()[cluster.link(path[i]).to].kind, VertexKind::kGpu);
      }
    }
  }
}

TEST(ClusterTest, CrossLeafTrafficHasOneEqualCostPathPerSpine) {
  // Classic fat-tree: 32 down ports per leaf = 4 HGX nodes; 5 nodes need 2 leaves; 32 spines.
  const Cluster cluster(test_support::hgx_cluster(5));
  EXPECT_EQ(cluster.leaf_count(), 2);
  EXPECT_EQ(cluster.spine_count(), 32);
  const auto paths = cluster.equal_cost_paths(0, 4 * 8);
  EXPECT_EQ(paths.size(), 32u);
  for (const auto& path : paths) EXPECT_EQ(kinds_along(cluster, path)[3], VertexKind::kSpine);
}

topology::VertexId spine_of(const Cluster& cluster, const topology::Path& path) {
  return cluster.link(path[3]).to;
}

TEST(ClusterTest, InfinibandRoutesByDestinationSoShiftsNeverShareAnUplink) {
  // D-mod-K: the spine depends on the destination only; eight flows from node 3 to the eight
  // GPUs of node 4 (a ring crossing leaves) take eight different spines.
  const Cluster cluster(test_support::hgx_cluster(5));
  EXPECT_EQ(cluster.route(0, 32, 1), cluster.route(0, 32, 2));
  std::set<topology::VertexId> spines;
  for (int g = 0; g < 8; ++g) spines.insert(spine_of(cluster, cluster.route(3 * 8 + g, 32 + g)));
  EXPECT_EQ(spines.size(), 8u);
}

TEST(ClusterTest, RoceHashesFlowsOverTheSpines) {
  ClusterSpec spec = test_support::hgx_cluster(5);
  spec.fabric = *topology::fabric_preset("roce-400");
  const Cluster cluster(spec);
  std::set<topology::Path> chosen;
  for (std::uint64_t flow = 0; flow < 200; ++flow) chosen.insert(cluster.route(0, 32, flow));
  EXPECT_GT(chosen.size(), 16u);                                   // spread over the spines
  EXPECT_EQ(cluster.route(0, 32, 42), cluster.route(0, 32, 42));  // and deterministic
}

TEST(ClusterTest, OversubscriptionRemovesUplinks) {
  ClusterSpec spec = test_support::hgx_cluster(5);
  spec.fabric.oversubscription = 2.0;
  const Cluster cluster(spec);
  EXPECT_EQ(cluster.spine_count(), 16);  // 32 down ports, 16 up
  EXPECT_EQ(cluster.equal_cost_paths(0, 32).size(), 16u);
}

TEST(ClusterTest, RailOptimizedFabricKeepsSameRailTrafficOffTheSpines) {
  ClusterSpec spec = test_support::hgx_cluster(4);
  spec.fabric.rail_optimized = true;
  spec.fabric.leaf_down_ports = 2;  // two nodes per rail group: 2 groups × 8 rails
  const Cluster cluster(spec);
  EXPECT_EQ(cluster.leaf_count(), 16);
  // GPU 3 of node 0 to GPU 3 of node 1: both on rail 3 of group 0 — one leaf, no spine.
  const auto same_rail = kinds_along(cluster, cluster.route(3, 8 + 3));
  EXPECT_EQ(same_rail.size(), 6u);
  EXPECT_EQ(same_rail[2], VertexKind::kLeaf);
  // GPU 3 of node 0 to GPU 4 of node 1: different rails — over NVLink to GPU 4 of node 0, whose
  // NIC is on rail 4, and on along rail 4 (NCCL's PXN): no spine either. Without PXN the path
  // climbed to a spine, where a RoCE fabric's ECMP made the rings' flows collide.
  const topology::Path other_rail = cluster.route(3, 8 + 4);
  EXPECT_EQ(topology::Path(other_rail.begin(), other_rail.begin() + 2), cluster.route(3, 4));
  EXPECT_EQ(topology::Path(other_rail.begin() + 2, other_rail.end()), cluster.route(4, 8 + 4));
  // Another rail group (node 2): through GPU 4 of node 0, then rail 4's leaves and a spine.
  const topology::Path other_group = cluster.route(3, 16 + 4);
  EXPECT_EQ(topology::Path(other_group.begin(), other_group.begin() + 2), cluster.route(3, 4));
  EXPECT_EQ(kinds_along(cluster, other_group)[5], VertexKind::kSpine);
  // PCIe servers on rails have no NVLink to hand over on: up to a spine.
  ClusterSpec pcie = spec;
  pcie.node = *topology::node_preset("pcie-l40s");
  pcie.fabric.leaf_down_ports = 4;
  const Cluster servers(pcie);
  const std::vector<VertexKind> climbs = kinds_along(servers, servers.route(0, 8 + 7));
  EXPECT_NE(std::find(climbs.begin(), climbs.end(), VertexKind::kSpine), climbs.end());
}

TEST(ClusterTest, ParameterServersHangOffTheFabricWithTheirOwnNic) {
  ClusterSpec spec = test_support::hgx_cluster(1);
  spec.parameter_servers.count = 2;
  spec.parameter_servers.nic = *topology::server_nic_preset("eth-100g");
  const Cluster cluster(spec);
  EXPECT_EQ(cluster.endpoint_count(), 10);
  EXPECT_FALSE(cluster.is_gpu(8));
  EXPECT_EQ(cluster.node_of(9), 2);
  const topology::Path path = cluster.route(0, 9);
  EXPECT_EQ(kinds_along(cluster, path).back(), VertexKind::kServer);
  EXPECT_DOUBLE_EQ(cluster.path_bottleneck(path), 12.5e9);
}

TEST(ClusterTest, ThreeTiersGroupLeavesIntoPodsJoinedByCores) {
  ClusterSpec spec = test_support::hgx_cluster(10);  // 2 nodes per leaf: 5 leaves
  spec.fabric.leaf_down_ports = 16;                    // 16 uplinks per leaf: 16 spines per pod
  spec.fabric.pod_leaves = 2;                          // 3 pods
  spec.fabric.spine_oversubscription = 2;              // 1 uplink per spine: 1 core per plane
  const Cluster cluster(spec);
  EXPECT_EQ(cluster.leaf_count(), 5);
  EXPECT_EQ(cluster.spines_per_pod(), 16);
  EXPECT_EQ(cluster.spine_count(), 48);
  EXPECT_EQ(cluster.cores_per_plane(), 1);
  EXPECT_EQ(cluster.core_count(), 16);
  // Same pod (nodes 0 and 2): leaf, spine, leaf. Pods 0 and 2 (nodes 0 and 8): through a core.
  EXPECT_EQ(kinds_along(cluster, cluster.route(0, 16))[3], VertexKind::kSpine);
  EXPECT_EQ(kinds_along(cluster, cluster.route(0, 16)).size(), 8u);
  EXPECT_EQ(kinds_along(cluster, cluster.route(0, 64)),
            (std::vector<VertexKind>{VertexKind::kPcieSwitch, VertexKind::kNic, VertexKind::kLeaf, VertexKind::kSpine,
                                     VertexKind::kCore, VertexKind::kSpine, VertexKind::kLeaf, VertexKind::kNic,
                                     VertexKind::kPcieSwitch, VertexKind::kGpu}));
}

// route() builds its paths in closed form; equal_cost_paths() searches the graph. On every
// kind of cluster dtsim builds, every route must be one of the searched least-cost paths, and
// the spine it takes must follow the fabric's rule (InfiniBand: destination mod spines).
struct RoutingCase {
  const char* name;
  topology::ClusterSpec spec;
};

std::vector<RoutingCase> routing_cases() {
  std::vector<RoutingCase> cases;
  cases.push_back({"classic fat-tree, 3 leaves", test_support::hgx_cluster(9)});
  ClusterSpec rails = test_support::hgx_cluster(6);
  rails.fabric.rail_optimized = true;
  rails.fabric.leaf_down_ports = 4;
  cases.push_back({"rail-optimized, 2 groups", rails});
  ClusterSpec mesh = test_support::hgx_cluster(3);
  mesh.node = *topology::node_preset("mi300x-8");
  cases.push_back({"MI300X full-mesh nodes", mesh});
  ClusterSpec roce = test_support::hgx_cluster(6);
  roce.fabric = *topology::fabric_preset("roce-400");
  roce.fabric.leaf_down_ports = 16;
  roce.fabric.oversubscription = 2.0;
  cases.push_back({"RoCE, oversubscribed", roce});
  ClusterSpec pcie = test_support::hgx_cluster(3);
  pcie.node = *topology::node_preset("pcie-h100");
  pcie.fabric.leaf_down_ports = 4;
  pcie.parameter_servers.count = 3;
  pcie.parameter_servers.nic = *topology::server_nic_preset("eth-100g");
  cases.push_back({"PCIe servers sharing NICs, parameter servers", pcie});
  ClusterSpec pcie_rails = pcie;
  pcie_rails.fabric.rail_optimized = true;
  cases.push_back({"PCIe servers on rails, parameter servers", pcie_rails});
  ClusterSpec three_tiers = test_support::hgx_cluster(10);
  three_tiers.fabric.leaf_down_ports = 16;  // 2 nodes per leaf, 16 uplinks
  three_tiers.fabric.pod_leaves = 2;        // 3 pods; spines with 2 down ports
  cases.push_back({"three tiers, 3 pods", three_tiers});
  ClusterSpec three_tier_rails = three_tiers;
  three_tier_rails.fabric.rail_optimized = true;
  three_tier_rails.fabric.leaf_down_ports = 2;  // 2 nodes per rail group: 8 leaves per group
  three_tier_rails.fabric.oversubscription = 2;
  three_tier_rails.fabric.pod_leaves = 16;      // 2 groups per pod, 3 pods
  three_tier_rails.fabric.spine_oversubscription = 4;
  cases.push_back({"three tiers on rails, oversubscribed", three_tier_rails});
  ClusterSpec three_tier_roce = three_tiers;
  three_tier_roce.fabric = *topology::fabric_preset("roce-400");
  three_tier_roce.fabric.leaf_down_ports = 16;
  three_tier_roce.fabric.pod_leaves = 2;
  cases.push_back({"three tiers, RoCE", three_tier_roce});
  return cases;
}

// D-mod-K's destination numbers, read off the graph: a leaf's down ports are numbered in the
// order their links were made, and a NIC's (or server's) number is leaf · down ports + port.
std::map<topology::VertexId, std::uint64_t> destination_numbers(const Cluster& cluster) {
  std::map<topology::VertexId, std::uint64_t> numbers;  // NIC or server vertex: number
  std::map<int, std::uint64_t> ports_used;               // per leaf
  for (topology::LinkId id = 0; id < cluster.link_count(); ++id) {
    const topology::Link& link = cluster.link(id);
    const topology::Vertex& from = cluster.graph()[link.from];
    const topology::Vertex& to = cluster.graph()[link.to];
    if (to.kind != VertexKind::kLeaf || (from.kind != VertexKind::kNic && from.kind != VertexKind::kServer)) continue;
    const auto leaf = static_cast<std::uint64_t>(to.index);
    numbers[link.from] = leaf * static_cast<std::uint64_t>(cluster.spec().fabric.leaf_down_ports) + ports_used[to.index]++;
  }
  return numbers;
}

// The GPU endpoint a path reaches after its first two links, when that is not `dst` (a transit
// through a GPU), or −1.
int transit_gpu(const Cluster& cluster, const topology::Path& path, int dst) {
  if (path.size() <= 2) return -1;
  const topology::VertexId second = cluster.link(path[1]).to;
  if (cluster.graph()[second].kind != VertexKind::kGpu || second == cluster.endpoint_vertex(dst))
    return -1;
  for (int endpoint = 0; endpoint < cluster.gpu_count(); ++endpoint) {
    if (cluster.endpoint_vertex(endpoint) == second) return endpoint;
  }
  return -1;
}

TEST(ClusterTest, ClosedFormRoutesAreLeastCostPathsOfTheGraph) {
  for (const RoutingCase& routing_case : routing_cases()) {
    SCOPED_TRACE(routing_case.name);
    const Cluster cluster(routing_case.spec);
    const auto destination_number = destination_numbers(cluster);
    for (int src = 0; src < cluster.endpoint_count(); ++src) {
      for (int dst = 0; dst < cluster.endpoint_count(); ++dst) {
        if (src == dst) continue;
        for (std::uint64_t flow : {0u, 7u, 12345u}) {
          topology::Path path = cluster.route(src, dst, flow);
          // NCCL's PXN on rails: over NVLink to the GPU of the source's node on the destination's
          // rail first (ClusterTest.RailOptimizedFabric… below); from there a least-cost path.
          int from = src;
          if (const int proxy = transit_gpu(cluster, path, dst); proxy >= 0) {
            EXPECT_TRUE(routing_case.spec.fabric.rail_optimized);
            EXPECT_EQ(cluster.node_of(proxy), cluster.node_of(src));
            EXPECT_EQ(topology::Path(path.begin(), path.begin() + 2), cluster.route(src, proxy));
            path.erase(path.begin(), path.begin() + 2);
            from = proxy;
          }
          const auto paths = cluster.equal_cost_paths(from, dst);
          ASSERT_FALSE(paths.empty());
          ASSERT_NE(std::find(paths.begin(), paths.end(), path), paths.end())
              << cluster.vertex_name(cluster.endpoint_vertex(src)) << " -> "
              << cluster.vertex_name(cluster.endpoint_vertex(dst)) << ", flow " << flow;
          if (routing_case.spec.fabric.kind != topology::FabricKind::kInfiniBand) continue;
          const auto spines = static_cast<std::uint64_t>(cluster.spines_per_pod());
          const auto cores = static_cast<std::uint64_t>(cluster.cores_per_plane());
          std::uint64_t destination = 0;
          for (topology::LinkId link : path) {  // the last NIC or server on the path is the destination's
            const auto found = destination_number.find(cluster.link(link).to);
            if (found != destination_number.end()) destination = found->second;
          }
          for (topology::LinkId link : path) {
            const topology::Vertex& to = cluster.graph()[cluster.link(link).to];
            if (to.kind == VertexKind::kSpine) {
              EXPECT_EQ(static_cast<std::uint64_t>(to.index) % spines, destination % spines);
            } else if (to.kind == VertexKind::kCore) {
              EXPECT_EQ(static_cast<std::uint64_t>(to.index) % cores, destination / spines % cores);
            }
          }
        }
      }
    }
  }
}

}  // namespace
