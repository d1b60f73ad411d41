// Progressive filling with a lazy min-heap of constraint fair shares (see maxmin.h).
#include "sim/net/maxmin.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace sim {

MaxMinSolver::ConstraintId MaxMinSolver::add_constraint(double capacity) {
  capacity_.push_back(capacity);
  return static_cast<ConstraintId>(capacity_.size() - 1);
}

MaxMinSolver::VariableId MaxMinSolver::add_variable(double weight,
                                                    const std::vector<ConstraintId>& constraints,
                                                    double bound) {
  VariableId id;
  if (free_ids_.empty()) {
    id = static_cast<VariableId>(weight_.size());
    weight_.push_back(weight);
    bound_.push_back(bound);
    crossings_.push_back(constraints);
    alive_.push_back(1);
    rate_.push_back(0);
  } else {
    id = free_ids_.back();
    free_ids_.pop_back();
    weight_[id] = weight;
    bound_[id] = bound;
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
  everyone_.clear();
  for (VariableId v = 0; v < weight_.size(); ++v) {
    if (alive_[v]) everyone_.push_back(v);
  }
  solve(everyone_);
}

void MaxMinSolver::solve(const std::vector<VariableId>& variables) {
  // Local numbering of the constraints the variables cross.
  local_of_.resize(capacity_.size());
  local_stamp_.resize(capacity_.size(), 0);
  if (++stamp_ == 0) {  // wrapped: forget every old stamp
    std::fill(local_stamp_.begin(), local_stamp_.end(), 0);
    stamp_ = 1;
  }
  involved_.clear();
  for (VariableId v : variables) {
    for (ConstraintId c : crossings_[v]) {
      if (local_stamp_[c] == stamp_) continue;
      local_stamp_[c] = stamp_;
      local_of_[c] = static_cast<std::uint32_t>(involved_.size());
      involved_.push_back(c);
    }
  }
  const std::size_t constraints = involved_.size();
  remaining_.resize(constraints);
  active_weight_.assign(constraints, 0.0);
  for (std::size_t c = 0; c < constraints; ++c) remaining_[c] = capacity_[involved_[c]];
  frozen_.assign(variables.size(), 0);
  // Users of each constraint, in compressed rows.
  users_begin_.assign(constraints + 1, 0);
  for (VariableId v : variables) {
    for (ConstraintId c : crossings_[v]) {
      ++users_begin_[local_of_[c] + 1];
      active_weight_[local_of_[c]] += weight_[v];
    }
  }
  for (std::size_t c = 0; c < constraints; ++c) users_begin_[c + 1] += users_begin_[c];
  users_.resize(users_begin_[constraints]);
  fill_.assign(users_begin_.begin(), users_begin_.end() - 1);
  for (std::uint32_t i = 0; i < variables.size(); ++i) {
    for (ConstraintId c : crossings_[variables[i]]) users_[fill_[local_of_[c]]++] = i;
  }
  // A min-heap of (fair share, local constraint) in reused storage.
  std::vector<ShareEntry>& heap = heap_;
  heap.clear();
  const auto push = [&heap](double level, std::uint32_t c) {
    heap.emplace_back(level, c);
    std::push_heap(heap.begin(), heap.end(), std::greater<>{});
  };
  auto share = [this](std::uint32_t c) { return std::max(0.0, remaining_[c]) / active_weight_[c]; };
  for (std::uint32_t c = 0; c < constraints; ++c) {
    if (active_weight_[c] > 0) heap.emplace_back(share(c), c);
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>{});
  bounded_.clear();
  for (std::uint32_t i = 0; i < variables.size(); ++i) {
    const VariableId v = variables[i];
    if (std::isfinite(bound_[v])) bounded_.emplace_back(bound_[v] / weight_[v], i);
  }
  std::sort(bounded_.begin(), bounded_.end());
  std::size_t next_bound = 0;
  // Fixes variable i's rate and takes it out of its constraints' remaining capacity and weight;
  // the constraints whose share that raises are re-queued once per event (requeue_changed), not
  // once per frozen variable: a saturation may freeze thousands of variables at once.
  dirty_.assign(constraints, 0);
  changed_.clear();
  auto freeze = [&](std::uint32_t i, double rate) {
    frozen_[i] = 1;
    const VariableId v = variables[i];
    rate_[v] = rate;
    for (ConstraintId constraint : crossings_[v]) {
      const std::uint32_t other = local_of_[constraint];
      remaining_[other] -= rate;
      active_weight_[other] -= weight_[v];
      if (!dirty_[other]) {
        dirty_[other] = 1;
        changed_.push_back(other);
      }
    }
  };
  auto requeue_changed = [&] {
    for (std::uint32_t c : changed_) {
      dirty_[c] = 0;
      if (active_weight_[c] > 1e-12) push(share(c), c);
    }
    changed_.clear();
  };
  while (!heap.empty() || next_bound < bounded_.size()) {
    // A bound below every constraint's fair share freezes its variable first.
    if (next_bound < bounded_.size() &&
        (heap.empty() || bounded_[next_bound].first < heap.front().first)) {
      const std::uint32_t i = bounded_[next_bound++].second;
      if (!frozen_[i]) freeze(i, bound_[variables[i]]);
      requeue_changed();
      continue;
    }
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const auto [level, c] = heap.back();
    heap.pop_back();
    if (active_weight_[c] <= 0) continue;                // every user already frozen
    if (share(c) != level) continue;                     // stale entry: a newer one exists
    for (std::uint32_t u = users_begin_[c]; u < users_begin_[c + 1]; ++u) {
      const std::uint32_t i = users_[u];
      if (!frozen_[i]) freeze(i, level * weight_[variables[i]]);
    }
    active_weight_[c] = 0;
    requeue_changed();
  }
  // Variables that cross no constraint run at their bound (unbounded: infinitely fast).
  for (VariableId v : variables) {
    if (crossings_[v].empty()) rate_[v] = bound_[v];
  }
}

}  // namespace sim
