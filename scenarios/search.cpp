// `dtsim search`: enumeration, pruning, the closed-form estimate and the ranked result (see
// search.h).
#include "scenarios/search.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <variant>

#include "sim/compute/compute_model.h"
#include "sim/net/comm_planner.h"
#include "strategies/data_parallel.h"
#include "strategies/layout.h"
#include "strategies/program_builder.h"
#include "strategies/training_step.h"
#include "strategies/transformer_ops.h"
#include "topology/cluster.h"

namespace scenarios {
namespace {

using program::CollectiveKind;
using strategies::Checkpointing;
using strategies::ContextParallelScheme;

constexpr double kGB = 1e9;
constexpr double kMiB = 1024.0 * 1024.0;
// The group ids the estimator's blocks name, and the streams its programs use.
constexpr program::GroupFamilyId kTensorGroup = 1, kExpertGroup = 2, kContextGroup = 3;
const std::vector<std::int64_t> kMicroBatches = {1, 2, 4, 8, 16};
const std::vector<std::int32_t> kVirtualStages = {2, 4};
constexpr double kSampleOps = 30e6;  // the largest simulation a sampled layout may need (search.h)

std::vector<std::int32_t> divisors(std::int64_t n) {
  std::vector<std::int32_t> result;
  for (std::int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) result.push_back(static_cast<std::int32_t>(d));
  }
  return result;
}

// The sums of consecutive runs of `values`, `counts[g]` values in run g (a bucketing's or a
// wrapping's groups, in order).
std::vector<double> sums_by_group(const std::vector<double>& values,
                                  const std::vector<std::size_t>& counts) {
  std::vector<double> sums;
  auto next = values.begin();
  for (const std::size_t count : counts) {
    const auto end = next + static_cast<std::ptrdiff_t>(count);
    sums.push_back(std::accumulate(next, end, 0.0));
    next = end;
  }
  return sums;
}

// What one micro-batch of one block costs on rank 0 of its groups.
struct BlockCost {
  double forward_s = 0;
  double backward_s = 0;      // with the recomputation its checkpointing needs
  double compute_s = 0;       // of which compute ops (forward, backward, recompute)
  double slowed_compute_s = 0;  // of which ops that started beside a collective (slowed already)
  double kept_bytes = 0;      // activations held from its forward to its backward
  double transient_bytes = 0; // more, at the peak of its own forward + backward
  double dense_parameters = 0;
  double expert_parameters = 0;
  double ops = 0;             // in its program, forward and backward
  // Autograd's accumulation of its gradients into those of earlier micro-batches
  // (strategies::gradient_accumulation), which DDP and ZeRO run after every op completing one.
  double accumulation_s = 0;
};

enum class BlockKind { kEmbedding, kDense, kMoe, kHead };

// Prices layouts for one scenario; caches block costs and collective prices.
class Estimator {
 public:
  explicit Estimator(const Scenario& base)
      : base_(base),
        cluster_(base.cluster),
        compute_(base.cluster.node.gpu, base.efficiency,
                 topology::host_link_per_gpu(base.cluster.node)),
        planner_(cluster_, base.network),
        routing_(strategies::expert_routing(base.lowering.model)) {}

  LayoutEstimate estimate(const SearchLayout& layout);

 private:
  // The communicator a send runs in: NCCL sizes its CTAs by its ranks and nodes
  // (sim/net/nccl_p2p.h).
  struct Communicator {
    std::int32_t ranks = 2;
    std::int32_t nodes = 0;  // 0: a pair's own, one node or two as its ranks lie
  };
  struct Groups {
    std::vector<std::int32_t> tp, cp, ep, dp, expert_dp, pp;  // pp: rank 0's pipeline, by stage
  };
  Communicator communicator_of(const std::vector<std::int32_t>& members) const;
  Groups groups_of(const SearchLayout& layout) const;
  const BlockCost& block_cost(const SearchLayout& layout, const Groups& groups, BlockKind kind);
  // `userbuffers`: a chunk of tensor-parallel overlap (program::CollectiveOp::userbuffers).
  double collective_s(CollectiveKind kind, double bytes, const std::vector<std::int32_t>& members,
                      const char* family, bool userbuffers = false);
  // A send from `from` to `to` in `communicator` (a group's, batched), or of the two alone
  // (PyTorch's lone isend/irecv: Communicator{}), as the simulator's requests say
  // (program_simulator.cpp).
  double transfer_s(double bytes, std::int32_t from, std::int32_t to, Communicator communicator);
  struct GatherWait {
    double waited_s = 0;       // the forward waits for its buckets
    double first_chunk_s = 0;  // of which in its first chunk (the first micro-batch's passage)
    double beside_s = 0;       // forward compute that runs beside the gathers
  };
  GatherWait overlapped_gather(const SearchLayout& l,
                               const std::vector<std::vector<std::pair<double, double>>>& chunks,
                               double bytes_per_parameter, const std::vector<std::int32_t>& dp,
                               double first_input_s);
  // The expert-parallel rank whose experts receive the most tokens in the first MoE layer.
  std::int32_t hottest_expert_rank(std::int32_t ep) const;

  const Scenario& base_;
  topology::Cluster cluster_;
  sim::ComputeModel compute_;
  sim::CommPlanner planner_;
  strategies::ExpertRouting routing_;
  std::map<std::tuple<std::int32_t, std::int32_t, int, bool, bool, std::int64_t, std::int32_t, bool,
                      int, int>,
           BlockCost>
      blocks_;
  std::map<std::tuple<int, bool, std::int64_t, std::vector<std::int32_t>, std::string>, double>
      prices_;
};

Estimator::Groups Estimator::groups_of(const SearchLayout& l) const {
  const strategies::ParallelLayout layout(l.dp, l.tp, l.pp, l.ep, l.cp);
  Groups groups;
  for (std::int32_t t = 0; t < l.tp; ++t) groups.tp.push_back(layout.rank_of({0, t, 0, 0}));
  for (std::int32_t c = 0; c < l.cp; ++c) groups.cp.push_back(layout.rank_of({0, 0, 0, c}));
  for (std::int32_t e = 0; e < l.ep; ++e) groups.ep.push_back(layout.rank_of({e, 0, 0, 0}));
  for (std::int32_t d = 0; d < l.dp; ++d) {
    for (std::int32_t c = 0; c < l.cp; ++c) {
      groups.dp.push_back(layout.rank_of({d, 0, 0, c}));
      if (d % l.ep == 0) groups.expert_dp.push_back(layout.rank_of({d, 0, 0, c}));
    }
  }
  for (std::int32_t s = 0; s < l.pp; ++s) groups.pp.push_back(layout.rank_of({0, 0, s, 0}));
  return groups;
}

double Estimator::collective_s(CollectiveKind kind, double bytes,
                               const std::vector<std::int32_t>& members, const char* family,
                               bool userbuffers) {
  if (members.size() < 2 || bytes <= 0) return 0;
  const auto key = std::make_tuple(static_cast<int>(kind), userbuffers, std::llround(bytes),
                                   members, std::string(family));
  if (const auto found = prices_.find(key); found != prices_.end()) return found->second;
  sim::CommRequest request;
  request.kind = kind;
  const sim::CollectiveOverride* fixed = base_.collectives.find(kind, family);
  request.algorithm = fixed ? fixed->algorithm : program::Algorithm::kAuto;
  request.bytes = std::llround(bytes);
  request.endpoints = members;
  request.userbuffers = userbuffers;
  const double seconds = planner_.plan(request).seconds();
  prices_.emplace(key, seconds);
  return seconds;
}

Estimator::Communicator Estimator::communicator_of(const std::vector<std::int32_t>& members) const {
  std::set<std::int32_t> nodes;
  for (const std::int32_t member : members) nodes.insert(cluster_.node_of(member));
  return {static_cast<std::int32_t>(members.size()), static_cast<std::int32_t>(nodes.size())};
}

double Estimator::transfer_s(double bytes, std::int32_t from, std::int32_t to,
                             Communicator communicator) {
  if (from == to || bytes <= 0) return 0;
  sim::CommRequest request;
  request.bytes = std::llround(bytes);
  request.endpoints = {from, to};
  request.communicator_ranks = communicator.ranks;
  request.communicator_nodes = communicator.nodes > 0                           ? communicator.nodes
                               : cluster_.node_of(from) == cluster_.node_of(to) ? 1
                                                                                : 2;
  return planner_.plan(request).seconds();
}

std::int32_t Estimator::hottest_expert_rank(std::int32_t ep) const {
  const auto& model = base_.lowering.model;
  if (!model.moe || ep == 1) return 0;
  std::int64_t layer = 0;
  while (!model.is_moe_layer(layer)) ++layer;
  const auto& shares = routing_.shares[static_cast<std::size_t>(layer)];
  const auto local = static_cast<std::size_t>(model.moe->experts / ep);
  const std::vector<double> per_rank =
      sums_by_group(shares, std::vector<std::size_t>(static_cast<std::size_t>(ep), local));
  return static_cast<std::int32_t>(std::max_element(per_rank.begin(), per_rank.end()) -
                                   per_rank.begin());
}

// One micro-batch of one block, emitted by the lowering's own emit_forward/emit_backward and
// timed by the longest path through its ops: each op starts when its dependencies and its
// stream are done, computes for the ComputeModel's time or communicates for the CommPlanner's
// contention-free price.
const BlockCost& Estimator::block_cost(const SearchLayout& l, const Groups& groups, BlockKind kind) {
  const auto key = std::make_tuple(l.tp, l.cp, static_cast<int>(l.cp_scheme), l.sequence_parallel,
                                   l.options.tp_comm_overlap, l.micro_batch, l.ep,
                                   l.options.moe_shared_expert_overlap,
                                   static_cast<int>(l.recompute), static_cast<int>(kind));
  if (const auto found = blocks_.find(key); found != blocks_.end()) return found->second;
  const strategies::ModelSpec& model = base_.lowering.model;
  const strategies::TrainingSpec& training = base_.lowering.training;
  strategies::BlockShape shape;
  shape.micro_batch = l.micro_batch;
  shape.sequence = training.sequence / l.cp;
  shape.dtype = strategies::compute_dtype(training.precision);
  shape.tp = {l.tp, l.sequence_parallel && l.tp > 1, base_.lowering.parallel.sp_regather,
              kTensorGroup, l.options.tp_comm_overlap};
  shape.fp8_linear = training.precision == strategies::Precision::kFP8;
  shape.ep = {l.ep, hottest_expert_rank(l.ep), kExpertGroup, &routing_,
              l.options.moe_shared_expert_overlap};
  shape.cp = {l.cp, l.cp_scheme, kContextGroup};
  std::int64_t moe_layer = 0;
  while (model.moe && !model.is_moe_layer(moe_layer)) ++moe_layer;
  const strategies::Block block = kind == BlockKind::kEmbedding ? strategies::embedding_block(model, shape)
                                  : kind == BlockKind::kHead   ? strategies::head_block(model, shape)
                                                               : strategies::transformer_layer_block(
                                                                     model, shape, kind == BlockKind::kMoe ? moe_layer : 0);
  strategies::OpBudget budget;
  strategies::RankProgramBuilder builder(budget);
  strategies::Streams streams;
  streams.compute = 0;
  streams.tensor_parallel = 1;
  streams.group_streams = {{kExpertGroup, 2}, {kContextGroup, 3}};
  streams.transfer_send = 4;
  streams.transfer_receive = 5;
  const std::vector<const strategies::Block*> blocks = {&block};
  const program::OpIndex last_forward = strategies::emit_forward(builder, blocks, streams, l.recompute, {});
  BlockCost cost;
  const program::DType gradient_dtype = strategies::gradient_dtype(training.precision);
  const double scale = strategies::parameter_scale(model);
  std::vector<std::pair<program::OpIndex, double>> accumulations;  // after which op, how long
  strategies::emit_backward(
      builder, blocks, streams, l.recompute, {last_forward},
      [&](const strategies::Block& of, const strategies::BackwardStep& step,
          program::OpIndex after) {
        accumulations.emplace_back(
            after, compute_.seconds(strategies::gradient_accumulation(
                       static_cast<double>(of.gradient_elements(step)) * scale, gradient_dtype)));
        return std::optional<program::OpIndex>();  // priced beside the program (below)
      });
  const program::RankProgram ops = builder.take();

  // Memory in program order, each allocation and release where the lowering emits it.
  double memory = 0, peak = 0;
  for (std::size_t i = 0; i < ops.ops.size(); ++i) {
    if (const auto* allocation = std::get_if<program::MemoryOp>(&ops.ops[i].body)) {
      memory += allocation->allocate ? static_cast<double>(allocation->bytes)
                                     : -static_cast<double>(allocation->bytes);
      peak = std::max(peak, memory);
    }
    if (i == last_forward) cost.kept_bytes = memory;
  }
  // Times as the simulator runs one rank alone: the ops in the order they start, each once its
  // dependencies and its stream are done — at one instant communication before compute — and
  // compute that starts beside a collective slowed by compute.overlap_slowdown (NCCL's kernels
  // take SMs; program_simulator.cpp, try_start() and start()).
  std::map<program::StreamId, std::vector<std::size_t>> queues;  // each stream's ops, in order
  for (std::size_t i = 0; i < ops.ops.size(); ++i) queues[ops.ops[i].stream].push_back(i);
  std::map<program::StreamId, std::size_t> cursor;
  std::map<program::StreamId, double> stream_free;
  std::vector<double> end(ops.ops.size(), 0);
  std::vector<bool> done(ops.ops.size(), false);
  std::vector<std::pair<double, double>> collectives;  // [start, end) of each
  // Whether a collective runs at `start`; `after_its_start`: not one issued at that instant
  // (an accumulation's add, which the collective issued after it waits for).
  const auto beside_collective = [&collectives](double start, bool after_its_start = false) {
    return std::any_of(collectives.begin(), collectives.end(), [&](const auto& running) {
      return (after_its_start ? running.first < start : running.first <= start) &&
             start < running.second;
    });
  };
  const double slowed = 1 + base_.efficiency.overlap_slowdown;
  std::map<std::int64_t, double> ring_step_s;  // by the bytes each rank passes
  for (std::size_t scheduled = 0; scheduled < ops.ops.size(); ++scheduled) {
    std::optional<std::tuple<double, bool, std::size_t>> first;  // start, compute, op
    for (const auto& [stream, queue] : queues) {
      if (cursor[stream] == queue.size()) continue;
      const std::size_t i = queue[cursor[stream]];
      const program::Op& op = ops.ops[i];
      if (!std::all_of(op.deps.begin(), op.deps.end(),
                       [&](program::OpIndex dep) { return done[dep]; }))
        continue;
      double start = stream_free[stream];
      for (const program::OpIndex dep : op.deps) start = std::max(start, end[dep]);
      const auto candidate =
          std::make_tuple(start, std::holds_alternative<program::ComputeOp>(op.body), i);
      if (!first || candidate < *first) first = candidate;
    }
    if (!first) throw std::logic_error("search: a block program whose ops wait for each other");
    const auto [start, is_compute, i] = *first;
    const program::Op& op = ops.ops[i];
    double duration = 0;
    if (const auto* compute = std::get_if<program::ComputeOp>(&op.body)) {
      const bool beside = beside_collective(start);
      duration = compute_.seconds(*compute) * (beside ? slowed : 1.0);
      cost.compute_s += duration;
      if (beside) cost.slowed_compute_s += duration;
    } else if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
      const auto& members = collective->group == kTensorGroup ? groups.tp : collective->group == kExpertGroup ? groups.ep : groups.cp;
      const char* family = collective->group == kTensorGroup ? "tp" : collective->group == kExpertGroup ? "ep" : "cp";
      duration = collective_s(collective->kind, static_cast<double>(collective->bytes), members,
                              family, collective->userbuffers);
      if (duration > 0) collectives.emplace_back(start, start + duration);
    } else if (const auto* transfer = std::get_if<program::SendRecvOp>(&op.body)) {
      // A ring-attention step: every context-parallel rank passes a block to the next, and the
      // step is over when the slowest hop has delivered (one that leaves the node, if any). Every
      // step of a direction passes the same bytes: priced once per block (the ring may have 1,024
      // hops and 2,000 steps).
      auto [step, priced_now] = ring_step_s.try_emplace(transfer->bytes, 0.0);
      if (priced_now) {
        const Communicator ring = communicator_of(groups.cp);
        for (std::size_t c = 0; c < groups.cp.size(); ++c) {
          step->second =
              std::max(step->second, transfer_s(static_cast<double>(transfer->bytes), groups.cp[c],
                                                groups.cp[(c + 1) % groups.cp.size()], ring));
        }
      }
      duration = step->second;
    }
    end[i] = start + duration;
    done[i] = true;
    stream_free[op.stream] = end[i];
    ++cursor[op.stream];
  }
  // The accumulations run right after their ops, on the compute stream (outside the block's
  // program: the lowering adds them for every micro-batch but the first), beside a collective
  // already running then — not the one issued after them, which waits for them.
  for (const auto& [after, seconds] : accumulations) {
    const bool beside = beside_collective(end[after], /*after_its_start=*/true);
    cost.accumulation_s += seconds * (beside ? slowed : 1.0);
  }
  const double forward_end = end[last_forward];
  const double finish = *std::max_element(end.begin(), end.end());
  cost.forward_s = forward_end;
  cost.backward_s = finish - forward_end;
  cost.transient_bytes = std::max(0.0, peak - cost.kept_bytes);
  cost.ops = static_cast<double>(ops.ops.size());
  for (const strategies::ParamTensor& param : block.params) {
    (param.expert ? cost.expert_parameters : cost.dense_parameters) += static_cast<double>(param.elements) * scale;
  }
  return blocks_.emplace(key, cost).first->second;
}

// Megatron's overlapped parameter gather on one pipeline stage, as the lowering's
// forward_gathering runs it: each chunk's buckets (strategies::megatron_parameter_buckets)
// gathered one after another on one stream from the optimizer step, bucket k + 1's once the
// forward reaches bucket k, the forward waiting at each bucket for its gather; the forward starts
// when the stage's first input arrives and reaches chunk c after p micro-batches of each earlier
// chunk (the interleaved warm-up).
Estimator::GatherWait Estimator::overlapped_gather(
    const SearchLayout& l, const std::vector<std::vector<std::pair<double, double>>>& chunks,
    double bytes_per_parameter, const std::vector<std::int32_t>& dp, double first_input_s) {
  // The gather stream's and the forward's clocks, and the forward's waits.
  double gathered = 0, forward = first_input_s, waited = 0, first_chunk_waited = 0;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    std::vector<double> parameters, forward_s;
    for (const auto& [seconds, elements] : chunks[c]) {
      forward_s.push_back(seconds);
      parameters.push_back(elements);
    }
    const auto gather = [&](double elements) {
      return collective_s(CollectiveKind::kAllGather, elements * bytes_per_parameter, dp, "dp");
    };
    const std::vector<std::size_t> buckets =
        strategies::megatron_parameter_buckets(parameters, static_cast<std::int32_t>(dp.size()));
    if (buckets.empty()) continue;
    const std::vector<double> bucket_elements = sums_by_group(parameters, buckets);
    const std::vector<double> bucket_forward_s = sums_by_group(forward_s, buckets);
    const double chunk_forward_s = std::accumulate(forward_s.begin(), forward_s.end(), 0.0);
    // Buckets 0 and 1 are issued with the optimizer step, bucket k + 1 once the forward reaches
    // bucket k; each gathers after the one before it on the stream.
    gathered += gather(bucket_elements.front());
    for (std::size_t k = 0; k < buckets.size(); ++k) {
      const double bucket_ready = gathered;
      if (bucket_ready > forward) {
        waited += bucket_ready - forward;
        forward = bucket_ready;
      }
      if (k + 1 < buckets.size())
        gathered = std::max(gathered, k == 0 ? 0.0 : forward) + gather(bucket_elements[k + 1]);
      forward += bucket_forward_s[k];
    }
    if (c == 0) first_chunk_waited = waited;
    if (c + 1 < chunks.size())
      forward += (l.pp - 1) * chunk_forward_s;  // the chunk's other warm-up micro-batches
  }
  return {waited, first_chunk_waited,
          std::max(0.0, std::min(gathered, forward) - first_input_s - waited)};
}

LayoutEstimate Estimator::estimate(const SearchLayout& l) {
  const strategies::ModelSpec& model = base_.lowering.model;
  const strategies::TrainingSpec& training = base_.lowering.training;
  const Groups groups = groups_of(l);
  // Each pipeline rank's blocks per micro-batch (its chunks together), as the lowering splits them.
  const std::int32_t virtual_stages = l.pp * l.virtual_stages;
  struct Stage {
    double time_s = 0, compute_s = 0, slowed_compute_s = 0, kept_bytes = 0, transient_bytes = 0,
           dense = 0, expert = 0, ops = 0, accumulation_s = 0;
    double head_kept_bytes = 0;  // the output layer's: its backward follows its forward at once
    // Per chunk, its blocks' forward time and parameters, in forward order.
    std::vector<std::vector<std::pair<double, double>>> chunks;
  };
  std::vector<Stage> stages(static_cast<std::size_t>(l.pp));
  const auto add = [&](Stage& stage, const BlockCost& block) {
    stage.time_s += block.forward_s + block.backward_s;
    stage.compute_s += block.compute_s;
    stage.slowed_compute_s += block.slowed_compute_s;
    stage.kept_bytes += block.kept_bytes;
    stage.transient_bytes = std::max(stage.transient_bytes, block.transient_bytes);
    stage.dense += block.dense_parameters;
    stage.expert += block.expert_parameters;
    stage.ops += block.ops;
    stage.accumulation_s += block.accumulation_s;
  };
  for (std::int32_t v = 0; v < virtual_stages; ++v) {
    Stage& stage = stages[static_cast<std::size_t>(v % l.pp)];
    auto& chunk = stage.chunks.emplace_back();
    const auto take = [&](const BlockCost& block) {
      add(stage, block);
      chunk.emplace_back(block.forward_s, block.dense_parameters + block.expert_parameters);
    };
    if (v == 0) take(block_cost(l, groups, BlockKind::kEmbedding));
    const strategies::LayerRange held =
        strategies::pipeline_chunk_layers(model.layers, v, virtual_stages, base_.lowering.parallel);
    for (std::int64_t layer = held.begin; layer < held.end; ++layer) {
      take(block_cost(l, groups, model.is_moe_layer(layer) ? BlockKind::kMoe : BlockKind::kDense));
    }
    if (v == virtual_stages - 1) {
      const BlockCost& head = block_cost(l, groups, BlockKind::kHead);
      take(head);
      stage.head_kept_bytes = head.kept_bytes;
    }
  }
  // DDP and ZeRO add every micro-batch's gradients but the first's to those held (FSDP
  // reduce-scatters each micro-batch's), unless fused into the weight-gradient GEMM.
  const double m = static_cast<double>(l.accumulation);
  if (l.flavour != "fsdp" && !base_.lowering.ddp.gradient_accumulation_fusion) {
    for (Stage& stage : stages) {
      const double accumulating = stage.accumulation_s * (m - 1) / m;
      stage.time_s += accumulating;
      stage.compute_s += accumulating;
    }
  }

  // FSDP (never with a pipeline: one stage) gathers and reduce-scatters unit by unit, as
  // ShardedPolicy wraps them — the root (embedding and output layer) and the layers, grouped up to
  // fsdp.min_num_params — each its own collective, so that a ring over a thousand ranks pays its
  // latency per unit, not once per stage; and prepares each unit's gradient first, on the
  // compute stream (fsdp_gradient_passes).
  const strategies::ModelStateBytes state = strategies::model_state_bytes(training);
  double fsdp_comm_per_micro_batch = 0, fsdp_units = 0, largest_fsdp_unit = 0;
  // FSDP's memory beyond its shards (elements, and bytes per element): see the peak below.
  double root_fsdp_unit = 0, gathered_at_backward = 0, last_fsdp_unit_kept_bytes = 0,
         layer_transient_bytes = 0;
  double gathered_bytes = 0, cast_bytes = 0;
  if (l.flavour == "fsdp") {
    const strategies::FsdpSpec& fsdp = base_.lowering.fsdp;
    const program::DType param_dtype =
        fsdp.param_dtype.value_or(strategies::compute_dtype(training.precision));
    const program::DType reduce_dtype = fsdp.reduce_dtype.value_or(param_dtype);
    const auto shards = static_cast<std::int32_t>(groups.dp.size());
    // Gathered before its forward, and again before its backward when freed after the forward
    // (FULL_SHARD, the sharding the layouts pin, with reshard_after_forward); the root stays.
    const double layer_gathers = fsdp.reshard_after_forward ? 2 : 1;
    double passes_s = 0;
    const auto unit = [&](double parameters, double gathers) {
      const auto bytes = [&](program::DType dtype) {
        return parameters * static_cast<double>(program::dtype_bytes(dtype));
      };
      fsdp_comm_per_micro_batch +=
          gathers * collective_s(CollectiveKind::kAllGather, bytes(param_dtype), groups.dp, "dp") +
          collective_s(CollectiveKind::kReduceScatter, bytes(reduce_dtype), groups.dp, "dp");
      for (const auto& pass :
           strategies::fsdp_gradient_passes(parameters, param_dtype, reduce_dtype, shards)) {
        passes_s += compute_.seconds(pass.op);
      }
      fsdp_units += 1;
    };
    const auto parameters = [](const BlockCost& block) {
      return block.dense_parameters + block.expert_parameters;
    };
    root_fsdp_unit = parameters(block_cost(l, groups, BlockKind::kEmbedding)) +
                     parameters(block_cost(l, groups, BlockKind::kHead));
    unit(root_fsdp_unit, 1);
    std::vector<double> layer_parameters, layer_kept_bytes;
    for (std::int64_t layer = 0; layer < model.layers; ++layer) {
      const BlockCost& block =
          block_cost(l, groups, model.is_moe_layer(layer) ? BlockKind::kMoe : BlockKind::kDense);
      layer_parameters.push_back(parameters(block));
      layer_kept_bytes.push_back(block.kept_bytes);
      layer_transient_bytes = std::max(layer_transient_bytes, block.transient_bytes);
    }
    const std::vector<std::size_t> layer_units =
        strategies::fsdp_layer_units(layer_parameters, fsdp.min_num_params);
    for (const double held : sums_by_group(layer_parameters, layer_units)) {
      unit(held, layer_gathers);
      largest_fsdp_unit = std::max(largest_fsdp_unit, held);
    }
    // Gathered parameters and unsharded gradients are in param_dtype; a reduce_dtype of its own
    // adds the cast copy of each gradient held. Without reshard_after_forward
    // every layer unit stays gathered from its forward until its reduce-scatter.
    gathered_bytes = static_cast<double>(program::dtype_bytes(param_dtype));
    cast_bytes =
        reduce_dtype == param_dtype ? 0 : static_cast<double>(program::dtype_bytes(reduce_dtype));
    // As the backward begins, BACKWARD_PRE has the last unit gathered (the head's pre-backward
    // hook) and the one before it (the last unit's, issued while the head's backward runs).
    const double prefetched_units =
        fsdp.backward_prefetch == strategies::BackwardPrefetch::kBackwardPre &&
                layer_units.size() > 1
            ? 2
            : 1;
    gathered_at_backward =
        fsdp.reshard_after_forward
            ? prefetched_units * largest_fsdp_unit
            : std::accumulate(layer_parameters.begin(), layer_parameters.end(), 0.0);
    last_fsdp_unit_kept_bytes = sums_by_group(layer_kept_bytes, layer_units).back();
    // The gathers and reduce-scatters run beside the compute almost throughout, and compute that
    // starts beside a collective runs compute.overlap_slowdown longer (the simulator's rule): on
    // the share of the compute they span.
    Stage& stage = stages.front();
    // (Compute slowed beside the blocks' own collectives already is not slowed twice.)
    const double compute_s = stage.compute_s + passes_s;
    const double slowed = (compute_s - stage.slowed_compute_s) * base_.efficiency.overlap_slowdown *
                          std::min(1.0, fsdp_comm_per_micro_batch / compute_s);
    stage.time_s += passes_s + slowed;
    stage.compute_s = compute_s + slowed;
  }

  // Blocking sends of the activation forward and the gradient back, per chunk and micro-batch.
  const double element_bytes = static_cast<double>(program::dtype_bytes(strategies::compute_dtype(training.precision)));
  const double activation = static_cast<double>(l.micro_batch * training.sequence / l.cp / (l.sequence_parallel ? l.tp : 1) *
                                                model.hidden) * element_bytes;
  // With scatter/gather each tensor-parallel rank sends 1/t of it, and the receiver all-gathers.
  // Blocking sends are batched in the pipeline group's communicator, the others run in the pair's
  // (strategies/parallel_training.cpp, activation_transfer).
  const Communicator communicator = base_.lowering.parallel.pipeline_p2p_blocking && l.pp > 1
                                        ? communicator_of(groups.pp)
                                        : Communicator{};
  const std::int32_t next_stage = l.pp > 1 ? groups.pp[1] : 0;
  const double arrival_s =
      l.options.pipeline_scatter_gather
          ? transfer_s(activation / l.tp, 0, next_stage, communicator) +
                collective_s(CollectiveKind::kAllGather, activation, groups.tp, "tp")
          : transfer_s(activation, 0, next_stage, communicator);
  const double p2p = l.pp > 1 ? 2 * l.virtual_stages * arrival_s : 0;
  const auto slowest = std::max_element(stages.begin(), stages.end(),
                                        [](const Stage& a, const Stage& b) { return a.time_s < b.time_s; });
  const double slot = slowest->time_s + p2p;
  // The pipeline fills and drains through every other stage once (1F1B: m slots of the slowest
  // stage, and the other stages' forward and backward once each; interleaving divides the
  // fill by v).
  double others = -slowest->time_s - p2p;
  for (const Stage& stage : stages) others += stage.time_s + p2p;
  const double bubble = l.pp > 1 ? others / l.virtual_stages : 0;

  // Data parallelism: gradients over dp × cp ranks (experts' over their expert-data-parallel
  // group), bucketed behind the last micro-batch's backward; ZeRO-1/2 gather the updated
  // parameters after the step; FSDP gathers every layer twice and reduce-scatters it per
  // micro-batch, beside the compute.
  const double gradient_bytes = static_cast<double>(program::dtype_bytes(strategies::gradient_dtype(training.precision)));
  const double dense = slowest->dense, expert = slowest->expert;
  const auto dp_ranks = static_cast<double>(groups.dp.size()), expert_ranks = static_cast<double>(groups.expert_dp.size());
  const bool zero = l.flavour != "ddp";
  const CollectiveKind reduction = zero ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  double data_parallel_s = 0;
  double slowed_beside_s = 0;  // what the data-parallel collectives add to the compute beside them
  if (l.flavour == "fsdp") {
    // On their own stream beside each micro-batch's whole slot (its compute, and the tensor- and
    // context-parallel collectives the compute waits for), but for the last unit's.
    data_parallel_s = m * std::max(0.0, fsdp_comm_per_micro_batch - slot) +
                      fsdp_comm_per_micro_batch / fsdp_units;
  } else {
    const double gradients = collective_s(reduction, dense * gradient_bytes, groups.dp, "dp") +
                             collective_s(reduction, expert * gradient_bytes, groups.expert_dp, "expert_dp");
    const double buckets = std::max(1.0, (dense + expert) * gradient_bytes / (base_.lowering.ddp.bucket_cap_mb * kMiB));
    const double backward = slowest->time_s / 2;  // the last micro-batch's backward, about half its slot
    // Compute beside a collective runs compute.overlap_slowdown longer (the simulator's rule),
    // once: not the share already slowed beside the blocks' own collectives.
    const double unslowed_share = 1 - slowest->slowed_compute_s / slowest->compute_s;
    const auto slowed = [&](double beside_s) {
      return beside_s * unslowed_share * base_.efficiency.overlap_slowdown;
    };
    if (base_.lowering.ddp.overlap_grad_reduce) {
      // Each bucket is reduced once it fills: all but the last beside that backward, whose slowdown
      // delays the last bucket, unless the links set the pace.
      const double last_bucket = gradients / buckets;
      slowed_beside_s = slowed(std::min(gradients - last_bucket, backward));
      data_parallel_s = std::max(gradients - backward, last_bucket + slowed_beside_s);
    } else {
      data_parallel_s = gradients;  // one bucket after the backward
    }
    // DDP without ddp.no_sync reduces after every micro-batch's backward, and the next forward
    // waits for it (DDP's finalize_backward); ZeRO reduces the last micro-batch's only.
    if (!zero && !base_.lowering.ddp.no_sync) {
      slowed_beside_s *= m;
      data_parallel_s *= m;
    }
    if (zero && l.options.overlap_param_gather) {
      // Each stage's first input arrives after the earlier stages' first forward and sends, later
      // by what they waited in their first chunk; the step pays the most any stage accumulates
      // (the first chunk's waits along the chain, then its own), and the slowdown of the first
      // stage's forward beside its gathers (compute.overlap_slowdown).
      double first_input = 0, delay = 0, paid = 0;
      for (std::size_t s = 0; s < stages.size(); ++s) {
        const GatherWait wait = overlapped_gather(l, stages[s].chunks, state.parameters, groups.dp,
                                                  first_input + delay);
        paid = std::max(paid, delay + wait.waited_s);
        delay += wait.first_chunk_s;
        if (s == 0) {
          data_parallel_s += slowed(wait.beside_s);
          slowed_beside_s += slowed(wait.beside_s);
        }
        for (const auto& [seconds, elements] : stages[s].chunks.front()) first_input += seconds;
        first_input += p2p / (2 * l.virtual_stages);  // one send
      }
      data_parallel_s += paid;
    } else if (zero) {
      data_parallel_s += collective_s(CollectiveKind::kAllGather, dense * state.parameters, groups.dp, "dp") +
                         collective_s(CollectiveKind::kAllGather, expert * state.parameters, groups.expert_dp, "expert_dp");
    }
  }
  // DDP updates every parameter on every rank; ZeRO and FSDP each rank's shard.
  const auto shard = [&](double ranks) { return l.flavour == "ddp" ? 1.0 : 1.0 / ranks; };
  const double updated = dense * shard(dp_ranks) + expert * shard(expert_ranks);
  const double optimizer_s =
      compute_.seconds(strategies::optimizer_update(updated, state, strategies::compute_dtype(training.precision),
                                                    training));

  LayoutEstimate estimate;
  estimate.compute_s = m * slowest->compute_s + slowed_beside_s + optimizer_s;
  estimate.bubble_s = bubble;
  estimate.step_s = m * slot + bubble + data_parallel_s + optimizer_s;
  estimate.exposed_comm_s = std::max(0.0, estimate.step_s - estimate.compute_s - bubble);

  // Memory per pipeline rank, the largest: model states (the ZeRO paper's accounting per
  // flavour), the activations of the micro-batches it holds at once — 1F1B: pp − s on rank s;
  // interleaved: Megatron's warm-up of 2(p − s − 1) + (v − 1)p chunks plus one; no pipeline: 1;
  // the last chunk, with the output layer, holds one: its backward follows its forward — and the
  // largest block's transient.
  const auto states = [&](double parameters, double ranks) {
    if (l.flavour != "fsdp") {  // DDP, or ZeRO as DeepSpeed shards (the layout's overrides pin it)
      const std::int32_t stage = l.flavour == "zero1" ? 1 : l.flavour == "zero2" ? 2 : 0;
      const double buckets = stage > 0 || base_.lowering.ddp.gradient_as_bucket_view || ranks == 1 ? 0 : state.gradients;
      return parameters * (strategies::kept_bytes_per_parameter(
                               state, strategies::zero_shares(stage, true, static_cast<std::int32_t>(ranks))) +
                           buckets);
    }
    // FSDP: shards of everything, on the host with cpu_offload.
    return base_.lowering.fsdp.cpu_offload ? 0.0 : parameters * state.total() / ranks;
  };
  for (std::int32_t s = 0; s < l.pp; ++s) {
    const Stage& stage = stages[static_cast<std::size_t>(s)];
    const double v = l.virtual_stages;
    const double in_flight = l.pp == 1          ? 1
                             : l.virtual_stages > 1 ? std::min(m * v, 2.0 * (l.pp - s - 1) + (v - 1) * l.pp + 1) / v
                                                    : std::min(m, static_cast<double>(l.pp - s));
    double held = in_flight * (stage.kept_bytes - stage.head_kept_bytes) + stage.head_kept_bytes +
                  stage.transient_bytes;
    if (l.flavour == "fsdp") {
      // FSDP (never pipelined) also holds gathered parameters and unsharded gradients: the root
      // unit's (embedding and head) from its forward to the end of the backward, and the largest
      // layer unit's (all of them without reshard_after_forward). It peaks either as the backward
      // begins — every activation and the largest transient, the last units' parameters
      // prefetched — or in the backward of the unit before the last: two units' parameters and
      // gradients held, the head's and the last unit's activations freed.
      const double layer_gradients = 2 * largest_fsdp_unit * (gathered_bytes + cast_bytes);
      const double layer_parameter_bytes =
          std::max(gathered_at_backward, 2 * largest_fsdp_unit) * gathered_bytes;
      held = root_fsdp_unit * 2 * gathered_bytes +
             std::max(held + gathered_at_backward * gathered_bytes,
                      stage.kept_bytes - stage.head_kept_bytes - last_fsdp_unit_kept_bytes +
                          layer_transient_bytes + layer_parameter_bytes + layer_gradients);
    }
    estimate.memory_bytes =
        std::max(estimate.memory_bytes,
                 states(stage.dense, dp_ranks) + states(stage.expert, expert_ranks) + held);
  }
  for (const Stage& stage : stages) estimate.simulated_ops += m * stage.ops * static_cast<double>(l.dp * l.cp * l.tp);
  return estimate;
}

// The candidates the rules allow, in a fixed order.
std::vector<SearchLayout> enumerate(const Scenario& base) {
  const strategies::ModelSpec& model = base.lowering.model;
  const strategies::TrainingSpec& training = base.lowering.training;
  const auto gpus = static_cast<std::int32_t>(base.cluster.gpu_count());
  const std::int32_t per_node = base.cluster.node.gpus;
  std::vector<SearchLayout> layouts;
  const auto allowed = [&](std::int32_t tp) {
    const bool widths = model.ffn_hidden % tp == 0 &&
                        (!model.moe || (model.moe->expert_ffn_hidden % tp == 0 && model.moe->shared_width() % tp == 0));
    return tp <= per_node && model.heads % tp == 0 && model.kv_heads % tp == 0 && widths;
  };
  const std::vector<std::string> flavours = {"ddp", "zero1", "zero2", "fsdp"};
  // Selective recompute drops the attention scores, which a fused attention kernel never keeps:
  // with FlashAttention it is no recompute at all.
  std::vector<Checkpointing> recompute_policies = {Checkpointing::kNone, Checkpointing::kFull};
  if (model.attention == strategies::AttentionKind::kStandard) recompute_policies.push_back(Checkpointing::kSelective);
  for (const std::int32_t tp : divisors(gpus)) {
    if (!allowed(tp)) continue;
    for (const std::int32_t cp : divisors(gpus / tp)) {
      for (const auto scheme : {ContextParallelScheme::kRing, ContextParallelScheme::kUlysses,
                                ContextParallelScheme::kAllGather}) {
        if (cp == 1 && scheme != ContextParallelScheme::kRing) continue;
        const bool ulysses = scheme == ContextParallelScheme::kUlysses;
        const std::int64_t kv_heads = model.mla ? model.heads : model.kv_heads;
        if (cp > 1 && model.attention != strategies::AttentionKind::kFlash) continue;  // CP needs a fused kernel
        if ((cp > 1 && training.sequence % (ulysses ? cp : 2 * cp) != 0) ||
            (ulysses && ((model.heads / tp) % cp != 0 || (kv_heads / tp) % cp != 0))) {
          continue;
        }
        for (const std::int32_t pp : divisors(gpus / (tp * cp))) {
          if (pp > model.layers) break;
          const std::int32_t dp = gpus / (tp * cp * pp);
          for (const std::int32_t ep : model.moe ? divisors(dp) : std::vector<std::int32_t>{1}) {
            if (model.moe && model.moe->experts % ep != 0) continue;
            for (const bool sp : {false, true}) {
              if (sp && tp == 1) continue;
              if (model.moe && tp > 1 && !sp) continue;  // Megatron-Core requires SP for MoE with TP
              if (sp && training.sequence / cp % tp != 0) continue;
              for (const std::int64_t micro : kMicroBatches) {
                if (training.global_batch % (micro * dp) != 0) continue;
                const std::int64_t accumulation = training.global_batch / (micro * dp);
                if (pp > 1 && accumulation < pp) continue;
                std::vector<std::int32_t> chunks = {1};
                if (pp > 1 && accumulation % pp == 0) {
                  for (const std::int32_t v : kVirtualStages) {
                    if (pp * v <=
                        strategies::pipeline_split_places(model.layers, base.lowering.parallel)) {
                      chunks.push_back(v);
                    }
                  }
                }
                for (const std::int32_t v : chunks) {
                  for (const auto recompute : recompute_policies) {
                    for (const std::string& flavour : flavours) {
                      // ZeRO-2 and FSDP shard per micro-batch: not with a pipeline; FSDP not with experts.
                      if ((flavour == "zero2" || flavour == "fsdp") && pp > 1) continue;
                      if (flavour == "fsdp" && ep > 1) continue;
                      if (flavour != "ddp" && dp * cp == 1) continue;
                      layouts.push_back({tp, pp, dp, cp, ep, v, sp, scheme, micro, accumulation,
                                         recompute, flavour,
                                         LayoutOptions::wanted_in(base, flavour, tp, pp, ep, sp)});
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return layouts;
}

// Spearman's rank correlation of two equally long series (average ranks for ties).
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const auto ranks = [](const std::vector<double>& values) {
    std::vector<std::size_t> order(values.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return values[x] < values[y]; });
    std::vector<double> rank(values.size());
    for (std::size_t i = 0; i < order.size();) {
      std::size_t j = i;
      while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
      for (std::size_t k = i; k <= j; ++k) rank[order[k]] = static_cast<double>(i + j) / 2;
      i = j + 1;
    }
    return rank;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double mean = (n - 1) / 2;
  double covariance = 0, va = 0, vb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    covariance += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  return va > 0 && vb > 0 ? covariance / std::sqrt(va * vb) : 0;
}

double cost_per_million_tokens(const SearchResult& result, double step_s) {
  return *result.gpu_hour_price * result.gpus * step_s / 3600 / result.tokens_per_step * 1e6;
}

std::string checkpointing_name(Checkpointing recompute) { return std::string(strategies::name_of(recompute)); }

}  // namespace

LayoutOptions LayoutOptions::wanted_in(const Scenario& base, const std::string& flavour,
                                       std::int32_t tp, std::int32_t pp, std::int32_t ep,
                                       bool sequence_parallel) {
  const strategies::ModelSpec& model = base.lowering.model;
  const strategies::ParallelSpec& written = base.written_parallel;
  const bool zero = flavour == "zero1" || flavour == "zero2";
  LayoutOptions options;
  options.tp_comm_overlap = written.tp_comm_overlap && sequence_parallel && !model.moe;
  options.overlap_param_gather = base.lowering.zero.overlap_param_gather && zero && ep == 1;
  options.pipeline_scatter_gather =
      written.pipeline_scatter_gather && pp > 1 && tp > 1 && !sequence_parallel;
  options.moe_shared_expert_overlap =
      written.moe_shared_expert_overlap && model.moe && model.moe->shared_width() > 0 && ep > 1;
  return options;
}

std::vector<std::string> LayoutOptions::overrides() const {
  return {fmt::format("parallel.tp_comm_overlap={}", tp_comm_overlap),
          fmt::format("zero.overlap_param_gather={}", overlap_param_gather),
          fmt::format("parallel.pipeline_scatter_gather={}", pipeline_scatter_gather),
          fmt::format("parallel.moe_shared_expert_overlap={}", moe_shared_expert_overlap)};
}

std::string SearchLayout::label() const {
  const std::string name = flavour == "zero1" ? "ZeRO-1" : flavour == "zero2" ? "ZeRO-2" : flavour == "fsdp" ? "FSDP" : "DDP";
  std::string text = fmt::format("{} dp {}", name, dp);
  if (tp > 1)
    text += fmt::format(" tp {}{}{}", tp, sequence_parallel ? "+SP" : "",
                        options.tp_comm_overlap ? "+overlap" : "");
  if (pp > 1)
    text +=
        fmt::format(" pp {}{}{}", pp, virtual_stages > 1 ? fmt::format("×{}", virtual_stages) : "",
                    options.pipeline_scatter_gather ? "+s/g" : "");
  if (cp > 1) {
    text += fmt::format(" cp {}{}", cp,
                        cp_scheme == ContextParallelScheme::kRing
                            ? ""
                            : " " + std::string(strategies::name_of(cp_scheme)));
  }
  if (ep > 1)
    text += fmt::format(" ep {}{}", ep, options.moe_shared_expert_overlap ? "+overlap" : "");
  text += fmt::format(", mb {}", micro_batch);
  if (recompute != Checkpointing::kNone) text += ", " + checkpointing_name(recompute) + " recompute";
  return text;
}

std::vector<std::string> SearchLayout::overrides() const {
  std::vector<std::string> keys = {
      fmt::format("parallel.strategy=\"{}\"", flavour == "ddp"    ? "ddp"
                                              : flavour == "fsdp" ? "fsdp"
                                                                  : "zero"),
      fmt::format("parallel.dp={}", dp),
      fmt::format("parallel.tp={}", tp),
      fmt::format("parallel.pp={}", pp),
      fmt::format("parallel.cp={}", cp),
      fmt::format("parallel.ep={}", ep),
      fmt::format("parallel.sequence_parallel={}", sequence_parallel),
      fmt::format("parallel.pipeline_schedule=\"{}\"",
                  virtual_stages > 1 ? "interleaved-1f1b" : "1f1b"),
      fmt::format("parallel.virtual_stages={}", virtual_stages),
      fmt::format("training.micro_batch={}", micro_batch),
      fmt::format("training.gradient_accumulation={}", accumulation),
      fmt::format("training.activation_checkpointing=\"{}\"", checkpointing_name(recompute)),
  };
  for (std::string& key : options.overrides()) keys.push_back(std::move(key));
  if (flavour == "zero1" || flavour == "zero2") {
    keys.push_back(fmt::format("zero.stage={}", flavour == "zero1" ? 1 : 2));
    keys.push_back("zero.implementation=\"deepspeed\"");  // what the estimate prices: master weights sharded too
  }
  if (flavour == "fsdp") keys.push_back("fsdp.sharding_strategy=\"FULL_SHARD\"");
  if (cp > 1)
    keys.push_back(fmt::format("parallel.cp_scheme=\"{}\"", strategies::name_of(cp_scheme)));
  return keys;
}

SearchResult search(const ScenarioDocument& document, const SearchOptions& options, const Progress& progress) {
  const auto started = std::chrono::steady_clock::now();
  SearchResult result;
  const Scenario base = document.read_for_layout_choice(&result.written_layout_fault);
  result.name = base.name;
  result.objective = options.objective;
  result.gpu_hour_price = base.gpu_hour_price;
  result.gpus = static_cast<double>(base.cluster.gpu_count());
  result.tokens_per_step = static_cast<double>(base.lowering.training.global_batch * base.lowering.training.sequence);
  if (options.objective == "cost" && !base.gpu_hour_price) {
    throw ScenarioError(base.source, "search.gpu_hour_price", "--objective cost needs the price of a GPU-hour",
                        "add [search] gpu_hour_price = 2.5 (any currency) to the scenario");
  }
  result.title = fmt::format("{}: {} on {} × {}, global batch {} × {} tokens", base.name, base.lowering.model.name,
                             base.cluster.gpu_count(), base.cluster.node.gpu.name, base.lowering.training.global_batch,
                             base.lowering.training.sequence);

  const std::vector<SearchLayout> layouts = enumerate(base);
  result.enumerated = layouts.size();
  Estimator estimator(base);
  const double capacity = base.cluster.node.gpu.memory_bytes;
  for (const SearchLayout& layout : layouts) {
    LayoutEstimate estimate;
    try {
      estimate = estimator.estimate(layout);
    } catch (const collectives::UnsupportedCollective&) {  // an algorithm [collectives] fixes cannot run on its groups
      ++result.rejected_by_algorithm;
      continue;
    }
    if (estimate.memory_bytes > capacity) {
      ++result.rejected_by_memory;
      continue;
    }
    SearchCandidate candidate;
    candidate.layout = layout;
    candidate.estimate = estimate;
    result.candidates.push_back(std::move(candidate));
  }
  std::stable_sort(result.candidates.begin(), result.candidates.end(),
                   [](const SearchCandidate& a, const SearchCandidate& b) { return a.estimate.step_s < b.estimate.step_s; });
  result.estimate_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  // The best K by estimate, and a sample spread evenly over the rest of the ranking.
  std::vector<std::size_t> chosen;
  const std::size_t count = result.candidates.size();
  const std::size_t top = std::min(options.simulate, count);
  for (std::size_t i = 0; i < top; ++i) chosen.push_back(i);
  const std::size_t rest = count - top, spread = std::min(options.sample, rest);
  for (std::size_t k = 1; k <= spread; ++k) {
    std::size_t i = top + k * rest / (spread + 1);
    while (i < count && result.candidates[i].estimate.simulated_ops > kSampleOps) ++i;
    if (i < count) chosen.push_back(i);
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  std::vector<Scenario> scenarios;
  std::vector<std::size_t> simulated;
  for (const std::size_t i : chosen) {
    try {
      Scenario scenario = document.variant(result.candidates[i].layout.overrides(), "dtsim search").read();
      scenario.trace = TraceSelection::none();
      scenarios.push_back(std::move(scenario));
      simulated.push_back(i);
    } catch (const ScenarioError& error) {
      result.candidates[i].failed = error.message();
    }
  }
  for (const auto& [name, overrides] : options.also_simulate) {
    try {
      Scenario scenario = document.variant(overrides, "dtsim search").read();
      scenario.trace = TraceSelection::none();
      scenarios.push_back(std::move(scenario));
      SearchCandidate given;
      given.given = name;
      result.candidates.push_back(std::move(given));
      simulated.push_back(result.candidates.size() - 1);
    } catch (const ScenarioError& error) {
      result.extra.push_back(fmt::format("{}: {}", name, error.message()));
    }
  }
  std::vector<std::string> failures;
  std::vector<trace::Report> reports = run_all(scenarios, options.threads, progress, &failures, options.split);
  std::vector<double> estimated, measured;
  for (std::size_t k = 0; k < simulated.size(); ++k) {
    SearchCandidate& candidate = result.candidates[simulated[k]];
    if (!failures[k].empty()) {
      candidate.failed = failures[k];
      continue;
    }
    candidate.report = std::move(reports[k]);
    result.ranking.push_back(simulated[k]);
    if (candidate.given.empty()) {
      estimated.push_back(candidate.estimate.step_s);
      measured.push_back(candidate.report->step_time_s);
    }
  }
  if (estimated.size() >= 3) result.rank_correlation = spearman(estimated, measured);
  std::stable_sort(result.ranking.begin(), result.ranking.end(), [&](std::size_t a, std::size_t b) {
    const trace::Report& x = *result.candidates[a].report;
    const trace::Report& y = *result.candidates[b].report;
    if (x.oom != y.oom) return !x.oom;
    return x.step_time_s < y.step_time_s;  // tokens/s and cost per token order alike at a fixed GPU count
  });
  for (const std::size_t i : result.ranking) {
    const trace::Report& report = *result.candidates[i].report;
    if (report.oom) continue;
    const bool dominated = std::any_of(result.ranking.begin(), result.ranking.end(), [&](std::size_t j) {
      const trace::Report& other = *result.candidates[j].report;
      return j != i && !other.oom && other.step_time_s <= report.step_time_s &&
             other.peak_memory_bytes <= report.peak_memory_bytes &&
             (other.step_time_s < report.step_time_s || other.peak_memory_bytes < report.peak_memory_bytes);
    });
    if (!dominated) result.pareto.push_back(i);
  }
  std::sort(result.pareto.begin(), result.pareto.end(), [&](std::size_t a, std::size_t b) {
    return result.candidates[a].report->step_time_s < result.candidates[b].report->step_time_s;
  });
  return result;
}

namespace {

std::string layout_name(const SearchCandidate& candidate) {
  return candidate.given.empty() ? candidate.layout.label() : "advise: " + candidate.given;
}

// Why a simulated layout lands where it does: what its step is spent on.
std::string why(const trace::Report& report, double capacity) {
  const double step = report.step_time_s;
  std::vector<std::string> parts;
  parts.push_back(fmt::format("compute {:.0f} %", 100 * report.compute_time_s / step));
  if (report.pipeline_bubble > 0) parts.push_back(fmt::format("bubble {:.0f} %", 100 * report.pipeline_bubble));
  parts.push_back(fmt::format("exposed comm {:.0f} %", 100 * report.exposed_comm_s / step));
  parts.push_back(report.oom ? "does not fit"
                             : fmt::format("{:.1f} GB spare", (capacity - static_cast<double>(report.peak_memory_bytes)) / kGB));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::string format_search(const SearchResult& result, std::size_t rows) {
  std::string out = fmt::format("dtsim search — {}\n\n", result.title);
  if (!result.written_layout_fault.empty()) {
    out += fmt::format(
        "the scenario's own layout does not hold ({}); every layout searched regardless\n\n",
        result.written_layout_fault);
  }
  out += fmt::format(
      "{} layouts pass the divisibility rules, each estimated in closed form ({:.2f} s in all): "
      "{} over the memory, {} fit{}\n",
      result.enumerated, result.estimate_seconds, result.rejected_by_memory,
      std::count_if(result.candidates.begin(), result.candidates.end(),
                    [](const SearchCandidate& c) { return c.given.empty(); }),  // not advise's
      result.rejected_by_algorithm > 0
          ? fmt::format(", {} need a collective algorithm [collectives] fixes where it cannot run",
                        result.rejected_by_algorithm)
          : "");
  out += fmt::format("{} simulated; estimate vs simulation rank correlation (Spearman): {}\n\n", result.ranking.size(),
                     result.rank_correlation ? fmt::format("{:.2f}", *result.rank_correlation) : "too few to tell");
  std::vector<std::string> header = {"#", "layout", "estimate"};
  for (std::string& column : report_columns()) header.push_back(std::move(column));
  if (result.gpu_hour_price) header.push_back("cost/Mtok");
  header.push_back("why");
  std::vector<std::vector<std::string>> table;
  for (std::size_t r = 0; r < std::min(rows, result.ranking.size()); ++r) {
    const std::size_t i = result.ranking[r];
    const SearchCandidate& candidate = result.candidates[i];
    std::vector<std::string> row = {std::to_string(r + 1), layout_name(candidate),
                                    !candidate.given.empty() ? "-" : trace::human_seconds(candidate.estimate.step_s)};
    for (std::string& cell : report_cells(*candidate.report)) row.push_back(std::move(cell));
    if (result.gpu_hour_price) row.push_back(fmt::format("{:.3f}", cost_per_million_tokens(result, candidate.report->step_time_s)));
    row.push_back(why(*candidate.report, candidate.report->memory_capacity_bytes));
    table.push_back(std::move(row));
  }
  if (result.ranking.empty()) {  // --simulate 0 --sample 0: the estimates are all there is
    std::vector<std::vector<std::string>> estimated;
    for (const SearchCandidate& candidate : result.candidates) {
      if (estimated.size() == rows) break;
      if (!candidate.given.empty()) continue;
      const LayoutEstimate& e = candidate.estimate;
      estimated.push_back({std::to_string(estimated.size() + 1), layout_name(candidate),
                           trace::human_seconds(e.step_s), trace::human_seconds(e.compute_s),
                           trace::human_seconds(e.bubble_s), trace::human_seconds(e.exposed_comm_s),
                           fmt::format("{:.2f} GB", e.memory_bytes / kGB)});
    }
    out += "ranked by the estimated step time (none simulated)\n";
    out += format_table({"#", "layout", "estimate", "compute", "bubble", "exposed comm", "memory"},
                        estimated);
    const auto best = std::find_if(result.candidates.begin(), result.candidates.end(),
                                   [](const SearchCandidate& c) { return c.given.empty(); });
    if (best != result.candidates.end()) {
      out += fmt::format("\nbest estimated: --set {}\n",
                         fmt::join(best->layout.overrides(), " --set "));
    }
    return out;
  }
  out += fmt::format("ranked by {} (simulated)\n", result.objective == "cost" ? "cost per token" : "tokens/s");
  out += format_table(header, table);
  out += "\nPareto front, step time against peak memory (simulated, fitting)\n";
  for (const std::size_t i : result.pareto) {
    const trace::Report& report = *result.candidates[i].report;
    out += fmt::format("  {:>10}  {:>8.1f} GB  {}\n", trace::human_seconds(report.step_time_s),
                       static_cast<double>(report.peak_memory_bytes) / kGB, layout_name(result.candidates[i]));
  }
  for (const std::string& line : result.extra) out += "  not simulated: " + line + "\n";
  if (!result.ranking.empty() && !result.candidates[result.ranking.front()].report->oom) {
    const SearchCandidate& best = result.candidates[result.ranking.front()];
    if (best.given.empty()) out += fmt::format("\nbest: --set {}\n", fmt::join(best.layout.overrides(), " --set "));
  }
  return out;
}

nlohmann::json search_json(const SearchResult& result) {
  nlohmann::json json = {
      {"title", result.title},
      {"objective", result.objective},
      {"enumerated", result.enumerated},
      {"rejected_by_memory", result.rejected_by_memory},
      {"estimated", result.candidates.size()},
      {"estimate_seconds", result.estimate_seconds},
      {"rank_correlation", result.rank_correlation ? nlohmann::json(*result.rank_correlation)
                                                   : nlohmann::json(nullptr)},
      {"written_layout_fault", result.written_layout_fault.empty()
                                   ? nlohmann::json(nullptr)
                                   : nlohmann::json(result.written_layout_fault)},
      {"ranking", nlohmann::json::array()},
      {"pareto", nlohmann::json::array()}};
  const auto entry = [&](std::size_t i) {
    const SearchCandidate& candidate = result.candidates[i];
    nlohmann::json item = {{"layout", layout_name(candidate)},
                           {"overrides", candidate.given.empty() ? candidate.layout.overrides()
                                                                 : std::vector<std::string>{}},
                           {"estimated_step_s", candidate.estimate.step_s},
                           {"estimated_compute_s", candidate.estimate.compute_s},
                           {"estimated_bubble_s", candidate.estimate.bubble_s},
                           {"estimated_exposed_comm_s", candidate.estimate.exposed_comm_s},
                           {"estimated_memory_bytes", candidate.estimate.memory_bytes}};
    if (candidate.report) item["report"] = trace::report_to_json(*candidate.report);
    return item;
  };
  for (const std::size_t i : result.ranking) json["ranking"].push_back(entry(i));
  for (const std::size_t i : result.pareto) json["pareto"].push_back(entry(i));
  return json;
}

std::string search_csv(const SearchResult& result) {
  std::ostringstream csv;
  csv << "layout,strategy,dp,tp,pp,virtual_stages,cp,cp_scheme,ep,sequence_parallel,"
         "tp_comm_overlap,overlap_param_gather,pipeline_scatter_gather,"
         "moe_shared_expert_overlap,micro_batch,accumulation,"
         "recompute,"
         "estimated_step_s,estimated_memory_gb,simulated_step_s,simulated_tokens_per_s,"
         "simulated_mfu,simulated_memory_gb,simulated_fits\n";
  for (const SearchCandidate& c : result.candidates) {
    if (!c.given.empty()) continue;
    const SearchLayout& l = c.layout;
    csv << fmt::format("\"{}\",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6g},{:.3f}",
                       l.label(), l.flavour, l.dp, l.tp, l.pp, l.virtual_stages, l.cp,
                       strategies::name_of(l.cp_scheme), l.ep, l.sequence_parallel,
                       l.options.tp_comm_overlap, l.options.overlap_param_gather,
                       l.options.pipeline_scatter_gather, l.options.moe_shared_expert_overlap,
                       l.micro_batch, l.accumulation, checkpointing_name(l.recompute),
                       c.estimate.step_s, c.estimate.memory_bytes / kGB);
    if (c.report) {
      csv << fmt::format(",{:.6g},{:.6g},{:.4f},{:.3f},{}\n", c.report->step_time_s, c.report->tokens_per_s, c.report->mfu,
                         static_cast<double>(c.report->peak_memory_bytes) / kGB, !c.report->oom);
    } else {
      csv << ",,,,,\n";
    }
  }
  return csv.str();
}

}  // namespace scenarios
