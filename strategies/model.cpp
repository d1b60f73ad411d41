// Model presets with their sources, and parameter counting.
//
// Llama-2 (Touvron et al., 2023, table 1 and the released configs): 7B — 32 layers, hidden
// 4096, 32 heads, FFN 11008; 70B — 80 layers, hidden 8192, 64 heads with 8 KV heads (GQA),
// FFN 28672; vocabulary 32000, context 4096, RMSNorm, SwiGLU, untied embeddings.
// Llama-3-8B (Meta, 2024, released config): 32 layers, hidden 4096, 32 heads, 8 KV heads,
// FFN 14336, vocabulary 128256, context 8192.
// GPT-3 175B (Brown et al., 2020, table 2.1): 96 layers, d_model 12288, 96 heads, FFN
// 4·d_model, context 2048, vocabulary 50257, LayerNorm, GELU, biases, learned positions,
// tied embeddings.
// Mixtral-8x7B (Jiang et al., "Mixtral of Experts", 2024; mistralai/Mixtral-8x7B-v0.1
// config.json): Mistral-7B's attention (32 layers, hidden 4096, 32 heads, 8 KV heads) with every
// MLP replaced by 8 SwiGLU experts of width 14336, top-2 — 46.7 B parameters, 12.9 B active.
// The default sequence 4096 is Megatron-Core's Mixtral example (examples/mixtral); the model
// supports 32K.
// DeepSeek-V3 (DeepSeek-AI, 2024, §2 and §4.2; deepseek-ai/DeepSeek-V3 config.json): 61 layers,
// hidden 7168, MLA attention with 128 heads (q_lora_rank 1536, kv_lora_rank 512, qk_nope 128,
// qk_rope 64, v 128), the first 3 layers dense (FFN 18432), the other 58 MoE with 256 routed
// experts of width 2048, top-8, and 1 shared expert; vocabulary 129280, untied; pre-training
// sequence 4K — 671 B parameters, 37 B active. Not modelled: its multi-token-prediction module
// (14 B more; the 685 B of the released checkpoint), its sigmoid router with bias-based balancing
// (dtsim's router is softmax top-k: the same GEMM, the same traffic) and node-limited routing.
// Qwen1.5-MoE-A2.7B (Qwen team, 2024; Qwen/Qwen1.5-MoE-A2.7B config.json): 24 layers, hidden 2048,
// 16 heads with query/key/value biases, 60 routed experts of width 1408, top-4, one shared
// expert of width 5632 behind a sigmoid gate, vocabulary 151936 — 14.3 B parameters, 2.7 B active.
// tiny-256 and small-2048 are dtsim's own scaled-down Llama shapes for real runs
// (scenarios/real/): tiny-256 multiplies in milliseconds on one CPU core (dtsim run --backend
// mpi), small-2048 gives one GPU GEMMs large enough for cuBLAS to reach its real efficiency.
#include "strategies/model.h"

#include <fmt/format.h>

#include <utility>

namespace strategies {
namespace {

ModelSpec llama(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                std::int64_t kv_heads, std::int64_t ffn, std::int64_t vocab, std::int64_t seq) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.sequence = seq;
  return m;
}

ModelSpec gpt3_175b() {
  ModelSpec m = llama("GPT-3 175B", 96, 12288, 96, 96, 4 * 12288, 50257, 2048);
  m.mlp = MlpKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.biases = true;
  m.tied_embeddings = true;
  m.learned_positions = true;
  return m;
}

ModelSpec mixtral_8x7b() {
  ModelSpec m = llama("Mixtral-8x7B", 32, 4096, 32, 8, 14336, 32000, 4096);
  m.moe = MoeSpec{.experts = 8, .top_k = 2, .expert_ffn_hidden = 14336};
  return m;
}

ModelSpec deepseek_v3() {
  ModelSpec m = llama("DeepSeek-V3", 61, 7168, 128, 128, 18432, 129280, 4096);
  m.mla = MlaSpec{.q_lora_rank = 1536, .kv_lora_rank = 512, .qk_nope_head_dim = 128, .qk_rope_head_dim = 64, .v_head_dim = 128};
  m.moe = MoeSpec{.experts = 256, .top_k = 8, .expert_ffn_hidden = 2048, .shared_experts = 1, .first_dense_layers = 3};
  return m;
}

ModelSpec qwen15_moe_a27b() {
  ModelSpec m = llama("Qwen1.5-MoE-A2.7B", 24, 2048, 16, 16, 5632, 151936, 8192);
  m.qkv_biases = true;
  m.moe = MoeSpec{.experts = 60, .top_k = 4, .expert_ffn_hidden = 1408, .shared_experts = 1,
                  .shared_expert_ffn_hidden = 5632, .shared_expert_gate = true};
  return m;
}

const std::vector<std::pair<std::string, ModelSpec>>& presets() {
  static const std::vector<std::pair<std::string, ModelSpec>> table = {
      {"llama-2-7b", llama("Llama-2-7B", 32, 4096, 32, 32, 11008, 32000, 4096)},
      {"llama-2-70b", llama("Llama-2-70B", 80, 8192, 64, 8, 28672, 32000, 4096)},
      {"llama-3-8b", llama("Llama-3-8B", 32, 4096, 32, 8, 14336, 128256, 8192)},
      // config.json of meta-llama/Meta-Llama-3-70B and meta-llama/Llama-3.1-405B on Hugging Face.
      // The 405B's default sequence is its pre-training length, 8,192 (Llama 3 paper, §3.4.1);
      // its released config extends the context to 128K afterwards.
      {"llama-3-70b", llama("Llama-3-70B", 80, 8192, 64, 8, 28672, 128256, 8192)},
      {"llama-3.1-405b", llama("Llama-3.1-405B", 126, 16384, 128, 8, 53248, 128256, 8192)},
      {"gpt3-175b", gpt3_175b()},
      {"mixtral-8x7b", mixtral_8x7b()},
      {"deepseek-v3", deepseek_v3()},
      {"qwen1.5-moe-a2.7b", qwen15_moe_a27b()},
      {"tiny-256", llama("tiny-256 (scaled down for CPU runs)", 2, 256, 4, 4, 1024, 1024, 128)},
      {"small-2048", llama("small-2048 (scaled down for one-GPU runs)", 4, 2048, 16, 16, 8192, 32000, 2048)},
  };
  return table;
}

std::int64_t norm_parameters(const ModelSpec& m) {
  return m.norm == NormKind::kLayerNorm ? 2 * m.hidden : m.hidden;
}

}  // namespace

std::optional<ModelSpec> model_preset(std::string_view name) {
  for (const auto& [key, spec] : presets()) {
    if (key == name) return spec;
  }
  return std::nullopt;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& entry : presets()) names.push_back(entry.first);
  return names;
}

std::int64_t attention_parameters(const ModelSpec& m) {
  const std::int64_t h = m.hidden;
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    const std::int64_t query_width = m.heads * a.qk_head_dim();
    const std::int64_t queries = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * query_width
                                                   : h * query_width;
    const std::int64_t keys_values = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank +
                                     a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim);
    return queries + keys_values + m.heads * a.v_head_dim * h;
  }
  const bool qkv_biases = m.biases || m.qkv_biases;
  const std::int64_t qkv = h * (h + 2 * m.kv_dim()) + (qkv_biases ? h + 2 * m.kv_dim() : 0);
  const std::int64_t out = h * h + (m.biases ? h : 0);
  return qkv + out;
}

// An MLP of `width` (gated SwiGLU: gate and up projections, then down).
std::int64_t mlp_parameters(const ModelSpec& m, std::int64_t width) {
  const std::int64_t h = m.hidden;
  const std::int64_t in_width = m.mlp == MlpKind::kSwiGlu ? 2 * width : width;
  return h * in_width + width * h + (m.biases ? in_width + h : 0);
}

std::int64_t expert_parameters(const ModelSpec& m) { return m.moe ? mlp_parameters(m, m.moe->expert_ffn_hidden) : 0; }

// A MoE layer's MLP: the router (h → experts), the routed experts, the shared experts (and their gate).
std::int64_t moe_mlp_parameters(const ModelSpec& m) {
  const MoeSpec& moe = *m.moe;
  const std::int64_t shared = moe.shared_width() > 0 ? mlp_parameters(m, moe.shared_width()) : 0;
  return m.hidden * moe.experts + moe.experts * expert_parameters(m) + shared +
         (moe.shared_expert_gate ? m.hidden : 0);
}

std::int64_t layer_parameters(const ModelSpec& m, std::int64_t layer) {
  const std::int64_t mlp = m.is_moe_layer(layer) ? moe_mlp_parameters(m) : mlp_parameters(m, m.ffn_hidden);
  return attention_parameters(m) + mlp + 2 * norm_parameters(m);
}

std::int64_t ModelSpec::moe_layers() const {
  std::int64_t count = 0;
  for (std::int64_t layer = 0; layer < layers; ++layer) count += is_moe_layer(layer) ? 1 : 0;
  return count;
}

std::int64_t embedding_parameters(const ModelSpec& m) {
  return m.vocab * m.hidden + (m.learned_positions ? m.sequence * m.hidden : 0);
}

std::int64_t head_parameters(const ModelSpec& m) {
  return norm_parameters(m) + (m.tied_embeddings ? 0 : m.vocab * m.hidden);
}

std::int64_t architecture_parameters(const ModelSpec& m) {
  std::int64_t layers = 0;
  for (std::int64_t layer = 0; layer < m.layers; ++layer) layers += layer_parameters(m, layer);
  return layers + embedding_parameters(m) + head_parameters(m);
}

std::int64_t active_parameters(const ModelSpec& m) {
  if (!m.moe) return architecture_parameters(m);
  return architecture_parameters(m) - m.moe_layers() * (m.moe->experts - m.moe->top_k) * expert_parameters(m);
}

double total_parameters(const ModelSpec& m) {
  return m.parameter_count.value_or(static_cast<double>(architecture_parameters(m)));
}

double parameter_scale(const ModelSpec& m) {
  return total_parameters(m) / static_cast<double>(architecture_parameters(m));
}

std::string parameter_count_text(double parameters) {
  if (parameters >= 1e9) return fmt::format("{:.2f} B", parameters / 1e9);
  if (parameters >= 1e6) return fmt::format("{:.2f} M", parameters / 1e6);
  return fmt::format("{:.0f}", parameters);
}

std::string describe(const ModelSpec& m) {
  const std::string experts =
      m.moe ? fmt::format(", {} MoE layers of {} experts (top-{}{}, width {})", m.moe_layers(), m.moe->experts, m.moe->top_k,
                          m.moe->shared_experts > 0 ? fmt::format(", {} shared", m.moe->shared_experts) : "",
                          m.moe->expert_ffn_hidden)
            : "";
  const std::string active =
      m.moe ? fmt::format(" ({} active)",
                          parameter_count_text(static_cast<double>(active_parameters(m))))
            : "";
  return fmt::format(
      "{}: {} layers, hidden {}, {} heads ({} KV{}), FFN {}{}, vocab {}, seq {}, {} parameters{}",
      m.name, m.layers, m.hidden, m.heads, m.kv_heads, m.mla ? ", MLA" : "", m.ffn_hidden, experts,
      m.vocab, m.sequence, parameter_count_text(static_cast<double>(architecture_parameters(m))),
      active);
}

}  // namespace strategies
