// Builders for the blocks of a transformer (see transformer_ops.h for the formulas).
#include "strategies/transformer_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>

namespace strategies {
namespace {

using program::CollectiveKind;
using program::CollectiveOp;
using program::ComputeKind;
using program::ComputeOp;
using program::Phase;
using program::Shape;

constexpr double kFlashBackwardFactor = 2.5;
// A memory-bound op's backward reads its input and its output's gradient and writes its input's
// gradient: three tensors where the forward moves two (an op whose backward differs says so).
constexpr double kMemoryBoundBackwardFactor = 1.5;
// FlashAttention's backward reads Q, K, V, the output and its gradient and writes dQ, dK, dV:
// about twice the forward's Q, K, V and output.
constexpr double kFlashBackwardBytesFactor = 2.0;
constexpr double kFp32Bytes = 4;
constexpr double kMaskBytes = 1;       // dropout masks are stored as bytes
constexpr double kTokenIdBytes = 8;    // int64 token ids
constexpr double kLossReductions = 3;  // vocabulary-parallel cross-entropy: max, target logit, Σexp
constexpr double kFp8CastBytes = 2 + 1 + 1;  // reads bf16, writes the FP8 tensor and its transpose

// Builds one block's forward steps, then derives its backward steps.
class BlockBuilder {
 public:
  BlockBuilder(std::string name, const BlockShape& shape)
      : shape_(shape), element_bytes_(static_cast<double>(program::dtype_bytes(shape.dtype))) {
    block_.name = std::move(name);
  }

  double e() const { return element_bytes_; }
  std::int64_t t() const { return shape_.tp.degree; }
  // Vocabulary rows per tensor-parallel rank: the vocabulary is padded to a multiple of t,
  // as Megatron pads it (make_vocab_size_divisible_by), so every rank holds as many rows.
  std::int64_t vocab_rows(const ModelSpec& model) const { return (model.vocab + t() - 1) / t(); }
  bool sequence_parallel() const { return shape_.tp.sequence_parallel && t() > 1; }
  std::int64_t tokens() const { return shape_.micro_batch * shape_.sequence; }
  // Tokens a rank holds outside tensor-parallel regions: all, or 1/t with sequence parallelism.
  std::int64_t local_tokens() const { return sequence_parallel() ? tokens() / t() : tokens(); }
  void set_input_bytes(double bytes) { block_.input_bytes = bytes; }
  void mark_layer() { block_.layer = true; }

  const BlockShape& shape() const { return shape_; }
  std::size_t next_step() const { return block_.forward.size(); }
  ForwardStep& step(std::size_t index) { return block_.forward[index]; }

  std::size_t param(std::string name, std::int64_t elements, bool expert = false, bool bias = false) {
    block_.params.push_back({block_.name + "." + std::move(name), elements, expert, bias});
    return block_.params.size() - 1;
  }

  // [M,K]·[K,N]. A column-parallel layer (tensor_parallel_input) keeps its input — sharded and
  // gathered again in backward under sequence parallelism with regather. A bias's gradient sums
  // `bias_rows` rows (m unless given: row_parallel_bias_rows).
  void matmul(std::string name, std::int64_t m, std::int64_t n, std::int64_t k, double saved,
              std::vector<std::size_t> params, bool tensor_parallel_input = false,
              std::optional<std::int64_t> bias_rows = std::nullopt) {
    grouped_matmul(std::move(name), 1, m, n, k, saved, std::move(params), tensor_parallel_input, bias_rows);
  }
  // A row-parallel layer's bias is replicated on the tensor-parallel ranks, so under sequence
  // parallelism each adds it to its own m/t rows after the reduce-scatter, and its gradient sums
  // those.
  std::int64_t row_parallel_bias_rows(std::int64_t m) const { return sequence_parallel() ? m / t() : m; }
  // `batch` GEMMs of the same shape in one kernel (a MoE layer's grouped expert GEMMs); a bias's
  // gradient sums `bias_rows` rows of each (m unless given).
  void grouped_matmul(std::string name, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, double saved,
                      std::vector<std::size_t> params, bool tensor_parallel_input = false,
                      std::optional<std::int64_t> bias_rows = std::nullopt) {
    const ComputeOp op = gemm(batch, m, n, k, shape_.fp8_linear ? std::optional{program::DType::kFP8} : std::nullopt);
    if (shape_.fp8_linear) {  // cast the input to FP8 first (no backward of its own)
      memory_bound(name + ".fp8_cast", ComputeKind::kElementwise, Shape::of({batch * m * k}),
                   static_cast<double>(batch * m * k) * kFp8CastBytes, 0, {}, false);
    }
    ForwardStep step{std::move(name), op, std::nullopt, std::nullopt, std::nullopt, saved, 0, std::move(params), true,
                     false};
    if (tensor_parallel_input && sequence_parallel() && shape_.tp.regather_in_backward) {
      step.saved_bytes = saved / static_cast<double>(t());
      step.regather = collective(CollectiveKind::kAllGather, saved);
    }
    // Under FP8 too: Megatron-Core adds the projection's and the MLP's biases outside
    // Transformer Engine (bias-GeLU, bias-dropout-add), and autograd sums their gradients; only a
    // bias inside TE's layer is summed in the gradient's cast (cast_transpose_bgrad), which dtsim
    // prices as its own pass all the same.
    const bool biased = std::any_of(step.params.begin(), step.params.end(), [&](std::size_t p) { return block_.params[p].bias; });
    if (biased) step.bias_gradient = bias_gradient(batch, bias_rows.value_or(m), n);
    block_.forward.push_back(std::move(step));
  }

  // The gradient of `batch` biases of n columns: the output gradient's `rows` rows of each read
  // and summed, the sums written.
  ComputeOp bias_gradient(std::int64_t batch, std::int64_t rows, std::int64_t n) const {
    ComputeOp op = backward_of(make(ComputeKind::kReduction, Shape::of({batch, rows, n})), Shape::of({batch, rows, n}));
    op.bytes = static_cast<double>(batch) * static_cast<double>(rows + 1) * static_cast<double>(n) * e();
    return op;
  }

  // `batch` independent [M,K]·[K,N] products: 2·batch·M·N·K FLOPs, each operand read and the
  // result written once; in the block's dtype unless given.
  ComputeOp gemm(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
                 std::optional<program::DType> dtype = std::nullopt) const {
    ComputeOp op = make(ComputeKind::kMatmul, Shape::of({batch, m, n, k}));
    op.dtype = dtype.value_or(shape_.dtype);
    op.flops = 2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    op.bytes = gemm_bytes(op);
    return op;
  }
  // A and B read, C written once; an FP8 GEMM's output is bf16.
  double gemm_bytes(const ComputeOp& op) const {
    const double batch = static_cast<double>(op.shape[0]), m = static_cast<double>(op.shape[1]),
                 n = static_cast<double>(op.shape[2]), k = static_cast<double>(op.shape[3]);
    const double operand = static_cast<double>(program::dtype_bytes(op.dtype));
    const double output = op.dtype == program::DType::kFP8 ? e() : operand;
    return batch * ((m * k + k * n) * operand + m * n * output);
  }

  // The last step's output feeds two ops (the residual stream's fork): backward first sums the
  // two gradients of `elements` elements — two tensors read, one written.
  void sum_gradients_first(std::string name, std::int64_t elements) {
    ComputeOp sum = backward_of(make(ComputeKind::kElementwise, Shape::of({elements})), Shape::of({elements}));
    sum.bytes = 3.0 * static_cast<double>(elements) * e();
    block_.forward.back().backward_steps.push_back({std::move(name), sum});
  }

  // `backward_bytes` unset: kMemoryBoundBackwardFactor × bytes.
  void memory_bound(std::string name, ComputeKind kind, Shape shape, double bytes, double saved,
                    std::vector<std::size_t> params = {}, bool has_backward = true,
                    std::optional<double> backward_bytes = std::nullopt) {
    ComputeOp op = make(kind, shape);
    op.bytes = bytes;
    block_.forward.push_back({std::move(name), op, std::nullopt, std::nullopt, std::nullopt, saved, 0,
                              std::move(params), has_backward, false});
    block_.forward.back().backward_bytes = backward_bytes;
  }

  // Megatron's f before a column-parallel region (identity forward / all-reduce backward; with
  // sequence parallelism all-gather forward / reduce-scatter backward) and g after a
  // row-parallel one (all-reduce forward; reduce-scatter forward / all-gather backward).
  void enter_tensor_parallel(std::string name, double activation_bytes) {
    if (t() == 1) return;
    ForwardStep step{std::move(name)};
    if (sequence_parallel()) {
      step.collective = collective(CollectiveKind::kAllGather, activation_bytes);
      step.backward_collective = collective(CollectiveKind::kReduceScatter, activation_bytes);
    } else {
      step.backward_collective = collective(CollectiveKind::kAllReduce, activation_bytes);
    }
    block_.forward.push_back(std::move(step));
  }
  void leave_tensor_parallel(std::string name, double activation_bytes) {
    if (t() == 1) return;
    ForwardStep step{std::move(name)};
    if (sequence_parallel()) {
      step.collective = collective(CollectiveKind::kReduceScatter, activation_bytes);
      step.backward_collective = collective(CollectiveKind::kAllGather, activation_bytes);
    } else {
      step.collective = collective(CollectiveKind::kAllReduce, activation_bytes);
    }
    block_.forward.push_back(std::move(step));
  }
  // A collective in forward over `group` and, when given, its conjugate in backward; returns its step's index.
  std::size_t collective_step(std::string name, CollectiveKind kind, program::GroupFamilyId group, double bytes,
                              std::optional<CollectiveKind> backward_kind, bool overlapped = false) {
    ForwardStep step{std::move(name)};
    step.collective = program::make_collective(kind, group, bytes, shape_.dtype);
    if (backward_kind) step.backward_collective = program::make_collective(*backward_kind, group, bytes, shape_.dtype);
    step.overlapped = overlapped;
    block_.forward.push_back(std::move(step));
    return block_.forward.size() - 1;
  }

  // An all-reduce in forward only (vocabulary-parallel loss statistics).
  void all_reduce(std::string name, double bytes) {
    if (t() == 1) return;
    ForwardStep step{std::move(name)};
    step.collective = collective(CollectiveKind::kAllReduce, bytes);
    block_.forward.push_back(std::move(step));
  }

  // FlashAttention: one fused kernel, the scores never in device memory; under context
  // parallelism as ring attention, Ulysses or all-gather attention (ContextParallel in the header).
  void attention(const ModelSpec& model) {
    if (!model.mla) split_qkv(model);
    if (model.attention == AttentionKind::kStandard) {
      standard_attention(model);
      return;
    }
    const std::int32_t cp = shape_.cp.degree;
    if (cp > 1 && shape_.cp.scheme == ContextParallelScheme::kRing) {
      ring_attention(model);
      return;
    }
    if (cp > 1 && shape_.cp.scheme == ContextParallelScheme::kAllGather) {
      all_gather_attention(model);
      return;
    }
    const AttentionHeads heads = attention_heads(model);
    const AttentionColumns columns = attention_columns(model);
    // Q, K, V and the output of this rank's tokens and heads.
    const double qkvo_bytes = local_bytes(columns.q + columns.k + columns.v + columns.o);
    const double qkv_bytes = local_bytes(columns.q + columns.k + columns.v);
    const double output_bytes = local_bytes(columns.o);
    if (cp > 1) {  // Ulysses: all s tokens of heads/cp heads
      collective_step("cp_qkv_all_to_all", CollectiveKind::kAllToAll, shape_.cp.group, qkv_bytes, CollectiveKind::kAllToAll);
    }
    ComputeOp op = flash_op(model, shape_.sequence * cp, model.heads / t() / cp, heads.kv / t() / cp);
    ForwardStep step{"attention", op};
    step.attention_core = true;
    step.compute->bytes = qkvo_bytes;
    // Q, K, V, the output, and the fp32 log-sum-exp per query and head.
    step.saved_bytes = qkvo_bytes + log_sum_exp_bytes(model);
    block_.forward.push_back(std::move(step));
    if (cp > 1) {
      collective_step("cp_output_all_to_all", CollectiveKind::kAllToAll, shape_.cp.group, output_bytes, CollectiveKind::kAllToAll);
    }
  }

  // Q, K and V are views of the QKV GEMM's output (Megatron-LM's split_tensor_along_last_dim,
  // llm-foundry's qkv.split): nothing runs forward, but the attention kernels return their
  // gradients as three tensors, which the split's backward concatenates into one: a read and a
  // write of b·s·(h + 2·kv)/t.
  void split_qkv(const ModelSpec& model) {
    const Shape qkv = Shape::of({tokens() * (model.hidden + 2 * model.kv_dim()) / t()});
    ComputeOp concatenate = backward_of(make(ComputeKind::kElementwise, qkv), qkv);
    concatenate.bytes = 2.0 * static_cast<double>(qkv[0]) * e();
    ForwardStep split{"qkv_split"};
    split.backward_steps = {BackwardStep{"qkv_split", concatenate}};
    block_.forward.push_back(std::move(split));
  }

  // Multi-head latent attention's heads: queries and keys of qk_head_dim, values of v_head_dim,
  // as many key/value heads as query heads once projected up.
  struct AttentionHeads {
    std::int64_t qk = 0;
    std::int64_t v = 0;
    std::int64_t kv = 0;
  };
  static AttentionHeads attention_heads(const ModelSpec& model) {
    if (model.mla) return {model.mla->qk_head_dim(), model.mla->v_head_dim, model.heads};
    return {model.head_dim(), model.head_dim(), model.kv_heads};
  }

  // Q's, K's, V's and the attention output's values per token, over all of the model's heads.
  struct AttentionColumns {
    std::int64_t q = 0, k = 0, v = 0, o = 0;
  };
  static AttentionColumns attention_columns(const ModelSpec& model) {
    const AttentionHeads heads = attention_heads(model);
    return {model.heads * heads.qk, heads.kv * heads.qk, heads.kv * heads.v, model.heads * heads.v};
  }
  // FlashAttention's fp32 log-sum-exp per query and head, kept for its backward.
  double log_sum_exp_bytes(const ModelSpec& model) const {
    return kFp32Bytes *
           static_cast<double>(shape_.micro_batch * model.heads / t() * shape_.sequence);
  }
  // Bytes of `columns` values per token for this rank's tokens and 1/tp of the heads.
  double local_bytes(std::int64_t columns) const {
    return static_cast<double>(tokens()) * static_cast<double>(columns) * e() /
           static_cast<double>(t());
  }

  // A fused attention kernel over `sequence` tokens of each of the micro-batch's sequences, for
  // `heads` query heads: 2·b·s²·heads·(d_qk + d_v) FLOPs, halved by a causal mask. A ring step
  // is one with s = s_full/cp: F/cp², the balanced share of the whole sequence's F.
  ComputeOp flash_op(const ModelSpec& model, std::int64_t sequence, std::int64_t heads, std::int64_t kv_heads) const {
    const AttentionHeads dims = attention_heads(model);
    const std::int64_t b = shape_.micro_batch;
    ComputeOp op = make(ComputeKind::kAttention, Shape::of({b, heads, kv_heads, sequence, dims.qk}));
    op.flops = 2.0 * static_cast<double>(b) * static_cast<double>(sequence) * static_cast<double>(sequence) *
               static_cast<double>(heads * (dims.qk + dims.v)) * (model.causal ? 0.5 : 1.0);
    return op;
  }

  // A fused attention kernel's backward: 2.5 times its FLOPs, twice its bytes.
  static ComputeOp flash_gradient(const ComputeOp& forward) {
    ComputeOp gradient = backward_of(forward, forward.shape);
    gradient.flops *= kFlashBackwardFactor;
    gradient.bytes *= kFlashBackwardBytesFactor;
    return gradient;
  }

  // Ring attention (ContextParallel in the header): cp steps of F/cp² FLOPs, each but the last
  // beside the send of the K,V block it holds to the next rank and the receive of the previous
  // rank's; step i computes with the block received in step i − 1. The backward ring, written
  // out on the last step, passes K,V and their gradients. Memory as Transformer Engine's
  // AttnFuncWithCPAndKVP2P holds it (context_parallel.py at d0067d0d): forward keeps a copy of
  // its own K,V block, every block it receives and every step's output until the ring ends
  // (p2p_comm_buffers, out_per_step: cp of each, the blocks in full-sequence K and V's worth);
  // backward passes K,V with dK,dV in two buffers of both — four blocks — for its whole ring.
  void ring_attention(const ModelSpec& model) {
    const std::int32_t cp = shape_.cp.degree;
    const AttentionHeads heads = attention_heads(model);
    const AttentionColumns columns = attention_columns(model);
    const double q_bytes = local_bytes(columns.q);
    const double o_bytes = local_bytes(columns.o);
    const double kv_block = local_bytes(columns.k + columns.v);
    const auto ring_transfer = [&](bool send, double bytes) {
      return program::SendRecvOp{send, shape_.cp.group, send ? 1 : -1, static_cast<std::int64_t>(bytes), shape_.dtype, true};
    };
    std::vector<BackwardStep> backward;
    std::optional<std::size_t> received, received_backward;
    std::vector<TransientTensor> ring_buffers;
    const TransientTensor gradient_buffers{"attention_ring_gradient_buffers", 4 * kv_block};
    for (std::int32_t i = 0; i < cp; ++i) {
      const std::string suffix = fmt::format(".step{}", i);
      std::optional<std::size_t> receiving, receiving_backward;
      if (i + 1 < cp) {  // pass the block on while computing with it
        for (const bool send : {true, false}) {
          ForwardStep transfer{fmt::format("attention_kv_{}{}", send ? "send" : "recv", suffix)};
          transfer.transfer = ring_transfer(send, kv_block);
          transfer.attention_core = true;
          if (received) transfer.waits_for.push_back(*received);
          if (!send) receiving = block_.forward.size();
          block_.forward.push_back(std::move(transfer));
          BackwardStep back{fmt::format("attention_kv_grad_{}{}", send ? "send" : "recv", suffix), ring_transfer(send, 2 * kv_block)};
          back.attention_core = true;
          if (received_backward) back.waits_for.push_back(*received_backward);
          if (!send) receiving_backward = backward.size();
          backward.push_back(std::move(back));
        }
      }
      ForwardStep step{"attention" + suffix, flash_op(model, shape_.sequence, model.heads / t(), heads.kv / t())};
      step.attention_core = true;
      step.has_backward = false;  // the backward ring below
      step.compute->bytes = q_bytes + kv_block + o_bytes;
      if (i == 0) {  // Q, K, V, the output and the log-sum-exp of this rank's tokens
        step.saved_bytes = q_bytes + kv_block + o_bytes + log_sum_exp_bytes(model);
      }
      // This step's output, the block it receives meanwhile, and at step 0 the copy of its own.
      const double blocks = (i == 0 ? 1 : 0) + (i + 1 < cp ? 1 : 0);
      ring_buffers.push_back({"attention_ring_buffers" + suffix, blocks * kv_block + o_bytes});
      step.transients.allocated_before = {ring_buffers.back()};
      if (i + 1 == cp) step.transients.released_after = ring_buffers;
      if (received) step.waits_for.push_back(*received);
      BackwardStep back{"attention" + suffix, flash_gradient(*step.compute)};
      back.attention_core = true;
      if (i == 0) back.transients.allocated_before = {gradient_buffers};
      if (i + 1 == cp) back.transients.released_after = {gradient_buffers};
      if (received_backward) back.waits_for.push_back(*received_backward);
      backward.push_back(std::move(back));
      block_.forward.push_back(std::move(step));
      received = receiving;
      received_backward = receiving_backward;
    }
    block_.forward.back().backward_steps = std::move(backward);
  }

  // All-gather attention (ContextParallel in the header), as Transformer Engine's
  // AttnFuncWithCPAndKVAllGather runs it: K and V all-gathered over the cp group (one collective
  // each), this rank's queries against the whole sequence's keys — F/cp with the balanced causal
  // layout — keeping only its own K and V for backward, which gathers them again and
  // reduce-scatters their gradients (each gather's conjugate). The gathered K and V live from
  // their gathers to the kernel's end; backward holds them again with the full-length dK and dV
  // buffers the kernel accumulates into (TE's backward: dk = torch.zeros((k.shape[0] * cp_size,
  // …)), until each gradient's reduce-scatter has run.
  void all_gather_attention(const ModelSpec& model) {
    const std::int32_t cp = shape_.cp.degree;
    const AttentionColumns columns = attention_columns(model);
    const double own_bytes =
        local_bytes(columns.q + columns.k + columns.v + columns.o);  // this rank's Q, K, V, output
    const std::pair<std::string, double> gathers[] = {{"attention_k", local_bytes(columns.k)},
                                                      {"attention_v", local_bytes(columns.v)}};
    const auto gathered = [&](const std::string& suffix) {
      std::vector<TransientTensor> tensors;
      for (const auto& [name, bytes] : gathers) tensors.push_back({name + suffix, bytes * cp});
      return tensors;
    };
    for (const auto& [name, bytes] : gathers) {  // part of the core selective recompute replays
      ForwardStep& gather = block_.forward[collective_step(
          name + "_gather", CollectiveKind::kAllGather, shape_.cp.group, bytes * cp,
          CollectiveKind::kReduceScatter)];
      gather.attention_core = true;
      gather.transients.allocated_before = {{name + "_gathered", bytes * cp}};
      gather.backward_transients.released_after = {{name + "_gathered_gradient", bytes * cp}};
    }
    // The kernel's work: cp of the balanced s/cp-token square's F/cp², at that square's shape;
    // it reads the other ranks' K and V besides this rank's tensors.
    ForwardStep step{"attention", flash_op(model, shape_.sequence, model.heads / t(),
                                           attention_heads(model).kv / t())};
    step.compute->flops *= cp;
    step.compute->bytes = own_bytes + local_bytes(columns.k + columns.v) * (cp - 1);
    step.attention_core = true;
    step.saved_bytes = own_bytes + log_sum_exp_bytes(model);  // only this rank's K and V
    step.transients.released_after = gathered("_gathered");
    step.has_backward = false;  // written out: the gathers again, then the kernel's backward
    for (const auto& [name, bytes] : gathers) {
      BackwardStep regather{name + "_regather",
                            program::make_collective(CollectiveKind::kAllGather, shape_.cp.group,
                                                     bytes * cp, shape_.dtype)};
      regather.attention_core = true;
      regather.transients.allocated_before = {{name + "_gathered", bytes * cp}};
      step.backward_steps.push_back(std::move(regather));
    }
    BackwardStep back{"attention", flash_gradient(*step.compute)};
    back.attention_core = true;
    back.transients = {gathered("_gathered_gradient"), gathered("_gathered")};
    step.backward_steps.push_back(std::move(back));
    block_.forward.push_back(std::move(step));
  }

  // Megatron-LM's unfused attention core (see the header): four kernels, each keeping what its
  // backward needs — Q and K; the softmax output; the dropout mask; V and the dropout output.
  // Together that is Korthikanti et al.'s 5·a·s²·b of scores (e = 2) besides Q, K and V.
  void standard_attention(const ModelSpec& model) {
    const std::int64_t s = shape_.sequence;
    const std::int64_t d = model.head_dim();
    const std::int64_t batch = shape_.micro_batch * model.heads / t();  // one GEMM per (sequence, head)
    const double tokens_d = static_cast<double>(tokens());
    const double q_bytes = tokens_d * static_cast<double>(model.hidden) * e() / static_cast<double>(t());
    const double kv_bytes = tokens_d * static_cast<double>(model.kv_dim()) * e() / static_cast<double>(t());
    const double scores = static_cast<double>(batch) * static_cast<double>(s) * static_cast<double>(s);
    const auto attention_step = [&](std::string name, ComputeOp op, double saved, double score_bytes) {
      ForwardStep step{std::move(name), std::move(op)};
      step.saved_bytes = saved;
      step.score_bytes = score_bytes;
      step.attention_core = true;
      return step;
    };
    block_.forward.push_back(attention_step("attention_scores", gemm(batch, s, s, d), q_bytes + kv_bytes, 0));
    ComputeOp softmax = make(ComputeKind::kSoftmax, Shape::of({batch * s * s}));
    softmax.bytes = 2 * scores * e();  // reads the scores, writes the probabilities
    ForwardStep softmax_step = attention_step("attention_softmax", softmax, scores * e(), scores * e());
    softmax_step.backward_bytes = 3 * scores * e();
    block_.forward.push_back(std::move(softmax_step));
    double context_scores = 0;  // the probabilities the context GEMM keeps, unless softmax's are them
    if (model.dropout) {
      ComputeOp dropout = make(ComputeKind::kElementwise, Shape::of({batch * s * s}));
      dropout.bytes = scores * (2 * e() + kMaskBytes);  // reads, writes the output and the mask
      ForwardStep dropout_step = attention_step("attention_dropout", dropout, scores * kMaskBytes, scores * kMaskBytes);
      dropout_step.backward_bytes = dropout.bytes;  // reads the gradient and the mask, writes one
      block_.forward.push_back(std::move(dropout_step));
      context_scores = scores * e();
    }
    block_.forward.push_back(
        attention_step("attention_context", gemm(batch, s, d, s), kv_bytes + context_scores, context_scores));
    // The context leaves as [s, b, h/t]: the batched GEMM's [b·heads/t, s, d] output is permuted
    // and copied (Megatron-LM's context_layer.permute(2, 0, 1, 3).contiguous()), and backward
    // copies its gradient back (a read and a write of b·s·h/t each way).
    ComputeOp permute = make(ComputeKind::kElementwise, Shape::of({tokens() * model.hidden / t()}));
    permute.bytes = 2 * q_bytes;
    ForwardStep permute_step = attention_step("attention_context_permute", permute, 0, 0);
    permute_step.backward_bytes = permute.bytes;
    block_.forward.push_back(std::move(permute_step));
  }

  // Tensor-parallel communication overlap (Megatron-Core's --tp-comm-overlap; Transformer
  // Engine's userbuffers, e.g. its ring-exchange all-gather before the QKV and FC1 GEMMs and
  // pipelined reduce-scatter after the projection and FC2 GEMMs): every sequence-parallel
  // all-gather directly before a linear layer's GEMM (an FP8 cast may sit between) and every
  // reduce-scatter directly after one is split, with the GEMM, into t chunks of b·s/t rows —
  // chunk i's GEMM waits only for chunk i's all-gather, chunk i's reduce-scatter runs beside
  // chunk i + 1's GEMM. Backward mirrors it (the reduce-scatters of the input gradient beside the
  // next chunk's GEMMs, the output gradient's all-gather chunks ahead of theirs). Each chunk's
  // weight gradient is priced as its own GEMM; the parameters belong to chunk 0.
  void overlap_tensor_parallel() {
    if (!shape_.tp.comm_overlap || !sequence_parallel()) return;
    const std::int64_t chunks = t();
    std::vector<ForwardStep> steps;
    auto& forward = block_.forward;
    // Where each step ends up (a chunked one: its last chunk), for the steps that wait for it.
    std::vector<std::size_t> position(forward.size());
    const auto is_gemm = [](const ForwardStep& step) { return step.compute && step.compute->kind == ComputeKind::kMatmul; };
    const auto is_collective = [](const ForwardStep& step, CollectiveKind kind) {
      return step.collective && step.collective->kind == kind;
    };
    for (std::size_t i = 0; i < forward.size(); ++i) {
      const bool cast = i + 2 < forward.size() && forward[i + 1].name.ends_with(".fp8_cast");
      const std::size_t gemm = i + (cast ? 2 : 1);
      if (is_collective(forward[i], CollectiveKind::kAllGather) && gemm < forward.size() && is_gemm(forward[gemm])) {
        for (std::int64_t c = 0; c < chunks; ++c) {
          for (std::size_t part = i; part <= gemm; ++part) {
            ForwardStep piece = chunk_of(forward[part], c, chunks);
            piece.chunk = true;                                       // all-gathers issued together
            piece.backward_overlapped = part == i && c > 0;          // reduce-scatters beside the GEMMs
            position[part] = steps.size();
            steps.push_back(std::move(piece));
          }
        }
        i = gemm;
      } else if (is_gemm(forward[i]) && i + 1 < forward.size() && is_collective(forward[i + 1], CollectiveKind::kReduceScatter)) {
        for (std::int64_t c = 0; c < chunks; ++c) {
          for (std::size_t part = i; part <= i + 1; ++part) {
            ForwardStep piece = chunk_of(forward[part], c, chunks);
            piece.overlapped = part == i + 1 && c + 1 < chunks;  // beside the next chunk's GEMM
            piece.backward_chunk = true;                         // all-gathers issued together
            position[part] = steps.size();
            steps.push_back(std::move(piece));
          }
        }
        ++i;
      } else {
        position[i] = steps.size();
        steps.push_back(std::move(forward[i]));
      }
    }
    for (ForwardStep& step : steps) {
      for (std::size_t& wait : step.waits_for) wait = position[wait];
    }
    forward = std::move(steps);
  }

  Block finish() {
    for (auto it = block_.forward.rbegin(); it != block_.forward.rend(); ++it) {
      const std::size_t first = block_.backward.size();
      for (BackwardStep step : it->backward_steps) {
        for (std::size_t& wait : step.waits_for) wait += first;
        block_.backward.push_back(std::move(step));
      }
      if (it->compute && it->has_backward) add_backward_of(*it);
      if (it->backward_collective) {
        block_.backward.push_back({it->name,
                                   *it->backward_collective,
                                   {},
                                   false,
                                   it->backward_overlapped,
                                   {},
                                   it->backward_chunk,
                                   it->backward_transients});
      }
    }
    const auto name_tensors = [&](Transients& transients) {
      for (auto* tensors : {&transients.allocated_before, &transients.released_after}) {
        for (TransientTensor& tensor : *tensors) tensor.name = block_.name + "." + tensor.name;
      }
    };
    for (auto& step : block_.forward) {
      step.name = block_.name + ".fwd." + step.name;
      name_tensors(step.transients);
    }
    for (auto& step : block_.backward) {
      step.name = block_.name + ".bwd." + step.name;
      name_tensors(step.transients);
    }
    return std::move(block_);
  }

 private:
  void add_backward_of(const ForwardStep& forward) {
    const ComputeOp& fwd = *forward.compute;
    auto& backward = block_.backward;
    if (fwd.kind == ComputeKind::kMatmul) {
      const std::int64_t batch = fwd.shape[0], m = fwd.shape[1], n = fwd.shape[2], k = fwd.shape[3];
      ComputeOp dgrad = backward_of(fwd, Shape::of({batch, m, k, n}));
      ComputeOp wgrad = backward_of(fwd, Shape::of({batch, k, n, m}));
      dgrad.bytes = gemm_bytes(dgrad);
      wgrad.bytes = gemm_bytes(wgrad);
      if (fwd.dtype == program::DType::kFP8) {  // the output gradient cast to FP8 for both GEMMs
        ComputeOp cast = backward_of(fwd, Shape::of({batch * m * n}));
        cast.kind = ComputeKind::kElementwise;
        cast.dtype = shape_.dtype;
        cast.flops = 0;
        cast.bytes = static_cast<double>(batch * m * n) * kFp8CastBytes;
        backward.push_back({forward.name + ".grad_fp8_cast", cast, {}, false, false, {}, forward.backward_chunk});
      }
      std::vector<std::size_t> waits;
      if (forward.regather) {  // gathered while the input gradient is computed
        waits.push_back(backward.size());
        backward.push_back({forward.name + ".regather", *forward.regather, {}, false, true, {}, forward.backward_chunk});
      }
      backward.push_back({forward.name + ".dgrad", dgrad, {}, forward.attention_core, false, {}, forward.backward_chunk});
      const bool biased = forward.bias_gradient.has_value();
      backward.push_back({forward.name + ".wgrad", wgrad, biased ? std::vector<std::size_t>{} : forward.params,
                          forward.attention_core, false, std::move(waits), forward.backward_chunk});
      if (biased) {
        backward.push_back({forward.name + ".bias_grad", *forward.bias_gradient, forward.params, forward.attention_core,
                            false, {}, forward.backward_chunk});
      }
      return;
    }
    ComputeOp bwd = backward_of(fwd, fwd.shape);
    if (fwd.kind == ComputeKind::kAttention) {  // the fused kernel
      bwd = flash_gradient(fwd);
    } else {
      bwd.bytes = forward.backward_bytes.value_or(fwd.bytes * kMemoryBoundBackwardFactor);
    }
    backward.push_back({forward.name, bwd, forward.params, forward.attention_core, false, {}});
  }

  // Chunk c of `chunks` of a step: a GEMM's rows, an element-wise op's elements, a collective's
  // bytes and what the step keeps, each divided; the parameters stay with chunk 0.
  ForwardStep chunk_of(const ForwardStep& step, std::int64_t c, std::int64_t chunks) const {
    ForwardStep piece = step;
    const double share = 1.0 / static_cast<double>(chunks);
    piece.name = fmt::format("{}.chunk{}", step.name, c);
    if (piece.compute) {
      ComputeOp& op = *piece.compute;
      op.shape = op.kind == ComputeKind::kMatmul ? Shape::of({op.shape[0], op.shape[1] / chunks, op.shape[2], op.shape[3]})
                                                 : Shape::of({op.shape[0] / chunks});  // the FP8 cast: 1-D
      op.flops *= share;
      op.bytes = op.kind == ComputeKind::kMatmul ? gemm_bytes(op) : op.bytes * share;
    }
    if (piece.bias_gradient) {
      const Shape& sums = piece.bias_gradient->shape;
      piece.bias_gradient = bias_gradient(sums[0], sums[1] / chunks, sums[2]);
    }
    for (auto* collective : {&piece.collective, &piece.backward_collective, &piece.regather}) {
      if (!*collective) continue;
      (*collective)->bytes /= chunks;
      (*collective)->userbuffers = true;
    }
    piece.saved_bytes *= share;
    if (c > 0) piece.params.clear();
    return piece;
  }

  ComputeOp make(ComputeKind kind, Shape shape) const {
    ComputeOp op;
    op.kind = kind;
    op.phase = Phase::kForward;
    op.dtype = shape_.dtype;
    op.shape = shape;
    return op;
  }
  static ComputeOp backward_of(const ComputeOp& fwd, Shape shape) {
    ComputeOp op = fwd;
    op.phase = Phase::kBackward;
    op.shape = shape;
    return op;
  }
  CollectiveOp collective(CollectiveKind kind, double bytes) const {
    return program::make_collective(kind, shape_.tp.group, bytes, shape_.dtype);
  }

  BlockShape shape_;
  double element_bytes_;
  Block block_;
};

// Norm over the rank's tokens × h: reads and writes the activations; keeps its input (and the
// fp32 per-token statistics) for backward.
void add_norm(BlockBuilder& builder, const ModelSpec& model, const std::string& name) {
  std::vector<std::size_t> params = {builder.param(name + ".weight", model.hidden)};
  if (model.norm == NormKind::kLayerNorm) params.push_back(builder.param(name + ".bias", model.hidden));
  const std::int64_t tokens = builder.local_tokens();
  const double elements = static_cast<double>(tokens * model.hidden);
  const double statistics = kFp32Bytes * static_cast<double>(tokens) * (model.norm == NormKind::kLayerNorm ? 2 : 1);
  builder.memory_bound(name, ComputeKind::kNorm, Shape::of({tokens * model.hidden}), 2 * elements * builder.e(),
                       elements * builder.e() + statistics, std::move(params));
}

// After attention or the MLP: dropout (with its mask kept) and the residual add.
//   fused (model.fused_dropout_add): one kernel reads the branch and the residual and writes the
//     sum and the mask; its backward reads the gradient and the mask and writes the branch's
//     gradient (the residual's passes through);
//   unfused: dropout reads the branch and writes it and the mask (backward: the gradient and the
//     mask read, one written), then the add reads two tensors and writes one (no backward kernel).
// Either way the sum feeds the next norm and the next residual add, so backward first adds their
// two gradients (autograd's accumulation where a tensor has two consumers). The last layer's
// output has one consumer and the embedding's two: its sum is counted on the last layer.
void add_dropout_residual(BlockBuilder& builder, const ModelSpec& model, const std::string& prefix) {
  const std::int64_t count = builder.local_tokens() * model.hidden;
  const double elements = static_cast<double>(count), e = builder.e();
  const double dropout_bytes = elements * (2 * e + kMaskBytes);
  if (model.dropout && model.fused_dropout_add) {
    builder.memory_bound(prefix + "_dropout_add", ComputeKind::kElementwise, Shape::of({count}),
                         elements * (3 * e + kMaskBytes), kMaskBytes * elements, {}, true, dropout_bytes);
  } else {
    if (model.dropout) {
      builder.memory_bound(prefix + "_dropout", ComputeKind::kElementwise, Shape::of({count}), dropout_bytes,
                           kMaskBytes * elements, {}, true, dropout_bytes);
    }
    builder.memory_bound(prefix + "_residual", ComputeKind::kElementwise, Shape::of({count}), 3 * elements * e, 0, {}, false);
  }
  builder.sum_gradients_first(prefix + "_residual_grad_sum", count);
}

// Weights (+ bias) of a linear layer as this rank holds them: columns split for a
// column-parallel layer (with its bias), rows split for a row-parallel one (bias replicated).
std::vector<std::size_t> linear_params(BlockBuilder& builder, const ModelSpec& model, const std::string& name,
                                       std::int64_t in, std::int64_t out, bool column_parallel, bool bias = false) {
  const std::int64_t t = builder.t();
  std::vector<std::size_t> params = {builder.param(name + ".weight", in * out / t)};
  if (model.biases || bias) params.push_back(builder.param(name + ".bias", column_parallel ? out / t : out, false, true));
  return params;
}

// Multi-head latent attention's projections (DeepSeek-V2, §2.1): the hidden state projected down
// to the query latent and to the key/value latent with the shared rotary key, each latent
// RMS-normalised, then projected up per head. As Megatron-Core splits them, the down projections
// are replicated on every tensor-parallel rank and the up projections column-parallel.
void add_latent_projections(BlockBuilder& builder, const ModelSpec& model) {
  const MlaSpec& mla = *model.mla;
  const std::int64_t tokens = builder.tokens(), t = builder.t(), h = model.hidden;
  const double e = builder.e();
  const double token_row = static_cast<double>(tokens * h) * e;
  const auto latent_norm = [&](const std::string& name, std::int64_t width) {
    const double elements = static_cast<double>(tokens * width);
    builder.memory_bound(name, ComputeKind::kNorm, Shape::of({tokens * width}), 2 * elements * e,
                         elements * e + kFp32Bytes * static_cast<double>(tokens), {builder.param(name + ".weight", width)});
  };
  const std::int64_t query_width = model.heads * mla.qk_head_dim();
  if (mla.q_lora_rank > 0) {
    builder.matmul("q_down", tokens, mla.q_lora_rank, h, token_row, {builder.param("q_down_proj.weight", h * mla.q_lora_rank)}, true);
    latent_norm("q_norm", mla.q_lora_rank);
    builder.matmul("q_up", tokens, query_width / t, mla.q_lora_rank, static_cast<double>(tokens * mla.q_lora_rank) * e,
                   linear_params(builder, model, "q_up_proj", mla.q_lora_rank, query_width, true));
  } else {
    builder.matmul("q_proj", tokens, query_width / t, h, token_row, linear_params(builder, model, "q_proj", h, query_width, true), true);
  }
  const std::int64_t kv_down_width = mla.kv_lora_rank + mla.qk_rope_head_dim;
  builder.matmul("kv_down", tokens, kv_down_width, h, token_row, {builder.param("kv_down_proj.weight", h * kv_down_width)}, true);
  latent_norm("kv_norm", mla.kv_lora_rank);
  const std::int64_t kv_up_width = model.heads * (mla.qk_nope_head_dim + mla.v_head_dim);
  builder.matmul("kv_up", tokens, kv_up_width / t, mla.kv_lora_rank, static_cast<double>(tokens * mla.kv_lora_rank) * e,
                 linear_params(builder, model, "kv_up_proj", mla.kv_lora_rank, kv_up_width, true));
}

// A tensor-parallel MLP of `width` (Megatron's column-parallel gate/up and row-parallel down
// projections between f and g): the dense layers' MLP, and a MoE layer's shared experts.
void add_mlp(BlockBuilder& builder, const ModelSpec& model, const std::string& prefix, std::int64_t width) {
  const std::int64_t tokens = builder.tokens(), h = model.hidden;
  const double token_row = static_cast<double>(tokens * h) * builder.e();
  builder.enter_tensor_parallel(prefix + "_f", token_row);
  const std::int64_t f = width / builder.t();
  const double ffn_row = static_cast<double>(tokens * f) * builder.e();
  const std::string name = prefix == "mlp" ? "" : prefix + ".";
  if (model.mlp == MlpKind::kSwiGlu) {
    std::vector<std::size_t> gate_up = linear_params(builder, model, name + "gate_proj", h, width, true);
    for (std::size_t p : linear_params(builder, model, name + "up_proj", h, width, true)) gate_up.push_back(p);
    builder.matmul(prefix + "_gate_up", tokens, 2 * f, h, token_row, std::move(gate_up), true);
    // silu(gate) · up keeps both inputs.
    builder.memory_bound(prefix + "_act", ComputeKind::kElementwise, Shape::of({tokens * f}), 3 * ffn_row, 2 * ffn_row);
  } else {
    builder.matmul(prefix + "_up", tokens, f, h, token_row, linear_params(builder, model, name + "up_proj", h, width, true), true);
    builder.memory_bound(prefix + "_act", ComputeKind::kElementwise, Shape::of({tokens * f}), 2 * ffn_row, ffn_row);
  }
  builder.matmul(prefix + "_down", tokens, h, f, ffn_row, linear_params(builder, model, name + "down_proj", width, h, false),
                 false, builder.row_parallel_bias_rows(tokens));
  builder.leave_tensor_parallel(prefix + "_g", token_row);
}

// This rank's experts' share of a layer's routed token copies, the largest share of any rank
// in the expert-parallel group, and the share sent at all (1 − dropped).
struct RankShares {
  double own = 0;
  double hottest = 0;
  double sent = 0;
};
RankShares rank_shares(const ModelSpec& model, const ExpertParallel& ep, std::int64_t layer) {
  const std::int64_t experts = model.moe->experts, local = experts / ep.degree;
  RankShares shares;
  for (std::int32_t rank = 0; rank < ep.degree; ++rank) {
    double share = 0;
    for (std::int64_t expert = rank * local; expert < (rank + 1) * local; ++expert) {
      share += ep.routing != nullptr ? ep.routing->shares[static_cast<std::size_t>(layer)][static_cast<std::size_t>(expert)]
                                     : 1.0 / static_cast<double>(experts);
    }
    if (rank == ep.rank) shares.own = share;
    shares.hottest = std::max(shares.hottest, share);
    shares.sent += share;
  }
  return shares;
}

// A MoE layer's MLP (ExpertParallel in the header). Per rank, with T_l tokens outside the
// tensor-parallel region (b·s, or b·s/t with sequence parallelism), k = top_k, E experts over
// ep ranks, and this rank's experts receiving a share σ of the layer's routed copies (1/ep
// when balanced): the router GEMM [T_l,h]·[h,E] and its softmax/top-k; the permutation of the
// T_l·k copies into expert order; the dispatch all-to-all, each rank sending its copies
// (T_l·k·h elements), priced at the hottest receiver's max(σ)·ep·T_l·k·h; under tensor
// parallelism the all-gather of the received rows over the tensor-parallel group, making
// R = σ·ep·T_l·k·t rows; the experts' grouped GEMMs (E/ep GEMMs of R/(E/ep) rows, width
// expert_ffn/t), their activation; the reduce-scatter and the combine all-to-all mirroring the
// dispatch; the unpermutation, weighting each copy by its router probability and summing.
// FLOPs of the routed part: 2·R·h·(3·expert_ffn/t) forward for SwiGLU — 6·h·expert_ffn per
// token copy over all ranks, as a dense MLP of that width per copy.
void add_moe(BlockBuilder& builder, const ModelSpec& model, std::int64_t layer) {
  const MoeSpec& moe = *model.moe;
  const ExpertParallel& ep = builder.shape().ep;
  const std::int64_t h = model.hidden, t = builder.t(), k = moe.top_k;
  const std::int64_t local_tokens = builder.local_tokens();
  const double e = builder.e();
  const double token_row = static_cast<double>(local_tokens * h) * e;
  const double copies = static_cast<double>(local_tokens * k);

  builder.matmul("router", local_tokens, moe.experts, h, token_row, {builder.param("router.weight", h * moe.experts)});
  const double logits = static_cast<double>(local_tokens * moe.experts);
  // Reads the logits, writes the fp32 probabilities (kept for backward) and the top-k indices.
  builder.memory_bound("router_topk", ComputeKind::kElementwise, Shape::of({local_tokens * moe.experts}),
                       logits * (e + kFp32Bytes) + copies * kTokenIdBytes, logits * kFp32Bytes);
  const RankShares shares = rank_shares(model, ep, layer);
  builder.memory_bound("permute", ComputeKind::kElementwise, Shape::of({local_tokens * k * h}),
                       (1 + shares.sent * static_cast<double>(k)) * token_row, 0);
  const double dispatched = std::max(shares.sent, shares.hottest * ep.degree) * copies * static_cast<double>(h) * e;
  std::optional<std::size_t> dispatch;
  if (ep.degree > 1) {
    dispatch = builder.collective_step("dispatch", CollectiveKind::kAllToAll, ep.group, dispatched, CollectiveKind::kAllToAll,
                                       ep.shared_expert_overlap);
  }
  if (moe.shared_width() > 0) {
    add_mlp(builder, model, "shared_expert", moe.shared_width());
    if (moe.shared_expert_gate) {
      builder.matmul("shared_expert_gate", local_tokens, 1, h, 0, {builder.param("shared_expert_gate.weight", h)});
    }
  }
  const std::size_t first_routed = builder.next_step();
  const std::int64_t rows = std::llround(shares.own * ep.degree * copies * static_cast<double>(builder.sequence_parallel() ? t : 1));
  const double rows_bytes = static_cast<double>(rows * h) * e;
  if (builder.sequence_parallel()) {
    builder.collective_step("expert_gather", CollectiveKind::kAllGather, builder.shape().tp.group, rows_bytes,
                            CollectiveKind::kReduceScatter);
  }
  const std::int64_t local_experts = moe.experts / ep.degree;
  const std::int64_t rows_per_expert = std::max<std::int64_t>(1, rows / local_experts);
  const std::int64_t f = moe.expert_ffn_hidden / t;
  const double ffn_rows = static_cast<double>(rows * f) * e;
  const auto expert_params = [&](const std::string& name, std::int64_t in, std::int64_t out, bool column) {
    std::vector<std::size_t> params = {builder.param(name + ".weight", local_experts * in * out / t, true)};
    if (model.biases) params.push_back(builder.param(name + ".bias", local_experts * (column ? out / t : out), true, true));
    return params;
  };
  const std::int64_t in_width = model.mlp == MlpKind::kSwiGlu ? 2 * moe.expert_ffn_hidden : moe.expert_ffn_hidden;
  builder.grouped_matmul("experts_gate_up", local_experts, rows_per_expert, in_width / t, h, rows_bytes,
                         expert_params("experts.gate_up_proj", h, in_width, true));
  const bool gated = model.mlp == MlpKind::kSwiGlu;
  builder.memory_bound("experts_act", ComputeKind::kElementwise, Shape::of({rows * f}), (gated ? 3 : 2) * ffn_rows,
                       (gated ? 2 : 1) * ffn_rows);
  builder.grouped_matmul("experts_down", local_experts, rows_per_expert, h, f, ffn_rows,
                         expert_params("experts.down_proj", moe.expert_ffn_hidden, h, false), false,
                         builder.row_parallel_bias_rows(rows_per_expert));
  if (dispatch) builder.step(first_routed).waits_for.push_back(*dispatch);
  if (builder.sequence_parallel()) {
    builder.collective_step("expert_scatter", CollectiveKind::kReduceScatter, builder.shape().tp.group, rows_bytes,
                            CollectiveKind::kAllGather);
  }
  if (ep.degree > 1) {
    builder.collective_step("combine", CollectiveKind::kAllToAll, ep.group, dispatched, CollectiveKind::kAllToAll);
  }
  // Reads every returned copy and the probabilities, writes the weighted sum; keeps the returned
  // copies for the gradient of the router probabilities.
  builder.memory_bound("unpermute", ComputeKind::kElementwise, Shape::of({local_tokens * k * h}),
                       (1 + shares.sent * static_cast<double>(k)) * token_row, shares.sent * copies * static_cast<double>(h) * e);
}

// --moe-shared-expert-overlap in backward: the shared experts' backward steps move to just after the combine's all-to-all, which
// they then run beside; the routed experts' first backward step waits for that all-to-all.
// Every step's waits are renumbered to the new order.
void overlap_shared_experts_in_backward(Block& block) {
  auto& backward = block.backward;
  const auto find = [&](std::string_view part) {
    return static_cast<std::size_t>(std::find_if(backward.begin(), backward.end(),
                                                 [&](const BackwardStep& step) { return step.name.find(part) != std::string::npos; }) -
                                    backward.begin());
  };
  // In forward the shared experts directly follow the dispatch: in backward they directly precede it.
  const std::size_t combine = find(".bwd.combine");
  const std::size_t first_shared = find(".bwd.shared_expert");
  const std::size_t last_shared = find(".bwd.dispatch") - 1;
  if (combine >= backward.size() || first_shared >= backward.size() || last_shared < first_shared) return;
  std::vector<std::size_t> order;  // new position → old index
  for (std::size_t i = 0; i <= combine; ++i) order.push_back(i);
  for (std::size_t i = first_shared; i <= last_shared; ++i) order.push_back(i);
  for (std::size_t i = combine + 1; i < first_shared; ++i) order.push_back(i);
  for (std::size_t i = last_shared + 1; i < backward.size(); ++i) order.push_back(i);
  std::vector<std::size_t> position(backward.size());
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  std::vector<BackwardStep> reordered;
  for (std::size_t old : order) {
    reordered.push_back(std::move(backward[old]));
    for (std::size_t& wait : reordered.back().waits_for) wait = position[wait];
  }
  reordered[position[combine]].overlapped = true;
  reordered[position[combine + 1]].waits_for.push_back(position[combine]);
  backward = std::move(reordered);
}

}  // namespace

double Block::saved_bytes() const {
  double total = 0;
  for (const auto& step : forward) total += step.saved_bytes;
  return total;
}

double Block::score_bytes() const {
  double total = 0;
  for (const auto& step : forward) total += step.score_bytes;
  return total;
}

double Block::forward_flops() const {
  double total = 0;
  for (const auto& step : forward) total += step.compute ? step.compute->flops : 0;
  return total;
}

std::int64_t Block::parameter_elements() const {
  return std::accumulate(params.begin(), params.end(), std::int64_t{0},
                         [](std::int64_t sum, const ParamTensor& p) { return sum + p.elements; });
}

std::int64_t Block::gradient_elements(const BackwardStep& step) const {
  std::int64_t elements = 0;
  for (const std::size_t param : step.grads_ready) elements += params[param].elements;
  return elements;
}

Block embedding_block(const ModelSpec& model, const BlockShape& shape) {
  BlockBuilder builder("embedding", shape);
  const std::int64_t tokens = builder.tokens();
  // The token table is split over the vocabulary; positions are replicated.
  std::vector<std::size_t> params = {builder.param("tokens", builder.vocab_rows(model) * model.hidden)};
  if (model.learned_positions) params.push_back(builder.param("positions", model.sequence * model.hidden));
  const double rows = static_cast<double>(tokens * model.hidden) * builder.e();
  builder.set_input_bytes(kTokenIdBytes * static_cast<double>(tokens));
  // Gathers T rows and writes them; backward scatters into a zeroed dense table gradient.
  builder.memory_bound("lookup", ComputeKind::kEmbedding, Shape::of({tokens, model.hidden}), 2 * rows,
                       kTokenIdBytes * static_cast<double>(tokens), std::move(params));
  // Each tensor-parallel rank looked up only its part of the vocabulary: sum (or scatter).
  builder.leave_tensor_parallel("vocab_parallel", rows);
  Block block = builder.finish();
  for (BackwardStep& step : block.backward) {
    if (auto* op = std::get_if<ComputeOp>(&step.op); op && op->kind == ComputeKind::kEmbedding) {
      op->bytes = 2 * rows + static_cast<double>(builder.vocab_rows(model) * model.hidden) * builder.e();
    }
  }
  return block;
}

Block transformer_layer_block(const ModelSpec& model, const BlockShape& shape, std::int64_t layer) {
  BlockBuilder builder(fmt::format("layer{}", layer), shape);
  const std::int64_t tokens = builder.tokens();
  const std::int64_t t = builder.t();
  const std::int64_t h = model.hidden;
  const double token_row = static_cast<double>(tokens * h) * builder.e();  // a full b·s·h activation
  const bool flash = model.attention == AttentionKind::kFlash;
  builder.set_input_bytes(static_cast<double>(builder.local_tokens() * h) * builder.e());
  builder.mark_layer();

  add_norm(builder, model, "attn_norm");
  builder.enter_tensor_parallel("attn_f", token_row);
  if (model.mla) {
    add_latent_projections(builder, model);
  } else {
    const std::int64_t kv = model.kv_dim();
    std::vector<std::size_t> qkv = linear_params(builder, model, "q_proj", h, h, true, model.qkv_biases);
    for (const char* name : {"k_proj", "v_proj"}) {
      for (std::size_t p : linear_params(builder, model, name, h, kv, true, model.qkv_biases)) qkv.push_back(p);
    }
    builder.matmul("qkv", tokens, (h + 2 * kv) / t, h, token_row, std::move(qkv), true);
  }
  builder.attention(model);
  // With FlashAttention the output projection's input is the attention output, already kept.
  const std::int64_t attention_width = model.mla ? model.heads * model.mla->v_head_dim : h;
  builder.matmul("attn_out", tokens, h, attention_width / t,
                 flash ? 0 : static_cast<double>(tokens * attention_width) * builder.e() / static_cast<double>(t),
                 linear_params(builder, model, "o_proj", attention_width, h, false), false,
                 builder.row_parallel_bias_rows(tokens));
  builder.leave_tensor_parallel("attn_g", token_row);
  add_dropout_residual(builder, model, "attn");

  add_norm(builder, model, "mlp_norm");
  if (model.is_moe_layer(layer)) {
    add_moe(builder, model, layer);
  } else {
    add_mlp(builder, model, "mlp", model.ffn_hidden);
  }
  add_dropout_residual(builder, model, "mlp");
  // Not for MoE layers: their steps wait for the dispatch by index, which chunking would move.
  if (!model.is_moe_layer(layer)) builder.overlap_tensor_parallel();
  Block block = builder.finish();
  if (model.is_moe_layer(layer) && shape.ep.shared_expert_overlap) overlap_shared_experts_in_backward(block);
  return block;
}

Block head_block(const ModelSpec& model, const BlockShape& shape) {
  BlockShape bf16 = shape;
  bf16.fp8_linear = false;  // Transformer Engine leaves the output layer in bf16
  BlockBuilder builder("head", bf16);
  const std::int64_t tokens = builder.tokens();
  const double token_row = static_cast<double>(tokens * model.hidden) * builder.e();
  builder.set_input_bytes(static_cast<double>(builder.local_tokens() * model.hidden) * builder.e());
  add_norm(builder, model, "final_norm");
  builder.enter_tensor_parallel("head_f", token_row);
  std::vector<std::size_t> head_params;
  if (!model.tied_embeddings || shape.head_embedding_copy) {
    head_params.push_back(builder.param(model.tied_embeddings ? "word_embeddings_copy" : "lm_head.weight",
                                        builder.vocab_rows(model) * model.hidden));
  }
  builder.matmul("lm_head", tokens, builder.vocab_rows(model), model.hidden, token_row, std::move(head_params), true);
  const double logits = static_cast<double>(tokens * builder.vocab_rows(model));
  // Reads the logits, writes and keeps them in fp32 for the softmax backward.
  builder.memory_bound("loss", ComputeKind::kLoss, Shape::of({tokens, builder.vocab_rows(model)}),
                       logits * (builder.e() + 2 * kFp32Bytes), logits * kFp32Bytes);
  builder.all_reduce("loss_statistics", kLossReductions * kFp32Bytes * static_cast<double>(tokens));
  return builder.finish();
}

// Zipf weights 1/r^s for ranks r = 1..E, shuffled per layer by a Fisher–Yates pass over
// mt19937_64 draws (whose sequence the C++ standard fixes, unlike its distributions': the same
// seed gives the same loads everywhere). No expert can take more than 1/k of the copies (a
// token picks k distinct experts): the excess is spread over the others in proportion to their
// shares until none exceeds it (evenly where they have none). Then each expert is capped at
// capacity_factor/E, the rest dropped.
ExpertRouting expert_routing(const ModelSpec& model) {
  ExpertRouting routing;
  if (!model.moe) return routing;
  const MoeSpec& moe = *model.moe;
  const auto experts = static_cast<std::size_t>(moe.experts);
  std::mt19937_64 generator(moe.load_seed);
  routing.shares.resize(static_cast<std::size_t>(model.layers));
  for (std::int64_t layer = 0; layer < model.layers; ++layer) {
    if (!model.is_moe_layer(layer)) continue;
    std::vector<double> shares(experts, 1.0 / static_cast<double>(experts));
    if (moe.load == ExpertLoad::kMeasured) shares = moe.measured_fractions;
    if (moe.load == ExpertLoad::kZipf) {
      double total = 0;
      for (std::size_t r = 0; r < experts; ++r) total += shares[r] = std::pow(static_cast<double>(r + 1), -moe.zipf_exponent);
      for (double& share : shares) share /= total;
      for (std::size_t i = experts - 1; i > 0; --i) std::swap(shares[i], shares[generator() % (i + 1)]);
    }
    const double most = 1.0 / static_cast<double>(moe.top_k);
    for (std::size_t round = 0; round < experts; ++round) {
      double excess = 0, below = 0;
      for (const double share : shares) {
        if (share >= most) {
          excess += share - most;
        } else {
          below += share;
        }
      }
      if (excess <= 1e-12) break;
      if (below <= 0) {  // measured zeros below the cap: nothing to scale, so evenly
        const auto open =
            std::count_if(shares.begin(), shares.end(), [&](double share) { return share < most; });
        for (double& share : shares)
          share = share >= most ? most : excess / static_cast<double>(open);
        break;
      }
      for (double& share : shares) share = share >= most ? most : share * (1 + excess / below);
    }
    if (moe.capacity_factor) {
      for (double& share : shares) share = std::min(share, *moe.capacity_factor / static_cast<double>(experts));
    }
    routing.shares[static_cast<std::size_t>(layer)] = std::move(shares);
  }
  return routing;
}

std::vector<Block> model_blocks(const ModelSpec& model, const BlockShape& shape) {
  std::vector<Block> blocks;
  blocks.reserve(static_cast<std::size_t>(model.layers) + 2);
  blocks.push_back(embedding_block(model, shape));
  for (std::int64_t layer = 0; layer < model.layers; ++layer) {
    blocks.push_back(transformer_layer_block(model, shape, layer));
  }
  blocks.push_back(head_block(model, shape));
  return blocks;
}

}  // namespace strategies
