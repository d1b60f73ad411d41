// Precision and optimizer names, and model-state bytes per parameter (see training.h).
#include "strategies/training.h"

#include <algorithm>
#include <array>
#include <utility>

namespace strategies {

// The scenario spelling of every value, in the order docs/scenario.md lists them.
template <>
std::span<const NamedValue<Precision>> named_values() {
  static constexpr NamedValue<Precision> kValues[] = {
      {"mixed", Precision::kMixed}, {"bf16", Precision::kBF16}, {"fp16", Precision::kFP16}, {"fp32", Precision::kFP32},
      {"fp8", Precision::kFP8}};
  return kValues;
}
template <>
std::span<const NamedValue<OptimizerKind>> named_values() {
  static constexpr NamedValue<OptimizerKind> kValues[] = {
      {"adam", OptimizerKind::kAdam}, {"adamw", OptimizerKind::kAdamW}, {"sgd", OptimizerKind::kSgd}};
  return kValues;
}
template <>
std::span<const NamedValue<OptimizerImplementation>> named_values() {
  static constexpr NamedValue<OptimizerImplementation> kValues[] = {{"fused", OptimizerImplementation::kFused},
                                                                    {"torch", OptimizerImplementation::kTorch},
                                                                    {"composer", OptimizerImplementation::kComposer}};
  return kValues;
}
template <>
std::span<const NamedValue<ContextParallelScheme>> named_values() {
  static constexpr NamedValue<ContextParallelScheme> kValues[] = {
      {"ring", ContextParallelScheme::kRing},
      {"ulysses", ContextParallelScheme::kUlysses},
      {"all_gather", ContextParallelScheme::kAllGather}};
  return kValues;
}

template <>
std::span<const NamedValue<ExpertLoad>> named_values() {
  static constexpr NamedValue<ExpertLoad> kValues[] = {
      {"uniform", ExpertLoad::kUniform}, {"zipf", ExpertLoad::kZipf}, {"measured", ExpertLoad::kMeasured}};
  return kValues;
}

template <>
std::span<const NamedValue<Checkpointing>> named_values() {
  static constexpr NamedValue<Checkpointing> kValues[] = {
      {"none", Checkpointing::kNone}, {"full", Checkpointing::kFull}, {"selective", Checkpointing::kSelective}};
  return kValues;
}
template <>
std::span<const NamedValue<PipelineSchedule>> named_values() {
  static constexpr NamedValue<PipelineSchedule> kValues[] = {
      {"1f1b", PipelineSchedule::kOneFOneB}, {"gpipe", PipelineSchedule::kGPipe},
      {"interleaved-1f1b", PipelineSchedule::kInterleaved}};
  return kValues;
}
template <>
std::span<const NamedValue<ShardingStrategy>> named_values() {
  static constexpr NamedValue<ShardingStrategy> kValues[] = {{"FULL_SHARD", ShardingStrategy::kFullShard},
                                                             {"SHARD_GRAD_OP", ShardingStrategy::kShardGradOp},
                                                             {"NO_SHARD", ShardingStrategy::kNoShard},
                                                             {"HYBRID_SHARD", ShardingStrategy::kHybridShard}};
  return kValues;
}
template <>
std::span<const NamedValue<BackwardPrefetch>> named_values() {
  static constexpr NamedValue<BackwardPrefetch> kValues[] = {{"BACKWARD_PRE", BackwardPrefetch::kBackwardPre},
                                                             {"BACKWARD_POST", BackwardPrefetch::kBackwardPost},
                                                             {"NONE", BackwardPrefetch::kNone}};
  return kValues;
}
template <>
std::span<const NamedValue<ZeroImplementation>> named_values() {
  static constexpr NamedValue<ZeroImplementation> kValues[] = {{"deepspeed", ZeroImplementation::kDeepSpeed},
                                                               {"pytorch", ZeroImplementation::kPyTorch}};
  return kValues;
}
template <>
std::span<const NamedValue<PsConsistency>> named_values() {
  static constexpr NamedValue<PsConsistency> kValues[] = {
      {"bsp", PsConsistency::kBsp}, {"ssp", PsConsistency::kSsp}, {"asp", PsConsistency::kAsp}};
  return kValues;
}

program::DType compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::kFP16: return program::DType::kFP16;
    case Precision::kFP32: return program::DType::kFP32;
    default: return program::DType::kBF16;
  }
}

program::DType gradient_dtype(Precision precision) { return compute_dtype(precision); }

bool keeps_fp32_master(Precision precision) { return precision == Precision::kMixed || precision == Precision::kFP8; }

ModelStateBytes model_state_bytes(const TrainingSpec& training) {
  ModelStateBytes bytes;
  const double weight = static_cast<double>(program::dtype_bytes(compute_dtype(training.precision)));
  bytes.parameters = weight;
  bytes.gradients = weight;
  const bool mixed = keeps_fp32_master(training.precision);
  bytes.master_weights = mixed ? 4 : 0;
  const double state = mixed ? 4 : weight;
  int moments = 0;
  switch (training.optimizer) {
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW: moments = 2; break;
    case OptimizerKind::kSgd: moments = training.sgd_momentum != 0 ? 1 : 0; break;
  }
  bytes.optimizer_states = moments * state;
  return bytes;
}

std::int64_t pipeline_split_places(std::int64_t layers, const ParallelSpec& parallel) {
  return layers + (parallel.account_for_embedding_in_pipeline_split ? 1 : 0) +
         (parallel.account_for_loss_in_pipeline_split ? 1 : 0);
}

LayerRange pipeline_chunk_layers(std::int64_t layers, std::int64_t virtual_stage,
                                 std::int64_t virtual_stages, const ParallelSpec& parallel) {
  const std::int64_t places = pipeline_split_places(layers, parallel);
  const std::int64_t embedding = parallel.account_for_embedding_in_pipeline_split ? 1 : 0;
  const auto layer_at = [&](std::int64_t place) {
    return std::clamp<std::int64_t>(place - embedding, 0, layers);
  };
  return {layer_at(places * virtual_stage / virtual_stages),
          layer_at(places * (virtual_stage + 1) / virtual_stages)};
}

}  // namespace strategies
