// GPU selection, the world NCCL communicator and NCCL's waits under a deadline (see gpu_job.h).
#include "backend/gpu/gpu_job.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "backend/executor.h"
#include "backend/gpu_rules.h"
#include "backend/job.h"

namespace backend::gpu {
namespace {

// Ranks of this host that drive the same GPU (compared by PCI bus id, which CUDA_VISIBLE_DEVICES
// does not renumber) end the job with the reason; host-local rank 0 reports, the others wait for
// its MPI_Abort.
void refuse_ranks_on_one_gpu(int device, double timeout_s) {
  std::array<char, 64> bus_id{};
  if (cudaDeviceGetPCIBusId(bus_id.data(), static_cast<int>(bus_id.size() - 1), device) != cudaSuccess) {
    fmt::format_to_n(bus_id.data(), bus_id.size() - 1, "unknown (rank {})", job::world_rank());  // still takes part
  }
  MPI_Comm host = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, job::world_rank(), MPI_INFO_NULL, &host);
  int local = 0, ranks = 1;
  MPI_Comm_rank(host, &local);
  MPI_Comm_size(host, &ranks);
  std::vector<char> all(bus_id.size() * static_cast<std::size_t>(ranks));
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallgather(bus_id.data(), static_cast<int>(bus_id.size()), MPI_CHAR, all.data(), static_cast<int>(bus_id.size()),
                 MPI_CHAR, host, &request);
  job::wait_for_job(request, timeout_s, "comparing the ranks' GPUs");
  MPI_Comm_free(&host);
  std::vector<std::string> bus_ids;
  for (int r = 0; r < ranks; ++r) bus_ids.emplace_back(all.data() + static_cast<std::size_t>(r) * bus_id.size());
  const auto shared = gpu_rules::first_shared_gpu(bus_ids);
  if (!shared) return;
  if (local != 0) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  job::fail(job::world_rank(),
            fmt::format("ranks {} and {} of this host both drive the GPU at {}{}: NCCL runs one rank per GPU. Give each "
                        "rank its own GPU, or pass --share-gpu to let ranks share one",
                        shared->first, shared->second, bus_ids[static_cast<std::size_t>(shared->first)],
                        visible != nullptr ? fmt::format(" (CUDA_VISIBLE_DEVICES={} for each)", visible) : ""));
}

}  // namespace

std::string select_gpu(bool share, double timeout_s) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    job::fail(job::world_rank(),
              fmt::format("no GPU visible ({}): --backend nccl needs one GPU per rank; run --backend mpi on CPUs",
                          status != cudaSuccess ? cudaGetErrorString(status) : "cudaGetDeviceCount found none"));
  }
  const bool launcher_chose = std::getenv("CUDA_VISIBLE_DEVICES") != nullptr;
  const int local = job::local_rank();
  const gpu_rules::GpuChoice choice = gpu_rules::choose_gpu(local, count, launcher_chose, share);
  if (choice.device < 0) job::fail(job::world_rank(), choice.refusal);
  if (share) {
    // Before NCCL reads them (at the first communicator): each rank a host of its own to NCCL,
    // connected by NCCL's socket transport (not a network plugin or InfiniBand the machine may
    // have), and no multi-node NVLink probing between the pretend hosts.
    std::array<char, 256> host{};
    gethostname(host.data(), host.size() - 1);
    setenv("NCCL_HOSTID", gpu_rules::shared_gpu_host_id(host.data(), job::world_rank()).c_str(), 1);
    setenv("NCCL_NET", "Socket", 0);
    setenv("NCCL_MNNVL_ENABLE", "0", 0);
  }
  cudaDeviceProp properties{};
  if (cudaSetDevice(choice.device) != cudaSuccess || cudaGetDeviceProperties(&properties, choice.device) != cudaSuccess) {
    job::fail(job::world_rank(), fmt::format("cannot use GPU {}", choice.device));
  }
  if (!share) refuse_ranks_on_one_gpu(choice.device, timeout_s);
  return properties.name;
}

void check_nccl_version(bool per_collective_algo) {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) throw ExecutionError("ncclGetVersion failed: NCCL cannot be used");
  if (const auto problem = gpu_rules::nccl_version_problem(version, per_collective_algo)) throw ExecutionError(*problem);
}

ncclConfig_t communicator_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.splitShare = 0;
  return config;
}

std::optional<std::string> settled(ncclComm_t comm, ncclResult_t returned, double timeout_s) {
  ncclResult_t state = returned;
  if (state == ncclInProgress && comm != nullptr) {
    job::poll_until(
        [&] {
          if (const ncclResult_t query = ncclCommGetAsyncError(comm, &state); query != ncclSuccess) state = query;
          return state != ncclInProgress;
        },
        timeout_s);
  }
  if (state == ncclSuccess) return std::nullopt;
  if (state == ncclInProgress) {
    return fmt::format("not done within {} s (timeout): a peer never got there (NCCL_DEBUG=INFO shows where each "
                       "rank stopped)", timeout_s);
  }
  return fmt::format("NCCL error: {} ({})", ncclGetErrorString(state), ncclGetLastError(comm));
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
  const ncclResult_t returned = ncclCommInitRankConfig(&world, size, id, rank, &config);
  if (const auto problem = settled(world, returned, timeout_s)) {
    job::fail(rank, "creating the NCCL communicator of all ranks: " + *problem);
  }
  return world;
}

ncclComm_t split_communicator(ncclComm_t parent, int color, int key, double timeout_s, const std::string& what) {
  ncclConfig_t config = communicator_config();
  ncclComm_t comm = nullptr;
  // A split runs in the parent's mode and reports on the parent — but ncclCommSplit returns
  // ncclSuccess even while the split goes on in NCCL's thread (its group's ncclInProgress is
  // not passed on), and NCCL sets `comm` when the split is done: the parent is always waited for.
  const ncclResult_t returned = ncclCommSplit(parent, color, key, &comm, &config);
  if (const auto problem = settled(parent, returned == ncclSuccess ? ncclInProgress : returned, timeout_s)) {
    job::fail(job::world_rank(), what + ": " + *problem);
  }
  if (color != NCCL_SPLIT_NOCOLOR && comm == nullptr) job::fail(job::world_rank(), what + ": NCCL made no communicator");
  return comm;
}

std::optional<std::string> async_error(const std::vector<ncclComm_t>& communicators) {
  for (const ncclComm_t comm : communicators) {
    ncclResult_t error = ncclSuccess;
    ncclCommGetAsyncError(comm, &error);
    if (error != ncclSuccess && error != ncclInProgress) {
      return fmt::format("NCCL error: {} ({})", ncclGetErrorString(error), ncclGetLastError(comm));
    }
  }
  return std::nullopt;
}

std::optional<std::string> wait_for_stream(cudaStream_t stream, const std::vector<ncclComm_t>& communicators,
                                           double timeout_s) {
  std::optional<std::string> problem;
  const bool done = job::poll_until(
      [&] {
        const cudaError_t status = cudaStreamQuery(stream);
        if (status != cudaSuccess && status != cudaErrorNotReady) {
          problem = fmt::format("CUDA error: {}", cudaGetErrorString(status));
          return true;
        }
        problem = async_error(communicators);
        return problem || status == cudaSuccess;
      },
      timeout_s);
  if (!done) return fmt::format("the GPU did not finish within {} s (timeout): a peer never got there", timeout_s);
  return problem;
}

}  // namespace backend::gpu
