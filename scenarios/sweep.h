// `dtsim sweep`: every point of a scenario's [sweep] table (the cartesian product of its
// axes), validated up front, simulated in parallel on all cores, summarised as a table and a
// CSV file in the order of the points.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "scenarios/scenario_loader.h"
#include "sim/trace/report.h"

namespace scenarios {

struct SweepRow {
  std::vector<std::string> values;  // one per axis, as TOML text
  trace::Report report;
};

struct SweepResult {
  std::vector<SweepAxis> axes;
  std::vector<SweepRow> rows;
};

using Progress = std::function<void(std::size_t done, std::size_t total)>;

// Runs scenarios on `threads` threads (0: all cores) and returns their reports in order;
// `progress`, when set, is called from the calling thread. The first failure is rethrown.
std::vector<trace::Report> run_all(const std::vector<Scenario>& scenarios, unsigned threads, const Progress& progress);

// Reads every point first (throws ScenarioError naming the point), then runs them (run_all).
SweepResult run_sweep(const ScenarioDocument& document, unsigned threads, const Progress& progress);

// Right-aligned columns under a header.
std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
// The figures every table of runs shows: step time, tokens/s, MFU, R, overlap, exposed
// communication, peak memory, whether it fits.
std::vector<std::string> report_columns();
std::vector<std::string> report_cells(const trace::Report& report);

std::string format_sweep_table(const SweepResult& result);
std::string sweep_csv(const SweepResult& result);

}  // namespace scenarios
