// Finding replica symmetry in a Program, and its classes of equal replicas (see
// replica_symmetry.h).
#include "sim/run/replica_symmetry.h"

#include <fmt/format.h>

#include <boost/container_hash/hash.hpp>

#include <algorithm>
#include <unordered_map>
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

// Why replica `replica`'s ranks cannot copy those of replica `leader`, or nothing if they can.
std::optional<std::string> why_apart(const program::Program& program, const topology::Cluster& cluster,
                                     const std::vector<double>& compute_slowdown, const program::GroupFamily& family,
                                     std::int32_t leader, std::int32_t replica) {
  for (const auto& members : family.instances) {
    const std::int32_t first = members[leader], rank = members[replica];
    if (program.ranks[rank] != program.ranks[first]) {
      return fmt::format("ranks {} and {} run different programs", first, rank);
    }
    if (cluster.is_gpu(program.placement[rank]) != cluster.is_gpu(program.placement[first])) {
      return fmt::format("ranks {} and {} run on different kinds of endpoint", first, rank);
    }
    if (!compute_slowdown.empty() && compute_slowdown[rank] != compute_slowdown[first]) {
      return fmt::format("ranks {} and {} compute at different speeds (a straggler)", first, rank);
    }
  }
  return std::nullopt;
}

// A hash of what why_apart compares, so that replicas are matched against the few leaders
// that may be equal rather than all of them.
std::size_t replica_signature(const program::Program& program, const topology::Cluster& cluster,
                              const std::vector<double>& compute_slowdown, const program::GroupFamily& family,
                              std::int32_t replica) {
  std::size_t hash = 0;
  for (const auto& members : family.instances) {
    const std::int32_t rank = members[replica];
    boost::hash_combine(hash, program.ranks[rank].get());
    boost::hash_combine(hash, cluster.is_gpu(program.placement[rank]));
    if (!compute_slowdown.empty()) boost::hash_combine(hash, compute_slowdown[rank]);
  }
  return hash;
}

// The replicas defined by `family` in classes, or why they cannot be: the reason for the first
// broken condition.
std::optional<std::string> check_family(const program::Program& program, const topology::Cluster& cluster,
                                        const std::vector<double>& compute_slowdown, const std::vector<bool>& used,
                                        program::GroupFamilyId family_id, ReplicaSymmetry& symmetry) {
  const program::GroupFamily& family = program.family(family_id);
  const auto replicas = static_cast<std::int32_t>(family.instances.front().size());
  symmetry.family = family_id;
  symmetry.replicas = replicas;
  symmetry.leader.assign(static_cast<std::size_t>(replicas), 0);
  symmetry.followers.assign(static_cast<std::size_t>(replicas), {});
  symmetry.replica_of.assign(program.world_size, 0);
  for (std::int32_t rank = 0; rank < program.world_size; ++rank) symmetry.replica_of[rank] = family.index_in_instance[rank];
  std::unordered_map<std::size_t, std::vector<std::int32_t>> leaders_by_signature;
  for (std::int32_t replica = 0; replica < replicas; ++replica) {
    auto& leaders = leaders_by_signature[replica_signature(program, cluster, compute_slowdown, family, replica)];
    const auto same = std::find_if(leaders.begin(), leaders.end(), [&](std::int32_t leader) {
      return !why_apart(program, cluster, compute_slowdown, family, leader, replica);
    });
    if (same != leaders.end()) {
      symmetry.leader[replica] = *same;
      symmetry.followers[*same].push_back(replica);
      continue;
    }
    leaders.push_back(replica);
    symmetry.leader[replica] = replica;
  }
  if (symmetry.classes() == replicas) {
    return "every replica differs (replica 1: " + *why_apart(program, cluster, compute_slowdown, family, 0, 1) + ")";
  }
  // What sets each further class apart from the first, named by all its replicas.
  for (std::int32_t leader = 1; leader < replicas; ++leader) {
    if (symmetry.leader[leader] != leader) continue;
    std::vector<std::int32_t> members = {leader};
    members.insert(members.end(), symmetry.followers[leader].begin(), symmetry.followers[leader].end());
    symmetry.differences.push_back(fmt::format("{}: {}", replica_list(members),
                                               *why_apart(program, cluster, compute_slowdown, family, 0, leader)));
  }
  symmetry.find_representatives(program);
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
          return fmt::format("one {} group spans several {} replicas", other.name, family.name);
        }
        if (other.instance_of_rank[symmetry.representative[member]] != instance_of_first) {
          return fmt::format(
              "one {} group of one {} replica does not mirror one of its class's leader",
              other.name, family.name);
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

std::int32_t ReplicaSymmetry::mirror(const program::Program& program, std::int32_t rank,
                                     std::int32_t replica) const {
  const program::GroupFamily& replicas_family = program.family(family);
  return replicas_family.instances[replicas_family.instance_of_rank[rank]][replica];
}

std::int32_t ReplicaSymmetry::classes() const {
  std::int32_t count = 0;
  for (std::int32_t replica = 0; replica < replicas; ++replica) count += leader[replica] == replica ? 1 : 0;
  return count;
}

void ReplicaSymmetry::split(const program::Program& program, const ReplicaSplit& split) {
  // One pass over each old class: the replicas leaving it are marked first.
  std::vector<std::uint8_t> leaving(static_cast<std::size_t>(replicas), 0);
  std::vector<std::int32_t> old_leaders;
  for (const auto& group : split.groups) {
    old_leaders.push_back(leader[group.front()]);
    for (std::int32_t replica : group) leaving[replica] = 1;
  }
  std::sort(old_leaders.begin(), old_leaders.end());
  old_leaders.erase(std::unique(old_leaders.begin(), old_leaders.end()), old_leaders.end());
  for (std::int32_t old : old_leaders) std::erase_if(followers[old], [&](std::int32_t replica) { return leaving[replica] != 0; });
  for (const auto& group : split.groups) {
    for (std::int32_t replica : group) leader[replica] = group.front();
    followers[group.front()].assign(group.begin() + 1, group.end());
    differences.push_back(fmt::format("{}: {}", replica_list(group), split.why));
  }
  find_representatives(program);
}

void ReplicaSymmetry::find_representatives(const program::Program& program) {
  representative.resize(replica_of.size());
  for (std::size_t rank = 0; rank < replica_of.size(); ++rank) {
    representative[rank] = mirror(program, static_cast<std::int32_t>(rank), leader[replica_of[rank]]);
  }
}

std::string ReplicaSymmetry::describe(const program::Program& program) const {
  const std::string replicas_of = fmt::format("{} replicas ({} groups)", replicas, program.family(family).name);
  if (classes() == 1) return replicas_of + " simulated as one";
  constexpr std::size_t kShown = 3;
  std::string why;
  for (std::size_t i = 0; i < std::min(differences.size(), kShown); ++i) why += (i > 0 ? "; " : "") + differences[i];
  if (differences.size() > kShown) why += fmt::format("; and {} more", differences.size() - kShown);
  return fmt::format("{} simulated as {} classes, the others copied: {}", replicas_of, classes(), why);
}

std::string replica_list(const std::vector<std::int32_t>& replicas) {
  constexpr std::size_t kShown = 3;
  if (replicas.size() == 1) return fmt::format("replica {}", replicas.front());
  std::string list = "replicas ";
  const std::size_t shown = replicas.size() <= kShown + 1 ? replicas.size() - 1 : kShown;
  for (std::size_t i = 0; i < shown; ++i) list += fmt::format("{}{}", i > 0 ? ", " : "", replicas[i]);
  if (shown + 1 == replicas.size()) return list + fmt::format(" and {}", replicas.back());
  return list + fmt::format(" and {} more", replicas.size() - shown);
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
  std::optional<ReplicaSymmetry> fewest_simulated;  // classes / replicas: the share of ranks simulated
  for (program::GroupFamilyId candidate : candidates) {
    ReplicaSymmetry symmetry;
    const auto reason = check_family(program, cluster, compute_slowdown, used, candidate, symmetry);
    if (reason) {
      explain(fmt::format("{} groups: {}", program.family(candidate).name, *reason));
    } else if (!fewest_simulated || static_cast<std::int64_t>(symmetry.classes()) * fewest_simulated->replicas <
                                        static_cast<std::int64_t>(fewest_simulated->classes()) * symmetry.replicas) {
      fewest_simulated = std::move(symmetry);
    }
  }
  return fewest_simulated;
}

}  // namespace sim
