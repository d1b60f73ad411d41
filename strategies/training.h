// How the model is trained: batch, precision, optimizer, parallel layout and the DDP knobs.
//
// Precision decides the dtype and size of every model state (bytes per parameter):
//   mixed  bf16 weights 2 + bf16 gradients 2 + fp32 master weights 4 + fp32 optimizer
//          states 4 each (Adam: m and v) — the chapter's 16 bytes/parameter (§6.2.7, table 6-3);
//   bf16 / fp16   everything in that dtype, no master copy (Adam: 2 + 2 + 2·2 = 8);
//   fp32          everything in fp32, no master copy (Adam: 4 + 4 + 2·4 = 16).
// Optimizers: Adam/AdamW keep two moments, SGD with momentum one, plain SGD none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "strategies/program/program.h"

namespace strategies {

enum class Precision { kMixed, kBF16, kFP16, kFP32 };
enum class OptimizerKind { kAdam, kAdamW, kSgd };

std::optional<Precision> precision_from_name(std::string_view name);
std::string_view precision_name(Precision precision);
std::optional<OptimizerKind> optimizer_from_name(std::string_view name);
std::string_view optimizer_name(OptimizerKind optimizer);

struct TrainingSpec {
  std::int64_t global_batch = 1;  // sequences per optimizer step, all replicas together
  std::int64_t micro_batch = 1;   // sequences per forward/backward on one replica
  std::int64_t accumulation = 1;  // micro-steps per optimizer step
  std::int64_t sequence = 0;      // tokens per sequence
  Precision precision = Precision::kMixed;
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  double sgd_momentum = 0.9;      // SGD only; 0 means plain SGD (no state)
  std::int32_t steps = 1;         // optimizer steps to simulate
};

// Bytes per parameter of each model state under a precision and optimizer.
struct ModelStateBytes {
  double parameters = 0;
  double gradients = 0;
  double master_weights = 0;
  double optimizer_states = 0;
  double total() const { return parameters + gradients + master_weights + optimizer_states; }
};
ModelStateBytes model_state_bytes(const TrainingSpec& training);

program::DType compute_dtype(Precision precision);
program::DType gradient_dtype(Precision precision);

struct ParallelSpec {
  std::string strategy = "ddp";
  std::int32_t dp = 1;
  std::int32_t tp = 1;
  std::int32_t pp = 1;
  std::int32_t world() const { return dp * tp * pp; }
};

// PyTorch DistributedDataParallel's knobs (torch.nn.parallel.DistributedDataParallel).
struct DdpSpec {
  double bucket_cap_mb = 25;     // MiB, PyTorch's default
  double first_bucket_mb = 1;    // MiB, torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES
  bool gradient_as_bucket_view = false;  // false: buckets are a second copy of the gradients
  bool no_sync = true;           // all-reduce only on the last micro-step of accumulation
  bool barrier_every_step = false;  // the chapter's anti-pattern (§6.2.5)
};

}  // namespace strategies
