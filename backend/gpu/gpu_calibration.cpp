// Calibration on GPUs with cuBLAS, the memory-pass kernel and NCCL (see backend/calibration.h).
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>

#include "backend/calibration.h"
#include "backend/calibration_steps.h"
#include "backend/gpu/cublas_library.h"
#include "backend/gpu/gpu_job.h"
#include "backend/gpu/gpu_kernels.h"
#include "backend/job.h"

namespace backend {
namespace {

// One stream, its cuBLAS handle and device scratch, for timing the executor's compute ops.
class ComputeBench {
 public:
  ComputeBench() {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream");
    try {
      blas_ = gpu::blas_handle(stream_);
    } catch (const std::runtime_error& error) {
      job::fail(job::world_rank(), std::string("calibration: ") + error.what());
    }
  }
  ~ComputeBench() {
    cudaFree(scratch_);
    gpu::cublas().destroy(blas_);
    cudaStreamDestroy(stream_);
  }
  ComputeBench(const ComputeBench&) = delete;
  ComputeBench& operator=(const ComputeBench&) = delete;

  // Seconds per run of `op` (calibration::time_per_call).
  double seconds(const program::ComputeOp& op, const CalibrationOptions& options) {
    reserve(gpu::compute_scratch_bytes(op));
    return calibration::time_per_call(
        [&] {
          if (const std::string error = gpu::enqueue_compute(op, blas_, stream_, scratch_); !error.empty()) {
            job::fail(job::world_rank(), "calibration: " + error);
          }
        },
        [&] { check(cudaStreamSynchronize(stream_), "waiting for the GPU"); }, options);
  }

  cudaStream_t stream() const { return stream_; }

  static void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) job::fail(job::world_rank(), fmt::format("calibration: {}: {}", what, cudaGetErrorString(status)));
  }

 private:
  void reserve(std::int64_t bytes) {
    if (bytes <= scratch_bytes_) return;
    cudaFree(scratch_);
    scratch_ = nullptr;
    if (cudaMalloc(&scratch_, static_cast<std::size_t>(bytes)) != cudaSuccess) {
      job::fail(job::world_rank(), fmt::format("calibration: device out of memory allocating {} bytes", bytes));
    }
    check(cudaMemset(scratch_, 0, static_cast<std::size_t>(bytes)), "clearing scratch memory");
    scratch_bytes_ = bytes;
  }

  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  char* scratch_ = nullptr;
  std::int64_t scratch_bytes_ = 0;
};

// NCCL ping-pong between rank 0 and link.peer on a two-rank communicator split from `world`.
void measure_link(LinkCalibration& link, ncclComm_t world, cudaStream_t stream, const CalibrationOptions& options,
                  calibration::MeasurementProgress& progress) {
  const int rank = job::world_rank();
  const bool paired = rank == 0 || rank == link.peer;
  ncclComm_t pair = nullptr;
  ncclConfig_t config = gpu::communicator_config();
  if (ncclCommSplit(world, paired ? 0 : NCCL_SPLIT_NOCOLOR, rank == 0 ? 0 : 1, &pair, &config) != ncclSuccess) {
    job::fail(rank, "calibration: splitting an NCCL communicator failed");
  }
  const std::vector<std::int64_t> sizes = calibration::message_sizes();
  char* buffer = nullptr;
  ComputeBench::check(cudaMalloc(&buffer, static_cast<std::size_t>(sizes.back())), "allocating a message buffer");
  for (const std::int64_t bytes : sizes) {
    const auto count = static_cast<std::size_t>(bytes);
    const auto round_trip = [&] {
      ncclResult_t sent = ncclSuccess, received = ncclSuccess;
      if (rank == 0) {
        sent = ncclSend(buffer, count, ncclInt8, 1, pair, stream);
        received = ncclRecv(buffer, count, ncclInt8, 1, pair, stream);
      } else {
        received = ncclRecv(buffer, count, ncclInt8, 0, pair, stream);
        sent = ncclSend(buffer, count, ncclInt8, 0, pair, stream);
      }
      if (sent != ncclSuccess || received != ncclSuccess) job::fail(rank, "calibration: an NCCL send or receive failed");
    };
    const auto finish = [&] { ComputeBench::check(cudaStreamSynchronize(stream), "waiting for NCCL"); };
    link.one_way_s.emplace_back(bytes, calibration::one_way_seconds(round_trip, finish, link.peer, options));
    progress.measured();
  }
  cudaFree(buffer);
  if (pair != nullptr) ncclCommDestroy(pair);
  calibration::fit_link(link);
}

}  // namespace

Calibration calibrate_gpus(const CalibrationOptions& options) {
  Calibration result = calibration::start("nccl", gpu::select_gpu(), program::DType::kBF16);
  const double timeout_s = ExecutionOptions{}.timeout_s;
  const ncclComm_t world = gpu::world_communicator(timeout_s);

  ComputeBench bench;
  const calibration::ComputeSizes compute_sizes{{256, 512, 1024, 2048, 4096, 8192}, 16, 2048, 128,
                                                {1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, std::int64_t{1} << 30}};
  result.links = calibration::links_to_measure(job::nodes_of_ranks(timeout_s));
  calibration::MeasurementProgress progress(options, compute_sizes, result.links.size(), result.ranks);
  calibration::measure_compute(result, compute_sizes, program::DType::kBF16,
                               [&](const program::ComputeOp& op) { return bench.seconds(op, options); }, progress);
  for (LinkCalibration& link : result.links) measure_link(link, world, bench.stream(), options, progress);
  if (result.ranks >= 2) {
    const std::vector<std::int64_t> sizes = calibration::all_reduce_sizes();
    char* buffer = nullptr;
    ComputeBench::check(cudaMalloc(&buffer, static_cast<std::size_t>(2 * sizes.back())), "allocating all-reduce buffers");
    for (const std::int64_t bytes : sizes) {
      const double seconds = calibration::time_per_call(
          [&] {
            if (ncclAllReduce(buffer, buffer + sizes.back(), static_cast<std::size_t>(bytes / 2), ncclBfloat16, ncclSum,
                              world, bench.stream()) != ncclSuccess) {
              job::fail(job::world_rank(), "calibration: ncclAllReduce failed");
            }
          },
          [&] { ComputeBench::check(cudaStreamSynchronize(bench.stream()), "waiting for NCCL"); }, options);
      result.all_reduce_s.emplace_back(bytes, seconds);
      progress.measured();
    }
    cudaFree(buffer);
    calibration::fit_collective_efficiency(result);
  }
  ncclCommDestroy(world);
  return result;
}

}  // namespace backend
