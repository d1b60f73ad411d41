// Whole-timeline figures (step time, R, overlap, exposed communication, time per category,
// peak memory) and the comparison of two timelines.
#include "sim/trace/timeline_stats.h"

#include <gtest/gtest.h>

#include "tests/support/timeline_maker.h"

namespace {

using trace::Category;

using test_support::TimelineMaker;

TEST(TimelineStatsTest, FiguresFollowTheReportsDefinitions) {
  TimelineMaker maker({0, 0}, {"compute", "comm"});
  // Rank 0: compute 0–60, all-reduce 40–80 (20 exposed). Rank 1: compute 0–80, all-reduce 0–20.
  maker.add(0, 0, Category::kBackward, "b", 0, 60);
  maker.add(0, 1, Category::kAllReduce, "ar", 40, 80);
  maker.add(1, 0, Category::kBackward, "b", 0, 80);
  maker.add(1, 1, Category::kAllReduce, "ar", 0, 20);
  maker.timeline->metadata["steps"] = "2";
  maker.timeline->memory_series = {"parameters", "activations"};
  maker.timeline->memory = {{0, 0, {100, 0}, 0}, {0, 10, {100, 50}, 0}, {1, 5, {100, 70}, 0}, {0, 20, {100, 10}, 0}};
  const trace::TimelineStats stats = trace::timeline_stats(*maker.timeline);
  EXPECT_EQ(stats.steps, 2);
  EXPECT_DOUBLE_EQ(stats.step_s, 80e-12 / 2);
  EXPECT_DOUBLE_EQ(stats.comm_compute_ratio, (40.0 / 60 + 20.0 / 80) / 2);
  EXPECT_DOUBLE_EQ(stats.overlap_ratio, (0.5 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(stats.exposed_comm_s, 20e-12 / 2 / 2);
  EXPECT_DOUBLE_EQ(stats.compute_s, (60e-12 + 80e-12) / 2 / 2);
  EXPECT_DOUBLE_EQ(stats.comm_s, (40e-12 + 20e-12) / 2 / 2);
  EXPECT_DOUBLE_EQ(stats.seconds_by_category[static_cast<std::size_t>(Category::kBackward)], 140e-12 / 2 / 2);
  EXPECT_EQ(stats.peak_memory_bytes, (std::vector<std::int64_t>{150, 170}));
  const auto curve = trace::memory_curve(*maker.timeline, 0);
  ASSERT_EQ(curve.size(), 3u);
  EXPECT_EQ(curve[1].bytes, 150);
  EXPECT_EQ(curve[2].time_ps, 20);
}

// A "steps" that is not a positive whole number is no record (\"2.5\" divided by 2, \"0\" by 1).
TEST(TimelineStatsTest, OnlyAPositiveWholeNumberOfStepsDividesTheFigures) {
  TimelineMaker maker({0}, {"compute"});
  maker.add(0, 0, Category::kForward, "f", 0, 100);
  for (const auto& [text, steps] : std::vector<std::pair<std::string, std::int32_t>>{
           {"4", 4}, {"2.5", 1}, {"0", 1}, {"-3", 1}, {"1e9", 1}, {"99999999999", 1}, {"", 1}}) {
    maker.timeline->metadata["steps"] = text;
    EXPECT_EQ(trace::timeline_stats(*maker.timeline).steps, steps) << text;
  }
}

TEST(TimelineStatsTest, CompareListsStepExposedAndEachCategoryWithRelativeDifference) {
  trace::TimelineStats a, b;
  a.step_s = 1.0;
  b.step_s = 1.2;
  a.exposed_comm_s = 0;
  b.exposed_comm_s = 0.1;
  a.seconds_by_category[static_cast<std::size_t>(Category::kForward)] = 0.5;
  b.seconds_by_category[static_cast<std::size_t>(Category::kForward)] = 0.4;
  const auto rows = trace::compare_timelines(a, b);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].what, "step time");
  EXPECT_NEAR(*rows[0].relative(), 0.2, 1e-12);
  EXPECT_EQ(rows[3].what, "exposed communication");
  EXPECT_FALSE(rows[3].relative().has_value());
  EXPECT_EQ(rows[4].what, "forward");
  EXPECT_NEAR(rows[4].delta_s(), -0.1, 1e-12);
}

}  // namespace

#include "sim/trace/comparison.h"

namespace {

// Two traces of one job that hold different ranks are said to — also when they hold as many
// (ranks 0–1 against 2–3 pair no op; counting the ranks alone saw nothing to warn of).
TEST(ComparisonTest, TracesOfDifferentRanksOfOneJobAreWarnedOf) {
  trace::Timeline first, second;
  for (trace::Timeline* timeline : {&first, &second}) {
    timeline->metadata["ranks"] = "4";
    timeline->ranks = {{"rank 0", 0}, {"rank 1", 0}, {"rank 2", 1}, {"rank 3", 1}};
  }
  first.ranks[2].traced = first.ranks[3].traced = false;
  second.ranks[0].traced = second.ranks[1].traced = false;
  for (trace::Timeline* timeline : {&first, &second}) {  // a span of work on each traced rank
    for (std::int32_t rank = 0; rank < 4; ++rank) {
      if (timeline->ranks[rank].traced)
        timeline->spans.push_back({0, 10, rank, 0, Category::kForward});
    }
  }
  const auto warnings = trace::comparability_warnings(first, second, "A", "B");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("A holds 2 of the job's 4 ranks and B holds 2, 0 of them the same"),
            std::string::npos)
      << warnings[0];
  EXPECT_TRUE(trace::comparability_warnings(first, first, "A", "A").empty());
}

// Steps are compared as the figures divide by them: "03" is 3 steps, and a count that is not
// one is named for what it is, the one step its figures are taken over (the warning printed the
// raw texts, "3 … two", while the figures divided by 3 and 1).
TEST(ComparisonTest, StepCountsAreComparedAsTheFiguresReadThem) {
  trace::Timeline first, second;
  first.metadata["steps"] = "3";
  second.metadata["steps"] = "03";
  EXPECT_TRUE(trace::comparability_warnings(first, second, "A", "B").empty());
  second.metadata["steps"] = "2";
  auto warnings = trace::comparability_warnings(first, second, "A", "B");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "different steps: 3 in A, 2 in B");
  second.metadata["steps"] = "two";
  warnings = trace::comparability_warnings(first, second, "A", "B");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(
      warnings[0],
      "B's \"steps\" metadata, \"two\", is not a step count: its figures are taken over one step");
}

// A PyTorch profiler trace of one GPU holds its host process too (CPU ops only): not a rank.
TEST(ComparisonTest, APyTorchTracesHostProcessIsNotARank) {
  TimelineMaker one_gpu({0, 0}, {"stream 7", "cpu"});
  one_gpu.add(0, 0, Category::kForward, "gemm", 0, 10);
  one_gpu.add(1, 1, Category::kOther, "aten::linear", 0, 10);
  TimelineMaker one_rank({0}, {"compute"});
  one_rank.add(0, 0, Category::kForward, "gemm", 0, 10);
  EXPECT_TRUE(
      trace::comparability_warnings(*one_rank.timeline, *one_gpu.timeline, "A", "B").empty());
  EXPECT_EQ(trace::compare_runs(*one_rank.timeline, *one_gpu.timeline).measured_ops,
            1u);  // not its CPU op
  TimelineMaker two_ranks({0, 0}, {"compute"});
  two_ranks.add(0, 0, Category::kForward, "gemm", 0, 10);
  two_ranks.add(1, 0, Category::kForward, "gemm", 0, 10);
  const auto warnings =
      trace::comparability_warnings(*two_ranks.timeline, *one_gpu.timeline, "A", "B");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("A has 2 ranks and B has 1"), std::string::npos) << warnings[0];
}

// The packet model draws a collective's steps on a lane under it: the op counts, its steps do
// not (a packet timeline's all-reduce time read as twice the report's, and compare said +100 %).
TEST(ComparisonTest, AnAlgorithmsStepsCountInNoFigureAndMatchNoOp) {
  test_support::TimelineMaker packet({0}, {"comm", "comm steps"});
  packet.add(0, 0, Category::kAllReduce, "ar", 0, 100);
  const trace::StringId step = packet.timeline->strings.intern(trace::kAlgorithmStepKind);
  packet.add(0, 1, Category::kAllReduce, "reduce-scatter step 0", 0, 50).kind = step;
  packet.add(0, 1, Category::kAllReduce, "all-gather step 0", 50, 100).kind = step;
  test_support::TimelineMaker flow({0}, {"comm"});
  flow.add(0, 0, Category::kAllReduce, "ar", 0, 100);
  const trace::Comparison comparison = trace::compare_runs(*packet.timeline, *flow.timeline);
  EXPECT_EQ(comparison.predicted_ops, 1u);
  EXPECT_EQ(comparison.matched_ops, 1u);
  for (const trace::Difference& figure : comparison.figures) {
    EXPECT_EQ(figure.a_s, figure.b_s) << figure.what;
  }
}

TEST(ComparisonTest, OpsMatchByRankNameAndOccurrenceAndGiveTheMape) {
  test_support::TimelineMaker predicted({0, 0}, {"compute", "comm"});
  const trace::StringId matmul = predicted.timeline->strings.intern("matmul");
  predicted.add(0, 0, Category::kForward, "f", 0, 110).kind = matmul;    // +10 %
  predicted.add(0, 0, Category::kForward, "f", 200, 280).kind = matmul;  // second "f": −20 %
  predicted.add(1, 1, Category::kAllReduce, "ar", 0, 50);   // +25 %
  predicted.add(1, 1, Category::kAllReduce, "only_predicted", 60, 70);
  test_support::TimelineMaker measured({0, 0}, {"compute", "comm"});
  measured.add(0, 0, Category::kForward, "f", 0, 100);
  measured.add(0, 0, Category::kForward, "f", 150, 250);
  measured.add(1, 1, Category::kAllReduce, "ar", 0, 40);
  measured.add(1, 0, Category::kAllReduce, "ar", 100, 140);  // a second "ar" the prediction lacks
  const trace::Comparison comparison = trace::compare_runs(*predicted.timeline, *measured.timeline);
  EXPECT_EQ(comparison.matched_ops, 3u);
  ASSERT_TRUE(comparison.op_mape.has_value());
  EXPECT_NEAR(*comparison.op_mape, (0.10 + 0.20 + 0.25) / 3, 1e-12);
  ASSERT_EQ(comparison.worst_ops.size(), 3u);
  EXPECT_EQ(comparison.worst_ops[0].name, "ar");
  EXPECT_EQ(comparison.worst_ops[1].occurrence, 1u);
  EXPECT_NEAR(comparison.worst_ops[1].error(), -0.2, 1e-12);
  // Figures: measured is the reference, the error is the prediction's.
  EXPECT_EQ(comparison.figures[0].what, "step time");
  EXPECT_NEAR(*comparison.figures[0].relative(), (280.0 - 250.0) / 250.0, 1e-12);
  const auto json = trace::comparison_to_json(comparison);
  EXPECT_EQ(json["ops"]["matched"], 3);
  EXPECT_NEAR(json["figures"][0]["error"].get<double>(), 0.12, 1e-12);

  // By the predicted span's kind, else its category (these spans of "ar" have no kind).
  ASSERT_EQ(comparison.by_kind.size(), 2u);
  EXPECT_EQ(comparison.by_kind[0].kind, "all_reduce");
  EXPECT_EQ(comparison.by_kind[0].ops, 1u);
  EXPECT_NEAR(comparison.by_kind[0].mape, 0.25, 1e-12);
  EXPECT_EQ(comparison.by_kind[1].kind, "matmul");
  EXPECT_EQ(comparison.by_kind[1].ops, 2u);
  EXPECT_NEAR(comparison.by_kind[1].mape, (0.10 + 0.20) / 2, 1e-12);
  EXPECT_NEAR(json["ops"]["by_kind"]["matmul"]["error"].get<double>(), (190.0 - 200.0) / 200.0, 1e-12);
  EXPECT_EQ(trace::matched_ops_csv(comparison),
            "rank,op,occurrence,kind,predicted_s,measured_s,error\n"
            "0,\"f\",0,matmul,1.1e-10,1e-10,0.1\n"
            "0,\"f\",1,matmul,8e-11,1e-10,-0.2\n"
            "1,\"ar\",0,all_reduce,5e-11,4e-11,0.25\n");
}

}  // namespace
