// The CPU kernels that stand in for a Program's compute ops on CPU ranks, shared by the MPI
// executor and `dtsim calibrate` (which times exactly these): OpenBLAS single-precision GEMMs
// of the op's shapes, attention as pairs of GEMMs, memory-bound kinds as one pass over the
// op's bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "strategies/program/program.h"

namespace backend::cpu {

// Scratch memory of one thread, grown to the largest op it has run.
struct Scratch {
  std::vector<float> a, b, c;
  std::vector<char> send, receive;
  static float* sized(std::vector<float>& buffer, std::int64_t elements) {
    if (static_cast<std::int64_t>(buffer.size()) < elements) buffer.assign(static_cast<std::size_t>(elements), 1.0f);
    return buffer.data();
  }
  static char* sized(std::vector<char>& buffer, std::int64_t bytes) {
    if (static_cast<std::int64_t>(buffer.size()) < bytes) buffer.assign(static_cast<std::size_t>(bytes), 1);
    return buffer.data();
  }
};

void run_compute(const program::ComputeOp& compute, Scratch& scratch);

}  // namespace backend::cpu
