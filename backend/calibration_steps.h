// The timing loops both calibrations share (CPU: backend/mpi/calibration.cpp, GPU:
// backend/gpu/gpu_calibration.cpp; what they measure is in backend/calibration.h).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backend/calibration.h"
#include "strategies/program/program.h"

namespace backend::calibration {

// Seconds per call of `work`: the median over `repeats` timings, each of enough calls (rank 0's
// count) to last `min_timing_s`, every timing started by all ranks together and ended by `finish` (a GPU
// waits for what the calls enqueued; a CPU has nothing to wait for).
double time_per_call(const std::function<void()>& work, const std::function<void()>& finish,
                     const CalibrationOptions& options);

// A calibration's header figures: backend, host, rank count, device and GEMM dtype.
Calibration start(const char* backend, std::string device, program::DType gemm_dtype);

// What the compute measurements time (calibration.h): square GEMMs of these sizes, attention
// GEMM pairs of this shape, memory passes of these sizes; `cache_bytes`: the last-level cache
// (a GPU's L2), which passes of less than 4 × its size may hit.
struct ComputeSizes {
  std::vector<std::int64_t> gemm_sizes;
  std::int64_t heads = 0, sequence = 0, head_dim = 0;
  std::vector<std::int64_t> memory_sizes;
  std::int64_t cache_bytes = 0;
};

// Data this many times the last-level cache is out of it: a memory pass at least this large
// measures memory, not the cache.
inline constexpr std::int64_t kOutOfCacheFactor = 4;

// The memory bandwidth of a profile from rates by pass size (ascending): the best rate of the
// passes of at least kOutOfCacheFactor × `cache_bytes` — smaller ones may run in the cache, at
// its bandwidth, not memory's — or the largest pass's rate when none is that large.
double memory_bandwidth(const std::vector<std::pair<double, double>>& rates, std::int64_t cache_bytes);

// The timed measurements of one calibration, counted for CalibrationOptions::progress: the
// compute sizes, two more (attention, per-op overhead), each message size per link, and the
// all-reduce sizes with two ranks or more.
class MeasurementProgress {
 public:
  MeasurementProgress(const CalibrationOptions& options, const ComputeSizes& sizes, std::size_t links, int ranks);
  void measured();  // one more done

 private:
  const CalibrationOptions& options_;
  bool shown_;  // rank 0 shows
  std::size_t done_ = 0;
  std::size_t total_;
};

// Fills the compute figures, `seconds_per_op` timing one run of the executor's stand-in for
// an op (with time_per_call).
void measure_compute(Calibration& calibration, const ComputeSizes& sizes, program::DType dtype,
                     const std::function<double(const program::ComputeOp&)>& seconds_per_op, MeasurementProgress& progress);

// One-way seconds of a message between rank 0 and `peer`: `round_trip` sends `bytes` there and
// back (rank 0 sends first; `peer` receives first; other ranks do nothing), `finish` waits for
// it. Rank 0 decides how many round trips fill a timing.
double one_way_seconds(const std::function<void()>& round_trip, const std::function<void()>& finish, int peer,
                       const CalibrationOptions& options);

// The link classes this job can measure: rank 0 against the first other rank on its node, and
// against the first rank on another node (nodes: the node of each rank).
std::vector<LinkCalibration> links_to_measure(const std::vector<std::int32_t>& nodes);

// α and β of `link` from its one-way times (see calibration.h); sizes 8 B … 8 MiB, ×4.
void fit_link(LinkCalibration& link);
std::vector<std::int64_t> message_sizes();

// The all-reduce sizes (256 KiB … 16 MiB, ×4), and the collective efficiency of the bounding
// link from calibration.all_reduce_s (see calibration.h); none without links.
std::vector<std::int64_t> all_reduce_sizes();
void fit_collective_efficiency(Calibration& calibration);

}  // namespace backend::calibration
