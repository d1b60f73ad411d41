// Hardware presets with their sources.
//
// Devices — NVIDIA datasheets (dense tensor-core rates, i.e. half the "with sparsity" figure):
//   A100 SXM4 80GB: BF16/FP16 312 TFLOP/s, TF32 156, FP32 19.5, no FP8; 80 GB HBM2e at 2,039 GB/s;
//                   NVLink 3: 600 GB/s bidirectional = 300 GB/s per direction (12 × 25).
//   H100 SXM5:      BF16/FP16 989.4 TFLOP/s, TF32 494.7, FP32 66.9, FP8 1978.9; 80 GB HBM3 at
//                   3.35 TB/s;
//                   NVLink 4: 900 GB/s bidirectional = 450 GB/s per direction.
//   H200 SXM:       same compute as H100 SXM5; 141 GB HBM3e at 4.8 TB/s; NVLink 450 GB/s/dir.
//   H100 PCIe:      BF16/FP16 756 TFLOP/s, TF32 378, FP32 51.2, FP8 1513; 80 GB HBM2e at 2.0 TB/s.
//   L40S:           BF16/FP16 362 TFLOP/s, TF32 183, FP32 91.6, FP8 733; 48 GB GDDR6 at 864 GB/s.
//   B200 (HGX B200, 1,000 W) and the B200 of a GB200 superchip (1,200 W) — NVIDIA's GB200 NVL72
//     and HGX B200 "Technical Specifications" (nvidia.com/en-us/data-center/gb200-nvl72/,
//     .../hgx/), per GPU, tensor rates halved from the "with sparsity" figures:
//                   HGX B200: BF16/FP16 2,250 TFLOP/s, TF32 1,100, FP32 75, FP8 4,500; 180 GB HBM3e
//                   at 7.7 TB/s. GB200: BF16/FP16 2,500, TF32 1,250, FP32 80, FP8 5,000; 186 GB
//                   HBM3e at 8 TB/s. NVLink 5: 1.8 TB/s bidirectional = 900 GB/s per direction.
//                   Sustained GEMM rates are published for the HGX B200 (below); no memory or
//                   attention measurements are: the compute model's defaults apply to those
//                   until `dtsim calibrate` measures one.
//   MI300X:         AMD Instinct MI300X data sheet: BF16/FP16 1,307.4 TFLOP/s dense, TF32 653.7,
//                   FP32 163.4, FP8 2,614.9; 192 GB HBM3 at 5.3 TB/s; seven Infinity Fabric (xGMI)
//                   links of 64 GB/s per direction, one to each other GPU of the 8-GPU platform
//                   (448 GB/s per direction in all).
// Server hosts (parameter servers) — AMD EPYC 9654 datasheet: 96 cores at 2.4 GHz base, 12
//   DDR5-4800 channels (460.8 GB/s) per socket; Zen 4 retires two 256-bit FMAs per cycle
//   (32 FP32 FLOP): 2 sockets × 96 × 2.4 GHz × 32 = 14.7 TFLOP/s; 1.5 TB of DDR5.
// GB200's host — one Grace CPU per superchip of two GPUs, 36 in a rack (NVIDIA GB200 NVL72
//   "Technical Specifications": "36 Grace CPU | 72 Blackwell GPUs", per superchip "Up to 480 GB
//   LPDDR5X / Up to 512 GB/s"); 72 Arm Neoverse V2 cores retire 16 FP64 FLOP per cycle (NVIDIA
//   grace-cpu-benchmarking-guide, src/foundations/FMA; 32 in FP32) at 3.1 GHz base (the Grace
//   CPU Superchip of two: "FP64 Peak 7.1 TFLOPS", Grace Performance Tuning Guide), i.e.
//   72 × 32 × 3.1 GHz = 7.14 FP32 TFLOP/s. Its memory streams at 330 GB/s: STREAM TRIAD on 72
//   threads of a 480 GB Grace (dnhkng.github.io, "What 2x GH200 delivers", 2026-04-25, 348 GB/s
//   at its best thread count; NVIDIA's guide, src/foundations/STREAM, expects ≥ 307 GB/s at
//   480 GB). The Grace and its two GPUs share one NVLink-C2C, 900 GB/s bidirectional (NVIDIA
//   GTC 2024 release: "two B200 Tensor Core GPUs to a Grace CPU over a 900GB/s NVLink
//   chip-to-chip interconnect"), 450 GB/s each way, 225 per GPU when both copy; both do at once
//   in a data-parallel step, and nvbandwidth's all-GPU copies reach 168.6–183.9 GB/s per GPU
//   (host_to_all and all_to_host on a GB300 tray, the same Grace and C2C; NVIDIA/Megatron-LM
//   issue #6491, 2026-08-15; one GPU alone reaches 211.5): 176 / 225 = 0.78. The C2C's
//   latency is not published here; PCIe's link latency stands in (offloaded shards are MBs,
//   where it is below 0.1 %).
// Links — PCIe Gen4 x16 ≈ 32 GB/s and Gen5 x16 ≈ 64 GB/s per direction; InfiniBand HDR
//   200 Gb/s and NDR 400 Gb/s per port; one NIC per GPU on DGX/HGX nodes (VALIDATION.md).
// Efficiencies — what NCCL's collectives reach, as nccl-tests bus bandwidth over line rate
//   (docs/research/published_components.md):
//   NVLink 3 (A100): 230.8 / 300 = 0.77 — all_reduce of 1 GiB on 8 × A100 SXM, 230.8 GB/s
//     (NVIDIA/nccl issue #527, 2022-07-25; NVIDIA's "≈ 230 GB/s" in nccl-tests #149);
//   NVLink 4 (H100, H200): 365.6 / 450 = 0.81 — all_reduce of 8 GiB on 8 × H200 with NVLink
//     SHARP off, 365.6 GB/s (stas00/ml-engineering network/README.md, NCCL 2.27.7);
//   InfiniBand HDR: 24 / 25 = 0.96 — "about 24 GB/s per HDR NIC" (nccl-tests #160);
//   InfiniBand NDR: 47.5 / 50 = 0.95 — 46–49 GB/s per NDR NIC (nccl-tests #290, #267).
//   NVLink 5 (B200): no nccl-tests figure is published here; NVLink 4's fraction stands in for
//     it, an assumption to replace with a measurement (`dtsim calibrate`).
//   xGMI (MI300X): 48 / 64 = 0.75 — "CRC bit correction and protocol overhead ... reduce the
//     usable bandwidth to approximately 48 GB/s per link" (AMD ROCm blog, "Understanding RCCL
//     Bandwidth and xGMI Performance on AMD Instinct MI300X", 2025-03-02).
//   PCIe: what a GPU's copy over one x16 link reaches, since these links carry single transfers
//     (GPU to NIC, GPU to host, GPU to GPU through a switch) more than rings: Gen4 26.34 / 32
//     = 0.82 — nvbandwidth device_to_device_memcpy_read_ce between RTX A6000 under one PCIe
//     parent, 26.34 GB/s (NVIDIA/nvbandwidth issue #50, 2025-11-03; nccl-tests all_reduce on
//     4 × RTX 4090 with P2P, 25.7–26.0 GB/s from 256 MiB to 1 GiB, tinygrad/open-gpu-kernel-
//     modules issue #36, agrees); Gen5 55.4 / 64 = 0.87 — nvbandwidth host_to_device_memcpy_ce
//     on 8 × H200, 55.06–55.43 GB/s (stas00/ml-engineering network/README.md, 9021ea46), and
//     53–56.6 GB/s for P2P writes between RTX PRO 6000 on one socket (voipmonitor/rtx6kpro
//     hardware/pcie-bandwidth.md, 070506ff). Not modelled: 8-GPU rings through the host CPU
//     reach less there (nccl-tests all_reduce 37.6–41.7 GB/s on Gen5, the same file), which
//     NCCL's maintainers put down to the CPU's fabric and memory (NVIDIA/nccl issue #1639).
//   RoCE takes InfiniBand's figure at the same speed, for want of a published one. The
//   chapter's baseline (§6.1.7: NVLink at line rate, NDR at 0.8) is stated in its worked-example
//   scenarios; `dtsim calibrate` measures a given machine.
// NVLink SHARP — NVSwitch 3 (HGX H100/H200) reduces in the switch (NVIDIA Hopper architecture
//   whitepaper, "NVLink SHARP"); so do the NVLink 5 switches of HGX B200 and GB200 NVL72 (NVIDIA
//   Blackwell architecture technical brief: SHARP in the NVLink Switch); NVSwitch 2 (DGX A100)
//   does not.
// NCCL's tuner, per architecture and host (NVIDIA/nccl src/graph/tuning.cc at 2.30.7): its
//   bandwidth caps go by compute capability (sim/net/nccl_model.cpp holds them): A100 and L40S
//   (sm80, sm89) are Ampere to it, H100 and H200 Hopper, B200 and GB200 Blackwell; the MI300X
//   runs RCCL, none. The host CPUs — NCCL's network overhead and LL caps across nodes depend
//   on their vendor: DGX A100 2 × AMD EPYC 7742 (NVIDIA DGX A100 datasheet); DGX H100 /
//   H200 2 × Intel Xeon Platinum 8480C (DGX H100 datasheet), the HGX H100 / H200 presets take
//   those; DGX B200 2 × Intel Xeon Platinum 8570 (DGX B200 datasheet); GB200 NVL72 the Arm
//   Grace CPU of each superchip. The MI300X and PCIe platforms ship with either vendor: Intel,
//   NCCL's default row, stands.
// GB200 NVL72 — one NVLink domain of 72 GPUs (18 compute trays of 2 GB200 superchips, 9 NVLink
//   switch trays); each compute tray has 4 ConnectX-7 400 Gb/s NICs for its 4 GPUs, one per GPU
//   (NVIDIA GB200 NVL72 product page). dtsim models the rack as one NVSwitch node of 72 GPUs.
// Large fabrics — k-ary fat-trees (Al-Fares, Loukissas and Vahdat, SIGCOMM 2008): switches of
//   k ports, half down and half up at every tier, k/2 leaves per pod, k³/4 NICs in all.
//   InfiniBand NDR with NVIDIA Quantum-2 QM9700 switches (64 ports of 400 Gb/s): k = 64, pods of
//   32 leaves (1,024 NICs), up to 65,536 NICs; rail-optimized in scalable units of 32 nodes, one
//   leaf per rail (NVIDIA DGX SuperPOD reference architecture, DGX H100).
//   RoCE with NVIDIA Spectrum-4 SN5600 switches (64 ports of 800 GbE, each split into two of
//   400 GbE): k = 128, pods of 64 leaves (4,096 NICs), up to 524,288 NICs; rail-optimized in
//   groups of 64 nodes (NVIDIA Spectrum-X reference design).
// Latencies — per link, chosen so that GPU-to-GPU paths add up to NCCL's per-hop latency
//   model (src/graph/tuning.cc, hwLat, ring/LL): NVLink ≈ 0.6 µs (GPU–NVSwitch–GPU, 2 × 0.3),
//   PCIe ≈ 1.0 µs through the host (GPU–switch–host–switch–GPU, 4 × 0.25), network ≈ 2.7 µs
//   (GPU–switch–NIC 2 × 0.25 and NIC–leaf 0.85 on each side, + 0.2 µs per leaf–spine link
//   when the path climbs to a spine). A direct xGMI link takes a whole GPU-to-GPU NVLink path's
//   0.6 µs, for want of a published figure.
#include "topology/presets.h"

#include <fmt/format.h>

#include <optional>
#include <utility>

namespace topology {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kMicro = 1e-6;

// Gb/s line rate -> bytes/s.
constexpr double gbit(double gigabits) { return gigabits * kGiga / 8.0; }

constexpr double kNvlinkLatency = 0.3 * kMicro;
constexpr double kPcieLatency = 0.25 * kMicro;
constexpr double kNicLatency = 0.85 * kMicro;
constexpr double kSwitchLatency = 0.2 * kMicro;
constexpr double kNvlink3Efficiency = 230.8 / 300.0;
constexpr double kNvlink4Efficiency = 365.6 / 450.0;
constexpr double kNvlink5Efficiency = kNvlink4Efficiency;  // none measured: see the header
constexpr double kXgmiEfficiency = 48.0 / 64.0;
constexpr double kHdrEfficiency = 24.0 / 25.0;
constexpr double kNdrEfficiency = 47.5 / 50.0;
constexpr double kC2cEfficiency = 176.0 / 225.0;  // GB200's NVLink-C2C: see the header

// The compute model's measurements (sim/compute/compute_model.h says how it uses them):
//   SMs (NVIDIA whitepapers): A100 108, H100 SXM5 and H200 132, H100 PCIe 114, L40S 142, B200 148.
//   GEMM: a rate the GPU *sustains* — held at its power limit, on random data — not a short
//   burst at the boost clock. A dense GEMM that fills the SMs draws the board's whole power
//   budget and the clock settles well below boost; so does data that toggles the tensor cores'
//   inputs (Horace He, "Strangely, Matrix Multiplications on GPUs Run Faster When Given
//   'Predictable' Data!", thonking.ai, 2024: the same 8192³ GEMM on an A100 at 295 TFLOP/s on
//   zeros, 257 on torch.randn — "power limited"). Bursts ("maximum achievable matmul FLOPS",
//   Stas Bekman's mamf-finder) run 15–20 % above what a training step sustains (his words).
//     A100 SXM bf16: 257 of 312 TFLOP/s at 8192³, torch.randn inputs, cuBLAS through PyTorch
//       (He, above); the burst maximum is 271.2.
//     H200 SXM: "maximum sustainable matmul FLOPS" after a thermal soak, ~693 W at ~1465 MHz —
//       bf16 708.5 of 989.4 at 8192 × 8448 × 20480, fp8 1288.7 of 1978.9 at 8448 × 8192 × 16384
//       (stas00/ml-engineering, branch fast-mamf, commit 082816f, 2026-08-10,
//       compute/accelerator/README.md; torch 2.13.0+cu130).
//     H100 SXM5: none sustained is published; the H200 is the same GH100 die with the same 132
//       SMs, clocks and 700 W limit (only its memory differs), so the H200's figures stand in.
//     B200 (HGX, 1,000 W), same source: bf16 1456.3 of 2250 at 9472 × 8192 × 20480, fp8 2795.7
//       of 4500 at 9472 × 8192 × 16384 (~994 W at ~1339 MHz). The GB200's B200 (1,200 W) has
//       none published: the HGX B200's fractions stand in, as an assumption.
//     MI300X: only a burst maximum is published, 668.4 of 1307.4 TFLOP/s bf16 at
//       10240 × 15360 × 8192 (same README, master, PyTorch 2.5.1 on ROCm 6.3 with TunableOp) —
//       an upper bound of what it sustains; 304 compute units (AMD CDNA 3 white paper).
//   GEMM main loop and memory traffic (GemmMeasurement::exposed_traffic; the rule is
//   sim/compute/compute_model.h's): the fraction of the shorter of the two left beside the longer.
//     A100: 1, they add. PyTorch's unfused attention forward + backward (two batched GEMMs with
//       K or N = head dimension each way, softmax between) at 43–46 TFLOP/s (head dimension 64)
//       and 76–86 (128) (Dao-AILab/flash-attention README, "PyTorch" bars of the FlashAttention-2
//       benchmark, 2023), and the batched Q·Kᵀ and A·V GEMMs alone at 60–75 and 100–130 TFLOP/s
//       (Anthony et al., arXiv 2401.14489, Fig. 7): within 10 % of the sum, 25–60 % below the max.
//       (The README bars also time the benchmark's layout copies, see Hopper below; Anthony et
//       al.'s GEMMs alone are what holds the A100 at 1.) Ampere's cuBLAS kernels are not
//       persistent, a thread block per output tile, which leaves a short-K tile's loads and
//       result write beside its math rather than behind the next tile's.
//     Hopper: 0.10, measured on an H200 (bench/gpu_components.py; results in
//       bench/results/h200-2026-12-04-shapes; torch 2.11.0+cu130, cuBLAS's nvjet kernels): over
//       the 84 bf16 GEMMs of 0.1 ms or more — the 48 of the MPT layers, K and N sweeps at
//       M = 4096…16384, the 12 batched GEMMs of unfused attention — the fraction with the
//       smallest RMS log error, each candidate deriving the main-loop rate from Bekman's GEMM
//       under the same rule (bench/gemm_traffic_fit.py): 0.10 gives median |error| 3.0 %, RMS
//       log error 0.064 (0.15 ties; 1 gives 4.0 %, 0.181; the attention GEMMs alone 5.8 % vs
//       56 %). The kernels are persistent and warp-specialised: a producer warp's TMA loads the
//       next tile while consumers multiply and write the current one. FlashAttention's 2023
//       H100 "PyTorch" bars, which fit the sum, also time layout copies Megatron's attention
//       does not run (profiled on the H200: BENCHMARKS.md), so they are no counter-evidence.
//       Blackwell's kernels are built the same way (TMA, warp specialisation, persistent tiles):
//       the B200's and GB200's take Hopper's fraction, as an assumption. MI300X: not measured, 1.
//   Memory-bound kernels, fractions of the datasheet bandwidth (topology::MemoryKernelRates),
//   each kernel's bytes counted as inputs read once and outputs written once:
//     streaming — BabelStream's Add/Triad (two reads, one write; Azure/AI-benchmarking-guide
//       Azure_Results, CUDA 12.5–12.6): A100 80GB SXM 1.70 TB/s, H100 80GB 2.97, H200 4.15;
//       the A100's agrees with Triton's vector-add tutorial (1.686 TB/s at 1.6 GB,
//       triton-lang.org tutorial 01, its A100 documentation runner);
//     norm forward and backward — PyTorch's own LayerNorm (torch.nn.LayerNorm, fp32, 4096 rows
//       of 1,024–16,384; the median of the five widths; backward counts x, dy read and dx
//       written), linkedin/Liger-Kernel benchmark/data/all_benchmark_data.csv at ead96b6:
//       A100-SXM4-80GB (2024-09-03; backward = full − forward) 0.520 / 0.345, H100 80GB HBM3
//       (2025-07-17) 0.525 / 0.336. Apex's FusedLayerNorm, which Megatron-LM ran in 2021,
//       measured 896 / 572 GB/s at 16384 × 1024 fp16 on a "GA100" (NVIDIA/apex PR #1037):
//       0.44 / 0.28 of an 80 GB part, 0.58 / 0.37 of a 40 GB one — the same range;
//     softmax — torch.softmax over rows of 2,048 (fp32, 4096 rows) on the A100 at 1,249 GB/s
//       (Triton's fused-softmax tutorial 02, its benchmark table); on the H100, torch.compile's
//       fp32 softmax at 1.89 TB/s (Dao-AILab/quack media/2025-07-10-membound-sol.md), the only
//       framework softmax measured there.
//     The H200 has no published norm or softmax kernel figures; dtsim measured PyTorch's own on
//     one (bench/gpu_components.py, bench/results/h200-2026-12-04/components.json; bf16, the
//     mean of the 1 GiB and 4 GiB passes): LayerNorm over rows of 5,120 forward 2.71 TB/s and
//     backward (x, dy read, dx written) 1.46, softmax over rows of 2,048 1.88 — the H100's
//     absolute softmax rate: these kernels are bound by the SMs, not the memory.
//   Attention: fused kernels' forward + backward, causal mask, head dimension 128, batch ×
//     sequence = 16k tokens, 2048 hidden (Dao-AILab/flash-attention README, "Performance",
//     assets/flash2_a100_fwd_bwd_benchmark.png and flash2_h100_fwd_bwd_benchmark.png, 2023; the
//     Triton bars are Triton's own triton.ops.flash_attention, benchmarks/
//     benchmark_flash_attention.py), TFLOP/s at sequence 512, 1k, 2k, 4k, 8k, 16k:
//       A100 80GB SXM4 (of 312): FlashAttention-2 99, 133, 155, 173, 182, 189;
//                                FlashAttention   55,  62,  69,  76,  80,  83;
//                                Triton           50,  61,  68,  74,  78,  80;
//       H100 SXM5 (of 989.4):    FlashAttention-2 163, 221, 265, 294, 308, 328;
//                                FlashAttention    98, 109, 108, 126, 135, 137;
//                                Triton: not published. Its author's note on the Triton kernel
//                                (flash_attn/flash_attn_triton.py, 2022: "Triton forward +
//                                backward is slightly slower than CUDA forward + backward") and
//                                the A100 bars (Triton within 10 % of FlashAttention at every
//                                length) give it FlashAttention's curve.
//     H200 SXM, FlashAttention-2 as PyTorch ships it (scaled_dot_product_attention's flash
//       backend, torch 2.11.0+cu130), the same benchmark setup, measured by dtsim on one H200
//       after a GEMM power soak (bench/gpu_components.py; bench/results/h200-2026-12-04/
//       components.json): 131, 186, 234, 268, 291, 310 — 12 % below the H100's README bars at
//       sequence 2k. FlashAttention and Triton: none measured; the H100's curves stand in (the
//       same SMs and clocks; these kernels are compute-bound).
DeviceSpec datasheet(std::string name, double bf16, double fp16, double fp32, double tf32, double fp8, double memory,
                     double memory_bandwidth, double nvlink) {
  DeviceSpec device;
  device.name = std::move(name);
  device.bf16_flops = bf16;
  device.fp16_flops = fp16;
  device.fp32_flops = fp32;
  device.tf32_flops = tf32;
  device.fp8_flops = fp8;
  device.memory_bytes = memory;
  device.memory_bandwidth = memory_bandwidth;
  device.nvlink_bandwidth = nvlink;
  return device;
}

using Rates = std::vector<std::pair<double, double>>;  // (sequence, TFLOP/s)
using AttentionRates = std::vector<std::pair<AttentionKernel, Rates>>;

// (sequence, TFLOP/s) → (sequence, fraction of the device's bf16 peak).
std::vector<std::pair<double, double>> fraction_of_peak(const DeviceSpec& device, const Rates& tflops) {
  std::vector<std::pair<double, double>> curve;
  for (const auto& [sequence, rate] : tflops) curve.emplace_back(sequence, rate * kTera / device.bf16_flops);
  return curve;
}

const AttentionRates kAttentionA100 = {
    {AttentionKernel::kFlash2, {{512, 99}, {1024, 133}, {2048, 155}, {4096, 173}, {8192, 182}, {16384, 189}}},
    {AttentionKernel::kFlash1, {{512, 55}, {1024, 62}, {2048, 69}, {4096, 76}, {8192, 80}, {16384, 83}}},
    {AttentionKernel::kTriton, {{512, 50}, {1024, 61}, {2048, 68}, {4096, 74}, {8192, 78}, {16384, 80}}}};
const Rates kFlash1H100 = {
    {512, 98}, {1024, 109}, {2048, 108}, {4096, 126}, {8192, 135}, {16384, 137}};
const AttentionRates kAttentionH100 = {
    {AttentionKernel::kFlash2, {{512, 163}, {1024, 221}, {2048, 265}, {4096, 294}, {8192, 308}, {16384, 328}}},
    {AttentionKernel::kFlash1, kFlash1H100},
    {AttentionKernel::kTriton, kFlash1H100}};
const AttentionRates kAttentionH200 = {
    {AttentionKernel::kFlash2, {{512, 131}, {1024, 186}, {2048, 234}, {4096, 268}, {8192, 291}, {16384, 310}}},
    {AttentionKernel::kFlash1, kFlash1H100},
    {AttentionKernel::kTriton, kFlash1H100}};

DeviceSpec with_measurements(DeviceSpec device, int sms, GemmMeasurement gemm, GemmMeasurement fp8_gemm,
                             MemoryKernelRates memory, const AttentionRates& attention = {}) {
  for (const auto& [kernel, rates] : attention) device.attention_by_sequence[kernel] = fraction_of_peak(device, rates);
  device.sms = sms;
  device.gemm_sustained = gemm;
  device.fp8_gemm_sustained = fp8_gemm;
  device.memory_kernels = memory;
  return device;
}

DeviceSpec for_nccl(DeviceSpec device, NcclArchitecture architecture) {
  device.nccl_architecture = architecture;
  return device;
}

// The sources of these are in the header comment above.
constexpr GemmMeasurement kA100Gemm = {257.0 / 312.0, 8192, 8192, 8192};
constexpr MemoryKernelRates kA100Memory = {1.70 / 2.039, 0.520, 0.345, 1.249 / 2.039};
constexpr GemmMeasurement kB200Gemm = {1456.3 / 2250.0, 9472, 8192, 20480,
                                       kHopperExposedGemmTraffic};
constexpr GemmMeasurement kB200Fp8Gemm = {2795.7 / 4500.0, 9472, 8192, 16384,
                                          kHopperExposedGemmTraffic};
constexpr double kGraceFp32 = 72 * 32 * 3.1e9;
// Only streaming kernels (an offloaded optimizer) run on a host: STREAM TRIAD over the datasheet.
constexpr MemoryKernelRates kGraceMemory = {330.0 / 512.0, 330.0 / 512.0, 330.0 / 512.0,
                                            330.0 / 512.0};
constexpr GemmMeasurement kMi300xGemm = {668.4 / 1307.4, 10240, 15360, 8192};

const std::vector<std::pair<std::string, DeviceSpec>>& devices() {
  static const std::vector<std::pair<std::string, DeviceSpec>> table = {
      {"a100-sxm4-80gb",
       for_nccl(
           with_measurements(datasheet("A100 SXM4 80GB", 312 * kTera, 312 * kTera, 19.5 * kTera,
                                       156 * kTera, 0, 80 * kGiga, 2039 * kGiga, 300 * kGiga),
                             108, kA100Gemm, {}, kA100Memory, kAttentionA100),
           NcclArchitecture::kAmpere)},
      {"h100-sxm5",
       for_nccl(with_measurements(
                    datasheet("H100 SXM5", 989.4 * kTera, 989.4 * kTera, 66.9 * kTera,
                              494.7 * kTera, 1978.9 * kTera, 80 * kGiga, 3350 * kGiga, 450 * kGiga),
                    132, kHopperGemm, kHopperFp8Gemm, kH100Memory, kAttentionH100),
                NcclArchitecture::kHopper)},
      {"h200-sxm",
       for_nccl(with_measurements(
                    datasheet("H200 SXM", 989.4 * kTera, 989.4 * kTera, 66.9 * kTera, 494.7 * kTera,
                              1978.9 * kTera, 141 * kGiga, 4800 * kGiga, 450 * kGiga),
                    132, kHopperGemm, kHopperFp8Gemm, kH200Memory, kAttentionH200),
                NcclArchitecture::kHopper)},
      {"h100-pcie",
       for_nccl(with_measurements(datasheet("H100 PCIe", 756 * kTera, 756 * kTera, 51.2 * kTera,
                                            378 * kTera, 1513 * kTera, 80 * kGiga, 2000 * kGiga, 0),
                                  114, {}, {}, {}),
                NcclArchitecture::kHopper)},
      {"l40s",
       for_nccl(with_measurements(datasheet("L40S", 362 * kTera, 362 * kTera, 91.6 * kTera,
                                            183 * kTera, 733 * kTera, 48 * kGiga, 864 * kGiga, 0),
                                  142, {}, {}, {}),
                NcclArchitecture::kAmpere)},
      {"b200", for_nccl(with_measurements(datasheet("B200 (HGX B200)", 2250 * kTera, 2250 * kTera,
                                                    75 * kTera, 1100 * kTera, 4500 * kTera,
                                                    180 * kGiga, 7700 * kGiga, 900 * kGiga),
                                          148, kB200Gemm, kB200Fp8Gemm, {}),
                        NcclArchitecture::kBlackwell)},
      {"gb200",
       for_nccl(with_measurements(
                    datasheet("B200 of a GB200 superchip", 2500 * kTera, 2500 * kTera, 80 * kTera,
                              1250 * kTera, 5000 * kTera, 186 * kGiga, 8000 * kGiga, 900 * kGiga),
                    148, kB200Gemm, kB200Fp8Gemm, {}),
                NcclArchitecture::kBlackwell)},
      {"mi300x", with_measurements(datasheet("AMD Instinct MI300X", 1307.4 * kTera, 1307.4 * kTera,
                                             163.4 * kTera, 653.7 * kTera, 2614.9 * kTera,
                                             192 * kGiga, 5300 * kGiga, 7 * 64 * kGiga),
                                   304, kMi300xGemm, {}, {})},
      {"epyc-9654-2s", datasheet("2 × AMD EPYC 9654 (server host)", 14.7 * kTera, 14.7 * kTera,
                                 14.7 * kTera, 14.7 * kTera, 0, 1536 * kGiga, 921.6 * kGiga, 0)},
      {"grace",
       with_measurements(
           datasheet("NVIDIA Grace (72 Neoverse V2 cores, of a GB200 superchip)", kGraceFp32,
                     kGraceFp32, kGraceFp32, kGraceFp32, 0, 480 * kGiga, 512 * kGiga, 0),
           0, {}, {}, kGraceMemory)},
  };
  return table;
}

constexpr double kPcieGen4Efficiency = 0.82;  // see "Efficiencies" above
constexpr double kPcieGen5Efficiency = 0.87;

LinkSpec pcie_gen4() { return {32 * kGiga, kPcieLatency, kPcieGen4Efficiency}; }
LinkSpec pcie_gen5() { return {64 * kGiga, kPcieLatency, kPcieGen5Efficiency}; }

// What every node preset states: its GPU, how many, its NICs, PCIe and how the GPUs connect.
NodeSpec node_of(std::string name, NodeKind kind, const char* device, int gpus, int nics, LinkSpec pcie) {
  NodeSpec node;
  node.name = std::move(name);
  node.kind = kind;
  node.gpu = *device_preset(device);
  node.gpus = gpus;
  node.nics = nics;
  node.pcie = pcie;
  return node;
}

NodeSpec nvswitch_node(std::string name, const char* device, LinkSpec pcie,
                       double nvlink_efficiency, bool nvlink_sharp, int gpus = 8,
                       int nvls_channels = 16) {
  NodeSpec node = node_of(std::move(name), NodeKind::kNvSwitch, device, gpus, gpus, pcie);
  node.nvlink = {node.gpu.nvlink_bandwidth, kNvlinkLatency, nvlink_efficiency};
  node.nvlink_sharp = nvlink_sharp;
  node.nvls_channels = nvls_channels;
  return node;
}

NodeSpec on_host(NodeSpec node, HostCpu host_cpu) {
  node.host_cpu = host_cpu;
  return node;
}

// GB200: a Grace CPU per two GPUs, over NVLink-C2C (see the header).
NodeSpec on_grace(NodeSpec node) {
  node = on_host(std::move(node), HostCpu::kArm);
  node.host = NodeHostSpec{*device_preset("grace"), 2, {450 * kGiga, kPcieLatency, kC2cEfficiency}};
  return node;
}

// Eight GPUs each linked directly to the seven others (AMD Infinity Fabric), a NIC per GPU.
NodeSpec mesh_node(std::string name, const char* device, LinkSpec pcie, double link_efficiency) {
  NodeSpec node = node_of(std::move(name), NodeKind::kFullMesh, device, 8, 8, pcie);
  node.nvlink = {node.gpu.nvlink_bandwidth / (node.gpus - 1), 2 * kNvlinkLatency, link_efficiency};
  return node;
}

NodeSpec pcie_node(std::string name, const char* device, int nics, LinkSpec pcie) {
  return node_of(std::move(name), NodeKind::kPcie, device, 8, nics, pcie);
}

const std::vector<std::pair<std::string, NodeSpec>>& nodes() {
  static const std::vector<std::pair<std::string, NodeSpec>> table = {
      {"dgx-a100",
       on_host(nvswitch_node("DGX A100 (8 × A100 SXM4 80GB, NVSwitch)", "a100-sxm4-80gb",
                             pcie_gen4(), kNvlink3Efficiency, /*nvlink_sharp=*/false),
               HostCpu::kAmd)},
      {"hgx-h100", nvswitch_node("HGX H100 (8 × H100 SXM5, NVSwitch)", "h100-sxm5", pcie_gen5(),
                                 kNvlink4Efficiency, /*nvlink_sharp=*/true)},
      {"hgx-h200", nvswitch_node("HGX H200 (8 × H200 SXM, NVSwitch)", "h200-sxm", pcie_gen5(),
                                 kNvlink4Efficiency, /*nvlink_sharp=*/true)},
      {"hgx-b200", nvswitch_node("HGX B200 (8 × B200, NVLink 5 switch)", "b200", pcie_gen5(),
                                 kNvlink5Efficiency, /*nvlink_sharp=*/true, 8, 24)},
      {"gb200-nvl72", on_grace(nvswitch_node(
                          "GB200 NVL72 (72 × B200 in one NVLink domain, a NIC per GPU)", "gb200",
                          pcie_gen5(), kNvlink5Efficiency, /*nvlink_sharp=*/true, 72, 24))},
      {"mi300x-8", mesh_node("AMD Instinct MI300X platform (8 × MI300X, xGMI full mesh)", "mi300x",
                             pcie_gen5(), kXgmiEfficiency)},
      {"pcie-h100",
       pcie_node("PCIe server (8 × H100 PCIe, no NVLink, 4 NICs)", "h100-pcie", 4, pcie_gen5())},
      {"pcie-l40s", pcie_node("PCIe server (8 × L40S, no NVLink, 2 NICs)", "l40s", 2, pcie_gen4())},
  };
  return table;
}

FabricSpec fat_tree(std::string name, FabricKind kind, double line_rate, double efficiency) {
  FabricSpec fabric;
  fabric.name = std::move(name);
  fabric.kind = kind;
  fabric.nic = {line_rate, kNicLatency, efficiency};
  fabric.uplink = {line_rate, kSwitchLatency, efficiency};
  fabric.leaf_down_ports = 32;
  fabric.oversubscription = 1.0;
  fabric.rail_optimized = false;
  return fabric;
}

// A rail-optimized k-ary fat-tree of three tiers with full bisection: leaves of k/2 NICs,
// pods of k/2 leaves (see the header).
FabricSpec rail_fat_tree(std::string name, FabricKind kind, double line_rate, double efficiency, int radix) {
  FabricSpec fabric = fat_tree(std::move(name), kind, line_rate, efficiency);
  fabric.leaf_down_ports = radix / 2;
  fabric.pod_leaves = radix / 2;
  fabric.rail_optimized = true;
  return fabric;
}

const std::vector<std::pair<std::string, FabricSpec>>& fabrics() {
  static const std::vector<std::pair<std::string, FabricSpec>> table = {
      {"ib-hdr", fat_tree("InfiniBand HDR 200 Gb/s fat-tree", FabricKind::kInfiniBand, gbit(200), kHdrEfficiency)},
      {"ib-ndr", fat_tree("InfiniBand NDR 400 Gb/s fat-tree", FabricKind::kInfiniBand, gbit(400), kNdrEfficiency)},
      {"roce-200", fat_tree("RoCE 200 GbE fat-tree", FabricKind::kRoCE, gbit(200), kHdrEfficiency)},
      {"roce-400", fat_tree("RoCE 400 GbE fat-tree", FabricKind::kRoCE, gbit(400), kNdrEfficiency)},
      {"ib-ndr-rail", rail_fat_tree("InfiniBand NDR 400 Gb/s, rail-optimized three-tier fat-tree of 64-port switches",
                                    FabricKind::kInfiniBand, gbit(400), kNdrEfficiency, 64)},
      {"roce-400-rail", rail_fat_tree("RoCE 400 GbE, rail-optimized three-tier fat-tree of 128-port switches",
                                      FabricKind::kRoCE, gbit(400), kNdrEfficiency, 128)},
  };
  return table;
}

const std::vector<std::pair<std::string, LinkSpec>>& server_nics() {
  static const std::vector<std::pair<std::string, LinkSpec>> table = {
      {"eth-25g", {gbit(25), kNicLatency, 1.0}},
      {"eth-100g", {gbit(100), kNicLatency, 1.0}},
      {"eth-200g", {gbit(200), kNicLatency, 1.0}},
      {"ib-ndr", {gbit(400), kNicLatency, kNdrEfficiency}},
  };
  return table;
}

template <typename T>
std::optional<T> find_in(const std::vector<std::pair<std::string, T>>& table,
                         std::string_view name) {
  for (const auto& [key, value] : table) {
    if (key == name) return value;
  }
  return std::nullopt;
}

template <typename T>
std::vector<std::string> names_of(const std::vector<std::pair<std::string, T>>& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.push_back(entry.first);
  return names;
}

}  // namespace

std::optional<DeviceSpec> device_preset(std::string_view name) { return find_in(devices(), name); }
std::optional<NodeSpec> node_preset(std::string_view name) { return find_in(nodes(), name); }
std::optional<FabricSpec> fabric_preset(std::string_view name) { return find_in(fabrics(), name); }
std::optional<LinkSpec> server_nic_preset(std::string_view name) {
  return find_in(server_nics(), name);
}

std::vector<std::string> device_preset_names() { return names_of(devices()); }
std::vector<std::string> node_preset_names() { return names_of(nodes()); }
std::vector<std::string> fabric_preset_names() { return names_of(fabrics()); }
std::vector<std::string> server_nic_preset_names() { return names_of(server_nics()); }

const std::vector<std::pair<std::string, AttentionKernel>>& attention_kernels() {
  static const std::vector<std::pair<std::string, AttentionKernel>> table = {
      {"flash2", AttentionKernel::kFlash2}, {"flash1", AttentionKernel::kFlash1}, {"triton", AttentionKernel::kTriton}};
  return table;
}
void adopt_measurements(DeviceSpec& device, const DeviceSpec& architecture) {
  device.sms = architecture.sms;
  device.gemm_sustained = architecture.gemm_sustained;
  device.fp8_gemm_sustained = architecture.fp8_gemm_sustained;
  device.memory_kernels = architecture.memory_kernels;
  device.attention_by_sequence = architecture.attention_by_sequence;
  device.nccl_architecture = architecture.nccl_architecture;
}

const std::vector<std::pair<std::string, HostCpu>>& host_cpus() {
  static const std::vector<std::pair<std::string, HostCpu>> table = {
      {"intel", HostCpu::kIntel}, {"amd", HostCpu::kAmd}, {"arm", HostCpu::kArm}};
  return table;
}
std::vector<std::string> host_cpu_names() { return names_of(host_cpus()); }
std::optional<HostCpu> host_cpu(std::string_view name) { return find_in(host_cpus(), name); }
std::string_view host_cpu_name(HostCpu host_cpu) {
  for (const auto& [name, value] : host_cpus()) {
    if (value == host_cpu) return name;
  }
  return "?";
}

std::vector<std::string> attention_kernel_names() { return names_of(attention_kernels()); }
std::optional<AttentionKernel> attention_kernel(std::string_view name) { return find_in(attention_kernels(), name); }
std::string_view attention_kernel_name(AttentionKernel kernel) {
  for (const auto& [name, value] : attention_kernels()) {
    if (value == kernel) return name;
  }
  return "?";
}

std::string describe(const DeviceSpec& d) {
  // NVIDIA's GPU links are NVLink; AMD's (which NCCL does not drive) Infinity Fabric; a CPU has
  // none.
  const bool nvidia = d.nccl_architecture != NcclArchitecture::kNone;
  const std::string links =
      d.nvlink_bandwidth > 0
          ? fmt::format(", {} {:.0f} GB/s per direction", nvidia ? "NVLink" : "Infinity Fabric",
                        d.nvlink_bandwidth / kGiga)
      : nvidia ? ", no NVLink"
               : "";
  return fmt::format("{}: bf16 {:.1f} TFLOP/s, fp32 {:.1f} TFLOP/s, {:.0f} GB at {:.0f} GB/s{}",
                     d.name, d.bf16_flops / kTera, d.fp32_flops / kTera, d.memory_bytes / kGiga,
                     d.memory_bandwidth / kGiga, links);
}

std::string describe(const NodeSpec& n) {
  const std::string host =
      n.host ? fmt::format(", host: a {} per {} GPUs over a {:.0f} GB/s link each way",
                           n.host->cpu.name, n.host->gpus_per_cpu, n.host->link.bandwidth / kGiga)
             : std::string(", host: the server host preset over PCIe");
  return fmt::format("{}: {} GPUs, {} NICs, PCIe {:.0f} GB/s, host CPUs {}{}", n.name, n.gpus,
                     n.nics, n.pcie.bandwidth / kGiga, host_cpu_name(n.host_cpu), host);
}

std::string describe(const FabricSpec& f) {
  return fmt::format("{}: {:.0f} Gb/s ports ({:.0f} GB/s effective), {} down ports per leaf{}", f.name,
                     f.nic.bandwidth * 8 / kGiga, f.nic.effective_bandwidth() / kGiga, f.leaf_down_ports,
                     f.pod_leaves > 0 ? fmt::format(", pods of {} leaves", f.pod_leaves) : "");
}

}  // namespace topology
