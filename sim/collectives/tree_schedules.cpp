// Tree schedules: NCCL's double binary tree for all-reduce and barrier, a single pipelined
// binary tree for broadcast and reduce (see schedule.h).
#include <algorithm>

#include "sim/collectives/schedule_builders.h"

namespace collectives::detail {

std::int32_t binary_tree_parent(std::int32_t rank, std::int32_t n) {
  if (rank == 0) return -1;
  const std::int32_t low_bit = rank & -rank;
  // xx01[0…] climbs to xx10[0…] (or to xx00[0…] past the end); xx11[0…] to xx10[0…].
  const std::int32_t up = (rank ^ low_bit) | (low_bit << 1);
  return up < n ? up : rank ^ low_bit;
}

std::int32_t second_tree_parent(std::int32_t rank, std::int32_t n) {
  if (n % 2 == 0) {  // mirror
    const std::int32_t parent = binary_tree_parent(n - 1 - rank, n);
    return parent < 0 ? -1 : n - 1 - parent;
  }
  const std::int32_t parent = binary_tree_parent((rank - 1 + n) % n, n);  // shift by one
  return parent < 0 ? -1 : (parent + 1) % n;
}

namespace {

using program::CollectiveKind;

// Parent of every member in one tree: a chain inside each node towards its first member
// (the node's head), heads joined by the given tree over nodes.
std::vector<std::int32_t> member_parents(const NodeGroups& groups, std::int32_t members,
                                         std::int32_t (*node_parent)(std::int32_t, std::int32_t)) {
  std::vector<std::int32_t> parent(static_cast<std::size_t>(members), -1);
  const auto nodes = static_cast<std::int32_t>(groups.nodes.size());
  for (std::int32_t n = 0; n < nodes; ++n) {
    const auto& local = groups.nodes[n];
    for (std::size_t j = 1; j < local.size(); ++j) parent[local[j]] = local[j - 1];
    const std::int32_t up = node_parent(n, nodes);
    if (up >= 0) parent[local.front()] = groups.nodes[up].front();
  }
  return parent;
}

std::vector<std::int32_t> depths(const std::vector<std::int32_t>& parent) {
  std::vector<std::int32_t> depth(parent.size(), 0);
  for (std::size_t m = 0; m < parent.size(); ++m) {
    for (std::int32_t at = static_cast<std::int32_t>(m); parent[at] >= 0; at = parent[at]) ++depth[m];
  }
  return depth;
}

// Longest distance from each member down to a leaf of its subtree.
std::vector<std::int32_t> heights(const std::vector<std::int32_t>& parent) {
  const std::vector<std::int32_t> depth = depths(parent);
  std::vector<std::int32_t> order(parent.size());
  for (std::size_t m = 0; m < order.size(); ++m) order[m] = static_cast<std::int32_t>(m);
  std::sort(order.begin(), order.end(), [&depth](std::int32_t a, std::int32_t b) { return depth[a] > depth[b]; });
  std::vector<std::int32_t> height(parent.size(), 0);
  for (std::int32_t m : order) {
    if (parent[m] >= 0) height[parent[m]] = std::max(height[parent[m]], height[m] + 1);
  }
  return height;
}

// A chunk climbs from the leaves (a child sends once its own subtree is reduced: wave =
// its height) and, when `down`, comes back from the root (wave = d + depth of the sender).
void add_tree_edges(const std::vector<std::int32_t>& parent, bool up, bool down,
                    std::vector<PipelineEdge>& edges) {
  const std::vector<std::int32_t> height = heights(parent);
  const std::vector<std::int32_t> depth = depths(parent);
  const std::int32_t up_waves = up ? *std::max_element(height.begin(), height.end()) : 0;
  for (std::size_t m = 0; m < parent.size(); ++m) {
    if (parent[m] < 0) continue;
    const auto child = static_cast<std::int32_t>(m);
    if (up) edges.push_back({{child, parent[m]}, height[child]});
    if (down) edges.push_back({{parent[m], child}, up_waves + depth[parent[m]]});
  }
}

}  // namespace

Schedule tree_schedule(const CollectiveSpec& spec, const NodeGroups& groups) {
  Schedule schedule;
  const std::int32_t p = spec.members;
  if (p < 2) return schedule;
  const double bytes = static_cast<double>(effective_bytes(spec));
  if (spec.kind == CollectiveKind::kAllReduce || spec.kind == CollectiveKind::kBarrier) {
    // Per channel, two trees over the nodes whose heads are the channel's GPU in each node (so
    // C channels leave a node through C NICs, as NCCL's tree channels do); the data is split
    // evenly over all trees. One chain when the group sits on one node.
    std::vector<std::vector<std::int32_t>> trees;
    const std::int32_t channels = groups.nodes.size() == 1 ? 1 : std::max(1, spec.channels);
    for (std::int32_t c = 0; c < channels; ++c) {
      NodeGroups rotated = groups;
      for (auto& members : rotated.nodes) {
        const auto start = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c) * members.size() /
                                                       static_cast<std::size_t>(channels));
        std::rotate(members.begin(), members.begin() + start, members.end());
      }
      for (auto node_parent : {binary_tree_parent, second_tree_parent}) {
        if (node_parent == second_tree_parent && groups.nodes.size() == 1) continue;
        auto tree = member_parents(rotated, p, node_parent);
        if (std::find(trees.begin(), trees.end(), tree) == trees.end()) trees.push_back(std::move(tree));
      }
    }
    const double per_tree = bytes / static_cast<double>(trees.size());
    std::vector<PipelineEdge> edges;
    for (const auto& parent : trees) add_tree_edges(parent, true, true, edges);
    // Reduce up and broadcast down, pipelined: chunk k is broadcast as soon as it reaches the
    // root, so K chunks take 2d + K − 1 steps (+1 for a smaller last one).
    add_pipeline(schedule, "tree fill", "tree reduce+broadcast", edges, per_tree, spec.chunk_bytes);
    return schedule;
  }
  // broadcast / reduce: one binary tree over the members in node order, rooted at the root.
  std::vector<std::int32_t> order = groups.flattened();
  std::rotate(order.begin(), std::find(order.begin(), order.end(), spec.root), order.end());
  std::vector<std::int32_t> parent(static_cast<std::size_t>(p), -1);
  for (std::int32_t i = 0; i < p; ++i) {
    const std::int32_t up = binary_tree_parent(i, p);
    if (up >= 0) parent[order[i]] = order[up];
  }
  const bool reduce = spec.kind == CollectiveKind::kReduce;
  std::vector<PipelineEdge> edges;
  add_tree_edges(parent, reduce, !reduce, edges);
  add_pipeline(schedule, reduce ? "tree reduce fill" : "tree broadcast fill",
               reduce ? "tree reduce" : "tree broadcast", edges, bytes, spec.chunk_bytes);
  return schedule;
}

}  // namespace collectives::detail
