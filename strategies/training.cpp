// Precision and optimizer names, and model-state bytes per parameter (see training.h).
#include "strategies/training.h"

#include <array>
#include <utility>

namespace strategies {
namespace {

constexpr std::array<std::pair<std::string_view, Precision>, 4> kPrecisions = {{
    {"mixed", Precision::kMixed},
    {"bf16", Precision::kBF16},
    {"fp16", Precision::kFP16},
    {"fp32", Precision::kFP32},
}};
constexpr std::array<std::pair<std::string_view, OptimizerKind>, 3> kOptimizers = {{
    {"adam", OptimizerKind::kAdam},
    {"adamw", OptimizerKind::kAdamW},
    {"sgd", OptimizerKind::kSgd},
}};

template <typename T, std::size_t N>
std::optional<T> lookup(const std::array<std::pair<std::string_view, T>, N>& table,
                        std::string_view name) {
  for (const auto& [key, value] : table) {
    if (key == name) return value;
  }
  return std::nullopt;
}

template <typename T, std::size_t N>
std::string_view name_of(const std::array<std::pair<std::string_view, T>, N>& table, T value) {
  for (const auto& [key, entry] : table) {
    if (entry == value) return key;
  }
  return "?";
}

}  // namespace

std::optional<Precision> precision_from_name(std::string_view name) {
  return lookup(kPrecisions, name);
}
std::string_view precision_name(Precision precision) { return name_of(kPrecisions, precision); }
std::optional<OptimizerKind> optimizer_from_name(std::string_view name) {
  return lookup(kOptimizers, name);
}
std::string_view optimizer_name(OptimizerKind optimizer) { return name_of(kOptimizers, optimizer); }

program::DType compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::kFP16: return program::DType::kFP16;
    case Precision::kFP32: return program::DType::kFP32;
    default: return program::DType::kBF16;
  }
}

program::DType gradient_dtype(Precision precision) { return compute_dtype(precision); }

ModelStateBytes model_state_bytes(const TrainingSpec& training) {
  ModelStateBytes bytes;
  const double weight = static_cast<double>(program::dtype_bytes(compute_dtype(training.precision)));
  bytes.parameters = weight;
  bytes.gradients = weight;
  const bool mixed = training.precision == Precision::kMixed;
  bytes.master_weights = mixed ? 4 : 0;
  const double state = mixed ? 4 : weight;
  int moments = 0;
  switch (training.optimizer) {
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW: moments = 2; break;
    case OptimizerKind::kSgd: moments = training.sgd_momentum != 0 ? 1 : 0; break;
  }
  bytes.optimizer_states = moments * state;
  return bytes;
}

}  // namespace strategies
