// Pipeline-parallel schedules: the order in which one stage runs the forward and backward passes
// of the step's micro-batches.
//   GPipe (Huang et al., 2019): all forwards, then all backwards; every micro-batch's
//     activations are alive at once.
//   1F1B (PipeDream-Flush; Narayanan et al., 2021): stage s of p runs min(p−s−1, M) warm-up
//     forwards, then alternates one forward and one backward, then drains the backwards; at
//     most p−s micro-batches are in flight on stage s.
//   Interleaved 1F1B (Narayanan et al., SC 2021, §2.2; Megatron-LM's schedule): each rank holds
//     v model chunks — virtual stages c·p + s for c < v — and runs micro-batches in groups of p,
//     chunk by chunk: its k-th forward is chunk (k mod p·v) div p of micro-batch
//     (k div p·v)·p + k mod p, its k-th backward the same with chunks reversed; stage s runs
//     min(2(p−s−1) + (v−1)·p, v·M) warm-up forwards, then alternates, then drains. M must be a
//     multiple of p.
// GPipe and 1F1B leave the same bubble, (p−1)/(M+p−1) of the step idle on each stage when
// forward and backward times are uniform; interleaving divides the idle time by v:
// (p−1)/(v·M+p−1).
#pragma once

#include <cstdint>
#include <vector>

#include "strategies/training.h"

namespace strategies {

struct PipelineSlot {
  bool forward = true;
  std::int64_t micro = 0;
  std::int32_t chunk = 0;  // the model chunk (interleaved 1F1B; 0 otherwise)
};

// `chunks` is v for interleaved 1F1B, 1 otherwise.
std::vector<PipelineSlot> pipeline_order(PipelineSchedule schedule, std::int32_t stages, std::int32_t stage,
                                         std::int64_t micro_batches, std::int32_t chunks = 1);

// The textbook bubble fraction (p−1)/(v·M+p−1) (v = 1 without interleaving).
double pipeline_bubble_fraction(std::int32_t stages, std::int64_t micro_batches, std::int32_t chunks = 1);

}  // namespace strategies
