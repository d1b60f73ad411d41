// NCCL point-to-point inside a node: CTAs per send and their rate (see nccl_p2p.h).
#include "sim/net/nccl_p2p.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace sim::nccl {

namespace {

using topology::NcclArchitecture;

constexpr double kGiga = 1e9;
constexpr double kKiB = 1024;
// A communicator's p2p channels: pow2Up(min(its collective channels, MAXCHANNELS)) — 32 on DGX
// A100 (24 collective channels, NVIDIA/nccl-tests#100's log) and DGX H100 (NVIDIA/nccl#1259's log:
// "32 p2p channels, 32 p2p channels per peer").
constexpr std::int32_t kP2pChannels = 32;
// A GPU's p2p channels to an NVSwitch peer (2 × 12 links on A100, 2 × 18 on H100 and B200, rounded
// up to a power of two), capped by the communicator's.
constexpr std::int32_t kNvlinkPeerChannels = kP2pChannels;
// NCCL_P2P_PER_CHANNEL_NET_BW: the GB/s NCCL counts per channel to a network peer.
constexpr std::int32_t kNetChannelGbyteS = 14;
// NCCL_MAX_DEV_WORK_P2P_PER_BATCH: the peers one round of channels serves.
constexpr std::int32_t kPeersPerBatch = 8;
// NCCL_P2P_NVL_CHUNKSIZE and NCCL_P2P_NET_CHUNKSIZE, the p2p chunk of an all-NVLink
// communicator and of one that spans nodes.
constexpr double kNvlinkChunk = 512 * kKiB;
constexpr double kNetChunk = 128 * kKiB;

// What one CTA of a send copies per second over NVLink, and the fastest one send ran, by
// architecture: nccl-tests' sendrecv_perf-style runs, where each GPU sends and receives at once,
// as a pipeline stage's batched transfers do; the CTA counts follow from the rule in nccl_p2p.h.
//   Ampere: 8 × A100 SXM (NVSwitch), `sendrecv_perf -b 128M -e 1G -f 2 -g 8` (li-plus/playground
//     cuda/nccl.md, commit b85070fb): 128 MiB at 110.81 GB/s on 8 CTAs → 13.85 GB/s per CTA; 1 GiB
//     at 195.10 GB/s on 32 CTAs, the peak (256 MiB on 16 CTAs: 188.60, already near it).
//   Hopper: 2 × H100 SXM, NCCLX 2.29, Simple, batched send and receive each way
//     (meta-pytorch/torchcomms comms/prims/docs/P2pNvlSendRecvBenchmark.md, commit 2253d917):
//     256 MiB at 605.29 GB/s both ways on 16 CTAs → 18.9 GB/s per CTA each way; 1 GiB at 723.16
//     both ways on 32 CTAs → 361.6 GB/s, the peak.
//   Blackwell: none published; Hopper's per-CTA rate, and the links for the peak.
struct CopyRates {
  double per_cta = 0;  // bytes/s, 0: not measured
  double peak = std::numeric_limits<double>::infinity();
};
CopyRates copy_rates(NcclArchitecture architecture) {
  constexpr double kAmperePerCta = 110.81 * kGiga / 8;
  constexpr double kHopperPerCta = 605.29 * kGiga / 2 / 16;
  switch (architecture) {
    case NcclArchitecture::kAmpere:
      return {kAmperePerCta, 195.10 * kGiga};
    case NcclArchitecture::kHopper:
      return {kHopperPerCta, 723.16 * kGiga / 2};
    case NcclArchitecture::kBlackwell:
      return {kHopperPerCta};
    case NcclArchitecture::kNone:
      return {};
  }
  return {};
}

// The channels a GPU has to each peer of the communicator (comm->p2pnChannelsPerPeer).
std::int32_t channels_per_peer(const P2pCommunicator& communicator) {
  std::int32_t per_peer = kNvlinkPeerChannels;
  if (communicator.nodes > 1) {
    const auto nic_gbyte_s =
        static_cast<std::int32_t>(communicator.nic_bytes_per_s / kGiga);  // NCCL's (int)netBw
    const std::int32_t net_peer =
        std::max(1, (nic_gbyte_s + kNetChannelGbyteS - 1) / kNetChannelGbyteS);
    per_peer = std::min(
        per_peer, static_cast<std::int32_t>(std::bit_ceil(static_cast<std::uint32_t>(net_peer))));
    const std::int32_t batches = (communicator.ranks + kPeersPerBatch - 1) / kPeersPerBatch;
    while (per_peer * batches > kP2pChannels && per_peer > 1) per_peer /= 2;
  }
  return per_peer;
}

}  // namespace

std::int32_t p2p_channels(const P2pCommunicator& communicator, double bytes) {
  const std::int32_t per_peer = channels_per_peer(communicator);
  std::int32_t least = per_peer;
  while (least * communicator.ranks > kP2pChannels && least > 1) least /= 2;
  const bool spans_nodes = communicator.nodes > 1;
  const double min_part = spans_nodes ? kNetChunk / 2 : kNvlinkChunk / 8;
  const double max_part = spans_nodes ? kNetChunk : kNvlinkChunk * 32;
  std::int32_t channels = least;
  if (bytes < least * min_part)
    channels = std::max(1, static_cast<std::int32_t>(std::ceil(bytes / min_part)));
  while (std::max(min_part, std::ceil(bytes / channels)) > max_part && channels <= per_peer / 2)
    channels *= 2;
  return channels;
}

double p2p_rate(const P2pCommunicator& communicator, double bytes) {
  const CopyRates rates = copy_rates(communicator.architecture);
  if (!communicator.nvlink || rates.per_cta <= 0) return std::numeric_limits<double>::infinity();
  return std::min(rates.peak, p2p_channels(communicator, bytes) * rates.per_cta);
}

}  // namespace sim::nccl
