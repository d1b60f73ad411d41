// Replica symmetry: finding, in a Program, k replicas that behave identically, so that the
// simulator runs one of them and copies its results to the others.
//
// A group family F (e.g. "dp") whose instances each hold exactly one rank of every replica
// defines the replicas: replica d is the set of d-th members of F's instances, and the rank a
// mirror rank copies (its representative) is the first member of its F instance. The Program
// is symmetric under F when, for every rank,
//   * it runs the same RankProgram as its representative, on the same kind of endpoint (GPU
//     or server), at the same compute slowdown;
//   * every other family's instance lies inside one replica, and the representatives of a
//     mirror instance's members form an instance of that family, in the same order (a
//     tensor-parallel group of replica 3 mirrors one of replica 0);
//   * F itself carries only collectives that treat every member alike (all-reduce,
//     all-gather, reduce-scatter, all-to-all, barrier): no root, no servers, no send/recv.
// These conditions are structural. Whether the network treats the replicas alike (their
// traffic takes equivalent paths at the same prices) is checked while simulating: the
// simulator runs every mirror's communication beside the representative's and compares
// (program_simulator.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strategies/program/program.h"
#include "topology/cluster.h"

namespace sim {

struct ReplicaSymmetry {
  program::GroupFamilyId family = 0;  // F: one member of every replica per instance
  std::int32_t replicas = 1;          // k
  std::vector<std::int32_t> representative;  // per rank: the rank of replica 0 it copies
  std::vector<std::int32_t> replica_of;      // per rank: its replica, 0 .. k-1

  bool is_representative(std::int32_t rank) const { return replica_of[rank] == 0; }
  // The rank of replica `replica` that mirrors `first` (a rank of replica 0).
  std::int32_t mirror(const program::Program& program, std::int32_t first, std::int32_t replica) const;
};

// Per group family of `program`: whether any op communicates over it.
std::vector<bool> used_families(const program::Program& program);

// The family with the most replicas under which `program` is symmetric, or why none is:
// `why_not` gets, for each candidate family, the first condition it breaks.
std::optional<ReplicaSymmetry> find_replica_symmetry(const program::Program& program,
                                                     const topology::Cluster& cluster,
                                                     const std::vector<double>& compute_slowdown,
                                                     std::string* why_not = nullptr);

}  // namespace sim
