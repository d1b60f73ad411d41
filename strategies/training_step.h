// Pieces every lowering shares: allocating model states, emitting one micro-batch's forward
// and backward over a list of blocks — compute on the compute stream, tensor-parallel
// collectives on their own stream, activation memory allocated and freed, layers recomputed
// under activation checkpointing — the optimizer update, and the Program's summary facts.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strategies/model.h"
#include "strategies/program_builder.h"
#include "strategies/training.h"
#include "strategies/transformer_ops.h"

namespace strategies {

// The model as one replica trains it: dtypes, blocks for one micro-batch, parameter count
// and model-state bytes per parameter.
struct ReplicaModel {
  program::DType dtype = program::DType::kBF16;           // compute and weights
  program::DType gradient_dtype = program::DType::kBF16;
  std::vector<Block> blocks;
  double parameters = 0;
  ModelStateBytes state;
};
ReplicaModel replica_model(const ModelSpec& model, const TrainingSpec& training,
                           const TensorParallel& tensor_parallel = {}, bool head_embedding_copy = false,
                           const ExpertParallel& expert_parallel = {}, const ContextParallel& context_parallel = {});

// Which model states a rank holds, as a fraction of the model (1 = all of it).
struct StateShares {
  double parameters = 1;
  double gradients = 1;
  double master_weights = 1;
  double optimizer_states = 1;
};

// The shares a data-parallel rank keeps under ZeRO `stage` (0: plain replication) over `ranks`
// (Rajbhandari et al., "ZeRO", SC'20, §5): optimizer states from stage 1, gradients from stage
// 2, and the fp32 master weights from stage 1 only where the implementation shards them
// (DeepSpeed and Megatron's distributed optimizer do; PyTorch's ZeroRedundancyOptimizer does not).
StateShares zero_shares(std::int32_t stage, bool shards_master_weights, std::int32_t ranks);
// Bytes per parameter a rank keeps of `state` at `shares`.
double kept_bytes_per_parameter(const ModelStateBytes& state, const StateShares& shares);

// Allocates the model states (`parameters` × bytes per parameter × share) on `stream`, each
// tensor named `prefix` + its state ("parameters", "gradients", …).
void allocate_model_states(RankProgramBuilder& builder, program::StreamId stream, double parameters,
                           const ModelStateBytes& state, const StateShares& shares, const std::string& prefix = "");

struct Streams {
  program::StreamId compute = 0;
  program::StreamId tensor_parallel = 0;  // used only when blocks hold TP collectives
  // Collectives over these groups on their own streams: the expert dispatch and combine apart
  // from the tensor-parallel collectives shared experts run beside them, Ulysses' all-to-alls.
  // Any other group's collectives go on the tensor-parallel stream.
  std::vector<std::pair<program::GroupFamilyId, program::StreamId>> group_streams = {};
  // Ring attention's KV blocks: sends and receives on streams of their own, beside the compute.
  program::StreamId transfer_send = 0;
  program::StreamId transfer_receive = 0;
};

// Forward of `blocks` in order for one micro-batch: each block's activations are allocated
// before its first op (only its input for a layer under full checkpointing). The first op
// depends on `deps`; a compute op waits for the tensor-parallel collective just before it.
// Returns the index of the last op.
program::OpIndex emit_forward(RankProgramBuilder& builder, const std::vector<const Block*>& blocks,
                              const Streams& streams, Checkpointing checkpointing,
                              std::vector<program::OpIndex> deps);

// Backward of `blocks` in reverse, recomputing what checkpointing dropped first; frees each
// block's activations after it. Calls `on_gradients(block, step, op)` after each backward op
// that completes parameter gradients; what it returns is an op it put on the compute stream
// after `op` (the gradients' accumulation), which the next collective waits for as for any
// compute op before it — PyTorch issues a collective from the compute stream, behind all it
// holds. The first op depends on `deps`. Returns the index of the last backward op.
using GradientCallback = std::function<std::optional<program::OpIndex>(
    const Block&, const BackwardStep&, program::OpIndex)>;
program::OpIndex emit_backward(RankProgramBuilder& builder, const std::vector<const Block*>& blocks,
                               const Streams& streams, Checkpointing checkpointing,
                               std::vector<program::OpIndex> deps, const GradientCallback& on_gradients);

// The optimizer step over `parameters` parameters as one memory-bound op: gradients brought
// to the master weights' precision, clipped when the training clips them, then the update of
// the optimizer states and weights as training.optimizer_implementation writes it
// (training_step.cpp counts each pass's bytes).
program::ComputeOp optimizer_update(double parameters, const ModelStateBytes& state,
                                    program::DType compute_dtype, const TrainingSpec& training);

// Tokens and model FLOPs per step (forward + backward at twice the forward of the whole,
// unsharded model; recomputation is not counted — PaLM's model FLOPs) for `replicas`
// data-parallel replicas.
void set_step_facts(program::ProgramInfo& info, const ModelSpec& model, const TrainingSpec& training,
                    std::int32_t replicas);

}  // namespace strategies
