// The 3D-parallel lowering (see parallel_training.h).
#include "strategies/parallel_training.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "strategies/data_parallel.h"
#include "strategies/layout.h"
#include "strategies/pipeline_schedule.h"

namespace strategies {
namespace {

using program::OpIndex;

// Streams, created only when something uses them.
class StreamTable {
 public:
  explicit StreamTable(program::Program& program) : program_(program) {}
  program::StreamId operator()(const std::string& name) {
    auto [it, inserted] = ids_.try_emplace(name, static_cast<program::StreamId>(program_.streams.size()));
    if (inserted) program_.streams.push_back(name);
    return it->second;
  }

 private:
  program::Program& program_;
  std::map<std::string, program::StreamId> ids_;
};

// FSDP HYBRID_SHARD groups: each data-parallel group cut into node-sized shard groups, and
// the ranks holding the same shard across them.
void add_hybrid_groups(program::Program& program, const program::GroupFamily& dp, std::int32_t shards) {
  std::vector<std::vector<std::int32_t>> shard_groups;
  std::vector<std::vector<std::int32_t>> replicate_groups;
  for (const auto& members : dp.instances) {
    std::vector<std::vector<std::int32_t>> replicas(static_cast<std::size_t>(shards));
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (i % static_cast<std::size_t>(shards) == 0) shard_groups.emplace_back();
      shard_groups.back().push_back(members[i]);
      replicas[i % static_cast<std::size_t>(shards)].push_back(members[i]);
    }
    for (auto& group : replicas) replicate_groups.push_back(std::move(group));
  }
  program.group_families.push_back(program::make_group_family("dp_shard", program.world_size, std::move(shard_groups)));
  program.group_families.push_back(
      program::make_group_family("dp_replicate", program.world_size, std::move(replicate_groups)));
}

// A pipeline transfer as Megatron-LM posts it: batched (batch_isend_irecv, in the pipeline
// group's communicator since PyTorch 1.12, pytorch#74701) when it blocks, and as a lone
// isend/irecv, which PyTorch runs in a communicator of the two ranks, when it overlaps compute
// (p2p_communication.py: batch_p2p_comm = not overlap_p2p_comm).
program::SendRecvOp activation_transfer(bool send, std::int32_t offset,
                                        program::GroupFamilyId group, double bytes,
                                        program::DType dtype, bool blocking) {
  program::SendRecvOp transfer{send, group, offset, static_cast<std::int64_t>(bytes), dtype};
  transfer.pair_communicator = !blocking;
  return transfer;
}

std::string strategy_label(const LoweringInput& input) {
  if (input.parallel.strategy == "zero") return fmt::format("ZeRO-{}", input.zero.stage);
  if (input.parallel.strategy == "fsdp") {
    return fmt::format("FSDP {}", name_of(input.fsdp.sharding));
  }
  return "DDP";
}

}  // namespace

program::Program lower_parallel(const LoweringInput& input) {
  const ParallelSpec& parallel = input.parallel;
  const TrainingSpec& training = input.training;
  const std::int32_t dp = parallel.dp, tp = parallel.tp, pp = parallel.pp;

  program::Program program;
  OpBudget budget;
  const std::int32_t ep = parallel.ep, cp = parallel.cp;
  const ParallelLayout layout(dp, tp, pp, ep, cp);
  program.world_size = layout.world();
  program.group_families = layout.group_families();
  program.placement = block_placement(program.world_size);
  const program::GroupFamilyId dp_group = *program.find_family("dp");
  const program::GroupFamilyId pp_group = *program.find_family("pp");

  StreamTable streams(program);
  StageContext base;
  base.input = &input;
  base.streams.compute = streams("compute");
  if (tp > 1) base.streams.tensor_parallel = streams("tp");
  if (ep > 1) base.streams.group_streams.emplace_back(*program.find_family("ep"), streams("ep"));
  ContextParallel context_parallel{cp, parallel.cp_scheme, 0};
  if (cp > 1) {
    context_parallel.group = *program.find_family("cp");
    if (parallel.cp_scheme != ContextParallelScheme::kRing) {  // collectives over the cp group
      base.streams.group_streams.emplace_back(context_parallel.group, streams("cp"));
    } else {
      base.streams.transfer_send = streams("cp_send");
      base.streams.transfer_receive = streams("cp_recv");
    }
  }
  const std::int32_t replicas_of_parameters = parallel.data_parallel_ranks();  // dp × cp
  if (replicas_of_parameters > 1) base.dp_reduce = streams("dp");
  // All-gathers and reductions over the same process group share its one NCCL stream, unless
  // FSDP gives the reduce-scatter a group of its own (FsdpSpec::separate_reduce_scatter_group).
  if (replicas_of_parameters > 1 && parallel.strategy != "ddp") {
    const bool separate = parallel.strategy == "fsdp" && input.fsdp.sharding != ShardingStrategy::kNoShard &&
                          input.fsdp.separate_reduce_scatter_group;
    base.dp_gather = separate ? streams("dp_gather") : base.dp_reduce;
  }
  if (input.fsdp.cpu_offload && parallel.strategy == "fsdp") {
    base.host_to_device = streams("host_to_device");
    base.device_to_host = streams("device_to_host");
  }
  base.dp_group = dp_group;
  base.world_group = *program.find_family("world");
  if (parallel.strategy == "fsdp" && input.fsdp.sharding == ShardingStrategy::kHybridShard) {
    const std::int32_t shards = std::min(replicas_of_parameters, std::max(1, parallel.gpus_per_node / tp));
    add_hybrid_groups(program, program.family(dp_group), shards);
    base.shard_group = *program.find_family("dp_shard");
    base.replicate_group = *program.find_family("dp_replicate");
    if (replicas_of_parameters > shards) base.dp_replicate = streams("dp_replicate");
  }
  struct PipelineStreams {
    program::StreamId recv_previous = 0, send_next = 0, recv_next = 0, send_previous = 0;
  } pipe;
  if (pp > 1) {  // one stream per direction and peer, so transfers never queue behind each other
    pipe = {streams("pp_recv_prev"), streams("pp_send_next"), streams("pp_recv_next"), streams("pp_send_prev")};
  }

  const TensorParallel tensor_parallel{tp, parallel.sequence_parallel && tp > 1, parallel.sp_regather,
                                       tp > 1 ? *program.find_family("tp") : program::GroupFamilyId{0},
                                       parallel.tp_comm_overlap};
  // Tied embeddings across a pipeline: the last stage keeps a copy of the word embeddings, and
  // Megatron-LM all-reduces their gradients between the first and last stage (the "embedding"
  // group) after the backward of the last micro-batch, before the optimizer step.
  const bool embedding_copy = pp > 1 && input.model.tied_embeddings;
  // One replica model per expert-parallel rank when the router's load differs between them (each
  // holds other experts), else one for all.
  const ExpertRouting routing = expert_routing(input.model);
  const bool balanced = !input.model.moe || input.model.moe->load == ExpertLoad::kUniform;
  std::vector<ReplicaModel> replicas;
  for (std::int32_t expert_rank = 0; expert_rank < (balanced ? 1 : ep); ++expert_rank) {
    const ExpertParallel expert_parallel{ep, expert_rank, ep > 1 ? *program.find_family("ep") : program::GroupFamilyId{0},
                                        &routing, parallel.moe_shared_expert_overlap};
    replicas.push_back(replica_model(input.model, training, tensor_parallel, embedding_copy, expert_parallel, context_parallel));
  }
  if (ep > 1) {
    base.expert_dp_group = *program.find_family("expert_dp");
    base.expert_dp = dp / ep * cp;
  } else {
    base.expert_dp_group = dp_group;
    base.expert_dp = replicas_of_parameters;
  }
  const ReplicaModel& first_replica = replicas.front();
  const double scale = parameter_scale(input.model);
  program::GroupFamilyId embedding_group = 0;
  program::StreamId embedding_stream = 0;
  if (embedding_copy) {
    std::vector<std::vector<std::int32_t>> pairs;
    for (std::int32_t d = 0; d < dp; ++d) {
      for (std::int32_t c = 0; c < cp; ++c) {
        for (std::int32_t t = 0; t < tp; ++t) {
          pairs.push_back({layout.rank_of({d, t, 0, c}), layout.rank_of({d, t, pp - 1, c})});
        }
      }
    }
    program.group_families.push_back(program::make_group_family("embedding", program.world_size, std::move(pairs)));
    embedding_group = static_cast<program::GroupFamilyId>(program.group_families.size() - 1);
    // After the data-parallel gradient reduction, as Megatron-LM orders them: on its stream.
    embedding_stream = replicas_of_parameters > 1 ? base.dp_reduce : streams("embedding");
  }
  const double embedding_gradient_bytes = static_cast<double>(first_replica.blocks.front().params.front().elements) * scale *
                                          static_cast<double>(program::dtype_bytes(first_replica.gradient_dtype));
  const std::int64_t layers = input.model.layers;
  const std::int64_t micro_batches = training.accumulation;
  const double element_bytes = static_cast<double>(program::dtype_bytes(first_replica.dtype));
  const std::int64_t sent_tokens =
      training.micro_batch * training.sequence / cp / (tensor_parallel.sequence_parallel ? tp : 1);
  const double activation_bytes = static_cast<double>(sent_tokens * input.model.hidden) * element_bytes;
  const bool scatter_gather = parallel.pipeline_scatter_gather && tp > 1 && !tensor_parallel.sequence_parallel;
  const double sent_bytes = scatter_gather ? activation_bytes / tp : activation_bytes;

  // Interleaved 1F1B: each rank holds `chunks` model chunks, virtual stages chunk·pp + stage of
  // pp·chunks; the last rank's chunk c feeds the first rank's chunk c + 1 over the "pp_wrap"
  // group (the same ranks as "pp": transfers of the two directions never share a key).
  const std::int32_t chunks = parallel.schedule == PipelineSchedule::kInterleaved ? parallel.virtual_stages : 1;
  const std::int32_t virtual_stages = pp * chunks;
  if (chunks > 1 && (pp < 2 || micro_batches % pp != 0 ||
                     virtual_stages > pipeline_split_places(layers, parallel))) {
    throw std::invalid_argument(
        fmt::format("interleaved 1F1B needs pp ≥ 2, micro-batches a multiple of pp and a layer (or "
                    "the embedding or loss) per "
                    "chunk: pp {}, {} micro-batches, {} chunks of {} layers",
                    pp, micro_batches, virtual_stages, layers));
  }
  program::GroupFamilyId wrap_group = pp_group;
  if (chunks > 1) {
    program::GroupFamily wrap = program.family(pp_group);
    wrap.name = "pp_wrap";
    program.group_families.push_back(std::move(wrap));
    wrap_group = static_cast<program::GroupFamilyId>(program.group_families.size() - 1);
  }
  program.ranks.resize(static_cast<std::size_t>(program.world_size));
  for (std::int32_t stage = 0; stage < pp; ++stage) {
    for (std::size_t variant = 0; variant < replicas.size(); ++variant) {
      ReplicaModel& replica = replicas[variant];
      // One data-parallel policy per model chunk: Megatron wraps each chunk in its own DDP, with
      // its own gradient buckets, synchronised after the chunk's last backward.
      std::vector<StageContext> contexts(static_cast<std::size_t>(chunks), base);
      std::vector<std::unique_ptr<DataParallelPolicy>> policies;
      for (std::int32_t chunk = 0; chunk < chunks; ++chunk) {
        StageContext& context = contexts[static_cast<std::size_t>(chunk)];
        context.replica = &replica;
        context.issues_step_barrier = chunk == 0;
        // One chunk's last backward is the schedule's last: only several chunks defer.
        context.defer_gradient_sync = chunks > 1 && !input.ddp.overlap_grad_reduce;
        const std::int64_t virtual_stage = std::int64_t{chunk} * pp + stage;
        if (virtual_stage == 0) context.blocks.push_back(&replica.blocks.front());
        const LayerRange held =
            pipeline_chunk_layers(layers, virtual_stage, virtual_stages, parallel);
        for (std::int64_t layer = held.begin; layer < held.end; ++layer) {
          context.blocks.push_back(&replica.blocks[static_cast<std::size_t>(layer + 1)]);
        }
        if (virtual_stage == virtual_stages - 1) context.blocks.push_back(&replica.blocks.back());
        for (const Block* block : context.blocks) {
          context.parameters += static_cast<double>(block->parameter_elements()) * scale;
          for (const ParamTensor& param : block->params) {
            if (param.expert) context.expert_parameters += static_cast<double>(param.elements) * scale;
          }
        }
        policies.push_back(make_data_parallel_policy(context));
      }
      RankProgramBuilder builder(budget);
      const auto chunk_names = [&](std::int32_t chunk) {
        builder.set_name_prefix(chunks > 1 ? fmt::format("chunk{}.", chunk) : "");
      };
      for (std::int32_t chunk = 0; chunk < chunks; ++chunk) {
        chunk_names(chunk);
        policies[static_cast<std::size_t>(chunk)]->allocate_states(builder);
      }
      // The neighbours of a virtual stage: the next rank's same chunk, or from the last rank the
      // first rank's next chunk (and back).
      const bool wraps_forward = stage == pp - 1, wraps_backward = stage == 0;
      const std::int32_t next_offset = wraps_forward ? -(pp - 1) : 1, previous_offset = wraps_backward ? pp - 1 : -1;
      const program::GroupFamilyId next_group = wraps_forward ? wrap_group : pp_group;
      const program::GroupFamilyId previous_group = wraps_backward ? wrap_group : pp_group;
      // A stage's input (activation or gradient) arrives as one transfer, or with scatter/gather as
      // 1/t of it followed by an all-gather over the tensor-parallel group. With blocking
      // point-to-point and one chunk per stage a receive is posted when the stage gets to it, as
      // Megatron-LM's 1F1B does (p2p_communication.py): after the stage's previous slot, in the
      // batch_isend_irecv that also sends that slot's output where the direction turns
      // (send_forward_recv_backward, send_backward_recv_forward), and after that send has
      // completed where it does not (send_forward, then recv_forward: the warm-up, the cool-down,
      // GPipe); the first of a step after the previous step's update. An NCCL transfer moves once
      // both sides have posted, so a stage ahead of its neighbour waits for it. Overlapped
      // point-to-point posts receives beside the compute, ahead of time; so does the interleaved
      // schedule here, whose exchanges Megatron-LM batches per forward-backward pair
      // (send_forward_backward_recv_forward_backward, each forward's output sent after the next
      // backward), which dtsim does not model: posting its receives late with each send waited
      // alone would deadlock where Megatron-LM does not.
      const bool receives_when_reached = parallel.pipeline_p2p_blocking && chunks == 1;
      // The previous slot's end, or the previous step's update.
      std::vector<OpIndex> exchange_after;
      std::optional<OpIndex> previous_send;
      bool previous_forward = false;
      const auto receive = [&](const std::string& what, std::int64_t micro, bool forward,
                               program::StreamId stream, std::int32_t offset,
                               program::GroupFamilyId group) {
        std::vector<OpIndex> posted_after;
        if (receives_when_reached) {
          posted_after = exchange_after;
          if (previous_send && previous_forward == forward) posted_after.push_back(*previous_send);
        }
        const OpIndex received =
            builder.add(fmt::format("pp.recv_{}.{}", what, micro), stream,
                        activation_transfer(false, offset, group, sent_bytes, replica.dtype,
                                            parallel.pipeline_p2p_blocking),
                        std::move(posted_after));
        if (!scatter_gather) return received;
        return builder.add(fmt::format("pp.gather_{}.{}", what, micro), base.streams.tensor_parallel,
                           program::make_collective(program::CollectiveKind::kAllGather, tensor_parallel.group,
                                                    activation_bytes, replica.dtype),
                           {received});
      };
      // A send: with blocking point-to-point the stage's next compute waits for it to complete —
      // in the interleaved schedule's cool-down also when its transfers are overlapped, as
      // Megatron-LM runs it (send_backward_recv_backward without overlap_p2p_comm:
      // megatron/core/pipeline_parallel/schedules.py l. 933–944 at sail-sg 3a91d0c8).
      std::vector<OpIndex> next_step;
      std::optional<OpIndex> last_backward;
      const auto send = [&](const std::string& what, std::int64_t micro, program::StreamId stream,
                            std::int32_t offset, program::GroupFamilyId group, OpIndex after,
                            bool waited) {
        const OpIndex sent =
            builder.add(fmt::format("pp.send_{}.{}", what, micro), stream,
                        activation_transfer(true, offset, group, sent_bytes, replica.dtype,
                                            parallel.pipeline_p2p_blocking),
                        {after});
        if (waited) next_step.push_back(sent);
        return sent;
      };
      const std::int64_t spent_before_steps = budget.spent();
      for (std::int32_t step = 0; step < training.steps; ++step) {
        if (step == 1) budget.forecast_steps(budget.spent() - spent_before_steps, training.steps);
        const std::vector<PipelineSlot> order =
            pipeline_order(parallel.schedule, pp, stage, micro_batches, chunks);
        const auto last_forward = std::find_if(order.rbegin(), order.rend(),
                                               [](const PipelineSlot& s) { return s.forward; });
        const auto cool_down_from = static_cast<std::size_t>(order.rend() - last_forward);
        for (std::size_t i = 0; i < order.size(); ++i) {
          const PipelineSlot& slot = order[i];
          const bool waited =
              parallel.pipeline_p2p_blocking ||
              (parallel.schedule == PipelineSchedule::kInterleaved && i >= cool_down_from);
          chunk_names(slot.chunk);
          DataParallelPolicy& policy = *policies[static_cast<std::size_t>(slot.chunk)];
          const std::int64_t virtual_stage = std::int64_t{slot.chunk} * pp + stage;
          const bool has_previous = virtual_stage > 0, has_next = virtual_stage < virtual_stages - 1;
          std::vector<OpIndex> deps = std::exchange(next_step, {});
          OpIndex last = 0;
          std::optional<OpIndex> sent;
          if (slot.forward) {
            if (has_previous) {
              deps.push_back(receive("activation", slot.micro, true, pipe.recv_previous,
                                     previous_offset, previous_group));
            }
            last = policy.forward(builder, std::move(deps));
            if (has_next)
              sent = send("activation", slot.micro, pipe.send_next, next_offset, next_group, last,
                          waited);
          } else {
            if (has_next) {
              deps.push_back(
                  receive("gradient", slot.micro, false, pipe.recv_next, next_offset, next_group));
            }
            last = policy.backward(builder, std::move(deps), slot.micro == micro_batches - 1);
            last_backward = last;
            if (has_previous)
              sent = send("gradient", slot.micro, pipe.send_previous, previous_offset,
                          previous_group, last, waited);
          }
          exchange_after = {last};
          previous_send = sent;
          previous_forward = slot.forward;
        }
        if (last_backward) {
          // Megatron-LM's order: model chunk 0 first.
          for (std::int32_t chunk = 0; chunk < chunks; ++chunk) {
            chunk_names(chunk);
            policies[static_cast<std::size_t>(chunk)]->sync_gradients(builder, *last_backward);
          }
        }
        std::vector<OpIndex> before_update;
        if (embedding_copy && (stage == 0 || stage == pp - 1) && last_backward) {
          chunk_names(0);
          before_update.push_back(builder.add("embedding.gradients.all_reduce", embedding_stream,
                                              program::make_collective(program::CollectiveKind::kAllReduce, embedding_group,
                                                                       embedding_gradient_bytes, replica.gradient_dtype),
                                              {*last_backward}));
        }
        for (std::int32_t chunk = 0; chunk < chunks; ++chunk) {
          chunk_names(chunk);
          for (const OpIndex op : policies[static_cast<std::size_t>(chunk)]->finish_step(builder, before_update)) {
            next_step.push_back(op);
          }
        }
        exchange_after = next_step;
        previous_send.reset();
      }
      const auto stage_program = std::make_shared<const program::RankProgram>(builder.take());
      for (std::int32_t d = 0; d < dp; ++d) {
        if (replicas.size() > 1 && static_cast<std::size_t>(d % ep) != variant) continue;  // another expert rank's
        for (std::int32_t c = 0; c < cp; ++c) {
          for (std::int32_t t = 0; t < tp; ++t) program.ranks[layout.rank_of({d, t, stage, c})] = stage_program;
        }
      }
    }
  }

  set_step_facts(program.info, input.model, training, dp);
  std::string layout_text =
      fmt::format("{} rank{}", program.world_size, program.world_size == 1 ? "" : "s");
  if (tp > 1 || pp > 1) layout_text = fmt::format("dp {} × tp {}{} × pp {}", dp, tp, tensor_parallel.sequence_parallel ? " (SP)" : "", pp);
  if (cp > 1) layout_text += fmt::format(", cp {} ({})", cp, name_of(parallel.cp_scheme));
  if (ep > 1) layout_text += fmt::format(", ep {} (expert dp {})", ep, dp / ep * cp);
  // The data-parallel flavour, named only when there is data parallelism — over dp × cp: a
  // context-parallel group replicates (and ZeRO or FSDP shards) the parameters too.
  const std::string flavour = replicas_of_parameters > 1 ? strategy_label(input) + " " : "";
  program.info.description =
      fmt::format("{}, {}on {}: micro-batch {} × {} {} × {} replica{}, sequence {}, {} + {}",
                  input.model.name, flavour, layout_text, training.micro_batch, micro_batches,
                  pp == 1              ? "accumulation"
                  : micro_batches == 1 ? "micro-batch"
                                       : "micro-batches",
                  dp, dp == 1 ? "" : "s", training.sequence, name_of(training.precision),
                  name_of(training.optimizer));
  if (pp > 1) {
    const std::string schedule = parallel.schedule == PipelineSchedule::kGPipe ? "GPipe"
                                 : chunks > 1 ? fmt::format("interleaved 1F1B, {} chunks per stage", chunks)
                                              : "1F1B";
    program.info.pipeline = fmt::format("{} stages, {} micro-batch{}, {}", pp, micro_batches,
                                        micro_batches == 1 ? "" : "es", schedule);
    program.info.pipeline_bubble = pipeline_bubble_fraction(pp, micro_batches, chunks);
    program.info.pipeline_chunks = chunks;
  }
  return program;
}

}  // namespace strategies
