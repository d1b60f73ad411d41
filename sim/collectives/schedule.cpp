// Ring, barrier and parameter-server schedules (see schedule.h for the algorithms).
#include "sim/collectives/schedule.h"

#include <fmt/format.h>

#include <algorithm>

namespace collectives {
namespace {

using program::Algorithm;
using program::CollectiveKind;

constexpr std::int64_t kBarrierBytes = 4;  // one fp32 element

// Every edge of every ring, all active in the same step.
std::vector<Transfer> ring_edges(const CollectiveSpec& spec) {
  std::vector<std::vector<std::int32_t>> rings = spec.rings;
  if (rings.empty()) {
    rings.emplace_back(static_cast<std::size_t>(spec.members));
    for (std::int32_t i = 0; i < spec.members; ++i) rings[0][i] = i;
  }
  std::vector<Transfer> edges;
  for (const auto& ring : rings) {
    if (static_cast<std::int32_t>(ring.size()) != spec.members) {
      throw UnsupportedCollective(fmt::format("a ring of {} members for a group of {}", ring.size(),
                                              spec.members));
    }
    for (std::size_t i = 0; i < ring.size(); ++i) {
      edges.push_back({ring[i], ring[(i + 1) % ring.size()]});
    }
  }
  return edges;
}

Schedule ring(const CollectiveSpec& spec) {
  Schedule schedule;
  schedule.algorithm = Algorithm::kRing;
  const std::int32_t p = spec.members;
  if (p < 2) return schedule;
  const std::int64_t bytes = spec.kind == CollectiveKind::kBarrier ? kBarrierBytes : spec.bytes;
  const std::size_t rings = std::max<std::size_t>(1, spec.rings.size());
  const double chunk = static_cast<double>(bytes) / (static_cast<double>(p) * static_cast<double>(rings));
  const bool reduce_scatter = spec.kind == CollectiveKind::kAllReduce ||
                              spec.kind == CollectiveKind::kReduceScatter ||
                              spec.kind == CollectiveKind::kBarrier;
  const bool all_gather = spec.kind == CollectiveKind::kAllReduce ||
                          spec.kind == CollectiveKind::kAllGather ||
                          spec.kind == CollectiveKind::kBarrier;
  if (reduce_scatter) schedule.phases.push_back({"reduce-scatter", p - 1, chunk, ring_edges(spec)});
  if (all_gather) schedule.phases.push_back({"all-gather", p - 1, chunk, ring_edges(spec)});
  return schedule;
}

Schedule parameter_server(const CollectiveSpec& spec) {
  const std::int32_t servers = spec.ps_servers;
  const std::int32_t workers = spec.members - servers;
  if (servers < 1 || workers < 1) {
    throw UnsupportedCollective(fmt::format(
        "{} needs at least one worker and one server in its group (got {} workers, {} servers)",
        program::collective_name(spec.kind), workers, servers));
  }
  Schedule schedule;
  schedule.algorithm = Algorithm::kParameterServer;
  Phase phase;
  phase.name = spec.kind == CollectiveKind::kPsPush ? "push" : "pull";
  phase.bytes_per_transfer = static_cast<double>(spec.bytes) / servers;
  for (std::int32_t w = 0; w < workers; ++w) {
    for (std::int32_t s = 0; s < servers; ++s) {
      if (spec.kind == CollectiveKind::kPsPush) {
        phase.transfers.push_back({w, workers + s});
      } else {
        phase.transfers.push_back({workers + s, w});
      }
    }
  }
  schedule.phases.push_back(std::move(phase));
  return schedule;
}

}  // namespace

Algorithm default_algorithm(CollectiveKind kind) {
  if (kind == CollectiveKind::kPsPush || kind == CollectiveKind::kPsPull) {
    return Algorithm::kParameterServer;
  }
  return Algorithm::kRing;
}

Schedule build_schedule(const CollectiveSpec& spec) {
  const Algorithm algorithm =
      spec.algorithm == Algorithm::kAuto ? default_algorithm(spec.kind) : spec.algorithm;
  const bool is_ps = spec.kind == CollectiveKind::kPsPush || spec.kind == CollectiveKind::kPsPull;
  if (is_ps != (algorithm == Algorithm::kParameterServer)) {
    throw UnsupportedCollective(fmt::format("algorithm '{}' cannot run {}",
                                            program::algorithm_name(algorithm),
                                            program::collective_name(spec.kind)));
  }
  if (is_ps) return parameter_server(spec);
  const bool ring_kind = spec.kind == CollectiveKind::kAllReduce ||
                         spec.kind == CollectiveKind::kAllGather ||
                         spec.kind == CollectiveKind::kReduceScatter ||
                         spec.kind == CollectiveKind::kBarrier;
  if (algorithm == Algorithm::kRing && ring_kind) return ring(spec);
  throw UnsupportedCollective(fmt::format("dtsim does not yet schedule {} with algorithm '{}'",
                                          program::collective_name(spec.kind),
                                          program::algorithm_name(algorithm)));
}

Schedule send_recv_schedule(std::int64_t bytes) {
  Schedule schedule;
  schedule.algorithm = Algorithm::kDirect;
  schedule.phases.push_back({"send", 1, static_cast<double>(bytes), {{0, 1}}});
  return schedule;
}

std::vector<double> bytes_sent(const Schedule& schedule, std::int32_t members) {
  std::vector<double> sent(static_cast<std::size_t>(members), 0.0);
  for (const Phase& phase : schedule.phases) {
    for (const Transfer& transfer : phase.transfers) {
      sent[transfer.src] += phase.steps * phase.bytes_per_transfer;
    }
  }
  return sent;
}

double bus_bandwidth_factor(CollectiveKind kind, std::int32_t members) {
  const double n = members;
  switch (kind) {
    case CollectiveKind::kAllReduce: return 2.0 * (n - 1) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll: return (n - 1) / n;
    default: return 1.0;
  }
}

}  // namespace collectives
