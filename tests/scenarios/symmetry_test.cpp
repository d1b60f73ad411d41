// Replica symmetry (sim/run/replica_symmetry.h): a run that simulates one replica for all
// gives the report and the timeline of the run that simulates every rank, byte for byte; where
// some replicas differ (a straggler, a network that treats them differently) they are
// simulated as classes of their own, and where every replica differs every rank is simulated;
// dtsim says which and why.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "sim/trace/chrome_trace.h"
#include "sim/trace/report.h"

namespace {

const std::string kScenarios = std::string(DTSIM_SOURCE_DIR) + "/scenarios/";

struct Outputs {
  std::string report;
  std::string timeline;
  std::string symmetry;
  std::vector<trace::RankSummary> summaries;
  double step_time_s = 0;
};

Outputs outputs_of(const std::string& file, std::vector<std::string> overrides, bool symmetry) {
  overrides.push_back(fmt::format("network.symmetry={}", symmetry));
  const scenarios::RunResult result = scenarios::run_scenario(scenarios::load_scenario(kScenarios + file, overrides));
  std::ostringstream timeline;
  trace::write_chrome_trace(result.simulation.timeline, timeline);
  return {trace::report_to_json(result.report).dump(1), timeline.str(), result.simulation.symmetry,
          result.simulation.timeline.summaries, result.report.step_time_s};
}

// Runs the scenario both ways; expects the same outputs and returns the reduced run's.
Outputs expect_reduced_equals_full(const std::string& file, const std::vector<std::string>& overrides) {
  const Outputs full = outputs_of(file, overrides, false);
  const Outputs reduced = outputs_of(file, overrides, true);
  EXPECT_EQ(full.symmetry, "every rank: symmetry turned off");
  EXPECT_EQ(reduced.report, full.report);
  EXPECT_TRUE(reduced.timeline == full.timeline) << "timelines differ";
  return reduced;
}

// Llama-2-70B, tp 8 × pp 8 × dp 4 with ZeRO-1 on 256 H100s (the 1,024-GPU example with 4
// data-parallel replicas): the 8 tensor-parallel ranks of each group are the most replicas,
// its traced ranks include mirrors (the last rank), every collective kind of the layout runs,
// and the network carries every replica's traffic.
TEST(SymmetryTest, ThreeDParallelismOn256GpusIsTheFullRunByteForByte) {
  const Outputs reduced = expect_reduced_equals_full(
      "llama2_70b_3d_1024gpu.toml", {"cluster.nodes=32", "parallel.dp=4", "training.global_batch=128"});
  EXPECT_EQ(reduced.symmetry, "8 replicas (tp groups) simulated as one");
}

// 16 data-parallel replicas of tp 8 × pp 2: the tensor-parallel collectives stay inside each
// node, so the mirrors' copies need not run (elided); the pipeline transfers' copies do.
TEST(SymmetryTest, ReplicasWithNodeLocalTensorParallelismAreTheFullRunByteForByte) {
  const Outputs reduced = expect_reduced_equals_full(
      "llama2_70b_3d_1024gpu.toml", {"cluster.nodes=32", "parallel.pp=2", "parallel.dp=16", "training.global_batch=256"});
  EXPECT_EQ(reduced.symmetry, "16 replicas (dp groups) simulated as one");
}

TEST(SymmetryTest, DataParallelismOn1024GpusIsTheFullRunByteForByte) {
  const Outputs reduced = expect_reduced_equals_full("ddp_llama2_70b_1024gpu.toml", {});
  EXPECT_EQ(reduced.symmetry, "1024 replicas (dp groups) simulated as one");
}

// FSDP's all-gathers run beside the compute they prefetch for, which NCCL's kernels slow. The
// slowdown counts from the moment a rank launches its collective: before, it counted from the
// moment the last member arrived, so of 64 identical ranks that arrive together only those
// processed last were slowed, and the ranks' compute times differed.
TEST(SymmetryTest, IdenticalRanksComputeForTheSameTimeBesideCollectives) {
  const Outputs reduced = expect_reduced_equals_full("c4_70b_fsdp_64gpu.toml", {});
  EXPECT_EQ(reduced.symmetry, "64 replicas (dp groups) simulated as one");
  const Outputs full = outputs_of("c4_70b_fsdp_64gpu.toml", {}, false);
  ASSERT_EQ(full.summaries.size(), 64u);
  for (const trace::RankSummary& summary : full.summaries) {
    EXPECT_EQ(summary.compute_ps, full.summaries.front().compute_ps) << "rank " << summary.rank;
  }
}

// 16 data-parallel replicas of a 2-stage pipeline on 32 nodes, 17 nodes per leaf: replica 0's
// stages (nodes 0 and 16) share a leaf, replicas 1–15's (nodes r and 16 + r) do not, so their
// pipeline transfers climb to a spine. The reduced run finds out, and runs again with replicas
// 1–15 in a class of their own, led by replica 1.
TEST(SymmetryTest, ReplicasTheNetworkTreatsDifferentlyAreAClassOfTheirOwn) {
  const Outputs reduced = expect_reduced_equals_full(
      "llama2_70b_3d_1024gpu.toml", {"cluster.nodes=32", "cluster.fabric.leaf_down_ports=136", "parallel.pp=2",
                                     "parallel.dp=16", "training.global_batch=128"});
  EXPECT_EQ(reduced.symmetry.rfind("16 replicas (dp groups) simulated as 2 classes, the others copied: replicas 1, 2, 3 "
                                   "and 12 more: the network treats the replicas differently: rank 0 op ",
                                   0),
            0u)
      << reduced.symmetry;
}

// A front end following that run sees it start twice: run 1, then run 2 once the network has
// set replicas 1–15 apart, each run's reports starting from none done.
TEST(SymmetryTest, ProgressSaysWhenTheRunStartsAgain) {
  const scenarios::Scenario scenario = scenarios::load_scenario(
      kScenarios + "llama2_70b_3d_1024gpu.toml", {"cluster.nodes=32", "cluster.fabric.leaf_down_ports=136", "parallel.pp=2",
                                                  "parallel.dp=16", "training.global_batch=128"});
  std::vector<std::int32_t> runs;
  std::vector<std::int32_t> runs_started;
  scenarios::run_scenario(scenario, [&](const sim::SimulationProgress& progress) {
    runs.push_back(progress.run);
    if (progress.events == 0) runs_started.push_back(progress.run);
    return true;
  });
  EXPECT_TRUE(std::is_sorted(runs.begin(), runs.end()));
  EXPECT_EQ(runs_started, (std::vector<std::int32_t>{1, 2}));

  // Tracing only the critical rank simulates the step again once that rank is known: the second
  // simulation starts from the classes the first found, in one run.
  const scenarios::Scenario critical_only = scenarios::load_scenario(
      kScenarios + "llama2_70b_3d_1024gpu.toml",
      {"cluster.nodes=32", "cluster.fabric.leaf_down_ports=136", "parallel.pp=2", "parallel.dp=16",
       "training.global_batch=128", "output.trace_ranks=\"critical\""});
  runs_started.clear();
  const scenarios::RunResult traced = scenarios::run_scenario(critical_only, [&](const sim::SimulationProgress& progress) {
    if (progress.events == 0) runs_started.push_back(progress.run);
    return true;
  });
  EXPECT_EQ(runs_started, (std::vector<std::int32_t>{1, 2, 1}));
  EXPECT_EQ(traced.simulation.symmetry.rfind("16 replicas (dp groups) simulated as 2 classes", 0), 0u)
      << traced.simulation.symmetry;
}

// The same with Llama-2-7B in 2 replicas of a 2-stage pipeline, one GPU and NIC per node, 3
// nodes per leaf: replica 0's stages (nodes 0 and 2) share a leaf, replica 1's (nodes 1 and 3)
// do not. Each replica is a class of its own: every rank is simulated.
TEST(SymmetryTest, ANetworkThatTreatsEveryReplicaDifferentlyFallsBackToEveryRank) {
  const std::vector<std::string> overrides = {
      "cluster.nodes=4",        "cluster.gpus_per_node=1", "cluster.nics_per_node=1",  "cluster.fabric.leaf_down_ports=3",
      "parallel.tp=1",          "parallel.pp=2",           "parallel.dp=2",            "parallel.sequence_parallel=false",
      "model.preset=\"llama-2-7b\"", "training.global_batch=16"};
  const Outputs full = outputs_of("llama2_70b_3d_1024gpu.toml", overrides, false);
  const Outputs reduced = outputs_of("llama2_70b_3d_1024gpu.toml", overrides, true);
  EXPECT_EQ(reduced.symmetry.rfind("every rank: the network treats the replicas differently: rank ", 0), 0u)
      << reduced.symmetry;
  EXPECT_EQ(reduced.report, full.report);
  EXPECT_TRUE(reduced.timeline == full.timeline) << "timelines differ";
}

// One GPU 30 % slower than the others (stragglers.slow_ranks): rank 37 is tp 5 of replica 4
// (ranks run tp fastest, then dp, then pp), so replica 4 is simulated apart from replica 0,
// whose rank 5 it would otherwise copy, and the 14 others still copy replica 0.
TEST(SymmetryTest, OneSlowGpuSetsItsReplicaApartAndTheOthersStillCopyOne) {
  const std::vector<std::string> layout = {"cluster.nodes=32", "parallel.pp=2", "parallel.dp=16",
                                           "training.global_batch=256"};
  std::vector<std::string> slowed = layout;
  slowed.insert(slowed.end(), {"stragglers.slow_ranks=[37]", "stragglers.slow_factor=1.3"});
  const Outputs reduced = expect_reduced_equals_full("llama2_70b_3d_1024gpu.toml", slowed);
  EXPECT_EQ(reduced.symmetry,
            "16 replicas (dp groups) simulated as 2 classes, the others copied: replica 4: ranks 5 and 37 compute at "
            "different speeds (a straggler)");
  EXPECT_GT(reduced.step_time_s, outputs_of("llama2_70b_3d_1024gpu.toml", layout, true).step_time_s);
}

// Two GPUs equally slow in a DDP step: their replicas form one class, led by replica 700, and
// replica 901 copies it. NCCL's tree gives each position its own share of the all-reduce's
// bytes (ranks 700 and 901 send more than rank 0), so what replica 901 sent must be counted
// against its own leader's bytes, not replica 0's.
TEST(SymmetryTest, EquallySlowGpusShareAClassAndEachKeepsItsOwnTreeBytes) {
  const Outputs reduced = expect_reduced_equals_full(
      "ddp_llama2_70b_1024gpu.toml", {"stragglers.slow_ranks=[700, 901]", "stragglers.slow_factor=1.1",
                                      "collectives.all_reduce=\"tree\""});
  EXPECT_EQ(reduced.symmetry,
            "1024 replicas (dp groups) simulated as 2 classes, the others copied: replicas 700 and 901: ranks 0 and 700 "
            "compute at different speeds (a straggler)");
  ASSERT_EQ(reduced.summaries.size(), 1024u);
  EXPECT_NE(reduced.summaries[901].comm_bytes, reduced.summaries[0].comm_bytes);
}

// Every GPU a straggler of its own: no two replicas are alike.
TEST(SymmetryTest, StragglersEverywhereLeaveNoReplicasAlike) {
  const Outputs reduced = outputs_of("default.toml", {"stragglers.distribution=\"lognormal\"", "stragglers.sigma=0.05"}, true);
  EXPECT_NE(reduced.symmetry.find("every replica differs (replica 1: ranks 0 and 1 compute at different speeds (a straggler))"),
            std::string::npos)
      << reduced.symmetry;
}

}  // namespace
