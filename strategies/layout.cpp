// Rank coordinates and group families for a dp × tp × pp layout (see layout.h).
#include "strategies/layout.h"

#include <numeric>
#include <stdexcept>

namespace strategies {

ParallelLayout::ParallelLayout(std::int32_t dp, std::int32_t tp, std::int32_t pp, std::int32_t ep, std::int32_t cp)
    : dp_(dp), tp_(tp), pp_(pp), ep_(ep), cp_(cp) {
  if (dp < 1 || tp < 1 || pp < 1 || ep < 1 || cp < 1) throw std::invalid_argument("parallel degrees must be >= 1");
  if (dp % ep != 0) throw std::invalid_argument("ep must divide dp");
}

std::int32_t ParallelLayout::rank_of(RankCoordinates c) const {
  return c.tp + tp_ * (c.cp + cp_ * (c.dp + dp_ * c.pp));
}

RankCoordinates ParallelLayout::coordinates(std::int32_t rank) const {
  return {(rank / (tp_ * cp_)) % dp_, rank % tp_, rank / (tp_ * cp_ * dp_), (rank / tp_) % cp_};
}

std::vector<program::GroupFamily> ParallelLayout::group_families() const {
  std::vector<std::vector<std::int32_t>> world_group(1, std::vector<std::int32_t>(world()));
  std::iota(world_group[0].begin(), world_group[0].end(), 0);
  std::vector<std::vector<std::int32_t>> dp_groups;
  std::vector<std::vector<std::int32_t>> tp_groups;
  std::vector<std::vector<std::int32_t>> pp_groups;
  std::vector<std::vector<std::int32_t>> cp_groups;
  for (std::int32_t pp = 0; pp < pp_; ++pp) {
    for (std::int32_t tp = 0; tp < tp_; ++tp) {
      auto& group = dp_groups.emplace_back();
      for (std::int32_t dp = 0; dp < dp_; ++dp) {
        for (std::int32_t cp = 0; cp < cp_; ++cp) group.push_back(rank_of({dp, tp, pp, cp}));
      }
    }
    for (std::int32_t dp = 0; dp < dp_; ++dp) {
      for (std::int32_t cp = 0; cp < cp_; ++cp) {
        auto& group = tp_groups.emplace_back();
        for (std::int32_t tp = 0; tp < tp_; ++tp) group.push_back(rank_of({dp, tp, pp, cp}));
      }
      for (std::int32_t tp = 0; tp < tp_; ++tp) {
        auto& group = cp_groups.emplace_back();
        for (std::int32_t cp = 0; cp < cp_; ++cp) group.push_back(rank_of({dp, tp, pp, cp}));
      }
    }
  }
  for (std::int32_t dp = 0; dp < dp_; ++dp) {
    for (std::int32_t cp = 0; cp < cp_; ++cp) {
      for (std::int32_t tp = 0; tp < tp_; ++tp) {
        auto& group = pp_groups.emplace_back();
        for (std::int32_t pp = 0; pp < pp_; ++pp) group.push_back(rank_of({dp, tp, pp, cp}));
      }
    }
  }
  std::vector<program::GroupFamily> families;
  families.push_back(program::make_group_family("world", world(), std::move(world_group)));
  families.push_back(program::make_group_family("dp", world(), std::move(dp_groups)));
  families.push_back(program::make_group_family("tp", world(), std::move(tp_groups)));
  families.push_back(program::make_group_family("pp", world(), std::move(pp_groups)));
  if (ep_ > 1) {
    std::vector<std::vector<std::int32_t>> ep_groups;
    std::vector<std::vector<std::int32_t>> expert_dp_groups;
    for (std::int32_t pp = 0; pp < pp_; ++pp) {
      for (std::int32_t tp = 0; tp < tp_; ++tp) {
        for (std::int32_t cp = 0; cp < cp_; ++cp) {
          for (std::int32_t block = 0; block < dp_ / ep_; ++block) {
            auto& group = ep_groups.emplace_back();
            for (std::int32_t e = 0; e < ep_; ++e) group.push_back(rank_of({block * ep_ + e, tp, pp, cp}));
          }
        }
        // The ranks holding the same experts: one per expert-parallel group, over every cp rank.
        for (std::int32_t e = 0; e < ep_; ++e) {
          auto& group = expert_dp_groups.emplace_back();
          for (std::int32_t block = 0; block < dp_ / ep_; ++block) {
            for (std::int32_t cp = 0; cp < cp_; ++cp) group.push_back(rank_of({block * ep_ + e, tp, pp, cp}));
          }
        }
      }
    }
    families.push_back(program::make_group_family("ep", world(), std::move(ep_groups)));
    families.push_back(program::make_group_family("expert_dp", world(), std::move(expert_dp_groups)));
  }
  if (cp_ > 1) families.push_back(program::make_group_family("cp", world(), std::move(cp_groups)));
  return families;
}

std::vector<std::int32_t> block_placement(std::int32_t world) {
  std::vector<std::int32_t> placement(world);
  std::iota(placement.begin(), placement.end(), 0);
  return placement;
}

}  // namespace strategies
