// The step report from a hand-built timeline: every figure follows from its definition.
#include "sim/trace/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <tuple>

namespace {

constexpr std::int64_t kMs = 1'000'000'000;  // picoseconds per millisecond

trace::Timeline two_rank_step() {
  // Rank 0: forward [0,40) ms, backward [40,100) ms, all-reduce [60,130) ms, optimizer
  // [130,140) ms. Rank 1 ends at 120 ms. Memory peaks on rank 1.
  trace::Timeline timeline;
  timeline.ranks.resize(2);
  timeline.streams = {"compute", "comm"};
  timeline.memory_series = {"parameters", "activations"};
  auto add = [&](std::int32_t rank, std::uint16_t stream, trace::Category category, std::int64_t start,
                 std::int64_t end, std::int64_t bytes) {
    trace::Span span;
    span.rank = rank;
    span.stream = stream;
    span.category = category;
    span.start_ps = start * kMs;
    span.end_ps = end * kMs;
    span.bytes = bytes;
    timeline.spans.push_back(span);
  };
  add(0, 0, trace::Category::kForward, 0, 40, 0);
  add(0, 0, trace::Category::kBackward, 40, 100, 0);
  add(0, 1, trace::Category::kAllReduce, 60, 130, 7'000'000'000);
  add(0, 0, trace::Category::kOptimizer, 130, 140, 0);
  add(1, 0, trace::Category::kForward, 0, 120, 0);
  timeline.memory = {{0, 0, {10, 0}, timeline.strings.intern("parameters")},
                     {1, 0, {10, 85}, timeline.strings.intern("layer3.activations")},
                     {1, 5, {10, 5}, timeline.strings.intern("layer3.activations")}};
  return timeline;
}

trace::RunFacts facts() {
  trace::RunFacts facts;
  facts.title = "hand-made";
  facts.tokens_per_step = 14'000;
  facts.model_flops_per_step = 7e13;
  facts.peak_flops_per_rank = 1e15;
  facts.memory_capacity_bytes = {80, 80};
  return facts;
}

TEST(ReportTest, FiguresFollowTheirDefinitions) {
  const trace::Report report = trace::build_report(two_rank_step(), facts());
  EXPECT_EQ(report.critical_rank, 0);
  EXPECT_NEAR(report.step_time_s, 0.140, 1e-12);
  EXPECT_NEAR(report.tokens_per_s, 14'000 / 0.140, 1e-6);
  EXPECT_NEAR(report.mfu, 7e13 / (0.140 * 2 * 1e15), 1e-12);
  EXPECT_NEAR(report.compute_time_s, 0.110, 1e-12);   // 40 + 60 + 10 ms
  EXPECT_NEAR(report.comm_time_s, 0.070, 1e-12);
  EXPECT_NEAR(report.exposed_comm_s, 0.030, 1e-12);   // [100,130) ms
  EXPECT_NEAR(report.comm_compute_ratio, 70.0 / 110.0, 1e-12);
  EXPECT_NEAR(report.overlap_ratio, 1.0 - 30.0 / 70.0, 1e-12);
  EXPECT_EQ(report.comm_bytes_per_rank, 7'000'000'000);
  EXPECT_NEAR(report.achieved_bandwidth_by_category.at("all_reduce"), 7e9 / 0.070, 1e-3);
}

TEST(ReportTest, APipelineStagesSendRateLeavesItsReceivesOut) {
  // A stage receives for 20 ms (no bytes sent) and sends 1 GB in 10 ms: 100 GB/s, not the
  // 33 GB/s that counting the receive's time gave.
  trace::Timeline timeline;
  timeline.ranks.resize(1);
  timeline.streams = {"compute", "p2p"};
  for (const auto& [start, end, bytes] : {std::tuple{0, 20, 0}, {30, 40, 1'000'000'000}}) {
    trace::Span span;
    span.stream = 1;
    span.category = trace::Category::kSendRecv;
    span.start_ps = start * kMs;
    span.end_ps = end * kMs;
    span.bytes = bytes;
    timeline.spans.push_back(span);
  }
  const trace::Report report = trace::build_report(timeline, facts());
  EXPECT_NEAR(report.achieved_bandwidth_by_category.at("send_recv"), 1e9 / 0.010, 1e-3);
  EXPECT_NEAR(report.time_by_category_s.at("send_recv"), 0.030, 1e-12);
}

TEST(ReportTest, PeakMemoryAndOutOfMemory) {
  const trace::Report report = trace::build_report(two_rank_step(), facts());
  EXPECT_EQ(report.peak_memory_bytes, 95);
  EXPECT_EQ(report.peak_memory_rank, 1);
  EXPECT_EQ(report.peak_memory_op, "layer3.activations");
  EXPECT_EQ(report.peak_memory_breakdown.at("activations"), 85);
  EXPECT_TRUE(report.oom);
  ASSERT_FALSE(report.warnings.empty());
  EXPECT_NE(report.warnings.front().find("OOM"), std::string::npos);
  EXPECT_NE(report.warnings.front().find("layer3.activations"), std::string::npos);
  EXPECT_NE(report.warnings.front().find("needs"), std::string::npos);  // the remedies come from dtsim run
}

TEST(ReportTest, NoWarningWhenItFitsAndCommunicationIsCheap) {
  trace::RunFacts roomy = facts();
  roomy.memory_capacity_bytes = {1000, 1000};
  const trace::Report report = trace::build_report(two_rank_step(), roomy);
  EXPECT_FALSE(report.oom);
  EXPECT_TRUE(report.warnings.empty());
}

TEST(ReportTest, CommunicationBoundStepIsFlagged) {
  trace::Timeline timeline = two_rank_step();
  timeline.spans[2].end_ps = 400 * kMs;  // all-reduce far longer than compute
  trace::RunFacts roomy = facts();
  roomy.memory_capacity_bytes = {1000, 1000};
  const trace::Report report = trace::build_report(timeline, roomy);
  EXPECT_GT(report.comm_compute_ratio, 1.0);
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_NE(report.warnings[0].find("communication-bound"), std::string::npos);
}

// The latency and bandwidth terms are each transfer's own: where they add up past the
// communication time (concurrent transfers, as to many parameter servers), the line says so.
TEST(ReportTest, TermsOfConcurrentTransfersAreSaidToAddUpPastTheirTime) {
  trace::Report report = trace::build_report(two_rank_step(), facts());
  const std::string note = "concurrent ones add up past the time they took";
  report.comm_latency_s = 0.1 * report.comm_time_s;
  report.comm_bandwidth_s = 0.9 * report.comm_time_s;
  EXPECT_EQ(trace::format_report(report).find(note), std::string::npos);
  report.comm_bandwidth_s = 4 * report.comm_time_s;
  EXPECT_NE(trace::format_report(report).find(note), std::string::npos);
}

TEST(ReportTest, JsonHasTheDocumentedKeys) {
  const nlohmann::json json = trace::report_to_json(trace::build_report(two_rank_step(), facts()));
  for (const char* key : {"step_time_s", "tokens_per_s", "mfu", "compute_time_s", "comm_time_s",
                          "exposed_comm_s", "comm_compute_ratio", "overlap_ratio",
                          "peak_memory_bytes", "oom", "per_rank", "warnings", "schema"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_EQ(json["oom"], true);
  EXPECT_EQ(json["per_rank"].size(), 2u);
  EXPECT_EQ(json["per_rank"][1]["peak_memory_breakdown_bytes"]["activations"], 85);
  EXPECT_EQ(json["per_rank"][0]["peak_memory_breakdown_bytes"]["parameters"], 10);
}

// What `mpirun -np N dtsim sweep|search` sends between processes: a report read back from its
// JSON (as CBOR, the binary encoding) is the same report, every double bit for bit.
TEST(ReportTest, AReportReadBackFromItsJsonIsTheSameReport) {
  trace::Report report = trace::build_report(two_rank_step(), facts());
  // Every field away from its default, so that a field read back wrongly or not at all shows.
  report.steps = 3;
  report.critical_rank = 1;
  report.step_time_s = 0.1 + 0.2;  // no short decimal
  report.host_step_time_s = 1.0 / 3.0;
  report.host_step_times_s = {1.0 / 3.0, 2.0 / 7.0};
  report.comm_latency_s = 1e-7 / 3;
  report.comm_bandwidth_s = 2e-3 / 7;
  report.pipeline = "1f1b";
  report.pipeline_bubble = 3.0 / 35;
  report.pipeline_chunks = 2;
  report.compute_idle_fraction = 1.0 / 9;
  report.peak_memory_op = "layer3.forward";
  report.memory_capacity_bytes = 80e9 / 3;
  report.peak_model_state_bytes = 12345;
  report.parameter_server = trace::ParameterServerReport{{"ssp", 3, 1.25, 4}, 0.5, 0.25, 0.75, 1234.5};
  const std::vector<std::uint8_t> wire = nlohmann::json::to_cbor(trace::report_to_json(report));
  const trace::Report back = trace::report_from_json(nlohmann::json::from_cbor(wire));

  EXPECT_EQ(back.steps, 3);
  EXPECT_EQ(back.critical_rank, 1);
  EXPECT_EQ(back.step_time_s, 0.1 + 0.2);
  EXPECT_EQ(back.comm_bandwidth_s, report.comm_bandwidth_s);
  EXPECT_EQ(back.pipeline_bubble, 3.0 / 35);
  EXPECT_EQ(back.compute_idle_fraction, 1.0 / 9);
  EXPECT_EQ(back.peak_memory_op, "layer3.forward");
  EXPECT_EQ(back.memory_capacity_bytes, 80e9 / 3);
  EXPECT_EQ(back.peak_model_state_bytes, 12345);
  EXPECT_EQ(back.tokens_per_s, report.tokens_per_s);
  EXPECT_EQ(back.comm_bytes_per_rank, report.comm_bytes_per_rank);
  EXPECT_EQ(back.achieved_bandwidth_by_category, report.achieved_bandwidth_by_category);
  EXPECT_EQ(back.peak_memory_bytes, report.peak_memory_bytes);
  EXPECT_EQ(back.peak_memory_rank, report.peak_memory_rank);
  EXPECT_EQ(back.ranks, report.ranks);
  EXPECT_EQ(back.host_step_time_s, std::optional<double>(1.0 / 3.0));
  EXPECT_EQ(back.host_step_times_s, report.host_step_times_s);
  EXPECT_EQ(back.comm_latency_s, report.comm_latency_s);
  EXPECT_EQ(back.mfu, report.mfu);
  EXPECT_EQ(back.oom, true);
  EXPECT_EQ(back.oom_rank, report.oom_rank);
  EXPECT_EQ(back.pipeline, "1f1b");
  EXPECT_EQ(back.pipeline_chunks, 2);
  EXPECT_EQ(back.warnings, report.warnings);
  EXPECT_EQ(back.time_by_category_s, report.time_by_category_s);
  EXPECT_EQ(back.peak_memory_breakdown, report.peak_memory_breakdown);
  ASSERT_EQ(back.rank_reports.size(), 2u);
  EXPECT_EQ(back.rank_reports[1].peak_memory_breakdown, report.rank_reports[1].peak_memory_breakdown);
  EXPECT_EQ(back.rank_reports[0].exposed_comm_s, report.rank_reports[0].exposed_comm_s);
  ASSERT_TRUE(back.parameter_server.has_value());
  EXPECT_EQ(back.parameter_server->facts.consistency, "ssp");
  EXPECT_EQ(back.parameter_server->facts.staleness_max, 4);
  EXPECT_EQ(back.parameter_server->tokens_per_s, 1234.5);
  // Every key, as the JSON a run writes.
  EXPECT_EQ(trace::report_to_json(back).dump(), trace::report_to_json(report).dump());

  // Unset optional figures stay unset.
  const trace::Report plain = trace::report_from_json(trace::report_to_json(trace::build_report(two_rank_step(), facts())));
  EXPECT_FALSE(plain.host_step_time_s.has_value());
  EXPECT_FALSE(plain.comm_bandwidth_s.has_value());
  EXPECT_FALSE(plain.parameter_server.has_value());

  EXPECT_THROW(trace::report_from_json(nlohmann::json{{"schema", "other"}}), std::invalid_argument);
  nlohmann::json truncated = trace::report_to_json(report);
  truncated.erase("mfu");
  EXPECT_THROW(trace::report_from_json(truncated), nlohmann::json::exception);
}

}  // namespace
