// GPipe and 1F1B slot orders (see pipeline_schedule.h).
#include "strategies/pipeline_schedule.h"

#include <algorithm>

namespace strategies {

std::vector<PipelineSlot> pipeline_order(PipelineSchedule schedule, std::int32_t stages, std::int32_t stage,
                                         std::int64_t micro_batches) {
  std::vector<PipelineSlot> order;
  // One stage is plain gradient accumulation: each micro-batch's backward follows its forward
  // (1F1B with no warm-up), whatever the schedule says.
  if (schedule == PipelineSchedule::kGPipe && stages > 1) {
    for (std::int64_t m = 0; m < micro_batches; ++m) order.push_back({true, m});
    for (std::int64_t m = 0; m < micro_batches; ++m) order.push_back({false, m});
    return order;
  }
  const std::int64_t warmup = std::min<std::int64_t>(stages - stage - 1, micro_batches);
  std::int64_t next_forward = 0;
  std::int64_t next_backward = 0;
  for (; next_forward < warmup; ++next_forward) order.push_back({true, next_forward});
  while (next_forward < micro_batches) {
    order.push_back({true, next_forward++});
    order.push_back({false, next_backward++});
  }
  while (next_backward < micro_batches) order.push_back({false, next_backward++});
  return order;
}

double pipeline_bubble_fraction(std::int32_t stages, std::int64_t micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

}  // namespace strategies
