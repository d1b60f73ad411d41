// The one pipeline every front end uses (the CLI, sweeps, and later the viewer): scenario →
// cluster → Program → simulation → timeline and report; and writing the outputs.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "backend/executor.h"
#include "scenarios/memory_remedies.h"
#include "scenarios/output_files.h"
#include "scenarios/scenario.h"
#include "sim/run/program_simulator.h"
#include "sim/trace/report.h"
#include "strategies/program/program.h"

namespace scenarios {

// This build's version (CMake's project version).
std::string dtsim_version();

// Where a result came from, enough to produce it again: report.json's "provenance", each sweep
// row's.
struct Provenance {
  std::string scenario;                // the scenario file
  std::vector<std::string> overrides;  // key=value applied over it, in order
  std::string hardware_profile;        // the profile taken in, as named; empty: none
  std::string network_model;           // "flow (nccl)": model (collective library); a real run: "measured (…)"
};

// A simulation's provenance.
Provenance provenance_of(const Scenario& scenario);
// The provenance with dtsim's version, as JSON.
nlohmann::json provenance_json(const Provenance& provenance);

struct RunResult {
  program::Program program;
  sim::SimulationResult simulation;
  trace::Report report;
  Provenance provenance;
  std::optional<std::vector<MemoryRemedy>> memory_remedies;  // for a simulated run that does not fit
};

// The report as JSON with the run's provenance and, when they were computed, the remedies of a
// run that does not fit ("oom_remedies").
nlohmann::json result_json(const RunResult& result);

// Throws sim::SimulationError if the program cannot be simulated. `progress`, when set, is
// called now and then with the fraction of the simulation done; returning false cancels the
// run (sim::SimulationCancelled). A run estimated to need more than `memory_available_bytes`
// is refused before it starts (sim::NotEnoughMemory; 0: no check).
RunResult run_scenario(const Scenario& scenario,
                       const std::function<bool(const sim::SimulationProgress&)>& progress = {},
                       std::uint64_t memory_available_bytes = 0);

// Each collective's algorithm in a real run: the scenario's [collectives] choice for its kind
// and group, else the op's own. The function refers to `scenario`, which must outlive it.
std::function<program::Algorithm(const program::CollectiveOp&, const std::string&)> fixed_algorithms(
    const Scenario& scenario);

// Runs the scenario's Program for real (backend::execute) on the MPI ranks of this job; on
// rank 0 returns its measured timeline and report, elsewhere an empty result.
// With options.verify, the tensor-parallel check runs on one layer of the scenario's model.
RunResult execute_scenario(const Scenario& scenario, backend::ExecutionOptions options);

// Writes timeline.json (Chrome trace) and report.json into `directory`, creating it, with
// write_files_atomically; report.json's "timeline_digest" is the digest of the timeline.json
// written with it (format_digest), its "provenance" the result's. Throws OutputError.
// Without `timeline`, report.json alone (no digest), and a timeline.json left there by an
// earlier run is removed.
void write_outputs(const RunResult& result, const std::filesystem::path& directory, bool timeline = true);

}  // namespace scenarios
