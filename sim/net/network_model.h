// The network interface of the simulator: collectives and point-to-point transfers go in,
// completion callbacks come out on the engine's clock. Three models swap behind it by one
// scenario key, `network.model`, all pricing the same collective schedules
// (sim/collectives) planned by the same CommPlanner:
//   analytic — closed-form α-β (or LogGP) per schedule step, no contention between
//              collectives;
//   flow     — congestion-aware: transfers share links by max-min fairness, re-solved
//              whenever the set of transfers changes;
//   packet   — every step's transfers as pipelined chunks through FIFO links.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/engine.h"
#include "sim/net/nccl_model.h"
#include "strategies/program/program.h"
#include "topology/cluster.h"

namespace sim {

struct CommRequest {
  std::optional<program::CollectiveKind> kind;  // empty: point-to-point
  program::Algorithm algorithm = program::Algorithm::kAuto;
  std::int64_t bytes = 0;
  std::vector<std::int32_t> endpoints;  // cluster endpoints of the members, in group order
                                        // (point-to-point: sender, receiver)
  std::int32_t root = 0;
  std::int32_t ps_servers = 0;
  bool userbuffers = false;  // program::CollectiveOp::userbuffers: a ring priced by the links' α-β
  // Point-to-point: the communicator the transfer runs in — the ranks of the program's group (a
  // pipeline group, as Megatron-Core's batch_isend_irecv runs) and the nodes they span — by
  // which NCCL sizes a send (nccl_p2p.h).
  std::int32_t communicator_ranks = 2;
  std::int32_t communicator_nodes = 1;
};

// One algorithm step as one member saw it (packet model only), for the timeline.
struct StepSpan {
  std::int32_t member = 0;
  std::string_view phase;
  std::int32_t step = 0;
  Time start;
  Time end;
};

struct CommResult {
  Time start;
  Time end;
  program::Algorithm algorithm = program::Algorithm::kRing;
  std::optional<nccl::Protocol> protocol;  // the protocol NCCL would run (collectives.library = "nccl")
  double latency_seconds = 0;    // α part of the duration
  double bandwidth_seconds = 0;  // the rest: bytes over (shared) bandwidth
  std::vector<double> bytes_sent;  // per member, in group order
  std::vector<StepSpan> steps;     // packet model: every step of every member
};

// Options every network model understands.
struct NetworkOptions {
  std::string model = "flow";
  // The collective library priced (collectives.library): "nccl" — the algorithms NCCL runs,
  // its latencies and protocols (nccl_model.h) — or "ideal": any of dtsim's schedules, the
  // links' α-β only.
  std::string library = "nccl";
  // Rings a ring collective runs in parallel ("channels"). 0: one per NIC of a node, as NCCL
  // opens at least one ring per NIC so that every NIC carries traffic; 1: the textbook
  // single ring.
  std::int32_t ring_channels = 0;
  // Pipelining granularity of chains and trees, and the packet model's chunk: NCCL's Simple
  // protocol moves its 4 MiB buffer in 8 slots of 512 KiB (NCCL_BUFFSIZE / NCCL_STEPS).
  std::int64_t chunk_bytes = 512 * 1024;
  // Analytic model only: LogGP instead of α-β (Alexandrov et al., SPAA 1995). Each step then
  // costs L + 2o + (n − 1)·g + bytes·G, with L the path latency, n the most messages one
  // member sends in the step and G the inverse bottleneck bandwidth.
  bool logp = false;
  double logp_overhead_s = 1e-6;  // o: engineering default (`dtsim calibrate` does not measure it)
  double logp_gap_s = 1e-6;       // g: likewise
  // Packet model: report every member's algorithm steps (for the timeline).
  bool record_steps = false;
  // Packet model: the chunk moves (one link each) one simulation may make before it throws
  // NetworkWorkLimit rather than run for hours. 5–10 times the default scenario's at 512 KiB
  // chunks: reached in 19–45 s on the development machine, against 3 s for that scenario.
  std::uint64_t packet_chunk_hop_limit = 100'000'000;
};

// A network model asked for more work than it can do in reasonable time (the packet model's
// chunk moves); what() says how to stay within.
class NetworkWorkLimit : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  virtual std::string_view name() const = 0;
  // Starts the communication at the engine's current time; calls `done` when it finishes.
  virtual void start(const CommRequest& request, std::function<void(const CommResult&)> done) = 0;
  // Starts `request` and, beside it, `copies` of it: the same communication between other
  // endpoints (another data-parallel replica's copy of one replica's transfer). `copy_done(i, ·)`
  // reports copy i. By default every copy runs on its own, as if started by start(); a model may
  // run copies the network provably treats alike as one (the flow model's folded classes).
  virtual void start_with_copies(
      const CommRequest& request, const std::vector<CommRequest>& copies,
      std::function<void(const CommResult&)> done,
      const std::function<void(std::size_t, const CommResult&)>& copy_done);
};

// Names accepted by make_network_model.
std::vector<std::string> network_model_names();
// Throws std::invalid_argument for an unknown model name.
std::unique_ptr<NetworkModel> make_network_model(const NetworkOptions& options, Engine& engine,
                                                 const topology::Cluster& cluster);

}  // namespace sim
