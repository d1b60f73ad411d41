// Progressive filling with a lazy min-heap of constraint fair shares (see maxmin.h).
#include "sim/net/maxmin.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>

namespace sim {

MaxMinSolver::ConstraintId MaxMinSolver::add_constraint(double capacity) {
  capacity_.push_back(capacity);
  return static_cast<ConstraintId>(capacity_.size() - 1);
}

MaxMinSolver::VariableId MaxMinSolver::add_variable(double weight,
                                                    const std::vector<ConstraintId>& constraints) {
  VariableId id;
  if (free_ids_.empty()) {
    id = static_cast<VariableId>(weight_.size());
    weight_.push_back(weight);
    crossings_.push_back(constraints);
    alive_.push_back(1);
    rate_.push_back(0);
  } else {
    id = free_ids_.back();
    free_ids_.pop_back();
    weight_[id] = weight;
    crossings_[id] = constraints;
    alive_[id] = 1;
    rate_[id] = 0;
  }
  ++live_;
  return id;
}

void MaxMinSolver::remove_variable(VariableId variable) {
  if (!alive_[variable]) return;
  alive_[variable] = 0;
  crossings_[variable].clear();
  rate_[variable] = 0;
  free_ids_.push_back(variable);
  --live_;
}

void MaxMinSolver::solve() {
  const std::size_t constraints = capacity_.size();
  const std::size_t variables = weight_.size();
  remaining_.assign(capacity_.begin(), capacity_.end());
  active_weight_.assign(constraints, 0.0);
  frozen_.assign(variables, 0);
  // Users of each constraint, in compressed rows.
  users_begin_.assign(constraints + 1, 0);
  for (VariableId v = 0; v < variables; ++v) {
    if (!alive_[v]) continue;
    for (ConstraintId c : crossings_[v]) {
      ++users_begin_[c + 1];
      active_weight_[c] += weight_[v];
    }
  }
  for (std::size_t c = 0; c < constraints; ++c) users_begin_[c + 1] += users_begin_[c];
  users_.resize(users_begin_[constraints]);
  {
    std::vector<std::uint32_t> fill(users_begin_.begin(), users_begin_.end() - 1);
    for (VariableId v = 0; v < variables; ++v) {
      if (!alive_[v]) continue;
      for (ConstraintId c : crossings_[v]) users_[fill[c]++] = v;
    }
  }
  using Entry = std::pair<double, ConstraintId>;  // (fair share, constraint)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  auto share = [this](ConstraintId c) { return std::max(0.0, remaining_[c]) / active_weight_[c]; };
  for (ConstraintId c = 0; c < constraints; ++c) {
    if (active_weight_[c] > 0) heap.emplace(share(c), c);
  }
  while (!heap.empty()) {
    const auto [level, c] = heap.top();
    heap.pop();
    if (active_weight_[c] <= 0) continue;                // every user already frozen
    if (share(c) != level) continue;                     // stale entry: a newer one exists
    for (std::uint32_t u = users_begin_[c]; u < users_begin_[c + 1]; ++u) {
      const VariableId v = users_[u];
      if (frozen_[v]) continue;
      frozen_[v] = 1;
      rate_[v] = level * weight_[v];
      for (ConstraintId other : crossings_[v]) {
        remaining_[other] -= rate_[v];
        active_weight_[other] -= weight_[v];
        if (other != c && active_weight_[other] > 1e-12) heap.emplace(share(other), other);
      }
    }
    active_weight_[c] = 0;
  }
  // Variables that cross no constraint are unconstrained.
  for (VariableId v = 0; v < variables; ++v) {
    if (alive_[v] && crossings_[v].empty()) rate_[v] = std::numeric_limits<double>::infinity();
  }
}

}  // namespace sim
