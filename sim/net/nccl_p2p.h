// NCCL point-to-point (ncclSend / ncclRecv) between two GPUs of one node, as NCCL's runtime
// runs it: how many CTAs ("channels") one send gets, and so how fast it can go. NCCL's tuner
// prices no point-to-point; its runtime sizes a send by the communicator it runs in, not by the
// links (NVIDIA/nccl 2.30.7, commit 5067397c; notes and sources in
// docs/research/pipeline_p2p.md, "NCCL's send, modelled"):
//
//   per peer  P = 32 inside an NVSwitch node (ncclTopoGetNchannels, src/graph/paths.cc: 2 ×
//               NVLink path bandwidth / one link's = 24 on A100, 36 on H100, rounded up to a power
//               of two and capped by the communicator's 32 p2p channels); in a communicator that
//               spans nodes, the fewest any peer gets, a network peer's max(1, ⌈NIC GB/s / 14⌉)
//               (NCCL_P2P_PER_CHANNEL_NET_BW), rounded up to a power of two, then halved while
//               P × ⌈ranks / 8⌉ > 32 (ncclTopoComputeP2pChannels);
//   least     m = P halved while m × ranks > 32 (src/enqueue.cc scheduleP2pTasksToPlan);
//   one send  c = min(m, ⌈bytes / min part⌉), doubled while bytes / c > max part and c ≤ P / 2
//               (addP2pToPlan), the parts by NCCL's p2p chunk: 512 KiB on an all-NVLink
//               communicator (NCCL_P2P_NVL_CHUNKSIZE: parts of 64 KiB – 16 MiB), 128 KiB on one
//               that spans nodes (NCCL_P2P_NET_CHUNKSIZE: 64 – 128 KiB).
//
// So a 28 MB activation gets 16 CTAs in a two-rank communicator, 4 in an eight-rank one (a pipeline
// group, as Megatron-Core's batch_isend_irecv uses), and 2 in a sixteen-rank group over two DGX
// A100s. Each CTA copies at a measured rate by architecture, and a send runs no faster than the
// architecture's measured point-to-point peak (p2p_rate). Across nodes NCCL 2.30 gives a network
// peer channels enough for its NIC, so the NIC sets the rate there.
#pragma once

#include <cstdint>

#include "sim/net/nccl_model.h"

namespace sim::nccl {

// The communicator a send runs in, and what NCCL sizes its channels by.
struct P2pCommunicator {
  std::int32_t ranks = 2;
  std::int32_t nodes = 1;
  bool nvlink = true;  // the node's GPUs talk over NVSwitch (else PCIe or a direct mesh)
  topology::NcclArchitecture architecture = topology::NcclArchitecture::kNone;
  double nic_bytes_per_s = 0;  // one GPU's NIC line rate (a communicator that spans nodes)
};

// The CTAs one send of `bytes` to a peer in the same node runs on (the rule above).
std::int32_t p2p_channels(const P2pCommunicator& communicator, double bytes);

// The most bytes per second one send to a peer in the same node moves: its CTAs × the
// architecture's per-CTA copy rate, at most the architecture's point-to-point peak; infinite
// where no rate is measured (PCIe, AMD's xGMI, no NCCL architecture), so the links decide.
double p2p_rate(const P2pCommunicator& communicator, double bytes);

}  // namespace sim::nccl
