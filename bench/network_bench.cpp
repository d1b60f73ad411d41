// The network-fidelity speed targets (BENCHMARKS.md), each with its event count, event rate
// and the process's peak resident memory:
//   flow model, one 1 GiB ring all-reduce on 1,024 GPUs (128 × 8);
//   flow model, a full DDP step of Llama-2-70B on 1,024 GPUs (scenarios/ddp_llama2_70b_1024gpu.toml);
//   packet model, one 64 MiB all-reduce on 4,096 GPUs (512 × 8, fat-tree), algorithm "auto".
// Run one benchmark per process (bench/run_network_benchmarks.sh) so peak memory is its own.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>

#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "sim/net/network_model.h"
#include "topology/presets.h"

namespace {

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void report(benchmark::State& state, std::uint64_t events) {
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_rss_MB"] = peak_rss_mb();
}

void run_all_reduce(benchmark::State& state, const char* model, program::Algorithm algorithm, int nodes,
                    std::int64_t bytes) {
  topology::ClusterSpec spec;
  spec.node = *topology::node_preset("hgx-h100");
  spec.nodes = nodes;
  spec.fabric = *topology::fabric_preset("ib-ndr");
  std::uint64_t events = 0;
  double seconds = 0;
  for (auto _ : state) {
    const topology::Cluster cluster(spec);  // routing caches start cold every time
    sim::Engine engine;
    sim::NetworkOptions options;
    options.model = model;
    auto network = sim::make_network_model(options, engine, cluster);
    sim::CommRequest request;
    request.kind = program::CollectiveKind::kAllReduce;
    request.algorithm = algorithm;
    request.bytes = bytes;
    for (int r = 0; r < nodes * 8; ++r) request.endpoints.push_back(r);
    sim::CommResult result;
    network->start(request, [&result](const sim::CommResult& done) { result = done; });
    engine.run();
    events = engine.events_processed();
    seconds = (result.end - result.start).seconds();
  }
  report(state, events);
  state.counters["simulated_us"] = seconds * 1e6;
}

void BM_FlowRingAllReduce1GiB1024Gpus(benchmark::State& state) {
  run_all_reduce(state, "flow", program::Algorithm::kRing, 128, std::int64_t{1} << 30);
}
BENCHMARK(BM_FlowRingAllReduce1GiB1024Gpus)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_PacketAllReduce64MiB4096Gpus(benchmark::State& state) {
  run_all_reduce(state, "packet", program::Algorithm::kAuto, 512, std::int64_t{64} << 20);
}
BENCHMARK(BM_PacketAllReduce64MiB4096Gpus)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_FlowDdpStepLlama70B1024Gpus(benchmark::State& state) {
  const scenarios::Scenario scenario =
      scenarios::load_scenario(std::string(DTSIM_SOURCE_DIR) + "/scenarios/ddp_llama2_70b_1024gpu.toml");
  std::uint64_t events = 0;
  for (auto _ : state) events = scenarios::run_scenario(scenario).simulation.events;
  report(state, events);
}
BENCHMARK(BM_FlowDdpStepLlama70B1024Gpus)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
