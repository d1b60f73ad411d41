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
// Copies of a communication between other endpoints (start_with_copies: the other data-parallel
// replicas' copies of one replica's pipeline transfer) start as a class: one plan look-up each,
// one latency wait for all. When the class's phase begins, a class whose links no other traffic
// uses is split, each copy running solo (cheaper than any solve); a class on busy links runs
// folded: each transfer is one max-min variable crossing every copy's route (a link two copies
// cross counts twice, maxmin.h), so k copies cost one flow and one completion instead of k.
// Copies whose plans differ from the leader's (another latency, another algorithm) are split off.
// Folding is exact only while the network treats the copies alike. Max-min fairness has a
// certificate (Bertsekas & Gallager, Data Networks, §6.5.2): an allocation is the max-min fair
// one if and only if every flow is at its bound or crosses a saturated link on which no flow is
// faster. After every solve, each copy of each folded transfer is checked for such a link on
// its own route; a class where one is missing is unfolded — every copy becomes a communication
// of its own with the bytes it has left (equal for all: they ran at one rate until now) — and the
// component is solved again. So a folded class never runs at a rate the unfolded network would
// not give it. Design and measurements: docs/research/weighted_class_flows.md.
//
// Approximation: within a phase, a flow that finishes early does not wait for its slower
// neighbours step by step, so freed capacity can speed up other flows somewhat sooner than in
// a step-synchronous run (the packet model keeps the steps).
#pragma once

#include <deque>
#include <map>
#include <memory>
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
  // Copies start_with_copies started in classes; of those, copies run apart because their class
  // was alone on its links, or because their plan differs from their leader's (another latency,
  // another algorithm), and copies unfolded because the network treated them differently. The
  // rest ran folded to the end.
  struct FoldCounts {
    std::uint64_t started = 0;
    std::uint64_t run_apart = 0;
    std::uint64_t unlike = 0;
    std::uint64_t unfolded = 0;
  };
  const FoldCounts& fold_counts() const { return fold_counts_; }
  void start(const CommRequest& request, std::function<void(const CommResult&)> done) override;
  void start_with_copies(
      const CommRequest& request, const std::vector<CommRequest>& copies,
      std::function<void(const CommResult&)> done,
      const std::function<void(std::size_t, const CommResult&)>& copy_done) override;

 private:
  // How a phase alone on the network proceeds: between consecutive completions (rounds) every
  // unfinished transfer runs at a constant rate.
  using Rounds = std::vector<std::vector<double>>;  // rates per round, per transfer (0 once finished)
  struct Trajectory {
    std::vector<double> round_end_s;  // seconds after the phase's flows start
    const Rounds* rates = nullptr;    // shared by the phases on the same routes
    double duration_s() const { return round_end_s.empty() ? 0 : round_end_s.back(); }
  };
  // A copy in a communication's class: its plan and its index for the class's copy_done.
  struct ClassCopy {
    const CommPlan* plan = nullptr;
    std::size_t index = 0;
  };
  using CopyDone = std::function<void(std::size_t, const CommResult&)>;
  struct Comm : RunningComm {
    using RunningComm::RunningComm;
    std::uint32_t open_flows = 0;
    std::vector<ClassCopy> copies;  // empty: not a class
    std::shared_ptr<const CopyDone> copy_done;
    std::vector<MaxMinSolver::VariableId> class_flows;  // a class's flows in its current phase
  };
  // Indexed by the solver's variable id. remaining_bytes is as of `updated`, since when the
  // flow has run at `rate`; `version` invalidates completion entries of earlier rates.
  struct Flow {
    std::uint32_t comm = 0;
    std::uint32_t transfer = 0;  // in the comm's current phase
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
  // The comm's current phase after its latency: a class split where it cannot run folded, then
  // add_phase_flows for it and each copy split off.
  void add_flows(std::uint32_t comm);
  // The phase's flows, or its solo trajectory where its links are free (never for a class).
  void add_phase_flows(std::uint32_t comm);
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
  // Whether `copy` runs as `leader` does between other endpoints: the same algorithm, phases,
  // steps, latencies, bytes and rate cap, and a route wherever the leader's transfers have one.
  static bool congruent(const CommPlan& leader, const CommPlan& copy);
  // Opens transfer `transfer` of the comm's current phase as a flow: along its route, and for a
  // class along every copy's route too.
  void open_flow(std::uint32_t comm, double bytes, std::uint32_t transfer);
  void close_flow(MaxMinSolver::VariableId flow);
  // Re-solves the component around `links_` (the links of flows just opened or closed).
  void resolve_touched();
  // The classes in component_ with a copy that has no bottleneck at the rates just solved
  // (flow_network.h's certificate), in id order.
  std::vector<std::uint32_t> unequal_classes();
  // Whether no flow and no solo phase uses a link of the class's current phase.
  bool class_links_free(const Comm& comm) const;
  // The class's copies `apart` picks (by plan) as communications of their own, in its current
  // phase, with its latency so far; their ids.
  std::vector<std::uint32_t> split_class(std::uint32_t comm,
                                         const std::function<bool(const CommPlan&)>& apart);
  // A class's copies become communications of their own, each flow with the bytes it has left.
  void unfold(std::uint32_t comm);
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
  // Scratch for unequal_classes(): per link, the load and the fastest flow on it.
  std::vector<double> link_load_;
  std::vector<double> link_fastest_;
  std::vector<topology::LinkId> route_;  // scratch for open_flow()
  FoldCounts fold_counts_;
};

}  // namespace sim
