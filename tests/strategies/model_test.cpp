// Model presets: parameter counts of the published models, and the per-layer FLOPs and
// activation memory of the transformer op builders against their closed forms.
#include <gtest/gtest.h>

#include "strategies/model.h"
#include "strategies/transformer_ops.h"

namespace {

using strategies::ModelSpec;

TEST(ModelPresetTest, ParameterCountsMatchThePublishedModels) {
  // Hugging Face model cards / config-derived counts of the released checkpoints.
  EXPECT_EQ(strategies::architecture_parameters(*strategies::model_preset("llama-2-7b")), 6'738'415'616);
  EXPECT_EQ(strategies::architecture_parameters(*strategies::model_preset("llama-2-70b")), 68'976'648'192);
  EXPECT_EQ(strategies::architecture_parameters(*strategies::model_preset("llama-3-8b")), 8'030'261'248);
  // GPT-3 paper, table 2.1: 175.0 B.
  EXPECT_NEAR(static_cast<double>(strategies::architecture_parameters(*strategies::model_preset("gpt3-175b"))),
              175.0e9, 0.005 * 175.0e9);
}

TEST(ModelPresetTest, NominalParameterCountScalesParameterSizedQuantities) {
  ModelSpec model = *strategies::model_preset("llama-2-7b");
  EXPECT_DOUBLE_EQ(strategies::parameter_scale(model), 1.0);
  model.parameter_count = 7e9;
  EXPECT_DOUBLE_EQ(strategies::total_parameters(model), 7e9);
  EXPECT_NEAR(strategies::parameter_scale(model), 7e9 / 6'738'415'616.0, 1e-15);
}

TEST(TransformerOpsTest, BlockParametersAddUpToTheModel) {
  for (const auto& name : strategies::model_preset_names()) {
    const ModelSpec model = *strategies::model_preset(name);
    std::int64_t total = 0;
    for (const auto& block : strategies::model_blocks(model, {1, 128, program::DType::kBF16})) {
      for (const auto& param : block.params) total += param.elements;
    }
    EXPECT_EQ(total, strategies::architecture_parameters(model)) << name;
  }
}

TEST(TransformerOpsTest, LayerMatmulFlopsAreTwicePerTokenWeights) {
  // Llama layers have no biases: every non-norm parameter is a matmul weight, used once per
  // token in forward: 2 FLOPs per parameter per token.
  const ModelSpec model = *strategies::model_preset("llama-2-7b");
  const std::int64_t b = 2, s = 512;
  const auto block = strategies::transformer_layer_block(model, {b, s, program::DType::kBF16}, 0);
  double matmul = 0;
  for (const auto& step : block.forward) {
    if (step.op.kind == program::ComputeKind::kMatmul) matmul += step.op.flops;
  }
  const double weights = static_cast<double>(strategies::layer_parameters(model) - 2 * model.hidden);
  EXPECT_DOUBLE_EQ(matmul, 2.0 * static_cast<double>(b * s) * weights);
}

TEST(TransformerOpsTest, AttentionFlopsAreFourBSSquaredH) {
  ModelSpec model = *strategies::model_preset("llama-2-7b");
  const std::int64_t b = 1, s = 1024;
  auto attention_flops = [&] {
    for (const auto& step : strategies::transformer_layer_block(model, {b, s, program::DType::kBF16}, 0).forward) {
      if (step.op.kind == program::ComputeKind::kAttention) return step.op.flops;
    }
    return 0.0;
  };
  model.causal = false;
  EXPECT_DOUBLE_EQ(attention_flops(), 4.0 * b * s * s * model.hidden);
  model.causal = true;  // fused kernels skip the masked half
  EXPECT_DOUBLE_EQ(attention_flops(), 2.0 * b * s * s * model.hidden);
}

TEST(TransformerOpsTest, BackwardOfAMatmulIsTwoMatmulsOfTheSameFlops) {
  const ModelSpec model = *strategies::model_preset("llama-2-7b");
  const auto block = strategies::transformer_layer_block(model, {1, 256, program::DType::kBF16}, 3);
  double forward_matmul = 0, backward_matmul = 0;
  for (const auto& step : block.forward) {
    if (step.op.kind == program::ComputeKind::kMatmul) forward_matmul += step.op.flops;
  }
  for (const auto& step : block.backward) {
    if (step.op.kind == program::ComputeKind::kMatmul) backward_matmul += step.op.flops;
  }
  EXPECT_DOUBLE_EQ(backward_matmul, 2 * forward_matmul);
  EXPECT_EQ(block.backward.front().name, "layer3.bwd.mlp_down.dgrad");  // reverse order
  EXPECT_EQ(block.backward.back().name, "layer3.bwd.attn_norm");
}

TEST(TransformerOpsTest, GptLayerActivationsFollowKorthikanti) {
  // GPT layer, standard attention, dropout, fp16: Korthikanti et al. (MLSys 2023) eq. (1):
  // s·b·h·(34 + 5·a·s/h) bytes, plus the two LayerNorms' fp32 mean and 1/σ per token that the
  // paper neglects (2 norms × 8 bytes × s·b).
  ModelSpec model = *strategies::model_preset("gpt3-175b");
  model.attention = strategies::AttentionKind::kStandard;
  model.dropout = true;
  const double s = 2048, b = 2, h = static_cast<double>(model.hidden), a = static_cast<double>(model.heads);
  const auto block = strategies::transformer_layer_block(
      model, {static_cast<std::int64_t>(b), static_cast<std::int64_t>(s), program::DType::kFP16}, 0);
  const double expected = s * b * h * (34 + 5 * a * s / h) + 2 * 8 * s * b;
  EXPECT_DOUBLE_EQ(block.saved_bytes(), expected);
}

TEST(TransformerOpsTest, FlashAttentionActivationsGrowLinearlyWithSequence) {
  const ModelSpec model = *strategies::model_preset("llama-2-7b");
  const double short_seq =
      strategies::transformer_layer_block(model, {1, 1024, program::DType::kBF16}, 0).saved_bytes();
  const double long_seq =
      strategies::transformer_layer_block(model, {1, 4096, program::DType::kBF16}, 0).saved_bytes();
  EXPECT_DOUBLE_EQ(long_seq, 4 * short_seq);
}

}  // namespace
