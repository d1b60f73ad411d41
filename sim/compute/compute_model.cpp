// Roofline compute model (see compute_model.h).
#include "sim/compute/compute_model.h"

#include <cmath>
#include <algorithm>
#include <utility>

namespace sim {

ComputeEfficiency ComputeEfficiency::preset() {
  ComputeEfficiency efficiency;
  efficiency.matmul = 0.80;
  efficiency.attention = 0.50;
  efficiency.memory = 0.90;
  efficiency.kernel_overhead_s = 2e-6;
  return efficiency;
}

ComputeModel::ComputeModel(topology::DeviceSpec device, ComputeEfficiency efficiency, topology::LinkSpec host_link)
    : device_(std::move(device)), efficiency_(efficiency), host_link_(host_link) {}

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
  const double gemms = op.kind == program::ComputeKind::kMatmul && op.shape.rank > 0 ? std::max(1.0, static_cast<double>(op.shape[0])) : 1;
  double flop_efficiency = efficiency_.matmul_for(op.flops / gemms);
  if (op.kind == program::ComputeKind::kAttention) flop_efficiency = efficiency_.attention;
  const double flop_seconds = op.flops > 0 ? op.flops / (peak_flops(op.dtype) * flop_efficiency) : 0;
  const double memory_seconds =
      op.bytes > 0 ? op.bytes / (device_.memory_bandwidth * efficiency_.memory_for(op.bytes)) : 0;
  return (std::max(flop_seconds, memory_seconds) + efficiency_.kernel_overhead_s) * time_scale_;
}

}  // namespace sim
