// Pipeline-parallel schedules: the order in which one stage runs the forward and backward passes
// of the step's micro-batches.
//   GPipe (Huang et al., 2019): all forwards, then all backwards; every micro-batch's
//     activations are alive at once.
//   1F1B (PipeDream-Flush; Narayanan et al., 2021): stage s of p runs min(p−s−1, M) warm-up
//     forwards, then alternates one forward and one backward, then drains the backwards; at
//     most p−s micro-batches are in flight on stage s.
// Both leave the same bubble: (p−1)/(M+p−1) of the step idle on each stage when forward and
// backward times are uniform.
#pragma once

#include <cstdint>
#include <vector>

#include "strategies/training.h"

namespace strategies {

struct PipelineSlot {
  bool forward = true;
  std::int64_t micro = 0;
};

std::vector<PipelineSlot> pipeline_order(PipelineSchedule schedule, std::int32_t stages, std::int32_t stage,
                                         std::int64_t micro_batches);

// The textbook bubble fraction (p−1)/(M+p−1).
double pipeline_bubble_fraction(std::int32_t stages, std::int64_t micro_batches);

}  // namespace strategies
