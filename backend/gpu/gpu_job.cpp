// GPU selection and the world NCCL communicator (see gpu_job.h).
#include "backend/gpu/gpu_job.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdlib>

#include "backend/job.h"

namespace backend::gpu {

std::string select_gpu() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  const int local = job::local_rank();
  if (status != cudaSuccess || count == 0) {
    job::fail(job::world_rank(),
              fmt::format("no GPU visible ({}): --backend nccl needs one GPU per rank; run --backend mpi on CPUs",
                          status != cudaSuccess ? cudaGetErrorString(status) : "cudaGetDeviceCount found none"));
  }
  const bool launcher_chose = count == 1 && std::getenv("CUDA_VISIBLE_DEVICES") != nullptr;
  const int device = launcher_chose ? 0 : local;
  if (device >= count) {
    job::fail(job::world_rank(),
              fmt::format("this host runs more ranks than it has GPUs ({}): --backend nccl needs one GPU per rank", count));
  }
  cudaDeviceProp properties{};
  if (cudaSetDevice(device) != cudaSuccess || cudaGetDeviceProperties(&properties, device) != cudaSuccess) {
    job::fail(job::world_rank(), fmt::format("cannot use GPU {}", device));
  }
  return properties.name;
}

ncclConfig_t communicator_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.splitShare = 0;
  return config;
}

ncclComm_t world_communicator(double timeout_s) {
  const int rank = job::world_rank();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ncclUniqueId id{};
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) job::fail(rank, "ncclGetUniqueId failed");
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD, &request);
  job::wait_for_job(request, timeout_s, "sharing the NCCL unique id");
  ncclComm_t world = nullptr;
  ncclConfig_t config = communicator_config();
  if (const ncclResult_t status = ncclCommInitRankConfig(&world, size, id, rank, &config); status != ncclSuccess) {
    job::fail(rank, fmt::format("creating the NCCL communicator: {} ({})", ncclGetErrorString(status), ncclGetLastError(nullptr)));
  }
  return world;
}

}  // namespace backend::gpu
