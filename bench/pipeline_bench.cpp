// Where the time of `dtsim run` goes, on the shipped scenarios: lowering + simulation +
// report (run_scenario) and writing the Chrome trace, measured separately.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "sim/trace/chrome_trace.h"

namespace {

const std::string kScenarios = std::string(DTSIM_SOURCE_DIR) + "/scenarios/";

void BM_RunScenario(benchmark::State& state, const char* file) {
  const scenarios::Scenario scenario = scenarios::load_scenario(kScenarios + file);
  std::uint64_t events = 0;
  for (auto _ : state) {
    const scenarios::RunResult result = scenarios::run_scenario(scenario);
    events = result.simulation.events;
    benchmark::DoNotOptimize(result.report.step_time_s);
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_RunScenario, default_16_ranks, "default.toml")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RunScenario, c3_64_ranks, "c3_70b_ddp_64gpu.toml")->Unit(benchmark::kMillisecond);
// Issue 4's target: under 5 s for TP 8 × PP 8 × DP 16 on 1,024 GPUs, 32 micro-batches, flow model.
BENCHMARK_CAPTURE(BM_RunScenario, llama2_70b_3d_1024_ranks, "llama2_70b_3d_1024gpu.toml")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

void BM_WriteChromeTrace(benchmark::State& state, const char* file) {
  const scenarios::RunResult result = scenarios::run_scenario(scenarios::load_scenario(kScenarios + file));
  for (auto _ : state) {
    std::ofstream out("/dev/null");  // formatting and writing, as the CLI streams to its file
    trace::write_chrome_trace(result.simulation.timeline, out);
  }
  state.counters["spans"] = static_cast<double>(result.simulation.timeline.spans.size());
}
BENCHMARK_CAPTURE(BM_WriteChromeTrace, c3_64_ranks, "c3_70b_ddp_64gpu.toml")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
