// The viewer's logic without Qt: rows and nesting, level-of-detail folding, the time axis,
// navigation, queries, related spans, span details and the lane layout.
#include <gtest/gtest.h>

#include "tests/support/timeline_maker.h"

#include <random>
#include <set>

#include "gui/core/lane_layout.h"
#include "gui/core/span_details.h"
#include "gui/core/level_of_detail.h"
#include "gui/core/span_query.h"
#include "gui/core/time_axis.h"
#include "gui/core/timeline_index.h"
#include "gui/core/viewport.h"

namespace {

using trace::Category;

using test_support::TimelineMaker;

// ---- TimelineIndex -----------------------------------------------------------------------

TEST(TimelineIndexTest, RowsPerRankStreamAndDepthGroupedByNode) {
  TimelineMaker maker({1, 0}, {"compute", "comm"});
  maker.add(1, 0, Category::kForward, "f", 0, 10);
  maker.add(0, 1, Category::kAllReduce, "ar", 5, 20);
  maker.add(0, 0, Category::kForward, "parent", 0, 100);
  maker.add(0, 0, Category::kForward, "child", 10, 20);
  maker.add(0, 0, Category::kForward, "grandchild", 12, 15);
  maker.add(0, 0, Category::kForward, "sibling", 30, 40);
  const gui::TimelineIndex index(maker.timeline);

  ASSERT_EQ(index.rows().size(), 5u);  // rank 0: compute ×3 depths, comm; rank 1: compute
  EXPECT_EQ(index.rows()[0].spans.size(), 1u);
  EXPECT_EQ(index.rows()[1].spans.size(), 2u);  // child and sibling at depth 1
  EXPECT_EQ(index.rows()[2].depth, 2);
  EXPECT_EQ(index.rows()[3].stream, 1);
  ASSERT_EQ(index.nodes().size(), 2u);
  EXPECT_EQ(index.nodes()[0].node, 0);  // rank 1 lives on node 0: it comes first
  EXPECT_EQ(index.nodes()[0].rows, (std::vector<std::size_t>{4}));
  EXPECT_EQ(index.nodes()[1].rows, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(index.extent().begin_ps, 0);
  EXPECT_EQ(index.extent().end_ps, 100);
  EXPECT_EQ(index.row_label(index.rows()[1]), "rank 0 · compute ·1");
}

TEST(TimelineIndexTest, SpanAtFindsTheSpanUnderTheCursorOrTheNearestWithinTolerance) {
  TimelineMaker maker({0}, {"compute"});
  maker.add(0, 0, Category::kForward, "a", 0, 10);
  maker.add(0, 0, Category::kForward, "b", 20, 30);
  const gui::TimelineIndex index(maker.timeline);
  const gui::Row& row = index.rows()[0];
  EXPECT_EQ(index.span_at(row, 25, 0), 1u);
  EXPECT_EQ(index.span_at(row, 15, 0), std::nullopt);
  EXPECT_EQ(index.span_at(row, 12, 3), 0u);
  EXPECT_EQ(index.span_at(row, 18, 3), 1u);
  EXPECT_EQ(index.span_at(row, 45, 3), std::nullopt);
}

TEST(TimelineIndexTest, StepsEndAtOptimizerPhases) {
  TimelineMaker maker({0, 0}, {"compute"});
  for (std::int32_t rank = 0; rank < 2; ++rank) {
    maker.add(rank, 0, Category::kForward, "f", 0, 90);
    maker.add(rank, 0, Category::kOptimizer, "opt", 90 + rank, 100);
    maker.add(rank, 0, Category::kForward, "f", 100, 190);
    maker.add(rank, 0, Category::kOptimizer, "opt", 190, 200);
  }
  const gui::TimelineIndex index(maker.timeline);
  ASSERT_EQ(index.steps().size(), 2u);
  EXPECT_EQ(index.steps()[0].begin_ps, 0);
  EXPECT_EQ(index.steps()[0].end_ps, 100);
  EXPECT_EQ(index.steps()[1].begin_ps, 100);
  EXPECT_EQ(index.steps()[1].end_ps, 200);
}

// Two pipeline stages update apart (stage 1 at 50–55, stage 0 at 90–95, gap 35 > the phases),
// in each of two recorded steps: four phases, two steps, each ending at its last update (it
// read as four steps, and --step 3 fitted a window inside step 2).
TEST(TimelineIndexTest, PipelineStagesUpdatingApartEndOneRecordedStep) {
  TimelineMaker maker({0, 0}, {"compute"});
  for (std::int64_t step = 0; step < 2; ++step) {
    const std::int64_t at = 200 * step;
    maker.add(1, 0, Category::kForward, "f", at, at + 50);
    maker.add(1, 0, Category::kOptimizer, "opt", at + 50, at + 55);
    maker.add(0, 0, Category::kForward, "f", at, at + 90);
    maker.add(0, 0, Category::kOptimizer, "opt", at + 90, at + 95);
  }
  maker.timeline->metadata["steps"] = "2";
  const gui::TimelineIndex index(maker.timeline);
  ASSERT_EQ(index.steps().size(), 2u);
  EXPECT_EQ(index.steps()[0].end_ps, 95);
  EXPECT_EQ(index.steps()[1].begin_ps, 95);
  EXPECT_EQ(index.steps()[1].end_ps, 295);

  // Eight evenly spaced phases in two recorded steps: four each (the earliest gap took it: 1 + 7).
  TimelineMaker even({0}, {"compute"});
  for (std::int64_t phase = 0; phase < 8; ++phase)
    even.add(0, 0, Category::kOptimizer, "opt", 100 * phase + 90, 100 * phase + 100);
  even.timeline->metadata["steps"] = "2";
  const gui::TimelineIndex halves(even.timeline);
  ASSERT_EQ(halves.steps().size(), 2u);
  EXPECT_EQ(halves.steps()[0].end_ps, 400);
}

// ---- Level of detail ---------------------------------------------------------------------

std::vector<gui::DrawItem> fold(const gui::TimelineIndex& index, gui::Window window, double width_px) {
  std::vector<gui::DrawItem> items;
  gui::fold_row(index, index.rows()[0], window, width_px, 3.0, items);
  return items;
}

TEST(LevelOfDetailTest, WideSpansAreDrawnAsThemselves) {
  TimelineMaker maker({0}, {"compute"});
  for (int i = 0; i < 10; ++i) maker.add(0, 0, Category::kForward, "f", i * 100, i * 100 + 90);
  const gui::TimelineIndex index(maker.timeline);
  const auto items = fold(index, {0, 1000}, 1000);  // 1 px per ps: each span 90 px wide
  ASSERT_EQ(items.size(), 10u);
  for (const auto& item : items) EXPECT_EQ(item.count, 1u);
  EXPECT_EQ(fold(index, {250, 450}, 200).size(), 3u);  // spans 2, 3 and 4 reach into the window
}

TEST(LevelOfDetailTest, ARunOfNarrowSpansFoldsIntoOneBoxCountingThem) {
  TimelineMaker maker({0}, {"compute"});
  for (int i = 0; i < 1000; ++i) maker.add(0, 0, Category::kForward, "f", i * 10, i * 10 + 5);
  const gui::TimelineIndex index(maker.timeline);
  const auto items = fold(index, {0, 10000}, 1000);  // 10 ps per px: every span is half a pixel
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].count, 1000u);
  EXPECT_EQ(items[0].start_ps, 0);
  EXPECT_EQ(items[0].end_ps, 9995);
}

TEST(LevelOfDetailTest, FoldsBreakAtCategoryChangesGapsAndWideSpans) {
  TimelineMaker maker({0}, {"compute"});
  for (int i = 0; i < 100; ++i) maker.add(0, 0, Category::kForward, "f", i * 10, i * 10 + 5);         // 0 … 995
  for (int i = 0; i < 100; ++i) maker.add(0, 0, Category::kBackward, "b", 1000 + i * 10, 1005 + i * 10);  // … 1995
  for (int i = 0; i < 100; ++i) maker.add(0, 0, Category::kBackward, "b", 3000 + i * 10, 3005 + i * 10);  // gap of 100 px
  maker.add(0, 0, Category::kBackward, "wide", 4000, 5000);
  const gui::TimelineIndex index(maker.timeline);
  const auto items = fold(index, {0, 10000}, 1000);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].count, 100u);
  EXPECT_EQ(items[0].category, Category::kForward);
  EXPECT_EQ(items[1].count, 100u);
  EXPECT_EQ(items[1].category, Category::kBackward);
  EXPECT_EQ(items[2].count, 100u);
  EXPECT_EQ(items[2].start_ps, 3000);
  EXPECT_EQ(items[3].count, 1u);
  EXPECT_EQ(items[3].start_ps, 4000);
}

// Whatever the zoom, the items account for every span reaching into the window exactly once,
// folds hold only narrow spans, of their category unless marked mixed, and items follow each
// other in the row.
TEST(LevelOfDetailTest, ItemsAccountForEveryVisibleSpanOnceAtAnyZoom) {
  TimelineMaker maker({0}, {"compute"});
  std::mt19937_64 random(7);
  std::int64_t time = 0;
  for (int i = 0; i < 20000; ++i) {
    time += 1 + static_cast<std::int64_t>(random() % 50);  // spans never share a start: one row
    const auto length = 1 + static_cast<std::int64_t>(random() % 4 == 0 ? random() % 5000 : random() % 40);
    maker.add(0, 0, static_cast<Category>(random() % 3), "s", time, time + length);
    time += length;
  }
  const gui::TimelineIndex index(maker.timeline);
  const auto& spans = maker.timeline->spans;
  for (const double zoom : {1.0, 7.0, 100.0, 3000.0}) {
    const double length = static_cast<double>(time) / zoom;
    const gui::Window window{static_cast<double>(time) * 0.3, static_cast<double>(time) * 0.3 + length};
    const double width_px = 1600;
    const auto items = fold(index, window, width_px);
    std::size_t expected = 0;
    for (const auto& span : spans) {
      if (static_cast<double>(span.end_ps) > window.begin_ps && static_cast<double>(span.start_ps) < window.end_ps) ++expected;
    }
    std::size_t counted = 0;
    std::size_t next_position = items.empty() ? 0 : items.front().first;
    for (const auto& item : items) {
      EXPECT_EQ(item.first, next_position);
      next_position = item.first + item.count;
      counted += item.count;
      if (item.count > 1) {
        std::set<Category> categories;
        for (std::uint32_t p = item.first; p < item.first + item.count; ++p) {
          const auto& span = spans[index.rows()[0].spans[p]];
          EXPECT_LT(static_cast<double>(span.duration_ps()) * width_px / length, 3.0);
          categories.insert(span.category);
        }
        EXPECT_EQ(categories.size() > 1, item.mixed);
        EXPECT_TRUE(categories.count(item.category));
      }
    }
    EXPECT_EQ(counted, expected) << "zoom " << zoom << " items " << items.size();
    EXPECT_LE(items.size(), expected);
  }
}

TEST(LevelOfDetailTest, ZoomedOutAMillionSpansGiveAFewItemsPerPixelColumn) {
  // 100 runs of 10,000 spans: each run is 10 px wide and folds into one box of its category.
  TimelineMaker maker({0}, {"compute"});
  maker.timeline->spans.reserve(1'000'000);
  for (int i = 0; i < 1'000'000; ++i) {
    maker.add(0, 0, i % 20000 < 10000 ? Category::kForward : Category::kBackward, "s", i * 100LL, i * 100LL + 80);
  }
  const gui::TimelineIndex index(maker.timeline);
  const auto items = fold(index, index.extent(), 1000);
  ASSERT_EQ(items.size(), 100u);
  for (const auto& item : items) {
    EXPECT_EQ(item.count, 10000u);
    EXPECT_FALSE(item.mixed);
  }
}

TEST(LevelOfDetailTest, CategoriesAlternatingFasterThanAPixelFoldIntoMixedBoxes) {
  // Tensor parallelism zoomed out: all-gather, reduce-scatter, all-gather, … 0.1 px each.
  TimelineMaker maker({0}, {"tp"});
  for (int i = 0; i < 100'000; ++i) {
    maker.add(0, 0, i % 2 ? Category::kReduceScatter : Category::kAllGather, "tp", i * 10LL, i * 10LL + 8);
  }
  maker.add(0, 0, Category::kAllGather, "long", 1'000'000, 1'100'000);  // a wide span after them
  const gui::TimelineIndex index(maker.timeline);
  const auto items = fold(index, {0, 1'100'000}, 1100);  // 1,000 ps per px
  ASSERT_EQ(items.size(), 2u);
  EXPECT_TRUE(items[0].mixed);
  EXPECT_EQ(items[0].count, 100'000u);
  EXPECT_EQ(items[1].count, 1u);
  EXPECT_EQ(items[1].start_ps, 1'000'000);
}

// ---- Time axis ---------------------------------------------------------------------------

TEST(TimeAxisTest, StepsAreRoundAndLabelsUseTheStepsUnit) {
  EXPECT_DOUBLE_EQ(gui::tick_step_ps(1e9, 1000, 90), 1e8);   // 90 µs wanted → 100 µs
  EXPECT_DOUBLE_EQ(gui::tick_step_ps(1e9, 1000, 150), 2e8);  // 150 µs → 200 µs
  EXPECT_DOUBLE_EQ(gui::tick_step_ps(1e9, 1000, 30), 5e7);   // 30 µs → 50 µs
  const auto ticks = gui::axis_ticks({0, 1e9}, 1000, 0);
  ASSERT_EQ(ticks.size(), 11u);
  EXPECT_EQ(ticks[0].label, "0 µs");
  EXPECT_EQ(ticks[3].label, "300 µs");
  const auto fine = gui::axis_ticks({1.5e12, 1.5e12 + 2e6}, 1000, 1e12);  // 2 µs window, 0.5 s in
  ASSERT_FALSE(fine.empty());
  EXPECT_EQ(fine[0].label, "500000000 ns");  // 200 ns steps
  EXPECT_EQ(fine[1].label, "500000200 ns");
}

TEST(TimeAxisTest, DurationsHaveThreeSignificantDigitsInTheirUnit) {
  EXPECT_EQ(gui::format_duration(1.234e10), "12.3 ms");
  EXPECT_EQ(gui::format_duration(850e3), "850 ns");
  EXPECT_EQ(gui::format_duration(2.5e12), "2.50 s");
  EXPECT_EQ(gui::format_duration(0), "0 s");
  EXPECT_EQ(gui::format_duration(12), "12.0 ps");
}

// ---- Navigation --------------------------------------------------------------------------

TEST(ViewportTest, ZoomKeepsTheTimeUnderTheCursorInPlace) {
  gui::Viewport viewport({0, 1e9});
  const double cursor_time = viewport.time_at(250, 1000);
  viewport.zoom(4, 0.25);
  EXPECT_DOUBLE_EQ(viewport.window().length(), 2.5e8);
  EXPECT_DOUBLE_EQ(viewport.time_at(250, 1000), cursor_time);
  viewport.pan(0.5);
  EXPECT_DOUBLE_EQ(viewport.window().begin_ps, cursor_time - 0.25 * 2.5e8 + 1.25e8);
  viewport.zoom(1e9, 0.5);
  EXPECT_DOUBLE_EQ(viewport.window().length(), gui::Viewport::kMinimumLengthPs);
  EXPECT_DOUBLE_EQ(viewport.x_of(viewport.window().begin_ps, 800), 0);
}

TEST(ViewportTest, HistoryGoesBackAndForwardAndForgetsTheFutureOnANewWindow) {
  gui::ZoomHistory history;
  history.record({0, 100});
  history.record({0, 50});
  history.record({0, 50});  // unchanged: not a new entry
  history.record({10, 20});
  EXPECT_EQ(history.back().end_ps, 50);
  EXPECT_EQ(history.back().end_ps, 100);
  EXPECT_FALSE(history.can_go_back());
  EXPECT_EQ(history.forward().end_ps, 50);
  history.record({5, 6});
  EXPECT_FALSE(history.can_go_forward());
  EXPECT_EQ(history.back().end_ps, 50);
}

// ---- Queries and related spans -------------------------------------------------------------

TEST(SpanQueryTest, NameCategoryAndRankWordsMustAllHold) {
  TimelineMaker maker({0, 0, 0}, {"compute", "comm"});
  maker.add(0, 0, Category::kForward, "layer0.fwd.QKV", 0, 1);
  maker.add(1, 1, Category::kAllReduce, "ddp.bucket0.all_reduce", 0, 1);
  maker.add(2, 1, Category::kAllReduce, "ddp.bucket0.all_reduce", 0, 1);
  maker.add(2, 1, Category::kAllGather, "fsdp.layer0.all_gather", 0, 1);
  const auto& timeline = *maker.timeline;
  EXPECT_EQ(gui::SpanQuery::parse("qkv").find(timeline, 10), (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(gui::SpanQuery::parse("cat:all_reduce").find(timeline, 10), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(gui::SpanQuery::parse("cat:all_reduce rank:2").find(timeline, 10), (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(gui::SpanQuery::parse("rank:1-2 layer0").find(timeline, 10), (std::vector<std::uint32_t>{3}));
  EXPECT_EQ(gui::SpanQuery::parse("cat:all_gather cat:forward").find(timeline, 10), (std::vector<std::uint32_t>{0, 3}));
  EXPECT_EQ(gui::SpanQuery::parse("ddp").find(timeline, 1).size(), 1u);
  EXPECT_TRUE(gui::SpanQuery::parse("  ").empty());
  EXPECT_TRUE(gui::SpanQuery::parse("cat:forward").matches_whole_category(Category::kForward));
  EXPECT_FALSE(gui::SpanQuery::parse("cat:forward").matches_whole_category(Category::kBackward));
  EXPECT_THROW(gui::SpanQuery::parse("cat:allreduce"), gui::InvalidQuery);
  EXPECT_THROW(gui::SpanQuery::parse("rank:x"), gui::InvalidQuery);
  EXPECT_THROW(gui::SpanQuery::parse("rank:3-1"), gui::InvalidQuery);
}

TEST(SpanQueryTest, RelatedSpansAreDependenciesDependentsAndCollectivePeers) {
  TimelineMaker maker({0, 0}, {"compute", "comm"});
  maker.add(0, 0, Category::kBackward, "grad", 0, 10).op = 0;
  maker.add(0, 1, Category::kAllReduce, "bucket", 10, 20).op = 1;
  maker.add(0, 0, Category::kOptimizer, "step", 20, 30).op = 2;
  maker.add(1, 1, Category::kAllReduce, "bucket", 12, 20).op = 1;
  maker.add(1, 1, Category::kAllReduce, "bucket", 40, 50).op = 5;  // a later call: not a peer
  maker.timeline->dependencies = {{0, 1, 0}, {0, 2, 1}};
  const auto related = gui::related_spans(*maker.timeline, 1);
  EXPECT_EQ(related.predecessors, (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(related.successors, (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(related.peers, (std::vector<std::uint32_t>{3}));
  EXPECT_TRUE(gui::related_spans(*maker.timeline, 0).peers.empty());  // compute has no peers
}

// ---- Lane layout ---------------------------------------------------------------------------

TEST(LaneLayoutTest, CollapsedNodesHideTheirLanesAndCompareModeAddsTitles) {
  TimelineMaker maker({0, 1}, {"compute", "comm"});
  maker.add(0, 0, Category::kForward, "f", 0, 1);
  maker.add(0, 1, Category::kAllReduce, "ar", 0, 1);
  maker.add(1, 0, Category::kForward, "f", 0, 1);
  const gui::TimelineIndex index(maker.timeline);
  const gui::LaneMetrics metrics;  // node header 18, row 16 + 2
  gui::LaneLayout layout;
  layout.rebuild({&index}, {}, metrics);
  ASSERT_EQ(layout.entries().size(), 5u);  // node 0, 2 rows, node 1, 1 row
  EXPECT_EQ(layout.height(), 2 * 18 + 3 * 18);
  EXPECT_EQ(layout.entry_at(20)->kind, gui::LayoutEntry::Kind::kRow);
  EXPECT_EQ(layout.entry_at(20)->row, 0u);
  EXPECT_EQ(layout.visible(19, 40), (std::pair<std::size_t, std::size_t>{1, 3}));

  layout.rebuild({&index}, gui::LayoutChoices{{{0, 0}}, {}, {}}, metrics);
  EXPECT_EQ(layout.entries().size(), 3u);
  EXPECT_EQ(layout.entry_of_row(0, 0), nullptr);
  EXPECT_NE(layout.entry_of_row(0, 2), nullptr);

  layout.rebuild({&index, &index}, gui::LayoutChoices{{{1, 1}}, {}, {}}, metrics);
  EXPECT_EQ(layout.entries().front().kind, gui::LayoutEntry::Kind::kTitle);
  EXPECT_EQ(layout.entries().size(), 1u + 5 + 1 + 4);
}

// Consecutive ranks of a node with the same spans at the same times (a tensor-parallel group)
// are one lane group with a count, its first rank's lanes shown until it is expanded; the
// pipeline view's filter keeps the ranks it names and drops nodes left empty.
TEST(LaneLayoutTest, IdenticalRanksAreOneGroupAndAFilterKeepsTheRanksItNames) {
  TimelineMaker maker({0, 0, 0, 1}, {"compute"});
  for (std::int32_t rank : {0, 1}) maker.add(rank, 0, Category::kForward, "f", 0, 10);
  maker.add(2, 0, Category::kForward, "f", 0, 11);  // a different time: not rank 0's twin
  maker.add(3, 0, Category::kForward, "f", 0, 10);  // the same spans on another node
  const gui::TimelineIndex index(maker.timeline);
  ASSERT_EQ(index.nodes()[0].runs.size(), 2u);
  EXPECT_EQ(index.nodes()[0].runs[0].first_rank, 0);
  EXPECT_EQ(index.nodes()[0].runs[0].ranks, 2);
  EXPECT_EQ(index.nodes()[0].runs[1].ranks, 1);
  EXPECT_EQ(index.nodes()[1].runs.size(), 1u);

  const auto kinds = [](const gui::LaneLayout& layout) {
    std::vector<std::pair<gui::LayoutEntry::Kind, std::int32_t>> entries;  // kind, and the rank of a row
    for (const gui::LayoutEntry& entry : layout.entries()) entries.emplace_back(entry.kind, entry.kind == gui::LayoutEntry::Kind::kRow ? static_cast<std::int32_t>(entry.row) : -1);
    return entries;
  };
  using Kind = gui::LayoutEntry::Kind;
  gui::LaneLayout layout;
  layout.rebuild({&index}, {}, {});
  EXPECT_EQ(kinds(layout), (std::vector<std::pair<Kind, std::int32_t>>{
                               {Kind::kNode, -1}, {Kind::kRanks, -1}, {Kind::kRow, 0}, {Kind::kRow, 2}, {Kind::kNode, -1}, {Kind::kRow, 3}}));
  layout.rebuild({&index}, gui::LayoutChoices{{}, {{0, 0}}, {}}, {});  // the group expanded
  EXPECT_EQ(kinds(layout), (std::vector<std::pair<Kind, std::int32_t>>{
                               {Kind::kNode, -1}, {Kind::kRow, 0}, {Kind::kRow, 1}, {Kind::kRow, 2}, {Kind::kNode, -1}, {Kind::kRow, 3}}));
  layout.rebuild({&index}, gui::LayoutChoices{{}, {}, {{1, 3}}}, {});  // ranks 1 and 3 only
  EXPECT_EQ(kinds(layout), (std::vector<std::pair<Kind, std::int32_t>>{
                               {Kind::kNode, -1}, {Kind::kRow, 1}, {Kind::kNode, -1}, {Kind::kRow, 3}}));
  layout.rebuild({&index}, gui::LayoutChoices{{}, {}, {{3}}}, {});  // node 0 has none: left out
  EXPECT_EQ(kinds(layout), (std::vector<std::pair<Kind, std::int32_t>>{{Kind::kNode, -1}, {Kind::kRow, 3}}));
}

}  // namespace

namespace {

TEST(SpanDetailsTest, RatesFollowFromBytesFlopsAndDuration) {
  TimelineMaker maker({0}, {"compute", "comm"});
  trace::Span& all_reduce = maker.add(0, 1, trace::Category::kAllReduce, "bucket0", 2'000'000, 1'002'000'000);  // 1 ms
  all_reduce.bytes = 100'000'000;
  all_reduce.algorithm = maker.timeline->strings.intern("ring");
  trace::Span& matmul = maker.add(0, 0, trace::Category::kForward, "qkv", 0, 2'000'000'000);  // 2 ms
  matmul.flops = 1e12;
  const auto comm = gui::span_details(*maker.timeline, 0, 0);
  auto value = [](const auto& details, const std::string& field) {
    for (const auto& [name, text] : details) {
      if (name == field) return text;
    }
    return std::string("(absent)");
  };
  EXPECT_EQ(value(comm, "achieved bandwidth"), "100.0 GB/s");
  EXPECT_EQ(value(comm, "bytes"),
            "100.000 MB (100000000 B)");  // decimal units as everywhere, not MiB
  EXPECT_EQ(value(comm, "algorithm"), "ring");
  EXPECT_EQ(value(comm, "start"), "2.00 µs");
  EXPECT_EQ(value(comm, "duration"), "1.00 ms");
  EXPECT_EQ(value(comm, "FLOPs"), "(absent)");
  const auto compute = gui::span_details(*maker.timeline, 1, 0);
  EXPECT_EQ(value(compute, "achieved FLOP rate"), "500.0 TFLOP/s");
  EXPECT_EQ(value(compute, "achieved bandwidth"), "(absent)");
}

}  // namespace
