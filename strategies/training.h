// How the model is trained: batch, precision, optimizer, parallel layout and the DDP knobs.
//
// Precision decides the dtype and size of every model state (bytes per parameter):
//   mixed  bf16 weights 2 + bf16 gradients 2 + fp32 master weights 4 + fp32 optimizer
//          states 4 each (Adam: m and v) — the chapter's 16 bytes/parameter (§6.2.7, table 6-3);
//   bf16 / fp16   everything in that dtype, no master copy (Adam: 2 + 2 + 2·2 = 8);
//   fp32          everything in fp32, no master copy (Adam: 4 + 4 + 2·4 = 16);
//   fp8    Transformer Engine's FP8 training: model states as mixed (16 bytes/parameter), the
//          transformer layers' linear GEMMs on FP8 tensor cores (transformer_ops.h).
// Optimizers: Adam/AdamW keep two moments, SGD with momentum one, plain SGD none.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strategies/model.h"
#include "strategies/program/program.h"

namespace strategies {

enum class Precision { kMixed, kBF16, kFP16, kFP32, kFP8 };
// Activation checkpointing (Korthikanti et al., MLSys 2023): none; full — keep each layer's
// input, recompute the layer in backward; selective — recompute only the attention core.
enum class Checkpointing { kNone, kFull, kSelective };
enum class OptimizerKind { kAdam, kAdamW, kSgd };
// How the optimizer step's kernels are written (training_step.cpp, optimizer_update, counts each
// one's bytes): fused — one pass over the parameters (apex/Transformer Engine FusedAdam as
// Megatron-LM and DeepSpeed run it, torch.optim with fused=True); torch — torch.optim's Adam,
// AdamW and SGD as its default foreach path runs them on the GPU (torch 2.x), one kernel per
// elementwise op; composer — MosaicML Composer's DecoupledAdamW and DecoupledSGDW, a loop of
// the same kind of ops over the parameters.
enum class OptimizerImplementation { kFused, kTorch, kComposer };

// Scenario spellings of the enums below: named_values<T>() lists them (specialised in
// training.cpp for each enum); from_name and name_of look one up.
template <typename T>
struct NamedValue {
  std::string_view name;
  T value;
};
template <typename T>
std::span<const NamedValue<T>> named_values();
template <typename T>
std::optional<T> from_name(std::string_view name) {
  for (const auto& [key, value] : named_values<T>()) {
    if (key == name) return value;
  }
  return std::nullopt;
}
template <typename T>
std::string_view name_of(T value) {
  for (const auto& [key, entry] : named_values<T>()) {
    if (entry == value) return key;
  }
  return "?";
}
template <typename T>
std::vector<std::string> names_of() {
  std::vector<std::string> names;
  for (const auto& entry : named_values<T>()) names.emplace_back(entry.name);
  return names;
}

struct TrainingSpec {
  std::int64_t global_batch = 1;  // sequences per optimizer step, all replicas together
  std::int64_t micro_batch = 1;   // sequences per forward/backward on one replica
  std::int64_t accumulation = 1;  // micro-steps per optimizer step
  std::int64_t sequence = 0;      // tokens per sequence
  Precision precision = Precision::kMixed;
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  double sgd_momentum = 0.9;      // SGD only; 0 means plain SGD (no state)
  OptimizerImplementation optimizer_implementation = OptimizerImplementation::kFused;
  // Unset: the optimizer's own default (torch's AdamW 0.01, Composer's DecoupledAdamW 1e-5, Adam
  // and SGD 0). Only the unfused implementations price it, as a decay pass (AdamW, Composer) or
  // an L2 term in the gradient (torch's Adam and SGD), and skip it when it is 0.
  std::optional<double> weight_decay;
  std::int32_t steps = 1;         // optimizer steps to simulate
  Checkpointing checkpointing = Checkpointing::kNone;
  // Largest global gradient norm; 0: no clipping (PyTorch's default; Megatron-LM's --clip-grad
  // is 1.0 by default, as are most LLM recipes').
  double gradient_clipping = 0;
  bool clips_gradients() const { return gradient_clipping > 0; }
};

// Bytes per parameter of each model state under a precision and optimizer.
struct ModelStateBytes {
  double parameters = 0;
  double gradients = 0;
  double master_weights = 0;
  double optimizer_states = 0;
  double total() const { return parameters + gradients + master_weights + optimizer_states; }
};
ModelStateBytes model_state_bytes(const TrainingSpec& training);

program::DType compute_dtype(Precision precision);
// mixed and fp8 keep fp32 master weights and optimizer states beside bf16 weights.
bool keeps_fp32_master(Precision precision);
program::DType gradient_dtype(Precision precision);

enum class PipelineSchedule { kGPipe, kOneFOneB, kInterleaved };
// Context parallelism's attention (transformer_ops.h, ContextParallel): ring attention's KV
// blocks passed round the cp ranks (Megatron-Core's --cp-comm-type p2p), DeepSpeed-Ulysses'
// all-to-alls from a split sequence to split heads and back (a2a), or the whole sequence's K and
// V all-gathered before attention, as Llama 3 trained (allgather).
enum class ContextParallelScheme { kRing, kUlysses, kAllGather };

struct ParallelSpec {
  std::string strategy = "ddp";  // ddp, zero, fsdp (data parallelism flavour) or ps
  std::int32_t dp = 1;
  std::int32_t tp = 1;
  std::int32_t pp = 1;
  bool sequence_parallel = false;
  bool sp_regather = true;  // Megatron: keep sequence-sharded inputs, gather them again in backward
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  std::int32_t virtual_stages = 1;  // interleaved 1F1B: model chunks per pipeline rank (v)
  // The embedding and the loss (output layer) each take a layer's place when the layers are split
  // over the pipeline (Megatron-Core's --account-for-embedding-in-pipeline-split and
  // --account-for-loss-in-pipeline-split): the first (last) virtual stage builds one layer fewer.
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  // Megatron-LM waits for every pipeline send and receive before its next compute
  // (p2p_communication.py: batch_isend_irecv in the pipeline group, then req.wait()); false lets
  // transfers run beside compute, as --overlap-p2p-comm does for the interleaved schedule, each a
  // lone isend/irecv in a communicator of its two ranks.
  bool pipeline_p2p_blocking = true;
  // SC'21's scatter/gather: with tp > 1 (and no sequence parallelism) each tensor-parallel rank
  // sends 1/t of the activation to the next stage, which all-gathers it over NVLink
  // (Megatron-LM v2 --scatter-gather-tensors-in-pipeline, on by default there; Megatron-Core
  // dropped it).
  bool pipeline_scatter_gather = false;
  // Megatron-Core's --tp-comm-overlap (needs sequence parallelism): tensor-parallel all-gathers
  // and reduce-scatters pipelined in chunks with the GEMMs beside them (TensorParallel).
  bool tp_comm_overlap = false;
  // Expert parallelism (MoE models): the data-parallel ranks split into groups of ep, each group
  // holding every routed expert once (transformer_ops.h, ExpertParallel); expert gradients are
  // synchronised over the dp/ep ranks holding the same experts (Megatron-Core's expert data
  // parallelism), everything else over dp as before.
  std::int32_t ep = 1;
  bool moe_shared_expert_overlap = false;  // Megatron-Core's --moe-shared-expert-overlap
  // Context parallelism: each sequence split over cp ranks (layout.h), which together hold one
  // replica's activations; gradients are reduced over the dp × cp ranks holding the same
  // parameters, as Megatron-Core's data-parallel-with-cp group does.
  std::int32_t cp = 1;
  ContextParallelScheme cp_scheme = ContextParallelScheme::kRing;
  std::int32_t gpus_per_node = 8;  // placement, for groups that follow node boundaries
  std::int32_t world() const { return dp * tp * pp * cp; }
  // Ranks holding the same (dense) parameters: what data parallelism reduces and shards over.
  std::int32_t data_parallel_ranks() const { return dp * cp; }
};

// ZeRO (Rajbhandari et al., SC 2020): stage 1 shards the optimizer states over the data-parallel
// ranks, stage 2 the gradients too, stage 3 the parameters too.
//   deepspeed  the paper's and DeepSpeed's accounting: the fp32 master weights are part of the
//              optimizer states (4Ψ + 12Ψ/N at stage 1); gradients are reduce-scattered.
//   pytorch    torch.distributed.optim.ZeroRedundancyOptimizer (stage 1 only), as the chapter
//              uses it: the optimizer's moments are sharded, the master weights of the
//              mixed-precision setup stay replicated (the chapter's 14 + 14 + 28 + 56/N GB for
//              7B); DDP still all-reduces the gradients, then each rank sends its updated shard.
enum class ZeroImplementation { kDeepSpeed, kPyTorch };
struct ZeroSpec {
  std::int32_t stage = 1;
  ZeroImplementation implementation = ZeroImplementation::kDeepSpeed;
  // Megatron's --overlap-param-gather (distributed optimizer): the updated parameters are
  // all-gathered bucket by bucket during the next forward, each bucket's gather started when the
  // forward reaches the bucket before it (megatron/core/distributed: forward pre-hooks); off,
  // every bucket is gathered right after the optimizer step, before the next forward.
  bool overlap_param_gather = false;
};

// PyTorch FullyShardedDataParallel's knobs (torch.distributed.fsdp).
enum class ShardingStrategy { kFullShard, kShardGradOp, kNoShard, kHybridShard };
enum class BackwardPrefetch { kBackwardPre, kBackwardPost, kNone };
struct FsdpSpec {
  ShardingStrategy sharding = ShardingStrategy::kFullShard;
  double min_num_params = 0;  // 0: one unit per transformer layer; else layers grouped until this many
  BackwardPrefetch backward_prefetch = BackwardPrefetch::kBackwardPre;
  bool forward_prefetch = false;
  bool limit_all_gathers = true;       // at most two units' parameters gathered at once
  bool reshard_after_forward = true;   // free gathered parameters after forward (FSDP2 knob)
  std::optional<program::DType> param_dtype;   // default: the compute dtype
  std::optional<program::DType> reduce_dtype;  // default: param_dtype
  bool cpu_offload = false;            // parameters, gradients and optimizer on the host
  // PyTorch's ProcessGroupNCCL runs every collective of a process group on one internal NCCL
  // stream, so FSDP's all-gathers and reduce-scatters over the shard group run one at a time in
  // the order the CPU issued them (pytorch/pytorch#65299, closed as expected: one process group
  // runs a single NCCL stream; #186335, 2026: the default serializes them on the wire). True:
  // the reduce-scatter has a process group of its own and runs beside the all-gathers (FSDP2's
  // set_separate_reduce_scatter_group, fairscale's process_group_reduce_scatter).
  bool separate_reduce_scatter_group = false;
};

// Parameter-server consistency (chapter §6.2.1; Ho et al., NIPS 2013 for SSP):
//   bsp  every worker pushes, the servers aggregate and update once, every worker pulls;
//   ssp  each push is applied as it arrives; a worker may run at most `staleness` steps ahead
//        of the slowest (its pull waits for everyone's push from `staleness` steps back);
//   asp  each push is applied as it arrives, no waiting.
enum class PsConsistency { kBsp, kSsp, kAsp };
struct PsSpec {
  PsConsistency consistency = PsConsistency::kBsp;
  std::int32_t staleness = 3;  // SSP's bound s
};

// PyTorch DistributedDataParallel's knobs (torch.nn.parallel.DistributedDataParallel).
struct DdpSpec {
  double bucket_cap_mb = 25;     // MiB, PyTorch's default
  double first_bucket_mb = 1;    // MiB, torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES
  bool gradient_as_bucket_view = false;  // false: buckets are a second copy of the gradients
  bool no_sync = true;           // all-reduce only on the last micro-step of accumulation
  bool barrier_every_step = false;  // the chapter's anti-pattern (§6.2.5)
  // true: buckets are all-reduced as backward fills them (PyTorch DDP, Megatron-LM's
  // --overlap-grad-reduce); false: one all-reduce of every gradient after the whole backward,
  // as Megatron-LM's "local" DDP did before it had that flag (megatron/training.py, train_step:
  // model_module.allreduce_gradients() after forward_backward_func, 2021).
  bool overlap_grad_reduce = true;
  // false: under gradient accumulation autograd adds each micro-batch's weight gradients to the
  // ones held (AccumulateGrad's in-place add: two gradients read, one written) for every
  // micro-batch after the first; true: the weight-gradient GEMM accumulates into the gradient
  // buffer itself (Megatron-LM's --gradient-accumulation-fusion), no separate pass.
  bool gradient_accumulation_fusion = false;
};

// The places the pipeline splits: the model's layers, and one each for the embedding and the
// loss where `parallel` accounts for them.
std::int64_t pipeline_split_places(std::int64_t layers, const ParallelSpec& parallel);
// The transformer layers [begin, end) of virtual stage `virtual_stage` of `virtual_stages` (pp ×
// chunks; chunk c of pipeline rank s is virtual stage c·pp + s): the places split as evenly as
// they go, place k·P/V to (k+1)·P/V for P places and V virtual stages, the embedding's place
// first and the loss's last — Megatron-Core's split (transformer_block.py,
// get_num_layers_to_build), which requires P/V whole; dtsim also takes an uneven split.
struct LayerRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};
LayerRange pipeline_chunk_layers(std::int64_t layers, std::int64_t virtual_stage,
                                 std::int64_t virtual_stages, const ParallelSpec& parallel);

template <>
std::span<const NamedValue<Precision>> named_values();
template <>
std::span<const NamedValue<OptimizerKind>> named_values();
template <>
std::span<const NamedValue<Checkpointing>> named_values();
template <>
std::span<const NamedValue<ExpertLoad>> named_values();
template <>
std::span<const NamedValue<ContextParallelScheme>> named_values();
template <>
std::span<const NamedValue<PipelineSchedule>> named_values();
template <>
std::span<const NamedValue<ShardingStrategy>> named_values();
template <>
std::span<const NamedValue<BackwardPrefetch>> named_values();
template <>
std::span<const NamedValue<ZeroImplementation>> named_values();
template <>
std::span<const NamedValue<PsConsistency>> named_values();

}  // namespace strategies
