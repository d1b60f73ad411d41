// Engine throughput next to a bare std::priority_queue, in the same run.
//
// Both benchmarks keep a queue of kInFlight pending events and, for every event popped,
// push one more at a pseudo-random later time — the "hold" model of event-queue
// benchmarking (Jones, CACM 1986). The bare loop pushes and pops (time, sequence) pairs
// only; the engine also stores, runs and frees a callback per event and supports
// cancellation. At the end the program prints events per second for each and their ratio.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "sim/core/engine.h"

namespace {

constexpr int kInFlight = 1024;

struct Entry {
  std::int64_t time;
  std::uint64_t sequence;
  bool operator>(const Entry& other) const {
    return time != other.time ? time > other.time : sequence > other.sequence;
  }
};

void BM_PriorityQueueHold(benchmark::State& state) {
  std::mt19937_64 random(42);
  std::uniform_int_distribution<std::int64_t> delay(1, 1'000'000);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  std::uint64_t sequence = 0;
  for (int i = 0; i < kInFlight; ++i) queue.push({delay(random), sequence++});
  for (auto _ : state) {
    const Entry top = queue.top();
    queue.pop();
    queue.push({top.time + delay(random), sequence++});
  }
  benchmark::DoNotOptimize(queue.size());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PriorityQueueHold);

void BM_EngineHold(benchmark::State& state) {
  std::mt19937_64 random(42);
  std::uniform_int_distribution<std::int64_t> delay(1, 1'000'000);
  sim::Engine engine;
  // Each event reschedules itself: the engine holds kInFlight events throughout. The
  // callback captures one pointer, as simulator callbacks capture their context.
  struct Context {
    sim::Engine* engine;
    std::mt19937_64* random;
    std::uniform_int_distribution<std::int64_t>* delay;
    void fire() {
      Context* self = this;
      engine->schedule_after(sim::Time::from_ps((*delay)(*random)), [self] { self->fire(); });
    }
  } context{&engine, &random, &delay};
  for (int i = 0; i < kInFlight; ++i) {
    engine.schedule_at(sim::Time::from_ps(delay(random)), [&context] { context.fire(); });
  }
  for (auto _ : state) engine.step();
  benchmark::DoNotOptimize(engine.events_processed());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EngineHold);

// Collects items/s of each benchmark to print the ratio after the run.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      auto it = run.counters.find("items_per_second");
      if (it != run.counters.end()) rates_[run.benchmark_name()] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void print_ratio() const {
    double engine = 0, bare = 0;
    for (const auto& [name, rate] : rates_) {
      if (name.rfind("BM_EngineHold", 0) == 0 && name.find("_median") != std::string::npos) engine = rate;
      if (name.rfind("BM_PriorityQueueHold", 0) == 0 && name.find("_median") != std::string::npos) bare = rate;
      if (engine == 0 && name == "BM_EngineHold") engine = rate;
      if (bare == 0 && name == "BM_PriorityQueueHold") bare = rate;
    }
    if (engine > 0 && bare > 0) {
      std::cout << "\nengine events/s: " << engine << "\nbare priority_queue push+pop/s: " << bare
                << "\nratio engine / bare: " << engine / bare << "\n";
    }
  }

 private:
  std::map<std::string, double> rates_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_ratio();
  benchmark::Shutdown();
  return 0;
}
