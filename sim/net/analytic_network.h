// Analytic network model: the closed-form α-β (or LogGP) price of each collective's
// schedule, with no contention between different collectives (comm_planner.h has the
// formula). For a ring all-reduce with P members on a contention-free ring this is exactly
// the chapter's 2(P−1)·α + 2(P−1)/P · M/B, with B the bottleneck bandwidth of the ring's
// route; links shared by one collective's own transfers (GPUs sharing a NIC, a parameter
// server's NIC) divide their bandwidth among them.
#pragma once

#include "sim/net/comm_planner.h"

namespace sim {

class AnalyticNetwork : public NetworkModel {
 public:
  AnalyticNetwork(Engine& engine, const topology::Cluster& cluster, NetworkOptions options);
  std::string_view name() const override { return "analytic"; }
  void start(const CommRequest& request, std::function<void(const CommResult&)> done) override;

  // The result of a request if it started now, without scheduling anything.
  CommResult cost(const CommRequest& request);

 private:
  Engine& engine_;
  CommPlanner planner_;
};

}  // namespace sim
