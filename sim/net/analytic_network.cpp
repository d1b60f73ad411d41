// α-β pricing of collective schedules on the cluster graph (see analytic_network.h).
#include "sim/net/analytic_network.h"

#include <algorithm>

namespace sim {

AnalyticNetwork::AnalyticNetwork(Engine& engine, const topology::Cluster& cluster,
                                 NetworkOptions options)
    : engine_(engine),
      cluster_(cluster),
      options_(std::move(options)),
      link_load_(cluster.link_count(), 0) {}

collectives::Schedule AnalyticNetwork::schedule_for(const CommRequest& request) const {
  if (!request.kind) return collectives::send_recv_schedule(request.bytes);
  collectives::CollectiveSpec spec;
  spec.kind = *request.kind;
  spec.algorithm = request.algorithm == program::Algorithm::kAuto
                       ? collectives::default_algorithm(spec.kind)
                       : request.algorithm;
  spec.members = static_cast<std::int32_t>(request.endpoints.size());
  spec.bytes = request.bytes;
  spec.root = request.root;
  spec.ps_servers = request.ps_servers;
  if (spec.algorithm == program::Algorithm::kRing && spec.members > 1) {
    spec.rings = topology_aware_rings(cluster_, request.endpoints, options_.ring_channels);
  }
  return collectives::build_schedule(spec);
}

CommResult AnalyticNetwork::price(const CommRequest& request) {
  const collectives::Schedule schedule = schedule_for(request);
  CommResult result;
  result.algorithm = schedule.algorithm;
  std::vector<topology::LinkId> touched;
  for (const collectives::Phase& phase : schedule.phases) {
    double latency = 0;
    double seconds_per_byte = 0;
    touched.clear();
    for (const collectives::Transfer& transfer : phase.transfers) {
      const std::int32_t src = request.endpoints[transfer.src];
      const std::int32_t dst = request.endpoints[transfer.dst];
      const auto flow_hash = (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst);
      const topology::Path path = cluster_.route(src, dst, flow_hash);
      latency = std::max(latency, cluster_.path_latency(path));
      for (topology::LinkId link : path) {
        if (link_load_[link]++ == 0) touched.push_back(link);
      }
    }
    for (topology::LinkId link : touched) {
      const double bandwidth = cluster_.link(link).spec.effective_bandwidth();
      seconds_per_byte = std::max(seconds_per_byte, link_load_[link] / bandwidth);
      link_load_[link] = 0;
    }
    result.latency_seconds += phase.steps * latency;
    result.bandwidth_seconds += phase.steps * phase.bytes_per_transfer * seconds_per_byte;
  }
  result.bytes_sent =
      collectives::bytes_sent(schedule, static_cast<std::int32_t>(request.endpoints.size()));
  return result;
}

CommResult AnalyticNetwork::cost(const CommRequest& request) {
  std::vector<std::int64_t> key = {request.kind ? static_cast<std::int64_t>(*request.kind) : -1,
                                   static_cast<std::int64_t>(request.algorithm), request.bytes,
                                   request.root, request.ps_servers};
  key.insert(key.end(), request.endpoints.begin(), request.endpoints.end());
  auto cached = cache_.find(key);
  if (cached == cache_.end()) cached = cache_.emplace(std::move(key), price(request)).first;
  CommResult result = cached->second;
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
