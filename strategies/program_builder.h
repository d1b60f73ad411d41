// Small helpers for lowering code: appending ops to one rank's program by stream name.
#pragma once

#include <string>
#include <vector>

#include "strategies/program/program.h"

namespace strategies {

class RankProgramBuilder {
 public:
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
  program::RankProgram program_;
  std::string prefix_;
};

}  // namespace strategies
