// Shared lowering pieces (see training_step.h).
#include "strategies/training_step.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace strategies {

using program::MemoryCategory;
using program::OpIndex;

ReplicaModel replica_model(const ModelSpec& model, const TrainingSpec& training, const TensorParallel& tensor_parallel,
                           bool head_embedding_copy, const ExpertParallel& expert_parallel,
                           const ContextParallel& context_parallel) {
  ReplicaModel replica;
  replica.dtype = compute_dtype(training.precision);
  replica.gradient_dtype = gradient_dtype(training.precision);
  replica.blocks = model_blocks(model, BlockShape{training.micro_batch, training.sequence / context_parallel.degree,
                                                  replica.dtype, tensor_parallel, training.precision == Precision::kFP8,
                                                  head_embedding_copy, expert_parallel, context_parallel});
  replica.parameters = total_parameters(model);
  replica.state = model_state_bytes(training);
  return replica;
}

StateShares zero_shares(std::int32_t stage, bool shards_master_weights, std::int32_t ranks) {
  const double sharded = 1.0 / ranks;
  StateShares shares;
  if (stage >= 1) shares.optimizer_states = sharded;
  if (stage >= 1 && shards_master_weights) shares.master_weights = sharded;
  if (stage >= 2) shares.gradients = sharded;
  return shares;
}

double kept_bytes_per_parameter(const ModelStateBytes& state, const StateShares& shares) {
  return state.parameters * shares.parameters + state.gradients * shares.gradients +
         state.master_weights * shares.master_weights + state.optimizer_states * shares.optimizer_states;
}

void allocate_model_states(RankProgramBuilder& builder, program::StreamId stream, double parameters,
                           const ModelStateBytes& state, const StateShares& shares, const std::string& prefix) {
  auto allocate = [&](const char* name, MemoryCategory category, double bytes_per_parameter, double share) {
    const double bytes = parameters * bytes_per_parameter * share;
    if (bytes > 0) builder.allocate(prefix + name, stream, category, bytes);
  };
  allocate("parameters", MemoryCategory::kParameters, state.parameters, shares.parameters);
  allocate("gradients", MemoryCategory::kGradients, state.gradients, shares.gradients);
  allocate("master_weights", MemoryCategory::kMasterWeights, state.master_weights, shares.master_weights);
  allocate("optimizer_states", MemoryCategory::kOptimizerStates, state.optimizer_states, shares.optimizer_states);
}

namespace {

// Emits ops in order with the dependency rules of the module: a compute op waits for the
// tensor-parallel collective just before it (unless that one overlaps) and for `pending`
// dependencies; a collective goes on the tensor-parallel stream after the last compute op —
// except the chunks of a run (ForwardStep::chunk), which all follow the compute op before the
// run's first chunk — and after the pending dependencies too.
class StepEmitter {
 public:
  StepEmitter(RankProgramBuilder& builder, const Streams& streams, std::vector<OpIndex> deps)
      : builder_(builder), streams_(streams), wait_(std::move(deps)) {}

  OpIndex compute(std::string name, program::ComputeOp op, std::vector<OpIndex> extra = {},
                  bool chunk = false, const Transients& transients = {}) {
    in_run_ = in_run_ && chunk;
    std::vector<OpIndex> deps = std::exchange(wait_, {});
    deps.insert(deps.end(), extra.begin(), extra.end());
    deps = allocate(transients, streams_.compute, std::move(deps));
    last_ = builder_.add(std::move(name), streams_.compute, std::move(op), std::move(deps));
    release(transients, streams_.compute);
    last_compute_ = last_;
    return last_;
  }
  OpIndex collective(std::string name, const program::CollectiveOp& op, bool overlapped,
                     bool chunk = false, std::vector<OpIndex> extra = {},
                     const Transients& transients = {}) {
    if (chunk && !in_run_) run_after_ = last_compute_;
    in_run_ = chunk;
    const std::optional<OpIndex> after = chunk ? run_after_ : last_compute_;
    std::vector<OpIndex> deps = wait_;  // what the next op had to wait for (a received input, …)
    if (after) deps.push_back(*after);
    deps.insert(deps.end(), extra.begin(), extra.end());
    program::StreamId stream = streams_.tensor_parallel;
    for (const auto& [group, own] : streams_.group_streams) {
      if (group == op.group) stream = own;
    }
    deps = allocate(transients, stream, std::move(deps));
    last_ = builder_.add(std::move(name), stream, op, std::move(deps));
    release(transients, stream);
    if (!overlapped) wait_ = {last_};
    return last_;
  }
  // A send or receive beside the compute: after the last compute op and `extra`; the next
  // compute does not wait for it (a step that needs it names it in waits_for).
  OpIndex transfer(std::string name, const program::SendRecvOp& op, std::vector<OpIndex> extra) {
    std::vector<OpIndex> deps = wait_;
    if (last_compute_) deps.push_back(*last_compute_);
    deps.insert(deps.end(), extra.begin(), extra.end());
    last_ = builder_.add(std::move(name), op.is_send ? streams_.transfer_send : streams_.transfer_receive, op, std::move(deps));
    return last_;
  }
  OpIndex memory(std::string tensor, MemoryCategory category, double bytes, bool allocate) {
    // Allocations happen before the next op runs: they take the pending dependencies.
    std::vector<OpIndex> deps = allocate ? std::exchange(wait_, {}) : std::vector<OpIndex>{};
    const OpIndex index = allocate ? builder_.allocate(std::move(tensor), streams_.compute, category, bytes, std::move(deps))
                                   : builder_.release(std::move(tensor), streams_.compute, category, bytes);
    last_compute_ = index;
    return index;
  }
  // The forward steps of a block, as a forward pass or as its recomputation in backward.
  void forward_steps(const Block& block, bool recompute, bool only_attention_core = false) {
    std::vector<std::optional<OpIndex>> index_of(block.forward.size());
    for (std::size_t i = 0; i < block.forward.size(); ++i) {
      const ForwardStep& step = block.forward[i];
      if (only_attention_core && !step.attention_core) continue;
      std::string name = recompute ? recompute_name(step.name) : step.name;
      std::vector<OpIndex> waits;
      for (std::size_t w : step.waits_for) {
        if (index_of[w]) waits.push_back(*index_of[w]);
      }
      if (step.compute) {
        program::ComputeOp op = *step.compute;
        if (recompute) op.phase = program::Phase::kRecompute;
        index_of[i] =
            compute(std::move(name), std::move(op), std::move(waits), step.chunk, step.transients);
      } else if (step.collective) {
        index_of[i] = collective(std::move(name), *step.collective, step.overlapped, step.chunk,
                                 std::move(waits), step.transients);
      } else if (step.transfer) {
        index_of[i] = transfer(std::move(name), *step.transfer, std::move(waits));
      }
    }
  }
  // An op put on the compute stream outside the emitter (after its last compute op): the next
  // collective follows it.
  void set_last_compute(OpIndex op) { last_compute_ = op; }
  OpIndex last() const { return last_; }
  std::vector<OpIndex> take_pending() { return std::exchange(wait_, {}); }

 private:
  static std::string recompute_name(const std::string& forward_name) {
    std::string name = forward_name;
    if (const auto at = name.find(".fwd."); at != std::string::npos) name.replace(at, 5, ".recompute.");
    return name;
  }

  // A step's transient tensors (Transients): allocated on the step's stream once what it waits
  // for is done, so that it starts when it would have; returns what the step then waits for.
  std::vector<OpIndex> allocate(const Transients& transients, program::StreamId stream,
                                std::vector<OpIndex> deps) {
    for (const TransientTensor& tensor : transients.allocated_before) {
      deps = {builder_.allocate(tensor.name, stream, MemoryCategory::kActivations, tensor.bytes,
                                std::move(deps))};
    }
    return deps;
  }
  // …and released on its stream once the step just added (last_) has run.
  void release(const Transients& transients, program::StreamId stream) {
    for (const TransientTensor& tensor : transients.released_after) {
      builder_.release(tensor.name, stream, MemoryCategory::kActivations, tensor.bytes, {last_});
    }
  }

  RankProgramBuilder& builder_;
  const Streams& streams_;
  std::vector<OpIndex> wait_;
  std::optional<OpIndex> last_compute_;
  bool in_run_ = false;                // emitting a run of chunks
  std::optional<OpIndex> run_after_;   // the compute op the run's collectives follow
  OpIndex last_ = 0;
};

// Activations a block keeps from its forward to its backward under a checkpointing policy.
double kept_bytes(const Block& block, Checkpointing checkpointing) {
  if (!block.layer || checkpointing == Checkpointing::kNone) return block.saved_bytes();
  if (checkpointing == Checkpointing::kFull) return block.input_bytes;
  return block.saved_bytes() - block.score_bytes();
}

}  // namespace

OpIndex emit_forward(RankProgramBuilder& builder, const std::vector<const Block*>& blocks, const Streams& streams,
                     Checkpointing checkpointing, std::vector<OpIndex> deps) {
  StepEmitter emit(builder, streams, std::move(deps));
  for (const Block* block : blocks) {
    emit.memory(block->name + ".activations", MemoryCategory::kActivations, kept_bytes(*block, checkpointing), true);
    emit.forward_steps(*block, false);
  }
  return emit.last();
}

OpIndex emit_backward(RankProgramBuilder& builder, const std::vector<const Block*>& blocks, const Streams& streams,
                      Checkpointing checkpointing, std::vector<OpIndex> deps, const GradientCallback& on_gradients) {
  StepEmitter emit(builder, streams, std::move(deps));
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    const Block& block = **it;
    const bool full = block.layer && checkpointing == Checkpointing::kFull;
    const bool selective = block.layer && checkpointing == Checkpointing::kSelective;
    if (full) {  // recompute the whole layer from its input
      emit.memory(block.name + ".recomputed_activations", MemoryCategory::kActivations, block.saved_bytes(), true);
      emit.forward_steps(block, true);
    }
    // Selective recompute: the attention core runs forward again before the first of its
    // backward ops, and its scores are freed after the last.
    std::size_t first_core = block.backward.size(), last_core = 0;
    for (std::size_t i = 0; i < block.backward.size(); ++i) {
      if (!block.backward[i].attention_core) continue;
      first_core = std::min(first_core, i);
      last_core = i;
    }
    std::vector<OpIndex> index_of(block.backward.size(), 0);
    for (std::size_t i = 0; i < block.backward.size(); ++i) {
      const BackwardStep& step = block.backward[i];
      if (selective && i == first_core) {  // recompute the attention core's scores (a ring's transfers too)
        emit.memory(block.name + ".recomputed_scores", MemoryCategory::kActivations, block.score_bytes(), true);
        emit.forward_steps(block, true, true);
      }
      std::vector<OpIndex> waits;
      for (std::size_t w : step.waits_for) waits.push_back(index_of[w]);
      if (const auto* collective = std::get_if<program::CollectiveOp>(&step.op)) {
        index_of[i] = emit.collective(step.name, *collective, step.overlapped, step.chunk,
                                      std::move(waits), step.transients);
      } else if (const auto* transfer = std::get_if<program::SendRecvOp>(&step.op)) {
        index_of[i] = emit.transfer(step.name, *transfer, std::move(waits));
      } else {
        index_of[i] = emit.compute(step.name, std::get<program::ComputeOp>(step.op),
                                   std::move(waits), step.chunk, step.transients);
        const std::optional<OpIndex> added =
            step.grads_ready.empty() ? std::nullopt : on_gradients(block, step, index_of[i]);
        if (added) emit.set_last_compute(*added);
      }
      if (selective && i == last_core) {
        emit.memory(block.name + ".recomputed_scores", MemoryCategory::kActivations, block.score_bytes(), false);
      }
    }
    emit.memory(block.name + ".activations", MemoryCategory::kActivations, kept_bytes(block, checkpointing), false);
    if (full) {
      emit.memory(block.name + ".recomputed_activations", MemoryCategory::kActivations, block.saved_bytes(), false);
    }
  }
  return emit.last();
}

namespace {

// Bytes per parameter of the optimizer's update of one weight of `w` bytes from a gradient of
// `g` bytes, with `moments` state tensors of `s` bytes each, pass by pass as each
// implementation's source writes it (a kernel reads and writes whole tensors: an in-place op
// reads and writes its tensor, an out-of-place op writes a new one):
//   fused     one kernel reads the gradient and every state and the weight, and writes the
//             states and the weight: g + 2·moments·s + 2w.
//   torch     torch/optim/adamw.py and adam.py as torch 2.x runs them on the GPU (the
//             _multi_tensor_ path, the default; the _single_tensor_ loop, foreach=False, runs the
//             same ops but AdamW's decay whatever wd), per parameter:
//               AdamW's decay      param.mul_(1 − lr·wd) when wd ≠ 0        2w
//               Adam's L2          grad = grad.add(param, alpha=wd) when wd ≠ 0   2g + w
//               first moment       exp_avg.lerp_(grad, 1 − β1)              2s + g
//               second moment      exp_avg_sq.mul_(β2).addcmul_(g, g)       4s + g
//               denominator        exp_avg_sq.sqrt(), / √bc2, .add_(eps)    6s
//               update             param.addcdiv_(exp_avg, denom)           2w + 2s
//             torch/optim/sgd.py: L2 (wd≠0) d_p.add(param) 2g + w; momentum buf.mul_(μ).add_(d_p)
//             4s + g; update param.add_(buf) 2w + s (without momentum param.add_(d_p): 2w + g).
//   composer  composer/optim/decoupled_weight_decay.py (DecoupledAdamW.adamw, DecoupledSGDW):
//             as torch's AdamW, but the first moment is exp_avg.mul_(β1).add_(grad), 4s + g;
//             SGDW decays the weight as AdamW does, then its momentum and update are torch's
//             SGD's.
double update_bytes_per_parameter(const TrainingSpec& training, int moments, double w, double g, double s) {
  if (training.optimizer_implementation == OptimizerImplementation::kFused) return g + 2 * moments * s + 2 * w;
  const bool composer = training.optimizer_implementation == OptimizerImplementation::kComposer;
  const bool adamw = training.optimizer == OptimizerKind::kAdamW;
  const double decay = training.weight_decay.value_or(adamw ? (composer ? 1e-5 : 0.01) : 0.0);
  // Decoupled (param.mul_) for AdamW and Composer's optimizers, an L2 term in the gradient
  // (grad.add(param)) for torch's Adam and SGD.
  const bool decoupled = composer || adamw;
  const double regularise = decay == 0 ? 0 : decoupled ? 2 * w : 2 * g + w;
  if (training.optimizer == OptimizerKind::kSgd) {
    return regularise + (moments > 0 ? 4 * s + g + 2 * w + s : 2 * w + g);
  }
  double bytes = regularise + (composer ? 4 * s + g : 2 * s + g);  // the first moment
  bytes += 4 * s + g;      // exp_avg_sq.mul_(β2).addcmul_(grad, grad)
  bytes += 6 * s;          // (exp_avg_sq.sqrt() / √bc2).add_(eps)
  bytes += 2 * w + 2 * s;  // param.addcdiv_(exp_avg, denom)
  return bytes;
}

}  // namespace

program::ComputeOp optimizer_update(double parameters, const ModelStateBytes& state, program::DType compute_dtype,
                                    const TrainingSpec& training) {
  // Per parameter, as Megatron-LM's mixed-precision optimizer steps (megatron/optimizer/
  // optimizer.py, Float16OptimizerWithFloat16Params.step, v2.5 onwards):
  //   * with fp32 master weights and low-precision gradients, the gradients are copied to fp32
  //     (`.float()`: one read, one fp32 write), and the update reads those;
  //   * clipping (clip_grads.py; torch.nn.utils.clip_grad_norm_, FSDP's clip_grad_norm_): the
  //     gradients read once for their L2 norm, then scaled in place (read, write) — PyTorch
  //     scales whatever the norm, Megatron-LM only above the threshold (then an upper bound).
  //     The norm's all-reduce over the ranks holding the gradients (one float) is left out;
  //   * the update (update_bytes_per_parameter) of the fp32 master weight, or of the weight,
  //     and then with a master its copy to the low-precision weight (read it again, write the
  //     copy: _copy_main_params_to_model_params).
  const bool master = state.master_weights > 0;
  const double gradients = master ? std::max(state.gradients, state.master_weights) : state.gradients;
  const double to_master_precision = gradients > state.gradients ? state.gradients + gradients : 0;
  const double clipping = training.clips_gradients() ? 3 * gradients : 0;
  const double weight = master ? state.master_weights : state.parameters;
  const double copy = master ? state.master_weights + state.parameters : 0;
  const int moments = training.optimizer == OptimizerKind::kSgd ? (state.optimizer_states > 0 ? 1 : 0) : 2;
  const double moment_bytes = moments > 0 ? state.optimizer_states / moments : 0;
  program::ComputeOp update;
  update.kind = program::ComputeKind::kOptimizer;
  update.phase = program::Phase::kOptimizer;
  update.dtype = state.master_weights > 0 ? program::DType::kFP32 : compute_dtype;
  update.shape = program::Shape::of({std::llround(parameters)});
  update.bytes = parameters * (to_master_precision + clipping + copy +
                               update_bytes_per_parameter(training, moments, weight, gradients, moment_bytes));
  return update;
}

void set_step_facts(program::ProgramInfo& info, const ModelSpec& model, const TrainingSpec& training,
                    std::int32_t replicas) {
  double forward_flops = 0;
  for (const Block& block : model_blocks(model, BlockShape{training.micro_batch, training.sequence,
                                                           compute_dtype(training.precision), {}})) {
    forward_flops += block.forward_flops();
  }
  info.steps = training.steps;
  info.tokens_per_step = training.global_batch * training.sequence;
  info.model_flops_per_step = 3 * forward_flops * static_cast<double>(training.accumulation) * replicas;
  info.compute_dtype = compute_dtype(training.precision);
}

}  // namespace strategies
