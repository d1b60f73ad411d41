// Weighted max-min fair sharing: the solver behind the congestion-aware flow model.
//
// Variables (flows) share constraints (links) of fixed capacity. A max-min fair allocation
// gives every variable rate = weight × s for the largest s such that no constraint is over
// capacity, and no variable can grow without shrinking one whose rate is already no larger
// (per unit weight). Progressive filling computes it (Bertsekas & Gallager, Data Networks,
// §6.5.2): raise all unfrozen variables' rates together; when a constraint saturates, freeze
// the variables that cross it; repeat. With a heap keyed by each constraint's fair share the
// cost is O((V·L + C) log C) for V variables crossing L constraints each.
//
// A variable may also carry a bound, a rate it never exceeds whatever the constraints leave it
// (SimGrid's lmm variable bound; dtsim's use: an NCCL send whose CTAs copy slower than its
// links run). Progressive filling then freezes a bounded variable when the rising level reaches
// bound / weight, before any constraint it crosses saturates, and the others share what it
// leaves.
//
// The allocation splits over the connected components of the variable–constraint graph, so
// a caller that knows which component changed solves only that one (solve(variables)).
//
// The solver knows nothing but constraints, variables and weights (SimGrid's lmm split):
// the network model maps links to constraints and transfers to variables.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace sim {

class MaxMinSolver {
 public:
  using ConstraintId = std::uint32_t;
  using VariableId = std::uint32_t;

  ConstraintId add_constraint(double capacity);
  std::size_t constraint_count() const { return capacity_.size(); }
  double capacity(ConstraintId constraint) const { return capacity_[constraint]; }

  // A variable crossing `constraints`, its rate at most `bound`. Ids of removed variables are
  // reused. A constraint listed n times carries the variable n times (n·rate of its capacity,
  // n·weight of its users): n identical flows folded into one variable, each at its rate.
  VariableId add_variable(double weight, const std::vector<ConstraintId>& constraints,
                          double bound = std::numeric_limits<double>::infinity());
  void remove_variable(VariableId variable);
  std::size_t variable_count() const { return live_; }

  // Computes every live variable's rate.
  void solve();
  // Computes the rates of `variables`, which must be closed: every live variable crossing one
  // of their constraints is among them (a union of connected components).
  void solve(const std::vector<VariableId>& variables);
  double rate(VariableId variable) const { return rate_[variable]; }
  const std::vector<ConstraintId>& constraints_of(VariableId variable) const { return crossings_[variable]; }

 private:
  std::vector<double> capacity_;
  // Variables: weight, constraint list (in a shared pool), liveness, rate.
  std::vector<double> weight_;
  std::vector<double> bound_;
  std::vector<std::vector<ConstraintId>> crossings_;
  std::vector<std::uint8_t> alive_;
  std::vector<double> rate_;
  std::vector<VariableId> free_ids_;
  std::size_t live_ = 0;
  // Scratch for solve(), indexed by the constraints and variables of one solve (local ids).
  std::vector<std::uint32_t> local_of_;       // constraint → local index, valid when stamped
  std::vector<std::uint32_t> local_stamp_;
  std::uint32_t stamp_ = 0;
  std::vector<ConstraintId> involved_;        // local → constraint
  std::vector<double> remaining_;
  std::vector<double> active_weight_;
  std::vector<std::uint32_t> users_begin_;
  std::vector<std::uint32_t> users_;          // local variable indices
  std::vector<std::uint32_t> fill_;           // next free place in each constraint's row of users_
  using ShareEntry = std::pair<double, std::uint32_t>;  // (fair share, local constraint)
  std::vector<ShareEntry> heap_;
  std::vector<std::uint8_t> dirty_;     // per local constraint: its share changed this event
  std::vector<std::uint32_t> changed_;  // those constraints
  std::vector<std::uint8_t> frozen_;
  std::vector<std::pair<double, std::uint32_t>>
      bounded_;  // (bound / weight, local variable), ascending
  std::vector<VariableId> everyone_;
};

}  // namespace sim
