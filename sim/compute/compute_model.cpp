// Roofline compute model (see compute_model.h).
#include "sim/compute/compute_model.h"

#include <cmath>
#include <algorithm>
#include <utility>

namespace sim {

ComputeEfficiency ComputeEfficiency::preset() {
  ComputeEfficiency efficiency;
  efficiency.kernel_overhead_s = 2e-6;
  efficiency.overlap_slowdown = 0.189;
  return efficiency;
}

ComputeModel::ComputeModel(topology::DeviceSpec device, ComputeEfficiency efficiency, topology::LinkSpec host_link)
    : device_(std::move(device)), efficiency_(std::move(efficiency)), host_link_(host_link) {
  gemm_ceiling_ = efficiency_.matmul.value_or(device_.gemm_efficiency > 0 ? device_.gemm_efficiency
                                                                          : ComputeEfficiency::kUnmeasuredMatmul);
  fp8_gemm_ceiling_ = !efficiency_.matmul && device_.fp8_gemm_efficiency > 0 ? device_.fp8_gemm_efficiency : gemm_ceiling_;
  memory_efficiency_ = efficiency_.memory.value_or(
      device_.memory_efficiency > 0 ? device_.memory_efficiency : ComputeEfficiency::kUnmeasuredMemory);
  if (const auto curve = device_.attention_by_sequence.find(efficiency_.attention_kernel);
      curve != device_.attention_by_sequence.end()) {
    attention_by_sequence_.points = curve->second;
  }
}

double ComputeModel::gemm_ceiling(program::DType dtype) const {
  return dtype == program::DType::kFP8 && device_.fp8_flops > 0 ? fp8_gemm_ceiling_ : gemm_ceiling_;
}

double ComputeModel::attention_efficiency(double sequence) const {
  if (efficiency_.attention) return *efficiency_.attention;
  return attention_by_sequence_.empty() ? ComputeEfficiency::kUnmeasuredAttention : attention_by_sequence_.at(sequence);
}

double ComputeModel::memory_efficiency(double bytes) const {
  return efficiency_.memory_by_size.empty() ? memory_efficiency_ : efficiency_.memory_by_size.at(bytes);
}

GemmPlan ComputeModel::gemm_plan(const GemmShape& shape, program::DType dtype) const {
  const double peak = peak_flops(dtype);
  if (!efficiency_.matmul_by_size.empty()) {  // measured on this machine by shape: no further model
    const double flops = 2 * shape.batch * shape.m * shape.n * shape.k;
    GemmPlan plan;
    plan.seconds = flops / (peak * efficiency_.matmul_by_size.at(flops / shape.batch));
    return plan;
  }
  return GemmModel(device_.sms, peak, gemm_ceiling(dtype), device_.memory_bandwidth * memory_efficiency_).plan(shape);
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
  double flop_seconds = 0;
  if (op.flops > 0 && op.kind == program::ComputeKind::kMatmul && op.shape.rank == 4) {
    flop_seconds = gemm_plan({static_cast<double>(op.shape[0]), static_cast<double>(op.shape[1]),
                              static_cast<double>(op.shape[2]), static_cast<double>(op.shape[3])},
                             op.dtype).seconds;
  } else if (op.flops > 0) {
    // A fused attention op's shape is [b, heads, kv heads, s, head dim].
    const double sequence = op.shape.rank == 5 ? static_cast<double>(op.shape[3]) : 0;
    const double efficiency = op.kind == program::ComputeKind::kAttention ? attention_efficiency(sequence)
                              : !efficiency_.matmul_by_size.empty()     ? efficiency_.matmul_by_size.at(op.flops)
                                                                         : gemm_ceiling(op.dtype);
    flop_seconds = op.flops / (peak_flops(op.dtype) * efficiency);
  }
  const double memory_seconds = op.bytes > 0 ? op.bytes / (device_.memory_bandwidth * memory_efficiency(op.bytes)) : 0;
  return (std::max(flop_seconds, memory_seconds) + efficiency_.kernel_overhead_s) * time_scale_;
}

}  // namespace sim
