// Parameter-server lowering: BSP through push/pull collectives, SSP and ASP through
// per-worker transfers (see parameter_server.h).
#include "strategies/parameter_server.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "strategies/training_step.h"

namespace strategies {
namespace {

using program::OpIndex;

constexpr program::StreamId kCompute = 0;
constexpr program::StreamId kComm = 1;  // BSP's push and pull
// SSP/ASP streams after "compute": on a worker, "server<s>" (its push to and pull from server
// s, concurrent across servers); on a server, "worker<w>" (that worker's pushes and replies).
program::StreamId server_stream(std::int32_t server) { return static_cast<program::StreamId>(1 + server); }
program::StreamId worker_stream(std::int32_t servers, std::int32_t worker) {
  return static_cast<program::StreamId>(1 + servers + worker);
}

program::CollectiveOp ps_transfer(program::CollectiveKind kind, program::GroupFamilyId group,
                                  double bytes, program::DType dtype, std::int32_t servers) {
  program::CollectiveOp op = program::make_collective(kind, group, bytes, dtype);
  op.algorithm = program::Algorithm::kParameterServer;
  op.ps_servers = servers;
  return op;
}

program::SendRecvOp transfer(bool send, program::GroupFamilyId group, std::int32_t offset, double bytes,
                             program::DType dtype) {
  return program::SendRecvOp{send, group, offset, std::llround(bytes), dtype};
}

// What every lowering of a parameter-server step shares.
struct PsSetup {
  const LoweringInput& input;
  std::int32_t workers;
  std::int32_t servers;
  program::GroupFamilyId ps_group;
  ReplicaModel replica;
  std::vector<const Block*> blocks;
  double gradient_bytes() const { return replica.parameters * replica.state.gradients; }
  double parameter_bytes() const { return replica.parameters * replica.state.parameters; }
  double shard() const { return replica.parameters / servers; }

  // A worker's micro-batches of one step; returns the last backward op.
  OpIndex compute_step(RankProgramBuilder& worker, std::vector<OpIndex> deps) const {
    const Streams streams{kCompute, kCompute};
    OpIndex last = 0;
    for (std::int64_t micro = 0; micro < input.training.accumulation; ++micro) {
      emit_forward(worker, blocks, streams, input.training.checkpointing, std::exchange(deps, {}));
      last = emit_backward(worker, blocks, streams, input.training.checkpointing, {},
                           [](auto&&...) { return std::optional<program::OpIndex>(); });
    }
    return last;
  }
  // Workers hold weights and gradients; master weights and optimizer states live on servers.
  void allocate_worker(RankProgramBuilder& worker) const {
    allocate_model_states(worker, kCompute, replica.parameters, replica.state, StateShares{1, 1, 0, 0});
  }
  void allocate_server(RankProgramBuilder& server) const {
    allocate_model_states(server, kCompute, shard(), replica.state, StateShares{0, 0, 1, 1});
  }
  program::ComputeOp update() const {
    return optimizer_update(shard(), replica.state, replica.dtype, input.training);
  }
  std::string update_name() const { return fmt::format("ps.update.{}", name_of(input.training.optimizer)); }
};

void lower_bsp(const PsSetup& setup, program::Program& program, OpBudget& budget) {
  const std::int32_t steps = setup.input.training.steps;
  const auto push = ps_transfer(program::CollectiveKind::kPsPush, setup.ps_group, setup.gradient_bytes(),
                                setup.replica.gradient_dtype, setup.servers);
  const auto pull = ps_transfer(program::CollectiveKind::kPsPull, setup.ps_group, setup.parameter_bytes(),
                                setup.replica.dtype, setup.servers);
  RankProgramBuilder worker(budget);
  setup.allocate_worker(worker);
  std::vector<OpIndex> wait_for;
  const std::int64_t spent_before_steps = budget.spent();
  for (std::int32_t step = 0; step < steps; ++step) {
    if (step == 1) budget.forecast_steps(budget.spent() - spent_before_steps, steps);
    const OpIndex last = setup.compute_step(worker, std::exchange(wait_for, {}));
    worker.add("ps.push_gradients", kComm, push, {last});
    wait_for.push_back(worker.add("ps.pull_parameters", kComm, pull));
  }
  // Servers: update their shard between everyone's push and everyone's pull.
  RankProgramBuilder server(budget);
  setup.allocate_server(server);
  program::ProgramInfo::ParameterServer& info = *program.info.parameter_server;
  for (std::int32_t step = 0; step < steps; ++step) {
    const OpIndex pushed = server.add("ps.push_gradients", kComm, push);
    const OpIndex updated = server.add(setup.update_name(), kCompute, setup.update(), {pushed});
    const OpIndex pulled = server.add("ps.pull_parameters", kComm, pull, {updated});
    for (std::int32_t w = 0; w < setup.workers; ++w) {
      info.update_op[w].push_back(updated);
      info.pull_op[w].push_back(pulled);
    }
  }
  const auto worker_program = std::make_shared<const program::RankProgram>(worker.take());
  const auto server_program = std::make_shared<const program::RankProgram>(server.take());
  for (std::int32_t rank = 0; rank < program.world_size; ++rank) {
    program.ranks.push_back(rank < setup.workers ? worker_program : server_program);
  }
}

void lower_asynchronous(const PsSetup& setup, program::Program& program, OpBudget& budget) {
  const std::int32_t steps = setup.input.training.steps;
  const std::int32_t workers = setup.workers, servers = setup.servers;
  const double push_bytes = setup.gradient_bytes() / servers;
  const double pull_bytes = setup.parameter_bytes() / servers;
  const program::DType gradient_dtype = setup.replica.gradient_dtype, dtype = setup.replica.dtype;
  const bool bounded = setup.input.ps.consistency == PsConsistency::kSsp;
  const std::int32_t staleness = setup.input.ps.staleness;
  // Ranks: workers 0..W−1, then servers; peers are addressed by offset in the "ps" group.
  for (std::int32_t w = 0; w < workers; ++w) {
    RankProgramBuilder worker(budget);
    setup.allocate_worker(worker);
    std::vector<OpIndex> wait_for;
    const std::int64_t spent_before_steps = budget.spent();
    for (std::int32_t step = 0; step < steps; ++step) {
      if (step == 1) budget.forecast_steps(budget.spent() - spent_before_steps, steps);
      const OpIndex last = setup.compute_step(worker, std::exchange(wait_for, {}));
      for (std::int32_t s = 0; s < servers; ++s) {
        const OpIndex pushed = worker.add(fmt::format("ps.push_gradients.server{}", s), server_stream(s),
                                          transfer(true, setup.ps_group, workers + s - w, push_bytes, gradient_dtype), {last});
        wait_for.push_back(worker.add(fmt::format("ps.pull_parameters.server{}", s), server_stream(s),
                                      transfer(false, setup.ps_group, workers + s - w, pull_bytes, dtype), {pushed}));
      }
    }
    program.ranks.push_back(std::make_shared<const program::RankProgram>(worker.take()));
  }
  for (std::int32_t s = 0; s < servers; ++s) {
    const std::int32_t rank = workers + s;
    RankProgramBuilder server(budget);
    setup.allocate_server(server);
    std::vector<std::vector<OpIndex>> received(static_cast<std::size_t>(workers));
    for (std::int32_t step = 0; step < steps; ++step) {
      for (std::int32_t w = 0; w < workers; ++w) {
        received[w].push_back(server.add(fmt::format("ps.push_gradients.worker{}", w), worker_stream(servers, w),
                                         transfer(false, setup.ps_group, w - rank, push_bytes, gradient_dtype)));
      }
      for (std::int32_t w = 0; w < workers; ++w) {
        const program::StreamId stream = worker_stream(servers, w);
        const OpIndex updated = server.add(fmt::format("{}.worker{}", setup.update_name(), w), stream, setup.update(),
                                           {received[w].back()});
        std::vector<OpIndex> reply_after = {updated};
        if (bounded && step >= staleness) {
          for (std::int32_t other = 0; other < workers; ++other) reply_after.push_back(received[other][step - staleness]);
        }
        const OpIndex replied = server.add(fmt::format("ps.pull_parameters.worker{}", w), stream,
                                           transfer(true, setup.ps_group, w - rank, pull_bytes, dtype), reply_after);
        if (s == 0) {
          program.info.parameter_server->update_op[w].push_back(updated);
          program.info.parameter_server->pull_op[w].push_back(replied);
        }
      }
    }
    program.ranks.push_back(std::make_shared<const program::RankProgram>(server.take()));
  }
}

}  // namespace

program::Program lower_parameter_server(const LoweringInput& input) {
  const TrainingSpec& training = input.training;
  const std::int32_t workers = input.parallel.dp;
  const std::int32_t servers = input.parameter_servers;
  if (servers < 1) throw std::invalid_argument("parameter-server training needs at least one server");
  const std::int32_t world = workers + servers;

  program::Program program;
  program.world_size = world;
  program.streams = {"compute", "comm"};
  if (input.ps.consistency != PsConsistency::kBsp) {
    program.streams = {"compute"};
    for (std::int32_t s = 0; s < servers; ++s) program.streams.push_back(fmt::format("server{}", s));
    for (std::int32_t w = 0; w < workers; ++w) program.streams.push_back(fmt::format("worker{}", w));
  }
  std::vector<std::int32_t> all(world);
  std::iota(all.begin(), all.end(), 0);
  std::vector<std::int32_t> worker_ranks(all.begin(), all.begin() + workers);
  program.group_families.push_back(program::make_group_family("world", world, {all}));
  program.group_families.push_back(program::make_group_family("dp", world, {worker_ranks}));
  program.group_families.push_back(program::make_group_family("ps", world, {all}));
  program.placement = all;  // workers on GPUs 0..W-1, servers on the server endpoints after them

  OpBudget budget;
  PsSetup setup{input, workers, servers, *program.find_family("ps"), replica_model(input.model, training), {}};
  for (const Block& block : setup.replica.blocks) setup.blocks.push_back(&block);

  std::string consistency = "BSP";
  if (input.ps.consistency == PsConsistency::kSsp) consistency = fmt::format("SSP (s = {})", input.ps.staleness);
  if (input.ps.consistency == PsConsistency::kAsp) consistency = "ASP";
  program.info.parameter_server = program::ProgramInfo::ParameterServer{
      consistency, workers, workers, std::vector<std::vector<OpIndex>>(workers), std::vector<std::vector<OpIndex>>(workers)};
  if (input.ps.consistency == PsConsistency::kBsp) {
    lower_bsp(setup, program, budget);
  } else {
    lower_asynchronous(setup, program, budget);
  }
  set_step_facts(program.info, input.model, training, workers);
  program.info.description = fmt::format(
      "{}, parameter server ({}): {} workers, {} server{}, micro-batch {} × {} accumulation, sequence {}, {} + {}",
      input.model.name, consistency, workers, servers, servers == 1 ? "" : "s", training.micro_batch,
      training.accumulation, training.sequence, name_of(training.precision), name_of(training.optimizer));
  return program;
}

}  // namespace strategies
