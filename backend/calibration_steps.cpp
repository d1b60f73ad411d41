// Timing loops shared by the CPU and GPU calibrations (see calibration_steps.h).
#include "backend/calibration_steps.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

namespace backend::calibration {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::int64_t kLargeMessage = 64 << 10;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

double time_per_call(const std::function<void()>& work, const std::function<void()>& finish,
                     const CalibrationOptions& options) {
  work();  // warm-up: buffers, caches, kernel selection
  finish();
  // Rank 0 decides when a timing is long enough, so that every rank makes the same calls (the
  // work may be a collective).
  std::int64_t calls = 1;
  for (int done = 0; done == 0; calls *= 2) {
    const Clock::time_point start = Clock::now();
    for (std::int64_t i = 0; i < calls; ++i) work();
    finish();
    done = seconds_since(start) >= options.min_timing_s ? 1 : 0;
    MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (done != 0) break;
  }
  std::vector<double> timings;
  for (int r = 0; r < options.repeats; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const Clock::time_point start = Clock::now();
    for (std::int64_t i = 0; i < calls; ++i) work();
    finish();
    timings.push_back(seconds_since(start) / static_cast<double>(calls));
  }
  return median(timings);
}

Calibration start(const char* backend, std::string device, program::DType gemm_dtype) {
  Calibration calibration;
  calibration.backend = backend;
  calibration.device = std::move(device);
  calibration.gemm_dtype = std::string(program::dtype_name(gemm_dtype));
  MPI_Comm_size(MPI_COMM_WORLD, &calibration.ranks);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  calibration.host = name;
  return calibration;
}

MeasurementProgress::MeasurementProgress(const CalibrationOptions& options, const ComputeSizes& sizes, std::size_t links, int ranks)
    : options_(options),
      shown_(world_rank() == 0 && options.progress),
      total_(sizes.gemm_sizes.size() + 2 + sizes.memory_sizes.size() + links * message_sizes().size() +
             (ranks >= 2 ? all_reduce_sizes().size() : 0)) {}

void MeasurementProgress::measured() {
  ++done_;
  if (shown_) options_.progress(done_, total_);
}

void measure_compute(Calibration& calibration, const ComputeSizes& sizes, program::DType dtype,
                     const std::function<double(const program::ComputeOp&)>& seconds_per_op, MeasurementProgress& progress) {
  const auto op = [dtype](program::ComputeKind kind, program::Shape shape, double flops, double bytes) {
    return program::ComputeOp{.kind = kind, .dtype = dtype, .shape = shape, .flops = flops, .bytes = bytes};
  };
  for (const std::int64_t n : sizes.gemm_sizes) {
    const double flops = 2.0 * static_cast<double>(n * n * n);
    const double rate = flops / seconds_per_op(op(program::ComputeKind::kMatmul, program::Shape::of({1, n, n, n}), flops, 0));
    calibration.gemm_rates.emplace_back(flops, rate);
    calibration.peak_flops = std::max(calibration.peak_flops, rate);
    progress.measured();
  }
  const double attention_flops = 4.0 * static_cast<double>(sizes.heads * sizes.sequence * sizes.sequence * sizes.head_dim);
  calibration.attention_flops =
      attention_flops / seconds_per_op(op(program::ComputeKind::kAttention,
                                          program::Shape::of({1, sizes.heads, sizes.heads, sizes.sequence, sizes.head_dim}),
                                          attention_flops, 0));
  progress.measured();
  calibration.op_overhead_s = seconds_per_op(op(program::ComputeKind::kElementwise, program::Shape::of({0}), 0, 64));
  progress.measured();
  for (const std::int64_t size : sizes.memory_sizes) {
    const auto bytes = static_cast<double>(size);
    const double seconds = seconds_per_op(op(program::ComputeKind::kElementwise, program::Shape::of({0}), 0, bytes));
    // The overhead taken off, but never more than half: on a GPU a small pass is mostly
    // overhead, and the difference of two noisy timings must not make a rate from nothing.
    const double rate = bytes / std::max(seconds - calibration.op_overhead_s, 0.5 * seconds);
    calibration.memory_rates.emplace_back(bytes, rate);
    progress.measured();
  }
  calibration.memory_bytes_per_s = memory_bandwidth(calibration.memory_rates, sizes.cache_bytes);
}

double memory_bandwidth(const std::vector<std::pair<double, double>>& rates, std::int64_t cache_bytes) {
  double best = 0;
  for (const auto& [bytes, rate] : rates) {
    if (bytes >= static_cast<double>(kOutOfCacheFactor * cache_bytes)) best = std::max(best, rate);
  }
  return best > 0 || rates.empty() ? best : rates.back().second;
}

double one_way_seconds(const std::function<void()>& round_trip, const std::function<void()>& finish, int peer,
                       const CalibrationOptions& options) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const bool paired = rank == 0 || rank == peer;
  const auto trips_of = [&](int trips) {
    if (!paired) return;
    for (int t = 0; t < trips; ++t) round_trip();
    finish();
  };
  trips_of(1);  // warm-up: connections (NCCL makes them at the first transfer), buffers
  // Rank 0 doubles the round trips until a timing is long enough, and tells the peer each time.
  int trips = 1;
  for (int done = 0; done == 0; trips *= 2) {
    const Clock::time_point start = Clock::now();
    trips_of(trips);
    if (rank == 0) {
      done = seconds_since(start) >= options.min_timing_s / 4 ? 1 : 0;
      MPI_Send(&done, 1, MPI_INT, peer, 1, MPI_COMM_WORLD);
    } else if (rank == peer) {
      MPI_Recv(&done, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      done = 1;
    }
    if (done != 0) break;
  }
  MPI_Bcast(&trips, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<double> timings;
  for (int r = 0; r < options.repeats; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const Clock::time_point start = Clock::now();
    trips_of(trips);
    timings.push_back(seconds_since(start) / trips / 2);
  }
  return median(timings);
}

std::vector<LinkCalibration> links_to_measure(const std::vector<std::int32_t>& nodes) {
  std::vector<LinkCalibration> links;
  const auto same = std::find(nodes.begin() + 1, nodes.end(), nodes.front());
  if (same != nodes.end()) links.push_back({true, static_cast<int>(same - nodes.begin()), {}, {}, {}});
  const auto other = std::find_if(nodes.begin() + 1, nodes.end(), [&](std::int32_t node) { return node != nodes.front(); });
  if (other != nodes.end()) links.push_back({false, static_cast<int>(other - nodes.begin()), {}, {}, {}});
  return links;
}

std::vector<std::int64_t> message_sizes() {
  std::vector<std::int64_t> sizes;
  for (std::int64_t bytes = 8; bytes <= (std::int64_t{16} << 20); bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

void fit_link(LinkCalibration& link) {
  // α: the smallest message; β: least squares of t = α' + bytes · β over the large ones,
  // where the intercept of a fit over all sizes would be lost in their noise.
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [bytes, seconds] : link.one_way_s) {
    if (bytes < kLargeMessage) continue;
    const auto x = static_cast<double>(bytes);
    n += 1, sx += x, sy += seconds, sxx += x * x, sxy += x * seconds;
  }
  const double beta = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  if (beta > 0) {  // else too noisy to tell: the profile leaves the link as it was
    link.bytes_per_s = 1 / beta;
    link.latency_s = link.one_way_s.front().second;
  }
}

std::vector<std::int64_t> all_reduce_sizes() {
  std::vector<std::int64_t> sizes;
  for (std::int64_t bytes = 256 << 10; bytes <= (std::int64_t{16} << 20); bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

void fit_collective_efficiency(Calibration& calibration) {
  if (calibration.links.empty() || !calibration.links.back().bytes_per_s || calibration.all_reduce_s.empty()) return;
  const double n = calibration.ranks;
  std::vector<double> bus_bandwidths;
  for (const auto& [bytes, seconds] : calibration.all_reduce_s) {
    bus_bandwidths.push_back(2 * (n - 1) / n * static_cast<double>(bytes) / seconds);
  }
  calibration.collective_efficiency = std::min(1.0, median(bus_bandwidths) / *calibration.links.back().bytes_per_s);
}

}  // namespace backend::calibration
