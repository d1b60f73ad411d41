// Synchronous (BSP) parameter-server training lowered to a Program (chapter §6.2.1; Li et
// al., OSDI 2014).
//
// W workers (the GPUs) and S servers (CPU hosts). Parameters are sharded by key range: server
// s owns 1/S of them, with their fp32 master copy and optimizer states. Per step each worker
// runs forward and backward over its micro-batches, then pushes all its gradients — one
// merged message per server (range push) — and pulls the updated parameters back; each server
// waits for every worker's push (BSP), applies the optimizer to its shard, then serves the
// pulls. The server NIC carries W/S gradient copies per step: with one 100 Gb/s server NIC
// and 64 workers pushing at once, each worker gets about 1.5 Gb/s (VALIDATION.md C5).
// Stale-synchronous and asynchronous consistency come with the strategies issue.
#pragma once

#include "strategies/lowering.h"

namespace strategies {

program::Program lower_parameter_server(const LoweringInput& input);

}  // namespace strategies
