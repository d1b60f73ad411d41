// DDP lowering (see ddp.h).
#include "strategies/ddp.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <utility>

#include "strategies/layout.h"
#include "strategies/program_builder.h"
#include "strategies/transformer_ops.h"

namespace strategies {
namespace {

using program::MemoryCategory;
using program::OpIndex;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr program::StreamId kCompute = 0;
constexpr program::StreamId kComm = 1;

// Greedy bucket filling in gradient-ready order, as torch's Reducer does.
class BucketFiller {
 public:
  BucketFiller(const DdpSpec& ddp, program::GroupFamilyId group, program::DType dtype,
               double bytes_per_element)
      : ddp_(ddp), group_(group), dtype_(dtype), bytes_per_element_(bytes_per_element) {}

  // A gradient of `elements` became ready after op `ready_after`.
  void add(RankProgramBuilder& builder, std::int64_t elements, OpIndex ready_after) {
    bytes_ += static_cast<double>(elements) * bytes_per_element_;
    const double limit = (index_ == 0 ? ddp_.first_bucket_mb : ddp_.bucket_cap_mb) * kMiB;
    if (bytes_ >= limit) flush(builder, ready_after);
  }

  void flush(RankProgramBuilder& builder, OpIndex ready_after) {
    if (bytes_ <= 0) return;
    program::CollectiveOp all_reduce;
    all_reduce.kind = program::CollectiveKind::kAllReduce;
    all_reduce.group = group_;
    all_reduce.bytes = std::llround(bytes_);
    all_reduce.dtype = dtype_;
    all_reduce.algorithm = ddp_.algorithm;
    last_ = builder.add(fmt::format("ddp.bucket{}.all_reduce", index_), kComm, all_reduce,
                        {ready_after});
    ++index_;
    bytes_ = 0;
  }

  // Starts a new backward pass: bucket numbering restarts.
  void reset() {
    index_ = 0;
    bytes_ = 0;
    last_.reset();
  }
  std::optional<OpIndex> last() const { return last_; }

 private:
  const DdpSpec& ddp_;
  program::GroupFamilyId group_;
  program::DType dtype_;
  double bytes_per_element_;
  int index_ = 0;
  double bytes_ = 0;
  std::optional<OpIndex> last_;
};

// Bytes the optimizer update reads and writes per parameter.
double optimizer_bytes_per_parameter(const ModelStateBytes& state) {
  const double weights = state.master_weights > 0
                             ? 2 * state.master_weights + state.parameters  // fp32 r/w, copy out
                             : 2 * state.parameters;
  return state.gradients + 2 * state.optimizer_states + weights;
}

}  // namespace

program::Program lower_ddp(const LoweringInput& input) {
  const ModelSpec& model = input.model;
  const TrainingSpec& training = input.training;
  const DdpSpec& ddp = input.ddp;
  const std::int32_t dp = input.parallel.dp;

  program::Program program;
  program.world_size = dp;
  program.streams = {"compute", "comm"};
  program.group_families = ParallelLayout(dp, 1, 1).group_families();
  program.placement = block_placement(dp);
  const program::GroupFamilyId dp_group = *program.find_family("dp");
  const program::GroupFamilyId world_group = *program.find_family("world");

  const program::DType dtype = compute_dtype(training.precision);
  const program::DType grad_dtype = gradient_dtype(training.precision);
  const std::vector<Block> blocks =
      model_blocks(model, BlockShape{training.micro_batch, training.sequence, dtype});
  const double parameters = total_parameters(model);
  const double scale = parameter_scale(model);
  const ModelStateBytes state = model_state_bytes(training);

  RankProgramBuilder builder;
  builder.allocate("parameters", kCompute, MemoryCategory::kParameters, parameters * state.parameters);
  builder.allocate("gradients", kCompute, MemoryCategory::kGradients, parameters * state.gradients);
  if (state.master_weights > 0) {
    builder.allocate("master_weights", kCompute, MemoryCategory::kMasterWeights,
                     parameters * state.master_weights);
  }
  if (state.optimizer_states > 0) {
    builder.allocate("optimizer_states", kCompute, MemoryCategory::kOptimizerStates,
                     parameters * state.optimizer_states);
  }
  if (!ddp.gradient_as_bucket_view && dp > 1) {
    builder.allocate("ddp.bucket_buffers", kCompute, MemoryCategory::kCommBuffers,
                     parameters * state.gradients);
  }

  BucketFiller buckets(ddp, dp_group, grad_dtype,
                       static_cast<double>(program::dtype_bytes(grad_dtype)) * scale);
  // Dependencies the next compute op must wait for (outstanding all-reduces, a barrier).
  std::vector<OpIndex> wait_for;
  auto compute_deps = [&wait_for] { return std::exchange(wait_for, {}); };

  for (std::int32_t step = 0; step < training.steps; ++step) {
    for (std::int64_t micro = 0; micro < training.accumulation; ++micro) {
      const bool sync = dp > 1 && (micro == training.accumulation - 1 || !ddp.no_sync);
      for (const Block& block : blocks) {
        builder.allocate(block.name + ".activations", kCompute, MemoryCategory::kActivations,
                         block.saved_bytes(), compute_deps());
        for (const ForwardStep& forward : block.forward) {
          builder.add(forward.name, kCompute, forward.op);
        }
      }
      buckets.reset();
      OpIndex last_backward = 0;
      for (auto block = blocks.rbegin(); block != blocks.rend(); ++block) {
        for (const BackwardStep& backward : block->backward) {
          last_backward = builder.add(backward.name, kCompute, backward.op);
          if (!sync) continue;
          for (std::size_t param : backward.grads_ready) {
            buckets.add(builder, block->params[param].elements, last_backward);
          }
        }
        builder.release(block->name + ".activations", kCompute, MemoryCategory::kActivations,
                        block->saved_bytes());
      }
      if (!sync) continue;
      buckets.flush(builder, last_backward);
      if (buckets.last()) wait_for.push_back(*buckets.last());
      if (ddp.barrier_every_step && micro == training.accumulation - 1) {
        program::CollectiveOp barrier;
        barrier.kind = program::CollectiveKind::kBarrier;
        barrier.group = world_group;
        barrier.bytes = 0;
        barrier.dtype = program::DType::kFP32;
        barrier.algorithm = ddp.algorithm;
        wait_for.push_back(builder.add("barrier", kComm, barrier, {last_backward}));
      }
    }
    program::ComputeOp update;
    update.kind = program::ComputeKind::kOptimizer;
    update.phase = program::Phase::kOptimizer;
    update.dtype = state.master_weights > 0 ? program::DType::kFP32 : dtype;
    update.shape = program::Shape::of({std::llround(parameters)});
    update.bytes = parameters * optimizer_bytes_per_parameter(state);
    builder.add(fmt::format("optimizer.{}", optimizer_name(training.optimizer)), kCompute, update,
                compute_deps());
  }

  auto rank_program = std::make_shared<const program::RankProgram>(builder.take());
  program.ranks.assign(dp, rank_program);

  double forward_flops = 0;
  for (const Block& block : blocks) forward_flops += block.forward_flops();
  program.info.steps = training.steps;
  program.info.tokens_per_step = training.global_batch * training.sequence;
  // Model FLOPs: forward + backward at twice the forward (recomputation not counted).
  program.info.model_flops_per_step =
      3 * forward_flops * static_cast<double>(training.accumulation) * dp;
  program.info.compute_dtype = dtype;
  program.info.description = fmt::format(
      "{}, DDP on {} ranks: micro-batch {} × {} accumulation × {} replicas, sequence {}, {} + {}",
      model.name, dp, training.micro_batch, training.accumulation, dp, training.sequence,
      precision_name(training.precision), optimizer_name(training.optimizer));
  return program;
}

}  // namespace strategies
