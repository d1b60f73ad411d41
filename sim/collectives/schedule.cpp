// Dispatch from (kind, algorithm) to the builders, validity checks, traffic and busbw (see
// schedule.h).
#include "sim/collectives/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/collectives/schedule_builders.h"

namespace collectives {
namespace detail {

bool NodeGroups::uniform() const {
  return std::all_of(nodes.begin(), nodes.end(),
                     [this](const auto& members) { return members.size() == nodes.front().size(); });
}

std::vector<std::int32_t> NodeGroups::flattened() const {
  std::vector<std::int32_t> order;
  for (const auto& members : nodes) order.insert(order.end(), members.begin(), members.end());
  return order;
}

NodeGroups group_by_node(const CollectiveSpec& spec) {
  NodeGroups groups;
  std::map<std::int32_t, std::size_t> index_of_node;
  for (std::int32_t m = 0; m < spec.members; ++m) {
    const std::int32_t node = spec.locations.empty() ? m : spec.locations[m].node;
    auto [it, inserted] = index_of_node.try_emplace(node, groups.nodes.size());
    if (inserted) groups.nodes.emplace_back();
    groups.nodes[it->second].push_back(m);
  }
  if (!spec.locations.empty()) {
    for (auto& members : groups.nodes) {
      std::stable_sort(members.begin(), members.end(), [&spec](std::int32_t a, std::int32_t b) {
        return spec.locations[a].local < spec.locations[b].local;
      });
    }
  }
  return groups;
}

std::int64_t effective_bytes(const CollectiveSpec& spec) {
  return spec.kind == program::CollectiveKind::kBarrier ? kBarrierBytes : spec.bytes;
}

void add_pipeline(Schedule& schedule, std::string_view fill_name, std::string_view steady_name,
                  const std::vector<PipelineEdge>& edges, double bytes, std::int64_t chunk_bytes) {
  const double chunk = std::min(bytes, static_cast<double>(chunk_bytes));
  const std::int64_t full_chunks =
      chunk > 0 ? static_cast<std::int64_t>(std::floor(bytes / chunk)) : 1;
  const double remainder = bytes - static_cast<double>(full_chunks) * chunk;
  std::int32_t waves = 0;
  for (const PipelineEdge& edge : edges) waves = std::max(waves, edge.wave + 1);
  for (std::int32_t wave = 0; wave < waves; ++wave) {
    Phase fill{fill_name, 1, chunk, {}};
    for (const PipelineEdge& edge : edges) {
      if (edge.wave == wave) fill.transfers.push_back(edge.transfer);
    }
    if (!fill.transfers.empty()) schedule.phases.push_back(std::move(fill));
  }
  const auto every_edge = [&](std::int64_t steps, double step_bytes) {
    Phase steady{steady_name, static_cast<std::int32_t>(steps), step_bytes, {}};
    for (const PipelineEdge& edge : edges) steady.transfers.push_back(edge.transfer);
    schedule.phases.push_back(std::move(steady));
  };
  if (full_chunks > 1) every_edge(full_chunks - 1, chunk);
  if (remainder >= 1) every_edge(1, remainder);  // not a rounding error's fraction of a byte
}

}  // namespace detail

namespace {

using program::Algorithm;
using program::CollectiveKind;

}  // namespace

std::vector<Algorithm> algorithms_for(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return {Algorithm::kRing,         Algorithm::kTree,    Algorithm::kHalvingDoubling,
              Algorithm::kHierarchical, Algorithm::kDirect,  Algorithm::kNvls,
              Algorithm::kCollNet,      Algorithm::kNvlsTree};
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return {Algorithm::kRing, Algorithm::kHalvingDoubling, Algorithm::kHierarchical,
              Algorithm::kDirect};
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
      return {Algorithm::kRing, Algorithm::kTree, Algorithm::kDirect};
    case CollectiveKind::kAllToAll: return {Algorithm::kDirect, Algorithm::kHierarchical};
    case CollectiveKind::kBarrier:
      return {Algorithm::kRing, Algorithm::kTree, Algorithm::kHalvingDoubling};
    case CollectiveKind::kPsPush:
    case CollectiveKind::kPsPull: return {Algorithm::kParameterServer};
  }
  return {};
}

std::optional<std::string> unsupported_reason(const CollectiveSpec& spec) {
  const auto kind = program::collective_name(spec.kind);
  const auto algorithm = program::algorithm_name(spec.algorithm);
  if (spec.members < 1) return fmt::format("{} needs a group of at least one rank", kind);
  const auto supported = algorithms_for(spec.kind);
  if (std::find(supported.begin(), supported.end(), spec.algorithm) == supported.end()) {
    std::string names;
    for (Algorithm a : supported) names += (names.empty() ? "" : ", ") + std::string(program::algorithm_name(a));
    return fmt::format("algorithm \"{}\" cannot run {}; it runs with: {}", algorithm, kind, names);
  }
  if (!spec.locations.empty() && static_cast<std::int32_t>(spec.locations.size()) != spec.members) {
    return fmt::format("{} locations for a group of {}", spec.locations.size(), spec.members);
  }
  if ((spec.kind == CollectiveKind::kBroadcast || spec.kind == CollectiveKind::kReduce) &&
      (spec.root < 0 || spec.root >= spec.members)) {
    return fmt::format("root {} is not a member of a group of {}", spec.root, spec.members);
  }
  if (spec.algorithm == Algorithm::kParameterServer &&
      (spec.ps_servers < 1 || spec.members - spec.ps_servers < 1)) {
    return fmt::format("{} needs at least one worker and one server in its group (got {} workers, "
                       "{} servers)",
                       kind, spec.members - spec.ps_servers, spec.ps_servers);
  }
  if (spec.algorithm == Algorithm::kNvls) {
    if (!spec.nvlink_sharp) {
      return "algorithm \"nvls\" needs NVSwitches that reduce in the switch (NVLink SHARP: HGX H100/H200 nodes, "
             "[cluster] nvlink_sharp = true); these nodes have none";
    }
    if (detail::group_by_node(spec).nodes.size() > 1) {
      return fmt::format("algorithm \"nvls\" reduces inside one node's NVSwitch; this {} group spans nodes "
                         "(NCCL's NVLS across nodes needs SHARP on the fabric, not modelled)",
                         kind);
    }
  }
  if (spec.algorithm == Algorithm::kNvlsTree) {
    if (!spec.nvlink_sharp) {
      return "algorithm \"nvls_tree\" needs NVSwitches that reduce in the switch (NVLink SHARP: "
             "HGX H100/H200/B200 "
             "nodes, [cluster] nvlink_sharp = true); these nodes have none";
    }
    const detail::NodeGroups groups = detail::group_by_node(spec);
    if (groups.nodes.size() < 2 || !groups.uniform() || groups.nodes.front().size() < 2) {
      return fmt::format(
          "algorithm \"nvls_tree\" needs a group over two or more nodes with the same number of "
          "ranks, at least two, on each; this {} group of {} ranks {}",
          kind, spec.members,
          groups.nodes.size() < 2 ? "sits on one node (there NCCL runs nvls)"
          : !groups.uniform()     ? "is uneven"
                                  : "has one rank per node");
    }
  }
  if (spec.algorithm == Algorithm::kCollNet) {
    if (!spec.fabric_sharp) {
      return "algorithm \"collnet\" needs InfiniBand switches that reduce in the network (SHARP: "
             "[cluster.fabric] sharp = true); this fabric has none";
    }
    const detail::NodeGroups groups = detail::group_by_node(spec);
    if (groups.nodes.size() < 2 || !groups.uniform()) {
      return fmt::format("algorithm \"collnet\" needs a group spread over two or more nodes with the same number of "
                         "ranks on each; this {} group of {} ranks {}",
                         kind, spec.members, groups.nodes.size() < 2 ? "sits on one node" : "is uneven");
    }
  }
  if (spec.algorithm == Algorithm::kHierarchical) {
    const detail::NodeGroups groups = detail::group_by_node(spec);
    if (groups.nodes.size() < 2) {
      return fmt::format("algorithm \"hier\" needs a group spread over two or more nodes; this {} "
                         "group of {} ranks sits on one node",
                         kind, spec.members);
    }
    if (!groups.uniform()) {
      return fmt::format("algorithm \"hier\" needs the same number of ranks on every node of the "
                         "group");
    }
  }
  return std::nullopt;
}

Schedule build_schedule(const CollectiveSpec& spec) {
  if (auto reason = unsupported_reason(spec)) throw UnsupportedCollective(*reason);
  const detail::NodeGroups groups = detail::group_by_node(spec);
  Schedule schedule;
  switch (spec.algorithm) {
    case Algorithm::kRing: schedule = detail::ring_schedule(spec, groups); break;
    case Algorithm::kTree: schedule = detail::tree_schedule(spec, groups); break;
    case Algorithm::kHalvingDoubling: schedule = detail::halving_doubling_schedule(spec, groups); break;
    case Algorithm::kHierarchical: schedule = detail::hierarchical_schedule(spec, groups); break;
    case Algorithm::kDirect: schedule = detail::direct_schedule(spec, groups); break;
    case Algorithm::kParameterServer: schedule = detail::parameter_server_schedule(spec); break;
    case Algorithm::kNvls: schedule = detail::nvls_schedule(spec); break;
    case Algorithm::kCollNet: schedule = detail::collnet_schedule(spec, groups); break;
    case Algorithm::kNvlsTree:
      schedule = detail::nvls_tree_schedule(spec, groups);
      break;
    case Algorithm::kAuto: throw UnsupportedCollective("build_schedule needs a concrete algorithm");
  }
  schedule.algorithm = spec.algorithm;
  return schedule;
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

std::int64_t total_steps(const Schedule& schedule) {
  std::int64_t steps = 0;
  for (const Phase& phase : schedule.phases) steps += phase.steps;
  return steps;
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
