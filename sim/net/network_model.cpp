// Network model factory and topology-aware ring ordering (see network_model.h).
#include "sim/net/network_model.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "sim/net/analytic_network.h"

namespace sim {

std::vector<std::string> network_model_names() { return {"analytic"}; }

std::unique_ptr<NetworkModel> make_network_model(const NetworkOptions& options, Engine& engine,
                                                 const topology::Cluster& cluster) {
  if (options.model == "analytic") return std::make_unique<AnalyticNetwork>(engine, cluster, options);
  throw std::invalid_argument("unknown network model '" + options.model + "'");
}

std::vector<std::vector<std::int32_t>> topology_aware_rings(const topology::Cluster& cluster,
                                                            const std::vector<std::int32_t>& endpoints,
                                                            std::int32_t channels) {
  std::vector<std::int32_t> node_order;
  std::map<std::int32_t, std::vector<std::int32_t>> by_node;
  for (std::size_t m = 0; m < endpoints.size(); ++m) {
    const std::int32_t node = cluster.node_of(endpoints[m]);
    auto [it, inserted] = by_node.try_emplace(node);
    if (inserted) node_order.push_back(node);
    it->second.push_back(static_cast<std::int32_t>(m));
  }
  for (auto& [node, members] : by_node) {
    std::sort(members.begin(), members.end(),
              [&](std::int32_t a, std::int32_t b) { return endpoints[a] < endpoints[b]; });
  }
  const std::int32_t count = channels > 0 ? channels : std::max(1, cluster.spec().node.nics);
  std::vector<std::vector<std::int32_t>> rings;
  for (std::int32_t c = 0; c < count; ++c) {
    std::vector<std::int32_t> ring;
    ring.reserve(endpoints.size());
    for (std::int32_t node : node_order) {
      const auto& members = by_node[node];
      const std::size_t start = static_cast<std::size_t>(c) % members.size();
      ring.insert(ring.end(), members.begin() + static_cast<std::ptrdiff_t>(start), members.end());
      ring.insert(ring.end(), members.begin(), members.begin() + static_cast<std::ptrdiff_t>(start));
    }
    if (node_order.size() == 1 && !rings.empty()) break;  // rotations of one cycle: the same ring
    if (std::find(rings.begin(), rings.end(), ring) == rings.end()) rings.push_back(std::move(ring));
  }
  return rings;
}

}  // namespace sim
