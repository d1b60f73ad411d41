// backend::calibrate — measure the hardware a real run executes on, so that the simulator can
// price that hardware (`dtsim calibrate`, which writes the result as a hardware profile TOML
// scenarios reference with [scenario] hardware_profile).
//
// CPU path (MPI): every rank runs the same measurements at once, as ranks share the machine
// in a real run, and rank 0's figures are kept:
//   * GEMM rate by size: the executor's own single-precision GEMM (cpu_kernels.h) on square
//     n × n × n for n from 64 to 1024; efficiency(n) = rate(n) / best rate, the best rate being
//     the profile's peak;
//   * attention: the executor's GEMM pairs at sequence 128, head dimension 64;
//   * memory bandwidth: the executor's memory-bound pass over 64 MiB, counted as the op's bytes;
//   * per-op overhead: the same pass over 64 bytes;
//   * α, β between ranks 0 and 1: MPI ping-pong from 8 B to 8 MiB, one-way time = half the
//     round trip (Hockney's model t = α + bytes · β); α = an 8-byte message's time, β the
//     least-squares slope over messages of 64 KiB and more.
// Each figure is the median of `repeats` timings of at least `min_timing_s` each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace backend {

struct CalibrationOptions {
  int repeats = 5;
  double min_timing_s = 0.02;
};

struct Calibration {
  std::string host;
  int ranks = 1;
  std::vector<std::pair<double, double>> gemm_rates;  // (FLOPs of one GEMM, FLOP/s), ascending
  double peak_flops = 0;                              // the best GEMM rate
  double attention_flops = 0;                         // FLOP/s
  double memory_bytes_per_s = 0;
  double op_overhead_s = 0;
  // Between ranks 0 and 1; none with a single rank, or when the timings were too noisy to
  // give a positive slope.
  std::optional<double> latency_s;
  std::optional<double> bytes_per_s;
  bool peers_share_host = true;  // ranks 0 and 1 on one host: an intra-node link class
  std::vector<std::pair<std::int64_t, double>> one_way_s;  // (bytes, seconds)
};

// Collective over MPI_COMM_WORLD (inside an MpiSession); the result is rank 0's.
Calibration calibrate(const CalibrationOptions& options = {});

}  // namespace backend
