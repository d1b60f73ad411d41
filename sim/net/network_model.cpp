// Network model factory (see network_model.h).
#include "sim/net/network_model.h"

#include <stdexcept>

#include "sim/net/analytic_network.h"
#include "sim/net/flow_network.h"
#include "sim/net/packet_network.h"

namespace sim {

void NetworkModel::start_with_copies(
    const CommRequest& request, const std::vector<CommRequest>& copies,
    std::function<void(const CommResult&)> done,
    const std::function<void(std::size_t, const CommResult&)>& copy_done) {
  start(request, std::move(done));
  for (std::size_t i = 0; i < copies.size(); ++i) {
    start(copies[i], [copy_done, i](const CommResult& result) { copy_done(i, result); });
  }
}

std::vector<std::string> network_model_names() { return {"analytic", "flow", "packet"}; }

std::unique_ptr<NetworkModel> make_network_model(const NetworkOptions& options, Engine& engine,
                                                 const topology::Cluster& cluster) {
  if (options.model == "analytic") return std::make_unique<AnalyticNetwork>(engine, cluster, options);
  if (options.model == "flow") return std::make_unique<FlowNetwork>(engine, cluster, options);
  if (options.model == "packet") return std::make_unique<PacketNetwork>(engine, cluster, options);
  throw std::invalid_argument("unknown network model '" + options.model + "'");
}

}  // namespace sim
