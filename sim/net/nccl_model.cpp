// NCCL's latency and protocol model (see nccl_model.h). Line numbers refer to NVIDIA/nccl
// src/graph/tuning.cc at commit 5067397c (2.30.7).
#include "sim/net/nccl_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace sim::nccl {

namespace {

using program::Algorithm;
using program::CollectiveKind;

constexpr double kMicro = 1e-6;

// [LL, LL128, Simple], µs. baseLatencies (:150–155) and hwLatencies (:159–174) for the ring and
// the tree.
constexpr double kRingBase[3] = {6.6, 14.0, 8.4};
constexpr double kTreeBase[3] = {6.8, 14.0, 8.4};
constexpr double kRingNvlink[3] = {0.6, 1.9, 3.4};
constexpr double kTreeNvlink[3] = {0.6, 1.25, 4.0};
constexpr double kRingPci[3] = {1.0, 2.5, 5.7};
constexpr double kTreePci[3] = {1.0, 1.9, 4.0};
constexpr double kRingNet[3] = {2.7, 4.0, 14.0};
constexpr double kTreeNet[3] = {5.0, 8.5, 14.0};
// The network's per-post overhead on a multi-node ring's steps inside a node (:225–233): 1 µs
// on Intel and other hosts, 2 on AMD, ×3 for Simple (:408).
constexpr double kNetOverhead = 1.0;
constexpr double kAmdNetOverhead = 2.0;
constexpr double kSimpleOverheadFactor = 3.0;
// NCCL's LL bus bandwidth caps across nodes, bytes/s, by the hosts' CPUs (llMaxBws rows 0 and
// 1, :178–183, the row chosen at :269–271): [two nodes, more].
constexpr double kIntelLLBusBandwidth[2] = {39.0e9, 20.4e9};
constexpr double kAmdLLBusBandwidth[2] = {22.5e9, 19.0e9};
// NCCL's caps by GPU architecture, bytes/s (:177–210): LL's bus bandwidth inside one node
// (llMaxBws), and per graph channel the ring's LL128 (perChMaxRingLL128Bws), the tree's
// (perChMaxTreeBws), the tree's LL128 (perChMaxTreeLL128Bws) and NVLSTree's
// (perChMaxNVLSTreeBws), [two nodes, more].
struct ArchitectureCaps {
  double ll_one_node = 0;
  double ring_ll128_per_channel = 0;
  double tree_per_channel[2] = {};
  double tree_ll128_per_channel[2] = {};
  double nvls_tree_per_channel[2] = {};
};
ArchitectureCaps architecture_caps(topology::NcclArchitecture architecture) {
  switch (architecture) {
    case topology::NcclArchitecture::kAmpere:
      return {87.7e9, 20e9, {23.6e9, 17.8e9}, {20e9, 20e9}, {23.6e9, 17.8e9}};
    case topology::NcclArchitecture::kHopper:
      return {141e9, 36.7e9, {41.4e9, 36e9}, {36.7e9, 29e9}, {57.7e9, 45.5e9}};
    case topology::NcclArchitecture::kBlackwell:
      return {282e9, 40e9, {42.8e9, 24e9}, {31.67e9, 20e9}, {96e9, 80e9}};
    case topology::NcclArchitecture::kNone:
      return {};
  }
  return {};
}
// A multi-node ring/Simple all-reduce of at least 64 bytes per channel and rank (:647–650).
constexpr double kRingSimpleMultiNodeFactor = 1.4;
constexpr double kMultiNodeFactorBytes = 64;
// Bandwidth factors relative to ring/Simple (:330–375).
constexpr double kRingLLFactor = 0.5;
constexpr double kLL128Factor = 0.92;
constexpr double kTreeFactor = 0.92;
constexpr double kTreeLLDivisor = 3.8;
constexpr double kTreeLL128OneNode = 7.0 / 9.0;
constexpr double kTreeLL128MultiNode = 120.0 / 128.0;
// NCCL's tree all-reduce at medium sizes, slower than its model (the source's words: "Trees are
// not perfectly sticking to the model for medium sizes"): its bandwidth times this factor, by
// protocol [LL, LL128, Simple] and log2(bytes / 64) from 64 B to 256 MiB (treeCorrectionFactor,
// :615–627; entries 0–22 used for the tree, :640–642). NCCL's tuner reads it as a step function
// (entry ⌊log2(bytes/64)⌋), and dtsim chooses as it does; the time takes the entries
// interpolated linearly in log2(bytes), exact at each power of two (tree_correction_by_size): a
// slowdown sampled by size, not one that changes at a byte — read as steps, 4 bytes past 8 MiB
// ran a 4-node tree 20 % faster (entries rise at most 4/3 per doubling, so the interpolated time
// still grows with the size).
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
// NVLS (NVLink SHARP, one node, Simple only): latency = the NVLink hardware latency alone, 25 µs,
// no base (:161, :418–420). Bandwidth: NCCL prices an 8-GPU Hopper node's NVLS at 8 channels
// × min(bwIntra 40 · nvlsEff 0.85 · 7/8 · 2, bwInter 60) = 476 GB/s of bus bandwidth against
// its ring's 12 × 30 = 360 (:139–144, :337–345; channels from src/graph/search.cc, see
// docs/research/nccl_tuning.md §5): NVLS reaches 476/360 of the ring's bus bandwidth. dtsim's
// NVLS schedule loads each GPU's NVLink with (P+1)/P of the data against the ring's 2(P−1)/P,
// i.e. 2(P−1)/(P+1) = 14/9 of the ring's bus bandwidth at P = 8 on ideal links; the wire
// factor brings that to NCCL's ratio, and one factor serves every P (nccl-tests on 4–8 H200:
// ml-engineering network/README.md §SHARP).
// CollNet Direct (SHARP through NCCL's CollNet plugin, Simple only): no base latency; 2 ×
// (one NVLink hop at 3.7 µs + 0.4 µs of arity serialisation per other local rank) + the
// network's 31 µs (:152, :160, :172, :418–421). Bandwidth: the schedule's own — each NIC
// carries its shard up and the sum down once; NCCL's tuner takes a further 0.85 on Hopper
// (:340–347), a tuning estimate with no measurement behind it here, so it is left out.
constexpr double kCollNetNvlinkLatency = 3.7;
constexpr double kCollNetArityLatency = 0.4;
constexpr double kCollNetNetworkLatency = 31.0;
constexpr double kNvlsLatency = 25.0;
// NVLSTree (NVLink SHARP in each node, a tree of the nodes over the NICs, Simple only): no base;
// the NVLink SHARP hop's 25 µs, then up and down the tree's log2(nodes) levels at 20.9 µs each
// (:153, :161, :173, :427–428). Bandwidth: the schedule's own loads (NVLink at the links' rate:
// NCCL's cap, tuner_data_s, or the NICs bind first on 8-GPU nodes), at least the cap; and no
// faster than NVLS inside each node (CommPlanner::pace_by_node_stage: an NVL72 rack's 72 NICs
// outrun its NVLink SHARP).
constexpr double kNvlsTreeNetworkLatency = 20.9;
constexpr double kNvlsOverRingBusBandwidth = 476.0 / 360.0;
constexpr double kNvlsWireFactor = (2.0 * 7.0 / 9.0) / kNvlsOverRingBusBandwidth;
// NVLS's chunks (nvls_chunk_bytes; src/enqueue.cc calcCollChunking, src/transport/nvls.cc).
constexpr double kNvlsChunkSize = 128 * 1024;
// NVLSTree's largest chunk across four nodes or more (nvlsTreeMaxChunkSize, nvls.cc
// ncclNvlsTuning; NVLS's 128 KiB across fewer).
constexpr double kNvlsTreeChunkSizeFourNodes = 64 * 1024;
// Each chunk's fixed cost, as bytes of data it could have moved meanwhile: fitted on nccl-tests'
// 8 × H100 all-reduce curve under NCCL's defaults (NVLS from 2 MiB; NVIDIA/dgxc-benchmarking
// nccl/README.md), 2 MiB – 16 GiB, by the smallest RMS log error of dtsim's time: 26 KiB, about
// 1.6 µs per chunk at each of the 128 concurrent operations' ≈ 17 GB/s. dtsim was 8–33 % fast
// from 2 to 512 MiB without it, within −14 … +8 % with it; Together's H100 curve (NCCL 2.26.2,
// togethercomputer/together-nccl-tests) checks it: −16 … +7 %. docs/research/nccl_tests_curves.md.
constexpr double kNvlsChunkOverheadBytes = 26 * 1024;
// A small ring/LL collective's channels (ring_ll_channels) and what each moves per second of the
// ring's data per rank: fitted on nccl-tests' 8 × H100 all-reduce from 4 KiB to 512 KiB
// (NVIDIA/dgxc-benchmarking nccl/README.md), where the time stays at 18.7–19.7 µs while the size
// grows 16×: the runtime adds a channel per 32 KiB, so the channels, not the links, set the
// time. 13.7 GB/s gives −5.7 … +2.7 % there (without it −18 … −9 %; bench/nccl_small_fit.py);
// other GPUs borrow it.
constexpr double kLLThreads = 512;
constexpr double kLLThreadThresholdBytes = 8;
constexpr double kLLChannelBandwidth = 13.7e9;

std::size_t index(Protocol protocol) { return static_cast<std::size_t>(protocol); }

// An all-reduce, or a barrier (NCCL's barrier is a small all-reduce).
bool reduces_to_all(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kBarrier;
}

// NCCL's ring steps for a collective of n ranks (nsteps, :289–291): 2(n − 1) for an all-reduce,
// n − 1 for an all-gather or reduce-scatter, n for the rest; a ring moves nsteps / n of the data
// through each rank.
double ring_steps(CollectiveKind kind, double n) {
  if (reduces_to_all(kind)) return 2 * (n - 1);
  const bool gathers = kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter;
  return gathers ? n - 1 : n;
}

}  // namespace

std::string_view protocol_name(Protocol protocol) {
  switch (protocol) {
    case Protocol::kLL: return "LL";
    case Protocol::kLL128: return "LL128";
    case Protocol::kSimple: return "Simple";
  }
  return "?";
}

bool chooses_algorithm(CollectiveKind kind) {
  return runs(kind, Algorithm::kRing);
}

bool runs(CollectiveKind kind, Algorithm algorithm) {
  switch (kind) {
    case CollectiveKind::kBarrier: return algorithm == Algorithm::kRing || algorithm == Algorithm::kTree;
    case CollectiveKind::kAllReduce:
      return algorithm == Algorithm::kRing || algorithm == Algorithm::kTree ||
             algorithm == Algorithm::kNvls || algorithm == Algorithm::kCollNet ||
             algorithm == Algorithm::kNvlsTree;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce: return algorithm == Algorithm::kRing;
    default: return false;
  }
}

std::optional<std::string> missing_algorithm(CollectiveKind kind, Algorithm algorithm) {
  if (!chooses_algorithm(kind) || runs(kind, algorithm)) return std::nullopt;
  const bool nvls = runs(kind, Algorithm::kNvls);
  return fmt::format("has no \"{}\" {}: it runs ring{}{}", program::algorithm_name(algorithm),
                     program::collective_name(kind),
                     runs(kind, Algorithm::kTree) ? (nvls ? ", tree" : " and tree") : "",
                     nvls ? ", nvls (on NVLink SHARP nodes), nvls_tree (across them) and collnet "
                            "(on a SHARP fabric)"
                          : "");
}

double latency_s(CollectiveKind kind, Algorithm algorithm, Protocol protocol,
                 const GroupShape& group, double bytes) {
  if (algorithm == Algorithm::kNvls || algorithm == Algorithm::kCollNet ||
      algorithm == Algorithm::kNvlsTree) {
    if (protocol != Protocol::kSimple) return std::numeric_limits<double>::infinity();
    if (algorithm == Algorithm::kNvls) return kNvlsLatency * kMicro;
    if (algorithm == Algorithm::kNvlsTree) {  // log2i: NCCL's integer log
      return (kNvlsLatency + 2 * std::floor(std::log2(static_cast<double>(group.nodes))) *
                                 kNvlsTreeNetworkLatency) *
             kMicro;
    }
    const double others = group.per_node - 1;
    return (2 * (std::min(1.0, others) * kCollNetNvlinkLatency + others * kCollNetArityLatency) + kCollNetNetworkLatency) *
           kMicro;
  }
  const std::size_t p = index(protocol);
  const bool tree = algorithm == Algorithm::kTree;
  const double intra = group.nvlink ? (tree ? kTreeNvlink : kRingNvlink)[p] : (tree ? kTreePci : kRingPci)[p];
  // With one member per node every step crosses the network, priced at the tree's (:385–387).
  const double inter = (tree || group.per_node == 1 ? kTreeNet : kRingNet)[p];
  const double base = (tree ? kTreeBase : kRingBase)[p];
  const bool all_reduce = reduces_to_all(kind);
  if (tree) {  // :416
    return (base + 2 * ((group.per_node - 1) * intra + std::log2(static_cast<double>(group.nodes)) * inter)) * kMicro;
  }
  const std::int32_t n = group.members;
  const std::int32_t steps = all_reduce ? 2 * (n - 1) : n - 1;  // :289–291
  const std::int32_t inter_steps =
      group.nodes == 1 ? 0 : (all_reduce ? 2 * (group.nodes - 1) : group.nodes - 1);  // :404–412
  const double overhead = (group.amd_host ? kAmdNetOverhead : kNetOverhead) *
                          (protocol == Protocol::kSimple ? kSimpleOverheadFactor : 1.0);
  const double intra_step = group.nodes > 1 ? std::max(intra, overhead) : intra;
  double latency = base + (steps - inter_steps) * intra_step + inter_steps * inter;
  // NCCL's runtime channels are twice its graph's (src/transport/connect.cc).
  if (all_reduce && protocol == Protocol::kSimple && group.nodes > 1 &&
      bytes / (2.0 * group.channels * n) >= kMultiNodeFactorBytes) {
    latency *= kRingSimpleMultiNodeFactor;
  }
  return latency * kMicro;
}

double nvls_chunk_bytes(Algorithm algorithm, double bytes, const GroupShape& group) {
  const double concurrent = static_cast<double>(group.nvls_channels) * group.per_node;
  if (algorithm == Algorithm::kNvlsTree) {
    double chunk = group.nodes >= 4 ? kNvlsTreeChunkSizeFourNodes : kNvlsChunkSize;
    if (bytes < 4 * concurrent * chunk && chunk > 64 * 1024) chunk = 64 * 1024;
    if (bytes < concurrent * chunk && chunk > 32 * 1024) chunk = 32 * 1024;
    return chunk;
  }
  double chunk = kNvlsChunkSize;
  if (bytes < 64 * concurrent * chunk) chunk = 64 * 1024;
  if (bytes < 8 * concurrent * chunk) chunk = 32 * 1024;
  if (bytes < 2 * concurrent * chunk) chunk = 16 * 1024;
  return chunk;
}

double nvls_chunk_factor(Algorithm algorithm, double bytes, const GroupShape& group) {
  return (1 + kNvlsChunkOverheadBytes / nvls_chunk_bytes(algorithm, bytes, group)) /
         (1 + kNvlsChunkOverheadBytes / kNvlsChunkSize);
}

double ring_ll_channels(double bytes, const GroupShape& group) {
  return std::max(1.0, std::floor(bytes / (kLLThreads * kLLThreadThresholdBytes * group.members)));
}

double runtime_channel_floor_s(CollectiveKind kind, Algorithm algorithm, Protocol protocol,
                               const GroupShape& group, double bytes) {
  if (algorithm != Algorithm::kRing || protocol != Protocol::kLL || group.members < 2) return 0;
  const double n = group.members;
  const double per_rank = ring_steps(kind, n) / n * bytes;  // the ring's data through each rank
  return per_rank / (ring_ll_channels(bytes, group) * kLLChannelBandwidth);
}

double runtime_bandwidth_factor(Algorithm algorithm, const GroupShape& group, double bytes) {
  const bool nvls = algorithm == Algorithm::kNvls || algorithm == Algorithm::kNvlsTree;
  return nvls ? nvls_chunk_factor(algorithm, bytes, group) : 1.0;
}

double runtime_bandwidth_s(CollectiveKind kind, Algorithm algorithm, Protocol protocol,
                           const GroupShape& group, double bytes, double tuner_seconds) {
  // The tree's slowdown by size as the runtime meets it: the tuner's step replaced by the curve.
  const double tree = tree_correction(kind, algorithm, protocol, bytes) /
                      tree_correction_by_size(kind, algorithm, protocol, bytes);
  return std::max(tuner_seconds * runtime_bandwidth_factor(algorithm, group, bytes) * tree,
                  runtime_channel_floor_s(kind, algorithm, protocol, group, bytes));
}

double tree_correction(CollectiveKind kind, Algorithm algorithm, Protocol protocol, double bytes) {
  if (algorithm != Algorithm::kTree || kind != CollectiveKind::kAllReduce || bytes < 64) return 1.0;
  const auto log_size =
      static_cast<std::size_t>(std::floor(std::log2(std::floor(bytes / 64))));  // log2i(bytes >> 6)
  return log_size < std::size(kTreeCorrection[0]) ? kTreeCorrection[index(protocol)][log_size]
                                                  : 1.0;
}

double tree_correction_by_size(CollectiveKind kind, Algorithm algorithm, Protocol protocol,
                               double bytes) {
  if (algorithm != Algorithm::kTree || kind != CollectiveKind::kAllReduce || bytes < 64) return 1.0;
  const double position = std::log2(bytes / 64);  // NCCL's index log2i(bytes >> 6), unrounded
  const auto entry = [&](std::size_t i) {
    return i < std::size(kTreeCorrection[0]) ? kTreeCorrection[index(protocol)][i] : 1.0;
  };
  const auto below = static_cast<std::size_t>(std::floor(position));
  return std::lerp(entry(below), entry(below + 1), position - static_cast<double>(below));
}

double ll_bus_bandwidth(const GroupShape& group) {
  if (group.architecture == topology::NcclArchitecture::kNone) return 0;
  if (group.nodes <= 1) return architecture_caps(group.architecture).ll_one_node;
  return (group.amd_host ? kAmdLLBusBandwidth : kIntelLLBusBandwidth)[group.nodes == 2 ? 0 : 1];
}

double bus_bandwidth_cap(CollectiveKind kind, Algorithm algorithm, Protocol protocol,
                         const GroupShape& group) {
  const ArchitectureCaps caps = architecture_caps(group.architecture);
  const bool across_nodes = group.nodes > 1;
  const double channels = group.channels;
  const std::size_t column = group.nodes == 2 ? 0 : 1;
  if (algorithm == Algorithm::kRing) {
    if (protocol == Protocol::kLL) return ll_bus_bandwidth(group);
    if (protocol == Protocol::kLL128 && across_nodes) return channels * caps.ring_ll128_per_channel;
    return 0;
  }
  if (kind != CollectiveKind::kAllReduce) return 0;
  if (algorithm == Algorithm::kNvlsTree) {  // a graph channel per GPU of a node, at most NVLS's
    return std::min(group.per_node, group.nvls_channels) * caps.nvls_tree_per_channel[column];
  }
  if (algorithm != Algorithm::kTree) return 0;
  const double tree = across_nodes ? channels * caps.tree_per_channel[column] : 0;
  switch (protocol) {
    case Protocol::kSimple:
      return tree;
    case Protocol::kLL128:
      return across_nodes ? std::min(tree * kTreeLL128MultiNode,
                                     channels * caps.tree_ll128_per_channel[column])
                          : 0;
    case Protocol::kLL: {
      const double ll = ll_bus_bandwidth(group);
      if (tree <= 0) return ll;
      return ll > 0 ? std::min(tree / kTreeLLDivisor, ll) : tree / kTreeLLDivisor;
    }
  }
  return 0;
}

namespace {

// The least data time NCCL's tuner allows for its bandwidth caps, before the tree's correction;
// 0 where none applies (tuner_data_s in the header).
double capped_data_s(CollectiveKind kind, Algorithm algorithm, Protocol protocol,
                     const GroupShape& group, double bytes) {
  if (group.members < 2) return 0;
  const double n = group.members;
  const double cap = bus_bandwidth_cap(kind, algorithm, protocol, group);
  if (cap <= 0) return 0;
  return algorithm == Algorithm::kTree ? 2 * bytes / cap : bytes * ring_steps(kind, n) / n / cap;
}

}  // namespace

double tuner_data_s(CollectiveKind kind, Algorithm algorithm, Protocol protocol,
                    const GroupShape& group, double bytes, double link_seconds) {
  return std::max(link_seconds * wire_factor(algorithm, protocol, group),
                  capped_data_s(kind, algorithm, protocol, group, bytes)) /
         tree_correction(kind, algorithm, protocol, bytes);
}

double wire_factor(Algorithm algorithm, Protocol protocol, const GroupShape& group) {
  if (algorithm == Algorithm::kNvls) return kNvlsWireFactor;  // Simple only (latency_s)
  if (algorithm == Algorithm::kCollNet || algorithm == Algorithm::kNvlsTree) return 1.0;
  if (algorithm == Algorithm::kTree) {
    switch (protocol) {
      case Protocol::kLL: return kTreeLLDivisor / kTreeFactor;
      case Protocol::kLL128: return 1 / (kTreeFactor * (group.nodes == 1 ? kTreeLL128OneNode : kTreeLL128MultiNode));
      case Protocol::kSimple: return 1 / kTreeFactor;
    }
  }
  switch (protocol) {
    case Protocol::kLL: return 1 / kRingLLFactor;
    case Protocol::kLL128: return 1 / kLL128Factor;
    case Protocol::kSimple: return 1.0;
  }
  return 1.0;
}

}  // namespace sim::nccl
