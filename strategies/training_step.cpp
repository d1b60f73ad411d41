// Shared lowering pieces (see training_step.h).
#include "strategies/training_step.h"

#include <cmath>
#include <utility>

namespace strategies {

using program::MemoryCategory;

ReplicaModel replica_model(const ModelSpec& model, const TrainingSpec& training) {
  ReplicaModel replica;
  replica.dtype = compute_dtype(training.precision);
  replica.gradient_dtype = gradient_dtype(training.precision);
  replica.blocks = model_blocks(model, BlockShape{training.micro_batch, training.sequence, replica.dtype});
  replica.parameters = total_parameters(model);
  replica.state = model_state_bytes(training);
  return replica;
}

void allocate_model_states(RankProgramBuilder& builder, program::StreamId stream, double parameters,
                           const ModelStateBytes& state, const StateShares& shares) {
  auto allocate = [&](const char* name, MemoryCategory category, double bytes_per_parameter,
                      double share) {
    const double bytes = parameters * bytes_per_parameter * share;
    if (bytes > 0) builder.allocate(name, stream, category, bytes);
  };
  allocate("parameters", MemoryCategory::kParameters, state.parameters, shares.parameters);
  allocate("gradients", MemoryCategory::kGradients, state.gradients, shares.gradients);
  allocate("master_weights", MemoryCategory::kMasterWeights, state.master_weights,
           shares.master_weights);
  allocate("optimizer_states", MemoryCategory::kOptimizerStates, state.optimizer_states,
           shares.optimizer_states);
}

program::OpIndex emit_forward(RankProgramBuilder& builder, const std::vector<Block>& blocks,
                              program::StreamId stream, std::vector<program::OpIndex> deps) {
  program::OpIndex last = 0;
  for (const Block& block : blocks) {
    builder.allocate(block.name + ".activations", stream, MemoryCategory::kActivations,
                     block.saved_bytes(), std::exchange(deps, {}));
    for (const ForwardStep& forward : block.forward) last = builder.add(forward.name, stream, forward.op);
  }
  return last;
}

program::OpIndex emit_backward(RankProgramBuilder& builder, const std::vector<Block>& blocks,
                               program::StreamId stream, const GradientCallback& on_gradients) {
  program::OpIndex last = 0;
  for (auto block = blocks.rbegin(); block != blocks.rend(); ++block) {
    for (const BackwardStep& backward : block->backward) {
      last = builder.add(backward.name, stream, backward.op);
      if (!backward.grads_ready.empty()) on_gradients(*block, backward, last);
    }
    builder.release(block->name + ".activations", stream, MemoryCategory::kActivations,
                    block->saved_bytes());
  }
  return last;
}

program::ComputeOp optimizer_update(double parameters, const ModelStateBytes& state,
                                    program::DType compute_dtype) {
  // Per parameter: read the gradient, read and write each optimizer state, and either read and
  // write the fp32 master weight and write the low-precision copy, or read and write the weight.
  const double weights = state.master_weights > 0 ? 2 * state.master_weights + state.parameters
                                                  : 2 * state.parameters;
  program::ComputeOp update;
  update.kind = program::ComputeKind::kOptimizer;
  update.phase = program::Phase::kOptimizer;
  update.dtype = state.master_weights > 0 ? program::DType::kFP32 : compute_dtype;
  update.shape = program::Shape::of({std::llround(parameters)});
  update.bytes = parameters * (state.gradients + 2 * state.optimizer_states + weights);
  return update;
}

void set_step_facts(program::ProgramInfo& info, const TrainingSpec& training,
                    const std::vector<Block>& blocks, std::int32_t replicas) {
  double forward_flops = 0;
  for (const Block& block : blocks) forward_flops += block.forward_flops();
  info.steps = training.steps;
  info.tokens_per_step = training.global_batch * training.sequence;
  info.model_flops_per_step =
      3 * forward_flops * static_cast<double>(training.accumulation) * replicas;
  info.compute_dtype = compute_dtype(training.precision);
}

}  // namespace strategies
