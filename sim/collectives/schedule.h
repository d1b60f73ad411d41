// Collective algorithms as schedules.
//
// A collective on a group of P members becomes a sequence of phases — one per algorithm stage
// and topology level — each made of identical steps in which a set of peer-to-peer transfers
// run concurrently (collective → chunks → phases → steps of transfers, ASTRA-sim's
// decomposition). Every network model prices the same schedule, and the MPI executor can
// perform it for real. Member locations (node, GPU index) make the schedules topology-aware:
// rings and chains stay inside a node as long as they can, trees and the hierarchical
// algorithm cross nodes only where they must.
//
// Algorithms and their costs on a contention-free network with per-step latency α and link
// bandwidth B (M = message size; P members; C parallel rings; K pipeline chunks; d = depth):
//   ring       all-reduce: reduce-scatter then all-gather, 2(P−1) steps of M/(P·C) on every
//              edge of C rings at once — T = 2(P−1)(α + M/(P·B)), the chapter's formula
//              (§6.1.4); all-gather and reduce-scatter: P−1 steps; broadcast and reduce: a
//              pipelined chain from/to the root.
//   tree       NCCL's double binary tree: a chain inside each node, two binary trees across
//              the nodes (every rank but one a leaf in at least one of them), one pair per
//              channel with the channel's own GPU heading each node, so C channels cross the
//              fabric through C NICs; the data is split over the 2C trees, reduced up and
//              broadcast down. broadcast/reduce: one binary tree rooted at the root.
//   pipelines  (chains and trees) move K chunks: the first chunk crosses the edges wave by
//              wave — each wave a step with only its edges active, at its own hop latency —
//              then K−1 steps move a chunk on every edge: D + K − 1 steps for a pipeline D
//              waves deep (2d for a tree all-reduce, P−1 for a chain), K chunks per edge.
//   hd         recursive halving (reduce-scatter) and doubling (all-gather), partners at
//              distance 1, 2, 4, …: 2·log2 P steps of M/2, M/4, … for all-reduce. Groups that
//              are not a power of two fold their r = P − 2^⌊log2 P⌋ extra members into a
//              partner first and unfold after (two more steps of M). barrier: dissemination,
//              ⌈log2 P⌉ rounds.
//   hier       two levels: reduce-scatter inside each node (G−1 steps of M/G), all-reduce of
//              the M/G shards across nodes between GPUs with the same local index (N rings,
//              2(N−1) steps of M/(G·N)), all-gather inside the node. all-gather and
//              reduce-scatter likewise. all-to-all (DeepEP's and Tutel's two-level exchange):
//              inside each node every member first hands each local peer what goes to that
//              peer's local index on every node (one step, M/G per pair), then members with the
//              same local index exchange across nodes what their node sends each other node's
//              member (one step, M/N per pair): the bytes leaving a node are the flat
//              exchange's, in N−1 messages per member instead of (N−1)·G, each on its own rail.
//              Needs ≥ 2 nodes with the same number of members each.
//   direct     everyone sends straight to everyone in one step (all-gather, reduce-scatter,
//              all-reduce as both, broadcast and reduce to/from the root); all-to-all as
//              pairwise exchange: P−1 steps, in step k member i sends M/P to i+k mod P; or,
//              as NCCL runs it (all_peers_at_once), every peer at once: one step in which
//              every member sends M/P to every other. NCCL's grouped send/recv keeps a send
//              and a receive to each peer in flight together (NVIDIA/nccl 2.30.7, src/init.cc
//              ncclP2pSchedule, src/graph/paths.cc "fit all the peers within a single
//              round"), so across N nodes a member's remote bytes share its NIC and bus
//              bandwidth reaches N/(N−1) × the NIC rate, the figure NCCL's maintainer gives
//              (NVIDIA/nccl-tests#130), where the pairwise exchange waits at every step for
//              its slowest pair (≈ 1 × the NIC rate). Both hold P² transfers: meant for groups
//              of up to a few thousand ranks.
//   nvls       NVLink SHARP all-reduce inside one node: each member's NVSwitch port carries
//              the buffer up once to be reduced in the switch (multimem.ld_reduce) and its
//              1/P shard of the sum; the switch multicasts every shard back (multimem.st):
//              (P+1)/P·M up and (P+1)/P·M down per member, against the ring's 2(P−1)/P·M.
//              One step in which every member sends (P+1)·M/(P·(P−1)) to each other member
//              puts exactly that load on the GPU–switch links.
//   collnet    NCCL's CollNet Direct with SHARP: reduce-scatter inside each node (a ring, G−1
//              steps of M/G), then the InfiniBand switches reduce each M/G shard across the N
//              nodes — every member's NIC carries its shard up once and the sum down once, put
//              on the links as one step in which each member sends (M/G)/(N−1) to the member
//              of every other node with its local index — then
//              all-gather inside each node. All-reduce only; ≥ 2 nodes with the same number of
//              members each, on a fabric with SHARP.
//   nvls_tree  NCCL's NVLSTree all-reduce across nodes with NVLink SHARP: each node's switch
//              reduces and multicasts as nvls does — (G+1)/G·M through each member's port —
//              while each member's NIC carries its M/G shard between the nodes: swapped with the
//              other node when there are two (M/G each way), a double binary tree of the nodes
//              otherwise (2·M/G each way: a parent in one tree, a leaf in the other). NCCL
//              pipelines the two, so one step holds both, in units of M/G: G+1 copies of a ring
//              inside each node and one (two nodes) or two copies of a ring through the nodes
//              per local index. All-reduce only; ≥ 2 nodes with the same number (≥ 2) of
//              members each.
//   ps         parameter server push/pull: every worker sends M/S to each of the S servers
//              (range push: one merged message per pair) in one step; pull the reverse.
//   barrier    is an all-reduce of one 4-byte element (PyTorch's NCCL barrier): 2(P−1)
//              latency-bound steps with the ring, O(P·α) (§6.2.5).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "strategies/program/program.h"

namespace collectives {

struct Transfer {
  std::int32_t src = 0;  // member index in the group
  std::int32_t dst = 0;
};

struct Phase {
  std::string_view name;
  std::int32_t steps = 1;           // identical steps, one after the other
  double bytes_per_transfer = 0;
  std::vector<Transfer> transfers;  // run concurrently within each step
};

struct Schedule {
  program::Algorithm algorithm = program::Algorithm::kRing;
  std::vector<Phase> phases;
};

// Where a member runs: its node and its GPU index inside the node.
struct MemberLocation {
  std::int32_t node = 0;
  std::int32_t local = 0;
};

struct CollectiveSpec {
  program::CollectiveKind kind = program::CollectiveKind::kAllReduce;
  program::Algorithm algorithm = program::Algorithm::kRing;  // never kAuto here
  std::int32_t members = 1;
  std::int64_t bytes = 0;
  std::int32_t root = 0;        // broadcast, reduce
  std::int32_t ps_servers = 0;  // push/pull: the last ps_servers members are servers
  // One per member; empty means every member on its own node.
  std::vector<MemberLocation> locations;
  std::int32_t channels = 1;               // rings run in parallel (ring algorithms)
  std::int64_t chunk_bytes = 1 << 20;      // pipelining granularity (chains and trees)
  bool nvlink_sharp = false;               // the members' NVSwitch reduces in the switch (nvls)
  bool full_mesh = false;                  // the members' nodes link every two GPUs directly (xGMI)
  bool fabric_sharp = false;               // the InfiniBand switches reduce in the network (collnet)
  bool all_peers_at_once = false;          // a direct all-to-all sends to every peer at once (NCCL)
};

class UnsupportedCollective : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The algorithms that can run a kind, in the order the automatic choice tries them.
std::vector<program::Algorithm> algorithms_for(program::CollectiveKind kind);
// Why `spec.algorithm` cannot run this collective on this group, or nothing if it can.
std::optional<std::string> unsupported_reason(const CollectiveSpec& spec);
// Throws UnsupportedCollective with unsupported_reason's message.
Schedule build_schedule(const CollectiveSpec& spec);
// One transfer of `bytes` from member 0 to member 1.
Schedule send_recv_schedule(std::int64_t bytes);

// Bytes each of the `members` sends over the whole schedule.
std::vector<double> bytes_sent(const Schedule& schedule, std::int32_t members);
std::int64_t total_steps(const Schedule& schedule);

// nccl-tests' bus-bandwidth factor: busbw = algbw × factor, with algbw = bytes / time.
// all-reduce 2(n−1)/n; all-gather, reduce-scatter, all-to-all (n−1)/n; broadcast, reduce 1.
double bus_bandwidth_factor(program::CollectiveKind kind, std::int32_t members);

}  // namespace collectives
