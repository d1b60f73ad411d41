// Calibration on GPUs with cuBLAS, the memory-pass kernel and NCCL (see backend/calibration.h).
// Every wait is bounded by CalibrationOptions::timeout_s (gpu_job.h): a peer that never
// arrives ends the job naming the step.
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
#include "backend/gpu/memory_kernels.h"
#include "backend/job.h"

namespace backend {
namespace {

[[noreturn]] void fail(const std::string& message) { job::fail(job::world_rank(), "calibration: " + message); }

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) fail(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

// One stream, its cuBLAS handle and device scratch (an input area of random values, an output
// area: gpu_kernels.h), for timing the executor's compute ops.
class ComputeBench {
 public:
  ComputeBench(const CalibrationOptions& options, std::int64_t cache_bytes) : options_(options), cache_bytes_(cache_bytes) {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream");
    try {
      blas_ = gpu::blas_handle(stream_);
    } catch (const std::runtime_error& error) {
      fail(error.what());
    }
  }
  ~ComputeBench() {
    cudaFree(inputs_);
    cudaFree(outputs_);
    gpu::cublas().destroy(blas_);
    cudaStreamDestroy(stream_);
  }
  ComputeBench(const ComputeBench&) = delete;
  ComputeBench& operator=(const ComputeBench&) = delete;

  // Seconds per run of `op` (calibration::time_per_call). A memory-bound op smaller than 4 × the
  // cache runs on the next of enough windows of the scratch that a window is out of the cache
  // again when its turn comes (else small passes would time the L2, not memory).
  double seconds(const program::ComputeOp& op) {
    const gpu::ScratchBytes bytes = gpu::compute_scratch_bytes(op);
    const bool memory_bound = op.kind != program::ComputeKind::kMatmul && op.kind != program::ComputeKind::kAttention;
    const std::int64_t stride_in = gpu::aligned_bytes(bytes.inputs), stride_out = gpu::aligned_bytes(bytes.outputs);
    const std::int64_t span = calibration::kOutOfCacheFactor * cache_bytes_;  // what a window's turn waits for
    const std::int64_t windows =
        memory_bound ? std::max<std::int64_t>(1, (span + stride_in + stride_out - 1) / (stride_in + stride_out)) : 1;
    reserve(windows * stride_in, windows * stride_out);
    std::int64_t call = 0;
    return calibration::time_per_call(
        [&] {
          const std::int64_t window = call++ % windows;
          if (const std::string error = gpu::enqueue_compute(op, blas_, stream_, inputs_ + window * stride_in,
                                                             outputs_ + window * stride_out);
              !error.empty()) {
            fail(error);
          }
        },
        [&] { finish({}); }, options_);
  }

  // Waits for the stream (and the communicators' errors) under the timeout.
  void finish(const std::vector<ncclComm_t>& communicators) {
    if (const auto problem = gpu::wait_for_stream(stream_, communicators, options_.timeout_s)) fail(*problem);
  }

  cudaStream_t stream() const { return stream_; }

 private:
  void reserve(std::int64_t input_bytes, std::int64_t output_bytes) {
    if (input_bytes <= input_bytes_ && output_bytes <= output_bytes_) return;
    cudaFree(inputs_);
    cudaFree(outputs_);
    inputs_ = outputs_ = nullptr;
    input_bytes_ = std::max(input_bytes, input_bytes_);
    output_bytes_ = std::max(output_bytes, output_bytes_);
    for (auto [area, bytes] : {std::pair{&inputs_, input_bytes_}, std::pair{&outputs_, output_bytes_}}) {
      if (cudaMalloc(area, static_cast<std::size_t>(bytes)) != cudaSuccess) {
        fail(fmt::format("device out of memory allocating {} bytes", bytes));
      }
    }
    check(gpu::fill_random(inputs_, input_bytes_, 1, stream_), "filling the inputs");
    check(cudaStreamSynchronize(stream_), "filling the inputs");
  }

  const CalibrationOptions& options_;
  std::int64_t cache_bytes_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  char* inputs_ = nullptr;
  char* outputs_ = nullptr;
  std::int64_t input_bytes_ = 0, output_bytes_ = 0;
};

// Ends the calibration if an NCCL call on `comm` failed or did not finish in time.
void nccl(ncclComm_t comm, ncclResult_t status, const CalibrationOptions& options, const char* what) {
  if (const auto problem = gpu::settled(comm, status, options.timeout_s)) fail(fmt::format("{}: {}", what, *problem));
}

// NCCL ping-pong between rank 0 and link.peer on a two-rank communicator split from `world`.
void measure_link(LinkCalibration& link, ncclComm_t world, ComputeBench& bench, const CalibrationOptions& options,
                  calibration::MeasurementProgress& progress) {
  const int rank = job::world_rank();
  const bool paired = rank == 0 || rank == link.peer;
  const ncclComm_t pair = gpu::split_communicator(world, paired ? 0 : NCCL_SPLIT_NOCOLOR, rank == 0 ? 0 : 1,
                                                  options.timeout_s, "calibration: splitting an NCCL communicator");
  const std::vector<std::int64_t> sizes = calibration::message_sizes();
  char* buffer = nullptr;
  check(cudaMalloc(&buffer, static_cast<std::size_t>(sizes.back())), "allocating a message buffer");
  const cudaStream_t stream = bench.stream();
  for (const std::int64_t bytes : sizes) {
    const auto count = static_cast<std::size_t>(bytes);
    const auto send = [&](int peer) { nccl(pair, ncclSend(buffer, count, ncclInt8, peer, pair, stream), options, "an NCCL send"); };
    const auto receive = [&](int peer) { nccl(pair, ncclRecv(buffer, count, ncclInt8, peer, pair, stream), options, "an NCCL receive"); };
    const auto round_trip = [&] {
      if (rank == 0) {
        send(1);
        receive(1);
      } else {
        receive(0);
        send(0);
      }
    };
    const auto finish = [&] { bench.finish({pair}); };
    link.one_way_s.emplace_back(bytes, calibration::one_way_seconds(round_trip, finish, link.peer, options));
    progress.measured();
  }
  cudaFree(buffer);
  if (pair != nullptr) ncclCommDestroy(pair);
  calibration::fit_link(link);
}

}  // namespace

Calibration calibrate_gpus(const CalibrationOptions& options) {
  gpu::check_nccl_version(false);
  Calibration result = calibration::start("nccl", gpu::select_gpu(options.share_gpu, options.timeout_s), program::DType::kBF16);
  const ncclComm_t world = gpu::world_communicator(options.timeout_s);
  int device = 0, l2_bytes = 0;
  check(cudaGetDevice(&device), "reading the GPU index");
  check(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device), "reading the L2 cache size");

  ComputeBench bench(options, l2_bytes);
  const calibration::ComputeSizes compute_sizes{{256, 512, 1024, 2048, 4096, 8192}, 16, 2048, 128,
                                                {1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, std::int64_t{1} << 30},
                                                l2_bytes};
  result.links = calibration::links_to_measure(job::nodes_of_ranks(options.timeout_s));
  calibration::MeasurementProgress progress(options, compute_sizes, result.links.size(), result.ranks);
  calibration::measure_compute(result, compute_sizes, program::DType::kBF16,
                               [&](const program::ComputeOp& op) { return bench.seconds(op); }, progress);
  for (LinkCalibration& link : result.links) measure_link(link, world, bench, options, progress);
  if (result.ranks >= 2) {
    const std::vector<std::int64_t> sizes = calibration::all_reduce_sizes();
    char* buffer = nullptr;
    check(cudaMalloc(&buffer, static_cast<std::size_t>(2 * sizes.back())), "allocating all-reduce buffers");
    for (const std::int64_t bytes : sizes) {
      const double seconds = calibration::time_per_call(
          [&] {
            nccl(world, ncclAllReduce(buffer, buffer + sizes.back(), static_cast<std::size_t>(bytes / 2), ncclBfloat16,
                                      ncclSum, world, bench.stream()),
                 options, "ncclAllReduce");
          },
          [&] { bench.finish({world}); }, options);
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
