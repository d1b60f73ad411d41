// DDP and parameter-server lowering: buckets, overlap structure, no_sync, barrier, memory
// and the facts the report needs.
#include "strategies/lowering.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "strategies/layout.h"
#include "strategies/pipeline_schedule.h"

namespace {

using program::CollectiveKind;
using program::CollectiveOp;
using program::Op;

strategies::LoweringInput ddp_input(std::int32_t dp, std::int64_t accumulation) {
  strategies::LoweringInput input;
  input.model = *strategies::model_preset("llama-2-7b");
  input.training.micro_batch = 1;
  input.training.sequence = 1024;
  input.training.accumulation = accumulation;
  input.training.global_batch = dp * accumulation;
  input.parallel.dp = dp;
  return input;
}

std::vector<std::size_t> collectives_of(const program::RankProgram& rank, CollectiveKind kind) {
  std::vector<std::size_t> found;
  for (std::size_t i = 0; i < rank.ops.size(); ++i) {
    if (const auto* c = std::get_if<CollectiveOp>(&rank.ops[i].body); c && c->kind == kind) found.push_back(i);
  }
  return found;
}

TEST(DdpLoweringTest, ProgramIsWellFormedAndSharedByAllRanks) {
  const program::Program p = strategies::lower(ddp_input(8, 2));
  EXPECT_TRUE(program::validate(p).empty());
  EXPECT_EQ(p.world_size, 8);
  EXPECT_EQ(p.ranks.front(), p.ranks.back());  // one RankProgram for every replica
  EXPECT_EQ(p.streams, (std::vector<std::string>{"compute", "dp"}));
}

TEST(DdpLoweringTest, BucketsFollowTorchsReducerRule) {
  // Greedy filling in gradient-ready order: each bucket closes once it holds at least the cap
  // (1 MiB for the first, 25 MiB after); together they carry every gradient once.
  const program::Program p = strategies::lower(ddp_input(8, 1));
  const auto& ops = p.ranks[0]->ops;
  const auto buckets = collectives_of(*p.ranks[0], CollectiveKind::kAllReduce);
  ASSERT_GT(buckets.size(), 100u);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const auto& op = std::get<CollectiveOp>(ops[buckets[i]].body);
    total += op.bytes;
    if (i == 0) {
      EXPECT_GE(op.bytes, 1 << 20);  // here the LM head's 262 MB gradient, alone
    } else if (i + 1 < buckets.size()) {
      EXPECT_GE(op.bytes, 25 << 20) << "bucket " << i;
    }
    EXPECT_EQ(ops[buckets[i]].stream, 1);  // on the comm stream
  }
  EXPECT_EQ(total, 2 * strategies::architecture_parameters(*strategies::model_preset("llama-2-7b")));
}

TEST(DdpLoweringTest, EachBucketWaitsOnlyForTheBackwardOpThatCompletesIt) {
  const program::Program p = strategies::lower(ddp_input(8, 1));
  const auto& ops = p.ranks[0]->ops;
  const auto buckets = collectives_of(*p.ranks[0], CollectiveKind::kAllReduce);
  std::size_t previous_dep = 0;
  for (std::size_t index : buckets) {
    ASSERT_EQ(ops[index].deps.size(), 1u);
    const Op& producer = ops[ops[index].deps[0]];
    const auto& compute = std::get<program::ComputeOp>(producer.body);
    EXPECT_EQ(compute.phase, program::Phase::kBackward) << producer.name;
    EXPECT_GE(ops[index].deps[0], previous_dep);  // launched in backward order
    previous_dep = ops[index].deps[0];
  }
  // The first bucket is ready long before backward ends: it holds the head's gradients.
  EXPECT_NE(ops[ops[buckets.front()].deps[0]].name.find("head"), std::string::npos);
  // The optimizer waits for the last bucket.
  const auto optimizer = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
    return op.name.rfind("optimizer.", 0) == 0;
  });
  ASSERT_NE(optimizer, ops.end());
  EXPECT_EQ(optimizer->deps, (std::vector<program::OpIndex>{static_cast<program::OpIndex>(buckets.back())}));
}

TEST(DdpLoweringTest, WithoutOverlapOneAllReduceFollowsTheWholeBackward) {
  // Megatron-LM's local DDP: every gradient in one all-reduce, issued once the backward's last
  // op is done.
  strategies::LoweringInput input = ddp_input(8, 1);
  input.ddp.overlap_grad_reduce = false;
  const program::Program p = strategies::lower(input);
  const auto& ops = p.ranks[0]->ops;
  const auto buckets = collectives_of(*p.ranks[0], CollectiveKind::kAllReduce);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(std::get<CollectiveOp>(ops[buckets[0]].body).bytes,
            2 * strategies::architecture_parameters(*strategies::model_preset("llama-2-7b")));
  ASSERT_EQ(ops[buckets[0]].deps.size(), 1u);
  const program::OpIndex producer = ops[buckets[0]].deps[0];
  for (program::OpIndex i = producer + 1; i < buckets[0]; ++i) {
    const auto* compute = std::get_if<program::ComputeOp>(&ops[i].body);
    EXPECT_TRUE(compute == nullptr || compute->phase != program::Phase::kBackward) << ops[i].name;
  }
  EXPECT_EQ(std::get<program::ComputeOp>(ops[producer].body).phase, program::Phase::kBackward);
}

TEST(DdpLoweringTest, NoSyncAllReducesOnlyOnTheLastMicroStep) {
  const program::Program with = strategies::lower(ddp_input(4, 4));
  const auto buckets = collectives_of(*with.ranks[0], CollectiveKind::kAllReduce);
  // Every all-reduce comes after the last forward op of the 4th micro-step.
  const auto& ops = with.ranks[0]->ops;
  std::size_t forwards_seen = 0;
  std::size_t last_micro_start = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == "embedding.fwd.lookup" && ++forwards_seen == 4) last_micro_start = i;
  }
  EXPECT_GT(buckets.front(), last_micro_start);

  strategies::LoweringInput sync_every = ddp_input(4, 4);
  sync_every.ddp.no_sync = false;
  const program::Program every = strategies::lower(sync_every);
  const auto all = collectives_of(*every.ranks[0], CollectiveKind::kAllReduce);
  EXPECT_EQ(all.size(), 4 * buckets.size());
}

TEST(DdpLoweringTest, BarrierAntiPatternAddsOneWorldBarrierPerStep) {
  strategies::LoweringInput input = ddp_input(4, 2);
  input.training.steps = 3;
  const program::Program plain = strategies::lower(input);
  EXPECT_TRUE(collectives_of(*plain.ranks[0], CollectiveKind::kBarrier).empty());
  input.ddp.barrier_every_step = true;
  const program::Program p = strategies::lower(input);
  const auto barriers = collectives_of(*p.ranks[0], CollectiveKind::kBarrier);
  EXPECT_EQ(barriers.size(), 3u);
  EXPECT_EQ(std::get<CollectiveOp>(p.ranks[0]->ops[barriers[0]].body).group, *p.find_family("world"));
}

TEST(DdpLoweringTest, MemoryOpsBalanceAndModelStatesFollowThePrecision) {
  strategies::LoweringInput input = ddp_input(2, 2);
  input.model.parameter_count = 7e9;
  std::array<std::int64_t, program::kMemoryCategoryCount> live{};
  const program::Program p = strategies::lower(input);
  for (const Op& op : p.ranks[0]->ops) {
    if (const auto* memory = std::get_if<program::MemoryOp>(&op.body)) {
      live[static_cast<std::size_t>(memory->category)] += memory->allocate ? memory->bytes : -memory->bytes;
    }
  }
  auto bytes = [&live](program::MemoryCategory c) { return live[static_cast<std::size_t>(c)]; };
  EXPECT_EQ(bytes(program::MemoryCategory::kActivations), 0);  // every activation is freed
  EXPECT_EQ(bytes(program::MemoryCategory::kParameters), 14'000'000'000);
  EXPECT_EQ(bytes(program::MemoryCategory::kGradients), 14'000'000'000);
  EXPECT_EQ(bytes(program::MemoryCategory::kMasterWeights), 28'000'000'000);
  EXPECT_EQ(bytes(program::MemoryCategory::kOptimizerStates), 56'000'000'000);
  EXPECT_EQ(bytes(program::MemoryCategory::kCommBuffers), 14'000'000'000);  // bucket copy

  // FSDP NO_SHARD keeps the same states but all-reduces each FlatParameter's gradient in place
  // (PyTorch's _reduce_grad_no_shard): no bucket copy. A black-box run found 140 GB of
  // communication buffers on a 70B model.
  input.parallel.strategy = "fsdp";
  input.fsdp.sharding = strategies::ShardingStrategy::kNoShard;
  live.fill(0);
  const program::Program no_shard = strategies::lower(input);
  for (const Op& op : no_shard.ranks[0]->ops) {
    if (const auto* memory = std::get_if<program::MemoryOp>(&op.body)) {
      live[static_cast<std::size_t>(memory->category)] +=
          memory->allocate ? memory->bytes : -memory->bytes;
    }
  }
  EXPECT_EQ(bytes(program::MemoryCategory::kGradients), 14'000'000'000);
  EXPECT_EQ(bytes(program::MemoryCategory::kCommBuffers), 0);
}

TEST(DdpLoweringTest, ModelStateBytesPerParameter) {
  strategies::TrainingSpec training;
  training.precision = strategies::Precision::kMixed;
  EXPECT_DOUBLE_EQ(strategies::model_state_bytes(training).total(), 16);  // the chapter's figure
  training.precision = strategies::Precision::kBF16;
  EXPECT_DOUBLE_EQ(strategies::model_state_bytes(training).total(), 8);
  training.precision = strategies::Precision::kFP32;
  EXPECT_DOUBLE_EQ(strategies::model_state_bytes(training).total(), 16);
  training.precision = strategies::Precision::kMixed;
  training.optimizer = strategies::OptimizerKind::kSgd;
  EXPECT_DOUBLE_EQ(strategies::model_state_bytes(training).total(), 12);
  training.sgd_momentum = 0;
  EXPECT_DOUBLE_EQ(strategies::model_state_bytes(training).total(), 8);
}

TEST(DdpLoweringTest, ModelFlopsAreThreeTimesTheForward) {
  const strategies::LoweringInput input = ddp_input(4, 2);
  const program::Program p = strategies::lower(input);
  // ≈ 6 · N · tokens for a 7B model at 1k tokens (attention adds a few per cent).
  const double six_n_t = 6.0 * 6.738e9 * static_cast<double>(input.training.global_batch * 1024);
  EXPECT_GT(p.info.model_flops_per_step, six_n_t);
  EXPECT_LT(p.info.model_flops_per_step, 1.1 * six_n_t);
  EXPECT_EQ(p.info.tokens_per_step, input.training.global_batch * 1024);
}

TEST(ParameterServerLoweringTest, WorkersPushAndPullThroughTheServers) {
  strategies::LoweringInput input = ddp_input(4, 1);
  input.parallel.strategy = "ps";
  input.parameter_servers = 2;
  const program::Program p = strategies::lower(input);
  EXPECT_TRUE(program::validate(p).empty());
  EXPECT_EQ(p.world_size, 6);
  EXPECT_EQ(p.ranks[0], p.ranks[3]);
  EXPECT_EQ(p.ranks[4], p.ranks[5]);
  EXPECT_NE(p.ranks[0], p.ranks[4]);
  const auto pushes = collectives_of(*p.ranks[0], CollectiveKind::kPsPush);
  ASSERT_EQ(pushes.size(), 1u);
  const auto& push = std::get<CollectiveOp>(p.ranks[0]->ops[pushes[0]].body);
  EXPECT_EQ(push.ps_servers, 2);
  EXPECT_EQ(push.bytes, 2 * strategies::architecture_parameters(input.model));
  // A server updates its shard between the push and the pull.
  const auto& server = p.ranks[4]->ops;
  ASSERT_EQ(server.size(), 5u);  // master and optimizer allocations, push, update, pull
  EXPECT_EQ(std::get<program::ComputeOp>(server[3].body).kind, program::ComputeKind::kOptimizer);
}

TEST(LayoutTest, MegatronOrderPutsTensorParallelRanksNextToEachOther) {
  const strategies::ParallelLayout layout(4, 2, 2);  // dp 4, tp 2, pp 2
  EXPECT_EQ(layout.world(), 16);
  for (std::int32_t rank = 0; rank < 16; ++rank) EXPECT_EQ(layout.rank_of(layout.coordinates(rank)), rank);
  const auto families = layout.group_families();
  ASSERT_EQ(families.size(), 4u);
  EXPECT_EQ(families[2].name, "tp");
  EXPECT_EQ(families[2].instances[0], (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(families[1].instances[0], (std::vector<std::int32_t>{0, 2, 4, 6}));   // dp
  EXPECT_EQ(families[3].instances[0], (std::vector<std::int32_t>{0, 8}));         // pp
}

}  // namespace

namespace {

// Interleaved 1F1B with p = 2 stages, v = 2 chunks, M = 4 micro-batches, as Megatron-LM's
// schedule numbers it (worked by hand): forwards k = 0…7 run (chunk, micro) (0,0) (0,1) (1,0)
// (1,1) (0,2) (0,3) (1,2) (1,3), backwards the same with the chunks swapped; stage 0 warms up
// with 2(p−1) + (v−1)p = 4 forwards, stage 1 with 2.
TEST(PipelineScheduleTest, InterleavedOrderFollowsMegatron) {
  const auto text = [](std::int32_t stage) {
    std::string out;
    for (const strategies::PipelineSlot& slot :
         strategies::pipeline_order(strategies::PipelineSchedule::kInterleaved, 2, stage, 4, 2)) {
      out += (slot.forward ? "F" : "B") + std::to_string(slot.chunk) + std::to_string(slot.micro) + " ";
    }
    return out;
  };
  EXPECT_EQ(text(0), "F00 F01 F10 F11 F02 B10 F03 B11 F12 B00 F13 B01 B12 B13 B02 B03 ");
  EXPECT_EQ(text(1), "F00 F01 F10 B10 F11 B11 F02 B00 F03 B01 F12 B12 F13 B13 B02 B03 ");
  EXPECT_DOUBLE_EQ(strategies::pipeline_bubble_fraction(2, 4, 2), 1.0 / 9);
}

// The layers of each virtual stage, worked by hand. 6 layers over 4 virtual stages (pp 2 × v 2)
// split at 6·k/4: 0, 1, 3, 4, 6. With the embedding and the loss each taking a layer's place
// (Megatron-Core's account_for_*_in_pipeline_split) there are 8 places, two per stage: the first
// holds the embedding and layer 0, the last layer 5 and the loss. Llama 3 405B's layout: 126
// layers, 16 stages × 8 chunks, one place each — the first chunk holds the embedding alone, the
// last the loss alone.
TEST(PipelineScheduleTest, ChunksSplitTheLayersAndTheEmbeddingAndLossWhenAccounted) {
  using Ranges = std::vector<std::pair<std::int64_t, std::int64_t>>;
  const auto ranges = [](std::int64_t layers, std::int64_t virtual_stages, bool embedding,
                         bool loss) {
    strategies::ParallelSpec parallel;
    parallel.account_for_embedding_in_pipeline_split = embedding;
    parallel.account_for_loss_in_pipeline_split = loss;
    Ranges out;
    for (std::int64_t v = 0; v < virtual_stages; ++v) {
      const strategies::LayerRange range =
          strategies::pipeline_chunk_layers(layers, v, virtual_stages, parallel);
      out.emplace_back(range.begin, range.end);
    }
    return out;
  };
  EXPECT_EQ(ranges(6, 4, false, false), (Ranges{{0, 1}, {1, 3}, {3, 4}, {4, 6}}));
  EXPECT_EQ(ranges(6, 4, true, true), (Ranges{{0, 1}, {1, 3}, {3, 5}, {5, 6}}));
  EXPECT_EQ(ranges(6, 4, false, true),
            (Ranges{{0, 1}, {1, 3}, {3, 5}, {5, 6}}));  // 7 places: 0, 1, 3, 5, 7
  const Ranges llama3 = ranges(126, 128, true, true);
  EXPECT_EQ(llama3.front(), (std::pair<std::int64_t, std::int64_t>{0, 0}));
  EXPECT_EQ(llama3[1], (std::pair<std::int64_t, std::int64_t>{0, 1}));
  EXPECT_EQ(llama3[126], (std::pair<std::int64_t, std::int64_t>{125, 126}));
  EXPECT_EQ(llama3.back(), (std::pair<std::int64_t, std::int64_t>{126, 126}));
}

}  // namespace
