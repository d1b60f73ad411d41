// Small helpers for lowering code: appending ops to one rank's program by stream name.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "strategies/program/program.h"

namespace strategies {

// A Program too large to build: more ops than one lowering's OpBudget.
class ProgramTooLarge : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The ops one lowering may create, summed over its distinct rank programs (≈ 250 bytes each
// with their names and dependencies: 8 million ≈ 2 GB), so that a scenario whose Program would
// not fit in memory — ten thousand steps, millions of micro-batches or layers — is refused
// while it is built, not by the allocator. The largest example scenario (3D parallelism on
// 1,024 GPUs) needs 96,601; the largest validation row (Megatron's 1T on 3,072 GPUs: 64 stages
// of 512 micro-batches, unfused attention) about 5 million.
class OpBudget {
 public:
  static constexpr std::int64_t kOps = 8'000'000;
  static constexpr const char* kOpsText = "8,000,000";  // kOps as the messages print it
  // Counts one op; throws ProgramTooLarge past the budget.
  void spend() {
    if (++spent_ > kOps) {
      throw ProgramTooLarge(
          std::string("the Program would have more than ") + kOpsText +
          " ops: fewer steps, micro-batches or layers, please (one step gives the step time)");
    }
  }
  std::int64_t spent() const { return spent_; }
  // After the first of `steps` steps of a rank program, which took `step_ops` ops: throws at once
  // when the other steps would pass the budget, naming training.steps (ten thousand steps were
  // refused only once 8 million ops were built, 11 s later).
  void forecast_steps(std::int64_t step_ops, std::int32_t steps) const;

 private:
  std::int64_t spent_ = 0;
};

class RankProgramBuilder {
 public:
  explicit RankProgramBuilder(OpBudget& budget) : budget_(&budget) {}
  program::OpIndex add(std::string name, program::StreamId stream, program::OpBody body,
                       std::vector<program::OpIndex> deps = {});
  program::OpIndex allocate(std::string tensor, program::StreamId stream,
                            program::MemoryCategory category, double bytes,
                            std::vector<program::OpIndex> deps = {});
  program::OpIndex release(std::string tensor, program::StreamId stream,
                           program::MemoryCategory category, double bytes,
                           std::vector<program::OpIndex> deps = {});
  program::RankProgram take() { return std::move(program_); }
  // Put before the name of every op added from now on (interleaved pipelines: "chunk1.").
  void set_name_prefix(std::string prefix) { prefix_ = std::move(prefix); }
  // The index the next op will get.
  program::OpIndex next_index() const { return static_cast<program::OpIndex>(program_.ops.size()); }

 private:
  OpBudget* budget_;
  program::RankProgram program_;
  std::string prefix_;
};

}  // namespace strategies
