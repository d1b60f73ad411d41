// NCCL's own cost model, as its tuner prices a collective (NVIDIA/nccl 2.30.7, commit
// 5067397c, src/graph/tuning.cc; notes in docs/research/nccl_tuning.md): for each algorithm
// and protocol a latency — a base cost plus a per-step cost by the link the step crosses — and
// a bandwidth factor; NCCL runs the cheapest. dtsim keeps its own schedules and network models
// for the bytes (so that concurrent collectives still share links) and takes from NCCL:
//   * which algorithms `auto` chooses among: ring, tree and (on NVLink SHARP nodes) NVLS inside
//     one node and NVLSTree across nodes for all-reduce (CollNet on a SHARP fabric), ring and
//     tree for barrier, ring for
//     all-gather, reduce-scatter, broadcast and reduce (NCCL runs no halving-doubling or
//     hierarchical schedule);
//   * the latency of each (algorithm, protocol), replacing the links' α;
//   * the protocol's bandwidth factor as extra bytes on the wire: LL moves 8 bytes of flags
//     with every 8 of data (×2), LL128 120 of every 128 bytes (NCCL prices it at 0.92), Simple
//     none; NCCL's tree runs at 0.92 of the ring's bandwidth, its LL at 1/3.8 and its LL128 at
//     7/9 (one node) or 120/128, and a tree all-reduce at medium sizes at NCCL's correction of
//     its own model (tree_correction), and none faster than NCCL's caps on bus bandwidth
//     (bus_bandwidth_cap: LL's by GPU architecture in a node and by the hosts' CPUs across
//     nodes, and across nodes the ring's LL128, the tree's and NVLSTree's per channel).
// Link efficiencies (topology/presets.cpp) are nccl-tests' ring/Simple bus bandwidths (PCIe's:
// single copies over one link), so the factors apply relative to Simple. And from NCCL's
// runtime, which its tuner does not see: NVLS and NVLSTree cut their chunks for smaller
// messages, and each chunk costs a fixed synchronisation (nvls_chunk_factor); a small ring/LL
// collective runs on a few channels, each at a bounded rate (runtime_channel_floor_s; the two
// combined in runtime_bandwidth_s) — NCCL still chooses by the tuner's estimate, dtsim times the
// runtime's, with the tree's correction interpolated by size (tree_correction_by_size). Not
// modelled: the ring's own behaviour at mid sizes (docs/research/nccl_tests_curves.md), NVLS
// across nodes (with SHARP), NVLSTree's pipeline fill at mid sizes and CollNet's pipelining.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "strategies/program/program.h"
#include "topology/hardware_spec.h"

namespace sim::nccl {

enum class Protocol : std::uint8_t { kLL, kLL128, kSimple };
std::string_view protocol_name(Protocol protocol);
inline constexpr Protocol kProtocols[] = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};

// Where a collective's members sit: how many nodes, the most members on one node, whether the
// GPUs of a node talk over NVLink (else PCIe).
struct GroupShape {
  std::int32_t members = 1;
  std::int32_t nodes = 1;
  std::int32_t per_node = 1;
  bool nvlink = true;
  std::int32_t nvls_channels = 16;  // NCCL's NVLS channels on these GPUs (topology::NodeSpec)
  // The GPUs' architecture, by which NCCL's tuner caps bandwidth (kNone: no caps).
  topology::NcclArchitecture architecture = topology::NcclArchitecture::kNone;
  // The hosts' CPUs are AMD's: NCCL's network proxy costs 2 µs per step instead of 1, and its
  // LL cap across nodes takes AMD's row (topology::NodeSpec::host_cpu).
  bool amd_host = false;
  // NCCL's graph channels (rings or trees per collective) across nodes: one per NIC of a node.
  std::int32_t channels = 1;
};

// NCCL's cap on the bus bandwidth of a ring/LL or tree/LL collective on this group, bytes/s
// (llMaxBws, tuning.cc :177–183, chosen at :267–272): inside one node by the architecture
// (Ampere 87.7 GB/s, Hopper 141, Blackwell 282); across two nodes 39 GB/s (22.5 on AMD hosts),
// across more 20.4 (19.0 on AMD); 0 for no architecture.
double ll_bus_bandwidth(const GroupShape& group);
// NCCL's cap on the bus bandwidth of this algorithm and protocol on this group, bytes/s, 0 for
// none (tuning.cc :323–333): LL's (ll_bus_bandwidth) and, across nodes, the per-channel caps ×
// the graph channels — ring/LL128 perChMaxRingLL128Bws (Ampere 20 GB/s, Hopper 36.7, Blackwell
// 40); the tree perChMaxTreeBws (two nodes / more: Ampere 23.6 / 17.8, Hopper 41.4 / 36,
// Blackwell 42.8 / 24), its LL128 also perChMaxTreeLL128Bws × 120/128 of that (Ampere 20 / 20,
// Hopper 36.7 / 29, Blackwell 31.67 / 20), its LL 1/3.8 of it; NVLSTree perChMaxNVLSTreeBws
// (Hopper 57.7 / 45.5, Blackwell 96 / 80) × a graph channel per GPU of a node, at most
// nvls_channels. Inside one node NCCL's 12 graph channels on A100 and H100 keep the per-channel
// caps above what the links allow (docs/research/nccl_tuning.md §5), so they are applied across
// nodes only.
double bus_bandwidth_cap(program::CollectiveKind kind, program::Algorithm algorithm,
                         Protocol protocol, const GroupShape& group);

// Whether NCCL chooses an algorithm for this kind: all-reduce, barrier (an all-reduce),
// all-gather, reduce-scatter, broadcast and reduce; all-to-all is point-to-point sends to NCCL.
bool chooses_algorithm(program::CollectiveKind kind);
// Whether NCCL runs `algorithm` for this collective kind (ring and tree, and NVLS, NVLSTree and
// CollNet for all-reduce; what `auto` chooses among when collectives.library = "nccl").
bool runs(program::CollectiveKind kind, program::Algorithm algorithm);
// Why NCCL cannot run `algorithm` for `kind` — `has no "hd" all_reduce: it runs ring and tree`
// — or nothing when it can (or when NCCL chooses no algorithm for this kind).
std::optional<std::string> missing_algorithm(program::CollectiveKind kind, program::Algorithm algorithm);

// NCCL's latency, in seconds, of one collective of `bytes` with this algorithm and protocol
// (infinite for a protocol the algorithm lacks: NVLS is Simple only) on
// this group (tuning.cc: base latency + per-step latencies, the network's post overhead on
// steps inside a node of a multi-node ring, ×1.4 for a multi-node ring/Simple all-reduce past
// 64 bytes per channel and rank, on the group's graph channels).
double latency_s(program::CollectiveKind kind, program::Algorithm algorithm, Protocol protocol,
                 const GroupShape& group, double bytes);

// Bytes on the wire per byte of data: 1 / NCCL's bandwidth factor of the protocol on the
// algorithm, relative to ring/Simple — what NCCL's tuner prices and chooses by.
double wire_factor(program::Algorithm algorithm, Protocol protocol, const GroupShape& group);
// The factor NCCL's tuner takes on a tree all-reduce's bandwidth at this size (its
// treeCorrectionFactor, 0.4–1 from 64 B to 256 MiB by protocol; 1 for everything else).
double tree_correction(program::CollectiveKind kind, program::Algorithm algorithm,
                       Protocol protocol, double bytes);
// The same entries interpolated linearly in log2(bytes), equal at each power of two: the
// slowdown the runtime meets, which does not change at a byte (the tuner still chooses by
// tree_correction, as NCCL does).
double tree_correction_by_size(program::CollectiveKind kind, program::Algorithm algorithm,
                               Protocol protocol, double bytes);
// NCCL's tuner's data time for a collective whose bytes take `link_seconds` on the links: that
// by the wire factor, no shorter than NCCL's bandwidth caps allow, over the tree's correction.
// The caps are bus bandwidths (bus_bandwidth_cap), turned into the algorithm's bandwidth by
// nRanks / nsteps on the ring and NVLSTree and by 1/2 on the tree:
//   t ≥ bytes · nsteps / P / cap,  t ≥ 2 · bytes / cap (tree)   (tuning.cc :307–333, :377–382)
double tuner_data_s(program::CollectiveKind kind, program::Algorithm algorithm, Protocol protocol,
                    const GroupShape& group, double bytes, double link_seconds);
// What the runtime adds to that at this size, which the tuner does not see: NVLS's and
// NVLSTree's chunks' fixed cost (nvls_chunk_factor); 1 for the other algorithms.
double runtime_bandwidth_factor(program::Algorithm algorithm, const GroupShape& group,
                                double bytes);

// The channels NCCL's runtime gives a small ring/LL collective (src/enqueue.cc,
// topoGetAlgoInfo): one dropped while bytes < channels × 512 threads × 8 bytes × ranks
// (NCCL_LL_MAX_NTHREADS, NCCL_LL_THREAD_THRESHOLD scaled by the ring's ranks), down to one.
double ring_ll_channels(double bytes, const GroupShape& group);
// The least time the runtime's channels take to move a ring/LL collective's data, each at
// kLLChannelBandwidth (0 for other algorithms and protocols): the bandwidth term is the larger
// of this and the links'. Below ≈ 0.5 MiB on 8 GPUs this, not the links, sets the time.
double runtime_channel_floor_s(program::CollectiveKind kind, program::Algorithm algorithm,
                               Protocol protocol, const GroupShape& group, double bytes);
// The bandwidth term the runtime takes for a collective the tuner priced at `tuner_seconds`
// (its data time on the links, by the protocol's wire factor): that, stretched by
// runtime_bandwidth_factor and with the tree's correction by size for the tuner's step, or the
// channel floor if that is longer.
double runtime_bandwidth_s(program::CollectiveKind kind, program::Algorithm algorithm,
                           Protocol protocol, const GroupShape& group, double bytes,
                           double tuner_seconds);

// The chunk NCCL's NVLS or NVLSTree all-reduce moves `bytes` in (src/enqueue.cc,
// calcCollChunking; the concurrent operations are NVLS channels × heads, a head per GPU of the
// node). NVLS: 128 KiB (NCCL_NVLS_CHUNKSIZE), cut to 64, 32 and 16 KiB while the message is
// smaller than 64, 8 and 2 chunks per concurrent operation. NVLSTree: 128 KiB across two or three
// nodes, 64 KiB across more (nvlsTreeMaxChunkSize, src/transport/nvls.cc ncclNvlsTuning, Hopper;
// Blackwell's own tuning across nodes is not modelled), cut to 64 KiB below 4 chunks per
// concurrent operation and to 32 KiB below one.
double nvls_chunk_bytes(program::Algorithm algorithm, double bytes, const GroupShape& group);
// How much longer NVLS's bandwidth term runs at this size than at full-sized chunks: each chunk
// also costs a fixed synchronisation, worth kNvlsChunkOverheadBytes of data:
//   (1 + x / chunk) / (1 + x / 128 KiB)
// (1 from 1 GiB up on 8 GPUs, where the link efficiency was measured). NVLSTree's chunks take
// the same cost: its NVLink part is NVLS's, chunk by chunk (a transfer, not a fit: the two-node
// curve checks it, docs/research/nccl_tests_curves.md).
double nvls_chunk_factor(program::Algorithm algorithm, double bytes, const GroupShape& group);

}  // namespace sim::nccl
