// Parameter-server (BSP) lowering (see parameter_server.h).
#include "strategies/parameter_server.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "strategies/training_step.h"

namespace strategies {
namespace {

constexpr program::StreamId kCompute = 0;
constexpr program::StreamId kComm = 1;

program::CollectiveOp ps_transfer(program::CollectiveKind kind, program::GroupFamilyId group,
                                  double bytes, program::DType dtype, std::int32_t servers) {
  program::CollectiveOp op;
  op.kind = kind;
  op.group = group;
  op.bytes = std::llround(bytes);
  op.dtype = dtype;
  op.algorithm = program::Algorithm::kParameterServer;
  op.ps_servers = servers;
  return op;
}

}  // namespace

program::Program lower_parameter_server(const LoweringInput& input) {
  const ModelSpec& model = input.model;
  const TrainingSpec& training = input.training;
  const std::int32_t workers = input.parallel.dp;
  const std::int32_t servers = input.parameter_servers;
  if (servers < 1) throw std::invalid_argument("parameter-server training needs at least one server");
  const std::int32_t world = workers + servers;

  program::Program program;
  program.world_size = world;
  program.streams = {"compute", "comm"};
  std::vector<std::int32_t> all(world);
  std::iota(all.begin(), all.end(), 0);
  std::vector<std::int32_t> worker_ranks(all.begin(), all.begin() + workers);
  program.group_families.push_back(program::make_group_family("world", world, {all}));
  program.group_families.push_back(program::make_group_family("dp", world, {worker_ranks}));
  program.group_families.push_back(program::make_group_family("ps", world, {all}));
  program.placement = all;  // workers on GPUs 0..W-1, servers on the server endpoints after them
  const program::GroupFamilyId ps_group = *program.find_family("ps");

  const ReplicaModel replica = replica_model(model, training);
  std::vector<const Block*> blocks;
  for (const Block& block : replica.blocks) blocks.push_back(&block);
  const Streams streams{kCompute, kCompute};
  const program::DType dtype = replica.dtype;
  const program::DType grad_dtype = replica.gradient_dtype;
  const double parameters = replica.parameters;
  const ModelStateBytes& state = replica.state;
  const double gradient_bytes = parameters * state.gradients;
  const double parameter_bytes = parameters * state.parameters;

  // Workers: weights and gradients only; master weights and optimizer states live on servers.
  RankProgramBuilder worker;
  allocate_model_states(worker, kCompute, parameters, state, StateShares{1, 1, 0, 0});
  std::vector<program::OpIndex> wait_for;
  for (std::int32_t step = 0; step < training.steps; ++step) {
    program::OpIndex last_backward = 0;
    for (std::int64_t micro = 0; micro < training.accumulation; ++micro) {
      emit_forward(worker, blocks, streams, training.checkpointing, std::exchange(wait_for, {}));
      last_backward = emit_backward(worker, blocks, streams, training.checkpointing, {}, [](auto&&...) {});
    }
    worker.add("ps.push_gradients", kComm,
               ps_transfer(program::CollectiveKind::kPsPush, ps_group, gradient_bytes, grad_dtype, servers),
               {last_backward});
    wait_for.push_back(worker.add(
        "ps.pull_parameters", kComm,
        ps_transfer(program::CollectiveKind::kPsPull, ps_group, parameter_bytes, dtype, servers)));
  }

  // Servers: their shard's master weights and optimizer states; update between push and pull.
  RankProgramBuilder server;
  const double shard = parameters / servers;
  allocate_model_states(server, kCompute, shard, state, StateShares{0, 0, 1, 1});
  for (std::int32_t step = 0; step < training.steps; ++step) {
    const program::OpIndex push = server.add(
        "ps.push_gradients", kComm,
        ps_transfer(program::CollectiveKind::kPsPush, ps_group, gradient_bytes, grad_dtype, servers));
    const program::OpIndex update =
        server.add(fmt::format("ps.update.{}", name_of(training.optimizer)), kCompute,
                   optimizer_update(shard, state, dtype), {push});
    server.add("ps.pull_parameters", kComm,
               ps_transfer(program::CollectiveKind::kPsPull, ps_group, parameter_bytes, dtype, servers),
               {update});
  }

  auto worker_program = std::make_shared<const program::RankProgram>(worker.take());
  auto server_program = std::make_shared<const program::RankProgram>(server.take());
  for (std::int32_t rank = 0; rank < world; ++rank) {
    program.ranks.push_back(rank < workers ? worker_program : server_program);
  }
  set_step_facts(program.info, model, training, workers);
  program.info.description = fmt::format(
      "{}, parameter server (BSP): {} workers, {} server{}, micro-batch {} × {} accumulation, "
      "sequence {}, {} + {}",
      model.name, workers, servers, servers == 1 ? "" : "s", training.micro_batch,
      training.accumulation, training.sequence, name_of(training.precision),
      name_of(training.optimizer));
  return program;
}

}  // namespace strategies
