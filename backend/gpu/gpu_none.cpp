// The GPU entry points in a build without CUDA and NCCL: they say so (see backend/job.h and
// backend/calibration.h).
#include "backend/calibration.h"
#include "backend/job.h"

namespace backend {

namespace {

[[noreturn]] void refuse() {
  throw ExecutionError(
      "this dtsim was built without CUDA and NCCL (none found at configure time, or -DDTSIM_WITH_CUDA=OFF): use "
      "--backend mpi, or rebuild where /usr/local/cuda holds the CUDA Toolkit and NCCL (dtsim info shows what the "
      "build has)");
}

}  // namespace

std::unique_ptr<job::RankRunner> job::gpu_runner(const program::Program&, const ExecutionOptions&,
                                                 const std::vector<std::int32_t>&) {
  refuse();
}

Calibration calibrate_gpus(const CalibrationOptions&) { refuse(); }

}  // namespace backend
