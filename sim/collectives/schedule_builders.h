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

Schedule ring_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule tree_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule halving_doubling_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule hierarchical_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule nvls_tree_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule collnet_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule direct_schedule(const CollectiveSpec& spec, const NodeGroups& groups);
Schedule nvls_schedule(const CollectiveSpec& spec);
Schedule parameter_server_schedule(const CollectiveSpec& spec);

// An edge of a pipeline and the step at which the first chunk crosses it (its wavefront).
struct PipelineEdge {
  Transfer transfer;
  std::int32_t wave = 0;
};
// `bytes` pipelined over `edges` in chunks of `chunk_bytes`, the last one smaller, as NCCL's
// kernels loop over a buffer (one chunk when the message is no larger): the first chunk
// crosses the edges wave by wave (one phase per wave, only that wave's edges active), then the
// other K−1 full chunks move on every edge at once (one phase of K−1 steps), then the
// remainder, if any, as one more step. Every edge carries `bytes`, in D + K − 1 steps (+1 for a
// remainder). A few bytes more never take less time: splitting evenly into ⌈bytes / chunk⌉
// chunks did — one byte past a chunk halved the chunks and doubled the pipelining, 26 % faster.
void add_pipeline(Schedule& schedule, std::string_view fill_name, std::string_view steady_name,
                  const std::vector<PipelineEdge>& edges, double bytes, std::int64_t chunk_bytes);

// Parent of `rank` in NCCL's binary tree over n ranks rooted at 0 (leaves and inner nodes
// alternate; -1 for the root); and the second tree of the double binary tree (mirrored for
// even n, shifted by one for odd n), so that every rank is a leaf in at least one tree.
std::int32_t binary_tree_parent(std::int32_t rank, std::int32_t n);
std::int32_t second_tree_parent(std::int32_t rank, std::int32_t n);

}  // namespace collectives::detail
