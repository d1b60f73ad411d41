// Building the cluster graph and routing on it (see cluster.h).
#include "topology/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/dijkstra_shortest_paths_no_color_map.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>

namespace topology {
namespace {

constexpr std::uint16_t kUnreachable = std::numeric_limits<std::uint16_t>::max();

// SplitMix64 finaliser: a cheap, well-mixed hash for ECMP choices.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

int routing_cost(LinkClass link_class) {
  switch (link_class) {
    case LinkClass::kNvlink: return 1;
    case LinkClass::kPcie: return 2;
    case LinkClass::kNetwork: return 4;
    case LinkClass::kHostPcie: return 5;
  }
  return 1;
}

Cluster::Cluster(ClusterSpec spec) : spec_(std::move(spec)) {
  build_nodes();
  std::vector<std::pair<VertexId, VertexId>> reversed;
  std::vector<LinkId> ids;
  for (LinkId id = 0; id < links_.size(); ++id) {
    reversed.emplace_back(links_[id].to, links_[id].from);
    ids.push_back(id);
  }
  reverse_ = ReverseGraph(boost::edges_are_unsorted_multi_pass, reversed.begin(), reversed.end(), ids.begin(),
                          boost::num_vertices(graph_));
  is_endpoint_.assign(boost::num_vertices(graph_), 0);
  for (VertexId endpoint : endpoints_) is_endpoint_[endpoint] = 1;
}

VertexId Cluster::add_vertex(VertexKind kind, int node, int index) {
  return boost::add_vertex(Vertex{kind, node, index}, graph_);
}

LinkId Cluster::add_link(VertexId a, VertexId b, LinkClass link_class, const LinkSpec& spec) {
  if (!(spec.effective_bandwidth() > 0) || !(spec.latency >= 0)) {
    throw std::invalid_argument("every link needs a positive bandwidth and efficiency and a latency >= 0");
  }
  const auto forward = static_cast<LinkId>(links_.size());
  for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    const auto id = static_cast<LinkId>(links_.size());
    links_.push_back(Link{from, to, link_class, spec});
    boost::add_edge(from, to, id, graph_);
  }
  return forward;
}

void Cluster::build_nodes() {
  const NodeSpec& node = spec_.node;
  std::vector<std::vector<VertexId>> node_nics(spec_.nodes);
  std::vector<VertexId> gpus;
  std::vector<LinkId> pcie_switch_nic;  // per PCIe switch: switch → NIC
  for (int n = 0; n < spec_.nodes; ++n) {
    const VertexId host = add_vertex(VertexKind::kHost, n, 0);
    std::vector<VertexId> pcie_switches;
    for (int s = 0; s < node.nics; ++s) {
      const VertexId pcie_switch = add_vertex(VertexKind::kPcieSwitch, n, s);
      pcie_switch_host_up_.push_back(add_link(pcie_switch, host, LinkClass::kHostPcie, node.pcie));
      const VertexId nic = add_vertex(VertexKind::kNic, n, s);
      pcie_switch_nic.push_back(reverse(add_link(nic, pcie_switch, LinkClass::kPcie, node.pcie)));
      pcie_switches.push_back(pcie_switch);
      node_nics[n].push_back(nic);
    }
    VertexId nvswitch = 0;
    if (node.kind == NodeKind::kNvSwitch) nvswitch = add_vertex(VertexKind::kNvSwitch, n, 0);
    for (int i = 0; i < node.gpus; ++i) {
      const VertexId gpu = add_vertex(VertexKind::kGpu, n, i);
      const int pcie_switch = i * node.nics / node.gpus;
      FabricAttachment attachment;
      attachment.up[0] = add_link(gpu, pcie_switches[static_cast<std::size_t>(pcie_switch)],
                                  LinkClass::kPcie, node.pcie);
      attachment.up[1] = pcie_switch_nic[static_cast<std::size_t>(n * node.nics + pcie_switch)];
      attachment.hops = 3;  // the NIC → leaf link is added with the fabric
      attachment_.push_back(attachment);
      gpu_pcie_switch_.push_back(n * node.nics + pcie_switch);
      gpu_nvlink_up_.push_back(node.kind == NodeKind::kNvSwitch
                                   ? add_link(gpu, nvswitch, LinkClass::kNvlink, node.nvlink)
                                   : 0);
      gpus.push_back(gpu);
    }
    if (node.kind == NodeKind::kFullMesh) add_mesh(gpus, n);
  }
  endpoints_ = gpus;
  std::vector<VertexId> server_hosts;
  for (int k = 0; k < spec_.parameter_servers.count; ++k) {
    server_hosts.push_back(add_vertex(VertexKind::kServer, spec_.nodes + k, 0));
    endpoints_.push_back(server_hosts.back());
  }
  build_fabric(node_nics, server_hosts);
}

// A direct link between every two GPUs of node `n` (the last gpus_per_node of `gpus`):
// gpu_mesh_[(n · g + i) · g + j] is the link i → j.
void Cluster::add_mesh(const std::vector<VertexId>& gpus, int n) {
  const auto g = static_cast<std::size_t>(spec_.node.gpus);
  const std::size_t first = gpus.size() - g;
  gpu_mesh_.resize((static_cast<std::size_t>(n) + 1) * g * g);
  const std::size_t base = static_cast<std::size_t>(n) * g * g;
  for (std::size_t i = 0; i < g; ++i) {
    for (std::size_t j = i + 1; j < g; ++j) {
      const LinkId link = add_link(gpus[first + i], gpus[first + j], LinkClass::kNvlink, spec_.node.nvlink);
      gpu_mesh_[base + i * g + j] = link;
      gpu_mesh_[base + j * g + i] = reverse(link);
    }
  }
}

// Fills leaves in order. Classic fat-tree: a node takes `nics` ports of one leaf. Rail-
// optimized: a node takes one port on each of the `nics` rail leaves of its group. A server
// takes one port (rail 0 of a group when rail-optimized).
void Cluster::build_fabric(const std::vector<std::vector<VertexId>>& node_nics,
                           const std::vector<VertexId>& server_hosts) {
  const FabricSpec& fabric = spec_.fabric;
  const int ports = fabric.leaf_down_ports;
  const int rails = fabric.rail_optimized ? spec_.node.nics : 1;
  std::vector<VertexId> leaves;
  std::vector<int> used_ports;
  int group = -1;
  auto open_group = [&] {
    ++group;
    for (int r = 0; r < rails; ++r) {
      leaves.push_back(add_vertex(VertexKind::kLeaf, -1, static_cast<int>(leaves.size())));
      used_ports.push_back(0);
    }
  };
  auto leaf_of = [&](int rail) { return static_cast<std::size_t>(group * rails + rail); };
  // Ports a node needs on each leaf of a group.
  const int node_ports_per_leaf = leaf_ports_per_node(spec_.node, fabric);
  if (node_ports_per_leaf > ports) {
    throw std::invalid_argument(fmt::format(
        "a node has {} NICs but a leaf switch has only {} down ports", spec_.node.nics, ports));
  }
  const int gpus_per_node = spec_.node.gpus;
  for (std::size_t n = 0; n < node_nics.size(); ++n) {
    const auto& nics = node_nics[n];
    if (group < 0 || used_ports[leaf_of(0)] + node_ports_per_leaf > ports) open_group();
    std::vector<LinkId> nic_leaf;
    std::vector<int> nic_port;
    for (std::size_t j = 0; j < nics.size(); ++j) {
      const int rail = fabric.rail_optimized ? static_cast<int>(j) : 0;
      nic_leaf.push_back(add_link(nics[j], leaves[leaf_of(rail)], LinkClass::kNetwork, fabric.nic));
      nic_port.push_back(used_ports[leaf_of(rail)]++);
    }
    for (int i = 0; i < gpus_per_node; ++i) {
      FabricAttachment& attachment = attachment_[n * gpus_per_node + static_cast<std::size_t>(i)];
      const auto nic = static_cast<std::size_t>(i * spec_.node.nics / gpus_per_node);
      attachment.up[2] = nic_leaf[nic];
      attachment.leaf = static_cast<int>(leaf_of(fabric.rail_optimized ? static_cast<int>(nic) : 0));
      attachment.port = nic_port[nic];
    }
  }
  for (VertexId server : server_hosts) {
    if (group < 0 || used_ports[leaf_of(0)] + 1 > ports) open_group();
    FabricAttachment attachment;
    attachment.up[0] = add_link(server, leaves[leaf_of(0)], LinkClass::kNetwork, spec_.parameter_servers.nic);
    attachment.hops = 1;
    attachment.leaf = static_cast<int>(leaf_of(0));
    attachment.port = used_ports[leaf_of(0)]++;
    attachment_.push_back(attachment);
  }
  leaf_count_ = static_cast<int>(leaves.size());
  if (leaf_count_ <= 1) return;
  spines_per_pod_ = std::max(1, static_cast<int>(std::lround(ports / fabric.oversubscription)));
  const bool three_tiers = fabric.pod_leaves > 0 && leaf_count_ > fabric.pod_leaves;
  leaves_per_pod_ = three_tiers ? fabric.pod_leaves : leaf_count_;
  const int pods = (leaf_count_ + leaves_per_pod_ - 1) / leaves_per_pod_;
  const auto per_pod = static_cast<std::size_t>(spines_per_pod_);
  leaf_spine_up_.resize(leaves.size() * per_pod);
  std::vector<VertexId> spines;  // pod · spines_per_pod + spine
  for (int pod = 0; pod < pods; ++pod) {
    const std::size_t first_leaf = static_cast<std::size_t>(pod * leaves_per_pod_);
    const std::size_t end_leaf = std::min(leaves.size(), first_leaf + static_cast<std::size_t>(leaves_per_pod_));
    for (std::size_t s = 0; s < per_pod; ++s) {
      spines.push_back(add_vertex(VertexKind::kSpine, -1, static_cast<int>(spines.size())));
      for (std::size_t l = first_leaf; l < end_leaf; ++l) {
        leaf_spine_up_[l * per_pod + s] = add_link(leaves[l], spines.back(), LinkClass::kNetwork, fabric.uplink);
      }
    }
  }
  spine_count_ = static_cast<int>(spines.size());
  if (pods <= 1) return;
  cores_per_plane_ = std::max(1, static_cast<int>(std::lround(leaves_per_pod_ / fabric.spine_oversubscription)));
  const auto per_plane = static_cast<std::size_t>(cores_per_plane_);
  spine_core_up_.resize(spines.size() * per_plane);
  for (std::size_t plane = 0; plane < per_pod; ++plane) {
    for (std::size_t c = 0; c < per_plane; ++c) {
      const VertexId core = add_vertex(VertexKind::kCore, -1, core_count_++);
      for (std::size_t pod = 0; pod < static_cast<std::size_t>(pods); ++pod) {
        const std::size_t spine = pod * per_pod + plane;
        spine_core_up_[spine * per_plane + c] = add_link(spines[spine], core, LinkClass::kNetwork, fabric.uplink);
      }
    }
  }
}

int Cluster::node_of(int endpoint) const { return graph_[endpoint_vertex(endpoint)].node; }

std::string Cluster::vertex_name(VertexId vertex) const {
  const Vertex& v = graph_[vertex];
  switch (v.kind) {
    case VertexKind::kGpu: return fmt::format("node{}/gpu{}", v.node, v.index);
    case VertexKind::kNvSwitch: return fmt::format("node{}/nvswitch", v.node);
    case VertexKind::kPcieSwitch: return fmt::format("node{}/pcie{}", v.node, v.index);
    case VertexKind::kNic: return fmt::format("node{}/nic{}", v.node, v.index);
    case VertexKind::kHost: return fmt::format("node{}/host", v.node);
    case VertexKind::kLeaf: return fmt::format("leaf{}", v.index);
    case VertexKind::kSpine: return fmt::format("spine{}", v.index);
    case VertexKind::kCore: return fmt::format("core{}", v.index);
    case VertexKind::kServer: return fmt::format("server{}", v.node - spec_.nodes);
  }
  return "?";
}

bool Cluster::may_enter(VertexId vertex, VertexId dst) const {
  const VertexKind kind = graph_[vertex].kind;
  return vertex == dst || (kind != VertexKind::kGpu && kind != VertexKind::kServer);
}

const std::vector<std::uint16_t>& Cluster::distances_to(VertexId dst) const {
  auto cached = distance_cache_.find(dst);
  if (cached != distance_cache_.end()) return cached->second;
  // Least routing cost to dst: Dijkstra from dst over the reversed links. A path may end at
  // dst but never pass through another endpoint: such a vertex gets a distance but does not
  // pass it on (its outgoing reversed edges weigh "infinity").
  constexpr int kBlocked = 1 << 20;
  using Edge = boost::graph_traits<ReverseGraph>::edge_descriptor;
  auto cost = boost::make_function_property_map<Edge, int>([this, dst](const Edge& e) {
    const auto from = boost::source(e, reverse_);
    if (from != dst && is_endpoint_[from]) return kBlocked;
    return routing_cost(links_[reverse_[e]].link_class);
  });
  std::vector<int> cost_to(boost::num_vertices(reverse_), std::numeric_limits<int>::max());
  boost::dijkstra_shortest_paths_no_color_map(
      reverse_, dst,
      boost::weight_map(cost).distance_map(boost::make_iterator_property_map(
          cost_to.begin(), boost::get(boost::vertex_index, reverse_))));
  std::vector<std::uint16_t> distances(cost_to.size(), kUnreachable);
  for (std::size_t v = 0; v < cost_to.size(); ++v) {
    if (cost_to[v] < kUnreachable) distances[v] = static_cast<std::uint16_t>(cost_to[v]);
  }
  // Keep up to 512 MB of distance vectors: every destination of clusters of several thousand
  // GPUs (collective schedules revisit destinations phase after phase).
  constexpr std::size_t kCacheBytes = std::size_t{512} << 20;
  const std::size_t capacity = std::max<std::size_t>(64, kCacheBytes / (2 * distances.size()));
  if (cache_order_.size() >= capacity) {
    distance_cache_.erase(cache_order_.front());
    cache_order_.pop_front();
  }
  cache_order_.push_back(dst);
  return distance_cache_.emplace(dst, std::move(distances)).first->second;
}

// Next hops from `at` that lie on a least-cost path to `to`.
void Cluster::least_cost_hops(VertexId at, VertexId to, const std::vector<std::uint16_t>& distance,
                              std::vector<LinkId>& hops) const {
  hops.clear();
  for (auto [e, end] = boost::out_edges(at, graph_); e != end; ++e) {
    const VertexId next = boost::target(*e, graph_);
    const LinkId link = graph_[*e];
    if (may_enter(next, to) && distance[next] != kUnreachable &&
        distance[next] + routing_cost(links_[link].link_class) == distance[at]) {
      hops.push_back(link);
    }
  }
}

Path Cluster::route(int src, int dst, std::uint64_t flow_hash) const {
  if (src == dst) return {};
  const bool gpus = is_gpu(src) && is_gpu(dst);
  if (gpus && node_of(src) == node_of(dst)) {
    const auto from = static_cast<std::size_t>(src);
    const auto to = static_cast<std::size_t>(dst);
    // NVSwitch node: NVLink (cost 2) beats even a shared PCIe switch (cost 4).
    if (spec_.node.kind == NodeKind::kNvSwitch) return {gpu_nvlink_up_[from], reverse(gpu_nvlink_up_[to])};
    if (spec_.node.kind == NodeKind::kFullMesh) {  // the direct link (cost 1)
      const auto g = static_cast<std::size_t>(spec_.node.gpus);
      return {gpu_mesh_[from * g + to % g]};
    }
    const LinkId up = attachment_[from].up[0];
    const LinkId down = reverse(attachment_[to].up[0]);
    if (gpu_pcie_switch_[from] == gpu_pcie_switch_[to]) return {up, down};  // cost 4
    // Through the host (cost 14); leaving through the NICs would cost at least 16.
    return {up, pcie_switch_host_up_[static_cast<std::size_t>(gpu_pcie_switch_[from])],
            reverse(pcie_switch_host_up_[static_cast<std::size_t>(gpu_pcie_switch_[to])]), down};
  }
  // Up to the source's leaf, across a spine when the leaves differ, down to the destination.
  const FabricAttachment& a = attachment_.at(static_cast<std::size_t>(src));
  const FabricAttachment& b = attachment_.at(static_cast<std::size_t>(dst));
  if (gpus) {
    if (const std::optional<int> proxy = rail_proxy(src, b)) {
      Path path = {gpu_nvlink_up_[static_cast<std::size_t>(src)],
                   reverse(gpu_nvlink_up_[static_cast<std::size_t>(*proxy)])};
      const Path onward = route(*proxy, dst, flow_hash);
      path.insert(path.end(), onward.begin(), onward.end());
      return path;
    }
  }
  Path path(a.up.begin(), a.up.begin() + a.hops);
  if (a.leaf != b.leaf) {
    const bool infiniband = spec_.fabric.kind == FabricKind::kInfiniBand;
    const auto spines = static_cast<std::size_t>(spines_per_pod_);
    // InfiniBand: D-mod-K (Zahavi 2010) — destination D leaves through up port D mod K, and at the
    // spine through (D / K) mod K'. RoCE: ECMP hashing of the flow.
    const std::uint64_t destination = b.fabric_index(spec_.fabric.leaf_down_ports);
    const std::size_t spine = (infiniband ? destination : mix(flow_hash ^ mix(a.hops))) % spines;
    path.push_back(leaf_spine_up_[static_cast<std::size_t>(a.leaf) * spines + spine]);
    const int pod_a = a.leaf / leaves_per_pod_;
    const int pod_b = b.leaf / leaves_per_pod_;
    if (pod_a != pod_b) {  // up to a core of the spine's plane and down to the same plane's spine
      const auto cores = static_cast<std::size_t>(cores_per_plane_);
      const std::size_t core =
          (infiniband ? destination / spines : mix(flow_hash ^ mix(a.hops + 1u))) % cores;
      path.push_back(spine_core_up_[(static_cast<std::size_t>(pod_a) * spines + spine) * cores + core]);
      path.push_back(reverse(spine_core_up_[(static_cast<std::size_t>(pod_b) * spines + spine) * cores + core]));
    }
    path.push_back(reverse(leaf_spine_up_[static_cast<std::size_t>(b.leaf) * spines + spine]));
  }
  for (int hop = b.hops - 1; hop >= 0; --hop) path.push_back(reverse(b.up[static_cast<std::size_t>(hop)]));
  return path;
}

// NCCL's PXN (PCI × NVLink; NCCL 2.12 and later, on by default): a GPU sending to a GPU on
// another rail hands the data over NVLink to the GPU of its own node whose NIC is on the
// destination's rail, and that NIC sends it, so that rings and all-to-alls stay on their rails
// (NVIDIA Technical Blog, "Doubling all2all Performance with NVIDIA Collective Communication
// Library 2.12", 2022; NCCL_PXN_DISABLE). On a rail-optimized fabric of NVSwitch nodes: that
// GPU, if it is not the source; otherwise none (the route climbs to a spine).
std::optional<int> Cluster::rail_proxy(int src, const FabricAttachment& destination) const {
  if (!spec_.fabric.rail_optimized || spec_.node.kind != NodeKind::kNvSwitch) return std::nullopt;
  const int rails = spec_.node.nics;
  const int rail = destination.leaf % rails;
  const int gpus = spec_.node.gpus;
  if (attachment_[static_cast<std::size_t>(src)].leaf % rails == rail) return std::nullopt;
  const int proxy =
      node_of(src) * gpus + (rail * gpus + rails - 1) / rails;  // the first GPU on that NIC
  if (attachment_[static_cast<std::size_t>(proxy)].leaf % rails != rail) return std::nullopt;
  return proxy;
}

std::vector<Path> Cluster::equal_cost_paths(int src, int dst, std::size_t limit) const {
  const VertexId from = endpoint_vertex(src);
  const VertexId to = endpoint_vertex(dst);
  std::vector<Path> paths;
  if (from == to) return paths;
  const auto& distance = distances_to(to);
  Path prefix;
  // Depth-first enumeration of the least-cost-path DAG.
  std::function<void(VertexId)> extend = [&](VertexId at) {
    if (paths.size() >= limit) return;
    if (at == to) {
      paths.push_back(prefix);
      return;
    }
    std::vector<LinkId> hops;
    least_cost_hops(at, to, distance, hops);
    for (LinkId link : hops) {
      prefix.push_back(link);
      extend(links_[link].to);
      prefix.pop_back();
    }
  };
  if (distance[from] != kUnreachable) extend(from);
  return paths;
}

double Cluster::path_latency(const Path& path) const {
  double latency = 0;
  for (LinkId id : path) latency += links_[id].spec.latency;
  return latency;
}

double Cluster::path_bottleneck(const Path& path) const {
  double bottleneck = std::numeric_limits<double>::infinity();
  for (LinkId id : path) bottleneck = std::min(bottleneck, links_[id].spec.effective_bandwidth());
  return bottleneck;
}

}  // namespace topology
