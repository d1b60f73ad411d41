// `dtsim sweep`: every point of a scenario's [sweep] table (the cartesian product of its
// axes), each validated with its own values applied (the base alone need not be valid),
// simulated in parallel on all cores, summarised as a table and a CSV file in the order of the
// points. A point that cannot run is a row marked invalid with its one-line reason; the rest
// run. A swept value wrong by itself (a typo) stops the sweep before any point runs.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/work_split.h"
#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "sim/trace/report.h"

namespace scenarios {

struct SweepRow {
  std::vector<std::string> values;  // one per axis, as TOML text
  trace::Report report;
  std::string invalid;  // why the point could not be read or simulated; empty: it ran
  Provenance provenance;  // the network model only when the point reads
  std::vector<std::string> warnings;  // implausible inputs, an MFU above 100 %
};

struct SweepResult {
  std::vector<SweepAxis> axes;
  std::vector<SweepRow> rows;
  std::string name;  // the scenario's name, from the first point that reads; empty: none did
  std::optional<ScenarioError>
      first_read_error;  // where and why the first point that did not read failed
};

using Progress = std::function<void(std::size_t done, std::size_t total)>;

// Runs scenarios on `threads` threads (0: all cores) and returns their reports in order;
// `progress`, when set, is called from the calling thread. The first failure is rethrown,
// unless `failures` is given: then it receives each scenario's error message (empty: ran).
// Under mpirun (`split` over the job's processes) the processes meet first (a process that
// failed before this point makes the others throw backend::ExecutionError), then each runs its
// share and all of them return every report, the same as one process gives; a failure that
// would be rethrown is rethrown on every process, as a std::runtime_error with its message
// (its type is not kept).
std::vector<trace::Report> run_all(const std::vector<Scenario>& scenarios, unsigned threads, const Progress& progress,
                                   std::vector<std::string>* failures = nullptr, const backend::WorkSplit& split = {});

// Reads every point (one that does not read is marked invalid), then runs the others
// (run_all, shared out by `split`; one that fails is marked invalid too). A value wrong by
// itself (ErrorKind::kValue: a type, a range, an unknown name) is thrown: the sweep does not run.
SweepResult run_sweep(const ScenarioDocument& document, unsigned threads, const Progress& progress,
                      const backend::WorkSplit& split = {});

// Right-aligned columns under a header.
std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
// The figures every table of runs shows: step time, tokens/s, MFU, R, overlap, exposed
// communication, peak memory, whether it fits.
std::vector<std::string> report_columns();
std::vector<std::string> report_cells(const trace::Report& report);

// Figures a sweep can be sorted by (the CSV's names), each with its better direction.
std::vector<std::string> sweep_sort_columns();

// How a sweep is shown: rows sorted by `sort_by` (one of sweep_sort_columns(), better first,
// invalid rows last; empty: in point order), at most `top` of them (0: all); the best row —
// the best by `sort_by` (step time when unset) among the points that ran and fit — is marked.
struct SweepView {
  std::string sort_by;
  std::size_t top = 0;
};

std::string format_sweep_table(const SweepResult& result, const SweepView& view = {});
std::string sweep_json(const SweepResult& result, const SweepView& view = {});
// Every point, in point order.
std::string sweep_csv(const SweepResult& result);

}  // namespace scenarios
