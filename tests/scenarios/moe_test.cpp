// Today's large-model layouts, lowered and simulated. Mixture of experts under expert
// parallelism: token dispatch and combine as all-to-alls over the expert-parallel group, the
// routed work of each rank from the router's load, expert gradients and states over the
// expert-data-parallel group, the shared experts overlapping the all-to-alls. Context
// parallelism: ring attention's pipelined KV ring, Ulysses' all-to-alls, Llama 3's all-gathers.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "strategies/transformer_ops.h"

namespace {

// Mixtral-8x7B cut to two layers, one expert per GPU of one H100 node.
const std::string kMixtral = R"(
[cluster]
node = "hgx-h100"
nodes = 1

[model]
preset = "mixtral-8x7b"
layers = 2

[training]
global_batch = 8
micro_batch = 1
sequence_length = 4096

[parallel]
ep = 8
)";

scenarios::Scenario scenario(const std::string& text, const std::vector<std::string>& overrides) {
  return scenarios::ScenarioDocument::from_string(text, "test.toml").variant(overrides, "--set").read();
}

scenarios::RunResult run(const std::string& text, const std::vector<std::string>& overrides) {
  return scenarios::run_scenario(scenario(text, overrides));
}

const program::Op& op_named(const program::Program& program, std::int32_t rank, const std::string& name) {
  const auto& ops = program.ranks[static_cast<std::size_t>(rank)]->ops;
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const program::Op& op) { return op.name == name; });
  if (it == ops.end()) throw std::runtime_error("no op " + name);
  return *it;
}

double flops(const program::Program& program, std::int32_t rank, const std::string& name) {
  return std::get<program::ComputeOp>(op_named(program, rank, name).body).flops;
}

const program::CollectiveOp& collective(const program::Program& program, std::int32_t rank, const std::string& name) {
  return std::get<program::CollectiveOp>(op_named(program, rank, name).body);
}

// Bytes of the model states allocated before rank 0's first op, by tensor name.
std::map<std::string, double> states(const program::Program& program) {
  std::map<std::string, double> bytes;
  for (const program::Op& op : program.ranks.front()->ops) {
    const auto* memory = std::get_if<program::MemoryOp>(&op.body);
    if (memory == nullptr) break;
    bytes[op.name] += static_cast<double>(memory->bytes);
  }
  return bytes;
}

constexpr double kTokens = 4096, kHidden = 4096, kExpertWidth = 14336, kTopK = 2, kBf16 = 2;

TEST(ExpertParallelTest, BalancedRoutingSendsEachRanksTokenCopiesAndGivesEveryRankTheSameWork) {
  const auto result = run(kMixtral, {});
  const program::Program& program = result.program;
  EXPECT_EQ(program.ranks.front(), program.ranks.back());  // one program: the same work everywhere
  // Dispatch and combine: each rank sends its T·k token copies of h bf16 values.
  for (const char* name : {"layer0.fwd.dispatch", "layer1.fwd.combine"}) {
    const program::CollectiveOp& all_to_all = collective(program, 3, name);
    EXPECT_EQ(all_to_all.kind, program::CollectiveKind::kAllToAll);
    EXPECT_EQ(program.family(all_to_all.group).name, "ep");
    EXPECT_EQ(all_to_all.bytes, static_cast<std::int64_t>(kTokens * kTopK * kHidden * kBf16));
  }
  // One expert per rank receives its 1/8 of the 8 × T·k copies: T·k rows through gate/up (2f wide).
  EXPECT_DOUBLE_EQ(flops(program, 5, "layer0.fwd.experts_gate_up"), 2 * kTokens * kTopK * 2 * kExpertWidth * kHidden);
  EXPECT_GT(result.report.time_by_category_s.at("all_to_all"), 0);
}

TEST(ExpertParallelTest, TheRankWithTheHottestExpertsSetsThePace) {
  const std::vector<std::string> zipf = {"model.moe.load=\"zipf\"", "model.moe.zipf_exponent=1.2"};
  const auto skewed = run(kMixtral, zipf);
  const auto balanced = run(kMixtral, {});
  // Each rank's routed GEMMs follow its expert's share of the layer's copies (to a whole row).
  const auto routing = strategies::expert_routing(scenario(kMixtral, zipf).lowering.model);
  std::int32_t hottest = 0;
  for (std::int32_t rank = 0; rank < 8; ++rank) {
    const double share = routing.shares[1][static_cast<std::size_t>(rank)];
    EXPECT_NEAR(flops(skewed.program, rank, "layer1.fwd.experts_gate_up"),
                share * 8 * 2 * kTokens * kTopK * 2 * kExpertWidth * kHidden, 2 * 2 * kExpertWidth * kHidden)
        << rank;
    if (share > routing.shares[1][static_cast<std::size_t>(hottest)]) hottest = rank;
  }
  EXPECT_NE(skewed.program.ranks[0], skewed.program.ranks[1]);
  // Every rank waits at the combine for the busiest one: the step is at least its compute, and
  // longer than with balanced routing.
  double busiest = 0;
  for (const auto& rank : skewed.report.rank_reports) busiest = std::max(busiest, rank.compute_time_s);
  EXPECT_GE(skewed.report.step_time_s, busiest);
  EXPECT_GT(skewed.report.step_time_s, 1.2 * balanced.report.step_time_s);
  // A capacity factor of 1 drops what exceeds an expert's balanced share: no rank does more
  // routed work than under balanced routing.
  auto capped_overrides = zipf;
  capped_overrides.push_back("model.moe.capacity_factor=1.0");
  const auto capped = run(kMixtral, capped_overrides);
  EXPECT_LE(flops(capped.program, hottest, "layer1.fwd.experts_gate_up"),
            flops(balanced.program, hottest, "layer1.fwd.experts_gate_up") * (1 + 1e-12));
  EXPECT_LT(capped.report.step_time_s, skewed.report.step_time_s);
}

TEST(ExpertParallelTest, ExpertGradientsAndStatesBelongToTheExpertDataParallelGroup) {
  // 16 GPUs, ep 8: two ranks hold each expert. ZeRO-1 shards the dense states over dp = 16 and
  // the experts' over expert dp = 2; the experts' gradients are reduce-scattered over those 2.
  const auto result = run(kMixtral, {"cluster.nodes=2", "training.global_batch=16", "parallel.strategy=\"zero\""});
  const program::Program& program = result.program;
  std::map<std::string, std::int32_t> group_size;
  for (const auto& op : program.ranks.front()->ops) {
    const auto* reduce = std::get_if<program::CollectiveOp>(&op.body);
    if (reduce == nullptr || reduce->kind != program::CollectiveKind::kReduceScatter) continue;
    const std::string bucket = op.name.find(".experts.") != std::string::npos ? "experts" : "dense";
    group_size[bucket] = static_cast<std::int32_t>(program.family(reduce->group).instances.front().size());
  }
  EXPECT_EQ(group_size["dense"], 16);
  EXPECT_EQ(group_size["experts"], 2);
  // One expert per rank and layer: 2 layers × 3·h·f parameters; fp32 master weights (4 B) and
  // Adam's two moments (8 B), each held once per expert-data-parallel pair.
  const double expert_parameters = 2 * 3 * kHidden * kExpertWidth;
  const auto bytes = states(program);
  EXPECT_DOUBLE_EQ(bytes.at("experts.parameters"), 2 * expert_parameters);
  EXPECT_NEAR(bytes.at("experts.optimizer_states"), 8 * expert_parameters / 2, 1);
  EXPECT_NEAR(bytes.at("experts.master_weights"), 4 * expert_parameters / 2, 1);
}

TEST(ExpertParallelTest, SharedExpertsComputeWhileTheTokensAreInFlight) {
  // Qwen1.5-MoE's shared expert (width 5632) beside the dispatch and the combine's gradient.
  const std::string qwen = R"(
[cluster]
node = "hgx-h100"
nodes = 1
[model]
preset = "qwen1.5-moe-a2.7b"
layers = 2
[training]
global_batch = 8
sequence_length = 4096
[parallel]
ep = 4
)";
  const auto serial = run(qwen, {});
  const auto overlapped = run(qwen, {"parallel.moe_shared_expert_overlap=true"});
  const auto depends_on_dispatch = [](const program::Program& program, const std::string& op) {
    const auto& ops = program.ranks.front()->ops;
    const auto index = static_cast<program::OpIndex>(&op_named(program, 0, "layer0.fwd.dispatch") - ops.data());
    const auto& deps = op_named(program, 0, op).deps;
    return std::find(deps.begin(), deps.end(), index) != deps.end();
  };
  EXPECT_FALSE(depends_on_dispatch(overlapped.program, "layer0.fwd.shared_expert_gate_up"));
  EXPECT_TRUE(depends_on_dispatch(overlapped.program, "layer0.fwd.experts_gate_up"));
  EXPECT_TRUE(depends_on_dispatch(serial.program, "layer0.fwd.shared_expert_gate_up"));
  EXPECT_LT(overlapped.report.step_time_s, serial.report.step_time_s);
}

// Llama-2-7B's shapes (32 heads of 128, all of them KV heads) cut to two layers, one H100 node,
// attention at a fixed efficiency and no launch overhead: every attention op's time is its
// FLOPs over one rate, so a ring's steps add up exactly.
const std::string kLongSequence = R"(
[cluster]
node = "hgx-h100"
nodes = 1

[model]
preset = "llama-2-7b"
layers = 2

[training]
global_batch = 1
sequence_length = 16384

[compute]
attention_efficiency = 0.5
kernel_overhead_us = 0

[network]
model = "analytic"
)";

struct Span {
  double start = 0, end = 0;
  double seconds() const { return end - start; }
};
Span span_of(const scenarios::RunResult& result, std::int32_t rank, const std::string& name) {
  const trace::Timeline& timeline = result.simulation.timeline;
  for (const trace::Span& span : timeline.spans) {
    if (span.rank == rank && timeline.strings.at(span.name) == name) {
      return {static_cast<double>(span.start_ps) * 1e-12, static_cast<double>(span.end_ps) * 1e-12};
    }
  }
  throw std::runtime_error("no span " + name);
}

TEST(ContextParallelTest, RingAttentionTakesComputeOverCpPlusTheTransfersItCannotHide) {
  // Whole-sequence attention of layer 0 on one GPU (8 replicas of it, one per GPU).
  const double whole = span_of(run(kLongSequence, {"training.global_batch=8"}), 0, "layer0.fwd.attention").seconds();
  // NVLink at its full rate hides every K,V transfer behind its step; a 25 GB/s link cannot.
  // (Transfers at the links' rate: collectives.library "ideal", not NCCL's CTAs per send.)
  for (const std::string link : {"", "cluster.nvlink.bandwidth_gbyte_s=25"}) {
    for (const int cp : {2, 4}) {
      std::vector<std::string> overrides = {"parallel.cp=" + std::to_string(cp),
                                            "training.global_batch=" + std::to_string(8 / cp),
                                            "collectives.library=\"ideal\""};
      if (!link.empty()) overrides.push_back(link);
      const auto result = run(kLongSequence, overrides);
      const double step = whole / (cp * cp);  // the balanced causal share of each of the cp steps
      double exposed = 0;
      for (int i = 0; i + 1 < cp; ++i) {
        EXPECT_NEAR(span_of(result, 0, fmt::format("layer0.fwd.attention.step{}", i)).seconds(), step, 1e-9 * whole);
        const double transfer = span_of(result, 0, fmt::format("layer0.fwd.attention_kv_recv.step{}", i)).seconds();
        exposed += std::max(0.0, transfer - step);
      }
      EXPECT_EQ(exposed > 0, !link.empty()) << link << " cp " << cp;
      const double ring = span_of(result, 0, fmt::format("layer0.fwd.attention.step{}", cp - 1)).end -
                          span_of(result, 0, "layer0.fwd.attention.step0").start;
      EXPECT_NEAR(ring, whole / cp + exposed, 1e-6 * whole) << link << " cp " << cp;
      // Each transfer carries one K,V block: s/cp tokens × 2 × 4096 bf16 values.
      const auto& ops = result.program.ranks.front()->ops;
      const auto send = std::find_if(ops.begin(), ops.end(),
                                     [](const program::Op& op) { return op.name == "layer0.fwd.attention_kv_send.step0"; });
      ASSERT_NE(send, ops.end());
      EXPECT_EQ(std::get<program::SendRecvOp>(send->body).bytes, 16384 / cp * 2 * 4096 * 2);
    }
  }
}

TEST(ContextParallelTest, SelectiveRecomputeRunsTheRingAgainBeforeItsBackward) {
  const auto result = run(kLongSequence, {"parallel.cp=2", "training.global_batch=4", "model.attention=\"flash\"",
                                          "training.activation_checkpointing=\"selective\""});
  const auto& ops = result.program.ranks.front()->ops;
  const auto index = [&](const std::string& name) {
    return std::find_if(ops.begin(), ops.end(), [&](const program::Op& op) { return op.name == name; }) - ops.begin();
  };
  const auto recomputed = index("layer0.recompute.attention.step1");
  ASSERT_LT(recomputed, static_cast<std::ptrdiff_t>(ops.size()));
  EXPECT_LT(index("layer0.recompute.attention_kv_recv.step0"), recomputed);  // the ring itself runs again
  EXPECT_LT(recomputed, index("layer0.bwd.attention_kv_grad_send.step0"));   // before the backward ring
}

// Tensor-parallel overlap splits the QKV all-gather and GEMM into chunks before attention: the
// ring's steps still wait for the blocks they receive, not for the steps that took their places.
TEST(ContextParallelTest, RingStepsWaitForTheirBlocksUnderTensorParallelOverlap) {
  const auto result =
      run(kLongSequence, {"parallel.cp=2", "parallel.tp=2", "parallel.sequence_parallel=true",
                          "parallel.tp_comm_overlap=true", "training.global_batch=2"});
  const auto& ops = result.program.ranks.front()->ops;
  const auto index = [&](const std::string& name) {
    const auto it = std::find_if(ops.begin(), ops.end(),
                                 [&](const program::Op& op) { return op.name == name; });
    EXPECT_NE(it, ops.end()) << name;
    return static_cast<program::OpIndex>(it - ops.begin());
  };
  ASSERT_LT(index("layer0.fwd.qkv.chunk1"),
            index("layer0.fwd.attention.step1"));  // chunked before the ring
  // Its dependencies, and theirs through the memory ops before it (its buffers' allocation).
  std::vector<program::OpIndex> waits = ops[index("layer0.fwd.attention.step1")].deps;
  for (std::size_t i = 0; i < waits.size(); ++i) {
    const program::Op& op = ops[waits[i]];
    if (std::holds_alternative<program::MemoryOp>(op.body))
      waits.insert(waits.end(), op.deps.begin(), op.deps.end());
  }
  EXPECT_NE(std::find(waits.begin(), waits.end(), index("layer0.fwd.attention_kv_recv.step0")),
            waits.end());
}

// Llama 3's all-gather attention: K and V of the whole sequence gathered first (exposed), then
// the rank's queries against all keys before them — the same balanced share as the ring's.
TEST(ContextParallelTest, AllGatherAttentionGathersKeysAndValuesThenComputesItsShare) {
  const double whole =
      span_of(run(kLongSequence, {"training.global_batch=8"}), 0, "layer0.fwd.attention").seconds();
  constexpr int kCp = 4;
  const auto result = run(kLongSequence, {"parallel.cp=4", "training.global_batch=2",
                                          "parallel.cp_scheme=\"all_gather\""});
  const Span attention = span_of(result, 0, "layer0.fwd.attention");
  EXPECT_NEAR(attention.seconds(), whole / kCp, 1e-9 * whole);
  EXPECT_GE(attention.start, span_of(result, 0, "layer0.fwd.attention_v_gather").end);
  const auto& ops = result.program.ranks.front()->ops;
  const auto op_named = [&](const std::string& name) {
    const auto it = std::find_if(ops.begin(), ops.end(),
                                 [&](const program::Op& op) { return op.name == name; });
    EXPECT_NE(it, ops.end()) << name;
    return it;
  };
  // The gathered keys: all 16,384 tokens × 32 KV heads of 128, bf16.
  const auto gather = op_named("layer0.fwd.attention_k_gather");
  EXPECT_EQ(std::get<program::CollectiveOp>(gather->body).kind,
            program::CollectiveKind::kAllGather);
  EXPECT_EQ(std::get<program::CollectiveOp>(gather->body).bytes,
            std::int64_t{16384} * 32 * 128 * 2);
  // Backward gathers K and V again before the kernel and reduce-scatters their gradients after it.
  const auto backward = op_named("layer0.bwd.attention");
  EXPECT_LT(op_named("layer0.bwd.attention_k_regather"), backward);
  const auto scatter = op_named("layer0.bwd.attention_k_gather");
  EXPECT_GT(scatter, backward);
  EXPECT_EQ(std::get<program::CollectiveOp>(scatter->body).kind,
            program::CollectiveKind::kReduceScatter);
  EXPECT_EQ(result.report.time_by_category_s.count("send_recv"), 0u);
  EXPECT_EQ(result.report.time_by_category_s.count("all_to_all"), 0u);
}

// Selective recompute replays the gathers with the kernel (Transformer Engine's forward runs
// again), before the backward gathers K and V once more.
TEST(ContextParallelTest, SelectiveRecomputeGathersAgainBeforeTheKernel) {
  const auto result = run(kLongSequence, {"parallel.cp=2", "training.global_batch=4",
                                          "parallel.cp_scheme=\"all_gather\"",
                                          "training.activation_checkpointing=\"selective\""});
  const auto& ops = result.program.ranks.front()->ops;
  const auto index = [&](const std::string& name) {
    return std::find_if(ops.begin(), ops.end(),
                        [&](const program::Op& op) { return op.name == name; }) -
           ops.begin();
  };
  const auto recomputed = index("layer0.recompute.attention");
  ASSERT_LT(recomputed, static_cast<std::ptrdiff_t>(ops.size()));
  EXPECT_LT(index("layer0.recompute.attention_v_gather"), recomputed);
  EXPECT_LT(recomputed, index("layer0.bwd.attention_k_regather"));
  EXPECT_LT(index("layer0.bwd.attention_k_regather"), index("layer0.bwd.attention"));
}

// Transformer Engine's all-gather attention holds K and V of the whole sequence only around the
// kernel, and in backward also the full-length dK and dV it accumulates into, until their
// reduce-scatters: on Llama-2-7B's 32 KV heads at cp 8 those four tensors (4 × 16,384 tokens ×
// 4,096 × 2 bytes = 512 MiB) outweigh the logits, and set the peak at the last layer's backward.
// What rank 0 keeps of every block but the output layer's (whose logits are freed before the
// layers' backward and allocated after their forward).
double layers_kept_activations(const scenarios::RunResult& result) {
  double kept = 0;
  for (const program::Op& op : result.program.ranks.front()->ops) {
    const auto* memory = std::get_if<program::MemoryOp>(&op.body);
    if (memory && memory->allocate && op.name.ends_with(".activations") &&
        op.name != "head.activations") {
      kept += static_cast<double>(memory->bytes);
    }
  }
  return kept;
}

TEST(ContextParallelTest, AllGatherAttentionHoldsTheGatheredKeysAndValuesOnlyAroundTheKernel) {
  const auto result = run(kLongSequence, {"parallel.cp=8", "parallel.cp_scheme=\"all_gather\""});
  constexpr double kGathered = 16384.0 * 4096 * 2;  // one of K, V, dK, dV over the whole sequence
  // At the peak: every layer's kept activations (the logits' already freed) and the four.
  EXPECT_EQ(result.report.peak_memory_op, "layer1.attention_v_gathered_gradient");
  EXPECT_NEAR(static_cast<double>(result.report.peak_memory_breakdown.at("activations")),
              layers_kept_activations(result) + 4 * kGathered, 4.0);
  // Forward: both gathered before the kernel, released after it, before the next op.
  const auto& ops = result.program.ranks.front()->ops;
  const auto index = [&](const std::string& name) {
    const auto it = std::find_if(ops.begin(), ops.end(),
                                 [&](const program::Op& op) { return op.name == name; });
    EXPECT_NE(it, ops.end()) << name;
    return it - ops.begin();
  };
  EXPECT_LT(index("layer0.attention_k_gathered"), index("layer0.fwd.attention_k_gather"));
  const auto kernel = index("layer0.fwd.attention");
  EXPECT_EQ(ops[static_cast<std::size_t>(kernel + 1)].name, "layer0.attention_k_gathered");
  EXPECT_EQ(std::get<program::MemoryOp>(ops[static_cast<std::size_t>(kernel + 1)].body).bytes,
            kGathered);
  // Backward: dV's buffer is released only once its reduce-scatter has run, on its stream.
  const auto scatter = index("layer0.bwd.attention_v_gather");
  const program::Op& release = ops[static_cast<std::size_t>(scatter + 1)];
  EXPECT_EQ(release.name, "layer0.attention_v_gathered_gradient");
  EXPECT_FALSE(std::get<program::MemoryOp>(release.body).allocate);
  EXPECT_EQ(release.stream, ops[static_cast<std::size_t>(scatter)].stream);
  EXPECT_EQ(release.deps, std::vector<program::OpIndex>{static_cast<program::OpIndex>(scatter)});
}

// Transformer Engine's ring attention keeps every K,V block it receives (and a copy of its own)
// and every step's output until the ring ends: at cp 8 on Llama-2-7B, 8 blocks of 2,048 tokens
// × 2 × 4,096 and 8 outputs of 2,048 × 4,096, bf16 — 384 MiB on top of the layers' activations
// at the last layer's last step, more than the logits. Backward passes K,V with dK,dV in two
// buffers of both: four blocks.
TEST(ContextParallelTest, RingAttentionHoldsEveryBlockItReceivesUntilTheRingEnds) {
  const auto result = run(kLongSequence, {"parallel.cp=8"});
  constexpr double kBlock = 2048.0 * 2 * 4096 * 2, kOutput = 2048.0 * 4096 * 2;
  EXPECT_EQ(result.report.peak_memory_op, "layer1.attention_ring_buffers.step7");
  EXPECT_NEAR(static_cast<double>(result.report.peak_memory_breakdown.at("activations")),
              layers_kept_activations(result) + 8 * (kBlock + kOutput), 4.0);
  double gradient_buffers = 0;
  for (const program::Op& op : result.program.ranks.front()->ops) {
    const auto* memory = std::get_if<program::MemoryOp>(&op.body);
    if (memory && memory->allocate && op.name == "layer0.attention_ring_gradient_buffers") {
      gradient_buffers = static_cast<double>(memory->bytes);
    }
  }
  EXPECT_EQ(gradient_buffers, 4 * kBlock);
}

TEST(ContextParallelTest, UlyssesTradesTheRingForTwoAllToAllsAndEverySchemeDividesActivations) {
  const auto whole = run(kLongSequence, {"training.global_batch=8"});
  const auto ring = run(kLongSequence, {"parallel.cp=8"});
  const auto ulysses = run(kLongSequence, {"parallel.cp=8", "parallel.cp_scheme=\"ulysses\""});
  // Ulysses: all-to-alls of Q, K, V and of the output over the 8 cp ranks; no ring transfers.
  EXPECT_GT(ulysses.report.time_by_category_s.at("all_to_all"), 0);
  EXPECT_EQ(ulysses.report.time_by_category_s.count("send_recv"), 0u);
  EXPECT_GT(ring.report.time_by_category_s.at("send_recv"), 0);
  // Activations per GPU: 1/cp of one sequence's (the whole run keeps one sequence per GPU).
  const auto activations = [](const scenarios::RunResult& result) {
    return static_cast<double>(result.report.peak_memory_breakdown.at("activations"));
  };
  EXPECT_NEAR(activations(ulysses), activations(whole) / 8, 0.02 * activations(whole) / 8);
  // (The ring and all-gather attention keep the same per rank, but their buffers weigh on the
  // peak: RingAttentionHoldsEveryBlockItReceivesUntilTheRingEnds and
  // AllGatherAttentionHoldsTheGatheredKeysAndValuesOnlyAroundTheKernel.)
  // Gradients are reduced over the 8 ranks that hold the same parameters: the cp ranks.
  EXPECT_GT(ring.report.time_by_category_s.at("all_reduce"), 0);
}

}  // namespace
