// PyTorch DistributedDataParallel lowered to a Program (chapter §6.2.3–6.2.7).
//
// Every rank holds the full model. Per optimizer step and micro-batch: forward through the
// embedding, every layer and the head, then backward in reverse. Gradients are grouped into
// buckets in the order backward produces them (DDP rebuilds its buckets in that order after
// the first iteration): parameters are added to the current bucket until it holds at least
// `first_bucket_mb` (the first bucket) or `bucket_cap_mb` MiB, as Reducer does. A bucket's
// all-reduce is issued on the "comm" stream right after the backward op that completes its
// last gradient, so it overlaps the rest of backward. Under gradient accumulation with
// no_sync only the last micro-step all-reduces. The next compute after a synchronised
// backward (the optimizer step, or the next micro-step when no_sync is off) waits for every
// all-reduce, as DDP's finalize_backward makes the compute stream wait for the NCCL stream.
// An optional barrier after backward reproduces the chapter's per-step-barrier anti-pattern.
//
// Memory: model states at the start (parameters, gradients, fp32 master weights, optimizer
// moments, and a second gradient copy for the buckets unless gradient_as_bucket_view); each
// block's activations from its forward until its backward.
#pragma once

#include "strategies/lowering.h"

namespace strategies {

program::Program lower_ddp(const LoweringInput& input);

}  // namespace strategies
