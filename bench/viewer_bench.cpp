// dtsim-view on a one-million-span timeline (issue #5's targets: load under 3 s, one full
// repaint under 16 ms at any zoom, on the 2-core development machine).
//
// The timeline is real: Llama-2-70B 3D (TP 8 × PP 8 × DP 16 on 1,024 GPUs) simulated with the
// spans of ranks 0…kTracedRanks−1 kept, written as the Chrome trace `dtsim run` writes. Load
// = read the file + build the drawing index + the summary figures (what the window waits for).
// Paint = one full repaint of a 1600 × 900 view, as the widget does it, at zoom levels from
// the whole run to a few microseconds.
#include <QApplication>
#include <QImage>
#include <QPainter>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gui/document.h"
#include "gui/timeline_painter.h"
#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "sim/trace/chrome_trace.h"

namespace {

constexpr int kTracedRanks = 93;  // ~1.0 million spans
const QSize kViewSize(1600, 900);

const std::string& trace_path() {
  static const std::string path = [] {
    const std::string file = (std::filesystem::temp_directory_path() / "dtsim_viewer_bench_1m.json").string();
    std::string ranks = "output.trace_ranks=[";
    for (int r = 0; r < kTracedRanks; ++r) ranks += (r ? "," : "") + std::to_string(r);
    const scenarios::Scenario scenario =
        scenarios::load_scenario(std::string(DTSIM_SOURCE_DIR) + "/scenarios/llama2_70b_3d_1024gpu.toml", {ranks + "]"});
    const scenarios::RunResult result = scenarios::run_scenario(scenario);
    std::ofstream out(file);
    trace::write_chrome_trace(result.simulation.timeline, out);
    return file;
  }();
  return path;
}

const std::shared_ptr<const gui::Document>& document() {
  static const std::shared_ptr<const gui::Document> loaded = gui::load_document(trace_path());
  return loaded;
}

void BM_LoadTimeline(benchmark::State& state) {
  std::size_t spans = 0;
  const auto bytes = std::filesystem::file_size(trace_path());
  for (auto _ : state) {
    const auto loaded = gui::load_document(trace_path());
    spans = loaded->index->timeline().spans.size();
  }
  state.counters["spans"] = static_cast<double>(spans);
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_LoadTimeline)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(5)->ReportAggregatesOnly(true);

// One repaint with the view zoomed to 1/zoom of the run, centred on its middle, lanes scrolled
// to the top (the first node's 8 ranks × their streams fill the view).
void BM_Repaint(benchmark::State& state) {
  gui::ViewState view;
  view.documents = {document()};
  view.relayout();
  const gui::Window all = document()->index->extent();
  const double length = all.length() / static_cast<double>(state.range(0));
  const double middle = (all.begin_ps + all.end_ps) / 2;
  view.viewport.set({middle - length / 2, middle + length / 2});
  QImage image(kViewSize, QImage::Format_ARGB32_Premultiplied);
  gui::TimelinePainter painter;
  for (auto _ : state) {
    QPainter target(&image);
    painter.paint(target, kViewSize, view);
  }
  state.counters["spans"] = static_cast<double>(document()->index->timeline().spans.size());
  state.counters["window_us"] = length / 1e6;
}
BENCHMARK(BM_Repaint)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(100000)
    ->Arg(10000000)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace

int main(int argc, char** argv) {
  setenv("QT_QPA_PLATFORM", "offscreen", 0);
  QApplication app(argc, argv);  // fonts for the labels
  ::benchmark::Initialize(&argc, argv);
  ::benchmark::RunSpecifiedBenchmarks();
  ::benchmark::Shutdown();
  return 0;
}
