// Two-level hierarchical collectives: inside each node, then across nodes between GPUs with
// the same local index, then inside each node again (see schedule.h).
#include "sim/collectives/schedule_builders.h"

namespace collectives::detail {
namespace {

using program::CollectiveKind;

// Every ordered pair of members inside every node, all nodes at once.
std::vector<Transfer> intra_node_meshes(const NodeGroups& groups) {
  std::vector<Transfer> edges;
  for (const auto& members : groups.nodes) {
    for (const std::int32_t from : members) {
      for (const std::int32_t to : members) {
        if (from != to) edges.push_back({from, to});
      }
    }
  }
  return edges;
}

// A ring inside every node, all nodes at once.
std::vector<Transfer> intra_node_rings(const NodeGroups& groups) {
  std::vector<Transfer> edges;
  for (const auto& members : groups.nodes) {
    for (std::size_t j = 0; j < members.size(); ++j) {
      edges.push_back({members[j], members[(j + 1) % members.size()]});
    }
  }
  return edges;
}

// For every local index, every ordered pair of nodes.
std::vector<Transfer> inter_node_meshes(const NodeGroups& groups) {
  std::vector<Transfer> edges;
  const std::size_t nodes = groups.nodes.size();
  for (std::size_t g = 0; g < groups.nodes.front().size(); ++g) {
    for (std::size_t from = 0; from < nodes; ++from) {
      for (std::size_t to = 0; to < nodes; ++to) {
        if (from != to) edges.push_back({groups.nodes[from][g], groups.nodes[to][g]});
      }
    }
  }
  return edges;
}

// For every local index, a ring through the nodes.
std::vector<Transfer> inter_node_rings(const NodeGroups& groups) {
  std::vector<Transfer> edges;
  const std::size_t nodes = groups.nodes.size();
  for (std::size_t g = 0; g < groups.nodes.front().size(); ++g) {
    for (std::size_t n = 0; n < nodes; ++n) {
      edges.push_back({groups.nodes[n][g], groups.nodes[(n + 1) % nodes][g]});
    }
  }
  return edges;
}

}  // namespace

Schedule hierarchical_schedule(const CollectiveSpec& spec, const NodeGroups& groups) {
  Schedule schedule;
  const auto g = static_cast<std::int32_t>(groups.nodes.front().size());
  const auto n = static_cast<std::int32_t>(groups.nodes.size());
  const double m = static_cast<double>(effective_bytes(spec));
  const double shard = m / g;             // what each GPU owns after the intra-node step
  const double block = m / (g * n);       // one member's share of the whole message
  auto intra = [&](std::string_view name) {
    if (g > 1) schedule.phases.push_back({name, g - 1, shard, intra_node_rings(groups)});
  };
  switch (spec.kind) {
    case CollectiveKind::kAllReduce:
      intra("intra-node reduce-scatter");
      schedule.phases.push_back({"inter-node all-reduce", 2 * (n - 1), block, inter_node_rings(groups)});
      intra("intra-node all-gather");
      break;
    case CollectiveKind::kReduceScatter:
      intra("intra-node reduce-scatter");
      schedule.phases.push_back({"inter-node reduce-scatter", n - 1, block, inter_node_rings(groups)});
      break;
    case CollectiveKind::kAllGather:
      schedule.phases.push_back({"inter-node all-gather", n - 1, block, inter_node_rings(groups)});
      intra("intra-node all-gather");
      break;
    case CollectiveKind::kAllToAll:
      if (g > 1) schedule.phases.push_back({"intra-node exchange to the rail", 1, m / g, intra_node_meshes(groups)});
      schedule.phases.push_back({"inter-node exchange on the rail", 1, m / n, inter_node_meshes(groups)});
      break;
    default: break;
  }
  return schedule;
}

Schedule collnet_schedule(const CollectiveSpec& spec, const NodeGroups& groups) {
  Schedule schedule;
  const auto g = static_cast<std::int32_t>(groups.nodes.front().size());
  const auto n = static_cast<double>(groups.nodes.size());
  const double shard = static_cast<double>(effective_bytes(spec)) / g;
  if (g > 1) schedule.phases.push_back({"intra-node reduce-scatter", g - 1, shard, intra_node_rings(groups)});
  schedule.phases.push_back({"in-network all-reduce", 1, shard / (n - 1), inter_node_meshes(groups)});
  if (g > 1) schedule.phases.push_back({"intra-node all-gather", g - 1, shard, intra_node_rings(groups)});
  return schedule;
}

Schedule nvls_tree_schedule(const CollectiveSpec& spec, const NodeGroups& groups) {
  Schedule schedule;
  const auto g = static_cast<std::int32_t>(groups.nodes.front().size());
  const std::size_t n = groups.nodes.size();
  // One phase, in units of a member's shard M/G: NCCL pipelines the switch's reduction and
  // multicast with the NICs' tree, so both run at once.
  Phase phase{"nvls tree: in-switch reduction and the nodes' tree at once",
              1,
              static_cast<double>(effective_bytes(spec)) / g,
              {}};
  const std::vector<Transfer> ring = intra_node_rings(groups);
  for (std::int32_t copy = 0; copy <= g; ++copy) {  // (G+1)·M/G through each NVSwitch port
    phase.transfers.insert(phase.transfers.end(), ring.begin(), ring.end());
  }
  // Two nodes swap their shards (a ring of two is both directions); more nodes run a double
  // binary tree, each NIC a parent in one tree and a leaf in the other: 2·M/G each way.
  const std::vector<Transfer> rails = inter_node_rings(groups);
  for (std::size_t copy = 0; copy < (n == 2 ? 1u : 2u); ++copy) {
    phase.transfers.insert(phase.transfers.end(), rails.begin(), rails.end());
  }
  schedule.phases.push_back(std::move(phase));
  return schedule;
}

}  // namespace collectives::detail
