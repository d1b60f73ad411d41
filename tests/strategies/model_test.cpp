// Model presets: parameter counts of the published models, and the per-layer FLOPs and
// activation memory of the transformer op builders against their closed forms.
#include <gtest/gtest.h>

#include <algorithm>

#include "strategies/model.h"
#include "strategies/transformer_ops.h"

namespace {

using strategies::ModelSpec;

TEST(ModelPresetTest, ParameterCountsMatchThePublishedModels) {
  // Hugging Face model cards / config-derived counts of the released checkpoints.
  EXPECT_EQ(strategies::architecture_parameters(*strategies::model_preset("llama-2-7b")), 6'738'415'616);
  EXPECT_EQ(strategies::architecture_parameters(*strategies::model_preset("llama-2-70b")), 68'976'648'192);
  EXPECT_EQ(strategies::architecture_parameters(*strategies::model_preset("llama-3-8b")), 8'030'261'248);
  EXPECT_EQ(strategies::architecture_parameters(*strategies::model_preset("llama-3-70b")), 70'553'706'496);
  EXPECT_EQ(strategies::architecture_parameters(*strategies::model_preset("llama-3.1-405b")), 405'853'388'800);
  // GPT-3 paper, table 2.1: 175.0 B.
  EXPECT_NEAR(static_cast<double>(strategies::architecture_parameters(*strategies::model_preset("gpt3-175b"))),
              175.0e9, 0.005 * 175.0e9);
}

TEST(ModelPresetTest, MixtureOfExpertsPresetsMatchTheirModelCards) {
  // Totals and active (per-token) parameters as the model cards state them, to their rounding:
  // Mixtral-8x7B 46.7 B / 12.9 B (Jiang et al., 2024), Qwen1.5-MoE-A2.7B 14.3 B / 2.7 B.
  const auto billions = [](const char* name, bool active) {
    const ModelSpec model = *strategies::model_preset(name);
    return static_cast<double>(active ? strategies::active_parameters(model) : strategies::architecture_parameters(model)) / 1e9;
  };
  EXPECT_NEAR(billions("mixtral-8x7b", false), 46.7, 0.05);
  EXPECT_NEAR(billions("mixtral-8x7b", true), 12.9, 0.05);
  EXPECT_NEAR(billions("qwen1.5-moe-a2.7b", false), 14.3, 0.05);
  EXPECT_NEAR(billions("qwen1.5-moe-a2.7b", true), 2.7, 0.05);
  // DeepSeek-V3 technical report: 671 B total, 37 B activated per token (multi-token prediction
  // module excluded). "37B" is rounded to whole billions and the report does not say whether the
  // token-embedding table (0.93 B) counts: 36.6 B without it, 37.6 B with it, both within 1 B.
  EXPECT_NEAR(billions("deepseek-v3", false), 671.0, 0.5);
  EXPECT_NEAR(billions("deepseek-v3", true), 37.0, 1.0);
  EXPECT_EQ(strategies::model_preset("deepseek-v3")->moe_layers(), 58);  // the first 3 of 61 are dense
}

TEST(ModelPresetTest, AMoeLayerComputesTopKExpertsPerTokenNotAllOfThem) {
  // Forward matmul FLOPs of one Mixtral layer: 2 per token per weight it passes through — the
  // attention projections, the router and k of the E experts.
  const ModelSpec model = *strategies::model_preset("mixtral-8x7b");
  const std::int64_t b = 1, s = 4096;
  const auto block = strategies::transformer_layer_block(model, {b, s, program::DType::kBF16, {}}, 0);
  double matmul = 0;
  for (const auto& step : block.forward) {
    if (step.compute && step.compute->kind == program::ComputeKind::kMatmul) matmul += step.compute->flops;
  }
  const double h = 4096, kv = 1024, f = 14336, experts = 8, k = 2;
  const double weights = h * (h + 2 * kv) + h * h + h * experts + k * 3 * h * f;
  EXPECT_DOUBLE_EQ(matmul, 2.0 * static_cast<double>(b * s) * weights);
}

TEST(ModelPresetTest, RouterLoadIsSeededCappedAndDropsBeyondCapacity) {
  ModelSpec model = *strategies::model_preset("mixtral-8x7b");
  model.moe->load = strategies::ExpertLoad::kZipf;
  model.moe->zipf_exponent = 3.0;  // 1/H: the top expert would take 83 % of the copies
  const auto routing = strategies::expert_routing(model);
  EXPECT_EQ(routing.shares, strategies::expert_routing(model).shares);  // deterministic
  for (const auto& layer : routing.shares) {
    double sum = 0, top = 0;
    for (double share : layer) {
      sum += share;
      top = std::max(top, share);
    }
    EXPECT_NEAR(sum, 1.0, 1e-12);
    EXPECT_NEAR(top, 0.5, 1e-12);  // a token picks k = 2 distinct experts: none takes over 1/2
  }
  EXPECT_NE(routing.shares[0], routing.shares[1]);  // hot experts differ from layer to layer
  model.moe->capacity_factor = 1.0;  // each expert at most its balanced 1/8: the excess dropped
  for (const auto& layer : strategies::expert_routing(model).shares) {
    for (double share : layer) EXPECT_LE(share, 1.0 / 8 + 1e-15);
  }
  // Every copy measured on one expert: the others have no share to scale, so the excess over 1/2
  // is spread evenly over the seven (it was left on the one expert).
  model.moe->capacity_factor.reset();
  model.moe->load = strategies::ExpertLoad::kMeasured;
  model.moe->measured_fractions = {1, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<double> one_hot = strategies::expert_routing(model).shares[0];
  EXPECT_EQ(one_hot[0], 0.5);
  for (std::size_t e = 1; e < 8; ++e) EXPECT_NEAR(one_hot[e], 0.5 / 7, 1e-15);
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
    for (const auto& block : strategies::model_blocks(model, {1, 128, program::DType::kBF16, {}})) {
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
  const auto block = strategies::transformer_layer_block(model, {b, s, program::DType::kBF16, {}}, 0);
  double matmul = 0;
  for (const auto& step : block.forward) {
    if (step.compute && step.compute->kind == program::ComputeKind::kMatmul) matmul += step.compute->flops;
  }
  const double weights = static_cast<double>(strategies::layer_parameters(model, 0) - 2 * model.hidden);
  EXPECT_DOUBLE_EQ(matmul, 2.0 * static_cast<double>(b * s) * weights);
}

TEST(TransformerOpsTest, AttentionFlopsAreFourBSSquaredH) {
  ModelSpec model = *strategies::model_preset("llama-2-7b");
  const std::int64_t b = 1, s = 1024;
  auto attention_flops = [&] {
    for (const auto& step : strategies::transformer_layer_block(model, {b, s, program::DType::kBF16, {}}, 0).forward) {
      if (step.compute && step.compute->kind == program::ComputeKind::kAttention) return step.compute->flops;
    }
    return 0.0;
  };
  model.causal = false;
  EXPECT_DOUBLE_EQ(attention_flops(), 4.0 * b * s * s * model.hidden);
  model.causal = true;  // fused kernels skip the masked half
  EXPECT_DOUBLE_EQ(attention_flops(), 2.0 * b * s * s * model.hidden);
}

// Bytes a layer's forward (backward) compute op `name` moves, or -1 when it has none.
double forward_bytes(const strategies::Block& block, const std::string& name) {
  for (const auto& step : block.forward) {
    if (step.name == block.name + ".fwd." + name) return step.compute ? step.compute->bytes : -1.0;
  }
  return -1.0;
}
double backward_bytes(const strategies::Block& block, const std::string& name) {
  for (const auto& step : block.backward) {
    if (step.name == block.name + ".bwd." + name) return std::get<program::ComputeOp>(step.op).bytes;
  }
  return -1.0;
}

TEST(TransformerOpsTest, StandardAttentionCopiesTheContextBackToSequenceMajorAndConcatenatesQkvGradients) {
  // Megatron-LM's unfused attention leaves the P·V GEMM as [b·heads/t, s, d] and permutes it to
  // [s, b, h/t] with a copy; backward copies the gradient back: a read and a write of b·s·h/t
  // bf16 elements each way. FlashAttention writes [b, s, heads, d] directly: no copy.
  ModelSpec model = *strategies::model_preset("llama-2-7b");
  model.attention = strategies::AttentionKind::kStandard;
  const std::int64_t b = 2, s = 512, t = 4;
  strategies::BlockShape shape{b, s, program::DType::kBF16, {}};
  shape.tp.degree = t;
  const auto layer = strategies::transformer_layer_block(model, shape, 0);
  const double context = static_cast<double>(b * s * model.hidden / t) * 2;
  EXPECT_DOUBLE_EQ(forward_bytes(layer, "attention_context_permute"), 2 * context);
  EXPECT_DOUBLE_EQ(backward_bytes(layer, "attention_context_permute"), 2 * context);
  // Q, K and V are views of the QKV output (no forward op); backward concatenates their
  // gradients: a read and a write of b·s·3h/t (Llama-2-7B has as many KV heads as heads).
  EXPECT_LT(forward_bytes(layer, "qkv_split"), 0);
  EXPECT_DOUBLE_EQ(backward_bytes(layer, "qkv_split"), 2 * 3 * context);
  // FlashAttention needs no permute, but its kernel too returns dQ, dK and dV as three tensors.
  model.attention = strategies::AttentionKind::kFlash;
  const auto flash = strategies::transformer_layer_block(model, shape, 0);
  EXPECT_LT(forward_bytes(flash, "attention_context_permute"), 0);
  EXPECT_DOUBLE_EQ(backward_bytes(flash, "qkv_split"), 2 * 3 * context);
}

TEST(TransformerOpsTest, DropoutAndTheResidualAddAreOneKernelWhenFused) {
  // b·s·h elements after attention and after the MLP, bf16, one mask byte each. Fused: one kernel
  // reads the branch and the residual, writes the sum and the mask (3·2 + 1 bytes per element),
  // and its backward reads the gradient and the mask and writes one (2 + 1 + 2). Unfused:
  // dropout (2 + 2 + 1, backward the same), then the add (3 · 2, no backward kernel).
  ModelSpec model = *strategies::model_preset("llama-2-7b");
  model.dropout = true;
  const std::int64_t b = 2, s = 256;
  const double elements = static_cast<double>(b * s * model.hidden);
  const auto fused = strategies::transformer_layer_block(model, {b, s, program::DType::kBF16, {}}, 0);
  for (const char* branch : {"attn", "mlp"}) {
    EXPECT_DOUBLE_EQ(forward_bytes(fused, std::string(branch) + "_dropout_add"), 7 * elements) << branch;
    EXPECT_DOUBLE_EQ(backward_bytes(fused, std::string(branch) + "_dropout_add"), 5 * elements) << branch;
    EXPECT_LT(forward_bytes(fused, std::string(branch) + "_dropout"), 0) << branch;
  }
  model.fused_dropout_add = false;
  const auto unfused = strategies::transformer_layer_block(model, {b, s, program::DType::kBF16, {}}, 0);
  EXPECT_DOUBLE_EQ(forward_bytes(unfused, "attn_dropout"), 5 * elements);
  EXPECT_DOUBLE_EQ(backward_bytes(unfused, "attn_dropout"), 5 * elements);
  EXPECT_DOUBLE_EQ(forward_bytes(unfused, "attn_residual"), 6 * elements);
  EXPECT_LT(backward_bytes(unfused, "attn_residual"), 0);  // the gradient passes through
}

TEST(TransformerOpsTest, ABiasedLinearLayerSumsItsOutputGradientForTheBiasAfterItsWeightGradient) {
  // GPT-3 has biases: each of the four linear layers' backward ends with a sum over the b·s rows
  // of its b·s × n output gradient (read once, the n sums written), and the layer's parameter
  // gradients are complete after it. bf16, t = 2 with sequence parallelism: the column-parallel
  // layers (QKV, MLP up) sum b·s rows of n/t, the row-parallel ones (output projection, MLP
  // down), whose bias is added after the reduce-scatter, b·s/t rows of h.
  ModelSpec model = *strategies::model_preset("gpt3-175b");
  const std::int64_t b = 1, s = 256, t = 2, h = model.hidden, f = model.ffn_hidden;
  strategies::BlockShape shape{b, s, program::DType::kBF16, {}};
  shape.tp.degree = t;
  shape.tp.sequence_parallel = true;
  const auto layer = strategies::transformer_layer_block(model, shape, 0);
  const auto sum_bytes = [](double rows, double n) { return (rows + 1) * n * 2; };
  EXPECT_DOUBLE_EQ(backward_bytes(layer, "qkv.bias_grad"), sum_bytes(b * s, 3 * h / t));
  EXPECT_DOUBLE_EQ(backward_bytes(layer, "attn_out.bias_grad"), sum_bytes(b * s / t, h));
  EXPECT_DOUBLE_EQ(backward_bytes(layer, "mlp_up.bias_grad"), sum_bytes(b * s, f / t));
  EXPECT_DOUBLE_EQ(backward_bytes(layer, "mlp_down.bias_grad"), sum_bytes(b * s / t, h));
  for (std::size_t i = 0; i < layer.backward.size(); ++i) {
    const auto& step = layer.backward[i];
    if (step.name != "layer0.bwd.mlp_up.bias_grad") continue;
    EXPECT_EQ(std::get<program::ComputeOp>(step.op).kind, program::ComputeKind::kReduction);
    EXPECT_EQ(layer.backward[i - 1].name, "layer0.bwd.mlp_up.wgrad");
    EXPECT_TRUE(layer.backward[i - 1].grads_ready.empty());
    EXPECT_EQ(step.grads_ready.size(), 2u);  // the weight and the bias
  }
  // No bias, no sum (Llama). Under FP8 the sums stay (Megatron-Core adds these biases outside
  // Transformer Engine). Without sequence parallelism every layer sums all b·s rows.
  EXPECT_LT(backward_bytes(strategies::transformer_layer_block(*strategies::model_preset("llama-2-7b"), shape, 0),
                           "qkv.bias_grad"), 0);
  shape.fp8_linear = true;
  EXPECT_DOUBLE_EQ(backward_bytes(strategies::transformer_layer_block(model, shape, 0), "mlp_down.bias_grad"),
                   sum_bytes(b * s / t, h));
  shape.fp8_linear = false;
  // Tensor-parallel communication overlap splits the MLP down projection into t row chunks, each
  // summing its share of the b·s/t rows.
  shape.tp.comm_overlap = true;
  const auto chunked = strategies::transformer_layer_block(model, shape, 0);
  EXPECT_DOUBLE_EQ(backward_bytes(chunked, "mlp_down.chunk0.bias_grad") + backward_bytes(chunked, "mlp_down.chunk1.bias_grad"),
                   2 * sum_bytes(b * s / t / t, h));
  shape.tp.comm_overlap = false;
  shape.tp.sequence_parallel = false;
  const auto without_sp = strategies::transformer_layer_block(model, shape, 0);
  EXPECT_DOUBLE_EQ(backward_bytes(without_sp, "attn_out.bias_grad"), sum_bytes(b * s, h));
  EXPECT_DOUBLE_EQ(backward_bytes(without_sp, "mlp_down.bias_grad"), sum_bytes(b * s, h));
}

TEST(TransformerOpsTest, ARowParallelExpertsBiasGradientSumsItsShareOfTheRowsUnderSequenceParallelism) {
  // Mixtral with biases, t = 2 with sequence parallelism: the experts' down projection is
  // row-parallel, its bias added after the reduce-scatter to 1/t of the rows its column-parallel
  // gate/up projection sums.
  ModelSpec model = *strategies::model_preset("mixtral-8x7b");
  model.biases = true;
  strategies::BlockShape shape{1, 1024, program::DType::kBF16, {}};
  shape.tp.degree = 2;
  shape.tp.sequence_parallel = true;
  const auto layer = strategies::transformer_layer_block(model, shape, 0);
  const auto rows = [&](const std::string& name) {
    for (const auto& step : layer.backward) {
      if (step.name == "layer0.bwd." + name) return std::get<program::ComputeOp>(step.op).shape[1];
    }
    return std::int64_t{-1};
  };
  ASSERT_GT(rows("experts_gate_up.bias_grad"), 0);
  EXPECT_EQ(rows("experts_down.bias_grad") * 2, rows("experts_gate_up.bias_grad"));
}

TEST(TransformerOpsTest, BackwardSumsTheResidualStreamsTwoGradientsAfterEachResidualAdd) {
  // The residual add's output feeds the next norm and the next add: backward adds the two
  // gradients — two b·s·h tensors read, one written (bf16) — with dropout fused or not.
  ModelSpec model = *strategies::model_preset("llama-2-7b");
  const std::int64_t b = 2, s = 256;
  const double elements = static_cast<double>(b * s * model.hidden);
  for (const bool dropout : {false, true}) {
    model.dropout = dropout;
    const auto layer = strategies::transformer_layer_block(model, {b, s, program::DType::kBF16, {}}, 0);
    for (const char* branch : {"attn", "mlp"}) {
      EXPECT_DOUBLE_EQ(backward_bytes(layer, std::string(branch) + "_residual_grad_sum"), 6 * elements) << branch;
    }
  }
}

TEST(TransformerOpsTest, BackwardOfAMatmulIsTwoMatmulsOfTheSameFlops) {
  const ModelSpec model = *strategies::model_preset("llama-2-7b");
  const auto block = strategies::transformer_layer_block(model, {1, 256, program::DType::kBF16, {}}, 3);
  double forward_matmul = 0, backward_matmul = 0;
  for (const auto& step : block.forward) {
    if (step.compute && step.compute->kind == program::ComputeKind::kMatmul) forward_matmul += step.compute->flops;
  }
  for (const auto& step : block.backward) {
    const auto& op = std::get<program::ComputeOp>(step.op);
    if (op.kind == program::ComputeKind::kMatmul) backward_matmul += op.flops;
  }
  EXPECT_DOUBLE_EQ(backward_matmul, 2 * forward_matmul);
  // Reverse order, after the sum of the residual stream's two gradients.
  EXPECT_EQ(block.backward.front().name, "layer3.bwd.mlp_residual_grad_sum");
  EXPECT_EQ(block.backward[1].name, "layer3.bwd.mlp_down.dgrad");
  EXPECT_EQ(block.backward.back().name, "layer3.bwd.attn_norm");
}

TEST(TransformerOpsTest, Fp8RunsTheLayersLinearGemmsInFp8AfterACastOfEachInputAndOutputGradient) {
  const ModelSpec model = *strategies::model_preset("llama-2-7b");
  const std::int64_t b = 1, s = 256, h = model.hidden, tokens = b * s;
  strategies::BlockShape shape{b, s, program::DType::kBF16, {}};
  shape.fp8_linear = true;
  const auto block = strategies::transformer_layer_block(model, shape, 0);
  int fp8_gemms = 0, casts = 0;
  for (const auto& step : block.forward) {
    if (!step.compute) continue;
    if (step.compute->kind == program::ComputeKind::kMatmul) {
      ++fp8_gemms;
      EXPECT_EQ(step.compute->dtype, program::DType::kFP8) << step.name;
    }
    if (step.name.ends_with(".fp8_cast")) ++casts;
    if (step.name == "layer0.fwd.attn_out") {
      // [T, h]·[h, h]: FP8 operands of 1 byte, a bf16 result of 2.
      EXPECT_DOUBLE_EQ(step.compute->bytes, static_cast<double>(tokens * h + h * h) + 2.0 * static_cast<double>(tokens * h));
    }
    if (step.name == "layer0.fwd.attn_out.fp8_cast") {  // reads bf16, writes FP8 and its transpose
      EXPECT_DOUBLE_EQ(step.compute->bytes, 4.0 * static_cast<double>(tokens * h));
    }
    if (step.compute->kind == program::ComputeKind::kAttention) {
      EXPECT_EQ(step.compute->dtype, program::DType::kBF16);
    }
  }
  EXPECT_EQ(fp8_gemms, 4);  // qkv, attn_out, mlp_gate_up, mlp_down
  EXPECT_EQ(casts, 4);
  int grad_casts = 0;
  for (const auto& step : block.backward) grad_casts += step.name.ends_with(".grad_fp8_cast") ? 1 : 0;
  EXPECT_EQ(grad_casts, 4);
  // The LM head stays bf16.
  for (const auto& step : strategies::head_block(model, shape).forward) {
    if (step.compute && step.compute->kind == program::ComputeKind::kMatmul) {
      EXPECT_EQ(step.compute->dtype, program::DType::kBF16);
    }
  }
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
      model, {static_cast<std::int64_t>(b), static_cast<std::int64_t>(s), program::DType::kFP16, {}}, 0);
  const double expected = s * b * h * (34 + 5 * a * s / h) + 2 * 8 * s * b;
  EXPECT_DOUBLE_EQ(block.saved_bytes(), expected);
}

TEST(TransformerOpsTest, FlashAttentionActivationsGrowLinearlyWithSequence) {
  const ModelSpec model = *strategies::model_preset("llama-2-7b");
  const double short_seq =
      strategies::transformer_layer_block(model, {1, 1024, program::DType::kBF16, {}}, 0).saved_bytes();
  const double long_seq =
      strategies::transformer_layer_block(model, {1, 4096, program::DType::kBF16, {}}, 0).saved_bytes();
  EXPECT_DOUBLE_EQ(long_seq, 4 * short_seq);
}

// A GPT layer with standard attention and dropout, as Korthikanti et al. analyse it.
ModelSpec korthikanti_gpt() {
  ModelSpec model = *strategies::model_preset("gpt3-175b");
  model.attention = strategies::AttentionKind::kStandard;
  model.dropout = true;
  return model;
}

TEST(TransformerOpsTest, TensorParallelActivationsFollowKorthikantiEquation2) {
  // sbh(10 + 24/t + 5as/(ht)) bytes at fp16, plus the two LayerNorms' fp32 statistics
  // (replicated without sequence parallelism: 2 × 8 bytes × s·b).
  const ModelSpec model = korthikanti_gpt();
  const double s = 2048, b = 1, h = static_cast<double>(model.hidden), a = static_cast<double>(model.heads), t = 8;
  strategies::BlockShape shape{1, 2048, program::DType::kFP16, {8, false, true, 1}};
  const auto block = strategies::transformer_layer_block(model, shape, 0);
  EXPECT_DOUBLE_EQ(block.saved_bytes(), s * b * h * (10 + 24 / t + 5 * a * s / (h * t)) + 2 * 8 * s * b);
}

TEST(TransformerOpsTest, SequenceParallelActivationsFollowKorthikantiEquation3) {
  // sbh/t (34 + 5as/h): every activation divided by t (the statistics too).
  const ModelSpec model = korthikanti_gpt();
  const double s = 2048, b = 1, h = static_cast<double>(model.hidden), a = static_cast<double>(model.heads), t = 8;
  strategies::BlockShape shape{1, 2048, program::DType::kFP16, {8, true, true, 1}};
  const auto block = strategies::transformer_layer_block(model, shape, 0);
  EXPECT_DOUBLE_EQ(block.saved_bytes(), s * b * h / t * (34 + 5 * a * s / h) + 2 * 8 * s * b / t);
  // Selective recomputation drops exactly the 5as²b/t attention-score terms: 34sbh/t remain.
  EXPECT_DOUBLE_EQ(block.saved_bytes() - block.score_bytes(), 34 * s * b * h / t + 2 * 8 * s * b / t);
  // Full recomputation keeps only the layer's (sequence-sharded) input: 2sbh/t.
  EXPECT_DOUBLE_EQ(block.input_bytes, 2 * s * b * h / t);
}

// Bytes of the tensor-parallel collectives of one layer, forward and backward.
std::pair<double, double> tensor_parallel_bytes(const strategies::Block& block) {
  double forward = 0, backward = 0;
  for (const auto& step : block.forward) {
    if (step.collective) forward += static_cast<double>(step.collective->bytes);
  }
  for (const auto& step : block.backward) {
    if (const auto* c = std::get_if<program::CollectiveOp>(&step.op)) backward += static_cast<double>(c->bytes);
  }
  return {forward, backward};
}

TEST(TransformerOpsTest, MegatronLayerHasTwoAllReducesForwardAndTwoBackward) {
  // Llama-7B, b 1, s 2048, bf16: each all-reduce carries b·s·h elements (16.8 MB).
  const ModelSpec model = *strategies::model_preset("llama-2-7b");
  strategies::BlockShape shape{1, 2048, program::DType::kBF16, {8, false, true, 1}};
  const auto block = strategies::transformer_layer_block(model, shape, 0);
  int forward = 0, backward = 0;
  for (const auto& step : block.forward) {
    if (step.collective) {
      EXPECT_EQ(step.collective->kind, program::CollectiveKind::kAllReduce);
      EXPECT_EQ(step.collective->bytes, 2048 * 4096 * 2);
      ++forward;
    }
  }
  for (const auto& step : block.backward) {
    if (const auto* c = std::get_if<program::CollectiveOp>(&step.op)) {
      EXPECT_EQ(c->kind, program::CollectiveKind::kAllReduce);
      ++backward;
    }
  }
  EXPECT_EQ(forward, 2);
  EXPECT_EQ(backward, 2);
  // Per-rank shapes: QKV produces (h + 2·kv)/t columns, the MLP ffn/t.
  for (const auto& step : block.forward) {
    if (step.name == "layer0.fwd.qkv") {
      EXPECT_EQ(step.compute->shape[2], (4096 + 2 * 4096) / 8);
    }
    if (step.name == "layer0.fwd.mlp_down") {
      EXPECT_EQ(step.compute->shape[3], 11008 / 8);
    }
  }
}

TEST(TransformerOpsTest, SequenceParallelReplacesAllReducesByGatherAndScatter) {
  // C10: the all-reduces become all-gather + reduce-scatter pairs moving the same bytes in
  // total (an all-reduce moves 2(t−1)/t·M per rank, each of the two halves (t−1)/t·M).
  const ModelSpec model = *strategies::model_preset("llama-2-7b");
  auto layer = [&](bool sp, bool regather) {
    return strategies::transformer_layer_block(model, {1, 2048, program::DType::kBF16, {8, sp, regather, 1}}, 0);
  };
  const auto tp_only = tensor_parallel_bytes(layer(false, true));
  const auto sp = tensor_parallel_bytes(layer(true, false));
  // Ring traffic: an all-reduce of M moves 2M(t−1)/t, an all-gather or reduce-scatter M(t−1)/t.
  const double tp_traffic = 2 * (tp_only.first + tp_only.second);
  const double sp_traffic = sp.first + sp.second;
  EXPECT_DOUBLE_EQ(sp_traffic, tp_traffic);
  // Megatron's regather of the two column-parallel inputs in backward adds two all-gathers.
  const auto regather = tensor_parallel_bytes(layer(true, true));
  EXPECT_DOUBLE_EQ(regather.second - sp.second, 2.0 * 2048 * 4096 * 2);
}

}  // namespace

// Parameter counts read as people write them: a CPU-sized model is not "0.00 B".
TEST(ModelTest, ParameterCountsReadInBillionsMillionsOrUnits) {
  EXPECT_EQ(strategies::parameter_count_text(6.738e9), "6.74 B");
  EXPECT_EQ(strategies::parameter_count_text(2'622'464), "2.62 M");  // tiny-256
  EXPECT_EQ(strategies::parameter_count_text(912), "912");
}
