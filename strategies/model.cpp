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

std::int64_t layer_parameters(const ModelSpec& m) {
  const std::int64_t h = m.hidden;
  const std::int64_t qkv = h * (h + 2 * m.kv_dim()) + (m.biases ? h + 2 * m.kv_dim() : 0);
  const std::int64_t out = h * h + (m.biases ? h : 0);
  const std::int64_t mlp_in_width = m.mlp == MlpKind::kSwiGlu ? 2 * m.ffn_hidden : m.ffn_hidden;
  const std::int64_t mlp = h * mlp_in_width + m.ffn_hidden * h +
                           (m.biases ? mlp_in_width + h : 0);
  return qkv + out + mlp + 2 * norm_parameters(m);
}

std::int64_t embedding_parameters(const ModelSpec& m) {
  return m.vocab * m.hidden + (m.learned_positions ? m.sequence * m.hidden : 0);
}

std::int64_t head_parameters(const ModelSpec& m) {
  return norm_parameters(m) + (m.tied_embeddings ? 0 : m.vocab * m.hidden);
}

std::int64_t architecture_parameters(const ModelSpec& m) {
  return m.layers * layer_parameters(m) + embedding_parameters(m) + head_parameters(m);
}

double total_parameters(const ModelSpec& m) {
  return m.parameter_count.value_or(static_cast<double>(architecture_parameters(m)));
}

double parameter_scale(const ModelSpec& m) {
  return total_parameters(m) / static_cast<double>(architecture_parameters(m));
}

std::string describe(const ModelSpec& m) {
  return fmt::format("{}: {} layers, hidden {}, {} heads ({} KV), FFN {}, vocab {}, seq {}, "
                     "{:.2f} B parameters",
                     m.name, m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.vocab,
                     m.sequence, static_cast<double>(architecture_parameters(m)) / 1e9);
}

}  // namespace strategies
