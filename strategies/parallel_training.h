// Data, tensor and pipeline parallelism together (Megatron-LM's 3D parallelism), lowered to a
// Program — the lowering of the ddp, zero and fsdp strategies.
//
// Rank r has coordinates (dp, tp, pp) in Megatron's order (layout.h). Pipeline stage s holds
// an equal share of the layers (the first stage also the embedding, the last the head); its
// ranks run the stage's blocks, split over their tensor-parallel group (transformer_ops.h),
// for every micro-batch in the pipeline schedule's order (pipeline_schedule.h), receiving
// activations from the previous stage and gradients from the next over point-to-point
// transfers on the fabric. How the data-parallel replicas keep and synchronise their model
// states is the data-parallel policy's (data_parallel.h): DDP, ZeRO-1/2/3 or FSDP. All ranks
// of one stage share one op list.
#pragma once

#include "strategies/lowering.h"

namespace strategies {

program::Program lower_parallel(const LoweringInput& input);

}  // namespace strategies
