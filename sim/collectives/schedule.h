// Collective algorithms as schedules: a collective on a group of P members becomes phases,
// each a number of identical steps in which a set of peer-to-peer transfers run
// concurrently. The same schedule feeds every network model (which prices the transfers on
// the topology) and, later, the MPI executor (which performs them for real).
//
// Implemented here (the network-fidelity issue adds tree, halving-doubling, hierarchical
// and direct variants):
//   ring all-reduce      reduce-scatter then all-gather around the ring: 2(P−1) steps of
//                        M/P bytes on every ring edge; per-member traffic 2(P−1)/P · M.
//                        α-β time 2(P−1)·α + 2(P−1)/P · M/B (the chapter, §6.1.4).
//                        With C rings ("channels", as NCCL opens one or more per NIC) the
//                        message is split evenly: each ring moves M/C, all rings at once.
//   ring reduce-scatter  P−1 steps of M/P (M = full input).
//   ring all-gather      P−1 steps of M/P (M = full output).
//   barrier              a ring all-reduce of one 4-byte element, as PyTorch's NCCL
//                        barrier: 2(P−1) latency-bound steps, O(P·α) (§6.2.5).
//   parameter server     push: every worker sends M/S to each of the S servers (range push:
//                        one merged message per worker-server pair) in one step; pull: the
//                        reverse. Server NICs carry W·M/S each — the PS bottleneck (§6.2.1).
// Transfers name members by their index in the group. The rings (orders of members) come
// from the caller, who knows the topology (sim::topology_aware_rings).
#pragma once

#include <cstdint>
#include <stdexcept>
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
  std::int32_t steps = 1;        // identical steps, one after the other
  double bytes_per_transfer = 0;
  std::vector<Transfer> transfers;  // run concurrently within each step
};

struct Schedule {
  program::Algorithm algorithm = program::Algorithm::kRing;
  std::vector<Phase> phases;
};

struct CollectiveSpec {
  program::CollectiveKind kind = program::CollectiveKind::kAllReduce;
  program::Algorithm algorithm = program::Algorithm::kRing;
  std::int32_t members = 1;
  std::int64_t bytes = 0;
  std::int32_t root = 0;
  std::int32_t ps_servers = 0;
  // Ring algorithms: one permutation of 0..members-1 per ring; empty means the single ring
  // 0 → 1 → … → members-1 → 0.
  std::vector<std::vector<std::int32_t>> rings;
};

class UnsupportedCollective : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The default algorithm for a kind, before any topology-aware choice.
program::Algorithm default_algorithm(program::CollectiveKind kind);
// Throws UnsupportedCollective when the algorithm cannot run this kind or group.
Schedule build_schedule(const CollectiveSpec& spec);
// One transfer of `bytes` from position 0 to position 1.
Schedule send_recv_schedule(std::int64_t bytes);

// Bytes each of the `members` sends over the whole schedule.
std::vector<double> bytes_sent(const Schedule& schedule, std::int32_t members);

// nccl-tests' bus-bandwidth factor: busbw = algbw × factor, with algbw = bytes / time.
// all-reduce 2(n−1)/n; all-gather, reduce-scatter, all-to-all (n−1)/n; broadcast, reduce 1.
double bus_bandwidth_factor(program::CollectiveKind kind, std::int32_t members);

}  // namespace collectives
