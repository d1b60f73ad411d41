// Finding replica symmetry in a Program (see replica_symmetry.h).
#include "sim/run/replica_symmetry.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>
#include <variant>

namespace sim {
namespace {

bool treats_members_alike(program::CollectiveKind kind) {
  using program::CollectiveKind;
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllGather ||
         kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kAllToAll ||
         kind == CollectiveKind::kBarrier;
}

std::vector<const program::RankProgram*> distinct_programs(const program::Program& program) {
  std::vector<const program::RankProgram*> distinct;  // in order of first use
  std::unordered_set<const program::RankProgram*> seen;
  for (const auto& rank_program : program.ranks) {
    if (seen.insert(rank_program.get()).second) distinct.push_back(rank_program.get());
  }
  return distinct;
}

// Replicas defined by `family`, or why they cannot be: the reason for the first broken
// condition.
std::optional<std::string> check_family(const program::Program& program, const topology::Cluster& cluster,
                                        const std::vector<double>& compute_slowdown, const std::vector<bool>& used,
                                        program::GroupFamilyId family_id, ReplicaSymmetry& symmetry) {
  const program::GroupFamily& family = program.family(family_id);
  const auto replicas = static_cast<std::int32_t>(family.instances.front().size());
  symmetry.family = family_id;
  symmetry.replicas = replicas;
  symmetry.representative.assign(static_cast<std::size_t>(program.world_size), 0);
  symmetry.replica_of.assign(static_cast<std::size_t>(program.world_size), 0);
  for (std::int32_t rank = 0; rank < program.world_size; ++rank) {
    symmetry.representative[rank] = family.instances[family.instance_of_rank[rank]].front();
    symmetry.replica_of[rank] = family.index_in_instance[rank];
  }
  for (std::int32_t rank = 0; rank < program.world_size; ++rank) {
    const std::int32_t representative = symmetry.representative[rank];
    if (program.ranks[rank] != program.ranks[representative]) {
      return fmt::format("ranks {} and {} run different programs", representative, rank);
    }
    if (cluster.is_gpu(program.placement[rank]) != cluster.is_gpu(program.placement[representative])) {
      return fmt::format("ranks {} and {} run on different kinds of endpoint", representative, rank);
    }
    if (!compute_slowdown.empty() && compute_slowdown[rank] != compute_slowdown[representative]) {
      return fmt::format("ranks {} and {} compute at different speeds (a straggler)", representative, rank);
    }
  }
  for (const program::RankProgram* rank_program : distinct_programs(program)) {
    for (const program::Op& op : rank_program->ops) {
      if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
        if (collective->group == family_id && !treats_members_alike(collective->kind)) {
          return fmt::format("op '{}' on the {} groups gives its members different roles", op.name, family.name);
        }
      } else if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) {
        if (p2p->group == family_id) return fmt::format("op '{}' sends between {} replicas", op.name, family.name);
      }
    }
  }
  for (std::size_t g = 0; g < program.group_families.size(); ++g) {
    if (g == family_id || !used[g]) continue;
    const program::GroupFamily& other = program.group_families[g];
    for (std::int32_t rank = 0; rank < program.world_size; ++rank) {
      const std::int32_t representative = symmetry.representative[rank];
      const std::int32_t instance = other.instance_of_rank[rank];
      if ((instance < 0) != (other.instance_of_rank[representative] < 0) ||
          (instance >= 0 && other.index_in_instance[rank] != other.index_in_instance[representative])) {
        return fmt::format("ranks {} and {} hold different places in the {} groups", representative, rank, other.name);
      }
    }
    for (const auto& members : other.instances) {
      const std::int32_t instance_of_first = other.instance_of_rank[symmetry.representative[members.front()]];
      for (std::int32_t member : members) {
        if (symmetry.replica_of[member] != symmetry.replica_of[members.front()]) {
          return fmt::format("a {} group spans several {} replicas", other.name, family.name);
        }
        if (other.instance_of_rank[symmetry.representative[member]] != instance_of_first) {
          return fmt::format("a {} group of one {} replica does not mirror one of the first", other.name, family.name);
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<bool> used_families(const program::Program& program) {
  std::vector<bool> used(program.group_families.size(), false);
  for (const program::RankProgram* rank_program : distinct_programs(program)) {
    for (const program::Op& op : rank_program->ops) {
      if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) used[collective->group] = true;
      if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) used[p2p->group] = true;
    }
  }
  return used;
}

std::int32_t ReplicaSymmetry::mirror(const program::Program& program, std::int32_t first,
                                     std::int32_t replica) const {
  const program::GroupFamily& replicas_family = program.family(family);
  return replicas_family.instances[replicas_family.instance_of_rank[first]][replica];
}

std::optional<ReplicaSymmetry> find_replica_symmetry(const program::Program& program,
                                                     const topology::Cluster& cluster,
                                                     const std::vector<double>& compute_slowdown,
                                                     std::string* why_not) {
  auto explain = [&](const std::string& reason) {
    if (why_not != nullptr) *why_not += (why_not->empty() ? "" : "; ") + reason;
  };
  // Candidates: families used by some op that cover every rank with equal instances of two or
  // more members, the most replicas first.
  const std::vector<bool> used = used_families(program);
  std::vector<program::GroupFamilyId> candidates;
  for (std::size_t g = 0; g < program.group_families.size(); ++g) {
    const program::GroupFamily& family = program.group_families[g];
    if (!used[g] || family.instances.empty() || family.instances.front().size() < 2) continue;
    const std::size_t size = family.instances.front().size();
    const bool equal = std::all_of(family.instances.begin(), family.instances.end(),
                                   [&](const auto& members) { return members.size() == size; });
    const bool covering = std::none_of(family.instance_of_rank.begin(), family.instance_of_rank.end(),
                                       [](std::int32_t instance) { return instance < 0; });
    if (equal && covering) candidates.push_back(static_cast<program::GroupFamilyId>(g));
  }
  std::stable_sort(candidates.begin(), candidates.end(), [&](auto a, auto b) {
    return program.family(a).instances.front().size() > program.family(b).instances.front().size();
  });
  if (candidates.empty()) explain("no group family holds one rank of every replica");
  for (program::GroupFamilyId candidate : candidates) {
    ReplicaSymmetry symmetry;
    const auto reason = check_family(program, cluster, compute_slowdown, used, candidate, symmetry);
    if (!reason) return symmetry;
    explain(fmt::format("{} groups: {}", program.family(candidate).name, *reason));
  }
  return std::nullopt;
}

}  // namespace sim
