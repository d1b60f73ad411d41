// DDP, ZeRO and FSDP as data-parallel policies (see data_parallel.h).
//
// FSDP's scheduling knobs, as modelled here:
//   forward_prefetch   the all-gather of unit u+1 is issued right after unit u's; without it,
//                      once unit u has started computing (PyTorch issues it from the next
//                      unit's pre-forward hook, as the CPU runs ahead of the GPU).
//   backward_prefetch  BACKWARD_PRE: the all-gather for the next unit in backward order is
//                      issued before the current unit's backward computation; BACKWARD_POST:
//                      after it; none: only once the current unit's gradients are reduced.
//   limit_all_gathers  an all-gather waits until the unit two before it has freed its gathered
//                      parameters: at most two units' parameters are gathered at a time.
//   cpu_offload        shards live on the host: each all-gather waits for its shard's copy to
//                      the GPU over its host link, each reduced gradient shard is copied back, and
//                      the optimizer runs on the host CPU.
//
// Memory-bound passes over gradients that the frameworks run besides the collectives:
//   DDP, ZeRO-1/2, FSDP NO_SHARD  under gradient accumulation, autograd adds each later
//                      micro-batch's gradients into those held (ReplicatedPolicy::accumulate),
//                      unless ddp.gradient_accumulation_fusion has the GEMM accumulate;
//   FSDP (not ZeRO-3)  after each unit's backward, PyTorch's copy of its gradient into the
//                      FlatParameter's, cast to reduce_dtype and pre-divide
//                      (ShardedPolicy::prepare_gradients).
#include "strategies/data_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace strategies {
namespace {

using program::CollectiveKind;
using program::MemoryCategory;
using program::OpIndex;

constexpr double kMiB = 1024.0 * 1024.0;

double dtype_size(program::DType dtype) { return static_cast<double>(program::dtype_bytes(dtype)); }

// A memory-bound pass of backward over `elements` gradients that moves `bytes`.
program::ComputeOp gradient_pass(program::DType dtype, double elements, double bytes) {
  program::ComputeOp pass;
  pass.kind = program::ComputeKind::kElementwise;
  pass.phase = program::Phase::kBackward;
  pass.dtype = dtype;
  pass.shape = program::Shape::of({std::llround(elements)});
  pass.bytes = bytes;
  return pass;
}

constexpr const char* kGradientCast = "gradient_cast";

std::vector<OpIndex> with(std::vector<OpIndex> ops, const std::vector<OpIndex>& more) {
  ops.insert(ops.end(), more.begin(), more.end());
  return ops;
}

// Greedy bucket filling in gradient-ready order, as torch's Reducer does; each full bucket is
// all-reduced (DDP) or reduce-scattered (ZeRO) right away — or, without overlap_grad_reduce,
// everything is one bucket flushed after the backward.
class BucketFiller {
 public:
  BucketFiller(const DdpSpec& ddp, CollectiveKind kind, program::GroupFamilyId group, program::StreamId stream,
               program::DType dtype, double bytes_per_element, std::string label = "")
      : ddp_(ddp), kind_(kind), group_(group), stream_(stream), dtype_(dtype), bytes_per_element_(bytes_per_element),
        label_(std::move(label)) {}

  void add(RankProgramBuilder& builder, std::int64_t elements, OpIndex ready_after) {
    bytes_ += static_cast<double>(elements) * bytes_per_element_;
    const double limit = (index_ == 0 ? ddp_.first_bucket_mb : ddp_.bucket_cap_mb) * kMiB;
    if (ddp_.overlap_grad_reduce && bytes_ >= limit) flush(builder, ready_after);
  }
  void flush(RankProgramBuilder& builder, OpIndex ready_after) {
    if (bytes_ <= 0) return;
    last_ = builder.add(fmt::format("{}{}.bucket{}.{}", kind_ == CollectiveKind::kAllReduce ? "ddp" : "zero", label_, index_,
                                    program::collective_name(kind_)),
                        stream_, program::make_collective(kind_, group_, bytes_, dtype_), {ready_after});
    ++index_;
    bytes_ = 0;
  }
  void reset() {
    index_ = 0;
    bytes_ = 0;
    last_.reset();
  }
  std::optional<OpIndex> last() const { return last_; }

 private:
  const DdpSpec& ddp_;
  CollectiveKind kind_;
  program::GroupFamilyId group_;
  program::StreamId stream_;
  program::DType dtype_;
  double bytes_per_element_;
  std::string label_;  // ".experts" for the routed experts' buckets
  int index_ = 0;
  double bytes_ = 0;
  std::optional<OpIndex> last_;
};

// DDP, ZeRO-1 and ZeRO-2: full parameters during compute, bucketed gradient synchronisation.
class ReplicatedPolicy : public DataParallelPolicy {
 public:
  ReplicatedPolicy(const StageContext& context, int zero_stage)
      : context_(context),
        input_(*context.input),
        zero_stage_(zero_stage),
        dp_(input_.parallel.data_parallel_ranks()),
        // ZeroRedundancyOptimizer keeps DDP's all-reduce; DeepSpeed's ZeRO reduce-scatters.
        reduce_scatter_(zero_stage > 0 && input_.zero.implementation == ZeroImplementation::kDeepSpeed),
        buckets_(bucket_filler(context.dp_group)),
        expert_buckets_(bucket_filler(context.expert_dp_group, ".experts")) {}

  void allocate_states(RankProgramBuilder& builder) override {
    allocate_model_states(builder, context_.streams.compute, context_.parameters - context_.expert_parameters,
                          context_.replica->state, shares(dp_));
    allocate_model_states(builder, context_.streams.compute, context_.expert_parameters, context_.replica->state,
                          shares(context_.expert_dp), "experts.");
    // DDP's Reducer copies gradients into flat buckets unless they are views of them, for the
    // parameters it reduces: the routed experts' over their own group, none where that group is
    // one rank. FSDP NO_SHARD all-reduces each unit's FlatParameter gradient in place
    // (torch/distributed/fsdp/_runtime_utils.py, _reduce_grad_no_shard), with no copy.
    const bool fsdp = input_.parallel.strategy == "fsdp";
    if (!reduce_scatter_ && !input_.ddp.gradient_as_bucket_view && !fsdp) {
      const double bucketed = (dp_ > 1 ? context_.parameters - context_.expert_parameters : 0) +
                              (context_.expert_dp > 1 ? context_.expert_parameters : 0);
      if (bucketed > 0) {
        builder.allocate("ddp.bucket_buffers", context_.streams.compute,
                         MemoryCategory::kCommBuffers,
                         bucketed * context_.replica->state.gradients);
      }
    }
  }

  OpIndex forward(RankProgramBuilder& builder, std::vector<OpIndex> deps) override {
    for (OpIndex dep : std::exchange(wait_for_, {})) deps.push_back(dep);
    if (std::exchange(gather_in_forward_, false)) {
      return forward_gathering(builder, std::exchange(gather_after_, {}), std::move(deps));
    }
    return emit_forward(builder, context_.blocks, context_.streams, input_.training.checkpointing, std::move(deps));
  }

  OpIndex backward(RankProgramBuilder& builder, std::vector<OpIndex> deps, bool last_micro_batch) override {
    const bool sync = dp_ > 1 && (last_micro_batch || (!reduce_scatter_ && !input_.ddp.no_sync));
    const bool expert_sync = sync && context_.expert_dp > 1;
    buckets_.reset();
    expert_buckets_.reset();
    // Gradients already held from an earlier micro-batch of this step get this one's added.
    const bool accumulates = std::exchange(holds_gradients_, true) && !input_.ddp.gradient_accumulation_fusion;
    std::optional<OpIndex> last_added;
    OpIndex last = emit_backward(builder, context_.blocks, context_.streams, input_.training.checkpointing,
                                 std::move(deps), [&](const Block& block, const BackwardStep& step, OpIndex op) {
                                   if (accumulates) last_added = op = accumulate(builder, block, step, op);
                                   for (std::size_t param : step.grads_ready) {
                                     const ParamTensor& tensor = block.params[param];
                                     if (tensor.expert ? expert_sync : sync) {
                                       (tensor.expert ? expert_buckets_ : buckets_).add(builder, tensor.elements, op);
                                     }
                                   }
                                   return accumulates ? std::optional<OpIndex>(op) : std::nullopt;
                                 });
    // Autograd returns (and a pipeline sends the input gradient on) once every gradient is
    // accumulated: the last op is the later of the two. Every block's backward ends with its
    // first op's, which produces gradients (a norm's, the embedding's), so the later one is the
    // last accumulation.
    if (last_added) last = std::max(last, *last_added);
    if (!sync) return last;
    // Deferred: the buckets keep their gradients for sync_gradients().
    if (last_micro_batch && context_.defer_gradient_sync) return last;
    synchronise(builder, last, last_micro_batch);
    return last;
  }

  void sync_gradients(RankProgramBuilder& builder, OpIndex after) override {
    if (context_.defer_gradient_sync) synchronise(builder, after, true);
  }

  std::vector<OpIndex> finish_step(RankProgramBuilder& builder, std::vector<OpIndex> before_update) override {
    holds_gradients_ = false;  // the optimizer consumes them (zero_grad(set_to_none=True))
    const double dense = context_.parameters - context_.expert_parameters;
    const auto share = [&](std::int32_t ranks) { return zero_stage_ >= 1 ? 1.0 / ranks : 1.0; };
    const double updated = dense * share(dp_) + context_.expert_parameters * share(context_.expert_dp);
    const OpIndex update = builder.add(fmt::format("optimizer.{}", name_of(input_.training.optimizer)),
                                       context_.streams.compute,
                                       optimizer_update(updated, context_.replica->state, context_.replica->dtype,
                                                        input_.training),
                                       with(std::exchange(wait_for_, {}), before_update));
    if (zero_stage_ == 0 || dp_ == 1) return {};
    if (gathers_in_forward()) {  // gathered during the next forward
      gather_in_forward_ = true;
      gather_after_ = {update};
      return {};
    }
    // Every rank updated its shard of the parameters: gather them back.
    wait_for_ = {gather_parameters(builder, "zero.parameters.all_gather", dense, {update})};
    if (context_.expert_parameters > 0 && context_.expert_dp > 1) {
      wait_for_.push_back(gather_parameters(builder, "zero.experts.all_gather", context_.expert_parameters, {update},
                                            context_.expert_dp_group));
    }
    return {};
  }

 private:
  // Reduces what the buckets hold after `after`. The next compute waits for every bucket, as
  // DDP's finalize_backward makes the compute stream wait for the communication stream.
  void synchronise(RankProgramBuilder& builder, OpIndex after, bool last_micro_batch) {
    for (BucketFiller* filler : {&buckets_, &expert_buckets_}) {
      filler->flush(builder, after);
      if (filler->last()) wait_for_.push_back(*filler->last());
    }
    if (zero_stage_ == 0 && input_.ddp.barrier_every_step && last_micro_batch &&
        context_.issues_step_barrier) {
      program::CollectiveOp barrier = program::make_collective(
          CollectiveKind::kBarrier, context_.world_group, 0, program::DType::kFP32);
      wait_for_.push_back(builder.add("barrier", context_.dp_reduce, barrier, {after}));
    }
  }

  BucketFiller bucket_filler(program::GroupFamilyId group, std::string label = "") const {
    return BucketFiller(input_.ddp, reduce_scatter_ ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, group,
                        context_.dp_reduce, context_.replica->gradient_dtype,
                        dtype_size(context_.replica->gradient_dtype) * parameter_scale(input_.model), std::move(label));
  }
  // The gradients `step` completes accumulated into those held (gradient_accumulation), on the
  // compute stream right after the op that produced them.
  OpIndex accumulate(RankProgramBuilder& builder, const Block& block, const BackwardStep& step,
                     OpIndex after) const {
    return builder.add(step.name + ".accumulate", context_.streams.compute,
                       gradient_accumulation(static_cast<double>(block.gradient_elements(step)) *
                                                 parameter_scale(input_.model),
                                             context_.replica->gradient_dtype),
                       {after});
  }

  // The model states a rank keeps when sharded over `ranks` data-parallel ranks.
  StateShares shares(std::int32_t ranks) const { return zero_shares(zero_stage_, reduce_scatter_, ranks); }

  OpIndex gather_parameters(RankProgramBuilder& builder, std::string name, double parameters, std::vector<OpIndex> deps,
                            std::optional<program::GroupFamilyId> group = std::nullopt) {
    const program::CollectiveOp gather =
        program::make_collective(CollectiveKind::kAllGather, group.value_or(context_.dp_group),
                                 parameters * context_.replica->state.parameters, context_.replica->dtype);
    return builder.add(std::move(name), context_.dp_gather, gather, std::move(deps));
  }

  // Megatron's overlapped parameter gather, in its buckets (megatron_parameter_buckets): when the
  // forward reaches bucket k, it waits for bucket k's all-gather and starts bucket k + 1's.
  bool gathers_in_forward() const { return input_.zero.overlap_param_gather && zero_stage_ >= 1 && dp_ > 1; }

  OpIndex forward_gathering(RankProgramBuilder& builder, std::vector<OpIndex> update,
                            std::vector<OpIndex> deps) {
    const double scale = parameter_scale(input_.model);
    std::vector<double> block_elements;
    for (const Block* block : context_.blocks) {
      block_elements.push_back(static_cast<double>(block->parameter_elements()) * scale);
    }
    std::vector<std::pair<std::vector<const Block*>, double>> buckets;  // forward order
    std::size_t next_block = 0;
    for (const std::size_t count : megatron_parameter_buckets(block_elements, dp_)) {
      auto& bucket = buckets.emplace_back();
      bucket.first.assign(
          context_.blocks.begin() + static_cast<std::ptrdiff_t>(next_block),
          context_.blocks.begin() + static_cast<std::ptrdiff_t>(next_block + count));
      next_block += count;
      for (std::size_t b = next_block; b-- > next_block - count;)
        bucket.second += block_elements[b];  // as filled
    }
    const auto gather = [&](std::size_t k, std::vector<OpIndex> after) {
      return gather_parameters(builder, fmt::format("zero.parameters.bucket{}.all_gather", k), buckets[k].second,
                               std::move(after));
    };
    std::vector<OpIndex> gathered = {gather(0, update)};
    std::vector<OpIndex> reached = std::move(update);  // after these the forward reaches the current bucket
    for (std::size_t k = 0; k < buckets.size(); ++k) {
      if (k + 1 < buckets.size()) gathered.push_back(gather(k + 1, reached));
      deps.push_back(gathered[k]);
      if (k > 0) deps.insert(deps.end(), reached.begin(), reached.end());  // e.g. the last block's collective
      reached = {emit_forward(builder, buckets[k].first, context_.streams, input_.training.checkpointing,
                              std::exchange(deps, {}))};
    }
    return reached.front();
  }

  const StageContext& context_;
  const LoweringInput& input_;
  int zero_stage_;
  std::int32_t dp_;
  bool reduce_scatter_;
  bool holds_gradients_ = false;  // a backward of this step has run
  BucketFiller buckets_;
  BucketFiller expert_buckets_;
  std::vector<OpIndex> wait_for_;
  // With overlap_param_gather the next forward gathers the parameters (in steady state the first
  // step's too), after the optimizer step that updated them.
  bool gather_in_forward_ = gathers_in_forward();
  std::vector<OpIndex> gather_after_;
};

// FSDP (and ZeRO-3): parameters gathered per unit around its computation.
class ShardedPolicy : public DataParallelPolicy {
 public:
  ShardedPolicy(const StageContext& context, bool zero3)
      : context_(context),
        input_(*context.input),
        fsdp_(zero3 ? FsdpSpec{} : input_.fsdp),
        fsdp_gradient_passes_(!zero3) {
    const bool hybrid = fsdp_.sharding == ShardingStrategy::kHybridShard;
    group_ = hybrid ? context.shard_group : context.dp_group;
    shards_ = hybrid ? shard_count(context) : input_.parallel.data_parallel_ranks();
    param_dtype_ = fsdp_.param_dtype.value_or(context.replica->dtype);
    reduce_dtype_ = fsdp_.reduce_dtype.value_or(param_dtype_);
    state_ = context.replica->state;
    if (!zero3 && keeps_fp32_master(input_.training.precision)) {
      // FSDP keeps the sharded parameters (and so their gradients) in fp32: no separate master.
      state_.parameters = 4;
      state_.gradients = 4;
      state_.master_weights = 0;
    }
    reshard_ = fsdp_.sharding != ShardingStrategy::kShardGradOp && fsdp_.reshard_after_forward;
    const double scale = parameter_scale(input_.model);
    Unit root{"root", {}, 0, true};
    std::vector<const Block*> layers;
    std::vector<double> layer_elements;
    for (const Block* block : context.blocks) {
      const double elements = static_cast<double>(block->parameter_elements()) * scale;
      if (!block->layer) {
        root.blocks.push_back(block);
        root.elements += elements;
        continue;
      }
      layers.push_back(block);
      layer_elements.push_back(elements);
    }
    units_.push_back(std::move(root));
    std::size_t next_layer = 0;
    for (const std::size_t count : fsdp_layer_units(layer_elements, fsdp_.min_num_params)) {
      Unit unit{"", {}, 0, false};
      for (std::size_t l = next_layer; l < next_layer + count; ++l) {
        unit.blocks.push_back(layers[l]);
        unit.elements += layer_elements[l];
      }
      next_layer += count;
      unit.name = count == 1
                      ? unit.blocks.front()->name
                      : fmt::format("{}-{}", unit.blocks.front()->name, unit.blocks.back()->name);
      units_.push_back(std::move(unit));
    }
    // Per block: its unit, and the unit whose backward follows (that of the nearest earlier
    // block in another unit), if any.
    for (const Block* block : context.blocks) block_unit_.push_back(unit_of(block));
    std::optional<std::size_t> next;
    for (std::size_t b = 0; b < block_unit_.size(); ++b) {
      if (b > 0 && block_unit_[b - 1] != block_unit_[b]) next = block_unit_[b - 1];
      next_unit_in_backward_.push_back(next);
    }
  }

  void allocate_states(RankProgramBuilder& builder) override {
    if (fsdp_.cpu_offload) return;  // everything sharded lives on the host
    const double share = 1.0 / shards_;
    allocate_model_states(builder, context_.streams.compute, context_.parameters, state_,
                          StateShares{share, share, share, share});
  }

  OpIndex forward(RankProgramBuilder& builder, std::vector<OpIndex> deps) override {
    unit_started_.assign(units_.size(), std::nullopt);
    freed_.assign(units_.size(), std::nullopt);
    gathered_.assign(units_.size(), std::nullopt);
    OpIndex last = 0;
    std::vector<OpIndex> pending = std::move(deps);
    for (std::size_t b = 0; b < context_.blocks.size(); ++b) {
      const Block* block = context_.blocks[b];
      const std::size_t u = block_unit_[b];
      if (!gathered_[u]) gathered_[u] = gather(builder, u, forward_gather_deps(u), "fwd");
      std::vector<OpIndex> block_deps = std::exchange(pending, {});
      block_deps.push_back(*gathered_[u]);
      if (!unit_started_[u]) unit_started_[u] = builder.next_index();
      last = emit_forward(builder, {block}, context_.streams, input_.training.checkpointing, std::move(block_deps));
      if (!units_[u].root && block == units_[u].blocks.back() && reshard_) {
        freed_[u] = release(builder, u, "gathered_parameters", MemoryCategory::kGatheredParameters, param_bytes(u), {last});
        gathered_[u].reset();
      }
    }
    return last;
  }

  // The all-gathers are emitted where PyTorch issues them, which orders them on a stream they
  // share with the reduce-scatters (StageContext::dp_gather): BACKWARD_PRE prefetches the next
  // unit from the current unit's pre-backward hook, before its gradient computation and its
  // reduce-scatter; BACKWARD_POST from its post-backward hook, after the computation and before
  // the reduce-scatter; NONE gathers a unit from its own pre-backward hook, once the unit before
  // it is reduce-scattered.
  OpIndex backward(RankProgramBuilder& builder, std::vector<OpIndex> deps, bool /*last_micro_batch*/) override {
    OpIndex last = 0;
    std::vector<OpIndex> pending = std::move(deps);
    std::optional<Reduction> previous;  // of the unit done before
    std::vector<std::optional<OpIndex>> unit_freed(units_.size());
    std::vector<bool> gradients_allocated(units_.size(), false);
    const auto gather_for_backward = [&](std::size_t u, std::vector<OpIndex> gather_deps) {
      if (gathered_[u]) return;
      const std::optional<OpIndex> two_before = backward_two_before(u, unit_freed);
      if (fsdp_.limit_all_gathers && two_before) gather_deps.push_back(*two_before);
      gathered_[u] = gather(builder, u, std::move(gather_deps), "bwd");
    };
    const BackwardPrefetch prefetch = fsdp_.backward_prefetch;
    for (std::size_t b = context_.blocks.size(); b-- > 0;) {
      const Block* block = context_.blocks[b];
      const std::size_t u = block_unit_[b];
      const std::optional<std::size_t> next = next_unit_in_backward_[b];
      // The first unit in backward order, or under NONE every unit, is gathered here; under
      // BACKWARD_POST also the first after the root's LM head.
      std::vector<OpIndex> own_deps;
      if (prefetch == BackwardPrefetch::kNone && previous) own_deps.push_back(previous->reduce_scatter);
      gather_for_backward(u, std::move(own_deps));
      if (prefetch == BackwardPrefetch::kBackwardPre && next) gather_for_backward(*next, {});
      if (!gradients_allocated[u]) {
        builder.allocate(fmt::format("{}.unsharded_gradients", units_[u].name), context_.streams.compute,
                         MemoryCategory::kUnshardedGradients, units_[u].elements * dtype_size(param_dtype_));
        gradients_allocated[u] = true;
      }
      std::vector<OpIndex> block_deps = std::exchange(pending, {});
      block_deps.push_back(*gathered_[u]);
      last = emit_backward(
          builder, {block}, context_.streams, input_.training.checkpointing, std::move(block_deps),
          [](const Block&, const BackwardStep&, OpIndex) { return std::optional<OpIndex>(); });
      if (block != units_[u].blocks.front()) continue;
      // The unit's backward is complete: reduce its gradients and free what it gathered.
      // BACKWARD_POST prefetches from here, before the gradient passes (PyTorch's post-backward
      // hook issues the next all-gather first).
      if (prefetch == BackwardPrefetch::kBackwardPost && next) gather_for_backward(*next, {last});
      if (fsdp_gradient_passes_) last = prepare_gradients(builder, u, last);
      previous = reduce(builder, u, last, previous);
      // The unsharded buffers are done with once the reduce-scatter has read them.
      const std::vector<OpIndex> reduced = {previous->reduce_scatter};
      unit_freed[u] = release(builder, u, "gathered_parameters", MemoryCategory::kGatheredParameters, param_bytes(u),
                              reduced, context_.dp_reduce);
      release(builder, u, "unsharded_gradients", MemoryCategory::kUnshardedGradients,
              units_[u].elements * dtype_size(param_dtype_), reduced, context_.dp_reduce);
      if (casts_gradients()) {
        release(builder, u, "reduce_dtype_gradients", MemoryCategory::kUnshardedGradients,
                units_[u].elements * dtype_size(reduce_dtype_), reduced, context_.dp_reduce);
      }
      gathered_[u].reset();
      last_reduce_ = previous->last;
    }
    return last;
  }

  std::vector<OpIndex> finish_step(RankProgramBuilder& builder, std::vector<OpIndex> before_update) override {
    program::ComputeOp update = optimizer_update(context_.parameters / shards_, state_, context_.replica->dtype,
                                                 input_.training);
    update.on_host = fsdp_.cpu_offload;
    std::vector<OpIndex> deps = std::move(before_update);
    if (last_reduce_) deps.push_back(*last_reduce_);
    builder.add(fmt::format("optimizer.{}", name_of(input_.training.optimizer)), context_.streams.compute,
                update, std::move(deps));
    return {};
  }

 private:
  struct Unit {
    std::string name;
    std::vector<const Block*> blocks;
    double elements = 0;  // parameters of the unit on this rank before sharding
    bool root = false;
  };

  static std::int32_t shard_count(const StageContext& context) {
    const auto& parallel = context.input->parallel;
    const std::int32_t per_node = std::max(1, parallel.gpus_per_node / parallel.tp);
    return std::min(parallel.data_parallel_ranks(), per_node);
  }

  std::size_t unit_of(const Block* block) const {
    for (std::size_t u = 0; u < units_.size(); ++u) {
      for (const Block* member : units_[u].blocks) {
        if (member == block) return u;
      }
    }
    return 0;
  }

  double param_bytes(std::size_t u) const { return units_[u].elements * dtype_size(param_dtype_); }

  std::vector<OpIndex> forward_gather_deps(std::size_t u) const {
    std::vector<OpIndex> deps;
    if (!fsdp_.forward_prefetch && u > 0 && unit_started_[u - 1]) deps.push_back(*unit_started_[u - 1]);
    if (fsdp_.limit_all_gathers && u >= 2 && freed_[u - 2]) deps.push_back(*freed_[u - 2]);
    return deps;
  }

  // The unit processed two units earlier in backward order (u + 2 among layer units).
  std::optional<OpIndex> backward_two_before(std::size_t u, const std::vector<std::optional<OpIndex>>& freed) const {
    return u + 2 < units_.size() ? freed[u + 2] : std::nullopt;
  }

  // All-gathers a unit's parameters (after copying its shard to the GPU under CPU offload).
  OpIndex gather(RankProgramBuilder& builder, std::size_t u, std::vector<OpIndex> deps, const char* pass) {
    const Unit& unit = units_[u];
    if (fsdp_.cpu_offload) {
      program::ComputeOp copy;
      copy.kind = program::ComputeKind::kMemcpy;
      copy.shape = program::Shape::of({std::llround(unit.elements / shards_ * state_.parameters)});
      copy.bytes = unit.elements / shards_ * state_.parameters;
      deps.push_back(builder.add(fmt::format("{}.{}.shard_to_gpu", unit.name, pass), context_.host_to_device, copy, deps));
    }
    builder.allocate(fmt::format("{}.gathered_parameters", unit.name), context_.dp_gather, MemoryCategory::kGatheredParameters,
                     param_bytes(u), deps);
    return builder.add(fmt::format("{}.{}.all_gather", unit.name, pass), context_.dp_gather,
                       program::make_collective(CollectiveKind::kAllGather, group_, param_bytes(u), param_dtype_));
  }

  bool casts_gradients() const { return fsdp_gradient_passes_ && reduce_dtype_ != param_dtype_; }

  // PyTorch FSDP's work on a unit's unsharded gradient before its reduce-scatter (torch 2.0/2.1,
  // torch/distributed/fsdp/_runtime_utils.py _post_backward_hook with the default
  // reduce_scatter_hook of _comm_hooks/default_hooks.py), N the unit's parameters, p and r the
  // bytes of the parameter and reduce dtypes:
  //   flat gradient  the layer's parameters are views (torch.split) of one FlatParameter, so
  //                  autograd's split backward copies their gradients into one tensor: 2·N·p;
  //   cast           grad.to(reduce_dtype) when it differs from param_dtype: N·(p + r);
  //   pre-divide     grad.div_(f) in place before the reduce-scatter, f the
  //                  _get_gradient_predivide_factor of the shard group (> 1 from 2 ranks): 2·N·r.
  // PyTorch runs the last two on its post-backward stream, but during backward the compute
  // stream's kernels fill the GPU, so they take its time as if queued behind them: they are put
  // on the compute stream. Left out: the work on the reduced shard (post-divide, accumulation
  // across micro-batches), 1/shards of the above.
  OpIndex prepare_gradients(RankProgramBuilder& builder, std::size_t u, OpIndex after) {
    OpIndex last = after;
    for (GradientPass& pass :
         fsdp_gradient_passes(units_[u].elements, param_dtype_, reduce_dtype_, shards_)) {
      if (std::string_view(pass.name) == kGradientCast) {  // into a gradient of its own
        builder.allocate(fmt::format("{}.reduce_dtype_gradients", units_[u].name),
                         context_.streams.compute, MemoryCategory::kUnshardedGradients,
                         units_[u].elements * dtype_size(reduce_dtype_));
      }
      last = builder.add(fmt::format("{}.{}", units_[u].name, pass.name), context_.streams.compute,
                         std::move(pass.op), {last});
    }
    return last;
  }

  // A unit's gradient reduction: its reduce-scatter, and the op that ends it.
  struct Reduction {
    OpIndex reduce_scatter = 0;
    OpIndex last = 0;
    std::optional<OpIndex> host_copy;  // under CPU offload, on the post-backward stream
  };

  // Reduce-scatters a unit's gradients, then under HYBRID_SHARD all-reduces the shard across
  // nodes and under CPU offload copies it to the host. PyTorch FSDP (torch 2.1,
  // _runtime_utils.py _reduce_grad) issues the reduce-scatter and, without HYBRID_SHARD, the
  // host copy from its post-backward stream, so a unit's reduce-scatter starts only once the
  // unit before it is on the host; HYBRID_SHARD's all-reduce (over its own process group) and
  // the copy after it run on the all-reduce stream, which nothing of the next unit waits for.
  Reduction reduce(RankProgramBuilder& builder, std::size_t u, OpIndex after, const std::optional<Reduction>& previous) {
    const Unit& unit = units_[u];
    const double bytes = unit.elements * dtype_size(reduce_dtype_);
    std::vector<OpIndex> deps = {after};
    if (previous && previous->host_copy) deps.push_back(*previous->host_copy);
    Reduction reduction;
    reduction.reduce_scatter = builder.add(fmt::format("{}.reduce_scatter", unit.name), context_.dp_reduce,
                                           program::make_collective(CollectiveKind::kReduceScatter, group_, bytes, reduce_dtype_),
                                           std::move(deps));
    reduction.last = reduction.reduce_scatter;
    const bool across_nodes = fsdp_.sharding == ShardingStrategy::kHybridShard && input_.parallel.data_parallel_ranks() > shards_;
    if (across_nodes) {
      reduction.last = builder.add(fmt::format("{}.replica_all_reduce", unit.name), context_.dp_replicate,
                                   program::make_collective(CollectiveKind::kAllReduce, context_.replicate_group, bytes / shards_, reduce_dtype_),
                                   {reduction.last});
    }
    if (fsdp_.cpu_offload) {
      program::ComputeOp copy;
      copy.kind = program::ComputeKind::kMemcpy;
      copy.shape = program::Shape::of({std::llround(bytes / shards_)});
      copy.bytes = bytes / shards_;
      reduction.last = builder.add(fmt::format("{}.gradient_shard_to_host", unit.name), context_.device_to_host, copy,
                                   {reduction.last});
      if (!across_nodes) reduction.host_copy = reduction.last;
    }
    return reduction;
  }

  OpIndex release(RankProgramBuilder& builder, std::size_t u, const char* what, MemoryCategory category, double bytes,
                  std::vector<OpIndex> deps, std::optional<program::StreamId> stream = std::nullopt) {
    return builder.release(fmt::format("{}.{}", units_[u].name, what), stream.value_or(context_.streams.compute),
                           category, bytes, std::move(deps));
  }

  const StageContext& context_;
  const LoweringInput& input_;
  FsdpSpec fsdp_;
  program::GroupFamilyId group_ = 0;
  std::int32_t shards_ = 1;
  program::DType param_dtype_ = program::DType::kBF16;
  program::DType reduce_dtype_ = program::DType::kBF16;
  ModelStateBytes state_;
  bool reshard_ = true;
  const bool fsdp_gradient_passes_;  // PyTorch FSDP's (not DeepSpeed ZeRO-3's) prepare_gradients
  std::vector<Unit> units_;
  std::vector<std::size_t> block_unit_;  // per block of context_.blocks: its unit
  std::vector<std::optional<std::size_t>> next_unit_in_backward_;  // per block
  std::vector<std::optional<OpIndex>> unit_started_;
  std::vector<std::optional<OpIndex>> freed_;
  std::vector<std::optional<OpIndex>> gathered_;
  std::optional<OpIndex> last_reduce_;
};

}  // namespace

program::ComputeOp gradient_accumulation(double elements, program::DType dtype) {
  return gradient_pass(dtype, elements, 3 * elements * dtype_size(dtype));
}

std::vector<std::size_t> megatron_parameter_buckets(const std::vector<double>& block_elements,
                                                    std::int32_t dp) {
  constexpr double kBucketParameters = 40e6, kBucketParametersPerRank = 1e6;
  const double bucket_size = std::max(kBucketParameters, kBucketParametersPerRank * dp);
  std::vector<std::size_t> buckets;  // filled from the last block, so in backward order here
  double elements = bucket_size;     // a full bucket: the last block opens the first
  for (auto block = block_elements.rbegin(); block != block_elements.rend(); ++block) {
    if (elements >= bucket_size) {
      buckets.push_back(0);
      elements = 0;
    }
    ++buckets.back();
    elements += *block;
  }
  std::reverse(buckets.begin(), buckets.end());
  return buckets;
}

std::vector<std::size_t> fsdp_layer_units(const std::vector<double>& layer_elements,
                                          double min_num_params) {
  std::vector<std::size_t> units;
  std::size_t layers = 0;
  double elements = 0;
  for (const double layer : layer_elements) {
    ++layers;
    elements += layer;
    if (min_num_params <= 0 || elements >= min_num_params) {
      units.push_back(std::exchange(layers, 0));
      elements = 0;
    }
  }
  if (layers > 0) units.push_back(layers);
  return units;
}

std::vector<GradientPass> fsdp_gradient_passes(double elements, program::DType param_dtype,
                                               program::DType reduce_dtype, std::int32_t shards) {
  const double p = dtype_size(param_dtype);
  const double r = dtype_size(reduce_dtype);
  std::vector<GradientPass> passes = {
      {"flat_gradient", gradient_pass(param_dtype, elements, 2 * elements * p)}};
  if (reduce_dtype != param_dtype)
    passes.push_back({kGradientCast, gradient_pass(reduce_dtype, elements, elements * (p + r))});
  if (shards > 1)
    passes.push_back(
        {"gradient_predivide", gradient_pass(reduce_dtype, elements, 2 * elements * r)});
  return passes;
}

std::unique_ptr<DataParallelPolicy> make_data_parallel_policy(const StageContext& context) {
  const LoweringInput& input = *context.input;
  const std::string& strategy = input.parallel.strategy;
  if (strategy == "zero") {
    if (input.zero.stage == 3) return std::make_unique<ShardedPolicy>(context, true);
    return std::make_unique<ReplicatedPolicy>(context, input.zero.stage);
  }
  if (strategy == "fsdp" && input.fsdp.sharding != ShardingStrategy::kNoShard) {
    return std::make_unique<ShardedPolicy>(context, false);
  }
  return std::make_unique<ReplicatedPolicy>(context, 0);  // ddp, and FSDP NO_SHARD
}

}  // namespace strategies
