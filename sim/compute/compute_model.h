// Compute cost model: how long one compute op takes on one device.
//
// GEMMs (sim/compute/gemm_model.h): the tensor cores' main loop over whole tiles in whole
// waves, at the rate the GPU sustains at its power limit, and the GEMM's memory traffic (A and
// B read, C written) at the streaming rate, T = (A + B + C bytes) / (bandwidth × η_stream):
//   t = max(main loop, T) + ε · min(main loop, T)
// ε, the fraction of the shorter left exposed, depends on how the architecture's kernels
// pipeline (GemmMeasurement::exposed_traffic; topology/presets.cpp cites each): 1 on the A100,
// where they add — PyTorch's unfused attention and its batched Q·Kᵀ and A·V GEMMs run near the
// sum, far below the max —, 0.10 on Hopper, whose persistent warp-specialised kernels load the
// next tile while the current one computes (measured on an H200 over 84 GEMMs). For a
// transformer layer's GEMMs T is 3–8 % of the main loop; for attention's Q·Kᵀ at head dimension
// 64–128 it is the longer of the two.
// The main-loop rate is derived from one large measured GEMM (DeviceSpec::gemm_sustained): its
// time less its own exposed traffic.
// Memory-bound ops (roofline: Williams, Waterman & Patterson, CACM 2009):
//   t = max( FLOPs / (peak × η),  bytes / (bandwidth × η_kernel) ) + kernel launch overhead
// with η_kernel the measured rate of the op's kind of kernel (DeviceSpec::memory_kernels):
// element-wise kernels stream, normalisations and softmax reduce along rows and reach less.
// That affine form is the by-size curve: Triton's vector-add tutorial on an A100 80GB takes
// 8 µs + bytes / 1.70 TB/s per call from 3 MB to 1.6 GB, of which 6.1 µs is an isolated call's
// launch and timing floor (its smallest sizes) that a kernel in a stream does not pay — leaving
// the 2 µs overhead below (tests/simulation/compute_model_test.cpp checks the table).
// A fused attention kernel runs at its measured rate by sequence length
// (DeviceSpec::attention_by_sequence).
// A host↔device copy (kMemcpy) is bound by the PCIe link instead:
//   t = bytes / (PCIe bandwidth × PCIe efficiency) + PCIe latency.
//
// Efficiencies are named preset parameters (topology/presets.cpp gives each device's and its
// sources); a scenario may override each, and `dtsim calibrate` measures them on real hardware.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "sim/compute/gemm_model.h"
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
  // Fraction of dense tensor-core peak the GEMM main loop sustains inside a full wave of tiles;
  // unset: derived from the device's sustained GEMM measurement (DeviceSpec::gemm_sustained),
  // else from the Hopper GPU's (topology::kHopperGemm).
  std::optional<double> matmul;
  // Fraction of peak a fused (Flash) attention kernel reaches, forward and backward; unset: the
  // device's curve for `attention_kernel` by sequence length (DeviceSpec::attention_by_sequence),
  // else kUnmeasuredAttention.
  std::optional<double> attention;
  // Which fused attention kernel the framework runs (FlashAttention-2 unless the scenario says).
  topology::AttentionKernel attention_kernel = topology::AttentionKernel::kFlash2;
  // Fraction of memory bandwidth every memory-bound kernel reaches; unset: each kind of
  // kernel's measured rate on the device (DeviceSpec::memory_kernels), else the H200's
  // (topology::kH200Memory).
  std::optional<double> memory;
  double kernel_overhead_s = 0;  // fixed cost per kernel (launch and tail)
  // How much longer a GPU compute op takes when it starts while its rank has a collective in
  // flight, one launched at the same instant included: NCCL's kernels take SMs and memory
  // bandwidth from it (point-to-point sends are not
  // counted: no measurement of theirs). Default 0.189 —
  // the mean slowdown of compute overlapped with communication across 4 × A100, 4 × H100,
  // MI250 and MI210 on GPT and LLaMA (Lee et al., "Characterizing Compute-Communication
  // Overlap in GPU-Accelerated Distributed Deep Learning", arXiv 2507.03114, 2025: 18.9 % on
  // average, 40.0 % at most).
  double overlap_slowdown = 0;
  // fp32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32; off by default
  // in PyTorch, so fp32 matmuls run at the plain FP32 rate).
  bool fp32_matmul_on_tf32 = false;
  // A GEMM's operands read and result written cost time beside its main loop; false prices a
  // GEMM by its FLOPs alone (the textbook's "compute ∝ FLOPs").
  bool matmul_memory_traffic = true;
  // Measured GEMM efficiency by the FLOPs of one GEMM (the whole op: main loop and memory);
  // when given it replaces the shape model.
  EfficiencyBySize matmul_by_size;
  // Measured memory efficiency by the bytes an op moves (caches make small ops faster than
  // large ones); when given it replaces `memory`.
  EfficiencyBySize memory_by_size;

  // Defaults:
  //  matmul, memory — each device's own measurements (topology/presets.cpp);
  //  attention      — each device's curve for the kernel, FlashAttention-2 by default
  //                   (topology/presets.cpp);
  //  overhead 2 µs  — lower end of the 2–5 µs launch-to-start latency of a CUDA kernel;
  //  overlap_slowdown 0.189 (above).
  static ComputeEfficiency preset();
  // Lower end of FlashAttention-2's 50–73 % of A100 peak in the forward pass (Dao,
  // "FlashAttention-2", 2023, §4.1), for a device without a measured curve.
  static constexpr double kUnmeasuredAttention = 0.50;
};

class ComputeModel {
 public:
  // `host_link` prices host↔device copies (a GPU's share of its link to the host: PCIe, or GB200's
  // NVLink-C2C; topology::host_link_per_gpu).
  ComputeModel(topology::DeviceSpec device, ComputeEfficiency efficiency, topology::LinkSpec host_link = {});

  // Seconds for one op, times the current scale (1 unless set_time_scale was called; copies
  // are not scaled).
  double seconds(const program::ComputeOp& op) const;
  // The main loop of one [batch, M, N, K] GEMM in `dtype`: tiles, waves, split-K.
  GemmPlan gemm_plan(const GemmShape& shape, program::DType dtype) const;
  // The fraction of peak the GEMM main loop sustains in a full wave, after the scenario's
  // overrides and the device's measurements.
  double gemm_ceiling(program::DType dtype) const;
  // ε: the fraction of the shorter of a GEMM's main loop and memory traffic left beside the longer.
  double exposed_gemm_traffic() const { return exposed_gemm_traffic_; }
  // The fraction of memory bandwidth an op of `op`'s kind reaches moving `op.bytes`.
  double memory_efficiency(const program::ComputeOp& op) const;
  double attention_efficiency(double sequence) const;
  // Dense peak for a dtype: bf16/fp16 tensor cores, fp32 plain or on TF32 tensor cores
  // (fp32_matmul_on_tf32), fp8 where the device has it (else its bf16 rate).
  double peak_flops(program::DType dtype) const;
  // Multiplies every op's time, so that a stated compute time can be imposed (the chapter's
  // worked examples give T_comp directly).
  void set_time_scale(double scale) { time_scale_ = scale; }

  const topology::DeviceSpec& device() const { return device_; }
  const ComputeEfficiency& efficiency() const { return efficiency_; }

 private:
  // The main-loop rate of a GEMM measured at `measured`'s shape: its time less its memory traffic.
  double main_loop_ceiling(const topology::GemmMeasurement& measured, program::DType dtype) const;
  // A GEMM by its shape: its main loop and its memory traffic, combined as above.
  double gemm_seconds(const program::ComputeOp& op) const;

  topology::DeviceSpec device_;
  ComputeEfficiency efficiency_;
  topology::LinkSpec host_link_;
  topology::MemoryKernelRates memory_kernels_;  // the device's, or the H200's when unmeasured
  double exposed_gemm_traffic_;  // ε above, the device's (or Hopper's when unmeasured)
  double gemm_ceiling_;      // bf16/fp16/tf32/fp32
  double fp8_gemm_ceiling_;
  EfficiencyBySize attention_by_sequence_;  // the chosen kernel's curve on this device; empty: none
  double time_scale_ = 1.0;
};

}  // namespace sim
