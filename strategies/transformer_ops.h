// The compute ops of a transformer, block by block (token embedding, each layer, the LM head
// with its loss), with the FLOPs, bytes and shapes a real kernel would have, the activations
// each forward op keeps for backward, and which parameter gradients each backward op
// completes.
//
// FLOPs: a matmul [M,K]·[K,N] is 2·M·N·K; attention scores and the weighted sum are
// 2·b·s²·h each (halved under a causal mask, whose blocks fused kernels skip). Backward of a
// matmul is two matmuls of the same FLOPs (input gradient, weight gradient); backward of
// attention is 2× its forward, 2.5× for FlashAttention, which recomputes the scores.
//
// Activations kept for backward, per layer (e = bytes per element, T = b·s tokens, a =
// heads): for a GPT layer with standard attention and dropout they add up to exactly
// Korthikanti et al. (MLSys 2023), eq. (1): T·h·(34 + 5·a·s/h) bytes at e = 2, plus the
// per-token fp32 statistics each LayerNorm keeps (mean and 1/σ), which the paper neglects. With
// FlashAttention the s² terms vanish: only Q, K, V, the output and the log-sum-exp are kept.
// Memory-bound backward ops move twice their forward bytes (read the saved input and the
// output gradient, write the input gradient). The loss keeps the logits in fp32 (as Hugging
// Face's Llama upcasts them before the cross-entropy).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strategies/model.h"
#include "strategies/program/program.h"

namespace strategies {

struct ParamTensor {
  std::string name;
  std::int64_t elements = 0;
};

struct ForwardStep {
  std::string name;
  program::ComputeOp op;
  double saved_bytes = 0;           // activations this op keeps until its backward
  std::vector<std::size_t> params;  // indices into Block::params this op uses
  bool has_backward = true;         // residual adds pass gradients through without a kernel
};

struct BackwardStep {
  std::string name;
  program::ComputeOp op;
  std::vector<std::size_t> grads_ready;  // parameter gradients complete after this op
};

struct Block {
  std::string name;  // "embedding", "layer7", "head"
  std::vector<ParamTensor> params;
  std::vector<ForwardStep> forward;
  std::vector<BackwardStep> backward;  // in execution order (reverse of forward)
  double saved_bytes() const;
  double forward_flops() const;
};

struct BlockShape {
  std::int64_t micro_batch = 1;
  std::int64_t sequence = 1;
  program::DType dtype = program::DType::kBF16;
};

Block embedding_block(const ModelSpec& model, const BlockShape& shape);
Block transformer_layer_block(const ModelSpec& model, const BlockShape& shape, std::int64_t layer);
Block head_block(const ModelSpec& model, const BlockShape& shape);
// Embedding, every layer, head: the whole model for one micro-batch.
std::vector<Block> model_blocks(const ModelSpec& model, const BlockShape& shape);

}  // namespace strategies
