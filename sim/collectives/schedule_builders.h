// Internal to sim/collectives: the per-algorithm schedule builders behind build_schedule, and
// the grouping of members by node that makes them topology-aware.
#pragma once

#include <vector>

#include "sim/collectives/schedule.h"

namespace collectives::detail {

// Members grouped by node: nodes in order of first appearance, members by GPU index.
struct NodeGroups {
  std::vector<std::vector<std::int32_t>> nodes;
  bool uniform() const;                       // every node holds the same number of members
  std::vector<std::int32_t> flattened() const;  // node-major member order
};
NodeGroups group_by_node(const CollectiveSpec& spec);

// The message a barrier moves: one fp32 element.
inline constexpr std::int64_t kBarrierBytes = 4;
std::int64_t effective_bytes(const CollectiveSpec& spec);
// ⌈bytes / chunk_bytes⌉, at least 1.
std::int64_t chunk_count(double bytes, std::int64_t chunk_bytes);

Schedule ring_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule tree_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule halving_doubling_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule hierarchical_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule direct_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule parameter_server_schedule(const CollectiveSpec& spec);

// Parent of `rank` in NCCL's binary tree over n ranks rooted at 0 (leaves and inner nodes
// alternate; -1 for the root); and the second tree of the double binary tree (mirrored for
// even n, shifted by one for odd n), so that every rank is a leaf in at least one tree.
std::int32_t binary_tree_parent(std::int32_t rank, std::int32_t n);
std::int32_t second_tree_parent(std::int32_t rank, std::int32_t n);
// Depth of the tree given by `parent` over n ranks (0 for a single rank).
std::int32_t tree_depth(const std::vector<std::int32_t>& parent);

}  // namespace collectives::detail
