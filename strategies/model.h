// Transformer model descriptions: presets of published models and custom dimensions.
//
// Parameter counts follow the published architectures exactly (Llama-2-7B → 6,738,415,616;
// Llama-2-70B → 68,976,648,192; Llama-3-8B → 8,030,261,248; GPT-3 175B → 174,604,259,328);
// tests check them against those figures. The chapter rounds to 7e9 / 70e9: a scenario may
// set `parameter_count` to such a nominal figure, which then scales every parameter-sized
// quantity (weights, gradients, optimizer states, gradient buckets) while shapes and FLOPs
// stay those of the real dimensions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strategies {

enum class MlpKind { kSwiGlu, kGelu };          // gated SiLU (Llama) or GELU (GPT)
enum class NormKind { kRmsNorm, kLayerNorm };
enum class AttentionKind { kFlash, kStandard };  // fused kernel, or scores materialised

struct ModelSpec {
  std::string name;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t ffn_hidden = 0;
  std::int64_t vocab = 0;
  std::int64_t sequence = 0;  // default training sequence length
  MlpKind mlp = MlpKind::kSwiGlu;
  NormKind norm = NormKind::kRmsNorm;
  bool biases = false;              // linear layers carry biases (GPT)
  bool tied_embeddings = false;     // LM head shares the token embedding
  bool learned_positions = false;   // a learned position-embedding table (GPT)
  AttentionKind attention = AttentionKind::kFlash;
  bool causal = true;               // causal mask: fused kernels skip half the scores
  bool dropout = false;             // dropout after attention and MLP (with stored masks)
  std::optional<double> parameter_count;  // nominal total, see above

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t kv_dim() const { return kv_heads * head_dim(); }
};

std::optional<ModelSpec> model_preset(std::string_view name);
std::vector<std::string> model_preset_names();

// Parameters from the dimensions.
std::int64_t layer_parameters(const ModelSpec& model);
std::int64_t embedding_parameters(const ModelSpec& model);  // token (+ position) tables
std::int64_t head_parameters(const ModelSpec& model);       // final norm + untied LM head
std::int64_t architecture_parameters(const ModelSpec& model);
// parameter_count when set, else architecture_parameters.
double total_parameters(const ModelSpec& model);
// total_parameters / architecture_parameters: applied to every parameter-sized quantity.
double parameter_scale(const ModelSpec& model);

std::string describe(const ModelSpec& model);

}  // namespace strategies
