// The Program simulator on hand-built programs: stream order, dependencies, collective
// rendezvous, overlap, send/recv, memory counters, deadlocks, scaling, determinism; how replica
// classes are named.
#include "sim/run/program_simulator.h"
#include "sim/run/replica_symmetry.h"

#include <gtest/gtest.h>

#include <sstream>

#include "sim/trace/chrome_trace.h"
#include "strategies/lowering.h"
#include "tests/support/clusters.h"
#include "topology/presets.h"

namespace {

using program::Op;

topology::Cluster one_node() { return topology::Cluster(test_support::hgx_cluster(1)); }

program::ComputeOp matmul(double flops) {
  program::ComputeOp op;
  op.kind = program::ComputeKind::kMatmul;
  op.flops = flops;
  return op;
}

program::CollectiveOp all_reduce(std::int64_t bytes) {
  program::CollectiveOp op;
  op.kind = program::CollectiveKind::kAllReduce;
  op.bytes = bytes;
  return op;
}

// A program of `world` ranks with streams compute (0) and comm (1) and one "dp" group.
program::Program program_of(std::vector<std::vector<Op>> ranks) {
  program::Program p;
  p.world_size = static_cast<std::int32_t>(ranks.size());
  p.streams = {"compute", "comm"};
  std::vector<std::int32_t> everyone(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) everyone[r] = static_cast<std::int32_t>(r);
  p.group_families.push_back(program::make_group_family("dp", p.world_size, {everyone}));
  p.placement = everyone;
  for (auto& ops : ranks) {
    auto rank = std::make_shared<program::RankProgram>();
    rank->ops = std::move(ops);
    p.ranks.push_back(rank);
  }
  return p;
}

sim::SimulationOptions options() {
  sim::SimulationOptions o;
  o.efficiency = sim::ComputeEfficiency::preset();
  o.efficiency.matmul = 0.8;  // stated, so the closed forms below do not depend on the preset's measurement
  o.efficiency.kernel_overhead_s = 0;
  o.network = test_support::textbook_network_options();  // the closed forms below
  return o;
}

const trace::Span& span_named(const sim::SimulationResult& result, std::int32_t rank, const std::string& name) {
  for (const trace::Span& span : result.timeline.spans) {
    if (span.rank == rank && result.timeline.strings.at(span.name) == name) return span;
  }
  throw std::runtime_error("no span " + name);
}

double matmul_seconds(double flops) { return flops / (989.4e12 * 0.8); }

TEST(ProgramSimulatorTest, OpsOnOneStreamRunInOrderAndDepsCrossStreams) {
  const topology::Cluster cluster = one_node();
  // a, b on compute; c on comm depends on a: c runs alongside b.
  const auto result = sim::simulate(
      program_of({{Op{"a", 0, {}, matmul(1e12)}, Op{"b", 0, {}, matmul(2e12)}, Op{"c", 1, {0}, matmul(1e12)}}}),
      cluster, options());
  const double a = matmul_seconds(1e12);
  EXPECT_NEAR(span_named(result, 0, "a").end_ps * 1e-12, a, 1e-12);
  EXPECT_EQ(span_named(result, 0, "b").start_ps, span_named(result, 0, "a").end_ps);
  EXPECT_EQ(span_named(result, 0, "c").start_ps, span_named(result, 0, "a").end_ps);
  EXPECT_NEAR(span_named(result, 0, "b").end_ps * 1e-12, a + matmul_seconds(2e12), 1e-12);
}

TEST(ProgramSimulatorTest, ACollectiveStartsWhenTheLastMemberArrives) {
  const topology::Cluster cluster = one_node();
  const std::int64_t m = 100'000'000;
  const auto result = sim::simulate(
      program_of({{Op{"work", 0, {}, matmul(5e12)}, Op{"ar", 1, {0}, all_reduce(m)}},
                  {Op{"ar", 1, {}, all_reduce(m)}}}),
      cluster, options());
  const trace::Span& late = span_named(result, 0, "ar");
  const trace::Span& early = span_named(result, 1, "ar");
  EXPECT_EQ(late.start_ps, span_named(result, 0, "work").end_ps);
  EXPECT_EQ(early.start_ps, late.start_ps);
  EXPECT_EQ(early.end_ps, late.end_ps);
  // Two GPUs on NVSwitch: 2(P−1)·α + 2(P−1)/P · M/B = 2 × 0.6 µs + M / 450 GB/s.
  EXPECT_NEAR((late.end_ps - late.start_ps) * 1e-12, 2 * 0.6e-6 + m / 450e9, 1e-11);
  EXPECT_EQ(late.bytes, m);
  EXPECT_EQ(result.timeline.strings.at(late.algorithm), "ring");
  EXPECT_EQ(result.timeline.strings.at(late.group), "dp[0]");
  EXPECT_NEAR(result.comm_latency_s[0], 2 * 0.6e-6, 1e-15);
}

TEST(ProgramSimulatorTest, CollectivesOfOneGroupMatchPerStream) {
  // One group's collectives on two streams, issued in opposite orders by its two ranks (as two
  // process groups over the same ranks would be): each meets its namesake, on its own stream,
  // as the executors' communicators per group and stream match them.
  const topology::Cluster cluster = one_node();
  const std::int64_t m = 1'000'000;
  program::Program p = program_of({{Op{"ar_a", 1, {}, all_reduce(m)}, Op{"work", 0, {}, matmul(5e12)},
                                    Op{"ar_b", 2, {1}, all_reduce(m)}},
                                   {Op{"ar_b", 2, {}, all_reduce(m)}, Op{"work", 0, {}, matmul(5e12)},
                                    Op{"ar_a", 1, {1}, all_reduce(m)}}});
  p.streams.push_back("comm2");
  const auto result = sim::simulate(p, cluster, options());
  EXPECT_EQ(span_named(result, 0, "ar_a").start_ps, span_named(result, 1, "work").end_ps);
  EXPECT_EQ(span_named(result, 1, "ar_b").start_ps, span_named(result, 0, "work").end_ps);
  EXPECT_EQ(span_named(result, 0, "ar_a").end_ps, span_named(result, 1, "ar_a").end_ps);
}

TEST(ProgramSimulatorTest, CommunicationOverlapsIndependentCompute) {
  const topology::Cluster cluster = one_node();
  const auto result = sim::simulate(
      program_of({{Op{"long", 0, {}, matmul(50e12)}, Op{"ar", 1, {}, all_reduce(1'000'000)}},
                  {Op{"long", 0, {}, matmul(50e12)}, Op{"ar", 1, {}, all_reduce(1'000'000)}}}),
      cluster, options());
  EXPECT_EQ(span_named(result, 0, "ar").start_ps, 0);
  EXPECT_LT(span_named(result, 0, "ar").end_ps, span_named(result, 0, "long").end_ps);
}

TEST(ProgramSimulatorTest, ComputeReadyWithACollectiveIsSlowedBesideIt) {
  // When "first" ends, "ar" (comm stream) and "work" (compute stream, numbered before it) become
  // ready together: NCCL's kernel runs beside the GEMM from its start, so the GEMM takes
  // 1 + overlap_slowdown times as long; "first", started alone, does not.
  const topology::Cluster cluster = one_node();
  sim::SimulationOptions slowed = options();
  slowed.efficiency.overlap_slowdown = 0.25;
  const std::vector<Op> ops = {Op{"first", 0, {}, matmul(1e12)},
                               Op{"ar", 1, {0}, all_reduce(100'000'000)},
                               Op{"work", 0, {0}, matmul(2e12)}};
  const auto result = sim::simulate(program_of({ops, ops}), cluster, slowed);
  const trace::Span& first = span_named(result, 0, "first");
  const trace::Span& work = span_named(result, 0, "work");
  EXPECT_NEAR((first.end_ps - first.start_ps) * 1e-12, matmul_seconds(1e12), 1e-12);
  EXPECT_EQ(work.start_ps, span_named(result, 0, "ar").start_ps);
  EXPECT_NEAR((work.end_ps - work.start_ps) * 1e-12, 1.25 * matmul_seconds(2e12), 1e-12);
}

TEST(ProgramSimulatorTest, ACollectiveBehindAMemoryOpStillLaunchesBeforeTheComputeReadyWithIt) {
  // FSDP's gather: its buffer's allocation, then the all-gather, on one stream; both and "work"
  // become ready when "first" ends, so "work" starts beside the all-gather and is slowed.
  const topology::Cluster cluster = one_node();
  sim::SimulationOptions slowed = options();
  slowed.efficiency.overlap_slowdown = 0.25;
  const std::vector<Op> ops = {
      Op{"first", 0, {}, matmul(1e12)},
      Op{"buffer", 1, {0}, program::MemoryOp{true, program::MemoryCategory::kOther, 1000}},
      Op{"ar", 1, {}, all_reduce(100'000'000)}, Op{"work", 0, {0}, matmul(2e12)}};
  const auto result = sim::simulate(program_of({ops, ops}), cluster, slowed);
  const trace::Span& work = span_named(result, 0, "work");
  EXPECT_EQ(work.start_ps, span_named(result, 0, "ar").start_ps);
  EXPECT_NEAR((work.end_ps - work.start_ps) * 1e-12, 1.25 * matmul_seconds(2e12), 1e-12);
}

TEST(ProgramSimulatorTest,
     ARunStartedAtTheInstantACollectiveLaunchesIsSlowedWhicheverEventCameFirst) {
  // "first" and "side" end together, in two events, "first"'s first: "work" (after "first", with
  // "more" run on after it) starts at that instant in the first event, "ar" (after "side") in
  // the second, so "work" and "more" run beside the all-reduce. ("mark" waits for "first", so
  // "first" does not run on into "work".)
  const topology::Cluster cluster = one_node();
  sim::SimulationOptions slowed = options();
  slowed.efficiency.overlap_slowdown = 0.25;
  const std::vector<Op> ops = {
      Op{"first", 0, {}, matmul(1e12)},
      Op{"side", 2, {}, matmul(1e12)},
      Op{"mark", 3, {0}, program::MemoryOp{true, program::MemoryCategory::kOther, 1000}},
      Op{"work", 0, {}, matmul(1e12)},
      Op{"more", 0, {}, matmul(1e12)},
      Op{"ar", 1, {1}, all_reduce(4'000'000'000)}};
  program::Program program = program_of({ops, ops});
  program.streams.push_back("side");
  program.streams.push_back("mark");
  const auto result = sim::simulate(program, cluster, slowed);
  for (const char* name : {"work", "more"}) {
    const trace::Span& span = span_named(result, 0, name);
    EXPECT_NEAR((span.end_ps - span.start_ps) * 1e-12, 1.25 * matmul_seconds(1e12), 1e-12) << name;
  }
  EXPECT_EQ(span_named(result, 0, "work").start_ps, span_named(result, 0, "ar").start_ps);
}

TEST(ProgramSimulatorTest, ACollectiveLaunchedDuringARunOfComputeSlowsTheOpsNotYetStarted) {
  // "a", "b", "c" run on one after the other from 0, nothing beside them; "side" (another
  // compute stream) ends during "a" and launches "ar": "a" runs on unslowed, "b" and "c" start
  // beside the all-reduce and take 1 + overlap_slowdown times as long.
  const topology::Cluster cluster = one_node();
  sim::SimulationOptions slowed = options();
  slowed.efficiency.overlap_slowdown = 0.25;
  const std::vector<Op> ops = {Op{"a", 0, {}, matmul(1e12)}, Op{"b", 0, {}, matmul(1e12)},
                               Op{"c", 0, {}, matmul(1e12)}, Op{"side", 2, {}, matmul(0.2e12)},
                               Op{"ar", 1, {3}, all_reduce(4'000'000'000)}};
  program::Program program = program_of({ops, ops});
  program.streams.push_back("side");
  const auto result = sim::simulate(program, cluster, slowed);
  const auto seconds = [&](const char* name) {
    const trace::Span& span = span_named(result, 0, name);
    return (span.end_ps - span.start_ps) * 1e-12;
  };
  ASSERT_LT(span_named(result, 0, "ar").start_ps, span_named(result, 0, "a").end_ps);
  ASSERT_GT(span_named(result, 0, "ar").end_ps, span_named(result, 0, "c").start_ps);
  EXPECT_NEAR(seconds("a"), matmul_seconds(1e12), 1e-12);
  EXPECT_NEAR(seconds("b"), 1.25 * matmul_seconds(1e12), 1e-12);
  EXPECT_NEAR(seconds("c"), 1.25 * matmul_seconds(1e12), 1e-12);
}

TEST(ProgramSimulatorTest, SendAndReceiveMeetInOrder) {
  const topology::Cluster cluster = one_node();
  program::SendRecvOp send{true, 0, 1, 450'000'000, program::DType::kBF16};
  program::SendRecvOp recv{false, 0, -1, 450'000'000, program::DType::kBF16};
  const auto result = sim::simulate(
      program_of({{Op{"send", 1, {}, send}}, {Op{"work", 0, {}, matmul(1e12)}, Op{"recv", 1, {0}, recv}}}),
      cluster, options());
  const trace::Span& s = span_named(result, 0, "send");
  EXPECT_EQ(s.start_ps, span_named(result, 1, "work").end_ps);  // waits for the receiver
  EXPECT_NEAR((s.end_ps - s.start_ps) * 1e-12, 0.6e-6 + 1e-3, 1e-11);  // 450 MB at 450 GB/s
  EXPECT_EQ(span_named(result, 1, "recv").end_ps, s.end_ps);
  EXPECT_EQ(s.category, trace::Category::kSendRecv);
}

TEST(ProgramSimulatorTest, AnUnmatchedReceiveIsADeadlock) {
  const topology::Cluster cluster = one_node();
  program::SendRecvOp recv{false, 0, 1, 100, program::DType::kBF16};
  try {
    sim::simulate(program_of({{Op{"recv", 1, {}, recv}}, {}}), cluster, options());
    FAIL() << "no deadlock reported";
  } catch (const sim::SimulationError& error) {
    EXPECT_NE(std::string(error.what()).find("deadlock: rank 0 never finished op 'recv'"), std::string::npos)
        << error.what();
  }
}

TEST(ProgramSimulatorTest, DependenciesBetweenSpansAreRecordedThroughMemoryOps) {
  // comm (2) waits for an allocation (1) that waits for the matmul (0); the collective's
  // recorded dependency is the matmul. The last matmul (3) waits for both directly.
  program::MemoryOp alloc{true, program::MemoryCategory::kGradients, 1000};
  const auto result = sim::simulate(
      program_of({{Op{"grad", 0, {}, matmul(1e12)}, Op{"bucket", 1, {0}, alloc}, Op{"sync", 1, {1}, all_reduce(1 << 20)},
                   Op{"next", 0, {0, 2}, matmul(1e12)}}}),
      one_node(), options());
  const std::vector<trace::OpDependency> expected = {{0, 2, 0}, {0, 3, 0}, {0, 3, 2}};
  EXPECT_EQ(result.timeline.dependencies, expected);
}

TEST(ProgramSimulatorTest, MemoryOpsAreSampledWithTheirCause) {
  const topology::Cluster cluster = one_node();
  program::MemoryOp alloc{true, program::MemoryCategory::kActivations, 1000};
  program::MemoryOp release{false, program::MemoryCategory::kActivations, 1000};
  const auto result = sim::simulate(
      program_of({{Op{"act", 0, {}, alloc}, Op{"work", 0, {}, matmul(1e12)}, Op{"act", 0, {}, release}}}),
      cluster, options());
  ASSERT_EQ(result.timeline.memory.size(), 2u);
  const auto activations = static_cast<std::size_t>(program::MemoryCategory::kActivations);
  EXPECT_EQ(result.timeline.memory[0].bytes[activations], 1000);
  EXPECT_EQ(result.timeline.memory[0].time_ps, 0);
  EXPECT_EQ(result.timeline.memory[1].bytes[activations], 0);
  EXPECT_EQ(result.timeline.memory[1].time_ps, span_named(result, 0, "work").end_ps);
  EXPECT_EQ(result.timeline.strings.at(result.timeline.memory[1].cause), "act");
  EXPECT_EQ(result.timeline.memory_series[activations], "activations");
}

strategies::LoweringInput small_ddp() {
  strategies::LoweringInput input;
  input.model = *strategies::model_preset("llama-2-7b");
  input.model.layers = 4;
  input.training.sequence = 512;
  input.training.accumulation = 2;
  input.training.global_batch = 16;
  input.parallel.dp = 8;
  return input;
}

TEST(ProgramSimulatorTest, ImposedComputeTimeScalesTheBusiestRank) {
  const topology::Cluster cluster = one_node();
  sim::SimulationOptions o = options();
  o.step_compute_time_s = 0.25;
  const auto result = sim::simulate(strategies::lower(small_ddp()), cluster, o);
  std::int64_t compute = 0;
  for (const trace::Span& span : result.timeline.spans) {
    if (span.rank == 0 && trace::is_compute(span.category)) compute += span.duration_ps();
  }
  EXPECT_NEAR(compute * 1e-12, 0.25, 1e-9);
}

TEST(ProgramSimulatorTest, SameProgramGivesTheSameTimelineByteForByte) {
  const topology::Cluster cluster = one_node();
  auto run = [&] {
    std::ostringstream out;
    trace::write_chrome_trace(sim::simulate(strategies::lower(small_ddp()), cluster, options()).timeline, out);
    return out.str();
  };
  const std::string first = run();
  EXPECT_GT(first.size(), 10'000u);
  EXPECT_EQ(first, run());
}

}  // namespace

namespace {

TEST(ProgramSimulatorTest, ThePacketModelDrawsEveryAlgorithmStep) {
  const topology::Cluster cluster = one_node();
  sim::SimulationOptions o = options();
  o.network.model = "packet";
  o.collectives.by_kind[program::CollectiveKind::kAllReduce] = {program::Algorithm::kRing, "test", "test"};
  const auto result = sim::simulate(
      program_of({{Op{"ar", 1, {}, all_reduce(1 << 20)}}, {Op{"ar", 1, {}, all_reduce(1 << 20)}},
                  {Op{"ar", 1, {}, all_reduce(1 << 20)}}, {Op{"ar", 1, {}, all_reduce(1 << 20)}}}),
      cluster, o);
  const trace::Timeline& timeline = result.timeline;
  std::vector<std::string> steps;
  for (const trace::Span& span : timeline.spans) {
    if (span.rank != 2 || timeline.streams[span.stream] != "comm steps") continue;
    EXPECT_EQ(span.category, trace::Category::kAllReduce);
    steps.push_back(timeline.strings.at(span.name));
  }
  // 2(P−1) ring steps for P = 4, in order.
  EXPECT_EQ(steps, (std::vector<std::string>{"reduce-scatter step 0", "reduce-scatter step 1",
                                             "reduce-scatter step 2", "all-gather step 0",
                                             "all-gather step 1", "all-gather step 2"}));
}

TEST(AnalyticLogGpTest, EachStepAddsTwoOverheadsAndGapsForExtraMessages) {
  // Ring all-reduce of 64 bytes on 8 GPUs: every step sends one message per member, so LogGP
  // adds 2o to each of the 14 steps' α; bytes are negligible.
  const topology::Cluster cluster(test_support::hgx_cluster(1));
  sim::Engine engine;
  sim::NetworkOptions options = test_support::textbook_network_options();
  options.model = "analytic";
  options.logp = true;
  options.logp_overhead_s = 2e-6;
  sim::CommRequest request;
  request.kind = program::CollectiveKind::kAllReduce;
  request.algorithm = program::Algorithm::kRing;
  request.bytes = 64;
  for (int r = 0; r < 8; ++r) request.endpoints.push_back(r);
  sim::CommResult result;
  auto model = sim::make_network_model(options, engine, cluster);
  model->start(request, [&result](const sim::CommResult& done) { result = done; });
  engine.run();
  EXPECT_NEAR(result.latency_seconds, 14 * (0.6e-6 + 2 * 2e-6), 1e-12);
  // Direct all-gather: one step in which every member sends 7 messages: 6 gaps more.
  request.kind = program::CollectiveKind::kAllGather;
  request.algorithm = program::Algorithm::kDirect;
  model->start(request, [&result](const sim::CommResult& done) { result = done; });
  engine.run();
  EXPECT_NEAR(result.latency_seconds, 0.6e-6 + 2 * 2e-6 + 6 * options.logp_gap_s, 1e-12);
}

}  // namespace

namespace {

// 2 ranks of 10,000 small matmuls each.
program::Program long_program() {
  std::vector<Op> ops;
  for (int i = 0; i < 10'000; ++i) ops.push_back(Op{"mm" + std::to_string(i), 0, {}, matmul(1e9)});
  return program_of({ops, ops});
}

// A run is refused up front when its estimate exceeds the memory available, and the estimate
// grows with the ranks whose spans the timeline keeps (160 bytes per traced op: 20,000 traced
// ops need 3.2 MB, 10,000 need 1.6 MB; the cluster and simulation add well under 0.5 MB).
TEST(ProgramSimulatorTest, ARunEstimatedNotToFitIsRefusedBeforeItStarts) {
  const topology::Cluster cluster = one_node();
  sim::SimulationOptions refused = options();
  refused.memory_available_bytes = 2'500'000;
  try {
    sim::simulate(long_program(), cluster, refused);
    FAIL() << "expected NotEnoughMemory";
  } catch (const sim::NotEnoughMemory& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("GB of memory but 0.0 GB is available"), std::string::npos) << message;
    EXPECT_NE(message.find("the timeline of 2 traced ranks"), std::string::npos) << message;
    EXPECT_NE(message.find("output.trace_ranks"), std::string::npos) << message;
  }
  sim::SimulationOptions one_traced = refused;
  one_traced.traced_ranks = {true, false};
  EXPECT_GT(sim::simulate(long_program(), cluster, one_traced).events, 0u);
  sim::SimulationOptions unchecked = options();  // memory_available_bytes = 0: no check
  EXPECT_GT(sim::simulate(long_program(), cluster, unchecked).events, 0u);
}

}  // namespace

// How `dtsim run` names the replicas a class holds: all of them up to four, else the first
// three and a count.
TEST(ReplicaListTest, NamesUpToFourReplicasAndCountsTheRest) {
  EXPECT_EQ(sim::replica_list({4}), "replica 4");
  EXPECT_EQ(sim::replica_list({1, 5}), "replicas 1 and 5");
  EXPECT_EQ(sim::replica_list({1, 2, 5, 9}), "replicas 1, 2, 5 and 9");
  EXPECT_EQ(sim::replica_list({1, 2, 5, 9, 11}), "replicas 1, 2, 5 and 2 more");
}
