// Planning and α-β pricing of collective schedules on the cluster graph (see comm_planner.h).
#include "sim/net/comm_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "sim/net/nccl_p2p.h"

namespace sim {

CommPlanner::CommPlanner(const topology::Cluster& cluster, NetworkOptions options)
    : cluster_(cluster), options_(std::move(options)), link_load_(cluster.link_count(), 0) {}

const CommPlanner::CachedRoute& CommPlanner::cached_route(std::int32_t src, std::int32_t dst) {
  const auto key = (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst);
  auto [it, inserted] = routes_.try_emplace(key);
  if (inserted) {
    it->second.path = cluster_.route(src, dst, key);
    it->second.latency_s = cluster_.path_latency(it->second.path);
  }
  return it->second;
}

collectives::CollectiveSpec collective_spec(const topology::Cluster& cluster, const NetworkOptions& options,
                                            const CommRequest& request, program::Algorithm algorithm) {
  collectives::CollectiveSpec spec;
  spec.kind = *request.kind;
  spec.algorithm = algorithm;
  spec.members = static_cast<std::int32_t>(request.endpoints.size());
  spec.bytes = request.bytes;
  spec.root = request.root;
  spec.ps_servers = request.ps_servers;
  spec.channels = options.ring_channels > 0 ? options.ring_channels : std::max(1, cluster.spec().node.nics);
  spec.chunk_bytes = options.chunk_bytes;
  spec.nvlink_sharp = cluster.spec().node.nvlink_sharp;
  spec.full_mesh = cluster.spec().node.kind == topology::NodeKind::kFullMesh;
  spec.fabric_sharp = cluster.spec().fabric.sharp;
  spec.all_peers_at_once = options.library == "nccl";
  for (std::int32_t endpoint : request.endpoints) {
    const bool gpu = cluster.is_gpu(endpoint);
    spec.locations.push_back({cluster.node_of(endpoint), gpu ? endpoint % cluster.spec().node.gpus : 0});
  }
  return spec;
}

// α-β (or LogGP) price of every phase: each step costs its largest path latency plus its
// bytes over the most loaded link.
CommPlan CommPlanner::price(collectives::Schedule schedule, const std::vector<std::int32_t>& endpoints) {
  CommPlan plan;
  plan.endpoints = endpoints;
  std::vector<topology::LinkId> touched;
  std::vector<std::uint32_t> messages(endpoints.size(), 0);
  for (const collectives::Phase& phase : schedule.phases) {
    PhaseCost cost;
    touched.clear();
    auto& paths = plan.paths.emplace_back();
    paths.reserve(phase.transfers.size());
    for (const collectives::Transfer& transfer : phase.transfers) {
      const CachedRoute& route = cached_route(endpoints[transfer.src], endpoints[transfer.dst]);
      const topology::Path& path = route.path;
      paths.push_back(&path);
      cost.path_latency_s = std::max(cost.path_latency_s, route.latency_s);
      for (topology::LinkId link : path) {
        if (link_load_[link]++ == 0) touched.push_back(link);
      }
      cost.most_messages = std::max(cost.most_messages, ++messages[transfer.src]);
    }
    for (const collectives::Transfer& transfer : phase.transfers) messages[transfer.src] = 0;
    for (topology::LinkId link : touched) {
      cost.seconds_per_byte = std::max(cost.seconds_per_byte,
                                       link_load_[link] / cluster_.link(link).spec.effective_bandwidth());
      link_load_[link] = 0;
    }
    cost.step_latency_s = cost.path_latency_s;
    if (options_.logp && !phase.transfers.empty()) {
      cost.logp_overhead_s =
          2 * options_.logp_overhead_s + (cost.most_messages - 1) * options_.logp_gap_s;
    }
    plan.costs.push_back(cost);
    plan.latency_seconds += phase.steps * cost.step_latency_s;
    plan.logp_overhead_seconds += phase.steps * cost.logp_overhead_s;
    plan.bandwidth_seconds += phase.steps * phase.bytes_per_transfer * cost.seconds_per_byte;
  }
  plan.bytes_sent = collectives::bytes_sent(schedule, static_cast<std::int32_t>(endpoints.size()));
  plan.schedule = std::move(schedule);
  return plan;
}

void CommPlanner::price_as_nccl(CommPlan& plan, const collectives::CollectiveSpec& spec) const {
  nccl::GroupShape group;
  group.members = spec.members;
  std::map<std::int32_t, std::int32_t> per_node;
  for (const collectives::MemberLocation& location : spec.locations) ++per_node[location.node];
  group.nodes = static_cast<std::int32_t>(per_node.size());
  for (const auto& [node, members] : per_node) group.per_node = std::max(group.per_node, members);
  // NCCL's latency tables know NVLink and PCIe; xGMI links GPUs directly, as NVLink does.
  group.nvlink = cluster_.spec().node.kind != topology::NodeKind::kPcie;
  group.nvls_channels = cluster_.spec().node.nvls_channels;
  group.architecture = cluster_.spec().node.gpu.nccl_architecture;
  group.channels = spec.channels;
  group.amd_host = cluster_.spec().node.host_cpu == topology::HostCpu::kAmd;
  std::int32_t steps = 0;
  for (const collectives::Phase& phase : plan.schedule.phases) steps += phase.steps;
  if (steps == 0) return;
  const double data_seconds = plan.bandwidth_seconds;
  double best = std::numeric_limits<double>::infinity();
  for (const nccl::Protocol protocol : nccl::kProtocols) {
    const double latency = nccl::latency_s(spec.kind, spec.algorithm, protocol, group,
                                           static_cast<double>(spec.bytes));
    const double tuner_data = nccl::tuner_data_s(spec.kind, spec.algorithm, protocol, group,
                                                 static_cast<double>(spec.bytes), data_seconds);
    if (latency + tuner_data >= best) continue;
    best = latency + tuner_data;
    // NCCL chooses by its tuner's estimate; the runtime then takes what its chunks and its
    // trimmed channels cost.
    plan.protocol = protocol;
    plan.latency_seconds = latency;
    plan.bandwidth_seconds = nccl::runtime_bandwidth_s(spec.kind, spec.algorithm, protocol, group,
                                                       static_cast<double>(spec.bytes), tuner_data);
    plan.wire_factor = data_seconds > 0 ? plan.bandwidth_seconds / data_seconds
                                        : nccl::wire_factor(spec.algorithm, protocol, group);
    plan.tuner_seconds = best;
  }
  plan.logp_overhead_seconds = 0;
  for (PhaseCost& cost : plan.costs) cost.step_latency_s = plan.latency_seconds / steps;  // spread over the steps
}

std::unique_ptr<CommPlan> CommPlanner::plan_with(const collectives::CollectiveSpec& spec,
                                                  const std::vector<std::int32_t>& endpoints, bool by_nccl) {
  auto plan = std::make_unique<CommPlan>(price(collectives::build_schedule(spec), endpoints));
  if (by_nccl && options_.library == "nccl" && nccl::runs(spec.kind, spec.algorithm)) {
    price_as_nccl(*plan, spec);
    if (spec.algorithm == program::Algorithm::kNvlsTree) pace_by_node_stage(*plan, spec);
  }
  if (by_nccl && options_.library == "nccl" && spec.kind == program::CollectiveKind::kAllToAll) {
    pay_latency_per_peer(*plan);
  }
  return plan;
}

// NCCL's point-to-point latency is not in its tuner and not measured here yet
// (docs/research/nccl_alltoall_latency.md): a step in which a member sends to k peers at once
// pays k path latencies, as if each peer's send came in turn through the launch and proxy
// (their bytes still move together). The direct all-to-all's P − 1 peers thus pay the
// pairwise exchange's P − 1 latencies, which across nodes come close to measured small
// all-to-alls (2 × 8 A100, 1 KiB: 40.5 µs against nccl-tests' 49.75), where one α (2.7 µs)
// would be 18 × too fast; inside one node both are fast (4.2 against 9.34 µs on 8 A100). The
// two-level exchange pays G − 1 latencies inside the node and N − 1 across.
void CommPlanner::pay_latency_per_peer(CommPlan& plan) {
  plan.latency_seconds = 0;
  for (std::size_t p = 0; p < plan.costs.size(); ++p) {
    PhaseCost& cost = plan.costs[p];
    cost.step_latency_s = cost.most_messages * cost.path_latency_s;
    plan.latency_seconds += plan.schedule.phases[p].steps * cost.step_latency_s;
  }
}

void CommPlanner::cap_by_nccl_ctas(CommPlan& plan, const CommRequest& request) const {
  const std::int32_t sender = request.endpoints.at(0);
  const std::int32_t receiver = request.endpoints.at(1);
  if (!cluster_.is_gpu(sender) || !cluster_.is_gpu(receiver) ||
      cluster_.node_of(sender) != cluster_.node_of(receiver)) {
    return;  // across nodes NCCL 2.30 gives a network peer channels enough for its NIC
  }
  const topology::ClusterSpec& spec = cluster_.spec();
  nccl::P2pCommunicator communicator;
  communicator.ranks = request.communicator_ranks;
  communicator.nodes = request.communicator_nodes;
  communicator.nvlink = spec.node.kind == topology::NodeKind::kNvSwitch;
  communicator.architecture = spec.node.gpu.nccl_architecture;
  communicator.nic_bytes_per_s = spec.fabric.nic.bandwidth;
  const double rate = nccl::p2p_rate(communicator, static_cast<double>(request.bytes));
  if (!std::isfinite(rate)) return;
  plan.transfer_rate_cap = rate;
  plan.bandwidth_seconds = 0;
  for (std::size_t p = 0; p < plan.costs.size(); ++p) {
    const collectives::Phase& phase = plan.schedule.phases[p];
    plan.costs[p].seconds_per_byte = std::max(plan.costs[p].seconds_per_byte, 1 / rate);
    plan.bandwidth_seconds +=
        phase.steps * phase.bytes_per_transfer * plan.costs[p].seconds_per_byte;
  }
}

void CommPlanner::pace_by_node_stage(CommPlan& plan, const collectives::CollectiveSpec& spec) {
  CommRequest node_stage;
  node_stage.kind = spec.kind;
  node_stage.bytes = spec.bytes;
  for (std::size_t m = 0; m < spec.locations.size(); ++m) {
    if (spec.locations[m].node == spec.locations.front().node)
      node_stage.endpoints.push_back(plan.endpoints[m]);
  }
  const collectives::CollectiveSpec nvls =
      collective_spec(cluster_, options_, node_stage, program::Algorithm::kNvls);
  if (!plan.tuner_seconds || collectives::unsupported_reason(nvls))
    return;  // no steps: nothing to pace
  const double tuner_data_s = *plan.tuner_seconds - plan.latency_seconds;
  if (tuner_data_s <= 0) return;
  // The stage's links priced as NCCL prices NVLS's (its tuner's bus bandwidth), in NVLSTree's
  // own chunks (the plan's runtime over tuner ratio).
  const double stage_tuner_s =
      plan_with(nvls, node_stage.endpoints, /*by_nccl=*/false)->bandwidth_seconds *
      nccl::wire_factor(program::Algorithm::kNvls, nccl::Protocol::kSimple, {});
  if (stage_tuner_s <= tuner_data_s) return;
  const double data_seconds = plan.bandwidth_seconds / plan.wire_factor;
  plan.bandwidth_seconds *= stage_tuner_s / tuner_data_s;
  plan.wire_factor = plan.bandwidth_seconds / data_seconds;
  plan.tuner_seconds = plan.latency_seconds + stage_tuner_s;
}

const CommPlan& CommPlanner::plan(const CommRequest& request) {
  if (!request.kind) {
    auto [plan, inserted] = transfer_plans_.try_emplace(
        {request.bytes, request.endpoints.at(0), request.endpoints.at(1),
         request.communicator_ranks, request.communicator_nodes});
    if (inserted) {
      plan->second = std::make_unique<CommPlan>(
          price(collectives::send_recv_schedule(request.bytes), request.endpoints));
      if (options_.library == "nccl") cap_by_nccl_ctas(*plan->second, request);
    }
    return *plan->second;
  }
  key_.assign({static_cast<std::int64_t>(*request.kind),
               static_cast<std::int64_t>(request.algorithm), request.bytes, request.root,
               request.ps_servers, request.userbuffers ? 1 : 0});
  key_.insert(key_.end(), request.endpoints.begin(), request.endpoints.end());
  auto cached = plans_.find(key_);
  if (cached != plans_.end()) return *cached->second;

  std::unique_ptr<CommPlan> chosen;
  if (request.userbuffers) {  // a ring of copies over the links
    chosen = plan_with(collective_spec(cluster_, options_, request, program::Algorithm::kRing), request.endpoints, false);
  } else if (request.algorithm != program::Algorithm::kAuto) {
    chosen = plan_with(collective_spec(cluster_, options_, request, request.algorithm), request.endpoints);
  } else {
    auto candidates = collectives::algorithms_for(*request.kind);
    // An all-to-all runs flat unless asked otherwise: NCCL and torch's all_to_all_single post
    // one send/recv per peer; the two-level exchange is a library's choice (DeepEP).
    if (*request.kind == program::CollectiveKind::kAllToAll) candidates = {program::Algorithm::kDirect};
    if (options_.library == "nccl" && nccl::chooses_algorithm(*request.kind)) {  // only what NCCL would run
      std::erase_if(candidates, [&](program::Algorithm algorithm) { return !nccl::runs(*request.kind, algorithm); });
    } else {  // the chapter's textbook algorithms: in-switch reduction only when a scenario asks for it
      std::erase(candidates, program::Algorithm::kNvls);
      std::erase(candidates, program::Algorithm::kCollNet);
      std::erase(candidates, program::Algorithm::kNvlsTree);
    }
    for (program::Algorithm algorithm : candidates) {
      const bool only_choice = candidates.size() == 1;
      if (algorithm == program::Algorithm::kDirect && !only_choice) continue;
      const collectives::CollectiveSpec spec = collective_spec(cluster_, options_, request, algorithm);
      if (collectives::unsupported_reason(spec)) continue;
      auto candidate = plan_with(spec, request.endpoints);
      if (!chosen || candidate->choice_seconds() < chosen->choice_seconds())
        chosen = std::move(candidate);
    }
    if (!chosen) {  // nothing else runs it: the first algorithm, or why it cannot
      chosen = plan_with(collective_spec(cluster_, options_, request, candidates.front()), request.endpoints);
    }
  }
  return *plans_.emplace(key_, std::move(chosen)).first->second;
}

}  // namespace sim
