// Congestion-aware flow model (the default network model).
//
// A collective runs its schedule phase by phase. A phase's identical steps run as one flow per
// transfer edge carrying all of that edge's bytes (steps × bytes per transfer), after the
// phase's latency (steps × α). Every active flow — of every collective and transfer in the
// simulation — loads the links of its route; flows share each link's effective bandwidth by
// max-min fairness (maxmin.h), re-solved only when the set of flows changes (a phase starts
// or flows finish). A phase ends when its last flow ends. Alone on the network this is exactly
// the analytic model's price when a phase's links all run at their steady rates; with other
// traffic, contention slows exactly the flows that share links.
//
// A phase that starts on an idle network runs "solo": its trajectory (the rates of its flows
// between their completions) is computed once per distinct plan and phase and replayed, so the
// thousands of identical bucket all-reduces of a large DDP step cost one solve each. If other
// traffic arrives while a phase runs solo, the phase's flows are materialised with the bytes
// they have left and the shared solve takes over.
//
// Approximation: within a phase, a flow that finishes early does not wait for its slower
// neighbours step by step, so freed capacity can speed up other flows somewhat sooner than in
// a step-synchronous run (the packet model keeps the steps).
#pragma once

#include <map>
#include <optional>
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

  std::size_t solves() const { return solves_; }

 private:
  // How a phase alone on the network proceeds: between consecutive completions (rounds) every
  // unfinished transfer runs at a constant rate.
  struct Trajectory {
    std::vector<double> round_end_s;            // seconds after the phase's flows start
    std::vector<std::vector<double>> rates;     // per round, per transfer (0 once finished)
    double duration_s() const { return round_end_s.empty() ? 0 : round_end_s.back(); }
  };
  struct Comm : RunningComm {
    using RunningComm::RunningComm;
    std::uint32_t open_flows = 0;
  };
  struct Flow {
    std::uint32_t comm = 0;
    double remaining_bytes = 0;
    MaxMinSolver::VariableId variable = 0;
  };
  struct Solo {
    std::uint32_t comm = 0;
    const Trajectory* trajectory = nullptr;
    Time started;
    EventId end;
  };

  void begin_phase(std::uint32_t comm);
  void add_flows(std::uint32_t comm);
  void finish_phase(std::uint32_t comm);
  const Trajectory& trajectory(const CommPlan& plan, std::size_t phase);
  void materialize_solo();
  void advance(Time now);
  void reschedule();
  void on_completion();

  Engine& engine_;
  CommPlanner planner_;
  MaxMinSolver solver_;
  std::vector<Flow> flows_;
  SlotPool<Comm> comms_;
  std::optional<Solo> solo_;
  std::map<std::pair<const CommPlan*, std::size_t>, Trajectory> trajectories_;
  Time last_update_;
  std::optional<EventId> next_completion_;
  std::size_t solves_ = 0;
};

}  // namespace sim
