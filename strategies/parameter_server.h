// Parameter-server training lowered to a Program (chapter §6.2.1; Li et al., OSDI 2014).
//
// W workers (the GPUs) and S servers (CPU hosts). Parameters are sharded by key range: server
// s owns 1/S of them, with their fp32 master copy and optimizer states. Each worker runs
// forward and backward over its micro-batches, pushes its gradients (one merged message per
// server) and pulls the parameters back.
//   BSP  each server waits for every worker's push, applies the optimizer once to the summed
//        gradients, then serves the pulls — modelled as push and pull collectives over all
//        workers and servers, so the server NIC carries W/S gradient copies at once: with one
//        100 Gb/s server NIC and 64 workers each gets about 1.5 Gb/s (VALIDATION.md C5).
//   SSP, ASP  each worker sends its push to each server on its own; a server applies every
//        push as it arrives (one optimizer pass over its shard per push, on a stream of its
//        own per worker: concurrent updates share nothing but the server's NIC) and sends that
//        worker the updated shard. Under SSP with bound s the reply for step t also waits for
//        every worker's push of step t − s, so no worker runs more than s steps ahead of the
//        slowest (Ho et al., NIPS 2013); s = 0 is bulk-synchronous in lock-step.
// Staleness of a gradient = the number of updates the server applied between sending the
// parameters it was computed on and applying it (0 under BSP); ProgramInfo::parameter_server
// names the ops that measure it on a timeline.
#pragma once

#include "strategies/lowering.h"

namespace strategies {

program::Program lower_parameter_server(const LoweringInput& input);

}  // namespace strategies
