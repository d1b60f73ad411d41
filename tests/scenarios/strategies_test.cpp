// The training strategies end to end (scenario → lowering → simulation → report): ZeRO's and
// FSDP's memory and traffic, FSDP's scheduling knobs, pipeline schedules and their bubble,
// activation checkpointing, CPU offload. Expected values come from the papers' formulas, not
// from dtsim.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>

#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "strategies/lowering.h"

namespace {

// Llama-2-7B (counted as exactly 7e9 parameters) on one 8 × H100 node, one micro-batch per GPU.
const std::string kNode = R"(
[cluster]
node = "hgx-h100"
nodes = 1

[model]
preset = "llama-2-7b"
parameter_count = 7e9

[training]
global_batch = 8
micro_batch = 1
sequence_length = 2048

[network]
model = "analytic"
)";

scenarios::RunResult run(const std::string& text, const std::vector<std::string>& overrides) {
  scenarios::ScenarioDocument document = scenarios::ScenarioDocument::from_string(text, "test.toml");
  for (const std::string& assignment : overrides) document.set(assignment, "--set " + assignment);
  return scenarios::run_scenario(document.read());
}

// Bytes of each model state rank 0 allocates before its first op runs.
std::map<std::string, double> model_states(const program::Program& program) {
  static const std::vector<std::string> kStates = {"parameters", "gradients", "master_weights", "optimizer_states"};
  std::map<std::string, double> states;
  for (const program::Op& op : program.ranks.front()->ops) {
    const auto* memory = std::get_if<program::MemoryOp>(&op.body);
    if (memory == nullptr) break;
    if (memory->allocate && std::find(kStates.begin(), kStates.end(), op.name) != kStates.end()) {
      states[op.name] += static_cast<double>(memory->bytes);
    }
  }
  return states;
}
double total(const std::map<std::string, double>& states) {
  double sum = 0;
  for (const auto& [name, bytes] : states) sum += bytes;
  return sum;
}

// Bytes rank 0 sends per step in collectives of one kind.
double sent(const scenarios::RunResult& result, const char* category) {
  const auto& bytes = result.report.achieved_bandwidth_by_category;
  const auto& time = result.report.time_by_category_s;
  if (!bytes.count(category)) return 0;
  return bytes.at(category) * time.at(category);
}

constexpr double kParameters = 7e9;
constexpr double kRing8 = 7.0 / 8;  // (N − 1)/N of a ring on 8 ranks

// Bytes rank 0's optimizer step moves.
double optimizer_bytes(const scenarios::RunResult& result) {
  double bytes = 0;
  for (const program::Op& op : result.program.ranks.front()->ops) {
    const auto* compute = std::get_if<program::ComputeOp>(&op.body);
    if (compute != nullptr && compute->kind == program::ComputeKind::kOptimizer) bytes += compute->bytes;
  }
  return bytes;
}

// Rank 0's op named `name` (its index) and the names of the ops it depends on.
std::pair<program::OpIndex, std::set<std::string>> op_and_deps(const program::Program& program, const std::string& name) {
  const auto& ops = program.ranks[0]->ops;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name != name) continue;
    std::set<std::string> deps;
    for (program::OpIndex dep : ops[i].deps) deps.insert(ops[dep].name);
    return {static_cast<program::OpIndex>(i), deps};
  }
  ADD_FAILURE() << "no op " << name;
  return {};
}

TEST(ZeroTest, ModelStatesPerDeviceFollowTheZeroPaper) {
  // Mixed-precision Adam, N = 8 (Rajbhandari et al., SC 2020, figure 1): stage 1 4Ψ + 12Ψ/N,
  // stage 2 2Ψ + 14Ψ/N, stage 3 16Ψ/N bytes.
  const double psi = kParameters, n = 8;
  const std::map<int, double> expected = {{1, 4 * psi + 12 * psi / n}, {2, 2 * psi + 14 * psi / n}, {3, 16 * psi / n}};
  for (const auto& [stage, bytes] : expected) {
    const auto result = run(kNode, {"parallel.strategy=\"zero\"", "zero.stage=" + std::to_string(stage)});
    EXPECT_NEAR(total(model_states(result.program)), bytes, 1e3) << "stage " << stage;
  }
  // DDP keeps all 16Ψ.
  EXPECT_NEAR(total(model_states(run(kNode, {"ddp.gradient_as_bucket_view=true"}).program)), 16 * psi, 1e3);
  // A context-parallel group shards them too (dp 1 × cp 8: the same 8 shards), and the run's
  // title names the strategy, as it does for dp 8 (it named none: ZeRO-1, ZeRO-3 and DDP read
  // alike).
  const auto context_parallel =
      run(kNode, {"parallel.strategy=\"zero\"", "zero.stage=1", "parallel.dp=1", "parallel.cp=8"});
  EXPECT_NEAR(total(model_states(context_parallel.program)), expected.at(1), 1e3);
  EXPECT_NE(context_parallel.program.info.description.find("ZeRO-1 on"), std::string::npos)
      << context_parallel.program.info.description;
}

TEST(ZeroTest, TheReportSeparatesResidentModelStatesAsTheZeroPapersTableCountsThem) {
  // Rajbhandari et al., SC 2020, table 1: Ψ = 7.5B, K = 12, ZeRO-3 (P_os+g+p) needs 16Ψ/N per
  // device — 1.88 GB at N = 64, 0.12 GB at N = 1024. The report's resident model states are
  // exactly that at the peak; the peak itself adds the gathered units and activations.
  for (const int gpus : {64, 1024}) {
    const auto result = run(kNode, {"cluster.nodes=" + std::to_string(gpus / 8), "model.parameter_count=7.5e9",
                                    "training.global_batch=" + std::to_string(gpus), "parallel.strategy=\"zero\"",
                                    "zero.stage=3"});
    const double expected = 16 * 7.5e9 / gpus;
    EXPECT_NEAR(static_cast<double>(result.report.peak_model_state_bytes), expected, 1e-6 * expected) << gpus;
    EXPECT_GT(result.report.peak_memory_breakdown.at("gathered_parameters"), 0) << gpus;
    EXPECT_GT(static_cast<double>(result.report.peak_memory_bytes), 1.5 * expected) << gpus;
  }
}

TEST(ZeroTest, TrafficPerStepOfEachStage) {
  // bf16 gradients and parameters, 2Ψ bytes each. Stages 1 and 2 reduce-scatter the gradients
  // and all-gather the updated parameters: 2 · 2Ψ(N−1)/N, DDP's all-reduce volume. Stage 3
  // all-gathers the parameters in forward and again in backward: 3 · 2Ψ(N−1)/N.
  // The paper's volumes are a ring's: the all-reduces are pinned to it (on this H100 node NCCL
  // would run NVLS, which moves (N+1)/N of the data instead of 2(N−1)/N).
  const double volume = 2 * kParameters * kRing8;
  const std::string ring = "collectives.all_reduce=\"ring\"";
  const auto ddp = run(kNode, {ring});
  EXPECT_NEAR(static_cast<double>(ddp.report.comm_bytes_per_rank), 2 * volume, 1e-3 * volume);
  EXPECT_NEAR(static_cast<double>(run(kNode, {}).report.comm_bytes_per_rank), 2 * kParameters * 9 / 8, 1e-3 * volume);
  for (int stage : {1, 2}) {
    const auto zero = run(kNode, {"parallel.strategy=\"zero\"", "zero.stage=" + std::to_string(stage)});
    EXPECT_NEAR(sent(zero, "reduce_scatter"), volume, 1e-3 * volume) << stage;
    EXPECT_NEAR(sent(zero, "all_gather"), volume, 1e-3 * volume) << stage;
  }
  const auto stage3 = run(kNode, {"parallel.strategy=\"zero\"", "zero.stage=3"});
  EXPECT_NEAR(sent(stage3, "reduce_scatter"), volume, 1e-3 * volume);
  // The root unit (embedding and head, 3.7 % of Llama-2-7B) is gathered once.
  EXPECT_GT(sent(stage3, "all_gather"), 1.9 * volume);
  EXPECT_LT(sent(stage3, "all_gather"), 2 * volume);
  // ZeroRedundancyOptimizer keeps DDP's all-reduce and then all-gathers the parameters: 3 · 2Ψ.
  const auto pytorch = run(kNode, {"parallel.strategy=\"zero\"", "zero.implementation=\"pytorch\"", ring});
  EXPECT_NEAR(sent(pytorch, "all_reduce"), 2 * volume, 1e-3 * volume);
  EXPECT_NEAR(sent(pytorch, "all_gather"), volume, 1e-3 * volume);
}

TEST(ZeroTest, OverlappedParameterGatherHidesBehindTheForward) {
  // Megatron's --overlap-param-gather: the same bytes, gathered bucket by bucket (Llama-2-7B's
  // layers hold 202M parameters each, over the 40M bucket size: one bucket per block, 34) while
  // the forward runs, each bucket's gather complete before its first forward op.
  const std::vector<std::string> zero1 = {"parallel.strategy=\"zero\"", "zero.stage=1"};
  std::vector<std::string> overlap = zero1;
  overlap.push_back("zero.overlap_param_gather=true");
  const auto after_step = run(kNode, zero1), in_forward = run(kNode, overlap);
  EXPECT_NEAR(sent(in_forward, "all_gather"), sent(after_step, "all_gather"), 1e-6 * sent(after_step, "all_gather"));
  EXPECT_LT(in_forward.report.exposed_comm_s, after_step.report.exposed_comm_s);
  EXPECT_LT(in_forward.report.step_time_s, after_step.report.step_time_s);
  const trace::Timeline& timeline = in_forward.simulation.timeline;
  std::map<std::string, std::int64_t> gathered;  // bucket → end of its all-gather on rank 0
  std::int64_t first_forward = std::numeric_limits<std::int64_t>::max(), last_gather_end = 0;
  for (const trace::Span& span : timeline.spans) {
    const std::string& name = timeline.strings.at(span.name);
    if (span.rank != 0) continue;
    if (name.rfind("zero.parameters.bucket", 0) == 0) {
      gathered[name] = span.end_ps;
      last_gather_end = std::max(last_gather_end, span.end_ps);
    }
    if (span.category == trace::Category::kForward) first_forward = std::min(first_forward, span.start_ps);
  }
  EXPECT_EQ(gathered.size(), 34u);
  EXPECT_LT(first_forward, last_gather_end);  // the forward starts before the last bucket arrives
  EXPECT_GE(first_forward, gathered.at("zero.parameters.bucket0.all_gather"));
  EXPECT_THROW(run(kNode, {"parallel.strategy=\"zero\"", "zero.stage=3", "zero.overlap_param_gather=true"}),
               scenarios::ScenarioError);
}

TEST(FsdpTest, ShardGradOpAndKeepingParametersGatherOnce) {
  // SHARD_GRAD_OP (ZeRO-2-like) and reshard_after_forward = false keep each unit's gathered
  // parameters from forward to backward: one all-gather per unit instead of two.
  const auto full = run(kNode, {"parallel.strategy=\"fsdp\""});
  for (const char* knob : {"fsdp.sharding_strategy=\"SHARD_GRAD_OP\"", "fsdp.reshard_after_forward=false"}) {
    const auto kept = run(kNode, {"parallel.strategy=\"fsdp\"", knob});
    EXPECT_NEAR(sent(kept, "all_gather") / sent(full, "all_gather"), 0.5, 0.02) << knob;
    EXPECT_DOUBLE_EQ(sent(kept, "reduce_scatter"), sent(full, "reduce_scatter")) << knob;
    // ... at the price of holding every layer's parameters at the end of forward.
    EXPECT_GT(kept.report.peak_memory_breakdown.at("gathered_parameters"),
              full.report.peak_memory_breakdown.at("gathered_parameters"));
  }
}

TEST(FsdpTest, SizeBasedWrapGroupsConsecutiveLayersUntilAUnitHoldsMinNumParams) {
  // Llama-2-7B's 32 layers hold 202.4M parameters each, 210.2M once scaled to 7e9 in all: a
  // unit closes at the first layer that brings it to min_num_params — two layers for 400M (16
  // units), three for 500M (ten units, and the last two layers as an eleventh). Each layer unit
  // is gathered for its forward and again for its backward, the root once; the bytes stay.
  const auto gathers = [](const scenarios::RunResult& result) {
    std::vector<std::string> names;
    const trace::Timeline& timeline = result.simulation.timeline;
    for (const trace::Span& span : timeline.spans) {
      const std::string& name = timeline.strings.at(span.name);
      if (span.rank == 0 && name.ends_with(".all_gather")) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  const auto per_layer = run(kNode, {"parallel.strategy=\"fsdp\""});
  EXPECT_EQ(gathers(per_layer).size(), 2u * 32 + 1);
  for (const auto& [min_num_params, units, last_unit] :
       {std::tuple{"400e6", 16u, "layer30-layer31"}, std::tuple{"500e6", 11u, "layer30-layer31"}}) {
    const auto grouped =
        run(kNode, {"parallel.strategy=\"fsdp\"", "fsdp.auto_wrap_policy=\"size_based\"",
                    std::string("fsdp.min_num_params=") + min_num_params});
    const std::vector<std::string> names = gathers(grouped);
    EXPECT_EQ(names.size(), 2u * units + 1) << min_num_params;
    EXPECT_TRUE(
        std::binary_search(names.begin(), names.end(), std::string(last_unit) + ".fwd.all_gather"))
        << min_num_params;
    EXPECT_NEAR(sent(grouped, "all_gather"), sent(per_layer, "all_gather"),
                1e-6 * sent(per_layer, "all_gather"));
  }
}

// The most bytes of one memory series rank 0 holds at any time.
double most_held(const trace::Timeline& timeline, const std::string& series) {
  const auto index = std::find(timeline.memory_series.begin(), timeline.memory_series.end(), series) -
                     timeline.memory_series.begin();
  std::int64_t most = 0;
  for (const trace::MemorySample& sample : timeline.memory) {
    if (sample.rank == 0) most = std::max(most, sample.bytes.at(static_cast<std::size_t>(index)));
  }
  return static_cast<double>(most);
}

TEST(FsdpTest, LimitAllGathersBoundsTheGatheredParameters) {
  // With forward prefetching and no limit, every unit's all-gather is issued at once and
  // their parameters pile up; limit_all_gathers keeps at most two layer units gathered beside
  // the root unit (the embedding and the LM head, held through the step) within a pass, and a
  // third where the backward's first gather meets the forward's last unit.
  const std::vector<std::string> base = {"parallel.strategy=\"fsdp\"", "fsdp.forward_prefetch=true"};
  auto unlimited = base;
  unlimited.push_back("fsdp.limit_all_gathers=false");
  const auto limited = run(kNode, base);
  const auto piled = run(kNode, unlimited);
  // Llama-2-7B's bf16 parameters: the root's two 32,000 × 4,096 matrices and final norm, a
  // layer's 4 · 4,096² + 3 · 4,096 · 11,008 weights and two norms, scaled to 7e9 in all.
  const double true_total = 32 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2 * 4096) + 2.0 * 32000 * 4096 + 4096;
  const double scale = kParameters / true_total;
  const double root = (2.0 * 32000 * 4096 + 4096) * scale * 2;
  const double layer = (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2 * 4096) * scale * 2;
  const double limited_most = most_held(limited.simulation.timeline, "gathered_parameters");
  EXPECT_LE(limited_most, root + 3 * layer + 1e3);
  EXPECT_GT(most_held(piled.simulation.timeline, "gathered_parameters"), limited_most + 4 * layer);
}

TEST(FsdpTest, BackwardPrefetchHidesTheAllGathers) {
  // BACKWARD_PRE issues the next unit's all-gather before the current unit's backward,
  // BACKWARD_POST after it, none only once its gradients are reduced: exposed communication
  // and step time grow in that order.
  auto step = [](const char* prefetch) {
    return run(kNode, {"parallel.strategy=\"fsdp\"", std::string("fsdp.backward_prefetch=\"") + prefetch + "\""}).report;
  };
  const auto pre = step("BACKWARD_PRE"), post = step("BACKWARD_POST"), none = step("NONE");
  EXPECT_LE(pre.exposed_comm_s, post.exposed_comm_s);
  EXPECT_LT(post.exposed_comm_s, none.exposed_comm_s);
  EXPECT_LT(pre.step_time_s, none.step_time_s);
}

// Rank 0's all-gather and reduce-scatter spans that overlap in time, counted in pairs.
int gathers_beside_reductions(const trace::Timeline& timeline) {
  std::vector<std::pair<std::int64_t, std::int64_t>> reductions;
  for (const trace::Span& span : timeline.spans) {
    if (span.rank == 0 && span.category == trace::Category::kReduceScatter) reductions.emplace_back(span.start_ps, span.end_ps);
  }
  int pairs = 0;
  for (const trace::Span& span : timeline.spans) {
    if (span.rank != 0 || span.category != trace::Category::kAllGather) continue;
    for (const auto& [start, end] : reductions) pairs += span.start_ps < end && start < span.end_ps ? 1 : 0;
  }
  return pairs;
}

TEST(FsdpTest, OneProcessGroupRunsItsGathersAndReductionsOneAtATimeInIssueOrder) {
  // PyTorch runs every collective of a process group on its one NCCL stream: FSDP's
  // all-gathers and reduce-scatters over the shard group take turns, in the order the hooks
  // issue them. BACKWARD_PRE issues layer30's all-gather before layer31's reduce-scatter, NONE
  // after it. With a process group of its own the reduce-scatter runs beside the all-gathers.
  // fp32 gradients and no limit on the gathers make the two compete for the links.
  const std::vector<std::string> busy = {"parallel.strategy=\"fsdp\"", "fsdp.reduce_dtype=\"fp32\"",
                                         "fsdp.limit_all_gathers=false"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), busy.begin(), busy.end());
    return run(kNode, more);
  };
  const auto shared = with({});
  const auto separate = with({"fsdp.separate_reduce_scatter_group=true"});
  const auto none = with({"fsdp.backward_prefetch=\"NONE\""});
  const auto [gather, gather_deps] = op_and_deps(shared.program, "layer30.bwd.all_gather");
  const auto [reduction, reduction_deps] = op_and_deps(shared.program, "layer31.reduce_scatter");
  const auto& ops = shared.program.ranks[0]->ops;
  EXPECT_EQ(ops[gather].stream, ops[reduction].stream);
  EXPECT_LT(gather, reduction);
  EXPECT_GT(op_and_deps(none.program, "layer30.bwd.all_gather").first,
            op_and_deps(none.program, "layer31.reduce_scatter").first);
  const auto& separate_ops = separate.program.ranks[0]->ops;
  EXPECT_NE(separate_ops[op_and_deps(separate.program, "layer30.bwd.all_gather").first].stream,
            separate_ops[op_and_deps(separate.program, "layer31.reduce_scatter").first].stream);
  EXPECT_EQ(gathers_beside_reductions(shared.simulation.timeline), 0);
  EXPECT_GT(gathers_beside_reductions(separate.simulation.timeline), 0);
  // Each layer's backward needs its all-gather, which now queues behind a reduce-scatter.
  EXPECT_GE(shared.report.exposed_comm_s, separate.report.exposed_comm_s);
}

TEST(FsdpTest, MixedPrecisionDtypesSetTheBytesMoved) {
  // param_dtype sets what all-gathers move (and the gathered parameters' size), reduce_dtype
  // what reduce-scatters move.
  const auto bf16 = run(kNode, {"parallel.strategy=\"fsdp\""});
  const auto fp32_params = run(kNode, {"parallel.strategy=\"fsdp\"", "fsdp.param_dtype=\"fp32\""});
  const auto fp32_reduce = run(kNode, {"parallel.strategy=\"fsdp\"", "fsdp.reduce_dtype=\"fp32\""});
  EXPECT_NEAR(sent(fp32_params, "all_gather") / sent(bf16, "all_gather"), 2.0, 1e-6);
  EXPECT_NEAR(sent(fp32_reduce, "reduce_scatter") / sent(bf16, "reduce_scatter"), 2.0, 1e-6);
  EXPECT_DOUBLE_EQ(sent(fp32_reduce, "all_gather"), sent(bf16, "all_gather"));
}

// Rank 0's ops whose names end in `suffix`: where they are, and the bytes the compute ones move.
struct OpsFound {
  std::vector<std::size_t> indices;
  double bytes = 0;
  int count() const { return static_cast<int>(indices.size()); }
};
OpsFound ops_ending(const program::Program& program, const std::string& suffix) {
  const auto& ops = program.ranks.front()->ops;
  OpsFound found;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name.size() <= suffix.size() || !ops[i].name.ends_with(suffix)) continue;
    found.indices.push_back(i);
    if (const auto* compute = std::get_if<program::ComputeOp>(&ops[i].body)) found.bytes += compute->bytes;
  }
  return found;
}

// Whether each op "<unit><suffix>" of `found` comes before its unit's reduce-scatter: following
// the first dependency back from the op named "<unit>.reduce_scatter" reaches it.
bool each_before_its_reduce_scatter(const program::Program& program, const OpsFound& found, const std::string& suffix) {
  const auto& ops = program.ranks.front()->ops;
  for (std::size_t i : found.indices) {
    const std::string unit = ops[i].name.substr(0, ops[i].name.size() - suffix.size());
    bool reaches = false;
    for (std::size_t j = i + 1; j < ops.size() && !reaches; ++j) {
      if (ops[j].name != unit + ".reduce_scatter") continue;
      for (std::size_t at = j; !ops[at].deps.empty() && !reaches;) {
        at = ops[at].deps.front();
        reaches = at == i;
        if (at < i) break;
      }
    }
    if (!reaches) return false;
  }
  return true;
}

TEST(FsdpTest, GradientsAreCopiedCastAndPredividedBeforeTheirReduceScatter) {
  // PyTorch FSDP's post-backward work on each unit's unsharded gradient, N parameters in all
  // (7e9 here): autograd's copy into the FlatParameter's gradient (2·N·2 bytes in bf16), the
  // cast to an fp32 reduce_dtype (N·(2 + 4)), and the in-place pre-divide by
  // _get_gradient_predivide_factor(8) = 4 (2·N·r).
  const auto fp32_reduce = run(kNode, {"parallel.strategy=\"fsdp\"", "fsdp.reduce_dtype=\"fp32\""});
  const auto copies = ops_ending(fp32_reduce.program, ".flat_gradient");
  const auto casts = ops_ending(fp32_reduce.program, ".gradient_cast");
  const auto divides = ops_ending(fp32_reduce.program, ".gradient_predivide");
  EXPECT_NEAR(copies.bytes, 2 * kParameters * 2, 1e3);
  EXPECT_NEAR(casts.bytes, kParameters * (2 + 4), 1e3);
  EXPECT_NEAR(divides.bytes, 2 * kParameters * 4, 1e3);
  EXPECT_EQ(copies.count(), 33);  // 32 layers and the root unit (embedding, final norm, head)
  EXPECT_EQ(casts.count(), copies.count());
  EXPECT_EQ(divides.count(), copies.count());
  EXPECT_TRUE(each_before_its_reduce_scatter(fp32_reduce.program, copies, ".flat_gradient"));
  EXPECT_TRUE(each_before_its_reduce_scatter(fp32_reduce.program, casts, ".gradient_cast"));
  EXPECT_TRUE(each_before_its_reduce_scatter(fp32_reduce.program, divides, ".gradient_predivide"));

  // With the gradient reduced in its own dtype there is nothing to cast; the divide moves bf16.
  const auto bf16 = run(kNode, {"parallel.strategy=\"fsdp\""});
  EXPECT_EQ(ops_ending(bf16.program, ".gradient_cast").count(), 0);
  EXPECT_NEAR(ops_ending(bf16.program, ".gradient_predivide").bytes, 2 * kParameters * 2, 1e3);
  // BACKWARD_POST's prefetch is issued by the post-backward hook before these passes: each
  // backward all-gather (its buffer's allocation, just before it) waits for a unit's last
  // backward op, never for one of the passes.
  const auto post = run(kNode, {"parallel.strategy=\"fsdp\"", "fsdp.reduce_dtype=\"fp32\"",
                                "fsdp.backward_prefetch=\"BACKWARD_POST\""});
  const auto& ops = post.program.ranks.front()->ops;
  int waits_for_a_backward = 0;
  for (std::size_t gather : ops_ending(post.program, ".bwd.all_gather").indices) {
    ASSERT_TRUE(ops[gather - 1].name.ends_with(".gathered_parameters")) << ops[gather - 1].name;
    for (program::OpIndex dep : ops[gather - 1].deps) {
      EXPECT_FALSE(ops[dep].name.ends_with(".flat_gradient") || ops[dep].name.ends_with(".gradient_cast") ||
                   ops[dep].name.ends_with(".gradient_predivide"))
          << ops[gather].name << " waits for " << ops[dep].name;
      waits_for_a_backward += ops[dep].name.find(".bwd.") != std::string::npos;
    }
  }
  EXPECT_GT(waits_for_a_backward, 0);

  // DeepSpeed's ZeRO-3 has a gradient path of its own, not modelled by these passes.
  EXPECT_EQ(ops_ending(run(kNode, {"parallel.strategy=\"zero\"", "zero.stage=3"}).program, ".flat_gradient").count(), 0);

  // The passes take the GPU's time at its streaming rate (H100: 2.97 TB/s, BabelStream): the
  // cast and the wider divide, 42 + 28 GB, add 23.6 ms of compute (compute beside a collective
  // kept at full speed, so that the longer fp32 reduce-scatters slow nothing).
  const std::string unslowed = "compute.overlap_slowdown=0";
  const double added = run(kNode, {"parallel.strategy=\"fsdp\"", "fsdp.reduce_dtype=\"fp32\"", unslowed}).report.compute_time_s -
                       run(kNode, {"parallel.strategy=\"fsdp\"", unslowed}).report.compute_time_s;
  EXPECT_NEAR(added, (42e9 + 28e9) / 2.97e12, 0.05 * (42e9 + 28e9) / 2.97e12);
}

TEST(OptimizerTest, UnfusedImplementationsMoveEveryOpsTensors) {
  // FSDP's fp32 shard (weight, gradient and each moment 4 bytes; 1/8 of 7e9 parameters), the
  // passes as each source writes them, bytes per parameter:
  //   fused (one kernel)  gradient 4 + moments 16 + weight 8                                  = 28
  //   torch AdamW, wd 0.01 (torch/optim/adamw.py): param.mul_ 8, exp_avg.lerp_(grad) 12,
  //     exp_avg_sq.mul_ 8, .addcmul_(grad, grad) 12, sqrt 8, / √bc2 8, .add_(eps) 8,
  //     param.addcdiv_(exp_avg, denom) 16                                                      = 80
  //   torch Adam, wd 0: the same without param.mul_                                           = 72
  //   torch Adam, wd 0.1: grad.add(param) instead, reading both and writing a new gradient 12 = 84
  //   Composer's DecoupledAdamW, wd 0: exp_avg.mul_(β1).add_(grad) 8 + 12 for the lerp        = 80
  //   Composer's DecoupledAdamW, wd 0.1: with param.mul_                                       = 88
  //   torch SGD with momentum, wd 0 (torch/optim/sgd.py): buf.mul_ 8, .add_(grad) 12,
  //     param.add_(buf) 12                                                                     = 32
  const std::string fsdp = "parallel.strategy=\"fsdp\"";
  const auto per_parameter = [&](std::vector<std::string> more) {
    more.push_back(fsdp);
    return optimizer_bytes(run(kNode, more)) / (kParameters / 8);
  };
  const std::string torch = "training.optimizer_implementation=\"torch\"";
  const std::string composer = "training.optimizer_implementation=\"composer\"";
  EXPECT_NEAR(per_parameter({}), 28, 1e-6);
  EXPECT_NEAR(per_parameter({torch}), 80, 1e-6);
  EXPECT_NEAR(per_parameter({torch, "training.optimizer=\"adam\""}), 72, 1e-6);
  EXPECT_NEAR(per_parameter({torch, "training.optimizer=\"adam\"", "training.weight_decay=0.1"}), 84, 1e-6);
  EXPECT_NEAR(per_parameter({composer, "training.weight_decay=0.0"}), 80, 1e-6);
  EXPECT_NEAR(per_parameter({composer, "training.weight_decay=0.1"}), 88, 1e-6);
  EXPECT_NEAR(per_parameter({torch, "training.optimizer=\"sgd\""}), 32, 1e-6);
  // Under mixed precision with a master (DDP), the passes update the fp32 master, whose copy to
  // the bf16 weight (4 + 2) and the gradient's to fp32 (2 + 4) come on top: 80 + 12 = 92.
  EXPECT_NEAR(optimizer_bytes(run(kNode, {torch})), 92 * kParameters, 1e3);
}

TEST(DdpTest, AutogradAddsEachLaterMicroBatchsGradientsUnlessTheGemmAccumulates) {
  // 4 micro-batches per step (global batch 32 on 8 ranks): on micro-batches 2–4 PyTorch's
  // AccumulateGrad adds the new bf16 gradients into those held, reading two and writing one:
  // 3 × 3 · 2 bytes per parameter per step. Megatron's gradient-accumulation fusion does it
  // inside the weight-gradient GEMM; sharded FSDP reduces every micro-batch and adds only shards.
  const std::vector<std::string> accumulating = {"training.global_batch=32", "compute.overlap_slowdown=0"};
  const auto autograd = run(kNode, accumulating);
  const auto adds = ops_ending(autograd.program, ".accumulate");
  EXPECT_NEAR(adds.bytes, 3 * 3 * 2 * kParameters, 1e3);
  const int per_micro_batch = ops_ending(run(kNode, {"training.global_batch=16"}).program, ".accumulate").count();
  EXPECT_GT(per_micro_batch, 0);
  EXPECT_EQ(adds.count(), 3 * per_micro_batch);  // one pass per gradient-producing op, per later micro-batch
  EXPECT_EQ(ops_ending(run(kNode, {}).program, ".accumulate").count(), 0);  // one micro-batch: nothing held
  // Each step starts with none held (the optimizer consumed them): two steps, twice the adds.
  EXPECT_EQ(ops_ending(run(kNode, {"training.global_batch=16", "training.steps=2"}).program, ".accumulate").count(),
            2 * per_micro_batch);

  auto fused = accumulating;
  fused.push_back("ddp.gradient_accumulation_fusion=true");
  const auto megatron = run(kNode, fused);
  EXPECT_EQ(ops_ending(megatron.program, ".accumulate").count(), 0);
  auto zero = accumulating;  // ZeRO-1/2 hold whole gradients until the last micro-batch too
  zero.insert(zero.end(), {"parallel.strategy=\"zero\"", "zero.stage=2"});
  EXPECT_EQ(ops_ending(run(kNode, zero).program, ".accumulate").count(), adds.count());
  auto sharded = accumulating;
  sharded.push_back("parallel.strategy=\"fsdp\"");
  EXPECT_EQ(ops_ending(run(kNode, sharded).program, ".accumulate").count(), 0);

  // The adds stream at the H100's measured rate (2.97 TB/s, BabelStream), plus a 2 µs launch
  // each (the compute model's kernel overhead); compute beside the all-reduces is not slowed.
  const double expected = 3 * 3 * 2 * kParameters / 2.97e12 + adds.count() * 2e-6;
  EXPECT_NEAR(autograd.report.compute_time_s - megatron.report.compute_time_s, expected, 0.05 * expected);
}

TEST(DdpTest, ACollectiveIssuedAfterGradientsAreAddedWaitsForTheAdd) {
  // PyTorch's autograd runs AccumulateGrad as soon as its gradient is ready, and a collective is
  // issued from the compute stream behind everything it holds: the tensor-parallel all-reduce
  // of the input gradient that follows a linear layer's backward (Megatron-LM's
  // mpu/mappings.py, 2021) waits for the weight gradient's add, as the gradient buckets do. It
  // ran beside the add, which left out up to 2.2 % of SC'21's pipelined steps (310B).
  const auto result = run(kNode, {"parallel.tp=2", "training.global_batch=32"});
  const auto& ops = result.program.ranks.front()->ops;
  std::optional<std::size_t> last_add;  // an add with no compute op after it yet
  int waiting = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name.ends_with(".accumulate")) {
      last_add = i;
    } else if (std::holds_alternative<program::ComputeOp>(ops[i].body)) {
      last_add.reset();
    } else if (std::holds_alternative<program::CollectiveOp>(ops[i].body) && last_add) {
      const auto& deps = ops[i].deps;
      EXPECT_NE(std::find(deps.begin(), deps.end(), *last_add), deps.end())
          << ops[i].name << " does not wait for " << ops[*last_add].name;
      ++waiting;
    }
  }
  EXPECT_GT(waiting, 0);
}

TEST(OptimizerTest, MixedPrecisionStepsFromFp32GradientsAndClipsThemWhenAsked) {
  // Adam with fp32 master weights beside bf16 weights and gradients (Megatron-LM's
  // Float16OptimizerWithFloat16Params), per parameter: the gradient copied to fp32 (2 read +
  // 4 written), read by the update (4), both moments read and written (2 · 8), the master read
  // and written (8), then read again and copied to the bf16 weight (4 + 2): 40 bytes. Clipping
  // adds the norm's read and the in-place scale (3 · 4). DDP updates all 7e9 parameters.
  EXPECT_NEAR(optimizer_bytes(run(kNode, {})), 40 * kParameters, 1e3);
  EXPECT_NEAR(optimizer_bytes(run(kNode, {"training.gradient_clipping=1.0"})), 52 * kParameters, 1e3);
  // FSDP keeps fp32 sharded gradients and parameters, no separate master: the gradient read (4),
  // the moments (16), the weight read and written (8), over its 1/8 shard; clipping adds 3 · 4.
  EXPECT_NEAR(optimizer_bytes(run(kNode, {"parallel.strategy=\"fsdp\""})), 28 * kParameters / 8, 1e3);
  EXPECT_NEAR(optimizer_bytes(run(kNode, {"parallel.strategy=\"fsdp\"", "training.gradient_clipping=1.0"})),
              40 * kParameters / 8, 1e3);
}

TEST(FsdpTest, HybridShardShardsInsideANodeAndReplicatesAcross) {
  // 2 nodes × 8: the model states are sharded 8 ways (not 16), gradients reduce-scattered
  // inside the node and the shards all-reduced across nodes; all-gathers stay on NVLink.
  const std::string two_nodes = kNode + "\n";
  const std::vector<std::string> base = {"cluster.nodes=2", "training.global_batch=16", "parallel.strategy=\"fsdp\""};
  auto hybrid_overrides = base;
  hybrid_overrides.push_back("fsdp.sharding_strategy=\"HYBRID_SHARD\"");
  const auto hybrid = run(two_nodes, hybrid_overrides);
  const auto full = run(two_nodes, base);
  // FSDP keeps fp32 sharded parameters and gradients with Adam's two moments: 16 bytes.
  EXPECT_NEAR(total(model_states(hybrid.program)), 16 * kParameters / 8, 1e3);
  EXPECT_NEAR(total(model_states(full.program)), 16 * kParameters / 16, 1e3);
  EXPECT_GT(sent(hybrid, "all_reduce"), 0.0);
  EXPECT_EQ(sent(full, "all_reduce"), 0.0);
  // The all-reduce goes over the inter-node process group, on a stream of its own, which
  // neither the next unit's reduce-scatter nor the frees wait for (PyTorch runs it on its
  // all-reduce stream).
  const auto& ops = hybrid.program.ranks[0]->ops;
  const auto [all_reduce, all_reduce_deps] = op_and_deps(hybrid.program, "layer31.replica_all_reduce");
  const auto [next_reduction, next_reduction_deps] = op_and_deps(hybrid.program, "layer30.reduce_scatter");
  EXPECT_TRUE(all_reduce_deps.contains("layer31.reduce_scatter"));
  EXPECT_NE(ops[all_reduce].stream, ops[next_reduction].stream);
  EXPECT_FALSE(next_reduction_deps.contains("layer31.replica_all_reduce"));
  // The backward's free of layer31's gathered parameters (the last op of that name) waits for
  // the reduce-scatter only.
  std::set<std::string> freed_deps;
  for (const program::Op& op : ops) {
    if (op.name != "layer31.gathered_parameters") continue;
    freed_deps.clear();
    for (program::OpIndex dep : op.deps) freed_deps.insert(ops[dep].name);
  }
  EXPECT_EQ(freed_deps, std::set<std::string>{"layer31.reduce_scatter"});
}

TEST(FsdpTest, CpuOffloadMovesShardsOverPcieAndStepsOnTheHost) {
  // No model state stays on the GPU; each all-gather waits for its shard's copy, each reduced
  // gradient shard goes back, and the optimizer runs on the host CPU.
  const auto offload = run(kNode, {"parallel.strategy=\"fsdp\"", "fsdp.cpu_offload=true"});
  EXPECT_TRUE(model_states(offload.program).empty());
  EXPECT_GT(offload.report.time_by_category_s.at("memcpy"), 0.0);
  const auto resident = run(kNode, {"parallel.strategy=\"fsdp\""});
  EXPECT_GT(offload.report.time_by_category_s.at("optimizer"), 10 * resident.report.time_by_category_s.at("optimizer"));
  EXPECT_LT(offload.report.peak_memory_bytes, resident.report.peak_memory_bytes);
  // PyTorch copies each reduced shard to the host from its post-backward stream, which the next
  // unit's reduce-scatter is issued from.
  EXPECT_TRUE(op_and_deps(offload.program, "layer30.reduce_scatter").second.contains("layer31.gradient_shard_to_host"));
}

TEST(FsdpTest, CpuOffloadOnGb200UsesAGracePerTwoGpusOverC2c) {
  // The same eight GPUs' offload on HGX B200 (one host, 2 × EPYC 9654 at 921.6 GB/s, shared by 8
  // GPUs, streaming at the H200's 4.15 / 4.8 — the compute model's default for an unmeasured
  // device; PCIe Gen5 x16, 64 GB/s at 0.87) and on a GB200 rack cut to eight GPUs (a Grace
  // streaming 330 GB/s per two GPUs; NVLink-C2C, 450 GB/s each way per two GPUs at 176 / 225).
  // The optimizer streams, the copies are bound by their link: the time ratios are the rates'.
  const auto offload = [](const char* node) {
    return run(kNode, {std::string("cluster.node=\"") + node + "\"", "cluster.gpus_per_node=8",
                       "parallel.strategy=\"fsdp\"", "fsdp.cpu_offload=true"})
        .report.time_by_category_s;
  };
  const auto hgx = offload("hgx-b200"), gb200 = offload("gb200-nvl72");
  const double epyc_share = 921.6 / 8 * (4.15 / 4.8), grace_share = 330.0 / 2;
  EXPECT_NEAR(hgx.at("optimizer") / gb200.at("optimizer"), grace_share / epyc_share, 1e-3);
  const double pcie = 64 * 0.87, c2c_share = 450.0 / 2 * (176.0 / 225.0);
  // Within 0.1 %: each copy also pays its link's 0.25 µs latency.
  EXPECT_NEAR(hgx.at("memcpy") / gb200.at("memcpy"), c2c_share / pcie, 1e-3 * c2c_share / pcie);
}

// A pipeline with equal stages: 8 layers, a vocabulary small enough that embedding and head
// cost next to nothing, fast links.
const std::string kPipeline = R"(
[cluster]
node = "hgx-h100"
nodes = 1
gpus_per_node = 4

[cluster.nvlink]
latency_us = 0

[model]
preset = "llama-2-7b"
layers = 8
vocab = 64

[training]
global_batch = 8
micro_batch = 1
sequence_length = 2048

[parallel]
pp = 4

[network]
model = "analytic"
)";

TEST(PipelineTest, ComputeIdleMatchesTheBubbleFormula) {
  // (p−1)/(M+p−1) with p 4: M 8 → 27.3 %, M 16 → 15.8 %; measured on the first stage, with
  // transfers at the links' rate (collectives.library "ideal") so that they stay tiny against the
  // compute: the formula leaves them out, and GPipe's blocking sends and receives, each after
  // the last, add two per slot at NCCL's few CTAs (sim/net/nccl_p2p.h).
  for (int micro_batches : {8, 16}) {
    for (const char* schedule : {"1f1b", "gpipe"}) {
      const auto result =
          run(kPipeline, {"training.global_batch=" + std::to_string(micro_batches),
                          std::string("parallel.pipeline_schedule=\"") + schedule + "\"",
                          "collectives.library=\"ideal\""});
      const double bubble = 3.0 / (micro_batches + 3);
      EXPECT_DOUBLE_EQ(result.report.pipeline_bubble, bubble);
      EXPECT_NEAR(result.report.compute_idle_fraction, bubble, 0.02) << schedule << " M " << micro_batches;
    }
  }
}

TEST(PipelineTest, InterleavingDividesTheBubbleByTheChunks) {
  // Interleaved 1F1B (Narayanan et al., SC 2021): (p−1)/(v·M+p−1) with p 4, M 8: v 2 → 15.8 %,
  // v 4 → 8.6 %, against 27.3 % without; 16 layers split into p·v chunks. Measured on the
  // first stage, as above, with transfers at the links' rate (collectives.library "ideal") so
  // that the chunks' extra transfers stay tiny against the compute: NCCL's few CTAs per send
  // would add v times their cost (sim/net/nccl_p2p.h), which the formula leaves out.
  for (int chunks : {2, 4}) {
    const auto result =
        run(kPipeline,
            {"model.layers=16", "parallel.pipeline_schedule=\"interleaved-1f1b\"",
             "parallel.virtual_stages=" + std::to_string(chunks), "collectives.library=\"ideal\""});
    const double bubble = 3.0 / (chunks * 8 + 3);
    EXPECT_DOUBLE_EQ(result.report.pipeline_bubble, bubble);
    EXPECT_EQ(result.report.pipeline_chunks, chunks);
    EXPECT_NEAR(result.report.compute_idle_fraction, bubble, 0.02) << "v " << chunks;
  }
}

TEST(PipelineTest, InterleavedChunksPassActivationsRoundTheRanksAndBack) {
  // v = 2 on p = 4: virtual stages 0…7; rank 3's chunk 0 feeds rank 0's chunk 1 (over
  // "pp_wrap"). Each micro-batch crosses the p·v − 1 = 7 boundaries twice.
  const auto result = run(kPipeline, {"parallel.pipeline_schedule=\"interleaved-1f1b\"", "parallel.virtual_stages=2"});
  const auto wrap = result.program.find_family("pp_wrap");
  ASSERT_TRUE(wrap.has_value());
  int sends = 0, wrapping = 0;
  for (const auto& rank : result.program.ranks) {
    for (const program::Op& op : rank->ops) {
      const auto* p2p = std::get_if<program::SendRecvOp>(&op.body);
      if (p2p == nullptr || !p2p->is_send) continue;
      ++sends;
      if (p2p->group == *wrap) {
        ++wrapping;
        EXPECT_EQ(std::abs(p2p->peer_offset), 3) << op.name;  // from the last rank to the first, or back
      }
    }
  }
  EXPECT_EQ(sends, 2 * 8 * 7);
  EXPECT_EQ(wrapping, 2 * 8);
}

TEST(PipelineTest, TwoInterleavedStagesKeepActivationsAndGradientsApart) {
  // p = 2: rank 1 sends rank 0 both chunk 0's activations (over "pp_wrap") and gradients (over
  // "pp"); transfers match per group, so neither waits for the other's receive, and the
  // bubble is (p−1)/(v·M+p−1) = 1/17.
  const auto result = run(kPipeline, {"cluster.gpus_per_node=2", "parallel.pp=2",
                                      "parallel.pipeline_schedule=\"interleaved-1f1b\"", "parallel.virtual_stages=2"});
  EXPECT_DOUBLE_EQ(result.report.pipeline_bubble, 1.0 / 17);
  EXPECT_NEAR(result.report.compute_idle_fraction, 1.0 / 17, 0.02);
}

TEST(PipelineTest, InterleavedChunksShareOneBarrierPerStep) {
  // ddp.barrier_every_step: one world barrier per rank and step, whatever the chunks.
  const auto result = run(kPipeline, {"cluster.gpus_per_node=8", "parallel.dp=2", "training.global_batch=16",
                                      "ddp.barrier_every_step=true", "parallel.pipeline_schedule=\"interleaved-1f1b\"",
                                      "parallel.virtual_stages=2"});
  for (const auto& rank : result.program.ranks) {
    EXPECT_EQ(std::count_if(rank->ops.begin(), rank->ops.end(),
                            [](const program::Op& op) {
                              const auto* collective = std::get_if<program::CollectiveOp>(&op.body);
                              return collective != nullptr && collective->kind == program::CollectiveKind::kBarrier;
                            }),
              1);
  }
}

TEST(PipelineTest, InterleavedChunksReduceTheirGradientsAfterTheWholeScheduleUnlessOverlapped) {
  // Megatron-LM without overlap_grad_reduce all-reduces every chunk's gradients once the
  // schedule has run (train_step, after forward_backward_func): on every rank each chunk's
  // gradient all-reduce comes after every backward op. With overlap, a chunk's buckets go as
  // its own gradients are ready, while the other chunk's backward still runs.
  const auto reductions_follow_every_backward = [](bool overlap) {
    const auto result = run(
        kPipeline, {"cluster.gpus_per_node=8", "parallel.dp=2", "training.global_batch=16",
                    "parallel.pipeline_schedule=\"interleaved-1f1b\"", "parallel.virtual_stages=2",
                    std::string("ddp.overlap_grad_reduce=") + (overlap ? "true" : "false")});
    bool all_follow = true;
    for (const auto& rank : result.program.ranks) {
      std::size_t last_backward = 0, first_reduction = rank->ops.size(), reductions = 0;
      for (std::size_t i = 0; i < rank->ops.size(); ++i) {
        const program::Op& op = rank->ops[i];
        const auto* compute = std::get_if<program::ComputeOp>(&op.body);
        if (compute != nullptr && compute->phase == program::Phase::kBackward) last_backward = i;
        if (std::holds_alternative<program::CollectiveOp>(op.body) &&
            op.name.find("ddp.bucket") != std::string::npos) {
          first_reduction = std::min(first_reduction, i);
          ++reductions;
        }
      }
      EXPECT_GE(reductions, 2u);  // one per chunk at least
      all_follow = all_follow && first_reduction > last_backward;
    }
    return all_follow;
  };
  EXPECT_TRUE(reductions_follow_every_backward(false));
  EXPECT_FALSE(reductions_follow_every_backward(true));
}

TEST(PipelineTest, InterleavingNeedsChunksAStagedPipelineAndWholeGroupsOfMicroBatches) {
  const auto refused = [](std::vector<std::string> assignments) {
    try {
      run(kPipeline, std::move(assignments));
    } catch (const scenarios::ScenarioError& error) {
      return std::string(error.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(refused({"parallel.pipeline_schedule=\"interleaved-1f1b\""}).find("needs virtual_stages ≥ 2"), std::string::npos);
  EXPECT_NE(refused({"parallel.virtual_stages=2"}).find("only pipeline_schedule = \"interleaved-1f1b\" runs"),
            std::string::npos);
  EXPECT_NE(refused({"parallel.pipeline_schedule=\"interleaved-1f1b\"", "parallel.virtual_stages=2",
                     "training.global_batch=6"})
                .find("micro-batches in groups of pp = 4, but there are 6"),
            std::string::npos);
  EXPECT_NE(refused({"parallel.pipeline_schedule=\"interleaved-1f1b\"", "parallel.virtual_stages=4",
                     "model.layers=12"})
                .find("4 stages × 4 chunks exceed the model's 12 layers: some chunk would hold "
                      "nothing (use fewer "
                      "chunks (pp × virtual_stages ≤ model.layers), or let the embedding and the "
                      "loss take a layer's "
                      "place each"),
            std::string::npos);
  EXPECT_NE(
      refused({"parallel.pipeline_schedule=\"interleaved-1f1b\"", "parallel.virtual_stages=4",
               "model.layers=14", "parallel.account_for_loss_in_pipeline_split=true"})
          .find("4 stages × 4 chunks exceed the 15 places split (the model's 14 layers, the loss)"),
      std::string::npos);
}

// Megatron-Core's account_for_embedding/loss_in_pipeline_split: 14 layers and the two places
// make 16, one per chunk of 4 stages × 4 chunks — rank 0's first chunk holds the embedding and no
// layer, rank 3's last chunk no layer and the loss, every other chunk one layer; without the
// two places 16 chunks of 14 layers are refused (above).
TEST(PipelineTest, TheEmbeddingAndTheLossCanEachTakeALayersPlace) {
  const auto result =
      run(kPipeline,
          {"model.layers=14", "parallel.pipeline_schedule=\"interleaved-1f1b\"",
           "parallel.virtual_stages=4", "parallel.account_for_embedding_in_pipeline_split=true",
           "parallel.account_for_loss_in_pipeline_split=true"});
  const std::regex layer_op(R"(^chunk(\d+)\.layer(\d+)\.)");
  std::set<std::pair<std::int32_t, std::int32_t>> held;  // (virtual stage, layer)
  for (std::size_t rank = 0; rank < result.program.ranks.size(); ++rank) {
    for (const program::Op& op : result.program.ranks[rank]->ops) {
      std::smatch match;
      if (!std::regex_search(op.name, match, layer_op)) continue;
      held.emplace(std::stoi(match[1]) * 4 + static_cast<std::int32_t>(rank), std::stoi(match[2]));
    }
  }
  std::set<std::pair<std::int32_t, std::int32_t>> expected;
  for (std::int32_t layer = 0; layer < 14; ++layer)
    expected.emplace(layer + 1, layer);  // virtual stages 1 … 14
  EXPECT_EQ(held, expected);
}

TEST(PipelineTest, OneFOneBKeepsFewerMicroBatchesInFlightThanGpipe) {
  // Stage 0 holds the activations of all M micro-batches under GPipe, of p under 1F1B.
  auto activations = [](const char* schedule) {
    const auto result = run(kPipeline, {"training.global_batch=16", std::string("parallel.pipeline_schedule=\"") + schedule + "\""});
    return static_cast<double>(result.report.rank_reports.front().peak_memory_breakdown.at("activations"));
  };
  EXPECT_NEAR(activations("gpipe") / activations("1f1b"), 16.0 / 4, 0.1);
}

TEST(PipelineTest, StagesSendActivationsForwardAndGradientsBack) {
  // Each of M micro-batches crosses each of the p − 1 stage boundaries twice, b·s·h bf16 bytes.
  const auto result = run(kPipeline, {});
  int sends = 0, receives = 0;
  for (const auto& rank : result.program.ranks) {
    for (const program::Op& op : rank->ops) {
      if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) {
        (p2p->is_send ? sends : receives) += 1;
        EXPECT_EQ(p2p->bytes, 2048 * 4096 * 2);
      }
    }
  }
  EXPECT_EQ(sends, 2 * 8 * 3);
  EXPECT_EQ(receives, 2 * 8 * 3);
}

// How many of rank 0's forward/backward compute spans start while one of its pipeline sends is
// in flight.
// Rank 0's computes that start while one of its sends is in flight — of the sends starting in
// [from_ps, before_ps).
int computes_started_during_sends(
    const trace::Timeline& timeline, std::int64_t from_ps = 0,
    std::int64_t before_ps = std::numeric_limits<std::int64_t>::max()) {
  std::vector<std::pair<std::int64_t, std::int64_t>> sends;
  for (const trace::Span& span : timeline.spans) {
    if (span.rank == 0 && timeline.strings.at(span.name).find("pp.send_") != std::string::npos &&
        span.start_ps >= from_ps && span.start_ps < before_ps) {
      sends.emplace_back(span.start_ps, span.end_ps);
    }
  }
  int started = 0;
  for (const trace::Span& span : timeline.spans) {
    if (span.rank != 0 || (span.category != trace::Category::kForward && span.category != trace::Category::kBackward)) continue;
    for (const auto& [start, end] : sends) started += span.start_ps > start && span.start_ps < end ? 1 : 0;
  }
  return started;
}

TEST(PipelineTest, TiedEmbeddingsKeepACopyOnTheLastStageAndAllReduceItsGradients) {
  // Megatron-LM: with tied embeddings the last stage holds its own copy of the 64 × 4096 word
  // embeddings for the output layer — as much as an untied output layer — and the first and
  // last stage all-reduce its bf16 gradients before their optimizer steps.
  const auto tied = run(kPipeline, {"model.tied_embeddings=true"});
  const auto untied = run(kPipeline, {"model.tied_embeddings=false"});
  const auto last_stage_states = [](const scenarios::RunResult& result) {
    std::map<std::string, double> states;
    for (const program::Op& op : result.program.ranks.back()->ops) {
      const auto* memory = std::get_if<program::MemoryOp>(&op.body);
      if (memory == nullptr) break;
      if (memory->allocate) states[op.name] += static_cast<double>(memory->bytes);
    }
    return states;
  };
  EXPECT_EQ(last_stage_states(tied), last_stage_states(untied));
  for (std::size_t stage = 0; stage < 4; ++stage) {
    const auto& ops = tied.program.ranks[stage]->ops;
    const auto all_reduce = std::find_if(ops.begin(), ops.end(), [](const program::Op& op) {
      return op.name == "embedding.gradients.all_reduce";
    });
    ASSERT_EQ(all_reduce != ops.end(), stage == 0 || stage == 3) << "stage " << stage;
    if (all_reduce == ops.end()) continue;
    EXPECT_EQ(std::get<program::CollectiveOp>(all_reduce->body).bytes, 64 * 4096 * 2);
    const auto optimizer = std::find_if(ops.begin(), ops.end(), [](const program::Op& op) {
      return op.name.rfind("optimizer.", 0) == 0;
    });
    ASSERT_NE(optimizer, ops.end());
    const auto index = static_cast<program::OpIndex>(all_reduce - ops.begin());
    EXPECT_NE(std::find(optimizer->deps.begin(), optimizer->deps.end(), index), optimizer->deps.end());
  }
  EXPECT_EQ(untied.program.find_family("embedding"), std::nullopt);
}

TEST(PipelineTest, BlockingSendsHoldTheStagesNextComputeUntilTheyComplete) {
  // Megatron-LM waits for each send before the stage computes on; with overlapped transfers
  // stage 0 starts micro-batch k + 1 while micro-batch k's activation is still on its way.
  const auto blocking = run(kPipeline, {});
  const auto overlapped = run(kPipeline, {"parallel.pipeline_p2p_blocking=false"});
  EXPECT_EQ(computes_started_during_sends(blocking.simulation.timeline), 0);
  EXPECT_GT(computes_started_during_sends(overlapped.simulation.timeline), 0);
  EXPECT_GE(blocking.report.step_time_s, overlapped.report.step_time_s);
}

TEST(PipelineTest, BlockingReceivesArePostedWhenTheStageGetsToThem) {
  // Megatron-LM's 1F1B posts a receive in the exchange after the stage's previous micro-batch
  // slot (send_forward_recv_backward, send_backward_recv_forward; after the previous send where
  // the direction does not turn, as in GPipe), and an NCCL transfer needs both sides: no
  // receive of stage 1 moves while stage 1 computes, in any step. Overlapped point-to-point
  // posts them ahead, beside the compute.
  const auto receives_during_compute = [](const scenarios::RunResult& result) {
    const trace::Timeline& timeline = result.simulation.timeline;
    std::vector<std::pair<std::int64_t, std::int64_t>> computing;
    for (const trace::Span& span : timeline.spans) {
      if (span.rank == 1 && (span.category == trace::Category::kForward ||
                             span.category == trace::Category::kBackward)) {
        computing.emplace_back(span.start_ps, span.end_ps);
      }
    }
    int during = 0;
    for (const trace::Span& span : timeline.spans) {
      if (span.rank != 1 || !timeline.strings.at(span.name).starts_with("pp.recv_")) continue;
      for (const auto& [start, end] : computing)
        during += span.start_ps > start && span.start_ps < end ? 1 : 0;
    }
    return during;
  };
  // Before 2026-12-07 blocking receives were posted ahead too: 4 of stage 1's ran beside its
  // compute under 1F1B.
  for (const char* schedule : {"1f1b", "gpipe"}) {
    for (const char* steps : {"training.steps=1", "training.steps=2"}) {
      const std::string chosen = std::string("parallel.pipeline_schedule=\"") + schedule + "\"";
      EXPECT_EQ(receives_during_compute(run(kPipeline, {chosen, steps})), 0)
          << schedule << ", " << steps;
    }
  }
  EXPECT_GT(receives_during_compute(run(kPipeline, {"parallel.pipeline_p2p_blocking=false"})), 0);
}

TEST(PipelineTest, TheInterleavedCoolDownWaitsForItsSendsEvenWhenOverlapped) {
  // Megatron-LM's interleaved schedule overlaps its transfers in the warm-up and the steady state
  // but sends the cool-down's gradients blocking (send_backward_recv_backward without
  // overlap_p2p_comm, schedules.py at 3a91d0c8): there no backward starts while a send is on its
  // way.
  const auto result =
      run(kPipeline, {"parallel.pipeline_schedule=\"interleaved-1f1b\"",
                      "parallel.virtual_stages=2", "parallel.pipeline_p2p_blocking=false"});
  const trace::Timeline& timeline = result.simulation.timeline;
  std::int64_t last_forward_end = 0;
  for (const trace::Span& span : timeline.spans) {
    if (span.rank == 0 && span.category == trace::Category::kForward)
      last_forward_end = std::max(last_forward_end, span.end_ps);
  }
  EXPECT_GT(computes_started_during_sends(timeline, 0, last_forward_end), 0);
  EXPECT_EQ(computes_started_during_sends(timeline, last_forward_end + 1),
            0);  // after the last forward's own send
}

TEST(PipelineTest, SendsRunInTheGroupsCommunicatorWhenBatchedAndInAPairsWhenOverlapped) {
  // Megatron batches blocking transfers (batch_isend_irecv: the 4-rank pipeline group's
  // communicator, 8 CTAs for 16 MiB) and posts overlapped ones alone (a 2-rank communicator,
  // 16 CTAs): the same activation moves twice as fast. Both below the NVLink's 365.6 GB/s, and
  // kPipeline's NVLink has no latency, so the spans are bytes over the CTAs' rate. (Stage 0's
  // first send: stage 1 already waits for it.)
  const auto send_seconds = [](const scenarios::RunResult& result) {
    const trace::Timeline& timeline = result.simulation.timeline;
    for (const trace::Span& span : timeline.spans) {
      if (span.rank == 0 && timeline.strings.at(span.name) == "pp.send_activation.0") {
        return static_cast<double>(span.end_ps - span.start_ps) * 1e-12;
      }
    }
    throw std::runtime_error("no first send");
  };
  const double bytes = 2048 * 4096 * 2;
  const double per_cta = 605.29e9 / 2 / 16;  // H100 (sim/net/nccl_p2p.cpp's source)
  EXPECT_NEAR(send_seconds(run(kPipeline, {})), bytes / (8 * per_cta), 1e-9);
  EXPECT_NEAR(send_seconds(run(kPipeline, {"parallel.pipeline_p2p_blocking=false"})),
              bytes / (16 * per_cta), 1e-9);
}

TEST(PipelineTest, ScatterGatherSendsOneTthAndAllGathersItInsideTheNode) {
  // SC'21: with t = 2 each rank sends b·s·h/2 bytes and the receiving stage all-gathers the
  // full b·s·h over its tensor-parallel pair, once per received activation or gradient.
  const auto result =
      run(kPipeline, {"cluster.gpus_per_node=8", "parallel.tp=2", "parallel.pipeline_scatter_gather=true"});
  int receives = 0, gathers = 0;
  for (const program::Op& op : result.program.ranks[0]->ops) {
    if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) {
      EXPECT_EQ(p2p->bytes, 2048 * 4096 * 2 / 2);
      receives += p2p->is_send ? 0 : 1;
    }
    if (op.name.rfind("pp.gather_", 0) == 0) {
      EXPECT_EQ(std::get<program::CollectiveOp>(op.body).bytes, 2048 * 4096 * 2);
      ++gathers;
    }
  }
  EXPECT_EQ(receives, 8);  // stage 0 receives only gradients
  EXPECT_EQ(gathers, receives);
  EXPECT_THROW(run(kPipeline, {"parallel.pipeline_scatter_gather=true"}), scenarios::ScenarioError);
}

TEST(PipelineTest, ABackwardThatStartsWithACollectiveWaitsForTheReceivedGradient) {
  // Sequence parallelism: a layer's backward begins with the sum of the residual stream's
  // gradients, then the all-gather of the MLP's output gradient; both need the gradient the next
  // stage sent.
  const auto result = run(kPipeline, {"cluster.gpus_per_node=8", "parallel.tp=2", "parallel.sequence_parallel=true"});
  const auto& ops = result.program.ranks[2]->ops;  // stage 1 (layers 2 and 3), tensor-parallel rank 0
  const auto index_of = [&](const std::string& name) {
    const auto found = std::find_if(ops.begin(), ops.end(), [&](const program::Op& op) { return op.name == name; });
    EXPECT_NE(found, ops.end()) << name;
    return static_cast<program::OpIndex>(found - ops.begin());
  };
  const program::Op& sum = ops[index_of("layer3.bwd.mlp_residual_grad_sum")];
  EXPECT_NE(std::find(sum.deps.begin(), sum.deps.end(), index_of("pp.recv_gradient.0")), sum.deps.end());
  const program::Op& gather = ops[index_of("layer3.bwd.mlp_g")];
  EXPECT_NE(std::find(gather.deps.begin(), gather.deps.end(), index_of("layer3.bwd.mlp_residual_grad_sum")), gather.deps.end());
}

TEST(TensorParallelOverlapTest, ChunksPipelineTheGemmsWithTheirCollectives) {
  // --tp-comm-overlap on 8 ranks: the all-gather before the QKV GEMM in 8 chunks issued
  // together after the norm, GEMM chunk i waiting for all-gather chunk i only; the
  // reduce-scatter after the output projection in 8 chunks, GEMM chunk i + 1 not waiting for
  // reduce-scatter chunk i; the same bytes in all.
  const std::vector<std::string> layout = {"parallel.tp=8", "parallel.sequence_parallel=true",
                                           "training.global_batch=1", "model.layers=2"};
  std::vector<std::string> overlap = layout;
  overlap.push_back("parallel.tp_comm_overlap=true");
  const auto chunked = run(kNode, overlap), whole = run(kNode, layout);
  const auto [gather3, gather3_deps] = op_and_deps(chunked.program, "layer0.fwd.attn_f.chunk3");
  EXPECT_EQ(gather3_deps, (std::set<std::string>{"layer0.fwd.attn_norm"}));
  EXPECT_EQ(op_and_deps(chunked.program, "layer0.fwd.qkv.chunk3").second,
            (std::set<std::string>{"layer0.fwd.attn_f.chunk3"}));
  EXPECT_EQ(op_and_deps(chunked.program, "layer0.fwd.attn_g.chunk2").second,
            (std::set<std::string>{"layer0.fwd.attn_out.chunk2"}));
  EXPECT_TRUE(op_and_deps(chunked.program, "layer0.fwd.attn_out.chunk3").second.empty());
  EXPECT_EQ(op_and_deps(chunked.program, "layer0.fwd.attn_residual").second.count("layer0.fwd.attn_g.chunk7"), 1u)
      << "the op after the run waits for its last reduce-scatter";
  EXPECT_EQ(chunked.report.comm_bytes_per_rank, whole.report.comm_bytes_per_rank);
  // With no interference, no tile quantisation and GEMMs priced by their FLOPs (each chunk
  // otherwise reads the whole weight again) the chunks only reorder the same work: the
  // communication hides behind the GEMMs and the step gets shorter.
  const std::vector<std::string> pure = {"compute.overlap_slowdown=0", "cluster.gpu.sms=0",
                                         "compute.matmul_memory_traffic=false"};
  std::vector<std::string> pure_layout = layout, pure_overlap = overlap;
  pure_layout.insert(pure_layout.end(), pure.begin(), pure.end());
  pure_overlap.insert(pure_overlap.end(), pure.begin(), pure.end());
  const auto pure_chunked = run(kNode, pure_overlap), pure_whole = run(kNode, pure_layout);
  EXPECT_LT(pure_chunked.report.exposed_comm_s, pure_whole.report.exposed_comm_s);
  EXPECT_LT(pure_chunked.report.step_time_s, pure_whole.report.step_time_s);
}

TEST(CheckpointingTest, RecomputationTradesForwardFlopsForActivations) {
  // Full: every layer's forward runs again in backward; only each layer's input is kept.
  // Selective: only the attention core runs again; its s² score tensors are dropped (so the
  // model uses standard attention: FlashAttention keeps no scores to drop).
  auto report = [](const char* mode) {
    return run(kNode, {std::string("training.activation_checkpointing=\"") + mode + "\"", "model.attention=\"standard\""})
        .report;
  };
  const auto none = report("none"), full = report("full"), selective = report("selective");
  EXPECT_EQ(none.time_by_category_s.count("recompute"), 0u);
  EXPECT_GT(full.time_by_category_s.at("recompute"), 0.9 * none.time_by_category_s.at("forward"));
  EXPECT_LT(selective.time_by_category_s.at("recompute"), 0.5 * full.time_by_category_s.at("recompute"));
  const double kept = 32 * 2048.0 * 4096 * 2;  // each layer's bf16 input
  EXPECT_LT(full.peak_memory_breakdown.at("activations"), kept + 0.2 * none.peak_memory_breakdown.at("activations"));
  EXPECT_LT(selective.peak_memory_breakdown.at("activations"), none.peak_memory_breakdown.at("activations"));
  // Model FLOPs (and so MFU's numerator) leave recomputation out.
  EXPECT_LT(full.mfu, none.mfu);
}

}  // namespace

namespace {

const std::string kPsScenario = std::string(DTSIM_SOURCE_DIR) + "/scenarios/ps_consistency_stragglers.toml";

scenarios::RunResult run_ps(const std::vector<std::string>& overrides) {
  return scenarios::run_scenario(scenarios::load_scenario(kPsScenario, overrides));
}

// End times of rank `rank`'s spans named `name`, in order: one per step.
std::vector<std::int64_t> ends_of(const trace::Timeline& timeline, std::int32_t rank, const std::string& name) {
  std::vector<std::int64_t> ends;
  for (const trace::Span& span : timeline.spans) {
    if (span.rank == rank && timeline.strings.at(span.name) == name) ends.push_back(span.end_ps);
  }
  std::sort(ends.begin(), ends.end());
  return ends;
}

TEST(ParameterServerTest, ConsistencyTradesStalenessForThroughputUnderStragglers) {
  // 8 workers of unequal speed: BSP waits for the slowest every step (no staleness), SSP lets
  // the others run one step ahead, ASP never waits — more tokens per second from the fast
  // workers, less idle time, staler gradients.
  const auto bsp = run_ps({"ps.consistency=\"bsp\""}).report.parameter_server;
  const auto ssp = run_ps({"ps.consistency=\"ssp\""}).report.parameter_server;
  const auto asp = run_ps({"ps.consistency=\"asp\""}).report.parameter_server;
  ASSERT_TRUE(bsp && ssp && asp);
  EXPECT_EQ(bsp->facts.staleness_max, 0);
  EXPECT_GT(ssp->facts.staleness_mean, 0.0);
  EXPECT_GT(asp->facts.staleness_mean, ssp->facts.staleness_mean);
  EXPECT_GT(asp->facts.staleness_max, ssp->facts.staleness_max);
  EXPECT_LT(bsp->tokens_per_s, ssp->tokens_per_s);
  EXPECT_LT(ssp->tokens_per_s, asp->tokens_per_s);
  EXPECT_GT(bsp->idle_mean_s, ssp->idle_mean_s);
  EXPECT_GT(ssp->idle_mean_s, asp->idle_mean_s);
  // Under BSP the fastest worker idles while the slowest computes.
  EXPECT_GT(bsp->idle_max_s - bsp->idle_min_s, 0.5);
}

TEST(ParameterServerTest, StaleSynchronousBoundHoldsOnTheTimeline) {
  // With bound s, worker w gets the parameters for step t + 1 only after every worker pushed
  // step t − s.
  for (int bound : {0, 1, 2}) {
    const auto result = run_ps({"ps.staleness=" + std::to_string(bound)});
    const trace::Timeline& timeline = result.simulation.timeline;
    std::vector<std::vector<std::int64_t>> pushed, pulled;
    for (std::int32_t w = 0; w < 8; ++w) {
      pushed.push_back(ends_of(timeline, w, "ps.push_gradients.server0"));
      pulled.push_back(ends_of(timeline, w, "ps.pull_parameters.server0"));
      ASSERT_EQ(pushed.back().size(), 8u);
    }
    bool some_worker_ran_ahead = false;
    for (std::int32_t w = 0; w < 8; ++w) {
      for (std::size_t t = bound; t < 8; ++t) {
        for (std::int32_t other = 0; other < 8; ++other) {
          EXPECT_GE(pulled[w][t], pushed[other][t - bound]) << "s " << bound << " worker " << w << " step " << t;
          some_worker_ran_ahead |= pulled[w][t] < pushed[other][t];
        }
      }
    }
    EXPECT_EQ(some_worker_ran_ahead, bound > 0) << "s " << bound;
    // In lock-step (s = 0) a gradient misses at most the other workers' updates of its own
    // step and of the one before.
    if (bound == 0) {
      EXPECT_LE(result.report.parameter_server->facts.staleness_max, 2 * (8 - 1));
    }
  }
}

TEST(ParameterServerTest, StragglersAreSeeded) {
  // The same seed gives the same run byte for byte; another seed, other factors.
  const auto first = run_ps({});
  const auto again = run_ps({});
  const auto other = run_ps({"stragglers.seed=8"});
  EXPECT_EQ(first.report.step_time_s, again.report.step_time_s);
  EXPECT_EQ(first.report.warnings, again.report.warnings);
  EXPECT_NE(first.report.step_time_s, other.report.step_time_s);
  const auto even = run_ps({"stragglers.distribution=\"none\""});
  EXPECT_LT(even.report.parameter_server->idle_max_s - even.report.parameter_server->idle_min_s, 0.01);
}

}  // namespace

namespace {

// [collectives.groups.<family>] accepts only strategies::group_family_names(): every family a
// lowering creates must be in that list, or its algorithm could not be fixed.
TEST(GroupFamiliesTest, EveryFamilyALoweringCreatesIsOneTheLoaderAccepts) {
  const std::vector<std::string> accepted = strategies::group_family_names();
  const std::vector<std::pair<std::string, std::vector<std::string>>> lowerings = {
      {kNode, {"parallel.tp=2"}},
      {kNode, {"cluster.nodes=2", "training.global_batch=16", "parallel.strategy=\"fsdp\"",
               "fsdp.sharding_strategy=\"HYBRID_SHARD\""}},
      {kPipeline, {"parallel.pipeline_schedule=\"interleaved-1f1b\"", "parallel.virtual_stages=2",
                   "model.tied_embeddings=true"}},
  };
  std::vector<program::Program> programs;
  for (const auto& [text, overrides] : lowerings) programs.push_back(run(text, overrides).program);
  programs.push_back(scenarios::run_scenario(scenarios::load_scenario(kPsScenario)).program);
  programs.push_back(run(kNode, {"cluster.nodes=2", "training.global_batch=16", "model.preset=\"mixtral-8x7b\"",
                                 "model.layers=2", "parallel.ep=8"}).program);
  programs.push_back(run(kNode, {"parallel.cp=2", "training.global_batch=4"}).program);
  std::set<std::string> seen;
  for (const program::Program& program : programs) {
    for (const program::GroupFamily& family : program.group_families) {
      EXPECT_NE(std::find(accepted.begin(), accepted.end(), family.name), accepted.end()) << family.name;
      seen.insert(family.name);
    }
  }
  EXPECT_EQ(seen.size(), accepted.size());  // and the list names nothing no lowering makes
}

}  // namespace

namespace {

// One layer of hidden 16,384 on one H100 is GEMM-bound: under FP8 its GEMMs run above the bf16
// peak MFU is counted against, and the warning says that rather than blame an imposed time.
TEST(PrecisionTest, Fp8AboveTheBf16PeakIsExplainedAsFp8) {
  const std::string wide = R"(
[cluster]
node = "hgx-h100"
nodes = 1
gpus_per_node = 1
[model]
layers = 1
hidden = 16384
heads = 128
ffn_hidden = 65536
vocab = 1024
sequence = 1024
[training]
global_batch = 64
micro_batch = 4
optimizer = "sgd"
sgd_momentum = 0
[network]
model = "analytic"
)";
  const scenarios::RunResult fp8 = run(wide, {"training.precision=\"fp8\""});
  ASSERT_GT(fp8.report.mfu, 1.0);
  const auto explained = [](const trace::Report& report) {
    return std::any_of(report.warnings.begin(), report.warnings.end(),
                       [](const std::string& warning) {
                         return warning.find("above 100 %") != std::string::npos &&
                                warning.find("FP8 GEMMs") != std::string::npos;
                       });
  };
  EXPECT_TRUE(explained(fp8.report));
  EXPECT_FALSE(explained(run(wide, {}).report));
}

}  // namespace
