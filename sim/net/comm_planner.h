// From a communication request to a concrete plan every network model executes: the
// algorithm (chosen automatically when the request says "auto"), the schedule built on the
// members' locations, and the α-β price of each phase on the topology.
//
// The automatic choice prices every algorithm that can run the collective on this group with
// the α-β model on the actual routes — step latency plus bytes over the most loaded link —
// and takes the cheapest, as NCCL's tuner does (latency + size / bandwidth per algorithm and
// protocol, src/graph/tuning.cc), but on the cluster graph. With collectives.library = "nccl"
// (the default) the candidates are the algorithms NCCL runs and the latency is NCCL's, with the
// cheapest protocol (nccl_model.h); with "ideal", every dtsim schedule and the links' α. Direct
// schedules (P² transfers) are considered only for all-to-all, where nothing else runs.
#pragma once

#include <boost/container_hash/hash.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/collectives/schedule.h"
#include "sim/net/nccl_model.h"
#include "sim/net/network_model.h"
#include "topology/cluster.h"

namespace sim {

struct PhaseCost {
  double step_latency_s = 0;     // α: the largest path latency among the step's transfers,
                                 // or with collectives.library = "nccl" NCCL's latency per step
  double path_latency_s = 0;     // the largest path latency among the step's transfers, always
  double logp_overhead_s = 0;    // LogGP's 2o + (n−1)·g on top of α (0 unless network.logp)
  double seconds_per_byte = 0;   // max over links of (transfers on it / its bandwidth)
  std::uint32_t most_messages = 0;  // the most transfers one member sends in a step
};

struct CommPlan {
  collectives::Schedule schedule;
  std::vector<std::int32_t> endpoints;  // members' cluster endpoints
  std::vector<PhaseCost> costs;         // one per phase
  // Route of every transfer, per phase (pointers into the planner's route cache).
  std::vector<std::vector<const topology::Path*>> paths;
  std::vector<double> bytes_sent;       // per member
  double latency_seconds = 0;           // α-β total: Σ steps · α
  double logp_overhead_seconds = 0;     // Σ steps · LogGP overhead (analytic model only)
  double bandwidth_seconds = 0;         // α-β total: Σ steps · bytes · seconds_per_byte
  // collectives.library = "nccl": the protocol NCCL would run and its bytes on the wire per
  // byte of data (nccl_model.h); 1 otherwise. Where NCCL's runtime is slower than its links
  // (NVLS's small chunks, a small ring/LL collective's few channels) that time is counted here
  // too, as if the extra bytes were on the wire: the flow and packet models then hold the links
  // for as long as the runtime takes.
  std::optional<nccl::Protocol> protocol;
  double wire_factor = 1.0;
  // collectives.library = "nccl": NCCL's tuner's estimate, which it chooses the algorithm and
  // protocol by (without what only the runtime adds, nccl::runtime_bandwidth_s).
  std::optional<double> tuner_seconds;
  // The most bytes per second any one transfer moves, whatever its links offer: with
  // collectives.library = "nccl", an NCCL send inside a node, bound by its CTAs
  // (nccl::p2p_rate); infinite otherwise. Every network model holds a transfer to it.
  double transfer_rate_cap = std::numeric_limits<double>::infinity();
  double seconds() const { return latency_seconds + bandwidth_seconds; }
  double choice_seconds() const { return tuner_seconds.value_or(seconds()); }
  // The bytes one transfer of a phase puts on the wire.
  double wire_bytes_per_transfer(std::size_t phase) const {
    return schedule.phases[phase].bytes_per_transfer * wire_factor;
  }
};

// The schedule specification of a collective request: members' locations (node, GPU index)
// from the cluster, ring channels and chunk size from the options.
collectives::CollectiveSpec collective_spec(const topology::Cluster& cluster, const NetworkOptions& options,
                                            const CommRequest& request, program::Algorithm algorithm);

class CommPlanner {
 public:
  CommPlanner(const topology::Cluster& cluster, NetworkOptions options);

  // Throws collectives::UnsupportedCollective when the requested algorithm cannot run.
  const CommPlan& plan(const CommRequest& request);
  // Route from one endpoint to another, as the topology's routing picks it (cached).
  const topology::Path& route(std::int32_t src, std::int32_t dst) { return cached_route(src, dst).path; }

  const topology::Cluster& cluster() const { return cluster_; }
  const NetworkOptions& options() const { return options_; }

 private:
  CommPlan price(collectives::Schedule schedule, const std::vector<std::int32_t>& endpoints);
  // collectives.library = "nccl": NCCL's latency and the cheapest protocol in place of the
  // links' α (nccl_model.h).
  void price_as_nccl(CommPlan& plan, const collectives::CollectiveSpec& spec) const;
  // collectives.library = "nccl": a send inside a node no faster than NCCL's CTAs copy
  // (nccl_p2p.h), in the plan's α-β price too.
  void cap_by_nccl_ctas(CommPlan& plan, const CommRequest& request) const;
  // NVLSTree's stage inside each node is an NVLS all-reduce of the whole message (NVLink SHARP's
  // reduction, then its multicast). Where a node's NICs outrun that (an NVL72 rack's 72 NICs),
  // it sets the pace: the plan's data time is at least NVLS's on its first node's links, in the
  // plan's own chunks.
  void pace_by_node_stage(CommPlan& plan, const collectives::CollectiveSpec& spec);
  // collectives.library = "nccl": an all-to-all's step pays a path latency per peer a member
  // sends to in it (see the definition).
  static void pay_latency_per_peer(CommPlan& plan);
  // Plans the collective `spec` describes, priced as the library does (`by_nccl` false: by the
  // links' α-β whatever the library).
  std::unique_ptr<CommPlan> plan_with(const collectives::CollectiveSpec& spec, const std::vector<std::int32_t>& endpoints,
                                      bool by_nccl = true);

  const topology::Cluster& cluster_;
  NetworkOptions options_;
  // Collectives by the request's fields and endpoints (a hash: ordered keys of hundreds of
  // endpoints with long common prefixes made every look-up a slow comparison at 10^4 ranks).
  using PlanKey = std::vector<std::int64_t>;
  std::unordered_map<PlanKey, std::unique_ptr<CommPlan>, boost::hash<PlanKey>> plans_;
  PlanKey key_;  // scratch for plan(): looked up without allocating
  // Point-to-point transfers by (bytes, sender, receiver, communicator ranks and nodes): a key
  // held in the table's node, so a look-up touches one node (the copies of a pipeline's
  // transfers in 10^4 replicas are most of a large 3-D step's plans).
  using TransferKey =
      std::tuple<std::int64_t, std::int32_t, std::int32_t, std::int32_t, std::int32_t>;
  std::unordered_map<TransferKey, std::unique_ptr<CommPlan>, boost::hash<TransferKey>>
      transfer_plans_;
  // A route and its latency, computed once per (src, dst).
  struct CachedRoute {
    topology::Path path;
    double latency_s = 0;
  };
  const CachedRoute& cached_route(std::int32_t src, std::int32_t dst);
  std::unordered_map<std::uint64_t, CachedRoute> routes_;  // by (src << 32 | dst)
  std::vector<std::uint32_t> link_load_;  // scratch, one counter per link
};

}  // namespace sim
