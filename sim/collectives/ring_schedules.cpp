// Ring schedules: all-reduce, all-gather, reduce-scatter, barrier, and the pipelined chain for
// broadcast and reduce (see schedule.h).
#include <algorithm>
#include <functional>
#include <numeric>
#include <tuple>

#include "sim/collectives/schedule_builders.h"

namespace collectives::detail {
namespace {

using program::CollectiveKind;

// Arc-disjoint Hamiltonian cycles of the complete directed graph on n vertices, each starting
// at vertex 0: n − 1 of them (every arc used once) whenever they exist, i.e. n ∉ {4, 6}
// (Tillson, "A Hamiltonian decomposition of K*_2m, 2m ≥ 8", J. Combin. Theory B, 1980), else as
// many as there are. A depth-first search, backtracking across cycles; 151 steps for n = 8,
// bounded for larger meshes (fewer cycles then). On a full mesh these are rings whose hops use
// every GPU–GPU link once, as RCCL's rings on MI300X spread its channels over all seven xGMI
// links of each GPU (ROCm/rccl, src/graph/rome_models.cc, the 8-GPU, 7-link models).
std::vector<std::vector<std::int32_t>> disjoint_hamiltonian_cycles(std::int32_t n) {
  constexpr std::int64_t kStepBudget = 1'000'000;
  const auto size = static_cast<std::size_t>(n);
  std::vector<std::uint8_t> used(size * size, 0);  // arc u → v taken
  std::vector<std::uint8_t> visited(size, 0);      // by the cycle being built
  std::vector<std::vector<std::int32_t>> cycles;
  std::int64_t steps = 0;
  std::size_t target = 0;
  // Extends the last cycle of `cycles` over unused arcs; when it closes, starts the next one
  // until `target` cycles stand. False when no completion exists (or the budget ran out).
  const std::function<bool()> extend = [&]() -> bool {
    if (++steps > kStepBudget) return false;
    std::vector<std::int32_t>& path = cycles.back();
    const auto last = static_cast<std::size_t>(path.back());
    if (path.size() == size) {
      if (used[last * size] != 0) return false;
      used[last * size] = 1;  // the closing arc
      if (cycles.size() == target) return true;
      const std::vector<std::uint8_t> visited_here = visited;
      std::fill(visited.begin(), visited.end(), 0);
      visited[0] = 1;
      cycles.push_back({0});
      if (extend()) return true;
      cycles.pop_back();
      visited = visited_here;
      used[last * size] = 0;
      return false;
    }
    for (std::int32_t next = 1; next < n; ++next) {
      const auto v = static_cast<std::size_t>(next);
      if (visited[v] != 0 || used[last * size + v] != 0) continue;
      visited[v] = 1;
      used[last * size + v] = 1;
      cycles.back().push_back(next);
      if (extend()) return true;
      cycles.back().pop_back();
      used[last * size + v] = 0;
      visited[v] = 0;
    }
    return false;
  };
  for (target = static_cast<std::size_t>(std::max(0, n - 1)); target > 0 && n >= 2; --target) {
    std::fill(used.begin(), used.end(), 0);
    std::fill(visited.begin(), visited.end(), 0);
    visited[0] = 1;
    cycles.assign(1, {0});
    steps = 0;
    if (extend()) return cycles;
  }
  return {};
}

// For each of `channels` rings entering a full-mesh node at member ⌊c·n/C⌋: the cycle it goes
// round inside the node. It leaves the node from the member before its entry on that cycle, so
// cycles are chosen — least used first, then in order — to give every ring its own exit member
// while it can (one NIC per ring, both ways), and rings on different cycles share no link.
std::vector<std::size_t> mesh_cycle_per_ring(const std::vector<std::vector<std::int32_t>>& cycles, std::size_t n,
                                             std::int32_t channels) {
  std::vector<std::size_t> choice;
  std::vector<std::int32_t> uses(cycles.size(), 0);
  std::vector<std::uint8_t> exit_taken(n, 0);
  for (std::int32_t c = 0; c < channels; ++c) {
    const auto entry = static_cast<std::int32_t>(static_cast<std::size_t>(c) * n / static_cast<std::size_t>(channels));
    std::size_t best = 0;
    auto rank = [&](std::size_t k) {  // lower is better: a free exit, then fewer uses, then k
      const auto& cycle = cycles[k];
      const auto at = static_cast<std::size_t>(std::find(cycle.begin(), cycle.end(), entry) - cycle.begin());
      const auto exit = static_cast<std::size_t>(cycle[(at + cycle.size() - 1) % cycle.size()]);
      return std::tuple(exit_taken[exit], uses[k], k, exit);
    };
    for (std::size_t k = 1; k < cycles.size(); ++k) {
      if (rank(k) < rank(best)) best = k;
    }
    ++uses[best];
    exit_taken[std::get<3>(rank(best))] = 1;
    choice.push_back(best);
  }
  return choice;
}

// Ring c visits the nodes in order and enters each node at member ⌊c·n/C⌋ of its n, so the C
// rings leave and enter every node through GPUs spread evenly over the node — one per NIC when
// C is the NIC count, also when GPUs share NICs. Rotations of a single node's cycle are the
// same ring, and duplicates are dropped. Inside a full-mesh node a ring goes round one of the
// node's disjoint Hamiltonian cycles from its entry (mesh_cycle_per_ring), so that the rings'
// hops spread over all of the node's links; a single-node group on a full mesh runs one ring
// per cycle.
std::vector<std::vector<std::int32_t>> build_rings(const CollectiveSpec& spec, const NodeGroups& groups) {
  std::vector<std::vector<std::int32_t>> rings;
  const bool single_node = groups.nodes.size() == 1;
  const std::size_t per_node = groups.nodes.front().size();
  std::vector<std::vector<std::int32_t>> cycles;  // over a node's member positions
  if (spec.full_mesh && groups.uniform()) cycles = disjoint_hamiltonian_cycles(static_cast<std::int32_t>(per_node));
  const bool mesh = !cycles.empty();
  const std::int32_t channels =
      single_node ? (mesh ? static_cast<std::int32_t>(cycles.size()) : 1) : std::max(1, spec.channels);
  std::vector<std::size_t> cycle_of;  // a single node: ring c is cycle c
  if (mesh && single_node) {
    cycle_of.resize(cycles.size());
    std::iota(cycle_of.begin(), cycle_of.end(), std::size_t{0});
  } else if (mesh) {
    cycle_of = mesh_cycle_per_ring(cycles, per_node, channels);
  }
  for (std::int32_t c = 0; c < channels; ++c) {
    std::vector<std::int32_t> ring;
    ring.reserve(static_cast<std::size_t>(spec.members));
    for (const auto& members : groups.nodes) {
      const std::size_t start = static_cast<std::size_t>(c) * members.size() / static_cast<std::size_t>(channels);
      if (mesh) {
        const auto& cycle = cycles[cycle_of[static_cast<std::size_t>(c)]];
        const auto from = std::find(cycle.begin(), cycle.end(), static_cast<std::int32_t>(start)) - cycle.begin();
        for (std::size_t i = 0; i < cycle.size(); ++i) {
          ring.push_back(members[static_cast<std::size_t>(cycle[(static_cast<std::size_t>(from) + i) % cycle.size()])]);
        }
      } else {
        ring.insert(ring.end(), members.begin() + static_cast<std::ptrdiff_t>(start), members.end());
        ring.insert(ring.end(), members.begin(), members.begin() + static_cast<std::ptrdiff_t>(start));
      }
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
      // A pipeline of K chunks down a chain of P members: P − 1 + K − 1 steps (+1 for a
      // smaller last one).
      const bool reduce = spec.kind == CollectiveKind::kReduce;
      add_pipeline(schedule, reduce ? "chain reduce fill" : "chain broadcast fill",
                   reduce ? "chain reduce" : "chain broadcast",
                   chain_edges(rings, spec.root, reduce), per_ring, spec.chunk_bytes);
      break;
    }
    default: break;
  }
  return schedule;
}

}  // namespace collectives::detail
