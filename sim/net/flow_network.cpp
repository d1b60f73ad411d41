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
  link_users_.resize(cluster.link_count());
  link_solo_.assign(cluster.link_count(), 0);
  link_visit_.assign(cluster.link_count(), 0);
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
  Comm& comm = comms_[id];
  const collectives::Phase& phase = comm.plan->schedule.phases[comm.phase];
  const double bytes = phase.steps * comm.plan->wire_bytes_per_transfer(comm.phase);
  const auto& paths = comm.plan->paths[comm.phase];
  // Links no other traffic uses: replay the phase's solo trajectory. On an otherwise idle
  // network that needs no look at the links, and the phase's links are marked only if other
  // traffic comes while it runs (a data-parallel step's bucket all-reduces, one after the
  // other over thousands of GPUs, then cost O(1) each).
  const bool idle = live_flows_ == 0 && solos_.empty();
  if (!idle) mark_solo_links();
  bool isolated = true;
  for (std::size_t p = 0; !idle && p < paths.size(); ++p) {
    for (topology::LinkId link : *paths[p]) isolated = isolated && link_users_[link].empty() && link_solo_[link] == 0;
  }
  if (isolated) {
    const Trajectory& trajectory = this->trajectory(*comm.plan, comm.phase);
    if (trajectory.duration_s() <= 0) {
      finish_phase(id);
      return;
    }
    if (idle) {
      unmarked_solo_ = id;
    } else {
      set_solo_links(id, id + 1);
    }
    solos_[id] = Solo{&trajectory, engine_.now(),
                      engine_.schedule_after(Time::from_seconds(trajectory.duration_s()), [this, id] {
                        release_solo_links(id);
                        solos_.erase(id);
                        finish_phase(id);
                      })};
    return;
  }
  // Solo phases on these links now share them: they become flows.
  for (const topology::Path* path : paths) {
    for (topology::LinkId link : *path) {
      if (link_solo_[link] != 0) materialize_solo(link_solo_[link] - 1);
    }
  }
  for (const topology::Path* path : paths) {
    if (bytes > 0 && !path->empty()) open_flow(id, bytes, *path);
  }
  resolve_after_this_instant();
  if (comm.open_flows == 0) finish_phase(id);
}

void FlowNetwork::resolve_after_this_instant() {
  if (resolve_pending_) return;
  resolve_pending_ = true;
  engine_.schedule_after(Time::zero(), [this] {
    resolve_pending_ = false;
    resolve_touched();
  });
}

// The phase alone: max-min rates, advanced from one completion to the next. Every transfer of
// a phase starts with the same bytes, so the rates of each round depend on the routes alone:
// phases on the same routes (the same collective at other sizes) replay the rounds solved for
// the first, with the same arithmetic, hence the same times to the bit, as long as the same
// transfers finish in each round; where they do not, the phase is solved afresh.
const FlowNetwork::Trajectory& FlowNetwork::trajectory(const CommPlan& plan, std::size_t phase_index) {
  auto [it, inserted] = trajectories_.try_emplace({&plan, phase_index});
  Trajectory& path = it->second;
  if (!inserted) return path;
  const collectives::Phase& phase = plan.schedule.phases[phase_index];
  const auto& routes = plan.paths[phase_index];
  const double bytes = phase.steps * plan.wire_bytes_per_transfer(phase_index);
  std::vector<double> start(routes.size(), 0);
  for (std::size_t t = 0; t < routes.size(); ++t) start[t] = bytes > 0 && !routes[t]->empty() ? bytes : 0;
  if (std::all_of(start.begin(), start.end(), [](double b) { return b <= 0; })) return path;  // nothing moves
  auto [shared, first] = rounds_by_routes_.try_emplace({routes, plan.transfer_rate_cap});
  if (first) shared->second = solve_rounds(routes, plan.transfer_rate_cap, start);
  if (replay(shared->second, start, path)) return path;
  path = Trajectory{};
  if (!replay(fresh_rounds_.emplace_back(solve_rounds(routes, plan.transfer_rate_cap, start)),
              start, path)) {
    throw std::logic_error("flow model: a phase's own rounds do not finish its transfers");
  }
  return path;
}

// Rates of each round of transfers along `routes`, each at most `rate_cap`, starting with
// `start` bytes (0: none).
FlowNetwork::Rounds FlowNetwork::solve_rounds(const std::vector<const topology::Path*>& routes,
                                              double rate_cap, std::vector<double> remaining) {
  // Constraints for the links the phase uses only (in the order of their ids), not the whole
  // cluster's: a plan's cost must not grow with the cluster.
  std::vector<topology::LinkId> links;
  for (const topology::Path* route : routes) links.insert(links.end(), route->begin(), route->end());
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  MaxMinSolver solver;
  for (topology::LinkId link : links) solver.add_constraint(planner_.cluster().link(link).spec.effective_bandwidth());
  std::vector<std::optional<MaxMinSolver::VariableId>> variables(routes.size());
  std::vector<MaxMinSolver::ConstraintId> constraints;
  for (std::size_t t = 0; t < routes.size(); ++t) {
    if (remaining[t] <= 0) continue;
    constraints.clear();
    for (topology::LinkId link : *routes[t]) {
      constraints.push_back(static_cast<MaxMinSolver::ConstraintId>(
          std::lower_bound(links.begin(), links.end(), link) - links.begin()));
    }
    variables[t] = solver.add_variable(1.0, constraints, rate_cap);
  }
  Rounds rounds;
  while (solver.variable_count() > 0) {
    solver.solve();
    std::vector<double> rates(routes.size(), 0);
    for (std::size_t t = 0; t < routes.size(); ++t) {
      if (variables[t]) rates[t] = solver.rate(*variables[t]);
    }
    advance(rates, remaining);
    for (std::size_t t = 0; t < routes.size(); ++t) {
      if (variables[t] && remaining[t] <= 0) {
        solver.remove_variable(*variables[t]);
        variables[t].reset();
      }
    }
    rounds.push_back(std::move(rates));
  }
  return rounds;
}

// One round: every transfer with a rate runs until the soonest finishes; returns that time.
// A transfer with under a picosecond's worth left has finished (its remaining becomes 0).
double FlowNetwork::advance(const std::vector<double>& rates, std::vector<double>& remaining) {
  double soonest = std::numeric_limits<double>::infinity();
  for (std::size_t t = 0; t < rates.size(); ++t) {
    if (rates[t] > 0) soonest = std::min(soonest, remaining[t] / rates[t]);
  }
  for (std::size_t t = 0; t < rates.size(); ++t) {
    if (rates[t] <= 0) continue;
    remaining[t] -= rates[t] * soonest;
    if (remaining[t] <= rates[t] * 1e-12) remaining[t] = 0;
  }
  return soonest;
}

// `path` from solved rounds, for transfers starting with `start` bytes; false if the transfers
// that finish in some round are not those the rounds were solved with.
bool FlowNetwork::replay(const Rounds& rounds, std::vector<double> remaining, Trajectory& path) {
  path.rates = &rounds;
  double now = 0;
  for (const std::vector<double>& rates : rounds) {
    for (std::size_t t = 0; t < rates.size(); ++t) {
      if ((rates[t] > 0) != (remaining[t] > 0)) return false;
    }
    now += advance(rates, remaining);
    path.round_end_s.push_back(now);
  }
  return std::all_of(remaining.begin(), remaining.end(), [](double bytes) { return bytes <= 0; });
}

void FlowNetwork::set_solo_links(std::uint32_t id, std::uint32_t value) {
  const Comm& comm = comms_[id];
  for (const topology::Path* path : comm.plan->paths[comm.phase]) {
    for (topology::LinkId link : *path) link_solo_[link] = value;
  }
}

void FlowNetwork::mark_solo_links() {
  if (!unmarked_solo_) return;
  set_solo_links(*unmarked_solo_, *unmarked_solo_ + 1);
  unmarked_solo_.reset();
}

void FlowNetwork::release_solo_links(std::uint32_t id) {
  if (unmarked_solo_ == id) {
    unmarked_solo_.reset();
    return;
  }
  set_solo_links(id, 0);
}

// Other traffic arrives on its links: turn a solo phase into flows with the bytes each
// transfer has left.
void FlowNetwork::materialize_solo(std::uint32_t id) {
  const Solo solo = solos_.at(id);
  solos_.erase(id);
  release_solo_links(id);
  engine_.cancel(solo.end);
  Comm& comm = comms_[id];
  const collectives::Phase& phase = comm.plan->schedule.phases[comm.phase];
  const auto& routes = comm.plan->paths[comm.phase];
  const double elapsed = (engine_.now() - solo.started).seconds();
  std::vector<double> remaining(routes.size(), phase.steps * comm.plan->wire_bytes_per_transfer(comm.phase));
  double round_start = 0;
  for (std::size_t r = 0; r < solo.trajectory->round_end_s.size() && round_start < elapsed; ++r) {
    const double span = std::min(solo.trajectory->round_end_s[r], elapsed) - round_start;
    for (std::size_t t = 0; t < routes.size(); ++t) remaining[t] -= (*solo.trajectory->rates)[r][t] * span;
    round_start = solo.trajectory->round_end_s[r];
  }
  for (std::size_t t = 0; t < routes.size(); ++t) {
    if (!routes[t]->empty() && remaining[t] > 0) open_flow(id, remaining[t], *routes[t]);
  }
  if (comm.open_flows == 0) {  // it was finishing right now
    engine_.schedule_after(Time::zero(), [this, id] { finish_phase(id); });
  }
}

void FlowNetwork::finish_phase(std::uint32_t id) {
  ++comms_[id].phase;
  begin_phase(id);
}

void FlowNetwork::open_flow(std::uint32_t comm, double bytes, const topology::Path& path) {
  const MaxMinSolver::VariableId variable =
      solver_.add_variable(1.0, path, comms_[comm].plan->transfer_rate_cap);
  if (variable >= flows_.size()) {
    flows_.resize(variable + 1);
    flow_visit_.resize(variable + 1, 0);
  }
  Flow& flow = flows_[variable];
  flow.comm = comm;
  flow.remaining_bytes = bytes;
  flow.rate = 0;
  flow.updated = engine_.now();
  flow.live = true;
  ++flow.version;
  ++live_flows_;
  ++comms_[comm].open_flows;
  for (topology::LinkId link : path) {
    link_users_[link].push_back(variable);
    touched_.push_back(link);
  }
}

void FlowNetwork::close_flow(MaxMinSolver::VariableId variable) {
  for (topology::LinkId link : solver_.constraints_of(variable)) {
    auto& users = link_users_[link];
    users.erase(std::find(users.begin(), users.end(), variable));
    touched_.push_back(link);
  }
  solver_.remove_variable(variable);
  flows_[variable].live = false;
  ++flows_[variable].version;
  --live_flows_;
}

void FlowNetwork::resolve_touched() {
  // The connected component of the flow–link graph around the touched links.
  if (++visit_ == 0) {
    std::fill(link_visit_.begin(), link_visit_.end(), 0);
    std::fill(flow_visit_.begin(), flow_visit_.end(), 0);
    visit_ = 1;
  }
  component_.clear();
  std::vector<topology::LinkId> frontier;
  for (topology::LinkId link : touched_) {
    if (link_visit_[link] != visit_) {
      link_visit_[link] = visit_;
      frontier.push_back(link);
    }
  }
  touched_.clear();
  for (std::size_t next = 0; next < frontier.size(); ++next) {
    for (MaxMinSolver::VariableId variable : link_users_[frontier[next]]) {
      if (flow_visit_[variable] == visit_) continue;
      flow_visit_[variable] = visit_;
      component_.push_back(variable);
      for (topology::LinkId link : solver_.constraints_of(variable)) {
        if (link_visit_[link] != visit_) {
          link_visit_[link] = visit_;
          frontier.push_back(link);
        }
      }
    }
  }
  if (component_.empty()) return;
  const Time now = engine_.now();
  for (MaxMinSolver::VariableId variable : component_) {  // bytes sent at the old rates
    Flow& flow = flows_[variable];
    flow.remaining_bytes -= flow.rate * (now - flow.updated).seconds();
    flow.updated = now;
  }
  solver_.solve(component_);
  for (MaxMinSolver::VariableId variable : component_) {
    Flow& flow = flows_[variable];
    flow.rate = solver_.rate(variable);
    ++flow.version;
    const double seconds = std::isinf(flow.rate) ? 0 : std::max(0.0, flow.remaining_bytes) / flow.rate;
    completions_.push({now + Time::from_seconds(seconds), variable, flow.version});
  }
  arm();
}

// Keeps one engine event at the earliest valid completion.
void FlowNetwork::arm() {
  while (!completions_.empty()) {
    const Completion& top = completions_.top();
    if (flows_[top.flow].live && flows_[top.flow].version == top.version) break;
    completions_.pop();
  }
  if (completions_.empty()) {
    if (next_completion_) engine_.cancel(next_completion_->second);
    next_completion_.reset();
    return;
  }
  const Time when = completions_.top().when;
  if (next_completion_ && next_completion_->first == when) return;
  if (next_completion_) engine_.cancel(next_completion_->second);
  next_completion_ = {when, engine_.schedule_at(when, [this] { on_completion(); })};
}

void FlowNetwork::on_completion() {
  next_completion_.reset();
  const Time now = engine_.now();
  // Every flow due by now has finished: at its completion time what is left would take
  // under a picosecond at its rate.
  std::vector<std::uint32_t> finished_comms;
  while (!completions_.empty() && completions_.top().when <= now) {
    const Completion done = completions_.top();
    completions_.pop();
    const Flow& flow = flows_[done.flow];
    if (!flow.live || flow.version != done.version) continue;
    const std::uint32_t comm = flow.comm;
    close_flow(done.flow);
    if (--comms_[comm].open_flows == 0) finished_comms.push_back(comm);
  }
  resolve_touched();
  std::sort(finished_comms.begin(), finished_comms.end());  // deterministic order
  for (std::uint32_t id : finished_comms) finish_phase(id);
  arm();
}

}  // namespace sim
