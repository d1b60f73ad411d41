// scenarios::Scenario — everything one simulation needs, read from a TOML file: the
// cluster, the model, the training setup and strategy, the network and compute models, and
// optional sweep axes. The schema is documented in docs/scenario.md; the loader
// (scenario_loader.h) is the only code that sees TOML.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/compute/compute_model.h"
#include "sim/net/network_model.h"
#include "sim/run/program_simulator.h"
#include "strategies/lowering.h"
#include "topology/hardware_spec.h"

namespace scenarios {

// One axis of a [sweep] table: a dotted scenario key and the values it takes, as TOML text.
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};

// How much slower each GPU computes than the model says: a factor ≥ 0 per rank, drawn once
// from a seeded distribution — lognormal (median 1, σ of its logarithm) or uniform on
// [1, 1 + spread]. The same seed gives the same factors. Named ranks (a throttled or faulty
// GPU) are slowed by `slow_factor` besides.
struct StragglerSpec {
  std::string distribution = "none";
  double sigma = 0.1;
  double spread = 0.2;
  std::uint64_t seed = 1;
  std::vector<std::int32_t> slow_ranks;
  double slow_factor = 1;
  bool any() const { return distribution != "none" || !slow_ranks.empty(); }
};

// Ranks whose spans go into the timeline (output.trace_ranks, run --trace-ranks); every rank is
// summarised for the report regardless. Written as a list of items: "all", "auto", "none",
// "first-node", "critical" (the rank that finishes last, which the report describes), a rank
// N or a range A-B, e.g. "0-7,896" or "first-node,critical".
struct TraceSelection {
  bool all = false;
  bool first_node = false;
  bool critical = false;  // found by simulating: a second run traces it when the first did not
  std::vector<std::pair<std::int32_t, std::int32_t>> ranges;  // inclusive
  // "auto": every rank up to kAutoTraceRanks ranks, else the first node, the first rank of each
  // pipeline stage and the critical rank.
  bool automatic = true;
  std::string origin;  // where it was given: "--trace-ranks …", "--set …", FILE:LINE:COLUMN
  std::string key;  // the scenario key that gave it (output.trace_ranks; empty for --trace-ranks)
  static constexpr std::int32_t kAutoTraceRanks = 64;
  static TraceSelection none() {
    TraceSelection selection;
    selection.automatic = false;
    return selection;
  }
};

struct Scenario {
  std::string name;
  std::string description;
  std::string source;  // file the scenario came from
  // key=value applied over the file, in order (--set, a sweep point's values): with `source`
  // and `hardware_profile` (the profile taken in, as named; empty: none), what reproduces it.
  std::vector<std::string> overrides;
  std::string hardware_profile;
  topology::ClusterSpec cluster;
  strategies::LoweringInput lowering;
  // The parallel layout as written: `lowering.parallel` but where read_for_layout_choice put plain
  // data parallelism in place of a layout that does not hold. The overlaps it asks for are what
  // `search` turns on wherever they apply.
  strategies::ParallelSpec written_parallel;
  sim::NetworkOptions network;
  // network.symmetry: identical replicas simulated once (sim::SimulationOptions::use_symmetry).
  bool symmetry = true;
  sim::CollectiveOverrides collectives;
  sim::ComputeEfficiency efficiency = sim::ComputeEfficiency::preset();
  // Stated compute times (the chapter's examples give them instead of deriving them): the
  // busiest GPU's compute per step, or one transformer layer's forward + backward on one
  // unsharded GPU. At most one is set.
  std::optional<double> step_compute_time_s;
  std::optional<double> layer_compute_time_s;
  StragglerSpec stragglers;
  TraceSelection trace;
  // Values that read but no hardware has (a GPU memory in bytes where GB are asked for), one
  // line each naming the key: the report lists them among its warnings.
  std::vector<std::string> warnings;
  // Real runs ([backend] collectives): "mpi" — MPI's own collectives — or "dtsim" — dtsim's
  // algorithm schedules run step by step with MPI point-to-point.
  std::string backend_collectives = "mpi";
  std::vector<SweepAxis> sweep;
  // [search] gpu_hour_price: what one GPU-hour costs (in any currency), for `dtsim search
  // --objective cost`.
  std::optional<double> gpu_hour_price;
};

// What a ScenarioError faults: the scenario as a whole (a value out of range, keys that do not
// fit together) or one value by itself (a wrong type, an unknown name), which is wrong whatever
// else the scenario says — a sweep refuses such a value up front rather than marking its
// points invalid.
enum class ErrorKind { kScenario, kValue };

// A mistake in the user's input: where it is, which key, what was expected, and a hint.
// what() is the one-line message printed to the user.
class ScenarioError : public std::runtime_error {
 public:
  ScenarioError(std::string location, std::string key, std::string message, std::string hint = {},
                ErrorKind kind = ErrorKind::kScenario);
  const std::string& location() const { return location_; }
  const std::string& key() const { return key_; }
  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }
  ErrorKind kind() const { return kind_; }

 private:
  std::string location_;
  std::string key_;
  std::string message_;
  std::string hint_;
  ErrorKind kind_;
};

}  // namespace scenarios
