// Replica symmetry: finding, in a Program, k replicas that behave identically, so that the
// simulator runs one of each class of equal replicas and copies its results to the others.
//
// A group family F (e.g. "dp") whose instances each hold exactly one rank of every replica
// defines the replicas: replica d is the set of d-th members of F's instances. Replicas fall
// into classes; each class is led by its first replica, whose ranks are simulated, and every
// other replica of the class (a follower) copies them: a rank's representative is the member
// of its F instance that belongs to its class's leader. Replicas share a class when, rank by
// rank, they run the same RankProgram on the same kind of endpoint (GPU or server) at the same
// compute slowdown; a straggler thus puts its replica in a class of its own, and the rest stay
// together. The Program is symmetric under F when, besides,
//   * every other family's instance lies inside one replica, and the representatives of a
//     follower instance's members form an instance of that family, in the same order (a
//     tensor-parallel group of replica 3 mirrors one of its leader, say replica 0);
//   * F itself carries only collectives that treat every member alike (all-reduce,
//     all-gather, reduce-scatter, all-to-all, barrier): no root, no servers, no send/recv.
// These conditions are structural. Whether the network treats a class's replicas alike (their
// traffic takes equivalent paths at the same prices) is checked while simulating: the
// simulator runs every follower's communication beside its leader's and compares
// (program_simulator.cpp); replicas it finds treated differently are split into classes of
// their own (ReplicaSymmetry::split) and the run starts again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strategies/program/program.h"
#include "topology/cluster.h"

namespace sim {

// Replicas the network set apart in one run: each group (followers of one leader, in ascending
// order) becomes a class of its own, led by its first; `why` says what the run saw.
struct ReplicaSplit {
  std::vector<std::vector<std::int32_t>> groups;
  std::string why;
};

struct ReplicaSymmetry {
  program::GroupFamilyId family = 0;  // F: one member of every replica per instance
  std::int32_t replicas = 1;          // k
  std::vector<std::int32_t> leader;                   // per replica: its class's first replica
  std::vector<std::vector<std::int32_t>> followers;   // per leader: the other replicas of its class
  std::vector<std::int32_t> representative;           // per rank: the rank it copies (itself if simulated)
  std::vector<std::int32_t> replica_of;               // per rank: its replica, 0 .. k-1
  std::vector<std::string> differences;               // why each class beyond the first exists

  bool is_representative(std::int32_t rank) const { return representative[rank] == rank; }
  std::int32_t classes() const;
  // The rank of replica `replica` that holds `rank`'s place (`rank` of any replica).
  std::int32_t mirror(const program::Program& program, std::int32_t rank, std::int32_t replica) const;
  void split(const program::Program& program, const ReplicaSplit& split);
  // Sets `representative` from `leader` and `replica_of`.
  void find_representatives(const program::Program& program);
  // "16 replicas (dp groups) simulated as one", or "… as 2 classes: replica 3: …".
  std::string describe(const program::Program& program) const;
};

// "replica 3", "replicas 1, 2 and 5", "replicas 1, 2, 3 and 2 more".
std::string replica_list(const std::vector<std::int32_t>& replicas);

// Per group family of `program`: whether any op communicates over it.
std::vector<bool> used_families(const program::Program& program);

// The family under which `program` is symmetric with the fewest ranks to simulate (the most
// replicas in the fewest classes), or why none is: `why_not` gets, for each candidate family,
// the first condition it breaks (with every replica in a class of its own, what sets replica 1
// apart).
std::optional<ReplicaSymmetry> find_replica_symmetry(const program::Program& program,
                                                     const topology::Cluster& cluster,
                                                     const std::vector<double>& compute_slowdown,
                                                     std::string* why_not = nullptr);

}  // namespace sim
