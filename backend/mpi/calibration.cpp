// Calibration on CPU ranks with MPI (see backend/calibration.h).
#include "backend/calibration.h"

#include <cblas.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>

#include "backend/mpi/cpu_kernels.h"

namespace backend {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::int64_t kLargeMessage = 64 << 10;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Seconds per call of `work`: the median over `repeats` timings, each of enough calls to last
// `min_timing_s`; ranks start each timing together.
double time_per_call(const std::function<void()>& work, const CalibrationOptions& options) {
  work();  // warm-up: buffers, caches
  std::int64_t calls = 1;
  for (Clock::time_point start = Clock::now(); seconds_since(start) < options.min_timing_s; start = Clock::now()) {
    for (std::int64_t i = 0; i < calls; ++i) work();
    if (seconds_since(start) >= options.min_timing_s) break;
    calls *= 2;
  }
  std::vector<double> timings;
  for (int r = 0; r < options.repeats; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const Clock::time_point start = Clock::now();
    for (std::int64_t i = 0; i < calls; ++i) work();
    timings.push_back(seconds_since(start) / static_cast<double>(calls));
  }
  return median(timings);
}

program::ComputeOp compute_op(program::ComputeKind kind, program::Shape shape, double flops, double bytes) {
  program::ComputeOp op;
  op.kind = kind;
  op.dtype = program::DType::kFP32;
  op.shape = shape;
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

// Rank 0 ↔ rank 1 round trips; every other rank waits at the barriers.
double one_way_seconds(std::int64_t bytes, int rank, const CalibrationOptions& options) {
  std::vector<char> buffer(static_cast<std::size_t>(std::max<std::int64_t>(bytes, 1)));
  const int count = static_cast<int>(bytes);
  auto round_trip = [&] {
    if (rank == 0) {
      MPI_Send(buffer.data(), count, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buffer.data(), count, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buffer.data(), count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buffer.data(), count, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  };
  // Rank 0 decides how many round trips fill a timing and tells rank 1.
  int trips = 1;
  if (rank == 0) {
    for (Clock::time_point start = Clock::now();; trips *= 2) {
      start = Clock::now();
      for (int t = 0; t < trips; ++t) round_trip();
      int done = seconds_since(start) >= options.min_timing_s / 4 ? 1 : 0;
      MPI_Send(&done, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
      if (done) break;
    }
  } else if (rank == 1) {
    for (int done = 0; !done; trips *= 2) {
      for (int t = 0; t < trips; ++t) round_trip();
      MPI_Recv(&done, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (done) break;
    }
  }
  std::vector<double> timings;
  for (int r = 0; r < options.repeats; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const Clock::time_point start = Clock::now();
    for (int t = 0; t < trips; ++t) round_trip();
    timings.push_back(seconds_since(start) / trips / 2);
  }
  return median(timings);
}

}  // namespace

Calibration calibrate(const CalibrationOptions& options) {
  Calibration result;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &result.ranks);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  result.host = name;

  openblas_set_num_threads(1);  // as the executor runs it: one core per rank
  cpu::Scratch scratch;
  for (const std::int64_t n : {64, 128, 256, 384, 512, 768, 1024}) {
    const double flops = 2.0 * static_cast<double>(n * n * n);
    const auto op = compute_op(program::ComputeKind::kMatmul, program::Shape::of({1, n, n, n}), flops, 0);
    const double seconds = time_per_call([&] { cpu::run_compute(op, scratch); }, options);
    result.gemm_rates.emplace_back(flops, flops / seconds);
    result.peak_flops = std::max(result.peak_flops, flops / seconds);
  }
  const std::int64_t heads = 4, seq = 128, dim = 64;
  const double attention_flops = 4.0 * static_cast<double>(heads * seq * seq * dim);
  const auto attention = compute_op(program::ComputeKind::kAttention, program::Shape::of({1, heads, heads, seq, dim}),
                                    attention_flops, 0);
  result.attention_flops = attention_flops / time_per_call([&] { cpu::run_compute(attention, scratch); }, options);
  const double large = 64.0 * (1 << 20);
  const auto stream = compute_op(program::ComputeKind::kElementwise, program::Shape::of({0}), 0, large);
  result.memory_bytes_per_s = large / time_per_call([&] { cpu::run_compute(stream, scratch); }, options);
  const auto tiny = compute_op(program::ComputeKind::kElementwise, program::Shape::of({0}), 0, 64);
  result.op_overhead_s = time_per_call([&] { cpu::run_compute(tiny, scratch); }, options);

  if (result.ranks >= 2) {
    std::vector<char> names(static_cast<std::size_t>(result.ranks) * MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    result.peers_share_host = std::strncmp(names.data(), names.data() + MPI_MAX_PROCESSOR_NAME, MPI_MAX_PROCESSOR_NAME) == 0;
    for (std::int64_t bytes = 8; bytes <= (std::int64_t{16} << 20); bytes *= 4) {
      result.one_way_s.emplace_back(bytes, one_way_seconds(bytes, rank, options));
    }
    // α: the smallest message; β: least squares of t = α' + bytes · β over the large ones,
    // where the intercept of a fit over all sizes would be lost in their noise.
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [bytes, seconds] : result.one_way_s) {
      if (bytes < kLargeMessage) continue;
      const auto x = static_cast<double>(bytes);
      n += 1, sx += x, sy += seconds, sxx += x * x, sxy += x * seconds;
    }
    const double beta = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    if (beta > 0) {  // else too noisy to tell: the profile leaves the link as it was
      result.bytes_per_s = 1 / beta;
      result.latency_s = result.one_way_s.front().second;
    }
  }
  return result;
}

}  // namespace backend
