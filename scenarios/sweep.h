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

// Reads every point first (throws ScenarioError naming the point), then runs them on
// `threads` threads (0: all cores). `progress(done, total)` is called from the calling thread.
SweepResult run_sweep(const ScenarioDocument& document, unsigned threads,
                      const std::function<void(std::size_t, std::size_t)>& progress);

std::string format_sweep_table(const SweepResult& result);
std::string sweep_csv(const SweepResult& result);

}  // namespace scenarios
