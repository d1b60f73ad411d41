// How a data-parallel group keeps its model states and synchronises gradients — the part of a
// lowering that DDP, ZeRO and FSDP change (the pipeline and tensor parallelism around it stay).
//   DDP        full replicas; gradients all-reduced in buckets filled in the order backward
//              produces them (PyTorch's Reducer: ≥ bucket_cap_mb, the first ≥ first_bucket_mb),
//              each launched as soon as its last gradient is ready; no_sync under
//              accumulation. Model states 16Ψ for mixed-precision Adam.
//   ZeRO-1/2   full parameters during compute; gradients reduce-scattered in the same
//              buckets; each rank updates its 1/N of the optimizer states (stage 2 also keeps
//              only its 1/N of the gradients), then the updated parameters are all-gathered.
//              Model states 4Ψ + 12Ψ/N and 2Ψ + 14Ψ/N (Rajbhandari et al., SC 2020); traffic
//              2Ψ per step, as DDP's. PyTorch's ZeroRedundancyOptimizer (zero.implementation =
//              "pytorch") shards only the moments and keeps DDP's all-reduce: 3Ψ per step.
//   FSDP/ZeRO-3 parameters sharded too, per unit (a transformer layer, or layers grouped to
//              min_num_params; the embedding and head form the root unit): all-gather before
//              the unit's forward, free after it (reshard), all-gather again before its
//              backward, reduce-scatter its gradients after. Traffic 3Ψ (the chapter's 1.5×
//              DDP), model states 16Ψ/N. SHARD_GRAD_OP keeps the gathered parameters from forward
//              to backward (one all-gather); HYBRID_SHARD shards inside a node and all-reduces
//              the shards across nodes; prefetching, limit_all_gathers and CPU offload as in
//              PyTorch (data_parallel.cpp documents each).
// With expert parallelism (DDP and ZeRO-1/2 only) the routed experts' gradients fill their own
// buckets, reduced over the expert-data-parallel group, and their states are sharded over it,
// as Megatron-Core keeps a separate buffer for expert parameters.
#pragma once

#include <memory>
#include <vector>

#include "strategies/lowering.h"
#include "strategies/training_step.h"

namespace strategies {

// Streams and groups a data-parallel policy works with on one pipeline stage.
struct StageContext {
  const LoweringInput* input = nullptr;
  std::vector<const Block*> blocks;  // this stage's blocks, in forward order
  ReplicaModel* replica = nullptr;
  double parameters = 0;             // parameters this rank holds before any sharding
  // Of which routed experts' (ParamTensor::expert): synchronised and sharded over the
  // expert-data-parallel group of `expert_dp` ranks instead of the data-parallel group.
  double expert_parameters = 0;
  program::GroupFamilyId expert_dp_group = 0;
  std::int32_t expert_dp = 1;
  Streams streams;
  program::StreamId dp_reduce = 0;   // gradient all-reduce / reduce-scatter
  // Parameter all-gather: dp_reduce itself where both go over one process group (its
  // collectives run one at a time, in issue order: FsdpSpec::separate_reduce_scatter_group).
  program::StreamId dp_gather = 0;
  program::StreamId dp_replicate = 0;  // FSDP HYBRID_SHARD: the all-reduce across nodes
  program::StreamId host_to_device = 0;
  program::StreamId device_to_host = 0;
  program::GroupFamilyId dp_group = 0;
  program::GroupFamilyId world_group = 0;
  program::GroupFamilyId shard_group = 0;      // FSDP HYBRID_SHARD: inside a node
  program::GroupFamilyId replicate_group = 0;  // FSDP HYBRID_SHARD: across nodes
  // Whether this policy issues ddp.barrier_every_step's barrier: with interleaved model chunks,
  // only the chunk whose backward ends the step (chunk 0) does.
  bool issues_step_barrier = true;
  // The last micro-batch's gradient synchronisation waits for sync_gradients() instead of
  // following this chunk's own last backward: with interleaved model chunks and no
  // overlap_grad_reduce, Megatron-LM reduces every chunk's gradients once the whole pipeline
  // schedule has run (train_step: `for model_module in model: allreduce_gradients()` after
  // forward_backward_func returns, megatron/training.py).
  bool defer_gradient_sync = false;
};

class DataParallelPolicy {
 public:
  virtual ~DataParallelPolicy() = default;
  virtual void allocate_states(RankProgramBuilder& builder) = 0;
  // One micro-batch through the stage; `deps` gate its first op. Returns the last op.
  virtual program::OpIndex forward(RankProgramBuilder& builder, std::vector<program::OpIndex> deps) = 0;
  virtual program::OpIndex backward(RankProgramBuilder& builder, std::vector<program::OpIndex> deps,
                                    bool last_micro_batch) = 0;
  // With StageContext::defer_gradient_sync: the last micro-batch's gradient synchronisation,
  // after `after` (the rank's last backward op). Policies that synchronise as the backward goes
  // (FSDP's per-unit reduce-scatters) have nothing to defer.
  virtual void sync_gradients(RankProgramBuilder& /*builder*/, program::OpIndex /*after*/) {}
  // The optimizer step after the last backward, and after `before_update`; returns what the
  // next step's first forward must wait for.
  virtual std::vector<program::OpIndex> finish_step(RankProgramBuilder& builder,
                                                    std::vector<program::OpIndex> before_update) = 0;
};

std::unique_ptr<DataParallelPolicy> make_data_parallel_policy(const StageContext& context);

// Autograd's AccumulateGrad of `elements` gradients just computed into those held from an
// earlier micro-batch (DDP and ZeRO-1/2 without gradient_accumulation_fusion): an in-place add,
// reading both and writing one.
program::ComputeOp gradient_accumulation(double elements, program::DType dtype);

// FSDP's units of transformer layers, as ShardedPolicy wraps them (the root unit — every block
// that is not a layer — aside): consecutive layers, a unit closing once it holds min_num_params
// parameters (PyTorch's size_based_auto_wrap_policy), each layer its own unit when
// min_num_params <= 0. `layer_elements`: each layer's parameters, in forward order; returns the
// number of layers in each unit, in order.
std::vector<std::size_t> fsdp_layer_units(const std::vector<double>& layer_elements,
                                          double min_num_params);

// Megatron's overlapped parameter gather (zero.overlap_param_gather): a chunk's blocks in
// buckets of at least max(40M, 1M × dp) parameters (megatron/core/distributed/
// distributed_data_parallel.py's default bucket size), filled from the last block backward as
// its gradient buffer is. `block_elements`: each block's parameters, in forward order; returns
// the number of blocks in each bucket, in forward order.
std::vector<std::size_t> megatron_parameter_buckets(const std::vector<double>& block_elements,
                                                    std::int32_t dp);

struct GradientPass {
  const char* name;
  program::ComputeOp op;
};
// PyTorch FSDP's work on a unit's unsharded gradient of `elements` parameters before its
// reduce-scatter, in order (data_parallel.cpp, ShardedPolicy::prepare_gradients, has the
// sources): the flat-gradient copy, the cast to `reduce_dtype` when it differs from
// `param_dtype`, the pre-divide when `shards` > 1.
std::vector<GradientPass> fsdp_gradient_passes(double elements, program::DType param_dtype,
                                               program::DType reduce_dtype, std::int32_t shards);

}  // namespace strategies
