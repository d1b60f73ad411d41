// NCCL's CTAs per send and their rate (sim/net/nccl_p2p.h), against what was measured: the CTA
// grid nsys recorded for a two-rank send on H100 (meta-pytorch/torchcomms PR #2635, NCCLX 2.29,
// NCCL_MAX_P2P_NCHANNELS 32 column) and the CTA doublings an eight-rank sendrecv_perf table on
// A100 shows (li-plus/playground cuda/nccl.md: 110.8 → 188.6 GB/s from 128 to 256 MiB).
#include "sim/net/nccl_p2p.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

using topology::NcclArchitecture;

constexpr double kMiB = 1024.0 * 1024.0;

sim::nccl::P2pCommunicator communicator(std::int32_t ranks, std::int32_t nodes = 1,
                                        NcclArchitecture architecture = NcclArchitecture::kHopper) {
  sim::nccl::P2pCommunicator comm;
  comm.ranks = ranks;
  comm.nodes = nodes;
  comm.architecture = architecture;
  return comm;
}

TEST(NcclP2pTest, ATwoRankSendTakesTheCtasNsysRecorded) {
  const auto pair = communicator(2);
  EXPECT_EQ(sim::nccl::p2p_channels(pair, 32), 1);
  EXPECT_EQ(sim::nccl::p2p_channels(pair, 64 * 1024), 1);
  for (double mib : {1.0, 8.0, 64.0, 256.0})
    EXPECT_EQ(sim::nccl::p2p_channels(pair, mib * kMiB), 16) << mib << " MiB";
  EXPECT_EQ(sim::nccl::p2p_channels(pair, 1024 * kMiB), 32);
}

TEST(NcclP2pTest, AnEightRankGroupStartsAtFourCtasAndDoublesPastSixteenMiBAPart) {
  const auto group = communicator(8, 1, NcclArchitecture::kAmpere);
  EXPECT_EQ(sim::nccl::p2p_channels(group, 28e6), 4);  // a pipeline stage's activation
  EXPECT_EQ(sim::nccl::p2p_channels(group, 128 * kMiB), 8);
  EXPECT_EQ(sim::nccl::p2p_channels(group, 256 * kMiB), 16);
  EXPECT_EQ(sim::nccl::p2p_channels(group, 512 * kMiB), 32);
  // So the A100 table's 128 MiB row is 8 CTAs at 110.81 GB/s, and past 16 CTAs the peak binds.
  EXPECT_NEAR(sim::nccl::p2p_rate(group, 128 * kMiB), 110.81e9, 1e3);
  EXPECT_NEAR(sim::nccl::p2p_rate(group, 1024 * kMiB), 195.10e9, 1e3);
}

TEST(NcclP2pTest, AGroupOverTwoNodesGivesEveryPeerTheNetworkPeersFewChannels) {
  // 16 ranks on two DGX A100s: a network peer gets ⌈25 / 14⌉ = 2 channels over HDR (4 over NDR),
  // and so does every NVLink peer of the same communicator; parts are then at most 128 KiB.
  auto hdr = communicator(16, 2, NcclArchitecture::kAmpere);
  hdr.nic_bytes_per_s = 25e9;
  EXPECT_EQ(sim::nccl::p2p_channels(hdr, 10.5e6), 2);
  auto ndr = hdr;
  ndr.nic_bytes_per_s = 50e9;
  EXPECT_EQ(sim::nccl::p2p_channels(ndr, 10.5e6), 4);
  EXPECT_EQ(sim::nccl::p2p_channels(ndr, 64 * 1024), 1);
}

TEST(NcclP2pTest, OnlyMeasuredNvlinkArchitecturesAreCapped) {
  auto pcie = communicator(2);
  pcie.nvlink = false;
  EXPECT_TRUE(std::isinf(sim::nccl::p2p_rate(pcie, 64 * kMiB)));
  EXPECT_TRUE(
      std::isinf(sim::nccl::p2p_rate(communicator(2, 1, NcclArchitecture::kNone), 64 * kMiB)));
  // Blackwell borrows Hopper's per-CTA rate, with no peak of its own.
  EXPECT_DOUBLE_EQ(sim::nccl::p2p_rate(communicator(8, 1, NcclArchitecture::kBlackwell), 28e6),
                   sim::nccl::p2p_rate(communicator(8, 1, NcclArchitecture::kHopper), 28e6));
  EXPECT_GT(sim::nccl::p2p_rate(communicator(2, 1, NcclArchitecture::kBlackwell), 1024 * kMiB),
            sim::nccl::p2p_rate(communicator(2, 1, NcclArchitecture::kHopper), 1024 * kMiB));
}

}  // namespace
