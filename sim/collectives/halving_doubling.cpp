// Recursive halving-doubling (Rabenseifner; Thakur, Rabenseifner & Gropp, IJHPCA 2005) and
// the dissemination barrier (Hensgen, Finkel & Manber, 1988), with the fold/unfold steps that
// let groups of any size run them (see schedule.h).
#include "sim/collectives/schedule_builders.h"

namespace collectives::detail {
namespace {

using program::CollectiveKind;

std::int32_t floor_power_of_two(std::int32_t n) {
  std::int32_t power = 1;
  while (power * 2 <= n) power *= 2;
  return power;
}

// Every active member exchanges with the one at `distance` (XOR), both directions.
std::vector<Transfer> exchange(const std::vector<std::int32_t>& active, std::int32_t distance) {
  std::vector<Transfer> transfers;
  for (std::size_t a = 0; a < active.size(); ++a) {
    transfers.push_back({active[a], active[a ^ static_cast<std::size_t>(distance)]});
  }
  return transfers;
}

}  // namespace

Schedule halving_doubling_schedule(const CollectiveSpec& spec, const NodeGroups& groups) {
  Schedule schedule;
  const std::int32_t p = spec.members;
  if (p < 2) return schedule;
  // Node-major order: the first exchanges (the largest messages, at distance 1) stay inside
  // a node.
  const std::vector<std::int32_t> order = groups.flattened();
  const double m = static_cast<double>(effective_bytes(spec));

  if (spec.kind == CollectiveKind::kBarrier) {
    for (std::int32_t distance = 1; distance < p; distance *= 2) {
      std::vector<Transfer> round;
      for (std::int32_t i = 0; i < p; ++i) round.push_back({order[i], order[(i + distance) % p]});
      schedule.phases.push_back({"dissemination", 1, m, std::move(round)});
    }
    return schedule;
  }

  const std::int32_t core = floor_power_of_two(p);
  const std::int32_t extra = p - core;
  std::vector<std::int32_t> active;  // the power-of-two core; extras fold into a neighbour
  std::vector<Transfer> fold;
  std::vector<Transfer> unfold;
  for (std::int32_t i = 0; i < extra; ++i) {
    fold.push_back({order[2 * i + 1], order[2 * i]});
    unfold.push_back({order[2 * i], order[2 * i + 1]});
    active.push_back(order[2 * i]);
  }
  for (std::int32_t i = 2 * extra; i < p; ++i) active.push_back(order[i]);

  const bool reduce_scatter = spec.kind == CollectiveKind::kAllReduce ||
                              spec.kind == CollectiveKind::kReduceScatter;
  const bool all_gather = spec.kind == CollectiveKind::kAllReduce ||
                          spec.kind == CollectiveKind::kAllGather;
  // Folding hands over what the extra member contributes: its whole input before a
  // reduction, its own block before an all-gather.
  if (extra > 0) schedule.phases.push_back({"fold", 1, reduce_scatter ? m : m / p, fold});
  if (reduce_scatter) {
    double block = m;
    for (std::int32_t distance = 1; distance < core; distance *= 2) {
      block /= 2;
      schedule.phases.push_back({"recursive halving", 1, block, exchange(active, distance)});
    }
  }
  if (all_gather) {
    // Distances shrink as blocks grow: the largest exchange (M/2) is again at distance 1,
    // which also retraces the halving in reverse. (A folded group gathers M/core blocks.)
    double block = m / core;
    for (std::int32_t distance = core / 2; distance >= 1; distance /= 2) {
      schedule.phases.push_back({"recursive doubling", 1, block, exchange(active, distance)});
      block *= 2;
    }
  }
  // Unfolding returns the result: the whole vector after an all-gather or all-reduce, the
  // extra member's own block after a reduce-scatter.
  if (extra > 0) schedule.phases.push_back({"unfold", 1, all_gather ? m : m / p, unfold});
  return schedule;
}

}  // namespace collectives::detail
