// Calibration on CPU ranks with MPI (see backend/calibration.h).
#include "backend/calibration.h"

#include <cblas.h>
#include <mpi.h>
#include <unistd.h>

#include "backend/calibration_steps.h"
#include "backend/job.h"
#include "backend/mpi/cpu_kernels.h"

namespace backend {
namespace {

// The CPU's last-level cache as glibc reports it (L3, else L2; 0 when unknown).
std::int64_t last_level_cache_bytes() {
  for (const int level : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    if (const long bytes = sysconf(level); bytes > 0) return bytes;
  }
  return 0;
}

}  // namespace

Calibration calibrate(const CalibrationOptions& options) {
  Calibration result =
      calibration::start("mpi", "CPU core (OpenBLAS sgemm, one thread per rank)", program::DType::kFP32);
  const auto nothing = [] {};
  openblas_set_num_threads(1);  // as the executor runs it: one core per rank
  cpu::Scratch scratch;
  const calibration::ComputeSizes sizes{{64, 128, 256, 384, 512, 768, 1024}, 4, 128, 64,
                                        {16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20},
                                        last_level_cache_bytes()};
  result.links = calibration::links_to_measure(job::nodes_of_ranks(options.timeout_s));
  calibration::MeasurementProgress progress(options, sizes, result.links.size(), result.ranks);
  calibration::measure_compute(result, sizes, program::DType::kFP32, [&](const program::ComputeOp& op) {
    return calibration::time_per_call([&] { cpu::run_compute(op, scratch); }, nothing, options);
  }, progress);

  const int rank = job::world_rank();
  for (LinkCalibration& link : result.links) {
    for (const std::int64_t bytes : calibration::message_sizes()) {
      std::vector<char> buffer(static_cast<std::size_t>(bytes));
      const int count = static_cast<int>(bytes);
      const auto round_trip = [&] {
        if (rank == 0) {
          MPI_Send(buffer.data(), count, MPI_BYTE, link.peer, 0, MPI_COMM_WORLD);
          MPI_Recv(buffer.data(), count, MPI_BYTE, link.peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(buffer.data(), count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(buffer.data(), count, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
      };
      link.one_way_s.emplace_back(bytes, calibration::one_way_seconds(round_trip, nothing, link.peer, options));
      progress.measured();
    }
    calibration::fit_link(link);
  }
  if (result.ranks >= 2) {
    for (const std::int64_t bytes : calibration::all_reduce_sizes()) {
      std::vector<float> in(static_cast<std::size_t>(bytes / 4), 1.0f), out(in.size());
      const double seconds = calibration::time_per_call(
          [&] { MPI_Allreduce(in.data(), out.data(), static_cast<int>(in.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
          nothing, options);
      result.all_reduce_s.emplace_back(bytes, seconds);
      progress.measured();
    }
    calibration::fit_collective_efficiency(result);
  }
  return result;
}

}  // namespace backend
