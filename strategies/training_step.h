// Pieces every data-parallel lowering shares: allocating model states, emitting one
// micro-batch's forward and backward over the model's blocks (with their activation memory),
// the optimizer update, and the Program's summary facts.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "strategies/model.h"
#include "strategies/program_builder.h"
#include "strategies/training.h"
#include "strategies/transformer_ops.h"

namespace strategies {

// The model as one data-parallel replica trains it: dtypes, blocks for one micro-batch,
// parameter count and model-state bytes per parameter.
struct ReplicaModel {
  program::DType dtype = program::DType::kBF16;           // compute and weights
  program::DType gradient_dtype = program::DType::kBF16;
  std::vector<Block> blocks;
  double parameters = 0;
  ModelStateBytes state;
};
ReplicaModel replica_model(const ModelSpec& model, const TrainingSpec& training);

// Which model states a rank holds, as a fraction of the model (1 = all of it).
struct StateShares {
  double parameters = 1;
  double gradients = 1;
  double master_weights = 1;
  double optimizer_states = 1;
};

// Allocates the model states (`parameters` × bytes per parameter × share) on `stream`.
void allocate_model_states(RankProgramBuilder& builder, program::StreamId stream, double parameters,
                           const ModelStateBytes& state, const StateShares& shares);

// Forward of every block in order. Each block's activations are allocated before its first op.
// The first op emitted depends on `deps`. Returns the index of the last op.
program::OpIndex emit_forward(RankProgramBuilder& builder, const std::vector<Block>& blocks,
                              program::StreamId stream, std::vector<program::OpIndex> deps);

// Backward of every block in reverse; frees each block's activations after it. Calls
// `on_gradients(block, step, op)` after each backward op that completes parameter gradients.
// Returns the index of the last backward compute op.
using GradientCallback = std::function<void(const Block&, const BackwardStep&, program::OpIndex)>;
program::OpIndex emit_backward(RankProgramBuilder& builder, const std::vector<Block>& blocks,
                               program::StreamId stream, const GradientCallback& on_gradients);

// The optimizer update of `parameters` parameters: a memory-bound pass reading the
// gradients and reading and writing the optimizer states and weights.
program::ComputeOp optimizer_update(double parameters, const ModelStateBytes& state,
                                    program::DType compute_dtype);

// Tokens and model FLOPs per step (forward + backward at twice the forward; recomputation
// is not counted — PaLM's model FLOPs) for `replicas` model replicas.
void set_step_facts(program::ProgramInfo& info, const TrainingSpec& training,
                    const std::vector<Block>& blocks, std::int32_t replicas);

}  // namespace strategies
