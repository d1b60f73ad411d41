// topology::Cluster — the whole machine as one Boost.Graph graph, and routing over it.
//
// Vertices: GPUs, the NVSwitch of each NVSwitch node, PCIe switches, NICs, hosts, leaf and
// spine switches, parameter-server hosts. Every physical link is two directed edges (one per
// direction), each carrying its own bandwidth, latency and protocol efficiency, so traffic
// in one direction never slows the other.
//
// Node layout: NIC j sits on PCIe switch j, which uplinks to the host; GPU i hangs off PCIe
// switch i·nics/gpus (so GPUs share a NIC when a node has fewer NICs than GPUs); on NVSwitch
// nodes every GPU also has an NVLink edge to the node's NVSwitch, on full-mesh nodes (xGMI) a
// link of that class to every other GPU of the node.
//
// Routing: least-cost paths; they never transit another GPU or server (route()'s PXN, below, does).
// Link costs rank the paths as NCCL's path types do (NVL < PIX < PXB < PHB < NET): NVLink 1, a PCIe
// link 2, a PCIe link into the host's root complex 5, a network link 4 — so GPUs of an NVSwitch
// node talk over NVLink even when they share a PCIe switch, GPUs of a PCIe server talk through
// their switch or the host but never leave the node, a GPU reaches the fabric through its own NIC,
// and traffic between rails climbs to a spine rather than crossing a host. Among equal-cost next
// hops (the spines between two leaves) the choice follows the fabric:
//   InfiniBand — destination-based, next hop = destination mod choices, as the subnet
//                manager's fat-tree routing (D-mod-K) programs the switches' tables, with
//                destinations numbered as the switches see them: leaf by leaf, down port by
//                down port (on rails, a leaf's ports are one NIC of each node of its group);
//                shift patterns such as rings then never share an uplink;
//   RoCE       — ECMP on a hash of the flow, so distinct flows may collide on an uplink.
// On a rail-optimized fabric of NVSwitch nodes route() follows NCCL's PXN instead: a GPU sends to
// another rail through the NVLink to the GPU of its node on that rail, whose NIC sends it (a
// transit through a GPU, which the least-cost paths never take; rail_proxy()).
// route() builds these paths in closed form from the structure the cluster was built with
// (inside the node; endpoint → NIC → leaf [→ spine [→ core → spine] → leaf] → NIC → endpoint),
// in time independent of the cluster's size. With three tiers InfiniBand takes the spine by
// destination mod spines and the core by (destination / spines) mod cores, as D-mod-K takes
// successive digits of the destination at successive tiers. equal_cost_paths() searches the graph
// itself (Dijkstra from the destination over the reversed links) and lists every least-cost path:
// the general definition that route()'s closed form is tested against.
#pragma once

#include <array>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "topology/hardware_spec.h"

namespace topology {

enum class VertexKind { kGpu, kNvSwitch, kPcieSwitch, kNic, kHost, kLeaf, kSpine, kServer, kCore };
enum class LinkClass { kNvlink, kPcie, kHostPcie, kNetwork };
// Routing cost of one traversal of a link of this class (see above).
int routing_cost(LinkClass link_class);

struct Vertex {
  VertexKind kind = VertexKind::kGpu;
  int node = -1;  // node (or server) index; -1 for fabric switches
  int index = 0;  // index within the node, or switch number
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Vertex,
                                    std::uint32_t /* link id */>;
using VertexId = Graph::vertex_descriptor;
using LinkId = std::uint32_t;
using Path = std::vector<LinkId>;

struct Link {
  VertexId from = 0;
  VertexId to = 0;
  LinkClass link_class = LinkClass::kNvlink;
  LinkSpec spec;
};

class Cluster {
 public:
  explicit Cluster(ClusterSpec spec);
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  const ClusterSpec& spec() const { return spec_; }
  const Graph& graph() const { return graph_; }
  std::size_t link_count() const { return links_.size(); }
  const Link& link(LinkId id) const { return links_[id]; }
  std::string vertex_name(VertexId vertex) const;

  // Endpoints are where ranks run: GPUs 0 .. gpu_count()-1 (node-major), then servers.
  int gpu_count() const { return spec_.gpu_count(); }
  int endpoint_count() const { return static_cast<int>(endpoints_.size()); }
  VertexId endpoint_vertex(int endpoint) const { return endpoints_.at(endpoint); }
  bool is_gpu(int endpoint) const { return endpoint < gpu_count(); }
  int node_of(int endpoint) const;  // servers are numbered after the GPU nodes
  int leaf_count() const { return leaf_count_; }
  int spine_count() const { return spine_count_; }  // all pods' together
  int core_count() const { return core_count_; }
  int spines_per_pod() const { return spines_per_pod_; }
  int cores_per_plane() const { return cores_per_plane_; }

  // One least-cost path from src to dst (endpoints), picked among equal-cost paths by
  // `flow_hash` (RoCE) or the destination (InfiniBand). Empty when src == dst. O(1).
  Path route(int src, int dst, std::uint64_t flow_hash = 0) const;
  // Every least-cost path (up to `limit`), found by searching the graph. Not thread-safe (the
  // distance cache is filled lazily).
  std::vector<Path> equal_cost_paths(int src, int dst, std::size_t limit = 256) const;

  double path_latency(const Path& path) const;
  // Smallest effective bandwidth (bandwidth × efficiency) along the path; +inf when empty.
  double path_bottleneck(const Path& path) const;

 private:
  VertexId add_vertex(VertexKind kind, int node, int index);
  // Adds both directions; returns the id of a → b (b → a is its reverse(), the next id).
  LinkId add_link(VertexId a, VertexId b, LinkClass link_class, const LinkSpec& spec);
  static LinkId reverse(LinkId link) { return link ^ 1u; }
  void build_nodes();
  void add_mesh(const std::vector<VertexId>& gpus, int node);
  void build_fabric(const std::vector<std::vector<VertexId>>& node_nics,
                    const std::vector<VertexId>& server_hosts);
  const std::vector<std::uint16_t>& distances_to(VertexId dst) const;
  void least_cost_hops(VertexId at, VertexId to, const std::vector<std::uint16_t>& distance,
                       std::vector<LinkId>& hops) const;
  bool may_enter(VertexId vertex, VertexId dst) const;

  ClusterSpec spec_;
  Graph graph_;
  std::vector<Link> links_;
  std::vector<VertexId> endpoints_;
  int leaf_count_ = 0;
  int spine_count_ = 0;
  int core_count_ = 0;
  int spines_per_pod_ = 0;  // a leaf's uplinks
  int cores_per_plane_ = 0;  // a spine's uplinks (three tiers)
  int leaves_per_pod_ = 0;   // all leaves with two tiers

  // The structure route() follows. Per endpoint: its links up to its leaf (GPU → PCIe switch →
  // NIC → leaf, or server → leaf), that leaf and the leaf's down port it arrives on. Per GPU: its NVLink to the node's NVSwitch
  // (NVSwitch nodes) and its PCIe switch (numbered node · nics + switch). Per PCIe switch: its
  // link to the host. Per leaf: its uplinks, one per spine (leaf · spines + spine).
  struct FabricAttachment {
    std::array<LinkId, 3> up{};
    std::uint8_t hops = 0;
    int leaf = 0;
    int port = 0;
    // D-mod-K's destination number: endpoints numbered leaf by leaf, port by port, as the
    // switches see them (GPUs sharing a NIC are one destination).
    std::uint64_t fabric_index(int leaf_down_ports) const {
      return static_cast<std::uint64_t>(leaf) * static_cast<std::uint64_t>(leaf_down_ports) +
             static_cast<std::uint64_t>(port);
    }
  };
  std::vector<FabricAttachment> attachment_;
  // The GPU of `src`'s node through which it reaches `destination`'s rail (NCCL's PXN), if any.
  std::optional<int> rail_proxy(int src, const FabricAttachment& destination) const;
  std::vector<LinkId> gpu_nvlink_up_;
  std::vector<LinkId> gpu_mesh_;  // full-mesh nodes: (node · gpus + i) · gpus + j → the link i → j
  std::vector<int> gpu_pcie_switch_;
  std::vector<LinkId> pcie_switch_host_up_;
  std::vector<LinkId> leaf_spine_up_;  // leaf · spines_per_pod + spine
  std::vector<LinkId> spine_core_up_;  // (pod · spines_per_pod + spine) · cores_per_plane + core
  // The graph with every link reversed, in compressed rows, for the per-destination Dijkstra.
  using ReverseGraph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, LinkId>;
  ReverseGraph reverse_;
  std::vector<std::uint8_t> is_endpoint_;
  // Distances to used destinations (bounded to 512 MB: oldest dropped first).
  mutable std::unordered_map<VertexId, std::vector<std::uint16_t>> distance_cache_;
  mutable std::deque<VertexId> cache_order_;
};

}  // namespace topology
