// Names of IR enums, group families and structural validation of a Program.
#include "strategies/program/program.h"

#include <cmath>

#include <fmt/format.h>

#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace program {

std::int32_t peer_position(const SendRecvOp& p2p, std::int32_t me, std::int32_t size) {
  const std::int32_t position = me + p2p.peer_offset;
  if (p2p.ring) return ((position % size) + size) % size;
  return position >= 0 && position < size ? position : -1;
}

CollectiveOp make_collective(CollectiveKind kind, GroupFamilyId group, double bytes, DType dtype) {
  CollectiveOp op;
  op.kind = kind;
  op.group = group;
  op.bytes = std::llround(bytes);
  op.dtype = dtype;
  return op;
}
namespace {

template <typename Enum, std::size_t N>
std::optional<Enum> from_name(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

constexpr std::array<std::string_view, 4> kDTypeNames = {"bf16", "fp16", "fp32", "fp8"};
constexpr std::array<std::string_view, 4> kPhaseNames = {"forward", "backward", "recompute",
                                                         "optimizer"};
constexpr std::array<std::string_view, 10> kComputeKindNames = {
    "matmul", "attention", "norm", "elementwise", "softmax", "embedding", "loss", "optimizer", "memcpy", "reduction"};
constexpr std::array<std::string_view, 9> kCollectiveNames = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
    "all_to_all", "barrier",    "ps_push",        "ps_pull"};
constexpr std::array<std::string_view, 10> kAlgorithmNames = {
    "auto", "ring", "tree", "hd", "hier", "direct", "ps", "nvls", "collnet", "nvls_tree"};
constexpr std::array<std::string_view, kMemoryCategoryCount> kMemoryCategoryNames = {
    "parameters", "gradients", "master_weights", "optimizer_states",
    "activations", "comm_buffers", "gathered_parameters", "unsharded_gradients", "other"};

}  // namespace

std::size_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
    case DType::kFP16: return 2;
    case DType::kFP32: return 4;
    case DType::kFP8: return 1;
  }
  return 0;
}
std::string_view dtype_name(DType dtype) { return kDTypeNames[static_cast<std::size_t>(dtype)]; }
std::optional<DType> dtype_from_name(std::string_view name) {
  return from_name<DType>(kDTypeNames, name);
}
std::string_view phase_name(Phase phase) { return kPhaseNames[static_cast<std::size_t>(phase)]; }
std::string_view compute_kind_name(ComputeKind kind) {
  return kComputeKindNames[static_cast<std::size_t>(kind)];
}
std::string_view collective_name(CollectiveKind kind) {
  return kCollectiveNames[static_cast<std::size_t>(kind)];
}
std::string_view algorithm_name(Algorithm algorithm) {
  return kAlgorithmNames[static_cast<std::size_t>(algorithm)];
}
std::optional<Algorithm> algorithm_from_name(std::string_view name) {
  return from_name<Algorithm>(kAlgorithmNames, name);
}
std::string_view memory_category_name(MemoryCategory category) {
  return kMemoryCategoryNames[static_cast<std::size_t>(category)];
}

Shape Shape::of(std::initializer_list<std::int64_t> values) {
  if (values.size() > 5) throw std::invalid_argument("program::Shape holds at most 5 dims");
  Shape shape;
  for (std::int64_t value : values) shape.dims[shape.rank++] = value;
  return shape;
}

std::optional<GroupFamilyId> Program::find_family(std::string_view name) const {
  for (std::size_t i = 0; i < group_families.size(); ++i) {
    if (group_families[i].name == name) return static_cast<GroupFamilyId>(i);
  }
  return std::nullopt;
}

GroupFamily make_group_family(std::string name, std::int32_t world_size,
                              std::vector<std::vector<std::int32_t>> instances) {
  GroupFamily family;
  family.name = std::move(name);
  family.instance_of_rank.assign(world_size, -1);
  family.index_in_instance.assign(world_size, -1);
  for (std::size_t i = 0; i < instances.size(); ++i) {
    for (std::size_t j = 0; j < instances[i].size(); ++j) {
      const std::int32_t rank = instances[i][j];
      if (rank < 0 || rank >= world_size) {
        throw std::invalid_argument(fmt::format("group {}: rank {} out of range", family.name, rank));
      }
      if (family.instance_of_rank[rank] != -1) {
        throw std::invalid_argument(
            fmt::format("group {}: rank {} is in two instances", family.name, rank));
      }
      family.instance_of_rank[rank] = static_cast<std::int32_t>(i);
      family.index_in_instance[rank] = static_cast<std::int32_t>(j);
    }
  }
  family.instances = std::move(instances);
  return family;
}

std::vector<std::string> validate(const Program& program) {
  std::vector<std::string> problems;
  if (program.world_size <= 0) problems.push_back("world size must be positive");
  if (static_cast<std::int32_t>(program.ranks.size()) != program.world_size) {
    problems.push_back(fmt::format("{} rank programs for world size {}", program.ranks.size(),
                                   program.world_size));
    return problems;
  }
  if (static_cast<std::int32_t>(program.placement.size()) != program.world_size) {
    problems.push_back("placement must name one endpoint per rank");
  }
  // What a rank program issues to each group family: the sequence of (kind, bytes). Ranks
  // share programs, so each distinct program is checked and summarised once.
  using Signature = std::vector<std::tuple<CollectiveKind, std::int64_t>>;
  struct Summary {
    std::map<GroupFamilyId, Signature> collectives;
    std::set<GroupFamilyId> groups;  // every family its ops name
  };
  std::map<const RankProgram*, Summary> summaries;
  for (std::int32_t rank = 0; rank < program.world_size; ++rank) {
    const RankProgram* rank_program = program.ranks[rank].get();
    if (rank_program == nullptr) {
      problems.push_back(fmt::format("rank {} has no program", rank));
      continue;
    }
    const auto [it, inserted] = summaries.try_emplace(rank_program);
    auto& summary = it->second;  // a lambda below refers to it: clang 14 cannot capture a binding
    if (inserted) {
      const auto& ops = rank_program->ops;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const Op& op = ops[i];
        if (op.stream >= program.streams.size()) {
          problems.push_back(fmt::format("rank {} op {} ({}): unknown stream", rank, i, op.name));
        }
        for (OpIndex dep : op.deps) {
          if (dep >= i) {
            problems.push_back(fmt::format("rank {} op {} ({}): dependency {} is not an earlier op",
                                           rank, i, op.name, dep));
          }
        }
        auto uses = [&](GroupFamilyId family_id) {
          if (family_id >= program.group_families.size()) {
            problems.push_back(fmt::format("rank {} op {} ({}): unknown group", rank, i, op.name));
            return false;
          }
          summary.groups.insert(family_id);
          return true;
        };
        if (const auto* collective = std::get_if<CollectiveOp>(&op.body)) {
          if (uses(collective->group)) {
            summary.collectives[collective->group].emplace_back(collective->kind, collective->bytes);
          }
        } else if (const auto* p2p = std::get_if<SendRecvOp>(&op.body)) {
          uses(p2p->group);
        }
      }
    }
    for (GroupFamilyId family_id : summary.groups) {
      if (program.family(family_id).instance_of_rank[rank] < 0) {
        problems.push_back(fmt::format("rank {}: its program uses {} groups but the rank is in none", rank,
                                       program.family(family_id).name));
      }
    }
  }
  // Every member of a group instance must issue the same collectives to it.
  auto signature = [&](std::int32_t rank, GroupFamilyId family_id) -> const Signature* {
    const auto it = summaries.find(program.ranks[rank].get());
    if (it == summaries.end()) return nullptr;
    const auto found = it->second.collectives.find(family_id);
    return found == it->second.collectives.end() ? nullptr : &found->second;
  };
  for (GroupFamilyId family_id = 0; family_id < program.group_families.size(); ++family_id) {
    const GroupFamily& family = program.family(family_id);
    for (std::size_t instance = 0; instance < family.instances.size(); ++instance) {
      const auto& members = family.instances[instance];
      if (members.empty()) continue;
      const Signature* reference = signature(members.front(), family_id);
      for (std::int32_t member : members) {
        const Signature* other = signature(member, family_id);
        const bool same = other == reference || (other && reference && *other == *reference);
        if (!same) {
          problems.push_back(fmt::format("{}[{}]: rank {} issues a different sequence of "
                                         "collectives than rank {}",
                                         family.name, instance, member, members.front()));
        }
      }
    }
  }
  return problems;
}

}  // namespace program
