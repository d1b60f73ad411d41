// The chapter's worked examples (VALIDATION.md) reproduced from the scenario files under the
// chapter's own assumptions, each within its stated tolerance; and where dtsim's more detailed
// defaults differ, the difference is the one the report explains.
#include <gtest/gtest.h>

#include <algorithm>

#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "scenarios/sweep.h"

namespace {

const std::string kScenarios = std::string(DTSIM_SOURCE_DIR) + "/scenarios/";

trace::Report report_of(const std::string& file, const std::vector<std::string>& overrides = {}) {
  return scenarios::run_scenario(scenarios::load_scenario(kScenarios + file, overrides)).report;
}

scenarios::RunResult run_of(const std::string& file, const std::vector<std::string>& overrides = {}) {
  return scenarios::run_scenario(scenarios::load_scenario(kScenarios + file, overrides));
}

double relative_error(double value, double expected) { return std::abs(value - expected) / expected; }

// What rank 0 does for one transformer layer (ops named "<layer>.…"): bytes its collectives
// send, their count, and the layer's time on the critical path — its compute plus the part of
// its communication no compute of the rank overlaps.
struct LayerCost {
  double comm_bytes = 0;
  int collectives = 0;
  double compute_s = 0;
  double exposed_comm_s = 0;
  double time_s() const { return compute_s + exposed_comm_s; }
};
LayerCost layer_cost(const trace::Timeline& timeline, const std::string& layer) {
  LayerCost cost;
  std::vector<std::pair<std::int64_t, std::int64_t>> compute;
  for (const trace::Span& span : timeline.spans) {
    if (span.rank == 0 && trace::is_compute(span.category)) compute.emplace_back(span.start_ps, span.end_ps);
  }
  for (const trace::Span& span : timeline.spans) {
    if (span.rank != 0 || timeline.strings.at(span.name).rfind(layer + ".", 0) != 0) continue;
    if (trace::is_compute(span.category)) cost.compute_s += static_cast<double>(span.duration_ps()) * 1e-12;
    if (!trace::is_communication(span.category)) continue;
    cost.comm_bytes += static_cast<double>(span.bytes);
    ++cost.collectives;
    std::int64_t covered = 0;  // compute spans of one rank never overlap each other
    for (const auto& [start, end] : compute) covered += std::max<std::int64_t>(0, std::min(end, span.end_ps) - std::max(start, span.start_ps));
    cost.exposed_comm_s += static_cast<double>(span.duration_ps() - covered) * 1e-12;
  }
  return cost;
}

// Llama-7B at b 1, s 2048 in bf16: one b·s·h activation, the message of a Megatron all-reduce.
constexpr double kLlama7bActivation = 1.0 * 2048 * 4096 * 2;

TEST(WorkedExampleTest, C1RingTrafficAndTimeOnOneH100Node) {
  // 7B fp16 gradients = 14 GB; 2(P−1)/P·M = 24.5 GB per GPU; at 450 GB/s T_comm ≈ 54 ms.
  const trace::Report report = report_of("c1_7b_ddp_8xh100.toml");
  EXPECT_LT(relative_error(static_cast<double>(report.comm_bytes_per_rank), 24.5e9), 0.03);
  EXPECT_LT(relative_error(report.comm_time_s, 0.054), 0.03);
}

TEST(WorkedExampleTest, C1WithNvlinkLatencyAddsOnlyTheLatencyTerms) {
  // With NCCL's per-hop NVLink latency the bandwidth part is unchanged; the report shows the
  // latency terms separately (2(P−1)·α per bucket all-reduce), which is the whole difference.
  const trace::Report ideal = report_of("c1_7b_ddp_8xh100.toml");
  const trace::Report real = report_of("c1_7b_ddp_8xh100.toml", {"cluster.nvlink.latency_us=0.3"});
  ASSERT_TRUE(real.comm_bandwidth_s && real.comm_latency_s);
  EXPECT_NEAR(*real.comm_bandwidth_s, ideal.comm_time_s, 1e-9);
  EXPECT_GT(*real.comm_latency_s, 0.0);
  EXPECT_NEAR(real.comm_time_s, *real.comm_latency_s + *real.comm_bandwidth_s, 1e-9);
}

TEST(WorkedExampleTest, C2RatioForA200To400MsComputeStep) {
  // R = T_comm / T_comp ≈ 0.27 at 200 ms and ≈ 0.14 at 400 ms (5 %).
  const auto document = scenarios::ScenarioDocument::from_file(kScenarios + "c2_7b_ddp_comm_compute_ratio.toml");
  const scenarios::SweepResult sweep = scenarios::run_sweep(document, 2, [](std::size_t, std::size_t) {});
  ASSERT_EQ(sweep.rows.size(), 2u);
  EXPECT_EQ(sweep.rows[0].values[0], "0.2");
  EXPECT_LT(relative_error(sweep.rows[0].report.comm_compute_ratio, 0.27), 0.05);
  EXPECT_LT(relative_error(sweep.rows[1].report.comm_compute_ratio, 0.14), 0.05);
  EXPECT_NEAR(sweep.rows[0].report.compute_time_s, 0.2, 1e-6);
}

TEST(WorkedExampleTest, C3SeventyBillionDdpAcrossNodesIsCommunicationBound) {
  // 140 GB of fp16 gradients; per-GPU traffic ≈ 276 GB; at 40 GB/s T_comm ≈ 6.9 s (3 %).
  const trace::Report report = report_of("c3_70b_ddp_64gpu.toml");
  EXPECT_LT(relative_error(static_cast<double>(report.comm_bytes_per_rank), 276e9), 0.03);
  EXPECT_LT(relative_error(report.comm_time_s, 6.9), 0.03);
  EXPECT_GT(report.comm_compute_ratio, 1.0);
  bool flagged = false;
  for (const auto& warning : report.warnings) flagged |= warning.find("communication-bound") != std::string::npos;
  EXPECT_TRUE(flagged);
}

TEST(WorkedExampleTest, C3WithOneRingPerNicIsEightTimesFaster) {
  // NCCL runs a ring per NIC; with 8 NICs per node each carries 1/8 of the inter-node
  // traffic, so the bandwidth term is divided by 8 — the difference from the chapter's
  // single ring is this channel count, shown by the same report. (InfiniBand's
  // destination-based routing keeps the eight rings off each other's spine uplinks.)
  const trace::Report single = report_of("c3_70b_ddp_64gpu.toml");
  const trace::Report per_nic = report_of("c3_70b_ddp_64gpu.toml", {"network.ring_channels=\"auto\""});
  EXPECT_NEAR(single.comm_time_s / per_nic.comm_time_s, 8.0, 0.08);
}

TEST(WorkedExampleTest, C5ParameterServerNicGivesEachWorkerAbout1Point5Gbits) {
  // One 100 Gb/s server NIC, 64 workers pushing at once: ≈ 1.5–1.6 Gb/s per worker (5 %).
  const trace::Report report = report_of("c5_ps_nic_bottleneck.toml");
  const double gbit_s = report.achieved_bandwidth_by_category.at("ps_push") * 8 / 1e9;
  EXPECT_GE(gbit_s, 1.5 * 0.95);
  EXPECT_LE(gbit_s, 1.6 * 1.05);
  EXPECT_NEAR(gbit_s, 100.0 / 64, 0.01 * 100.0 / 64);
}

TEST(WorkedExampleTest, M1SevenBillionWithMixedPrecisionAdamNeeds112GB) {
  // bf16 params 14 + bf16 grads 14 + fp32 master 28 + Adam m 28 + v 28 = 112 GB: OOM on H100.
  const trace::Report report = report_of("m1_7b_ddp_memory.toml");
  const auto& memory = report.peak_memory_breakdown;
  EXPECT_EQ(memory.at("parameters"), 14'000'000'000);
  EXPECT_EQ(memory.at("gradients"), 14'000'000'000);
  EXPECT_EQ(memory.at("master_weights"), 28'000'000'000);
  EXPECT_EQ(memory.at("optimizer_states"), 56'000'000'000);
  EXPECT_EQ(memory.at("parameters") + memory.at("gradients") + memory.at("master_weights") +
                memory.at("optimizer_states"),
            112'000'000'000);
  EXPECT_TRUE(report.oom);
  EXPECT_DOUBLE_EQ(report.memory_capacity_bytes, 80e9);
}

TEST(WorkedExampleTest, C4FullyShardedSeventyBillionKeepsA2Point2GBGradientShard) {
  // 140 GB of fp16 gradients over 64 shards: 2.19 GB per GPU (3 %). Between two units'
  // backward passes a rank holds only its shard; the unit being reduced adds its full
  // gradients on top while its backward runs (transient: unsharded_gradients).
  const scenarios::RunResult run = run_of("c4_70b_fsdp_64gpu.toml");
  const trace::Timeline& timeline = run.simulation.timeline;
  const auto series = std::find(timeline.memory_series.begin(), timeline.memory_series.end(), "gradients") -
                      timeline.memory_series.begin();
  std::int64_t resident = 0;
  for (const trace::MemorySample& sample : timeline.memory) {
    if (sample.rank != 0 || sample.bytes[series] == 0) continue;
    resident = resident == 0 ? sample.bytes[series] : std::min(resident, sample.bytes[series]);
  }
  EXPECT_LT(relative_error(static_cast<double>(resident), 140e9 / 64), 0.03);
  EXPECT_EQ(run.report.peak_memory_breakdown.at("gradients"), resident);
  EXPECT_GT(run.report.peak_memory_breakdown.at("unsharded_gradients"), 0);
}

TEST(WorkedExampleTest, C6FullyShardedMovesOneAndAHalfTimesDdpsBytes) {
  // FSDP: all-gather before forward + all-gather before backward + reduce-scatter = 3Ψ(N−1)/N;
  // DDP: all-reduce = 2Ψ(N−1)/N. Ratio 1.5 within 2 % (the root unit, 3.9 % of Llama-7B,
  // keeps its parameters through forward and backward, as PyTorch's root does).
  const trace::Report fsdp = report_of("c6_fsdp_vs_ddp_traffic.toml");
  const trace::Report ddp = report_of("c6_fsdp_vs_ddp_traffic.toml", {"parallel.strategy=\"ddp\""});
  const double ratio = static_cast<double>(fsdp.comm_bytes_per_rank) / static_cast<double>(ddp.comm_bytes_per_rank);
  EXPECT_LT(relative_error(ratio, 1.5), 0.02) << ratio;
  EXPECT_LT(ratio, 1.5);
}

TEST(WorkedExampleTest, C7TensorParallelLayerTrafficFollowsTheRingFormula) {
  // 4 all-reduces of b·s·h per layer; ring traffic per GPU 4 · 2(t−1)/t · 2bsh bytes. The
  // chapter's 134 MB, 0.30 ms at 450 GB/s and 3.4 ms at 40 GB/s are the same formula with
  // (t−1)/t rounded to 1 (its P ≥ 8 approximation): undoing the rounding gives them within 3 %.
  const scenarios::RunResult run = run_of("c7_7b_tensor_parallel_traffic.toml");
  const LayerCost layer = layer_cost(run.simulation.timeline, "layer5");
  EXPECT_EQ(layer.collectives, 4);
  const double t = 8;
  EXPECT_NEAR(layer.comm_bytes, 4 * 2 * (t - 1) / t * kLlama7bActivation, 4);  // bytes rounded per op
  EXPECT_LT(relative_error(layer.comm_bytes * t / (t - 1), 134e6), 0.03);
  // Every TP all-reduce blocks the next op (dgrad all-reduces overlap only wgrad GEMMs).
  const double seconds_at_450 = layer.comm_bytes / 450e9;
  EXPECT_LT(relative_error(seconds_at_450 * t / (t - 1), 0.30e-3), 0.03);
  EXPECT_LT(relative_error(layer.comm_bytes / 40e9 * t / (t - 1), 3.4e-3), 0.03);
  double comm_s = 0;
  for (const trace::Span& span : run.simulation.timeline.spans) {
    if (span.rank == 0 && trace::is_communication(span.category) &&
        run.simulation.timeline.strings.at(span.name).rfind("layer5.", 0) == 0) {
      comm_s += static_cast<double>(span.duration_ps()) * 1e-12;
    }
  }
  EXPECT_NEAR(comm_s, seconds_at_450, 1e-9);
}

TEST(WorkedExampleTest, C8TensorParallelScalingTable) {
  // One layer at 14.0 ms on one GPU (compute.layer_compute_time_s). Per tp on NVSwitch the
  // chapter gives compute 7.0/3.5/1.75 ms, totals 7.3/3.8/2.05 ms and η 0.96/0.92/0.85, with
  // 0.30 ms of communication for every tp; dtsim's exact ring traffic (t−1)/t of it lands the
  // totals and η within 3 %. The scenario shards every op by tp (sequence parallelism), as the
  // chapter assumes; Megatron TP alone computes more, replicating norms and residual adds.
  struct Row {
    int tp;
    double compute_s, total_s, efficiency;
  };
  for (const Row row : {Row{2, 7.0e-3, 7.3e-3, 0.96}, Row{4, 3.5e-3, 3.8e-3, 0.92}, Row{8, 1.75e-3, 2.05e-3, 0.85}}) {
    const std::string tp = std::to_string(row.tp);
    const scenarios::RunResult run = run_of("c8_7b_tensor_parallel_scaling.toml",
                                            {"parallel.tp=" + tp, "cluster.gpus_per_node=" + tp});
    const LayerCost layer = layer_cost(run.simulation.timeline, "layer5");
    EXPECT_LT(relative_error(layer.compute_s, row.compute_s), 0.03) << "tp " << tp << ": " << layer.compute_s;
    EXPECT_LT(relative_error(layer.time_s(), row.total_s), 0.03) << "tp " << tp << ": " << layer.time_s();
    const double efficiency = 14.0e-3 / (row.tp * layer.time_s());
    EXPECT_LT(relative_error(efficiency, row.efficiency), 0.03) << "tp " << tp << ": " << efficiency;
    const LayerCost tensor_only =
        layer_cost(run_of("c8_7b_tensor_parallel_scaling.toml", {"parallel.tp=" + tp, "cluster.gpus_per_node=" + tp,
                                                                 "parallel.sequence_parallel=false"})
                       .simulation.timeline,
                   "layer5");
    EXPECT_GT(tensor_only.compute_s, layer.compute_s * 1.01);
    EXPECT_DOUBLE_EQ(tensor_only.comm_bytes, layer.comm_bytes);
  }
  // tp 2 across InfiniBand at 40 GB/s (two single-GPU nodes): the chapter adds 3.4 ms
  // (134 MB / 40 GB/s) for 10.4 ms and η 0.67; a ring of two moves half of that, 67 MB.
  const scenarios::RunResult ib = run_of(
      "c8_7b_tensor_parallel_scaling.toml",
      {"parallel.tp=2", "cluster.nodes=2", "cluster.gpus_per_node=1", "cluster.nics_per_node=1",
       "cluster.fabric.nic.bandwidth_gbyte_s=40", "cluster.fabric.nic.efficiency=1", "cluster.fabric.nic.latency_us=0",
       "cluster.pcie.latency_us=0", "cluster.fabric.uplink.latency_us=0"});
  const LayerCost layer = layer_cost(ib.simulation.timeline, "layer5");
  const double chapter_comm_s = 4 * 2 * kLlama7bActivation / 40e9;  // 3.36 ms
  EXPECT_NEAR(layer.exposed_comm_s, chapter_comm_s / 2, 0.01 * chapter_comm_s);
  EXPECT_LT(relative_error(layer.compute_s + chapter_comm_s, 10.4e-3), 0.03);
}

TEST(WorkedExampleTest, C9FullRecomputationRepeatsTheForwardAllReduces) {
  // Recomputing a layer's forward in backward repeats its 2 forward all-reduces: 4 → 6 per
  // layer, the forward traffic doubled. The chapter's 8bsh → 16bsh counts 8bsh for the
  // forward alone; over the whole layer the traffic grows 1.5×.
  const LayerCost plain = layer_cost(run_of("c9_tensor_parallel_recompute.toml",
                                            {"training.activation_checkpointing=\"none\""}).simulation.timeline, "layer5");
  const scenarios::RunResult recompute = run_of("c9_tensor_parallel_recompute.toml");
  const LayerCost checkpointed = layer_cost(recompute.simulation.timeline, "layer5");
  EXPECT_EQ(plain.collectives, 4);
  EXPECT_EQ(checkpointed.collectives, 6);
  EXPECT_DOUBLE_EQ(checkpointed.comm_bytes / plain.comm_bytes, 1.5);
  const LayerCost recomputed = layer_cost(recompute.simulation.timeline, "layer5.recompute");
  EXPECT_EQ(recomputed.collectives, 2);
  EXPECT_DOUBLE_EQ(recomputed.comm_bytes, plain.comm_bytes / 2);  // the forward's share, again
}

TEST(WorkedExampleTest, C10SequenceParallelMovesTheSameBytesAsTensorParallel) {
  // All-reduce = reduce-scatter + all-gather: per-layer traffic unchanged (2 %). Megatron's
  // regather of the sharded inputs for the weight gradients adds two all-gathers (+25 %).
  const double tp_only = layer_cost(run_of("c10_sequence_parallel_traffic.toml", {"parallel.sequence_parallel=false"})
                                        .simulation.timeline, "layer5").comm_bytes;
  const LayerCost sp = layer_cost(run_of("c10_sequence_parallel_traffic.toml").simulation.timeline, "layer5");
  EXPECT_EQ(sp.collectives, 8);
  EXPECT_LT(relative_error(sp.comm_bytes, tp_only), 0.02);
  const double regather = layer_cost(run_of("c10_sequence_parallel_traffic.toml",
                                            {"parallel.sequence_parallel_regather=true"}).simulation.timeline, "layer5")
                              .comm_bytes;
  EXPECT_NEAR(regather / tp_only, 1.25, 1e-6);
}

TEST(WorkedExampleTest, M2ZeroRedundancyOptimizerShardsOnlyTheMoments) {
  // Adam's m and v (56 GB) over 8 GPUs: 7 GB each; with 14 + 14 + 28 GB replicated, 63 GB.
  const trace::Report report = report_of("m2_7b_zero1_memory.toml");
  const auto& memory = report.peak_memory_breakdown;
  EXPECT_EQ(memory.at("optimizer_states"), 7'000'000'000);
  EXPECT_EQ(memory.at("parameters") + memory.at("gradients") + memory.at("master_weights") +
                memory.at("optimizer_states"),
            63'000'000'000);
  // DeepSpeed's ZeRO-1 also shards the fp32 master weights: 4Ψ + 12Ψ/N = 28 + 10.5 GB.
  const auto deepspeed = report_of("m2_7b_zero1_memory.toml", {"zero.implementation=\"deepspeed\""}).peak_memory_breakdown;
  EXPECT_EQ(deepspeed.at("parameters") + deepspeed.at("gradients") + deepspeed.at("master_weights") +
                deepspeed.at("optimizer_states"),
            38'500'000'000);
}

TEST(WorkedExampleTest, M3SeventyBillionModelStateIs1120GB) {
  // bf16 parameters 140 + bf16 gradients 140 + fp32 master, m and v 840 = 1120 GB.
  const auto memory = report_of("m3_70b_model_state.toml").peak_memory_breakdown;
  EXPECT_EQ(memory.at("parameters"), 140'000'000'000);
  EXPECT_EQ(memory.at("gradients"), 140'000'000'000);
  EXPECT_EQ(memory.at("master_weights") + memory.at("optimizer_states"), 840'000'000'000);
}

TEST(WorkedExampleTest, M4SequenceParallelismSavesSevenEighthsOfEachNormInput) {
  // A LayerNorm input of b·s·h·2 bytes = 64 MiB; sharded over tp 8 it keeps 8 MiB: 56 MiB
  // saved per layer and 4480 MiB over 80 layers (3 %). A Llama layer has two norms (each also
  // keeping one fp32 statistic per token) and the head a third; Megatron also stores the
  // inputs of the two column-parallel matmuls (QKV, MLP up) sequence-sharded and of the LM
  // head, gathering them again in backward — twice the saving.
  const double mib = 1024.0 * 1024.0;
  const double norm_input = 4096.0 * 8192 * 2;  // b·s·h·2 = 64 MiB
  EXPECT_DOUBLE_EQ(norm_input / mib, 64);
  const double saved_input = norm_input * 7 / 8;
  EXPECT_LT(relative_error(80 * saved_input / mib, 4480), 0.03);
  const double saved_statistic = 4096.0 * 4 * 7 / 8;  // RMSNorm's fp32 1/rms per token
  auto activation_saving = [](const std::vector<std::string>& overrides) {
    std::vector<std::string> without_sp = overrides;
    without_sp.push_back("parallel.sequence_parallel=false");
    return static_cast<double>(report_of("m4_70b_sequence_parallel_memory.toml", without_sp).peak_memory_breakdown.at("activations") -
                               report_of("m4_70b_sequence_parallel_memory.toml", overrides).peak_memory_breakdown.at("activations"));
  };
  const double norms_only = activation_saving({"parallel.sequence_parallel_regather=false"});
  EXPECT_NEAR(norms_only, (2 * 80 + 1) * (saved_input + saved_statistic), 1e-9 * norms_only);
  const double megatron = activation_saving({});
  EXPECT_NEAR(megatron - norms_only, (2 * 80 + 1) * saved_input, 1e-9 * megatron);
}

TEST(WorkedExampleTest, R1Llama3At16WayTensorParallelismIsRejected) {
  try {
    scenarios::load_scenario(kScenarios + "r1_llama3_8b_tp16.toml");
    FAIL() << "tp 16 with 8 KV heads must be rejected";
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.key(), "parallel.tp");
    EXPECT_NE(error.message().find("kv_heads 8 is not divisible by tp 16"), std::string::npos) << error.what();
    EXPECT_NE(error.hint().find("context parallelism (tp = 8, cp = 2"), std::string::npos) << error.what();
    EXPECT_NE(error.hint().find("pipeline parallelism"), std::string::npos);
  }
  // The way out it offers works: 16 GPUs per layer as tp 8 × cp 2.
  scenarios::ScenarioDocument document = scenarios::ScenarioDocument::from_file(kScenarios + "r1_llama3_8b_tp16.toml");
  for (const std::string assignment : {"parallel.tp=8", "parallel.cp=2"}) document.set(assignment, "--set " + assignment);
  const auto result = scenarios::run_scenario(document.read());
  EXPECT_EQ(result.program.world_size, 16);
  EXPECT_GT(result.report.step_time_s, 0);
}

TEST(WorkedExampleTest, BarrierCostGrowsLinearlyWithTheNumberOfRanks) {
  // Chapter §6.2.5: a barrier is a ring of latency-bound steps: 2(P−1)·α, O(P·α). With all
  // nodes on one leaf every ring hop between nodes has α = 2.7 µs (PCIe, NIC, leaf, NIC, PCIe).
  auto barrier_time = [](int nodes) {
    const std::vector<std::string> set = {"cluster.nodes=" + std::to_string(nodes),
                                          "cluster.fabric.leaf_down_ports=64",
                                          "training.global_batch=" + std::to_string(8 * nodes),
                                          "ddp.barrier_every_step=true", "collectives.barrier=ring",
                                          "collectives.library=\"ideal\""};  // the chapter's α-β
    return report_of("default.toml", set).time_by_category_s.at("barrier");
  };
  EXPECT_NEAR(barrier_time(2), 2 * 15 * 2.7e-6, 0.01 * 2 * 15 * 2.7e-6);  // 16 ranks
  EXPECT_NEAR(barrier_time(8), 2 * 63 * 2.7e-6, 0.01 * 2 * 63 * 2.7e-6);  // 64 ranks
}

}  // namespace

namespace {

// A front end (the viewer) follows a long run and may stop it.
TEST(RunScenarioTest, ProgressRisesToCompletionAndCanCancel) {
  // Eight micro-steps on every rank: enough events for several progress reports (one per
  // 4,096 events).
  const scenarios::Scenario scenario =
      scenarios::load_scenario(kScenarios + "default.toml", {"training.global_batch=128", "network.symmetry=false"});
  std::vector<double> fractions;
  std::vector<double> clock;
  std::vector<std::uint64_t> events;
  scenarios::run_scenario(scenario, [&](const sim::SimulationProgress& progress) {
    fractions.push_back(progress.fraction_done);
    clock.push_back(progress.simulated_s);
    events.push_back(progress.events);
    return true;
  });
  ASSERT_GE(fractions.size(), 3u);
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  EXPECT_TRUE(std::is_sorted(clock.begin(), clock.end()));
  EXPECT_TRUE(std::is_sorted(events.begin(), events.end()));
  EXPECT_EQ(events.front(), 0u);  // the report as the run starts
  EXPECT_EQ(fractions.front(), 0.0);
  EXPECT_GT(events[1], 0u);
  EXPECT_GT(fractions[1], 0.0);
  EXPECT_LE(fractions.back(), 1.0);

  int calls = 0;
  EXPECT_THROW(scenarios::run_scenario(scenario, [&](const sim::SimulationProgress&) { return ++calls < 3; }),
               sim::SimulationCancelled);
  EXPECT_EQ(calls, 3);
}

}  // namespace
