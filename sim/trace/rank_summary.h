// trace::RankSummary — what one rank did, in totals: the figures the report is built from
// (definitions in summary.h). Kept apart so a Timeline can carry precomputed summaries.
#pragma once

#include <array>
#include <cstdint>

#include "sim/trace/category.h"

namespace trace {

struct RankSummary {
  std::int32_t rank = 0;
  std::int64_t begin_ps = 0;  // first span start (0 if the rank has no span)
  std::int64_t end_ps = 0;    // last span end
  std::int64_t compute_ps = 0;
  std::int64_t comm_ps = 0;
  std::int64_t exposed_comm_ps = 0;
  std::int64_t comm_bytes = 0;  // sum of bytes sent by communication spans
  double flops = 0;             // sum of FLOPs of compute spans
  std::array<std::int64_t, kCategoryCount> busy_ps_by_category{};  // sum of span durations
  std::array<std::int64_t, kCategoryCount> bytes_by_category{};    // sum of span bytes
  std::array<std::int64_t, kCategoryCount>
      sending_ps_by_category{};  // durations of spans that sent bytes

  double overlap_ratio() const;
  double comm_compute_ratio() const;
};

}  // namespace trace
