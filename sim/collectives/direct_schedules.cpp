// Direct schedules (everyone to everyone in one step; all-to-all as pairwise exchange or every
// peer at once), NVLink SHARP's in-switch all-reduce and parameter-server push/pull (see
// schedule.h).
#include "sim/collectives/schedule_builders.h"

namespace collectives::detail {
namespace {

using program::CollectiveKind;

std::vector<Transfer> all_pairs(std::int32_t members) {
  std::vector<Transfer> transfers;
  for (std::int32_t i = 0; i < members; ++i) {
    for (std::int32_t j = 0; j < members; ++j) {
      if (i != j) transfers.push_back({i, j});
    }
  }
  return transfers;
}

}  // namespace

Schedule nvls_schedule(const CollectiveSpec& spec) {
  Schedule schedule;
  const std::int32_t p = spec.members;
  if (p < 2) return schedule;
  const double m = static_cast<double>(effective_bytes(spec));
  schedule.phases.push_back({"nvls in-switch all-reduce", 1, (p + 1) * m / (static_cast<double>(p) * (p - 1)), all_pairs(p)});
  return schedule;
}

Schedule direct_schedule(const CollectiveSpec& spec, const NodeGroups& groups) {
  Schedule schedule;
  const std::int32_t p = spec.members;
  if (p < 2) return schedule;
  const double m = static_cast<double>(spec.bytes);
  switch (spec.kind) {
    case CollectiveKind::kAllReduce:
      schedule.phases.push_back({"direct reduce-scatter", 1, m / p, all_pairs(p)});
      schedule.phases.push_back({"direct all-gather", 1, m / p, all_pairs(p)});
      break;
    case CollectiveKind::kReduceScatter:
      schedule.phases.push_back({"direct reduce-scatter", 1, m / p, all_pairs(p)});
      break;
    case CollectiveKind::kAllGather:
      schedule.phases.push_back({"direct all-gather", 1, m / p, all_pairs(p)});
      break;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce: {
      std::vector<Transfer> transfers;
      for (std::int32_t j = 0; j < p; ++j) {
        if (j == spec.root) continue;
        transfers.push_back(spec.kind == CollectiveKind::kBroadcast ? Transfer{spec.root, j}
                                                                    : Transfer{j, spec.root});
      }
      schedule.phases.push_back({"direct", 1, m, std::move(transfers)});
      break;
    }
    case CollectiveKind::kAllToAll: {
      if (spec.all_peers_at_once) {
        schedule.phases.push_back({"every peer at once", 1, m / p, all_pairs(p)});
        break;
      }
      // Pairwise exchange in node-major order: step k pairs i with i + k.
      const std::vector<std::int32_t> order = groups.flattened();
      for (std::int32_t k = 1; k < p; ++k) {
        std::vector<Transfer> shift;
        for (std::int32_t i = 0; i < p; ++i) shift.push_back({order[i], order[(i + k) % p]});
        schedule.phases.push_back({"pairwise exchange", 1, m / p, std::move(shift)});
      }
      break;
    }
    default: break;
  }
  return schedule;
}

Schedule parameter_server_schedule(const CollectiveSpec& spec) {
  const std::int32_t servers = spec.ps_servers;
  const std::int32_t workers = spec.members - servers;
  Schedule schedule;
  Phase phase;
  const bool push = spec.kind == CollectiveKind::kPsPush;
  phase.name = push ? "push" : "pull";
  phase.bytes_per_transfer = static_cast<double>(spec.bytes) / servers;
  for (std::int32_t w = 0; w < workers; ++w) {
    for (std::int32_t s = 0; s < servers; ++s) {
      phase.transfers.push_back(push ? Transfer{w, workers + s} : Transfer{workers + s, w});
    }
  }
  schedule.phases.push_back(std::move(phase));
  return schedule;
}

}  // namespace collectives::detail
