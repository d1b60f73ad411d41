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

// How a trained router spreads tokens over the routed experts of a MoE layer:
//   uniform   every expert receives T·k/E token copies (the aim of load-balancing losses);
//   zipf      expert popularity follows Zipf's law, weight ∝ 1/rank^s, the ranks shuffled per
//             layer with a seeded generator (hot experts differ from layer to layer);
//   measured  per-expert fractions from a real run, the same for every MoE layer.
enum class ExpertLoad { kUniform, kZipf, kMeasured };

// Mixture of experts (Shazeer et al., 2017; Fedus et al., Switch Transformer, 2021): in a MoE
// layer the MLP is replaced by `experts` routed expert MLPs, each of width expert_ffn_hidden,
// of which a softmax top-k router picks `top_k` per token, plus shared experts every token
// passes through (DeepSeekMoE, Dai et al., 2024). Layer i is a MoE layer when
// i ≥ first_dense_layers and (i − first_dense_layers) % layer_frequency == 0 (Megatron-Core's
// --moe-layer-freq; DeepSeek's first_k_dense_replace). Without a capacity factor the layer is
// dropless; with one, an expert takes at most capacity_factor · T·k/E tokens and drops the rest
// (GShard, Lepikhin et al., 2020), without padding to capacity.
struct MoeSpec {
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t expert_ffn_hidden = 0;
  std::int64_t shared_experts = 0;
  std::int64_t shared_expert_ffn_hidden = 0;  // the shared experts' total width; 0: shared_experts × expert_ffn_hidden
  bool shared_expert_gate = false;            // Qwen-MoE: a sigmoid gate (h → 1) scales the shared output
  std::int64_t layer_frequency = 1;
  std::int64_t first_dense_layers = 0;
  std::optional<double> capacity_factor = {};  // none: dropless
  ExpertLoad load = ExpertLoad::kUniform;
  double zipf_exponent = 1.0;
  std::uint64_t load_seed = 1;
  std::vector<double> measured_fractions = {};  // per expert, summing to 1 (load = measured)

  std::int64_t shared_width() const {
    return shared_expert_ffn_hidden > 0 ? shared_expert_ffn_hidden : shared_experts * expert_ffn_hidden;
  }
};

// Multi-head latent attention (DeepSeek-V2, 2024, §2.1): queries and keys/values are projected
// down to low-rank latents (q_lora_rank, kv_lora_rank, each RMS-normalised) and up again per
// head; each head's query and key carry qk_nope_head_dim plain and qk_rope_head_dim rotary
// features (the rotary key shared by all heads), its value v_head_dim.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;  // 0: queries projected directly (DeepSeek-V2-Lite)
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  std::int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

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
  bool qkv_biases = false;          // only the query, key and value projections do (Qwen)
  bool tied_embeddings = false;     // LM head shares the token embedding
  bool learned_positions = false;   // a learned position-embedding table (GPT)
  AttentionKind attention = AttentionKind::kFlash;
  bool causal = true;               // causal mask: fused kernels skip half the scores
  bool dropout = false;             // dropout after attention and MLP (with stored masks)
  // Dropout and the residual add after attention and MLP in one kernel (Megatron-LM's
  // bias_dropout_add_fused_train, Transformer Engine); false: two kernels (PyTorch eager).
  bool fused_dropout_add = true;
  std::optional<double> parameter_count;  // nominal total, see above
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;

  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t kv_dim() const { return kv_heads * head_dim(); }
  bool is_moe_layer(std::int64_t layer) const {
    return moe && layer >= moe->first_dense_layers && (layer - moe->first_dense_layers) % moe->layer_frequency == 0;
  }
  std::int64_t moe_layers() const;
};

std::optional<ModelSpec> model_preset(std::string_view name);
std::vector<std::string> model_preset_names();

// Parameters from the dimensions.
std::int64_t attention_parameters(const ModelSpec& model);
std::int64_t expert_parameters(const ModelSpec& model);      // one routed expert's MLP
std::int64_t layer_parameters(const ModelSpec& model, std::int64_t layer);
std::int64_t embedding_parameters(const ModelSpec& model);  // token (+ position) tables
std::int64_t head_parameters(const ModelSpec& model);       // final norm + untied LM head
std::int64_t architecture_parameters(const ModelSpec& model);
// The parameters one token passes through: all but the routed experts it is not sent to
// (every MoE layer counts top_k of its experts). Equal to architecture_parameters for a dense model.
std::int64_t active_parameters(const ModelSpec& model);
// parameter_count when set, else architecture_parameters.
double total_parameters(const ModelSpec& model);
// total_parameters / architecture_parameters: applied to every parameter-sized quantity.
double parameter_scale(const ModelSpec& model);

std::string describe(const ModelSpec& model);
// A parameter count as people write it: "6.74 B", "3.41 M" (a CPU-sized model), "912".
std::string parameter_count_text(double parameters);

}  // namespace strategies
