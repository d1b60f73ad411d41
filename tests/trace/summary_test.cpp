// Interval arithmetic and per-rank metrics from hand-built timelines.
#include "sim/trace/summary.h"

#include <gtest/gtest.h>

namespace {

using trace::Category;
using trace::Interval;

trace::Span span(std::int32_t rank, std::uint16_t stream, Category category, std::int64_t start,
                 std::int64_t end, std::int64_t bytes = 0) {
  trace::Span s;
  s.rank = rank;
  s.stream = stream;
  s.category = category;
  s.start_ps = start;
  s.end_ps = end;
  s.bytes = bytes;
  return s;
}

TEST(IntervalTest, MergeJoinsOverlappingAndTouchingIntervals) {
  const auto merged = trace::merge_intervals({{5, 10}, {0, 3}, {3, 4}, {8, 12}, {20, 20}});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].begin, 0);
  EXPECT_EQ(merged[0].end, 4);
  EXPECT_EQ(merged[1].begin, 5);
  EXPECT_EQ(merged[1].end, 12);
  EXPECT_EQ(trace::total_length(merged), 11);
}

TEST(IntervalTest, LengthNotCovered) {
  // a = [0,10) ∪ [20,30); b = [5,8) ∪ [9,25): uncovered = [0,5) + [8,9) + [25,30) = 11.
  const std::vector<Interval> a = {{0, 10}, {20, 30}};
  const std::vector<Interval> b = {{5, 8}, {9, 25}};
  EXPECT_EQ(trace::length_not_covered(a, b), 11);
  EXPECT_EQ(trace::length_not_covered(a, {}), 20);
  EXPECT_EQ(trace::length_not_covered({}, b), 0);
  EXPECT_EQ(trace::length_not_covered(a, {{-5, 100}}), 0);
}

TEST(SummaryTest, ExposedCommunicationIsCommunicationOutsideCompute) {
  // Rank 0: compute [0,10) and [12,14) on stream 0; all-reduce [5,20) on stream 1.
  // Communication 15; overlapped by compute during [5,10) and [12,14): exposed 15 − 7 = 8.
  trace::Timeline timeline;
  timeline.ranks.resize(2);
  timeline.spans = {span(0, 0, Category::kForward, 0, 10), span(0, 0, Category::kBackward, 12, 14),
                    span(0, 1, Category::kAllReduce, 5, 20, 1000),
                    span(1, 0, Category::kForward, 0, 4)};
  const auto summaries = trace::summarize_ranks(timeline);
  ASSERT_EQ(summaries.size(), 2u);
  const trace::RankSummary& rank0 = summaries[0];
  EXPECT_EQ(rank0.compute_ps, 12);
  EXPECT_EQ(rank0.comm_ps, 15);
  EXPECT_EQ(rank0.exposed_comm_ps, 8);
  EXPECT_EQ(rank0.comm_bytes, 1000);
  EXPECT_EQ(rank0.end_ps, 20);
  EXPECT_DOUBLE_EQ(rank0.overlap_ratio(), 1.0 - 8.0 / 15.0);
  EXPECT_DOUBLE_EQ(rank0.comm_compute_ratio(), 15.0 / 12.0);
  EXPECT_EQ(rank0.busy_ps_by_category[static_cast<std::size_t>(Category::kAllReduce)], 15);
  EXPECT_EQ(summaries[1].comm_ps, 0);
  EXPECT_DOUBLE_EQ(summaries[1].overlap_ratio(), 1.0);
}

}  // namespace
