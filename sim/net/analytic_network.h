// Analytic network model: closed-form α-β cost of each collective schedule, without
// contention between different collectives.
//
// Each step of a schedule runs its transfers concurrently; the step costs
//   α_step + bytes_per_transfer · max over links ℓ ( n_ℓ / B_ℓ )
// where α_step is the largest path latency among the step's transfers, n_ℓ the number of
// the step's transfers routed over link ℓ, and B_ℓ its effective bandwidth (bandwidth ×
// protocol efficiency). For a ring all-reduce with P members on a contention-free ring this
// is exactly the chapter's 2(P−1)·α + 2(P−1)/P · M/B, with B the bottleneck bandwidth of the
// ring's route; where several transfers share a link (GPUs sharing a NIC, a parameter
// server's NIC) the shared link's bandwidth is divided among them.
#pragma once

#include <map>
#include <vector>

#include "sim/collectives/schedule.h"
#include "sim/net/network_model.h"

namespace sim {

class AnalyticNetwork : public NetworkModel {
 public:
  AnalyticNetwork(Engine& engine, const topology::Cluster& cluster, NetworkOptions options);
  std::string_view name() const override { return "analytic"; }
  void start(const CommRequest& request, std::function<void(const CommResult&)> done) override;

  // The cost of a request if it started now, without scheduling anything.
  CommResult cost(const CommRequest& request);

 private:
  CommResult price(const CommRequest& request);
  collectives::Schedule schedule_for(const CommRequest& request) const;

  Engine& engine_;
  const topology::Cluster& cluster_;
  NetworkOptions options_;
  std::vector<std::uint32_t> link_load_;  // scratch, one counter per link
  // Identical requests (same kind, algorithm, size and members) recur — every DDP bucket of
  // one size — so their prices are kept.
  std::map<std::vector<std::int64_t>, CommResult> cache_;
};

}  // namespace sim
