// Hardware descriptions: devices, links, nodes, fabrics and the whole cluster, in SI base
// units (bytes, bytes/s, FLOP/s, seconds). Presets live in presets.h; the scenario loader
// starts from a preset and overrides any field from TOML.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace topology {

// Fused attention kernels whose forward + backward rate is published per GPU (the
// Dao-AILab/flash-attention README's benchmark): FlashAttention-2, the first FlashAttention
// (CUDA), and FlashAttention written in Triton.
enum class AttentionKernel { kFlash2, kFlash1, kTriton };

// A GEMM rate measured on a device: its FLOP/s over the datasheet peak of the GEMM's dtype, at
// an M × N × K shape (C[M,N] = A[M,K] · B[K,N]). The compute model derives its tensor-core
// main-loop rate from it (the shape says how much of the time was memory traffic).
struct GemmMeasurement {
  double fraction_of_peak = 0;  // 0: not measured
  double m = 0, n = 0, k = 0;
  // How the architecture's GEMM kernels combine their main loop and their memory traffic: the
  // fraction of the shorter of the two left exposed beside the longer (1: they add; 0: the
  // longer hides the shorter). sim/compute/compute_model.h; presets.cpp gives each its source.
  double exposed_traffic = 1;
  bool measured() const { return fraction_of_peak > 0; }
};

// What a device's memory-bound kernels reach, as fractions of its datasheet memory bandwidth,
// each counting the bytes the kernel must move (inputs read once, outputs written once). The
// kernels differ: element-wise ones stream, normalisations and softmax reduce along rows (and
// a norm's backward reads its input and the output's gradient, then reduces twice).
struct MemoryKernelRates {
  double streaming = 0;      // element-wise: activations, dropout, residual adds, casts, optimizer
  double norm_forward = 0;   // LayerNorm / RMSNorm forward
  double norm_backward = 0;  // their backward
  double softmax = 0;        // softmax over rows (attention scores, the loss's logits)
  bool measured() const { return streaming > 0; }
};

// A GPU architecture as NCCL's tuner tells them apart (its tables by compute capability,
// NVIDIA/nccl src/graph/tuning.cc): Ampere and Ada (sm80–89), Hopper (sm90), Blackwell (sm100);
// none for devices NCCL does not drive (the MI300X runs RCCL, a CPU host none).
enum class NcclArchitecture { kNone, kAmpere, kHopper, kBlackwell };

// One accelerator. Peak rates are dense (no structured sparsity), from public datasheets.
struct DeviceSpec {
  std::string name;
  double bf16_flops = 0;  // dense tensor-core peak, FLOP/s
  double fp16_flops = 0;
  double fp32_flops = 0;  // non-tensor FP32 peak
  double tf32_flops = 0;  // tensor-core TF32 peak (what PyTorch uses for fp32 matmuls when allowed)
  double fp8_flops = 0;   // 0 when the device has no FP8 tensor cores
  double memory_bytes = 0;
  double memory_bandwidth = 0;  // bytes/s
  double nvlink_bandwidth = 0;  // bytes/s per direction, all NVLink (or xGMI) links of one GPU together; 0: none
  // What the compute model needs beyond the datasheet (sim/compute/compute_model.h); each
  // preset cites its source. Unset: not measured (the compute model's defaults apply).
  int sms = 0;                          // streaming multiprocessors: GEMM tiles run in waves of this many
  GemmMeasurement gemm_sustained;       // bf16/fp16, the GPU held at its power limit
  GemmMeasurement fp8_gemm_sustained;   // the same for fp8 GEMMs
  MemoryKernelRates memory_kernels;
  // Each fused attention kernel's forward + backward rate, causal, head dimension 128: (sequence
  // length, FLOP/s / bf16 peak), ascending in sequence; a kernel absent: not measured.
  std::map<AttentionKernel, std::vector<std::pair<double, double>>> attention_by_sequence;
  // The architecture NCCL's tuner prices these GPUs as (its bandwidth caps, sim/net/nccl_model.h).
  NcclArchitecture nccl_architecture = NcclArchitecture::kNone;
};

// One class of physical link. `efficiency` is the fraction of `bandwidth` a collective
// reaches on it (protocol overhead, NCCL's chunking): an explicit, documented preset
// parameter, never a hidden constant.
struct LinkSpec {
  double bandwidth = 0;  // bytes/s per direction
  double latency = 0;    // seconds per traversal of this link
  double efficiency = 1.0;
  double effective_bandwidth() const { return bandwidth * efficiency; }
};

enum class NodeKind {
  kNvSwitch,  // GPUs fully connected through NVSwitch (DGX/HGX)
  kPcie,      // GPUs talk over PCIe through the host (no NVLink)
  kFullMesh,  // a direct link between every two GPUs (AMD Infinity Fabric / xGMI on MI300X)
};

// The vendor of a node's host CPUs. NCCL's tuner prices by it (src/graph/tuning.cc): its network
// proxy's overhead per ring step (1 µs, 2 on AMD) and its LL bandwidth cap across nodes.
enum class HostCpu { kIntel, kAmd, kArm };

// The CPUs beside a node's GPUs whose memory an offloaded model state lives in: an offloaded
// optimizer steps on them, and host<->device copies cross `link`. A node preset without one (the
// HGX/DGX servers) takes the cluster's server host preset (ParameterServerSpec::host) as its one
// host, its copies crossing the GPUs' PCIe links; GB200 has a Grace CPU per two GPUs.
struct NodeHostSpec {
  DeviceSpec cpu;        // one host CPU with its memory
  int gpus_per_cpu = 1;  // the GPUs sharing one CPU, its memory bandwidth and its link
  LinkSpec link;         // one CPU <-> its GPUs, per direction, shared by them
};

struct NodeSpec {
  std::string name;
  NodeKind kind = NodeKind::kNvSwitch;
  DeviceSpec gpu;
  int gpus = 8;
  int nics = 8;  // NICs (and PCIe switches) per node; GPU i uses NIC i·nics/gpus
  // GPU <-> NVSwitch, bandwidth defaulting to gpu.nvlink_bandwidth; on a full mesh, each
  // GPU <-> GPU link, defaulting to gpu.nvlink_bandwidth / (gpus − 1).
  LinkSpec nvlink;
  LinkSpec pcie;    // GPU/NIC <-> PCIe switch and PCIe switch <-> host
  // NVLink SHARP: the node's NVSwitches (third generation: HGX H100/H200) reduce in the switch,
  // so NCCL can run its NVLS all-reduce (NCCL_NVLS_ENABLE; off: false).
  bool nvlink_sharp = false;
  // NCCL's NVLS channels (thread blocks) on this node's GPUs: 16 on Hopper, 24 on Blackwell in
  // one NVLink domain (NVIDIA/nccl src/transport/nvls.cc, NVLS_NCHANNELS_SM90 / _SM100_NVL).
  int nvls_channels = 16;
  HostCpu host_cpu = HostCpu::kIntel;
  std::optional<NodeHostSpec> host;  // unset: the cluster's server host, over `pcie`
};

enum class FabricKind { kInfiniBand, kRoCE };

// Fat-tree of two tiers (leaf/spine) or three (leaf/spine/core). Each leaf has
// `leaf_down_ports` ports towards NICs and leaf_down_ports / oversubscription ports of the same
// speed towards the spines, one to each spine switch (of its pod, with three tiers). Classic:
// all NICs of a node on one leaf. Rail-optimized: NIC r of every node in a group goes to rail
// leaf r of that group.
// Three tiers (pod_leaves > 0): consecutive leaves form pods of `pod_leaves`; each pod has its
// own spines (as many as a leaf has uplinks), spine k of a pod has pod_leaves /
// spine_oversubscription uplinks, one to each core switch of plane k, and plane k's cores join
// spine k of every pod — the usual k-ary fat-tree wiring.
struct FabricSpec {
  std::string name;
  FabricKind kind = FabricKind::kInfiniBand;
  LinkSpec nic;    // NIC <-> leaf port
  LinkSpec uplink; // leaf <-> spine port
  int leaf_down_ports = 32;
  double oversubscription = 1.0;
  int pod_leaves = 0;                   // leaves per pod; 0: two tiers
  double spine_oversubscription = 1.0;  // spine down : up ports (three tiers)
  bool rail_optimized = false;
  // The switches reduce in the network (NVIDIA SHARP on Quantum InfiniBand switches, which
  // NCCL's CollNet uses through its SHARP plugin); InfiniBand only.
  bool sharp = false;
};

// Parameter servers: CPU hosts with one NIC each on the same fabric. `host` describes the
// server's processors and memory (it runs the optimizer update on its shard).
struct ParameterServerSpec {
  int count = 0;
  LinkSpec nic;
  DeviceSpec host;
};

// The down ports a node takes on each leaf it reaches: one on each rail's leaf of a
// rail-optimized fabric, else all its NICs on one leaf (which must have as many).
inline int leaf_ports_per_node(const NodeSpec& node, const FabricSpec& fabric) {
  return fabric.rail_optimized ? 1 : node.nics;
}

struct ClusterSpec {
  NodeSpec node;
  int nodes = 1;
  FabricSpec fabric;
  ParameterServerSpec parameter_servers;
  int gpu_count() const { return nodes * node.gpus; }
};

// What one GPU rank has of its node's host CPUs (for an offloaded optimizer): the node's host
// CPU, or else the cluster's server host as the node's one host, divided evenly by the GPUs
// sharing it.
DeviceSpec host_share_per_gpu(const ClusterSpec& cluster);
// The link one GPU's host<->device copies cross, at its share when its GPUs share the link
// (they copy at once: the ranks of a data-parallel step offload the same shards together).
LinkSpec host_link_per_gpu(const NodeSpec& node);

}  // namespace topology
