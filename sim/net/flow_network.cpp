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
  link_load_.assign(cluster.link_count(), 0);
  link_fastest_.assign(cluster.link_count(), 0);
}

void FlowNetwork::start(const CommRequest& request, std::function<void(const CommResult&)> done) {
  begin_phase(comms_.acquire(Comm(planner_.plan(request), engine_.now(), std::move(done))));
}

void FlowNetwork::start_with_copies(
    const CommRequest& request, const std::vector<CommRequest>& copies,
    std::function<void(const CommResult&)> done,
    const std::function<void(std::size_t, const CommResult&)>& copy_done) {
  Comm comm(planner_.plan(request), engine_.now(), std::move(done));
  comm.copy_done = std::make_shared<const CopyDone>(copy_done);
  comm.copies.reserve(copies.size());
  for (std::size_t i = 0; i < copies.size(); ++i)
    comm.copies.push_back({&planner_.plan(copies[i]), i});
  fold_counts_.started += copies.size();
  begin_phase(comms_.acquire(std::move(comm)));
}

bool FlowNetwork::congruent(const CommPlan& leader, const CommPlan& copy) {
  if (copy.schedule.algorithm != leader.schedule.algorithm || copy.protocol != leader.protocol ||
      copy.transfer_rate_cap != leader.transfer_rate_cap ||
      copy.paths.size() != leader.paths.size()) {
    return false;
  }
  for (std::size_t p = 0; p < leader.paths.size(); ++p) {
    if (copy.schedule.phases[p].steps != leader.schedule.phases[p].steps ||
        copy.wire_bytes_per_transfer(p) != leader.wire_bytes_per_transfer(p) ||
        copy.costs[p].step_latency_s != leader.costs[p].step_latency_s ||
        copy.paths[p].size() != leader.paths[p].size()) {
      return false;
    }
    for (std::size_t t = 0; t < leader.paths[p].size(); ++t) {
      if (copy.paths[p][t]->empty() != leader.paths[p][t]->empty()) return false;
    }
  }
  return true;
}

void FlowNetwork::begin_phase(std::uint32_t id) {
  if (!comms_[id].copies.empty()) {
    // Copies whose phases or this phase's latency differ cannot start their flows with the class.
    // (By value: split_class's new comms may move comms_[id].)
    const CommPlan& leader = *comms_[id].plan;
    const std::size_t phase = comms_[id].phase;
    const auto unlike = [&leader, phase](const CommPlan& plan) {
      return plan.paths.size() != leader.paths.size() ||
             (phase < plan.paths.size() &&
              plan.costs[phase].step_latency_s != leader.costs[phase].step_latency_s);
    };
    const std::vector<std::uint32_t> apart = split_class(id, unlike);
    fold_counts_.unlike += apart.size();
    for (std::uint32_t copy : apart) begin_phase(copy);
  }
  Comm& comm = comms_[id];
  if (comm.phase == comm.plan->schedule.phases.size()) {
    std::vector<ClassCopy> copies = std::move(comm.copies);
    std::shared_ptr<const CopyDone> copy_done = std::move(comm.copy_done);
    auto [done, result] = comm.finish(engine_.now());
    comms_.release(id);
    // Through the engine, so that a collective never completes inside the start() that began it.
    engine_.schedule_after(
        Time::zero(), [done = std::move(done), result = std::move(result),
                       copies = std::move(copies), copy_done = std::move(copy_done)]() mutable {
          done(result);
          for (const ClassCopy& copy : copies) {
            result.bytes_sent = copy.plan->bytes_sent;
            (*copy_done)(copy.index, result);
          }
        });
    return;
  }
  const collectives::Phase& phase = comm.plan->schedule.phases[comm.phase];
  const double latency = phase.steps * comm.plan->costs[comm.phase].step_latency_s;
  comm.result.latency_seconds += latency;
  engine_.schedule_after(Time::from_seconds(latency), [this, id] { add_flows(id); });
}

void FlowNetwork::add_flows(std::uint32_t id) {
  if (comms_[id].copies.empty()) {
    add_phase_flows(id);
    return;
  }
  // Alone on its links a class is cheaper apart: each copy replays one solo trajectory. Sharing
  // links with other traffic it runs folded, but for copies whose plans are unlike its leader's.
  const bool idle = live_flows_ == 0 && solos_.empty();
  if (!idle) mark_solo_links();
  const bool alone = idle || class_links_free(comms_[id]);
  const CommPlan& leader = *comms_[id].plan;
  const std::vector<std::uint32_t> apart =
      split_class(id, [&](const CommPlan& copy) { return alone || !congruent(leader, copy); });
  (alone ? fold_counts_.run_apart : fold_counts_.unlike) += apart.size();
  add_phase_flows(id);
  for (std::uint32_t copy : apart) add_phase_flows(copy);
}

void FlowNetwork::add_phase_flows(std::uint32_t id) {
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
  bool isolated = comm.copies.empty();
  for (std::size_t p = 0; !idle && isolated && p < paths.size(); ++p) {
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
  const auto materialize_solos_on = [&](const CommPlan& plan) {
    for (const topology::Path* path : plan.paths[comm.phase]) {
      for (topology::LinkId link : *path) {
        if (link_solo_[link] != 0) materialize_solo(link_solo_[link] - 1);
      }
    }
  };
  materialize_solos_on(*comm.plan);
  for (const ClassCopy& copy : comm.copies) materialize_solos_on(*copy.plan);
  comm.class_flows.clear();
  for (std::uint32_t t = 0; t < paths.size(); ++t) {
    if (bytes > 0 && !paths[t]->empty()) open_flow(id, bytes, t);
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
    if (!routes[t]->empty() && remaining[t] > 0)
      open_flow(id, remaining[t], static_cast<std::uint32_t>(t));
  }
  if (comm.open_flows == 0) {  // it was finishing right now
    engine_.schedule_after(Time::zero(), [this, id] { finish_phase(id); });
  }
}

void FlowNetwork::finish_phase(std::uint32_t id) {
  ++comms_[id].phase;
  begin_phase(id);
}

void FlowNetwork::open_flow(std::uint32_t comm, double bytes, std::uint32_t transfer) {
  Comm& owner = comms_[comm];
  route_ = *owner.plan->paths[owner.phase][transfer];
  for (const ClassCopy& copy : owner.copies) {
    const topology::Path& path = *copy.plan->paths[owner.phase][transfer];
    route_.insert(route_.end(), path.begin(), path.end());
  }
  const MaxMinSolver::VariableId variable =
      solver_.add_variable(1.0, route_, owner.plan->transfer_rate_cap);
  if (!owner.copies.empty()) owner.class_flows.push_back(variable);
  if (variable >= flows_.size()) {
    flows_.resize(variable + 1);
    flow_visit_.resize(variable + 1, 0);
  }
  Flow& flow = flows_[variable];
  flow.comm = comm;
  flow.transfer = transfer;
  flow.remaining_bytes = bytes;
  flow.rate = 0;
  flow.updated = engine_.now();
  flow.live = true;
  ++flow.version;
  ++live_flows_;
  ++owner.open_flows;
  for (topology::LinkId link : route_) {
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
  if (const std::vector<std::uint32_t> unequal = unequal_classes(); !unequal.empty()) {
    touched_ = std::move(frontier);  // the component again, with the copies' own flows
    for (std::uint32_t id : unequal) unfold(id);
    resolve_touched();
    return;
  }
  for (MaxMinSolver::VariableId variable : component_) {
    Flow& flow = flows_[variable];
    flow.rate = solver_.rate(variable);
    ++flow.version;
    const double seconds = std::isinf(flow.rate) ? 0 : std::max(0.0, flow.remaining_bytes) / flow.rate;
    completions_.push({now + Time::from_seconds(seconds), variable, flow.version});
  }
  arm();
}

std::vector<std::uint32_t> FlowNetwork::unequal_classes() {
  std::vector<std::uint32_t> unequal;
  if (std::none_of(component_.begin(), component_.end(), [&](MaxMinSolver::VariableId v) {
        return !comms_[flows_[v].comm].copies.empty();
      })) {
    return unequal;
  }
  for (MaxMinSolver::VariableId variable : component_) {
    for (topology::LinkId link : solver_.constraints_of(variable))
      link_load_[link] = link_fastest_[link] = 0;
  }
  for (MaxMinSolver::VariableId variable : component_) {
    const double rate = solver_.rate(variable);
    for (topology::LinkId link : solver_.constraints_of(variable)) {
      link_load_[link] += rate;
      link_fastest_[link] = std::max(link_fastest_[link], rate);
    }
  }
  // Relative slack for the rounding of progressive filling's sums.
  constexpr double kSlack = 1e-9;
  const auto bottleneck = [&](topology::LinkId link, double rate) {
    return link_load_[link] >= solver_.capacity(link) * (1 - kSlack) &&
           rate >= link_fastest_[link] * (1 - kSlack);
  };
  for (MaxMinSolver::VariableId variable : component_) {
    const Flow& flow = flows_[variable];
    const Comm& comm = comms_[flow.comm];
    const double rate = solver_.rate(variable);
    if (comm.copies.empty() || rate >= comm.plan->transfer_rate_cap * (1 - kSlack)) continue;
    // The variable's links are the leader's route, then each copy's, in order.
    auto segment = solver_.constraints_of(variable).begin();
    const auto has_bottleneck = [&](const CommPlan& plan) {
      const auto end =
          segment + static_cast<std::ptrdiff_t>(plan.paths[comm.phase][flow.transfer]->size());
      const bool found =
          std::any_of(segment, end, [&](topology::LinkId link) { return bottleneck(link, rate); });
      segment = end;
      return found;
    };
    bool alike = has_bottleneck(*comm.plan);
    for (std::size_t c = 0; alike && c < comm.copies.size(); ++c)
      alike = has_bottleneck(*comm.copies[c].plan);
    if (!alike) unequal.push_back(flow.comm);
  }
  std::sort(unequal.begin(), unequal.end());
  unequal.erase(std::unique(unequal.begin(), unequal.end()), unequal.end());
  return unequal;
}

bool FlowNetwork::class_links_free(const Comm& comm) const {
  const auto free = [&](const CommPlan& plan) {
    return std::all_of(plan.paths[comm.phase].begin(), plan.paths[comm.phase].end(),
                       [&](const topology::Path* path) {
                         return std::all_of(path->begin(), path->end(), [&](topology::LinkId link) {
                           return link_users_[link].empty() && link_solo_[link] == 0;
                         });
                       });
  };
  return free(*comm.plan) && std::all_of(comm.copies.begin(), comm.copies.end(),
                                         [&](const ClassCopy& copy) { return free(*copy.plan); });
}

std::vector<std::uint32_t> FlowNetwork::split_class(
    std::uint32_t id, const std::function<bool(const CommPlan&)>& apart) {
  std::vector<ClassCopy> copies = std::move(comms_[id].copies);
  comms_[id].copies.clear();
  std::vector<std::uint32_t> ids;
  for (const ClassCopy& copy : copies) {
    if (!apart(*copy.plan)) {
      comms_[id].copies.push_back(copy);
      continue;
    }
    Comm own(*copy.plan, comms_[id].result.start,
             [copy_done = comms_[id].copy_done, index = copy.index](const CommResult& result) {
               (*copy_done)(index, result);
             });
    own.phase = comms_[id].phase;
    own.result.latency_seconds = comms_[id].result.latency_seconds;
    ids.push_back(comms_.acquire(std::move(own)));
  }
  if (comms_[id].copies.empty()) comms_[id].copy_done.reset();
  return ids;
}

void FlowNetwork::unfold(std::uint32_t id) {
  const Time now = engine_.now();
  std::vector<std::pair<std::uint32_t, double>>
      left;  // (transfer, bytes) of the class's open flows
  for (MaxMinSolver::VariableId variable : comms_[id].class_flows) {
    const Flow& flow = flows_[variable];
    if (!flow.live || flow.comm != id) continue;
    left.emplace_back(flow.transfer,
                      flow.remaining_bytes - flow.rate * (now - flow.updated).seconds());
    close_flow(variable);
    --comms_[id].open_flows;
  }
  comms_[id].class_flows.clear();
  fold_counts_.unfolded += comms_[id].copies.size();
  const std::vector<std::uint32_t> copies = split_class(id, [](const CommPlan&) { return true; });
  for (const auto& [transfer, bytes] : left) open_flow(id, bytes, transfer);
  for (const std::uint32_t comm : copies) {
    for (const auto& [transfer, bytes] : left) open_flow(comm, bytes, transfer);
  }
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
