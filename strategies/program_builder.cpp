// RankProgramBuilder (see program_builder.h).
#include "strategies/program_builder.h"

#include <fmt/format.h>

#include <cmath>

namespace strategies {

void OpBudget::forecast_steps(std::int64_t step_ops, std::int32_t steps) const {
  if (spent_ + step_ops * (steps - 1) > kOps) {
    throw ProgramTooLarge(
        fmt::format("training.steps = {}: the Program would have more than {} ops ({} per step of "
                    "one rank's program): fewer steps, please (one step gives the step time)",
                    steps, kOpsText, step_ops));
  }
}

program::OpIndex RankProgramBuilder::add(std::string name, program::StreamId stream,
                                         program::OpBody body,
                                         std::vector<program::OpIndex> deps) {
  budget_->spend();
  program_.ops.push_back(program::Op{prefix_ + std::move(name), stream, std::move(deps), std::move(body)});
  return static_cast<program::OpIndex>(program_.ops.size() - 1);
}

program::OpIndex RankProgramBuilder::allocate(std::string tensor, program::StreamId stream,
                                              program::MemoryCategory category, double bytes,
                                              std::vector<program::OpIndex> deps) {
  return add(std::move(tensor), stream,
             program::MemoryOp{true, category, std::llround(bytes)}, std::move(deps));
}

program::OpIndex RankProgramBuilder::release(std::string tensor, program::StreamId stream,
                                             program::MemoryCategory category, double bytes,
                                             std::vector<program::OpIndex> deps) {
  return add(std::move(tensor), stream,
             program::MemoryOp{false, category, std::llround(bytes)}, std::move(deps));
}

}  // namespace strategies
