// Calibration on CPU ranks with MPI (see backend/calibration.h).
#include "backend/calibration.h"

#include <cblas.h>
#include <mpi.h>

#include <algorithm>

#include "backend/calibration_steps.h"
#include "backend/job.h"
#include "backend/mpi/cpu_kernels.h"

namespace backend {
namespace {

program::ComputeOp compute_op(program::ComputeKind kind, program::Shape shape, double flops, double bytes) {
  program::ComputeOp op;
  op.kind = kind;
  op.dtype = program::DType::kFP32;
  op.shape = shape;
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

}  // namespace

Calibration calibrate(const CalibrationOptions& options) {
  Calibration result;
  result.backend = "mpi";
  result.device = "CPU core (OpenBLAS sgemm, one thread per rank)";
  result.gemm_dtype = "fp32";
  MPI_Comm_size(MPI_COMM_WORLD, &result.ranks);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  result.host = name;
  const auto nothing = [] {};

  openblas_set_num_threads(1);  // as the executor runs it: one core per rank
  cpu::Scratch scratch;
  for (const std::int64_t n : {64, 128, 256, 384, 512, 768, 1024}) {
    const double flops = 2.0 * static_cast<double>(n * n * n);
    const auto op = compute_op(program::ComputeKind::kMatmul, program::Shape::of({1, n, n, n}), flops, 0);
    const double seconds = calibration::time_per_call([&] { cpu::run_compute(op, scratch); }, nothing, options);
    result.gemm_rates.emplace_back(flops, flops / seconds);
    result.peak_flops = std::max(result.peak_flops, flops / seconds);
  }
  const std::int64_t heads = 4, seq = 128, dim = 64;
  const double attention_flops = 4.0 * static_cast<double>(heads * seq * seq * dim);
  const auto attention = compute_op(program::ComputeKind::kAttention, program::Shape::of({1, heads, heads, seq, dim}),
                                    attention_flops, 0);
  result.attention_flops =
      attention_flops / calibration::time_per_call([&] { cpu::run_compute(attention, scratch); }, nothing, options);
  const double large = 64.0 * (1 << 20);
  const auto stream = compute_op(program::ComputeKind::kElementwise, program::Shape::of({0}), 0, large);
  result.memory_bytes_per_s = large / calibration::time_per_call([&] { cpu::run_compute(stream, scratch); }, nothing, options);
  const auto tiny = compute_op(program::ComputeKind::kElementwise, program::Shape::of({0}), 0, 64);
  result.op_overhead_s = calibration::time_per_call([&] { cpu::run_compute(tiny, scratch); }, nothing, options);

  const int rank = job::world_rank();
  result.links = calibration::links_to_measure(job::nodes_of_ranks(ExecutionOptions{}.timeout_s));
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
    }
    calibration::fit_collective_efficiency(result);
  }
  return result;
}

}  // namespace backend
