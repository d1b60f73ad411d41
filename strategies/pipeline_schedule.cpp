// GPipe, 1F1B and interleaved 1F1B slot orders (see pipeline_schedule.h).
#include "strategies/pipeline_schedule.h"

#include <algorithm>

namespace strategies {

namespace {

// Interleaved 1F1B: the k-th forward (or backward) slot of a rank, as Megatron-LM numbers them.
PipelineSlot interleaved_slot(std::int64_t k, bool forward, std::int32_t stages, std::int32_t chunks) {
  const std::int64_t group = stages * std::int64_t{chunks};
  auto chunk = static_cast<std::int32_t>((k % group) / stages);
  if (!forward) chunk = chunks - 1 - chunk;
  return {forward, (k / group) * stages + k % stages, chunk};
}

std::vector<PipelineSlot> interleaved_order(std::int32_t stages, std::int32_t stage, std::int64_t micro_batches,
                                            std::int32_t chunks) {
  const std::int64_t total = micro_batches * chunks;
  const std::int64_t warmup =
      std::min<std::int64_t>(2 * std::int64_t{stages - stage - 1} + std::int64_t{chunks - 1} * stages, total);
  std::vector<PipelineSlot> order;
  std::int64_t next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; ++next_forward) order.push_back(interleaved_slot(next_forward, true, stages, chunks));
  while (next_forward < total) {
    order.push_back(interleaved_slot(next_forward++, true, stages, chunks));
    order.push_back(interleaved_slot(next_backward++, false, stages, chunks));
  }
  while (next_backward < total) order.push_back(interleaved_slot(next_backward++, false, stages, chunks));
  return order;
}

}  // namespace

std::vector<PipelineSlot> pipeline_order(PipelineSchedule schedule, std::int32_t stages, std::int32_t stage,
                                         std::int64_t micro_batches, std::int32_t chunks) {
  if (schedule == PipelineSchedule::kInterleaved && chunks > 1) {
    return interleaved_order(stages, stage, micro_batches, chunks);
  }
  std::vector<PipelineSlot> order;
  // One stage is plain gradient accumulation: each micro-batch's backward follows its forward
  // (1F1B with no warm-up), whatever the schedule says.
  if (schedule == PipelineSchedule::kGPipe && stages > 1) {
    for (std::int64_t m = 0; m < micro_batches; ++m) order.push_back({true, m, 0});
    for (std::int64_t m = 0; m < micro_batches; ++m) order.push_back({false, m, 0});
    return order;
  }
  const std::int64_t warmup = std::min<std::int64_t>(stages - stage - 1, micro_batches);
  std::int64_t next_forward = 0;
  std::int64_t next_backward = 0;
  for (; next_forward < warmup; ++next_forward) order.push_back({true, next_forward, 0});
  while (next_forward < micro_batches) {
    order.push_back({true, next_forward++, 0});
    order.push_back({false, next_backward++, 0});
  }
  while (next_backward < micro_batches) order.push_back({false, next_backward++, 0});
  return order;
}

double pipeline_bubble_fraction(std::int32_t stages, std::int64_t micro_batches, std::int32_t chunks) {
  return static_cast<double>(stages - 1) / static_cast<double>(chunks * micro_batches + stages - 1);
}

}  // namespace strategies
