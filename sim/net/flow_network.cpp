// Flow model: phases as flows, max-min sharing, completion events (see flow_network.h).
#include "sim/net/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace sim {

FlowNetwork::FlowNetwork(Engine& engine, const topology::Cluster& cluster, NetworkOptions options)
    : engine_(engine), planner_(cluster, std::move(options)) {
  for (std::size_t link = 0; link < cluster.link_count(); ++link) {
    solver_.add_constraint(cluster.link(static_cast<topology::LinkId>(link)).spec.effective_bandwidth());
  }
}

void FlowNetwork::start(const CommRequest& request, std::function<void(const CommResult&)> done) {
  begin_phase(comms_.acquire(Comm(planner_.plan(request), engine_.now(), std::move(done))));
}

void FlowNetwork::begin_phase(std::uint32_t id) {
  Comm& comm = comms_[id];
  if (comm.phase == comm.plan->schedule.phases.size()) {
    auto [done, result] = comm.finish(engine_.now());
    comms_.release(id);
    // Through the engine, so that a collective never completes inside the start() that began it.
    engine_.schedule_after(Time::zero(), [done = std::move(done), result = std::move(result)] { done(result); });
    return;
  }
  const collectives::Phase& phase = comm.plan->schedule.phases[comm.phase];
  const double latency = phase.steps * comm.plan->costs[comm.phase].step_latency_s;
  comm.result.latency_seconds += latency;
  engine_.schedule_after(Time::from_seconds(latency), [this, id] { add_flows(id); });
}

void FlowNetwork::add_flows(std::uint32_t id) {
  advance(engine_.now());
  Comm& comm = comms_[id];
  const collectives::Phase& phase = comm.plan->schedule.phases[comm.phase];
  const double bytes = phase.steps * phase.bytes_per_transfer;
  if (flows_.empty() && !solo_) {  // an idle network: replay the phase's solo trajectory
    const Trajectory& path = trajectory(*comm.plan, comm.phase);
    if (path.duration_s() <= 0) {
      finish_phase(id);
      return;
    }
    solo_ = Solo{id, &path, engine_.now(),
                 engine_.schedule_after(Time::from_seconds(path.duration_s()), [this, id] {
                   solo_.reset();
                   finish_phase(id);
                 })};
    return;
  }
  materialize_solo();
  const auto& paths = comm.plan->paths[comm.phase];
  for (const topology::Path* path : paths) {
    if (bytes <= 0 || path->empty()) continue;
    flows_.push_back({id, bytes, solver_.add_variable(1.0, *path)});
    ++comm.open_flows;
  }
  if (comm.open_flows == 0) {
    finish_phase(id);
    return;
  }
  reschedule();
}

// The phase alone: max-min rates, advanced from one completion to the next.
const FlowNetwork::Trajectory& FlowNetwork::trajectory(const CommPlan& plan, std::size_t phase_index) {
  auto [it, inserted] = trajectories_.try_emplace({&plan, phase_index});
  Trajectory& path = it->second;
  if (!inserted) return path;
  const collectives::Phase& phase = plan.schedule.phases[phase_index];
  const auto& routes = plan.paths[phase_index];
  MaxMinSolver solver;
  for (std::size_t link = 0; link < planner_.cluster().link_count(); ++link) {
    solver.add_constraint(planner_.cluster().link(static_cast<topology::LinkId>(link)).spec.effective_bandwidth());
  }
  const double bytes = phase.steps * phase.bytes_per_transfer;
  std::vector<double> remaining(routes.size(), 0);
  std::vector<std::optional<MaxMinSolver::VariableId>> variables(routes.size());
  for (std::size_t t = 0; t < routes.size(); ++t) {
    if (bytes <= 0 || routes[t]->empty()) continue;
    remaining[t] = bytes;
    variables[t] = solver.add_variable(1.0, *routes[t]);
  }
  double now = 0;
  while (solver.variable_count() > 0) {
    solver.solve();
    ++solves_;
    std::vector<double> rates(routes.size(), 0);
    double soonest = std::numeric_limits<double>::infinity();
    for (std::size_t t = 0; t < routes.size(); ++t) {
      if (!variables[t]) continue;
      rates[t] = solver.rate(*variables[t]);
      soonest = std::min(soonest, remaining[t] / rates[t]);
    }
    now += soonest;
    for (std::size_t t = 0; t < routes.size(); ++t) {
      if (!variables[t]) continue;
      remaining[t] -= rates[t] * soonest;
      if (remaining[t] <= rates[t] * 1e-12) {
        solver.remove_variable(*variables[t]);
        variables[t].reset();
      }
    }
    path.round_end_s.push_back(now);
    path.rates.push_back(std::move(rates));
  }
  return path;
}

// Other traffic arrives: turn the solo phase into flows with the bytes each transfer has left.
void FlowNetwork::materialize_solo() {
  if (!solo_) return;
  const Solo solo = *solo_;
  solo_.reset();
  engine_.cancel(solo.end);
  Comm& comm = comms_[solo.comm];
  const collectives::Phase& phase = comm.plan->schedule.phases[comm.phase];
  const auto& routes = comm.plan->paths[comm.phase];
  const double elapsed = (engine_.now() - solo.started).seconds();
  std::vector<double> remaining(routes.size(), phase.steps * phase.bytes_per_transfer);
  double round_start = 0;
  for (std::size_t r = 0; r < solo.trajectory->round_end_s.size() && round_start < elapsed; ++r) {
    const double span = std::min(solo.trajectory->round_end_s[r], elapsed) - round_start;
    for (std::size_t t = 0; t < routes.size(); ++t) remaining[t] -= solo.trajectory->rates[r][t] * span;
    round_start = solo.trajectory->round_end_s[r];
  }
  for (std::size_t t = 0; t < routes.size(); ++t) {
    if (routes[t]->empty() || remaining[t] <= 0) continue;
    flows_.push_back({solo.comm, remaining[t], solver_.add_variable(1.0, *routes[t])});
    ++comm.open_flows;
  }
  if (comm.open_flows == 0) {  // it was finishing right now
    engine_.schedule_after(Time::zero(), [this, id = solo.comm] { finish_phase(id); });
  }
}

void FlowNetwork::finish_phase(std::uint32_t id) {
  ++comms_[id].phase;
  begin_phase(id);
}

void FlowNetwork::advance(Time now) {
  const double elapsed = (now - last_update_).seconds();
  if (elapsed > 0) {
    for (Flow& flow : flows_) flow.remaining_bytes -= solver_.rate(flow.variable) * elapsed;
  }
  last_update_ = now;
}

void FlowNetwork::reschedule() {
  if (next_completion_) engine_.cancel(*next_completion_);
  next_completion_.reset();
  if (flows_.empty()) return;
  solver_.solve();
  ++solves_;
  double soonest = std::numeric_limits<double>::infinity();
  for (const Flow& flow : flows_) {
    soonest = std::min(soonest, std::max(0.0, flow.remaining_bytes) / solver_.rate(flow.variable));
  }
  next_completion_ = engine_.schedule_after(Time::from_seconds(soonest), [this] { on_completion(); });
}

void FlowNetwork::on_completion() {
  next_completion_.reset();
  advance(engine_.now());
  // Finished: what is left would take less than a picosecond at the flow's rate.
  std::vector<std::uint32_t> finished_comms;
  for (std::size_t i = 0; i < flows_.size();) {
    Flow& flow = flows_[i];
    const double rate = solver_.rate(flow.variable);
    if (flow.remaining_bytes <= rate * 1e-12 || std::isinf(rate)) {
      solver_.remove_variable(flow.variable);
      if (--comms_[flow.comm].open_flows == 0) finished_comms.push_back(flow.comm);
      flow = flows_.back();
      flows_.pop_back();
    } else {
      ++i;
    }
  }
  std::sort(finished_comms.begin(), finished_comms.end());  // deterministic order
  for (std::uint32_t id : finished_comms) finish_phase(id);
  reschedule();
}

}  // namespace sim
