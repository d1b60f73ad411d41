// Entry point of the strategies layer: a model, a training setup and a parallel strategy go
// in, a Program comes out. Each strategy has its own lowering (ddp.h, ...); they share the
// transformer op builders and memory accounting.
#pragma once

#include <string>
#include <vector>

#include "strategies/model.h"
#include "strategies/program/program.h"
#include "strategies/training.h"

namespace strategies {

struct LoweringInput {
  ModelSpec model;
  TrainingSpec training;
  ParallelSpec parallel;
  DdpSpec ddp;
  ZeroSpec zero;
  FsdpSpec fsdp;
  PsSpec ps;
  std::int32_t parameter_servers = 0;  // strategy "ps": server hosts in the cluster
};

std::vector<std::string> strategy_names();
// Every rank-group family a lowering may create ([collectives.groups.<family>] keys).
std::vector<std::string> group_family_names();
// Throws std::invalid_argument for an unknown strategy.
program::Program lower(const LoweringInput& input);

}  // namespace strategies
