// The GPU executor in a build without CUDA and NCCL: it says so (see backend/job.h).
#include "backend/job.h"

namespace backend {

std::unique_ptr<job::RankRunner> job::gpu_runner(const program::Program&, const ExecutionOptions&,
                                                 const std::vector<std::int32_t>&) {
  throw ExecutionError(
      "this dtsim was built without CUDA and NCCL (configure found none): run --backend mpi, or rebuild where "
      "/usr/local/cuda holds the CUDA Toolkit and NCCL (dtsim info shows what the build has)");
}

}  // namespace backend
