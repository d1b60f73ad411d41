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
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/compute/compute_model.h"
#include "sim/net/network_model.h"
#include "sim/trace/timeline.h"
#include "strategies/program/program.h"
#include "topology/cluster.h"

namespace sim {

struct SimulationOptions {
  NetworkOptions network;
  ComputeEfficiency efficiency = ComputeEfficiency::preset();
  // When set, compute op times are scaled so that the busiest rank computes for exactly this
  // long per step (the chapter's examples state T_comp instead of deriving it).
  std::optional<double> step_compute_time_s;
};

struct SimulationResult {
  trace::Timeline timeline;
  std::uint64_t events = 0;
  // Per rank: how much of its communication time the network model attributes to latency
  // (α terms) and to bandwidth (bytes/B terms).
  std::vector<double> comm_latency_s;
  std::vector<double> comm_bandwidth_s;
};

class SimulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws SimulationError if the program cannot run (a deadlock, a malformed group, a
// collective the network model cannot schedule).
SimulationResult simulate(const program::Program& program, const topology::Cluster& cluster,
                          const SimulationOptions& options);

}  // namespace sim
