// Congestion-aware flow model (the default network model).
//
// A collective runs its schedule phase by phase. A phase's identical steps run as one flow per
// transfer edge carrying all of that edge's bytes (steps × bytes per transfer), after the
// phase's latency (steps × α). Every active flow — of every collective and transfer in the
// simulation — loads the links of its route; flows share each link's effective bandwidth by
// max-min fairness (maxmin.h), none faster than its plan's cap (CommPlan::transfer_rate_cap: an
// NCCL send's CTAs), re-solved only when the set of flows changes (a phase starts
// or flows finish) and only over the flows that change can reach: the connected component of
// the flow–link graph around the changed flows (the allocation of other components stays
// max-min fair as it is). A phase ends when its last flow ends. Alone on the network this is
// exactly the analytic model's price when a phase's links all run at their steady rates; with other
// traffic, contention slows exactly the flows that share links.
//
// A phase whose links no other traffic uses runs "solo": its trajectory (the rates of its
// flows between their completions) is computed once per distinct plan and phase and replayed,
// so the thousands of identical bucket all-reduces of a large DDP step, or the tensor-parallel
// collectives inside each node of a 3D-parallel step, cost one solve each. If other traffic
// arrives on its links while a phase runs solo, the phase's flows are materialised with the
// bytes they have left and the shared solve takes over.
//
// Approximation: within a phase, a flow that finishes early does not wait for its slower
// neighbours step by step, so freed capacity can speed up other flows somewhat sooner than in
// a step-synchronous run (the packet model keeps the steps).
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/net/comm_planner.h"
#include "sim/net/maxmin.h"
#include "sim/net/running_comm.h"

namespace sim {

class FlowNetwork : public NetworkModel {
 public:
  FlowNetwork(Engine& engine, const topology::Cluster& cluster, NetworkOptions options);
  std::string_view name() const override { return "flow"; }
  void start(const CommRequest& request, std::function<void(const CommResult&)> done) override;

 private:
  // How a phase alone on the network proceeds: between consecutive completions (rounds) every
  // unfinished transfer runs at a constant rate.
  using Rounds = std::vector<std::vector<double>>;  // rates per round, per transfer (0 once finished)
  struct Trajectory {
    std::vector<double> round_end_s;  // seconds after the phase's flows start
    const Rounds* rates = nullptr;    // shared by the phases on the same routes
    double duration_s() const { return round_end_s.empty() ? 0 : round_end_s.back(); }
  };
  struct Comm : RunningComm {
    using RunningComm::RunningComm;
    std::uint32_t open_flows = 0;
  };
  // Indexed by the solver's variable id. remaining_bytes is as of `updated`, since when the
  // flow has run at `rate`; `version` invalidates completion entries of earlier rates.
  struct Flow {
    std::uint32_t comm = 0;
    double remaining_bytes = 0;
    double rate = 0;
    Time updated;
    std::uint32_t version = 0;
    bool live = false;
  };
  struct Completion {
    Time when;
    MaxMinSolver::VariableId flow;
    std::uint32_t version;
    bool operator>(const Completion& other) const {
      return std::tie(when, flow) > std::tie(other.when, other.flow);
    }
  };
  struct Solo {
    const Trajectory* trajectory = nullptr;
    Time started;
    EventId end;
  };

  void begin_phase(std::uint32_t comm);
  void add_flows(std::uint32_t comm);
  void finish_phase(std::uint32_t comm);
  const Trajectory& trajectory(const CommPlan& plan, std::size_t phase);
  Rounds solve_rounds(const std::vector<const topology::Path*>& routes, double rate_cap,
                      std::vector<double> remaining);
  static double advance(const std::vector<double>& rates, std::vector<double>& remaining);
  static bool replay(const Rounds& rounds, std::vector<double> remaining, Trajectory& path);
  void materialize_solo(std::uint32_t comm);
  // link_solo_ of the comm's current phase's links := value.
  void set_solo_links(std::uint32_t comm, std::uint32_t value);
  // Marks the links of the solo phase that started on an idle network (unmarked_solo_).
  void mark_solo_links();
  void release_solo_links(std::uint32_t comm);
  void open_flow(std::uint32_t comm, double bytes, const topology::Path& path);
  void close_flow(MaxMinSolver::VariableId flow);
  // Re-solves the component around `links_` (the links of flows just opened or closed).
  void resolve_touched();
  // resolve_touched() once, after the other events of this instant: the flows that instant opens
  // are solved together (a parameter server's shards, a step's many transfers start at once).
  void resolve_after_this_instant();
  void arm();
  void on_completion();

  Engine& engine_;
  CommPlanner planner_;
  MaxMinSolver solver_;
  std::vector<Flow> flows_;
  std::size_t live_flows_ = 0;
  std::vector<std::vector<MaxMinSolver::VariableId>> link_users_;
  std::priority_queue<Completion, std::vector<Completion>, std::greater<>> completions_;
  SlotPool<Comm> comms_;
  std::map<std::uint32_t, Solo> solos_;           // by comm
  std::vector<std::uint32_t> link_solo_;          // per link: 1 + the comm running solo on it, or 0
  std::optional<std::uint32_t> unmarked_solo_;    // a comm running solo whose links are not marked yet
  struct PhaseHash {
    std::size_t operator()(const std::pair<const CommPlan*, std::size_t>& key) const {
      return std::hash<const CommPlan*>{}(key.first) * 31 + key.second;
    }
  };
  std::unordered_map<std::pair<const CommPlan*, std::size_t>, Trajectory, PhaseHash> trajectories_;
  // A phase's routes and the cap on each transfer's rate (CommPlan::transfer_rate_cap).
  using CappedRoutes = std::pair<std::vector<const topology::Path*>, double>;
  struct RoutesHash {
    std::size_t operator()(const CappedRoutes& key) const {
      std::size_t hash = std::hash<double>{}(key.second) ^ key.first.size();
      for (const topology::Path* route : key.first)
        hash = hash * 1000003u ^ std::hash<const topology::Path*>{}(route);
      return hash;
    }
  };
  std::unordered_map<CappedRoutes, Rounds, RoutesHash> rounds_by_routes_;
  std::deque<Rounds> fresh_rounds_;  // phases whose transfers finish in other rounds than their routes' first

  std::optional<std::pair<Time, EventId>> next_completion_;
  bool resolve_pending_ = false;
  // Scratch for resolve_touched(): touched links, the component found, visit stamps.
  std::vector<topology::LinkId> touched_;
  std::vector<MaxMinSolver::VariableId> component_;
  std::vector<std::uint32_t> link_visit_;
  std::vector<std::uint32_t> flow_visit_;
  std::uint32_t visit_ = 0;
};

}  // namespace sim
