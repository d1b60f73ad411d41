// Builders for the blocks of a transformer (see transformer_ops.h for the formulas).
#include "strategies/transformer_ops.h"

#include <fmt/format.h>

namespace strategies {
namespace {

using program::ComputeKind;
using program::ComputeOp;
using program::Phase;
using program::Shape;

constexpr double kFlashBackwardFactor = 2.5;
constexpr double kStandardBackwardFactor = 2.0;
constexpr double kMemoryBoundBackwardFactor = 2.0;
constexpr double kFp32Bytes = 4;
constexpr double kMaskBytes = 1;      // dropout masks are stored as bytes
constexpr double kTokenIdBytes = 8;   // int64 token ids

// Builds one block's forward steps, then derives its backward steps.
class BlockBuilder {
 public:
  BlockBuilder(std::string name, const BlockShape& shape)
      : shape_(shape), element_bytes_(static_cast<double>(program::dtype_bytes(shape.dtype))) {
    block_.name = std::move(name);
  }

  double e() const { return element_bytes_; }
  std::int64_t tokens() const { return shape_.micro_batch * shape_.sequence; }

  std::size_t param(std::string name, std::int64_t elements) {
    block_.params.push_back({block_.name + "." + std::move(name), elements});
    return block_.params.size() - 1;
  }

  // [M,K]·[K,N] on T = M rows.
  void matmul(std::string name, std::int64_t m, std::int64_t n, std::int64_t k, double saved,
              std::vector<std::size_t> params) {
    ComputeOp op = make(ComputeKind::kMatmul, Shape::of({1, m, n, k}));
    op.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    op.bytes = static_cast<double>(m * k + k * n + m * n) * e();
    block_.forward.push_back({std::move(name), op, saved, std::move(params), true});
  }

  void memory_bound(std::string name, ComputeKind kind, Shape shape, double bytes, double saved,
                    std::vector<std::size_t> params = {}, bool has_backward = true) {
    ComputeOp op = make(kind, shape);
    op.bytes = bytes;
    block_.forward.push_back({std::move(name), op, saved, std::move(params), has_backward});
  }

  void attention(const ModelSpec& model) {
    const std::int64_t b = shape_.micro_batch;
    const std::int64_t s = shape_.sequence;
    const double t = static_cast<double>(tokens());
    const double h = static_cast<double>(model.hidden);
    const double kv = static_cast<double>(model.kv_dim());
    const double scores = static_cast<double>(b * model.heads) * static_cast<double>(s) *
                          static_cast<double>(s);
    ComputeOp op = make(ComputeKind::kAttention,
                        Shape::of({b, model.heads, model.kv_heads, s, model.head_dim()}));
    op.flops = 4.0 * static_cast<double>(b) * static_cast<double>(s) * static_cast<double>(s) * h *
               (model.causal ? 0.5 : 1.0);
    const double qkvo_bytes = (2 * t * h + 2 * t * kv) * e();
    double saved = 0;
    if (model.attention == AttentionKind::kFlash) {
      op.bytes = qkvo_bytes;
      // Q, K, V, the output, and the fp32 log-sum-exp per query and head.
      saved = qkvo_bytes + kFp32Bytes * static_cast<double>(b * model.heads * s);
    } else {
      op.bytes = qkvo_bytes + 2 * scores * e();
      // Q, K, V and the softmax output; with dropout its mask and its output too.
      saved = (t * h + 2 * t * kv) * e() + scores * e() +
              (model.dropout ? scores * (kMaskBytes + e()) : 0);
    }
    block_.forward.push_back({"attention", op, saved, {}, true});
  }

  Block finish(const ModelSpec& model) {
    for (auto it = block_.forward.rbegin(); it != block_.forward.rend(); ++it) {
      if (!it->has_backward) continue;
      const ComputeOp& fwd = it->op;
      if (fwd.kind == ComputeKind::kMatmul) {
        const std::int64_t m = fwd.shape[1], n = fwd.shape[2], k = fwd.shape[3];
        ComputeOp dgrad = backward_of(fwd, Shape::of({1, m, k, n}));
        ComputeOp wgrad = backward_of(fwd, Shape::of({1, k, n, m}));
        dgrad.flops = wgrad.flops = fwd.flops;
        dgrad.bytes = wgrad.bytes = fwd.bytes;
        block_.backward.push_back({it->name + ".dgrad", dgrad, {}});
        block_.backward.push_back({it->name + ".wgrad", wgrad, it->params});
      } else {
        ComputeOp bwd = backward_of(fwd, fwd.shape);
        if (fwd.kind == ComputeKind::kAttention) {
          const double factor = model.attention == AttentionKind::kFlash ? kFlashBackwardFactor
                                                                         : kStandardBackwardFactor;
          bwd.flops = fwd.flops * factor;
          bwd.bytes = fwd.bytes * kMemoryBoundBackwardFactor;
        } else {
          bwd.bytes = fwd.bytes * kMemoryBoundBackwardFactor;
        }
        block_.backward.push_back({it->name, bwd, it->params});
      }
    }
    for (auto& step : block_.forward) step.name = block_.name + ".fwd." + step.name;
    for (auto& step : block_.backward) step.name = block_.name + ".bwd." + step.name;
    return std::move(block_);
  }

 private:
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

  BlockShape shape_;
  double element_bytes_;
  Block block_;
};

// Norm over T·h elements: reads and writes the activations; keeps its input (and the fp32
// per-token statistics) for backward.
void add_norm(BlockBuilder& builder, const ModelSpec& model, const std::string& name) {
  std::vector<std::size_t> params = {builder.param(name + ".weight", model.hidden)};
  if (model.norm == NormKind::kLayerNorm) params.push_back(builder.param(name + ".bias", model.hidden));
  const double elements = static_cast<double>(builder.tokens() * model.hidden);
  const double statistics = kFp32Bytes * static_cast<double>(builder.tokens()) *
                            (model.norm == NormKind::kLayerNorm ? 2 : 1);
  builder.memory_bound(name, program::ComputeKind::kNorm, Shape::of({builder.tokens() * model.hidden}),
                       2 * elements * builder.e(), elements * builder.e() + statistics,
                       std::move(params));
}

void add_dropout(BlockBuilder& builder, const ModelSpec& model, const std::string& name) {
  if (!model.dropout) return;
  const std::int64_t elements = builder.tokens() * model.hidden;
  builder.memory_bound(name, program::ComputeKind::kElementwise, Shape::of({elements}),
                       2 * static_cast<double>(elements) * builder.e(),
                       kMaskBytes * static_cast<double>(elements));
}

void add_residual(BlockBuilder& builder, const ModelSpec& model, const std::string& name) {
  const std::int64_t elements = builder.tokens() * model.hidden;
  builder.memory_bound(name, program::ComputeKind::kElementwise, Shape::of({elements}),
                       3 * static_cast<double>(elements) * builder.e(), 0, {}, false);
}

// Linear layer weights (+ bias) as parameter tensors.
std::vector<std::size_t> linear_params(BlockBuilder& builder, const ModelSpec& model,
                                       const std::string& name, std::int64_t in, std::int64_t out) {
  std::vector<std::size_t> params = {builder.param(name + ".weight", in * out)};
  if (model.biases) params.push_back(builder.param(name + ".bias", out));
  return params;
}

}  // namespace

double Block::saved_bytes() const {
  double total = 0;
  for (const auto& step : forward) total += step.saved_bytes;
  return total;
}

double Block::forward_flops() const {
  double total = 0;
  for (const auto& step : forward) total += step.op.flops;
  return total;
}

Block embedding_block(const ModelSpec& model, const BlockShape& shape) {
  BlockBuilder builder("embedding", shape);
  const std::int64_t t = builder.tokens();
  std::vector<std::size_t> params = {builder.param("tokens", model.vocab * model.hidden)};
  if (model.learned_positions) params.push_back(builder.param("positions", model.sequence * model.hidden));
  // Gathers T rows and writes them; backward scatters into a zeroed dense table gradient.
  const double rows = static_cast<double>(t * model.hidden) * builder.e();
  builder.memory_bound("lookup", program::ComputeKind::kEmbedding, Shape::of({t, model.hidden}),
                       2 * rows, kTokenIdBytes * static_cast<double>(t), std::move(params));
  Block block = builder.finish(model);
  block.backward.back().op.bytes =
      2 * rows + static_cast<double>(model.vocab * model.hidden) * builder.e();
  return block;
}

Block transformer_layer_block(const ModelSpec& model, const BlockShape& shape, std::int64_t layer) {
  BlockBuilder builder(fmt::format("layer{}", layer), shape);
  const std::int64_t t = builder.tokens();
  const std::int64_t h = model.hidden;
  const std::int64_t kv = model.kv_dim();
  const double token_row = static_cast<double>(t * h) * builder.e();
  const bool flash = model.attention == AttentionKind::kFlash;

  add_norm(builder, model, "attn_norm");
  std::vector<std::size_t> qkv = linear_params(builder, model, "q_proj", h, h);
  for (const char* name : {"k_proj", "v_proj"}) {
    for (std::size_t p : linear_params(builder, model, name, h, kv)) qkv.push_back(p);
  }
  builder.matmul("qkv", t, h + 2 * kv, h, token_row, std::move(qkv));
  builder.attention(model);
  // With FlashAttention the output projection's input is the attention output, already kept.
  builder.matmul("attn_out", t, h, h, flash ? 0 : token_row,
                 linear_params(builder, model, "o_proj", h, h));
  add_dropout(builder, model, "attn_dropout");
  add_residual(builder, model, "attn_residual");

  add_norm(builder, model, "mlp_norm");
  const std::int64_t f = model.ffn_hidden;
  const double ffn_row = static_cast<double>(t * f) * builder.e();
  if (model.mlp == MlpKind::kSwiGlu) {
    std::vector<std::size_t> gate_up = linear_params(builder, model, "gate_proj", h, f);
    for (std::size_t p : linear_params(builder, model, "up_proj", h, f)) gate_up.push_back(p);
    builder.matmul("mlp_gate_up", t, 2 * f, h, token_row, std::move(gate_up));
    // silu(gate) · up keeps both inputs.
    builder.memory_bound("mlp_act", program::ComputeKind::kElementwise, Shape::of({t * f}),
                         3 * ffn_row, 2 * ffn_row);
  } else {
    builder.matmul("mlp_up", t, f, h, token_row, linear_params(builder, model, "up_proj", h, f));
    builder.memory_bound("mlp_act", program::ComputeKind::kElementwise, Shape::of({t * f}),
                         2 * ffn_row, ffn_row);
  }
  builder.matmul("mlp_down", t, h, f, ffn_row, linear_params(builder, model, "down_proj", f, h));
  add_dropout(builder, model, "mlp_dropout");
  add_residual(builder, model, "mlp_residual");
  return builder.finish(model);
}

Block head_block(const ModelSpec& model, const BlockShape& shape) {
  BlockBuilder builder("head", shape);
  const std::int64_t t = builder.tokens();
  add_norm(builder, model, "final_norm");
  std::vector<std::size_t> head_params;
  if (!model.tied_embeddings) head_params.push_back(builder.param("lm_head.weight", model.vocab * model.hidden));
  builder.matmul("lm_head", t, model.vocab, model.hidden,
                 static_cast<double>(t * model.hidden) * builder.e(), std::move(head_params));
  const double logits = static_cast<double>(t * model.vocab);
  // Reads the logits, writes and keeps them in fp32 for the softmax backward.
  builder.memory_bound("loss", program::ComputeKind::kLoss, Shape::of({t, model.vocab}),
                       logits * (builder.e() + 2 * kFp32Bytes), logits * kFp32Bytes);
  return builder.finish(model);
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
