// The compute and tensor-parallel communication ops of a transformer, block by block (token
// embedding, each layer, the LM head with its loss), with the FLOPs, bytes and shapes a real
// kernel would have, the activations each forward op keeps for backward, and which parameter
// gradients each backward op completes.
//
// FLOPs: a matmul [M,K]·[K,N] is 2·M·N·K; attention scores and the weighted sum are
// 2·b·s²·h each. FlashAttention (one fused kernel) skips the blocks a causal mask hides, so
// its FLOPs are halved; its backward is 2.5× its forward, as it recomputes the scores. Standard
// (unfused) attention runs as Megatron-LM runs it, one kernel per pass over the b·a·s² scores:
// Q·Kᵀ as a batched GEMM (scaled inside, baddbmm), the fused scale-mask-softmax, dropout, and
// the probabilities times V (bmm), whose [b·a, s, d] output is permuted to [s, b, h] by a copy
// (and its gradient copied back). Its GEMMs compute every score, masked ones included: no
// causal halving (Megatron's equation 3 counts them so too). Backward of a matmul is two
// matmuls of the same FLOPs (the gradients of both operands).
//
// Backward kernels that have no forward twin, as PyTorch's autograd runs them (each measured
// in an MPT-13b layer on an H200: bench/results/h200-2026-12-04/layers.json):
//   - a linear layer with a bias sums its output gradient over the rows (the bias's gradient,
//     `grad.sum(0)` — PyTorch's addmm backward, Megatron-LM's linear layers alike): reads the
//     b·s × n output gradient (b·s/t rows for a row-parallel layer under sequence parallelism,
//     whose bias is added after the reduce-scatter); one pass per layer, also under FP8 and for
//     each chunk under tensor-parallel communication overlap;
//   - Q, K and V are views of the fused QKV GEMM's output (Megatron-LM's split, llm-foundry's
//     qkv.split), and the attention kernel returns their gradients as three tensors, so the
//     split's backward concatenates them with a copy — for standard and fused attention alike;
//   - the residual stream forks at every residual add (into the next norm and the next add), so
//     autograd sums its two gradients there: an add reading two tensors and writing one, twice
//     per layer.
//
// Tensor parallelism (Megatron-LM; Shoeybi et al., 2019): QKV and the MLP's gate/up are
// column-parallel (output features split over t ranks), the attention output and MLP down
// projections row-parallel (input features split); heads and FFN width are divided by t.
// Each half-layer is bracketed by Megatron's f (identity forward, all-reduce backward) and g
// (all-reduce forward, identity backward): 2 all-reduces of b·s·h in forward, 2 in backward.
// The embedding is split over the vocabulary (padded to a multiple of t, as Megatron pads it;
// an all-reduce in forward), the LM head too (a
// vocabulary-parallel cross-entropy: two all-reduces of one fp32 per token).
// Sequence parallelism (Korthikanti et al., MLSys 2023) splits the sequence outside the
// tensor-parallel regions: f becomes all-gather forward / reduce-scatter backward, g
// reduce-scatter forward / all-gather backward, and norms, dropout and residuals work on s/t
// tokens. Megatron keeps the sequence-sharded input of each column-parallel layer and gathers
// it again for the weight gradient (regather_in_backward).
//
// Activations kept for backward, per layer (e = bytes per element, T = b·s tokens, a =
// heads): for a GPT layer with standard attention and dropout they add up to exactly
// Korthikanti et al.'s eq. (1) T·h·(34 + 5·a·s/h) at e = 2, eq. (2) T·h·(10 + 24/t +
// 5·a·s/(h·t)) under tensor parallelism and eq. (3) T·h/t·(34 + 5·a·s/h) with sequence
// parallelism — plus the per-token fp32 statistics each LayerNorm keeps (mean and 1/σ),
// which the paper neglects. With FlashAttention the s² terms vanish: only Q, K, V, the output
// and the log-sum-exp are kept. Memory-bound backward ops move twice their forward bytes. The
// loss keeps the logits in fp32 (as Hugging Face's Llama upcasts them before the
// cross-entropy).
//
// FP8 (training.precision = "fp8", Transformer Engine's recipe; Micikevicius et al., "FP8
// Formats for Deep Learning", 2022): the linear GEMMs of every transformer layer (QKV, output
// projection, MLP) run on FP8 tensor cores with FP8 operands (1 byte) and a bf16 output, in
// forward and in both backward GEMMs; attention, the LM head and everything else stay bf16.
// Each FP8 GEMM first casts its input — and in backward its output gradient — with the amax
// bookkeeping of delayed scaling: one pass reading bf16 and writing the FP8 tensor and its
// transpose (2 + 1 + 1 bytes per element). Transformer Engine fuses some of these casts into
// the LayerNorm and activation kernels; dtsim prices each as its own pass. Not modelled: the
// per-step refresh of the FP8 weight copies, FP8 activations kept for backward (kept as bf16
// here), the amax all-reduce.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strategies/model.h"
#include "strategies/training.h"
#include "strategies/program/program.h"

namespace strategies {

struct ParamTensor {
  std::string name;
  std::int64_t elements = 0;  // on one tensor-parallel rank
  bool expert = false;        // a routed expert's weight: synchronised over the expert-data-parallel group
  bool bias = false;          // a linear layer's bias: backward sums the output gradient's rows
};

struct TensorParallel {
  std::int32_t degree = 1;
  bool sequence_parallel = false;
  bool regather_in_backward = true;  // SP: keep sharded inputs, all-gather them again in backward
  program::GroupFamilyId group = 0;  // the tensor-parallel group family
  // Megatron-Core's --tp-comm-overlap (Transformer Engine's userbuffers, with SP): each
  // all-gather or reduce-scatter next to a linear layer's GEMM is split into t chunks that
  // pipeline with the GEMM's t row blocks.
  bool comm_overlap = false;
};

// Which share of the routed token copies each expert of each MoE layer receives (index: layer,
// then expert; empty rows for dense layers), after the capacity factor's drops: a layer's
// shares sum to 1 − its dropped fraction.
struct ExpertRouting {
  std::vector<std::vector<double>> shares;
};
// The model's router load (MoeSpec::load) drawn for every layer; deterministic for a seed.
ExpertRouting expert_routing(const ModelSpec& model);

// Expert parallelism (Megatron-Core's MoE layer with the all-to-all token dispatcher): a MoE
// layer's routed experts are split over the `degree` ranks of an expert-parallel group, each
// holding experts/degree of them (and 1/t of each expert's width under tensor parallelism).
// Each rank routes its tokens, sends every token copy to the rank holding its expert
// (dispatch: an all-to-all over the group), gathers the received tokens over the
// tensor-parallel group, runs its experts as grouped GEMMs, reduce-scatters, and sends the
// results back (combine: a second all-to-all). The rank whose experts receive the most tokens
// sets the pace: its grouped GEMMs are the longest, and each all-to-all is priced at the hottest
// receiver's share (every rank waits for it to drain). With shared_expert_overlap
// (Megatron-Core's --moe-shared-expert-overlap) the shared experts compute while the dispatch
// and, in backward, the combine's gradient are in flight.
struct ExpertParallel {
  std::int32_t degree = 1;
  std::int32_t rank = 0;              // this rank's place in its expert-parallel group
  program::GroupFamilyId group = 0;   // the expert-parallel group family
  const ExpertRouting* routing = nullptr;  // null: every expert gets an equal share
  bool shared_expert_overlap = false;
};

// Tensors that live only around a few steps — a gathered input, a full-length gradient buffer —
// counted in memory from just before the step that creates them until just after the step that
// last uses them (Transformer Engine's all-gather attention: K and V of the whole sequence).
struct TransientTensor {
  std::string name;
  double bytes = 0;
};
// A compute or collective step's (transfers take none); named "<block>.<tensor>" once the block
// is finished.
struct Transients {
  std::vector<TransientTensor> allocated_before;  // just before the step runs, on its stream
  std::vector<TransientTensor> released_after;    // once it has run, on its stream
};

struct BackwardStep {
  std::string name;
  program::OpBody op;                    // a ComputeOp, a CollectiveOp or a SendRecvOp
  std::vector<std::size_t> grads_ready = {};  // parameter gradients complete after this op
  bool attention_core = false;
  // A collective the following compute does not wait for (it overlaps the input gradient).
  bool overlapped = false;
  // Earlier steps of Block::backward this one waits for (beyond stream order).
  std::vector<std::size_t> waits_for = {};
  bool chunk = false;  // as ForwardStep::chunk
  Transients transients = {};
};

// Context parallelism (Megatron-Core; Liu et al., "Ring Attention", 2023; Jacobs et al.,
// "DeepSpeed Ulysses", 2023): each sequence is split over the `degree` ranks of a cp group,
// every op outside attention working on its s/cp tokens. Megatron-Core balances the causal mask
// by giving rank i the sequence chunks i and 2·cp−1−i, so every rank does 1/cp of the attention.
//   ring     attention in cp steps: each rank's queries against its own K,V block, then against
//            the block its predecessor sends (each block passed on round the ring), every
//            transfer overlapped with the step computing beside it: per step
//            F/cp² FLOPs (F the whole sequence's attention) and one K,V block of s/cp tokens
//            sent; backward passes K,V and their gradients (twice the bytes) round the ring.
//            Time ≈ (compute/cp) + the transfers the steps do not hide.
//   ulysses  an all-to-all turns the s/cp-token Q,K,V of all heads into all s tokens of
//            heads/cp heads; attention runs locally; a second all-to-all turns the output back.
//            Needs heads and KV heads (per tensor-parallel rank) divisible by cp.
//   all_gather  (Llama 3, Grattafiori et al. 2024, §3.3.2; Transformer Engine's
//            AttnFuncWithCPAndKVAllGather) K and V all-gathered over the cp group, exposed
//            (small under grouped-query attention), then this rank's queries — the same two
//            balanced chunks as the ring's — against every key before them: F/cp. Backward
//            gathers K and V again and reduce-scatters their gradients.
struct ContextParallel {
  std::int32_t degree = 1;
  ContextParallelScheme scheme = ContextParallelScheme::kRing;
  program::GroupFamilyId group = 0;
};

struct ForwardStep {
  std::string name;
  // A compute op, or a tensor-parallel collective; neither for Megatron's f without SP.
  std::optional<program::ComputeOp> compute = {};
  std::optional<program::CollectiveOp> collective = {};
  // The collective backward runs at this point (f's all-reduce, SP's conjugates).
  std::optional<program::CollectiveOp> backward_collective = {};
  // SP with regather: the all-gather of this matmul's stored sharded input, before its wgrad.
  std::optional<program::CollectiveOp> regather = {};
  double saved_bytes = 0;           // activations this op keeps until its backward
  double score_bytes = 0;           // of which attention-score tensors (dropped by selective recompute)
  std::vector<std::size_t> params = {};  // indices into Block::params this op uses
  bool has_backward = true;         // false: no kernel derived from it (residual adds pass gradients through)
  bool attention_core = false;      // recomputed by selective activation checkpointing
  // A memory-bound op's backward bytes when they are not 1.5 times its forward's (dropout's
  // backward moves what its forward does: the gradient and the mask read, one tensor written).
  std::optional<double> backward_bytes = {};
  // Tensor-parallel communication overlap (TensorParallel::comm_overlap), forward and backward:
  // `overlapped` — a collective the following compute does not wait for;
  // `chunk` — one of a run of collective chunks issued together, each before its GEMM chunk
  //           (and the GEMM chunks between them), rather than after the compute before it.
  bool overlapped = false;
  bool chunk = false;
  bool backward_overlapped = false;
  bool backward_chunk = false;
  // Earlier forward steps (indices into Block::forward) this one waits for beyond stream order:
  // a compute op waiting for an overlapped collective issued before the ops in between.
  std::vector<std::size_t> waits_for = {};
  // A point-to-point transfer beside the compute (ring attention's KV blocks).
  std::optional<program::SendRecvOp> transfer = {};
  // Backward steps written here, in execution order, that run before the one derived from it
  // (the residual stream's gradient sum) or instead of it, when has_backward is false (ring
  // attention's backward ring); their waits_for count from their first step.
  std::vector<BackwardStep> backward_steps = {};
  // A linear layer with a bias: the sum over rows that gives the bias's gradient, after the
  // weight gradient; the layer's parameter gradients are complete after it.
  std::optional<program::ComputeOp> bias_gradient = {};
  Transients transients = {};
  Transients backward_transients = {};  // backward_collective's
};


struct Block {
  std::string name;  // "embedding", "layer7", "head"
  std::vector<ParamTensor> params;
  std::vector<ForwardStep> forward;
  std::vector<BackwardStep> backward;  // in execution order (reverse of forward)
  double input_bytes = 0;              // the block's input: all full checkpointing keeps
  bool layer = false;                  // a transformer layer (what activation checkpointing wraps)
  double saved_bytes() const;
  double score_bytes() const;
  double forward_flops() const;
  std::int64_t parameter_elements() const;
  // Of those, the ones whose gradients `step` (one of `backward`) completes.
  std::int64_t gradient_elements(const BackwardStep& step) const;
};

struct BlockShape {
  std::int64_t micro_batch = 1;
  std::int64_t sequence = 1;  // tokens of each sequence on this rank: the sequence / cp
  program::DType dtype = program::DType::kBF16;
  TensorParallel tp;
  bool fp8_linear = false;  // the transformer layers' linear GEMMs in FP8 (training.precision = "fp8")
  // Tied embeddings under pipeline parallelism: the last stage holds its own copy of the word
  // embeddings for the output layer (Megatron-LM), kept equal to the first stage's by an
  // all-reduce of their gradients.
  bool head_embedding_copy = false;
  ExpertParallel ep = {};
  ContextParallel cp = {};
};

Block embedding_block(const ModelSpec& model, const BlockShape& shape);
Block transformer_layer_block(const ModelSpec& model, const BlockShape& shape, std::int64_t layer);
Block head_block(const ModelSpec& model, const BlockShape& shape);
// Embedding, every layer, head: the whole model for one micro-batch.
std::vector<Block> model_blocks(const ModelSpec& model, const BlockShape& shape);

}  // namespace strategies
