// DDP lowering (see ddp.h).
#include "strategies/ddp.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <utility>

#include "strategies/layout.h"
#include "strategies/training_step.h"

namespace strategies {
namespace {

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

  const ReplicaModel replica = replica_model(model, training);
  const std::vector<Block>& blocks = replica.blocks;
  const double parameters = replica.parameters;
  const ModelStateBytes& state = replica.state;

  RankProgramBuilder builder;
  allocate_model_states(builder, kCompute, parameters, state, StateShares{});
  if (!ddp.gradient_as_bucket_view && dp > 1) {
    builder.allocate("ddp.bucket_buffers", kCompute, program::MemoryCategory::kCommBuffers,
                     parameters * state.gradients);
  }

  BucketFiller buckets(ddp, dp_group, replica.gradient_dtype,
                       static_cast<double>(program::dtype_bytes(replica.gradient_dtype)) *
                           parameter_scale(model));
  // What the next compute op must wait for: outstanding all-reduces and the barrier.
  std::vector<OpIndex> wait_for;
  for (std::int32_t step = 0; step < training.steps; ++step) {
    for (std::int64_t micro = 0; micro < training.accumulation; ++micro) {
      const bool sync = dp > 1 && (micro == training.accumulation - 1 || !ddp.no_sync);
      emit_forward(builder, blocks, kCompute, std::exchange(wait_for, {}));
      buckets.reset();
      const OpIndex last_backward = emit_backward(
          builder, blocks, kCompute, [&](const Block& block, const BackwardStep& backward, OpIndex op) {
            if (!sync) return;
            for (std::size_t param : backward.grads_ready) {
              buckets.add(builder, block.params[param].elements, op);
            }
          });
      if (!sync) continue;
      buckets.flush(builder, last_backward);
      if (buckets.last()) wait_for.push_back(*buckets.last());
      if (ddp.barrier_every_step && micro == training.accumulation - 1) {
        program::CollectiveOp barrier;
        barrier.kind = program::CollectiveKind::kBarrier;
        barrier.group = world_group;
        barrier.dtype = program::DType::kFP32;
        wait_for.push_back(builder.add("barrier", kComm, barrier, {last_backward}));
      }
    }
    builder.add(fmt::format("optimizer.{}", optimizer_name(training.optimizer)), kCompute,
                optimizer_update(parameters, state, replica.dtype), std::exchange(wait_for, {}));
  }

  program.ranks.assign(dp, std::make_shared<const program::RankProgram>(builder.take()));
  set_step_facts(program.info, training, blocks, dp);
  program.info.description = fmt::format(
      "{}, DDP on {} ranks: micro-batch {} × {} accumulation × {} replicas, sequence {}, {} + {}",
      model.name, dp, training.micro_batch, training.accumulation, dp, training.sequence,
      precision_name(training.precision), optimizer_name(training.optimizer));
  return program;
}

}  // namespace strategies
