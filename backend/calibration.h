// backend::calibrate — measure the hardware a real run executes on, so that the simulator can
// price that hardware (`dtsim calibrate --backend mpi|nccl`, which writes the result as a
// hardware profile TOML scenarios reference with [scenario] hardware_profile).
//
// Every rank runs the compute measurements at once, as ranks share the machine in a real run,
// and rank 0's figures are kept. Each figure is the median of `repeats` timings of at least
// `min_timing_s` each, the ranks starting each timing together.
//   * GEMM rate by size: the executor's own GEMM on square n × n × n (CPU: OpenBLAS sgemm, n
//     from 64 to 1024; GPU: cuBLAS bf16, n from 256 to 8192); efficiency(n) = rate(n) / best
//     rate, the best rate being the profile's peak;
//   * attention: the executor's GEMM pairs (CPU: sequence 128, 4 heads; GPU: sequence 2048,
//     16 heads; head dimension 64 … 128);
//   * per-op overhead: the executor's memory-bound pass over 64 bytes;
//   * memory bandwidth by size: the same pass over 16 KiB … 256 MiB on a CPU, 1 MiB … 1 GiB on a
//     GPU (×4), counted as the op's bytes, the overhead taken off. Caches make small passes
//     faster: the profile's bandwidth is the best rate of passes of at least 4 × the last-level
//     cache (the GPU's L2 as the device reports it: tens of MB on A100 … H200), the others its
//     `memory_efficiency_by_size`. On a GPU, a pass smaller than that runs on the next of
//     several windows of its scratch in turn, so that each finds its data out of the L2, as a
//     training step's kernels mostly do;
//   * α, β per link class: rank 0 against the first other rank on its node (intra-node) and
//     against the first rank on another node (inter-node), where the job has them: ping-pong
//     (MPI send/receive, or NCCL send/receive between GPUs) from 8 B to 8 MiB, one-way time
//     = half the round trip (Hockney's model t = α + bytes · β); α = an 8-byte message's
//     time, β the least-squares slope over messages of 64 KiB and more;
//   * collective efficiency: an all-reduce over every rank (MPI_Allreduce, or ncclAllReduce),
//     256 KiB to 16 MiB; its bus bandwidth (nccl-tests: 2(n−1)/n · bytes / time), median over
//     the sizes, over the bandwidth of the link class that bounds it (inter-node where the job
//     spans nodes) — the fraction of a link a collective achieves, reduction arithmetic and
//     protocol included, which the profile gives that link as its `efficiency`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace backend {

struct CalibrationOptions {
  int repeats = 5;
  double min_timing_s = 0.02;
  // A step that waits longer on a peer (or the GPU) ends the job naming it (dtsim calibrate --timeout).
  double timeout_s = 300;
  // GPU: ranks beyond the host's GPU count share them (dtsim calibrate --share-gpu; gpu_rules.h).
  bool share_gpu = false;
  // Called on rank 0 after each timed measurement: how many are done, of how many.
  std::function<void(std::size_t done, std::size_t total)> progress;
};

// α and β between rank 0 and `peer`.
struct LinkCalibration {
  bool intra_node = true;
  int peer = 1;
  std::vector<std::pair<std::int64_t, double>> one_way_s;  // (bytes, seconds)
  // None when the timings were too noisy to give a positive slope.
  std::optional<double> latency_s;
  std::optional<double> bytes_per_s;
};

struct Calibration {
  std::string backend = "mpi";  // or "nccl"
  std::string host;
  std::string device;           // what a rank computes on, e.g. "CPU core" or "NVIDIA H200"
  std::string gemm_dtype = "fp32";
  int ranks = 1;
  std::vector<std::pair<double, double>> gemm_rates;  // (FLOPs of one GEMM, FLOP/s), ascending
  double peak_flops = 0;                              // the best GEMM rate
  double attention_flops = 0;                         // FLOP/s
  std::vector<std::pair<double, double>> memory_rates;  // (bytes of one pass, bytes/s), ascending
  double memory_bytes_per_s = 0;                         // the best memory rate
  double op_overhead_s = 0;
  std::vector<LinkCalibration> links;  // intra-node first; none with a single rank
  std::vector<std::pair<std::int64_t, double>> all_reduce_s;  // (bytes, seconds) over every rank
  std::optional<double> collective_efficiency;                // of links.back(), when measured
};

// Collective over MPI_COMM_WORLD (inside an MpiSession); the result is rank 0's.
Calibration calibrate(const CalibrationOptions& options = {});
// The same on GPUs (one per rank, NCCL between them). Throws ExecutionError in a build without
// CUDA and NCCL; a rank without a GPU ends the job naming it.
Calibration calibrate_gpus(const CalibrationOptions& options = {});

}  // namespace backend
