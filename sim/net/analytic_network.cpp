// The analytic model: a plan's α-β total, scheduled as one completion (see analytic_network.h).
#include "sim/net/analytic_network.h"

namespace sim {

AnalyticNetwork::AnalyticNetwork(Engine& engine, const topology::Cluster& cluster,
                                 NetworkOptions options)
    : engine_(engine), planner_(cluster, std::move(options)) {}

CommResult AnalyticNetwork::cost(const CommRequest& request) {
  const CommPlan& plan = planner_.plan(request);
  CommResult result;
  result.algorithm = plan.schedule.algorithm;
  result.protocol = plan.protocol;
  result.latency_seconds = plan.latency_seconds + plan.logp_overhead_seconds;
  result.bandwidth_seconds = plan.bandwidth_seconds;
  result.bytes_sent = plan.bytes_sent;
  result.start = engine_.now();
  result.end = result.start + Time::from_seconds(result.latency_seconds + result.bandwidth_seconds);
  return result;
}

void AnalyticNetwork::start(const CommRequest& request,
                            std::function<void(const CommResult&)> done) {
  CommResult result = cost(request);
  const Time end = result.end;
  engine_.schedule_at(end, [result = std::move(result), done = std::move(done)] { done(result); });
}

}  // namespace sim
