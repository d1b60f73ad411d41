// Runs a Program on a simulated cluster and records what happened as a trace::Timeline.
//
// Semantics are the Program's (program.h): in-order streams, explicit dependencies,
// collectives that start when the last member of the group instance arrives, send/recv
// pairs that start when both sides are posted. Compute ops take the compute model's time;
// communication takes the network model's. Memory ops update per-rank counters, sampled
// into the timeline as they change.
//
// Deterministic: the engine orders simultaneous events by insertion, so the same Program
// gives the same timeline, byte for byte.
#pragma once

#include <cstdint>
#include <map>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/compute/compute_model.h"
#include "sim/net/network_model.h"
#include "sim/run/replica_symmetry.h"
#include "sim/trace/timeline.h"
#include "strategies/program/program.h"
#include "topology/cluster.h"

namespace sim {

// A collective algorithm fixed by the user, and where (file:line, key) it was set.
struct CollectiveOverride {
  program::Algorithm algorithm = program::Algorithm::kAuto;
  std::string origin;
  std::string key;
};

// Collective algorithms fixed by the user: per group family and kind, else per kind, else the
// op's own hint (which is "auto" unless a strategy needs a particular algorithm).
struct CollectiveOverrides {
  std::map<program::CollectiveKind, CollectiveOverride> by_kind;
  std::map<std::pair<std::string, program::CollectiveKind>, CollectiveOverride> by_group;
  const CollectiveOverride* find(program::CollectiveKind kind, const std::string& family) const;
};

struct SimulationProgress {
  double fraction_done = 0;   // of the simulated ranks' ops, in this run
  double simulated_s = 0;     // the simulated clock
  std::uint64_t events = 0;   // engine events processed so far, in this run
  // 1, then 2, … each time the network set replicas apart and the simulation started again.
  std::int32_t run = 1;
};

struct SimulationOptions {
  NetworkOptions network;
  CollectiveOverrides collectives;
  ComputeEfficiency efficiency = ComputeEfficiency::preset();
  // When set, compute op times are scaled so that the busiest rank computes for exactly this
  // long per step (the chapter's examples state T_comp instead of deriving it).
  std::optional<double> step_compute_time_s;
  // When set (and step_compute_time_s is not), every GPU compute op's time is multiplied by
  // this factor (the caller derives it from a stated time for some known piece of work).
  std::optional<double> compute_time_scale;
  // Per rank, a factor on every compute op's time (stragglers); empty: all 1.
  std::vector<double> compute_slowdown;
  // Ranks whose spans the timeline keeps (empty: all). Every rank is summarised regardless.
  std::vector<bool> traced_ranks;
  // Simulate one replica per class of equal replicas when the program has replica symmetry
  // (replica_symmetry.h); false: every rank, always.
  bool use_symmetry = true;
  // Replicas an earlier simulation of the same program found the network treats apart
  // (SimulationResult::replica_splits): applied before the first run, so that it need not find
  // them again.
  std::vector<ReplicaSplit> replica_splits;
  // Called every few thousand events with how far the run is; returning false stops the run
  // with SimulationCancelled. Lets a front end show progress and cancel.
  std::function<bool(const SimulationProgress&)> progress;
  // The memory the run may take (bytes; the front end passes what the machine has available).
  // A run whose estimated memory (program_simulator.cpp, MemoryEstimate) exceeds it is refused
  // before it starts (NotEnoughMemory); 0: no check.
  std::uint64_t memory_available_bytes = 0;
};


struct SimulationResult {
  trace::Timeline timeline;
  std::uint64_t events = 0;
  // Per rank: how much of its communication time the network model attributes to latency
  // (α terms) and to bandwidth (bytes/B terms).
  std::vector<double> comm_latency_s;
  std::vector<double> comm_bandwidth_s;
  // How the ranks were simulated: "16 replicas (dp groups) simulated as one", "… simulated as
  // 2 classes, the others copied: <what sets each further class apart>", or "every rank: <why
  // the replicas could not be simulated in classes>".
  std::string symmetry;
  // The splits of replica classes this simulation made or was given (SimulationOptions).
  std::vector<ReplicaSplit> replica_splits;
};

class SimulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The simulated run would last longer than the engine's clock spans: the scenario's numbers
// (a rate, bandwidth or efficiency near zero, a model or batch far too large) are absurd.
class SimulationTooLong : public SimulationError {
 public:
  SimulationTooLong()
      : SimulationError(
            "the simulated run exceeds the simulator's 106 days of simulated time (hint: a rate, bandwidth or "
            "efficiency set near zero, or a model or batch far too large? check the values set in the file and with "
            "--set)") {}
};

// The run was stopped by SimulationOptions::progress.
class SimulationCancelled : public SimulationError {
 public:
  SimulationCancelled() : SimulationError("the simulation was cancelled") {}
};

// The run's estimated memory exceeds SimulationOptions::memory_available_bytes; what() gives
// the estimate, its parts and what would shrink it.
class NotEnoughMemory : public SimulationError {
 public:
  using SimulationError::SimulationError;
};

// A user-set collective algorithm that cannot run on a group of the program.
class InvalidOverride : public SimulationError {
 public:
  InvalidOverride(const CollectiveOverride& where, const std::string& message)
      : SimulationError(message), origin(where.origin), key(where.key) {}
  std::string origin;
  std::string key;
};

// Throws SimulationError if the program cannot run (a deadlock, a malformed group, a
// collective the network model cannot schedule).
SimulationResult simulate(const program::Program& program, const topology::Cluster& cluster,
                          const SimulationOptions& options);

}  // namespace sim
