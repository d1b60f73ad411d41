// dtsim-view with Qt, headless: table models under QAbstractItemModelTester, the painter's
// pixels for a known timeline, navigation by keys and wheel, bad files, the scenario panel
// (what-if, cancel, bad override), exports, and the command line's exit codes.
#include <QAbstractItemModelTester>
#include <QImage>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QApplication>
#include <QTextBrowser>
#include <QScrollBar>
#include <QTableView>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <gtest/gtest.h>

#include "gui/category_palette.h"
#include "gui/main_window.h"
#include "gui/memory_chart.h"
#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "sim/trace/chrome_trace.h"
#include "tests/support/timeline_maker.h"

namespace {

using trace::Category;

const std::string kScenarios = std::string(DTSIM_SOURCE_DIR) + "/scenarios/";

// Rank 0: forward 0–500 ns then backward 500–1000 ns on compute, an all-reduce 500–1000 ns on
// comm that waits for the forward; rank 1 (another node): 1,000 forward ops of 0.2 ns each.
std::shared_ptr<const gui::Document> known_document() {
  test_support::TimelineMaker maker({0, 1}, {"compute", "comm"});
  maker.timeline->title = "known";
  auto add = [&](std::int32_t rank, std::uint16_t stream, Category category, const char* name, std::int64_t start,
                 std::int64_t end, std::int64_t op) { maker.add(rank, stream, category, name, start, end).op = op; };
  add(0, 0, Category::kForward, "fwd", 0, 500'000, 0);
  add(0, 0, Category::kBackward, "bwd", 500'000, 1'000'000, 1);
  add(0, 1, Category::kAllReduce, "ar", 500'000, 1'000'000, 2);
  for (int i = 0; i < 1000; ++i) add(1, 0, Category::kForward, "tiny", i * 1000, i * 1000 + 200, i);
  trace::Timeline& timeline = *maker.timeline;
  timeline.dependencies = {{0, 2, 0}};
  return gui::make_document("known", "test", std::move(timeline));
}

gui::ViewState known_state() {
  gui::ViewState state;
  state.documents = {known_document()};
  state.viewport.set({0, 1'000'000});
  state.relayout();
  return state;
}

// Lanes: axis 24 px; node 0 header 18 px; rank 0 compute row at 42, comm row at 60; node 1
// header at 78; rank 1 compute row at 96 (each row 18 px, span boxes from +1, 16 px high).
constexpr int kLanesLeft = gui::ViewGeometry::kGutterWidth;
constexpr int kWidth = kLanesLeft + 1000;  // 1 px per ns
int row_middle(int row_top) { return gui::ViewGeometry::kAxisHeight + row_top + 9; }

TEST(TimelinePainterTest, KnownSpansLandOnTheirPixelsInTheirColours) {
  const QImage image = gui::render_view(known_state(), QSize(kWidth, 300));
  const int compute = row_middle(18);
  const int comm = row_middle(36);
  EXPECT_EQ(image.pixel(kLanesLeft + 250, compute), gui::category_color(Category::kForward).rgb());
  EXPECT_EQ(image.pixel(kLanesLeft + 750, compute), gui::category_color(Category::kBackward).rgb());
  EXPECT_EQ(image.pixel(kLanesLeft + 250, comm), QColor(Qt::white).rgb());  // nothing before the all-reduce
  EXPECT_EQ(image.pixel(kLanesLeft + 750, comm), gui::category_color(Category::kAllReduce).rgb());
  // Rank 1's 0.2 px ops fold into one box, drawn a shade darker than their category.
  EXPECT_EQ(image.pixel(kLanesLeft + 500, row_middle(72)), gui::category_color(Category::kForward).darker(115).rgb());
}

TEST(TimelinePainterTest, FilteredOutSpansFadeAndHiddenCategoriesVanish) {
  gui::ViewState state = known_state();
  state.query = gui::SpanQuery::parse("cat:all_reduce");
  state.hidden_categories[static_cast<std::size_t>(Category::kBackward)] = true;
  const QImage image = gui::render_view(state, QSize(kWidth, 300));
  const QColor forward = image.pixelColor(kLanesLeft + 250, row_middle(18));
  EXPECT_GT(forward.red() + forward.green() + forward.blue(), 3 * 200);  // faded towards white
  EXPECT_EQ(image.pixel(kLanesLeft + 750, row_middle(18)), QColor(Qt::white).rgb());
  EXPECT_EQ(image.pixel(kLanesLeft + 750, row_middle(36)), gui::category_color(Category::kAllReduce).rgb());
}

TEST(TimelinePainterTest, TheSelectionAndWhatItWaitedForAreOutlined) {
  gui::ViewState state = known_state();
  state.selected = gui::SpanRef{0, 2};  // the all-reduce
  state.related = gui::related_spans(state.documents[0]->index->timeline(), 2);
  const QImage image = gui::render_view(state, QSize(kWidth, 300));
  // The forward op's box is outlined in orange along its top edge.
  const QColor edge = image.pixelColor(kLanesLeft + 250, gui::ViewGeometry::kAxisHeight + 18);
  EXPECT_GT(edge.red(), 200);
  EXPECT_LT(edge.blue(), 80);
  EXPECT_EQ(image.pixel(kLanesLeft + 750, gui::ViewGeometry::kAxisHeight + 36), QColor(Qt::black).rgb());
}

// A document whose rank 0 computes 0–200 ns and 600–1000 ns: a 400 ns gap on its compute lane.
std::shared_ptr<const gui::Document> document_with_gap(std::int64_t shift_ps) {
  test_support::TimelineMaker maker({0}, {"compute"});
  maker.add(0, 0, Category::kForward, "f", shift_ps, 200'000 + shift_ps);
  maker.add(0, 0, Category::kForward, "f", 600'000 + shift_ps, 1'000'000 + shift_ps);
  return gui::make_document("gap", "test", std::move(*maker.timeline));
}

TEST(TimelinePainterTest, GapsOnTheComputeLaneAreDrawnAsIdle) {
  gui::ViewState state;
  state.documents = {document_with_gap(0)};
  state.viewport.set({0, 1'000'000});
  state.relayout();
  const QImage image = gui::render_view(state, QSize(kWidth, 200));
  EXPECT_EQ(image.pixel(kLanesLeft + 100, row_middle(18)), gui::category_color(Category::kForward).rgb());
  EXPECT_EQ(image.pixel(kLanesLeft + 300, row_middle(18)), gui::category_color(Category::kIdle).rgb());
  state.hidden_categories[static_cast<std::size_t>(Category::kIdle)] = true;
  EXPECT_EQ(gui::render_view(state, QSize(kWidth, 200)).pixel(kLanesLeft + 350, row_middle(18)), QColor(Qt::white).rgb());
}

// A measured trace starts at a wall-clock epoch; compared with a simulation from 0, both are
// drawn from their own first span.
TEST(TimelinePainterTest, ComparedTimelinesAreAlignedOnTheirStarts) {
  gui::ViewState state;
  state.documents = {document_with_gap(0), document_with_gap(1'700'000'000'000'000)};
  state.relayout();
  state.viewport.set(state.aligned_extent());
  EXPECT_EQ(state.aligned_extent().end_ps, 1'000'000);
  const QImage image = gui::render_view(state, QSize(kWidth, 300));
  // Title 22 px, node header 18 px, row 18 px per document.
  const int first_row = gui::ViewGeometry::kAxisHeight + 22 + 18 + 9;
  const int second_row = first_row + 18 + 22 + 18;
  for (const int x : {100, 300, 800}) {
    EXPECT_EQ(image.pixel(kLanesLeft + x, first_row), image.pixel(kLanesLeft + x, second_row)) << x;
  }
  EXPECT_EQ(image.pixel(kLanesLeft + 800, second_row), gui::category_color(Category::kForward).rgb());
}

TEST(TimelineViewTest, KeysWheelAndHistoryMoveTheWindow) {
  gui::TimelineView view;
  view.resize(kWidth + 20, 300);
  view.set_documents({known_document()});
  const gui::Window all = view.state().viewport.window();
  EXPECT_EQ(all.begin_ps, 0);
  EXPECT_EQ(all.end_ps, 1'000'000);
  QTest::keyClick(&view, Qt::Key_W);
  EXPECT_NEAR(view.state().viewport.window().length(), 1e6 / 1.5, 1);
  QTest::keyClick(&view, Qt::Key_D);
  const gui::Window panned = view.state().viewport.window();
  EXPECT_GT(panned.begin_ps, all.begin_ps);
  QTest::keyClick(&view, Qt::Key_Left, Qt::AltModifier);
  EXPECT_NEAR(view.state().viewport.window().begin_ps, (1e6 - 1e6 / 1.5) / 2, 1);  // back to the zoom
  QTest::keyClick(&view, Qt::Key_Right, Qt::AltModifier);
  EXPECT_EQ(view.state().viewport.window().begin_ps, panned.begin_ps);
  QTest::keyClick(&view, Qt::Key_0);
  EXPECT_EQ(view.state().viewport.window().end_ps, all.end_ps);

  // A wheel notch over x = 250 ns zooms in and keeps 250 ns under the cursor.
  const QPointF cursor(kLanesLeft + 250, 100);
  const double time_under_cursor = view.time_at(cursor.x());
  QWheelEvent wheel(cursor, view.mapToGlobal(cursor), {}, QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(&view, &wheel);
  const gui::Window zoomed = view.state().viewport.window();
  EXPECT_NEAR(zoomed.length(), 1e6 / 1.25, 1);
  EXPECT_NEAR(view.time_at(cursor.x()), time_under_cursor, 1e-6);
}

// Large layouts: identical ranks are one lane group (a click expands it, and selecting a span of
// a hidden rank does too); the pipeline view shows the ranks the timeline lists, one per stage;
// a fold says its category.
TEST(TimelineViewTest, RankGroupsExpandAndThePipelineViewShowsOneRankPerStage) {
  test_support::TimelineMaker maker({0, 0, 0, 0}, {"compute"});
  for (std::int32_t rank = 0; rank < 4; ++rank) {
    maker.add(rank, 0, Category::kForward, "f", 0, 400'000);
    maker.add(rank, 0, Category::kBackward, "b", 400'000, 1'000'000);
  }
  maker.timeline->metadata["pipeline_stage_ranks"] = "0,2";
  gui::TimelineView view;
  view.resize(kWidth + 20, 300);
  view.set_documents({gui::make_document("tp", "test", *maker.timeline)});
  using Kind = gui::LayoutEntry::Kind;
  ASSERT_EQ(view.state().layout.entries().size(), 3u);  // node, "ranks 0–3 · 4 identical", rank 0
  EXPECT_EQ(view.state().layout.entries()[1].kind, Kind::kRanks);
  QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(50, gui::ViewGeometry::kAxisHeight + 18 + 5));  // the group header
  EXPECT_EQ(view.state().layout.entries().size(), 1u + 4);  // node, then every rank
  QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(50, gui::ViewGeometry::kAxisHeight + 18 + 5));  // rank 0's lane: a span
  view.toggle_rank_group(0, 0);  // grouped again
  ASSERT_EQ(view.state().layout.entries().size(), 3u);
  view.select(gui::SpanRef{0, 6}, /*reveal=*/true);  // rank 3's forward span, hidden in the group
  EXPECT_NE(view.state().layout.entry_of_row(0, 3), nullptr);

  ASSERT_TRUE(view.set_pipeline_view(true));
  std::vector<std::size_t> rows;
  for (const gui::LayoutEntry& entry : view.state().layout.entries()) {
    if (entry.kind == Kind::kRow) rows.push_back(entry.row);
  }
  EXPECT_EQ(rows, (std::vector<std::size_t>{0, 2}));
  ASSERT_TRUE(view.set_pipeline_view(false));
  view.set_documents({known_document()});
  EXPECT_FALSE(view.set_pipeline_view(true));  // no stages listed

  const trace::Timeline& timeline = view.state().documents[0]->index->timeline();
  EXPECT_EQ(gui::item_label({0, 1, 0, 200, Category::kBackward, false}, timeline.spans[0], timeline), "backward · 200 ops");
  EXPECT_EQ(gui::item_label({0, 1, 0, 5, Category::kForward, true}, timeline.spans[0], timeline), "mixed · 5 ops");
}

TEST(TimelineViewTest, ClickingSelectsASpanAndANodeHeaderCollapsesItsLanes) {
  gui::TimelineView view;
  view.resize(kWidth + 20, 300);
  view.set_documents({known_document()});
  QSignalSpy selections(&view, &gui::TimelineView::selection_changed);
  const int comm = row_middle(36);
  QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(static_cast<int>(view.x_of(750'000)), comm));
  ASSERT_TRUE(view.state().selected.has_value());
  EXPECT_EQ(view.state().selected->span, 2u);
  EXPECT_EQ(view.state().related.predecessors, (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(selections.count(), 1);
  const int rows_before = view.state().layout.height();
  QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(50, gui::ViewGeometry::kAxisHeight + 5));  // node 0's header
  EXPECT_EQ(view.state().layout.height(), rows_before - 2 * 18);
}

TEST(TableModelTest, EveryTablePassesTheModelTester) {
  const auto a = known_document();
  const auto b = gui::load_document(kScenarios + "../tests/data/pytorch_profiler_trace.json");
  gui::TableModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_table(gui::summary_table({a, b}));
  EXPECT_EQ(model.columnCount(), 3);
  EXPECT_EQ(model.data(model.index(0, 0)).toString(), "step time");
  EXPECT_EQ(model.data(model.index(0, 1)).toString(), "1.00 µs");
  EXPECT_DOUBLE_EQ(model.data(model.index(0, 1), Qt::UserRole).toDouble(), 1e-6);
  model.set_table(gui::peak_memory_table({a, b}));
  EXPECT_EQ(model.rowCount(), 0);  // neither trace has memory samples: no row of dashes per rank
  {
    test_support::TimelineMaker maker({0, 1, 2},
                                      {"compute"});  // a trace holding ranks 0 and 2 of 3
    maker.add(0, 0, Category::kForward, "fwd", 0, 10);
    maker.timeline->memory_series = {"parameters"};
    const trace::StringId cause = maker.timeline->strings.intern("parameters");
    maker.timeline->memory = {{0, 0, {2'000'000'000}, cause}, {2, 0, {3'000'000'000}, cause}};
    maker.timeline->ranks[1].traced = false;
    model.set_table(gui::peak_memory_table(
        {gui::make_document("partial", "test", std::move(*maker.timeline))}));
    ASSERT_EQ(model.rowCount(), 2);
    EXPECT_EQ(model.data(model.index(1, 0)).toString(), "2");
    EXPECT_EQ(model.data(model.index(1, 1)).toString(), "3.00");
  }
  model.set_table(gui::compare_table(*a, *b));
  EXPECT_EQ(model.headerData(4, Qt::Horizontal).toString(), "error (B − A) / A");  // two measured traces
  model.set_table(gui::search_table(*a, 0, gui::SpanQuery::parse("tiny rank:1"), 10));
  EXPECT_EQ(model.rowCount(), 10);
  EXPECT_EQ(model.table().spans[3].span, 6u);
  model.set_table({});
  EXPECT_EQ(model.rowCount(), 0);
}

// The memory chart stacks the last timeline's memory by category, draws the device's capacity
// and marks where the rank first needs more, naming the allocation; in GB.
TEST(MemoryChartTest, StacksByCategoryDrawsTheCapacityAndMarksTheOutOfMemory) {
  test_support::TimelineMaker maker({0}, {"compute"});
  maker.add(0, 0, Category::kForward, "fwd", 0, 1'000'000);  // 1 µs
  trace::Timeline& timeline = *maker.timeline;
  timeline.memory_series = {"parameters", "activations"};
  timeline.metadata["memory_capacity_bytes"] = "35000000000";  // 35 GB
  timeline.memory.push_back({0, 0, {10'000'000'000, 0}, timeline.strings.intern("model")});
  timeline.memory.push_back({0, 500'000, {10'000'000'000, 30'000'000'000}, timeline.strings.intern("layer1.activations")});
  gui::MemoryChart chart;
  chart.resize(600, 300);
  chart.set_documents({gui::make_document("oom", "test", std::move(timeline))});
  const auto geometry = chart.geometry();
  ASSERT_TRUE(geometry);
  EXPECT_DOUBLE_EQ(geometry->top_bytes, 40e9 * 1.08);  // the peak (40 GB) is above the capacity
  const auto oom = chart.out_of_memory();
  ASSERT_TRUE(oom);
  EXPECT_DOUBLE_EQ(oom->time_ps, 500'000);
  EXPECT_EQ(oom->cause, "layer1.activations");

  const QImage image = chart.grab().toImage();
  const auto pixel = [&](double time_ps, double bytes) {
    return QColor(image.pixel(static_cast<int>(geometry->x_of(time_ps)), static_cast<int>(geometry->y_of(bytes))));
  };
  EXPECT_EQ(pixel(250'000, 5e9), gui::memory_series_color("parameters"));   // first half: parameters only
  EXPECT_EQ(pixel(250'000, 20e9), QColor(Qt::white));                      // nothing above them yet
  EXPECT_EQ(pixel(750'000, 5e9), gui::memory_series_color("parameters"));   // then activations on top
  EXPECT_EQ(pixel(750'000, 25e9), gui::memory_series_color("activations"));
  EXPECT_EQ(pixel(500'000 + 2, 38e9), gui::kCapacityColor);                // the OOM marker
  int capacity_pixels = 0;  // the dashed capacity line across the first half, at 35 GB
  for (double t = 10'000; t < 250'000; t += 5'000) capacity_pixels += pixel(t, 35e9) == gui::kCapacityColor ? 1 : 0;
  EXPECT_GT(capacity_pixels, 10);
}

// One rank stepping for `step_ps`, simulated (made_by a network model) or measured.
std::shared_ptr<const gui::Document> one_step(const char* title, std::int64_t step_ps, bool simulated, int ranks = 1) {
  std::vector<std::int32_t> rank_list(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) rank_list[static_cast<std::size_t>(r)] = r;
  test_support::TimelineMaker maker(rank_list, {"compute"});
  for (int r = 0; r < ranks; ++r) maker.add(r, 0, Category::kForward, "fwd", 0, step_ps);
  maker.timeline->metadata["made_by"] = simulated ? "flow network model" : "measured: MPI + OpenBLAS on CPU ranks";
  if (simulated) maker.timeline->metadata["gpu"] = "H100 SXM5";
  if (!simulated) maker.timeline->metadata["executed_on"] = "MPI + OpenBLAS on CPU ranks (one core each)";
  return gui::make_document(title, "test", std::move(*maker.timeline));
}

// The viewer's compare table follows dtsim compare: error = (predicted − measured) / measured
// whichever was opened first, both sides labelled; between two predictions (a what-if), B against
// the first opened, A. Timelines that are not comparable say so.
TEST(TableModelTest, CompareUsesOneSignConventionWithBothSidesLabelled) {
  const auto predicted = one_step("sim", 1'200'000, true);
  const auto measured = one_step("real", 1'000'000, false);
  for (const auto& [first, second] : {std::pair{predicted, measured}, std::pair{measured, predicted}}) {
    const gui::Table table = gui::compare_table(*first, *second);
    EXPECT_EQ(table.headers[1], "predicted: sim");
    EXPECT_EQ(table.headers[2], "measured: real");
    EXPECT_EQ(table.headers[4], "error (predicted − measured) / measured");
    EXPECT_EQ(table.rows[0][0].text, "step time");
    EXPECT_NEAR(table.rows[0][4].value.toDouble(), 20.0, 1e-9);  // +20 %: the prediction is slower
    bool warned = false;  // priced for an H100, run on CPU ranks
    for (const auto& row : table.rows) warned = warned || row[1].text.contains("dtsim calibrate");
    EXPECT_TRUE(warned);
  }
  const gui::Table what_if = gui::compare_table(*one_step("baseline", 1'000'000, true), *one_step("what-if", 1'500'000, true, 2));
  EXPECT_EQ(what_if.headers[1], "B: what-if");
  EXPECT_EQ(what_if.headers[2], "A: baseline");
  EXPECT_NEAR(what_if.rows[0][4].value.toDouble(), 50.0, 1e-9);
  EXPECT_TRUE(what_if.rows.back()[1].text.contains("has 2 ranks")) << what_if.rows.back()[1].text.toStdString();
}

TEST(DocumentTest, PyTorchProfilerTracesOpenWithNestingAndNcclCategories) {
  const auto document = gui::load_document(kScenarios + "../tests/data/pytorch_profiler_trace.json");
  const trace::Timeline& timeline = document->index->timeline();
  ASSERT_EQ(timeline.spans.size(), 9u);
  std::map<std::string, Category> categories;
  for (const trace::Span& span : timeline.spans) categories[timeline.strings.at(span.name).substr(0, 21)] = span.category;
  EXPECT_EQ(categories.at("ncclDevKernel_AllRedu"), Category::kAllReduce);
  EXPECT_EQ(categories.at("ncclDevKernel_AllGath"), Category::kAllGather);
  EXPECT_EQ(categories.at("Memcpy HtoD (Pinned -"), Category::kMemcpy);
  EXPECT_EQ(categories.at("sm90_xmma_gemm_bf16bf"), Category::kCompute);  // a GEMM kernel
  EXPECT_EQ(categories.at("aten::linear"), Category::kOther);            // a CPU op
  // ProfilerStep ⊃ aten::linear ⊃ aten::addmm ⊃ cudaLaunchKernel: four depths on the CPU thread.
  std::uint8_t deepest = 0;
  for (const gui::Row& row : document->index->rows()) deepest = std::max(deepest, row.depth);
  EXPECT_EQ(deepest, 3);
}

// ---- The window ---------------------------------------------------------------------------

class MainWindowTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(directory_.isValid()); }
  QString write(const QString& name, const std::string& text) {
    const QString path = directory_.filePath(name);
    std::ofstream(path.toStdString()) << text;
    return path;
  }
  // Opens the files and waits for them to load.
  void open(const QStringList& paths) {
    QSignalSpy finished(&window_, &gui::MainWindow::loads_finished);
    window_.open_files(paths);
    ASSERT_TRUE(finished.wait(30'000));
  }
  QTemporaryDir directory_;
  gui::MainWindow window_;
};

TEST_F(MainWindowTest, BadFilesLeaveAMessageAndNoDocument) {
  std::string valid;
  {
    std::ostringstream out;
    trace::write_chrome_trace(known_document()->index->timeline(), out);
    valid = out.str();
  }
  const QString huge = directory_.filePath("huge.json");
  {
    std::ofstream out(huge.toStdString());
  }
  std::filesystem::resize_file(huge.toStdString(), gui::kMaxTraceBytes + 1);  // sparse: no disk used
  const std::vector<std::pair<QString, QString>> cases = {
      {write("malformed.json", "{\"traceEvents\": [{\"ph\": \"X\", }]}"), "not valid JSON"},
      {write("truncated.json", valid.substr(0, valid.size() / 2)), "not valid JSON"},
      {write("empty.json", ""), "empty"},
      {write("no_spans.json", "{\"traceEvents\": []}"), "no spans"},
      {directory_.filePath("missing.json"), "cannot read"},
      {huge, "GB is more than the 4.3 GB"},
  };
  for (const auto& [path, expected] : cases) {
    open({path});
    EXPECT_TRUE(window_.error_text().contains(path)) << window_.error_text().toStdString();
    EXPECT_TRUE(window_.error_text().contains(expected)) << window_.error_text().toStdString();
    EXPECT_TRUE(window_.view()->state().documents.empty());
  }
  open({write("valid.json", valid)});
  EXPECT_TRUE(window_.error_text().isEmpty());
  EXPECT_EQ(window_.view()->state().documents.size(), 1u);
}

// The warnings dtsim run prints (OOM, R > 1, …) are in an amber banner: from the report.json
// written with the timeline, never from another run's report left in the folder.
TEST_F(MainWindowTest, TheReportsWarningsAreInABanner) {
  const std::filesystem::path folder = directory_.filePath("m1").toStdString();
  const scenarios::Scenario m1 = scenarios::load_scenario(kScenarios + "m1_7b_ddp_memory.toml");
  scenarios::write_outputs(scenarios::run_scenario(m1), folder);
  open({QString::fromStdString((folder / "timeline.json").string())});
  EXPECT_TRUE(window_.warnings_text().contains("⚠ OOM: rank 0 needs")) << window_.warnings_text().toStdString();
  EXPECT_TRUE(window_.error_text().isEmpty());

  // Another run's report written alone beside it (dtsim run --no-timeline) names no timeline.
  const scenarios::Scenario c1 = scenarios::load_scenario(kScenarios + "c1_7b_ddp_8xh100.toml");
  scenarios::write_outputs(scenarios::run_scenario(c1), folder, /*timeline=*/false);
  window_.close_all();
  open({QString::fromStdString((folder / "timeline.json").string())});
  EXPECT_TRUE(window_.warnings_text().isEmpty()) << window_.warnings_text().toStdString();
}

// Panels fit their text: every table column is as wide as its widest cell (nothing elided); a
// span selected with reveal is on screen whole — its lane in view, its extent inside the lanes —
// and its details show without scrolling.
TEST_F(MainWindowTest, PanelsFitTheirTextAndASelectedSpanIsShownWhole) {
  const std::filesystem::path folder = directory_.filePath("c1").toStdString();
  scenarios::write_outputs(scenarios::run_scenario(scenarios::load_scenario(kScenarios + "c1_7b_ddp_8xh100.toml")), folder);
  window_.setAttribute(Qt::WA_DontShowOnScreen);
  window_.resize(1600, 900);
  window_.show();
  open({QString::fromStdString((folder / "timeline.json").string())});
  const trace::Timeline& timeline = window_.view()->state().documents.at(0)->index->timeline();
  std::uint32_t last_rank_span = 0;  // the last span of rank 7: its lane starts below the fold
  for (std::uint32_t s = 0; s < timeline.spans.size(); ++s) {
    if (timeline.spans[s].rank == 7) last_rank_span = s;
  }
  window_.view()->select(gui::SpanRef{0, last_rank_span}, /*reveal=*/true);
  for (int round = 0; round < 3; ++round) QApplication::processEvents();  // the docks' layout settles

  for (QTableView* table : window_.findChildren<QTableView*>()) {
    if (!table->isVisible() || table->model() == nullptr) continue;
    const QFontMetrics metrics(table->font());
    for (int column = 0; column < table->model()->columnCount(); ++column) {
      for (int row = 0; row < std::min(table->model()->rowCount(), 40); ++row) {
        const QString text = table->model()->data(table->model()->index(row, column)).toString();
        EXPECT_LE(metrics.horizontalAdvance(text), table->columnWidth(column)) << text.toStdString();
      }
    }
  }
  const gui::TimelineView& view = *window_.view();
  const gui::LayoutEntry* lane = view.state().layout.entry_of_row(0, view.state().documents[0]->index->row_of(last_rank_span));
  ASSERT_NE(lane, nullptr);
  const int lanes_height = view.height() - gui::ViewGeometry::kAxisHeight;
  EXPECT_GE(lane->y, view.state().scroll_y);
  EXPECT_LE(lane->y + lane->height, view.state().scroll_y + lanes_height);
  const trace::Span& span = timeline.spans[last_rank_span];
  const double offset = view.state().offset_ps(0);
  EXPECT_GE(view.x_of(static_cast<double>(span.start_ps) - offset), gui::ViewGeometry::kGutterWidth);
  EXPECT_LE(view.x_of(static_cast<double>(span.end_ps) - offset), view.width());
  EXPECT_TRUE(window_.details_text().contains("duration")) << window_.details_text().toStdString();
  EXPECT_EQ(window_.details()->verticalScrollBar()->maximum(), 0);  // the whole of the details in view
}

TEST_F(MainWindowTest, TwoTimelinesAreComparedAndExportedBack) {
  const QString path = directory_.filePath("known.json");
  {
    std::ofstream out(path.toStdString());
    trace::write_chrome_trace(known_document()->index->timeline(), out);
  }
  open({path, path});
  ASSERT_EQ(window_.view()->state().documents.size(), 2u);
  EXPECT_EQ(window_.view()->state().layout.entries().front().kind, gui::LayoutEntry::Kind::kTitle);
  EXPECT_EQ(window_.compare_model()->rowCount(), 4 + 3);  // step, compute, comm, exposed; 3 categories
  EXPECT_EQ(window_.compare_model()->data(window_.compare_model()->index(0, 4)).toString(), "+0.0 %");

  const QString png = directory_.filePath("view.png");
  ASSERT_TRUE(window_.export_png(png));
  EXPECT_FALSE(QImage(png).isNull());
  const QString json = directory_.filePath("copy.json");
  ASSERT_TRUE(window_.export_chrome_json(json));
  EXPECT_EQ(trace::read_chrome_trace_file(json.toStdString()).spans.size(), 1003u);
  EXPECT_FALSE(window_.export_png(directory_.filePath("no/such/dir/view.png")));
  EXPECT_TRUE(window_.error_text().contains("cannot write"));
}

TEST_F(MainWindowTest, SearchSelectsAndDetailsShowRates) {
  window_.add_document(known_document());
  window_.search_field()->setText("cat:all_reduce");
  emit window_.search_field()->returnPressed();
  ASSERT_EQ(window_.search_model()->rowCount(), 1);
  window_.view()->select(window_.search_model()->table().spans.front(), true);
  EXPECT_TRUE(window_.details_text().contains("ar"));
  EXPECT_TRUE(window_.details_text().contains("waited for 1 op(s)"));
  window_.search_field()->setText("rank:x");
  emit window_.search_field()->returnPressed();
  EXPECT_EQ(window_.search_model()->rowCount(), 0);  // no stale results
  window_.close_all();
  EXPECT_FALSE(window_.view()->state().selected.has_value());
}

TEST_F(MainWindowTest, AScenarioRunsInTheAppAndAWhatIfLandsNextToIt) {
  gui::ScenarioPanel& panel = *window_.scenario_panel();
  panel.set_scenario_path(QString::fromStdString(kScenarios + "default.toml"));
  QSignalSpy stopped(&panel, &gui::ScenarioPanel::stopped);
  panel.run();
  EXPECT_TRUE(panel.running());
  ASSERT_TRUE(stopped.wait(60'000));
  ASSERT_EQ(window_.view()->state().documents.size(), 1u);

  panel.bucket_field()->setValue(100);
  panel.choice_field("collectives.all_reduce")->setCurrentText("ring");
  EXPECT_EQ(panel.overrides(), (QStringList{"ddp.bucket_cap_mb=100", "collectives.all_reduce=ring"}));
  panel.run();
  ASSERT_TRUE(stopped.wait(60'000));
  ASSERT_EQ(window_.view()->state().documents.size(), 2u);
  EXPECT_NE(window_.view()->state().documents[1]->title.find("bucket_cap_mb=100"), std::string::npos);
  EXPECT_GT(window_.compare_model()->rowCount(), 2);

  panel.degree_field("parallel.tp")->setValue(3);  // 32 heads do not split over 3 (rule R1)
  panel.run();
  ASSERT_TRUE(stopped.wait(60'000));
  EXPECT_TRUE(window_.error_text().contains("tp")) << window_.error_text().toStdString();
  EXPECT_EQ(window_.view()->state().documents.size(), 2u);

  // Context parallelism from the panel: each sequence over 2 ranks, Ulysses' all-to-alls.
  ASSERT_NE(panel.degree_field("parallel.cp"), nullptr);
  ASSERT_NE(panel.choice_field("parallel.cp_scheme"), nullptr);
  panel.degree_field("parallel.tp")->setValue(0);
  panel.degree_field("parallel.cp")->setValue(2);
  panel.choice_field("parallel.cp_scheme")->setCurrentText("ulysses");
  EXPECT_TRUE(panel.overrides().contains("parallel.cp=2"));
  EXPECT_TRUE(panel.overrides().contains("parallel.cp_scheme=ulysses"));
  ASSERT_NE(panel.degree_field("parallel.ep"), nullptr);
  panel.run();
  ASSERT_TRUE(stopped.wait(60'000));
  ASSERT_EQ(window_.view()->state().documents.size(), 3u) << window_.error_text().toStdString();
  EXPECT_NE(window_.view()->state().documents[2]->title.find("parallel.cp=2"), std::string::npos);
}

TEST_F(MainWindowTest, ALongSimulationCanBeCancelledWithoutBlockingTheWindow) {
  gui::ScenarioPanel& panel = *window_.scenario_panel();
  panel.set_scenario_path(QString::fromStdString(kScenarios + "llama2_70b_3d_1024gpu.toml"));
  QSignalSpy stopped(&panel, &gui::ScenarioPanel::stopped);
  panel.run();
  QTest::qWait(50);  // the event loop keeps running meanwhile
  panel.cancel();
  ASSERT_TRUE(stopped.wait(120'000));
  EXPECT_EQ(panel.status(), "cancelled");
  EXPECT_TRUE(window_.view()->state().documents.empty());
}

// ---- The command line ----------------------------------------------------------------------

// Runs dtsim-view offscreen (or, with `display` false, with no display and no platform chosen).
int run_viewer(const QStringList& arguments, QString* errors = nullptr, QString* output = nullptr, bool display = true) {
  QProcess process;
  QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
  if (display) {
    environment.insert("QT_QPA_PLATFORM", "offscreen");
  } else {
    for (const char* name : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) environment.remove(name);
  }
  process.setProcessEnvironment(environment);
  process.start(DTSIM_VIEW_PATH, arguments);
  if (!process.waitForFinished(120'000)) return -1;
  if (errors != nullptr) *errors = QString::fromUtf8(process.readAllStandardError());
  if (output != nullptr) *output = QString::fromUtf8(process.readAllStandardOutput());
  return process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
}

// --help and --version need no display; an unknown option is a usage error (2); a --select that
// finds nothing and a --step past the last are errors, not silent successes; without a display
// a window is refused with one message.
TEST(ViewerCommandLineTest, HelpAndVersionWithoutADisplayAndUsageErrorsExitTwo) {
  QString output, errors;
  EXPECT_EQ(run_viewer({"--help"}, &errors, &output, /*display=*/false), 0) << errors.toStdString();
  EXPECT_TRUE(output.contains("Usage: dtsim-view")) << output.toStdString();
  EXPECT_TRUE(output.contains("--export-png")) << output.toStdString();
  EXPECT_EQ(run_viewer({"--version"}, &errors, &output, false), 0);
  EXPECT_TRUE(output.startsWith("dtsim-view ")) << output.toStdString();
  EXPECT_EQ(run_viewer({"-platform", "offscreen", "-style", "fusion", "--version"}, &errors, &output, false), 0)
      << errors.toStdString();  // Qt's own options are Qt's
  EXPECT_EQ(run_viewer({"--no-such-option"}, &errors, &output, false), 2);
  EXPECT_TRUE(errors.contains("no-such-option")) << errors.toStdString();
  EXPECT_EQ(run_viewer({"timeline.json"}, &errors, &output, false), 2);
  EXPECT_TRUE(errors.contains("no display")) << errors.toStdString();
  // A what-if of a key --set gives was refused as "set twice"; it is the what-if's other value.
  const QString tiny = QString::fromStdString(kScenarios + "real/tiny_ddp_2ranks.toml");
  QTemporaryDir scratch;
  const QString both = scratch.filePath("what_if.json");
  EXPECT_EQ(run_viewer({"--scenario", tiny, "--set", "ddp.bucket_cap_mb=3", "--what-if",
                        "ddp.bucket_cap_mb=4", "--export-json", both},
                       &errors),
            0)
      << errors.toStdString();
  // --set with timeline files only was ignored without a word (--what-if was refused).
  EXPECT_EQ(run_viewer({"timeline.json", "--set", "parallel.tp=2", "--export-png", "x.png"},
                       &errors, &output, false),
            2);
  EXPECT_TRUE(errors.contains("--set changes a --scenario")) << errors.toStdString();

  QTemporaryDir directory;
  const QString png = directory.filePath("view.png");
  const QString scenario = QString::fromStdString(kScenarios + "default.toml");
  EXPECT_EQ(run_viewer({"--scenario", scenario, "--export-png", png, "--select", "no-span-is-called-this"}, &errors), 1);
  EXPECT_TRUE(errors.contains("--select no-span-is-called-this: no span matches")) << errors.toStdString();
  EXPECT_EQ(run_viewer({"--scenario", scenario, "--export-png", png, "--step", "2"}, &errors), 1);
  EXPECT_TRUE(errors.contains("--step 2: the timeline has 1 step")) << errors.toStdString();
  EXPECT_FALSE(QFile::exists(png));
}

TEST(ViewerCommandLineTest, ExportsExitZeroAndBadInputExitsNonZeroWritingNothing) {
  QTemporaryDir directory;
  const QString png = directory.filePath("default.png");
  const QString json = directory.filePath("default.json");
  EXPECT_EQ(run_viewer({"--scenario", QString::fromStdString(kScenarios + "default.toml"), "--export-png", png,
                        "--export-json", json, "--size", "800x400"}),
            0);
  EXPECT_EQ(QImage(png).size(), QSize(800, 400));
  EXPECT_GT(trace::read_chrome_trace_file(json.toStdString()).spans.size(), 1000u);

  const QString bad = directory.filePath("bad.json");
  std::ofstream(bad.toStdString()) << "[{\"ph\": \"X\"";
  QString errors;
  const QString out = directory.filePath("bad.png");
  EXPECT_EQ(run_viewer({bad, "--export-png", out}, &errors), 1);
  EXPECT_TRUE(errors.contains("not valid JSON")) << errors.toStdString();
  EXPECT_FALSE(QFile::exists(out));
  EXPECT_EQ(run_viewer({bad, "--export-png", out, "--size", "12"}, &errors), 2);
  EXPECT_TRUE(errors.contains("--size"));
  // A good file after the bad one does not hide it (it cleared the message: exit 0, one side
  // missing).
  EXPECT_EQ(run_viewer({bad, json, "--export-png", out}, &errors), 1);
  EXPECT_TRUE(errors.contains("not valid JSON")) << errors.toStdString();
  EXPECT_FALSE(QFile::exists(out));

  // A scenario key of 50,000 dotted parts overflowed toml++'s stack and crashed the viewer.
  const QString deep = directory.filePath("deep.toml");
  {
    std::ofstream text(deep.toStdString());
    text << "a";
    for (int part = 0; part < 50'000; ++part) text << ".a";
    text << " = 1\n";
  }
  EXPECT_EQ(run_viewer({"--scenario", deep, "--export-png", out}, &errors), 1);
  EXPECT_TRUE(errors.contains("a dotted key of more than 32 parts")) << errors.toStdString();
  EXPECT_EQ(errors.count("dtsim-view: "), 1) << errors.toStdString();  // Qt adds lines of its own
  EXPECT_FALSE(QFile::exists(out));
}

}  // namespace
