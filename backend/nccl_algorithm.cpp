// NCCL_ALGO from the algorithms a Program fixes (see nccl_algorithm.h).
#include "backend/nccl_algorithm.h"

#include <fmt/format.h>

#include <map>

#include "backend/executor.h"

namespace backend {
namespace {

// NCCL's name of a collective function in NCCL_ALGO; none for those that take no algorithm.
std::optional<std::string_view> nccl_function(program::CollectiveKind kind) {
  switch (kind) {
    case program::CollectiveKind::kAllReduce: return "allreduce";
    case program::CollectiveKind::kAllGather: return "allgather";
    case program::CollectiveKind::kReduceScatter: return "reducescatter";
    case program::CollectiveKind::kBroadcast: return "broadcast";
    case program::CollectiveKind::kReduce: return "reduce";
    default: return std::nullopt;  // all-to-all and barriers: point-to-point in NCCL
  }
}

// NCCL's name of `algorithm` for `kind`, or why NCCL cannot run it.
std::string nccl_name(program::Algorithm algorithm, program::CollectiveKind kind, std::string& why_not) {
  if (algorithm == program::Algorithm::kRing) return "ring";
  if (algorithm == program::Algorithm::kTree && kind == program::CollectiveKind::kAllReduce) return "tree";
  if (algorithm == program::Algorithm::kNvls && kind == program::CollectiveKind::kAllReduce) return "nvls";
  if (algorithm == program::Algorithm::kCollNet && kind == program::CollectiveKind::kAllReduce) return "collnetdirect";
  if (algorithm == program::Algorithm::kNvlsTree && kind == program::CollectiveKind::kAllReduce)
    return "nvlstree";
  why_not =
      algorithm == program::Algorithm::kTree || algorithm == program::Algorithm::kNvls ||
              algorithm == program::Algorithm::kCollNet ||
              algorithm == program::Algorithm::kNvlsTree
          ? fmt::format("NCCL runs {} for all-reduce only", program::algorithm_name(algorithm))
          : fmt::format("NCCL has no {} algorithm", program::algorithm_name(algorithm));
  return "";
}

}  // namespace

std::optional<std::string> nccl_algo_setting(
    const program::Program& program,
    const std::function<program::Algorithm(const program::CollectiveOp&, const std::string& family)>& algorithm) {
  std::map<std::string_view, std::pair<std::string, std::string>> chosen;  // function → (NCCL name, op fixing it)
  for (const auto& rank : program.ranks) {
    for (const program::Op& op : rank->ops) {
      const auto* collective = std::get_if<program::CollectiveOp>(&op.body);
      if (collective == nullptr) continue;
      const program::Algorithm fixed = algorithm(*collective, program.family(collective->group).name);
      if (fixed == program::Algorithm::kAuto) continue;
      const auto function = nccl_function(collective->kind);
      if (!function) {
        if (fixed == program::Algorithm::kDirect || collective->kind == program::CollectiveKind::kBarrier) continue;
        throw ExecutionError(fmt::format("op '{}': NCCL runs {} only one way; the scenario fixes {}: drop that "
                                         "setting for --backend nccl, or run --backend mpi with collectives = \"dtsim\"",
                                         op.name, program::collective_name(collective->kind),
                                         program::algorithm_name(fixed)));
      }
      std::string why_not;
      const std::string name = nccl_name(fixed, collective->kind, why_not);
      if (name.empty()) {
        throw ExecutionError(fmt::format("op '{}': the scenario fixes {} for {}, but {}: choose ring{} for --backend "
                                         "nccl, or run it with --backend mpi and [backend] collectives = \"dtsim\"",
                                         op.name, program::algorithm_name(fixed),
                                         program::collective_name(collective->kind), why_not,
                                         collective->kind == program::CollectiveKind::kAllReduce ? " or tree" : ""));
      }
      const auto [entry, inserted] = chosen.try_emplace(*function, name, op.name);
      if (!inserted && entry->second.first != name) {
        throw ExecutionError(fmt::format(
            "ops '{}' and '{}' fix {} and {} for {}: NCCL takes one algorithm per collective function and process "
            "(NCCL_ALGO); give both groups the same one for --backend nccl",
            entry->second.second, op.name, entry->second.first, name, program::collective_name(collective->kind)));
      }
    }
  }
  if (chosen.empty()) return std::nullopt;
  std::string setting;
  for (const auto& [function, entry] : chosen) setting += fmt::format("{}{}:{}", setting.empty() ? "" : ";", function, entry.first);
  return setting;
}

}  // namespace backend
