// The compute cost model (see compute_model.h).
#include "sim/compute/compute_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "topology/presets.h"

namespace sim {
namespace {

// A GEMM's result is written in the input dtype, an FP8 GEMM's in bf16.
double output_element_bytes(program::DType dtype) {
  return dtype == program::DType::kFP8 ? 2.0 : static_cast<double>(program::dtype_bytes(dtype));
}

}  // namespace

ComputeEfficiency ComputeEfficiency::preset() {
  ComputeEfficiency efficiency;
  efficiency.kernel_overhead_s = 2e-6;
  efficiency.overlap_slowdown = 0.189;
  return efficiency;
}

ComputeModel::ComputeModel(topology::DeviceSpec device, ComputeEfficiency efficiency, topology::LinkSpec host_link)
    : device_(std::move(device)), efficiency_(std::move(efficiency)), host_link_(host_link) {
  memory_kernels_ = device_.memory_kernels.measured() ? device_.memory_kernels : topology::kH200Memory;
  const topology::GemmMeasurement& gemm = device_.gemm_sustained.measured() ? device_.gemm_sustained : topology::kHopperGemm;
  exposed_gemm_traffic_ = gemm.exposed_traffic;
  gemm_ceiling_ = efficiency_.matmul.value_or(main_loop_ceiling(gemm, program::DType::kBF16));
  const topology::GemmMeasurement& fp8 =
      device_.fp8_gemm_sustained.measured() ? device_.fp8_gemm_sustained : topology::kHopperFp8Gemm;
  fp8_gemm_ceiling_ = efficiency_.matmul.value_or(main_loop_ceiling(fp8, program::DType::kFP8));
  if (const auto curve = device_.attention_by_sequence.find(efficiency_.attention_kernel);
      curve != device_.attention_by_sequence.end()) {
    attention_by_sequence_.points = curve->second;
  }
}

// The measured GEMM is compute-bound (a large one): measured time = main loop at the ceiling
// (whole tiles, whole waves) + exposed · traffic, so
// ceiling = main loop at ceiling 1 / (measured time − exposed · traffic).
double ComputeModel::main_loop_ceiling(const topology::GemmMeasurement& measured, program::DType dtype) const {
  const double peak = peak_flops(dtype);
  const double measured_seconds = 2 * measured.m * measured.n * measured.k / (measured.fraction_of_peak * peak);
  const double bytes = (measured.m * measured.k + measured.k * measured.n) * static_cast<double>(program::dtype_bytes(dtype)) +
                       measured.m * measured.n * output_element_bytes(dtype);
  const double traffic_seconds = bytes / (device_.memory_bandwidth * memory_kernels_.streaming);
  const double at_full_rate =
      GemmModel(device_.sms, peak, 1.0, device_.memory_bandwidth).plan({1, measured.m, measured.n, measured.k}).seconds;
  return std::min(1.0,
                  at_full_rate / (measured_seconds - measured.exposed_traffic * traffic_seconds));
}

double ComputeModel::gemm_ceiling(program::DType dtype) const {
  return dtype == program::DType::kFP8 && device_.fp8_flops > 0 ? fp8_gemm_ceiling_ : gemm_ceiling_;
}

double ComputeModel::attention_efficiency(double sequence) const {
  if (efficiency_.attention) return *efficiency_.attention;
  return attention_by_sequence_.empty() ? ComputeEfficiency::kUnmeasuredAttention : attention_by_sequence_.at(sequence);
}

double ComputeModel::memory_efficiency(const program::ComputeOp& op) const {
  if (!efficiency_.memory_by_size.empty()) return efficiency_.memory_by_size.at(op.bytes);
  if (efficiency_.memory) return *efficiency_.memory;
  switch (op.kind) {
    case program::ComputeKind::kNorm:
      return op.phase == program::Phase::kBackward ? memory_kernels_.norm_backward : memory_kernels_.norm_forward;
    // A bias's gradient, a sum over rows: PyTorch's reduce_kernel summed an MPT-13b layer's
    // output gradients (378 MB) at 0.52 of an H200's bandwidth, its LayerNorm forward — also a
    // row reduction — ran at 0.54–0.56 from 256 MiB up (bench/results/h200-2026-12-04): priced
    // as the device's norm forward.
    case program::ComputeKind::kReduction: return memory_kernels_.norm_forward;
    case program::ComputeKind::kSoftmax:
    case program::ComputeKind::kLoss: return memory_kernels_.softmax;
    default: return memory_kernels_.streaming;
  }
}

GemmPlan ComputeModel::gemm_plan(const GemmShape& shape, program::DType dtype) const {
  const double peak = peak_flops(dtype);
  if (!efficiency_.matmul_by_size.empty()) {  // measured on this machine by shape: no further model
    const double flops = 2 * shape.batch * shape.m * shape.n * shape.k;
    GemmPlan plan;
    plan.seconds = flops / (peak * efficiency_.matmul_by_size.at(flops / shape.batch));
    return plan;
  }
  return GemmModel(device_.sms, peak, gemm_ceiling(dtype), device_.memory_bandwidth).plan(shape);
}

double ComputeModel::gemm_seconds(const program::ComputeOp& op) const {
  const double batch = static_cast<double>(op.shape[0]), m = static_cast<double>(op.shape[1]),
               n = static_cast<double>(op.shape[2]), k = static_cast<double>(op.shape[3]);
  const double main_loop = gemm_plan({batch, m, n, k}, op.dtype).seconds;
  const double rate = device_.memory_bandwidth * memory_efficiency(op);
  if (op.bytes <= 0 || !efficiency_.matmul_memory_traffic) return main_loop;
  if (!efficiency_.matmul_by_size.empty()) return std::max(main_loop, op.bytes / rate);  // measured whole
  const double traffic = op.bytes / rate;
  return std::max(main_loop, traffic) + exposed_gemm_traffic_ * std::min(main_loop, traffic);
}

double ComputeModel::peak_flops(program::DType dtype) const {
  switch (dtype) {
    case program::DType::kBF16: return device_.bf16_flops;
    case program::DType::kFP16: return device_.fp16_flops;
    case program::DType::kFP32:
      return efficiency_.fp32_matmul_on_tf32 ? device_.tf32_flops : device_.fp32_flops;
    case program::DType::kFP8:
      return device_.fp8_flops > 0 ? device_.fp8_flops : device_.bf16_flops;
  }
  return device_.bf16_flops;
}

double EfficiencyBySize::at(double size) const {
  if (size <= points.front().first) return points.front().second;
  if (size >= points.back().first) return points.back().second;
  const auto upper = std::lower_bound(points.begin(), points.end(), size,
                                      [](const std::pair<double, double>& point, double s) { return point.first < s; });
  const auto lower = upper - 1;
  const double t = std::log(size / lower->first) / std::log(upper->first / lower->first);
  return lower->second + t * (upper->second - lower->second);
}

double ComputeModel::seconds(const program::ComputeOp& op) const {
  if (op.kind == program::ComputeKind::kMemcpy) {
    // Not scaled by set_time_scale: a stated compute time says nothing about PCIe.
    const double rate = host_link_.effective_bandwidth();
    return (op.bytes > 0 && rate > 0 ? op.bytes / rate : 0) + host_link_.latency;
  }
  if (op.flops > 0 && op.kind == program::ComputeKind::kMatmul && op.shape.rank == 4) {
    return (gemm_seconds(op) + efficiency_.kernel_overhead_s) * time_scale_;
  }
  double flop_seconds = 0;
  if (op.flops > 0) {
    // A fused attention op's shape is [b, heads, kv heads, s, head dim].
    const double sequence = op.shape.rank == 5 ? static_cast<double>(op.shape[3]) : 0;
    const double efficiency = op.kind == program::ComputeKind::kAttention ? attention_efficiency(sequence)
                              : !efficiency_.matmul_by_size.empty()     ? efficiency_.matmul_by_size.at(op.flops)
                                                                         : gemm_ceiling(op.dtype);
    flop_seconds = op.flops / (peak_flops(op.dtype) * efficiency);
  }
  const double memory_seconds = op.bytes > 0 ? op.bytes / (device_.memory_bandwidth * memory_efficiency(op)) : 0;
  return (std::max(flop_seconds, memory_seconds) + efficiency_.kernel_overhead_s) * time_scale_;
}

}  // namespace sim
