// Compute cost model: how long one compute op takes on one device.
//
// Roofline (Williams, Waterman & Patterson, CACM 2009):
//   t = max( FLOPs / (peak(dtype) × efficiency(kind)),  bytes / (memory bandwidth × η_mem) )
//       + kernel launch overhead
// Matmuls and attention are normally FLOP-bound, norms, element-wise ops and optimizer
// updates bandwidth-bound; the max picks whichever bound applies to the op's shapes.
// A host↔device copy (kMemcpy) is bound by the PCIe link instead:
//   t = bytes / (PCIe bandwidth × PCIe efficiency) + PCIe latency.
//
// Efficiencies are named preset parameters (ComputeEfficiency::preset() gives the
// defaults and their sources); a scenario may override each, and `dtsim calibrate` measures
// them on real hardware.
#pragma once

#include <utility>
#include <vector>

#include "strategies/program/program.h"
#include "topology/hardware_spec.h"

namespace sim {

// An efficiency measured at several sizes (`dtsim calibrate`): (size, fraction), ascending in
// size. at(size) interpolates linearly in log(size) between the two nearest points, clamped at
// the ends.
struct EfficiencyBySize {
  std::vector<std::pair<double, double>> points;
  bool empty() const { return points.empty(); }
  double at(double size) const;
};

struct ComputeEfficiency {
  double matmul = 0;         // fraction of dense tensor-core peak a large GEMM reaches
  double attention = 0;      // fraction of peak a fused (Flash) attention kernel reaches
  double memory = 0;         // fraction of memory bandwidth a streaming kernel reaches
  double kernel_overhead_s = 0;  // fixed cost per kernel (launch and tail)
  // fp32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32; off by default
  // in PyTorch, so fp32 matmuls run at the plain FP32 rate).
  bool fp32_matmul_on_tf32 = false;
  // Measured GEMM efficiency by the FLOPs of one GEMM; when given it replaces `matmul`.
  EfficiencyBySize matmul_by_size;
  double matmul_for(double gemm_flops) const { return matmul_by_size.empty() ? matmul : matmul_by_size.at(gemm_flops); }
  // Measured memory efficiency by the bytes an op moves (caches make small ops faster than
  // large ones); when given it replaces `memory`.
  EfficiencyBySize memory_by_size;
  double memory_for(double bytes) const { return memory_by_size.empty() ? memory : memory_by_size.at(bytes); }

  // Defaults:
  //  matmul 0.80    — an 8192³ bf16 GEMM through PyTorch ran at 769–798 TFLOP/s of 989 on the
  //                   H200 our team measures on (notes of 2026-10-28 and 2026-11-04);
  //  memory 0.90    — a device-to-device copy moved 4.3 TB/s of 4.8 on that H200;
  //  attention 0.50 — lower end of FlashAttention-2's 50–73 % of A100 peak in the forward
  //                   pass (Dao, "FlashAttention-2", 2023, §4.1); backward is slower;
  //  overhead 2 µs  — lower end of the 2–5 µs launch-to-start latency of a CUDA kernel.
  static ComputeEfficiency preset();
};

class ComputeModel {
 public:
  // `host_link` prices host↔device copies (the node's PCIe link to the host).
  ComputeModel(topology::DeviceSpec device, ComputeEfficiency efficiency, topology::LinkSpec host_link = {});

  // Seconds for one op, times the current scale (1 unless set_time_scale was called; copies
  // are not scaled).
  double seconds(const program::ComputeOp& op) const;
  // Dense peak for a dtype: bf16/fp16 tensor cores, fp32 plain or on TF32 tensor cores
  // (fp32_matmul_on_tf32), fp8 where the device has it (else its bf16 rate).
  double peak_flops(program::DType dtype) const;
  // Multiplies every op's time, so that a stated compute time can be imposed (the chapter's
  // worked examples give T_comp directly).
  void set_time_scale(double scale) { time_scale_ = scale; }

  const topology::DeviceSpec& device() const { return device_; }
  const ComputeEfficiency& efficiency() const { return efficiency_; }

 private:
  topology::DeviceSpec device_;
  ComputeEfficiency efficiency_;
  topology::LinkSpec host_link_;
  double time_scale_ = 1.0;
};

}  // namespace sim
