// Ring schedules: all-reduce, all-gather, reduce-scatter, barrier, and the pipelined chain for
// broadcast and reduce (see schedule.h).
#include <algorithm>

#include "sim/collectives/schedule_builders.h"

namespace collectives::detail {
namespace {

using program::CollectiveKind;

// Ring c visits the nodes in order and enters each node at member ⌊c·n/C⌋ of its n, so the C
// rings leave and enter every node through GPUs spread evenly over the node — one per NIC when
// C is the NIC count, also when GPUs share NICs. Rotations of a single node's cycle are the
// same ring, and duplicates are dropped.
std::vector<std::vector<std::int32_t>> build_rings(const CollectiveSpec& spec, const NodeGroups& groups) {
  std::vector<std::vector<std::int32_t>> rings;
  const std::int32_t channels = groups.nodes.size() == 1 ? 1 : std::max(1, spec.channels);
  for (std::int32_t c = 0; c < channels; ++c) {
    std::vector<std::int32_t> ring;
    ring.reserve(static_cast<std::size_t>(spec.members));
    for (const auto& members : groups.nodes) {
      const auto start = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c) * members.size() /
                                                     static_cast<std::size_t>(channels));
      ring.insert(ring.end(), members.begin() + start, members.end());
      ring.insert(ring.end(), members.begin(), members.begin() + start);
    }
    if (std::find(rings.begin(), rings.end(), ring) == rings.end()) rings.push_back(std::move(ring));
  }
  return rings;
}

std::vector<Transfer> ring_edges(const std::vector<std::vector<std::int32_t>>& rings) {
  std::vector<Transfer> edges;
  for (const auto& ring : rings) {
    for (std::size_t i = 0; i < ring.size(); ++i) edges.push_back({ring[i], ring[(i + 1) % ring.size()]});
  }
  return edges;
}

// Chain from the root along each ring (towards the root for reduce). A broadcast's i-th hop
// is crossed at wave i; a reduction's hop nearest the root last.
std::vector<PipelineEdge> chain_edges(const std::vector<std::vector<std::int32_t>>& rings,
                                      std::int32_t root, bool towards_root) {
  std::vector<PipelineEdge> edges;
  for (auto ring : rings) {
    std::rotate(ring.begin(), std::find(ring.begin(), ring.end(), root), ring.end());
    const auto hops = static_cast<std::int32_t>(ring.size()) - 1;
    for (std::int32_t i = 0; i < hops; ++i) {
      if (towards_root) {
        edges.push_back({{ring[i + 1], ring[i]}, hops - 1 - i});
      } else {
        edges.push_back({{ring[i], ring[i + 1]}, i});
      }
    }
  }
  return edges;
}

}  // namespace

Schedule ring_schedule(const CollectiveSpec& spec, const NodeGroups& groups) {
  Schedule schedule;
  const std::int32_t p = spec.members;
  if (p < 2) return schedule;
  const auto rings = build_rings(spec, groups);
  const double per_ring = static_cast<double>(effective_bytes(spec)) / static_cast<double>(rings.size());
  switch (spec.kind) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kBarrier:
      schedule.phases.push_back({"reduce-scatter", p - 1, per_ring / p, ring_edges(rings)});
      schedule.phases.push_back({"all-gather", p - 1, per_ring / p, ring_edges(rings)});
      break;
    case CollectiveKind::kReduceScatter:
      schedule.phases.push_back({"reduce-scatter", p - 1, per_ring / p, ring_edges(rings)});
      break;
    case CollectiveKind::kAllGather:
      schedule.phases.push_back({"all-gather", p - 1, per_ring / p, ring_edges(rings)});
      break;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce: {
      // A pipeline of K chunks down a chain of P members: P − 1 + K − 1 steps.
      const std::int64_t chunks = chunk_count(per_ring, spec.chunk_bytes);
      const bool reduce = spec.kind == CollectiveKind::kReduce;
      add_pipeline(schedule, reduce ? "chain reduce fill" : "chain broadcast fill",
                   reduce ? "chain reduce" : "chain broadcast", chain_edges(rings, spec.root, reduce),
                   per_ring / static_cast<double>(chunks), chunks);
      break;
    }
    default: break;
  }
  return schedule;
}

}  // namespace collectives::detail
