// The MPI job around a real run (see backend/job.h).
#include "backend/job.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <tuple>
#include <thread>

#include "backend/mpi/verification.h"
#include "strategies/program/span_labels.h"

namespace backend::job {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

bool poll_until(const std::function<bool()>& ready, double timeout_s) {
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  for (; !ready(); std::this_thread::yield()) {
    if (Clock::now() > deadline) return false;
  }
  return true;
}

bool wait_within(MPI_Request& request, double timeout_s) {
  bool failed = false;
  const bool done = poll_until(
      [&] {
        int finished = 0;
        failed = MPI_Test(&request, &finished, MPI_STATUS_IGNORE) != MPI_SUCCESS;
        return failed || finished != 0;
      },
      timeout_s);
  return done && !failed;
}

void fail(int rank, const std::string& message) {
  std::fprintf(stderr, "dtsim: rank %d: %s\n", rank, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kExitRunFailed);
  std::abort();  // MPI_Abort does not return
}

void wait_before_timeout_report() {
  std::this_thread::sleep_for(std::chrono::duration<double>(kTimeoutReportStagger_s * std::min(world_rank(), 3)));
}

void wait_for_job(MPI_Request& request, double timeout_s, const char* what) {
  if (wait_within(request, timeout_s)) return;
  wait_before_timeout_report();
  fail(world_rank(), fmt::format("{} did not finish within {} s (timeout): another rank stopped", what, timeout_s));
}

std::vector<std::int32_t> nodes_of_ranks(double timeout_s) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> names(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD,
                 &request);
  wait_for_job(request, timeout_s, "gathering host names");
  std::vector<std::string> hosts;
  std::vector<std::int32_t> nodes;
  for (int r = 0; r < size; ++r) {
    const std::string host(names.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME);
    auto found = std::find(hosts.begin(), hosts.end(), host);
    if (found == hosts.end()) found = hosts.insert(hosts.end(), host);
    nodes.push_back(static_cast<std::int32_t>(found - hosts.begin()));
  }
  return nodes;
}

int local_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm host = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
  int local = 0;
  MPI_Comm_rank(host, &local);
  MPI_Comm_free(&host);
  return local;
}

namespace {

// --inject-fault names a rank of the job, an op of that rank, and for `corrupt` an op whose
// result --verify checks, with --verify on: otherwise the fault would silently never happen.
void check_fault(const program::Program& program, const ExecutionOptions& options) {
  if (!options.fault) return;
  const ExecutionOptions::Fault& fault = *options.fault;
  const auto refuse = [&](const std::string& why) {
    throw ExecutionError(fmt::format("--inject-fault {}:{}:{}: {}", fault_kind_name(fault.kind), fault.rank, fault.op, why));
  };
  if (fault.rank < 0 || fault.rank >= program.world_size) {
    refuse(fmt::format("rank {} is not in this job of {} ranks (0 to {})", fault.rank, program.world_size,
                       program.world_size - 1));
  }
  const std::vector<program::Op>& ops = program.ranks[static_cast<std::size_t>(fault.rank)]->ops;
  const auto op = std::find_if(ops.begin(), ops.end(), [&](const program::Op& candidate) { return candidate.name == fault.op; });
  if (op == ops.end()) {
    const auto example = [&](auto is_kind) {
      const auto found = std::find_if(ops.begin(), ops.end(), [&](const program::Op& candidate) { return is_kind(candidate.body); });
      return found == ops.end() ? std::string("none") : "'" + found->name + "'";
    };
    refuse(fmt::format(
        "rank {} has no op of that name (the timeline of a simulated run lists them; e.g. compute {}, collective {})",
        fault.rank, example([](const auto& body) { return std::holds_alternative<program::ComputeOp>(body); }),
        example([](const auto& body) { return std::holds_alternative<program::CollectiveOp>(body); })));
  }
  if (fault.kind != ExecutionOptions::Fault::Kind::kCorrupt) return;
  if (!options.verify) refuse("a corrupted result is seen only by the check: add --verify");
  const auto* collective = std::get_if<program::CollectiveOp>(&op->body);
  const auto* transfer = std::get_if<program::SendRecvOp>(&op->body);
  const bool checked =
      (transfer != nullptr && !transfer->is_send) ||
      (collective != nullptr && !options.own_schedules &&
       verification::checks_result(*collective,
                                   program.family(collective->group).index_in_instance[static_cast<std::size_t>(fault.rank)]));
  if (!checked) {
    refuse(fmt::format("--verify does not check this op's result on rank {}: it checks received transfers and the "
                       "collectives MPI or NCCL run, not sends, barriers, parameter-server push and pull, collectives "
                       "run as dtsim's schedules, a reduce off its root, or compute: corrupt another op",
                       fault.rank));
  }
}

}  // namespace

void check_program(const program::Program& program, const ExecutionOptions& options,
                   const std::function<std::int64_t(const program::Op&)>& bytes_of, const char* device,
                   const std::function<std::string(const program::Op&)>& refusal) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != program.world_size) {
    throw ExecutionError(fmt::format("the scenario has {} ranks but mpirun started {}: run mpirun -np {}",
                                     program.world_size, size, program.world_size));
  }
  if (const std::vector<std::string> problems = program::validate(program); !problems.empty()) {
    throw ExecutionError("the program is malformed: " + problems.front());
  }
  check_fault(program, options);
  for (std::int32_t rank = 0; rank < program.world_size; ++rank) {
    for (const program::Op& op : program.ranks[static_cast<std::size_t>(rank)]->ops) {
      if (const std::string why = refusal ? refusal(op) : ""; !why.empty()) {
        throw ExecutionError(fmt::format("rank {}, op '{}': {}", rank, op.name, why));
      }
      if (bytes_of && bytes_of(op) > options.max_op_bytes) {
        throw ExecutionError(fmt::format(
            "rank {}, op '{}' needs {:.1f} GiB of buffers, more than the {:.1f} GiB allowed {}: run a "
            "scaled-down model (scenarios/real/ has some)",
            rank, op.name, static_cast<double>(bytes_of(op)) / (1 << 30),
            static_cast<double>(options.max_op_bytes) / (1 << 30), device));
      }
    }
  }
}

void FaultInjector::at_start(const program::Op& op) const {
  if (!targets(op)) return;
  switch (fault_->kind) {
    case ExecutionOptions::Fault::Kind::kHang:
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // until a watchdog aborts the job
    case ExecutionOptions::Fault::Kind::kCrash:
      std::fprintf(stderr, "dtsim: rank %d: injected crash at op '%s'\n", rank_, op.name.c_str());
      std::fflush(stderr);
      std::_Exit(1);
    case ExecutionOptions::Fault::Kind::kOutOfMemory:
      throw std::bad_alloc();
    case ExecutionOptions::Fault::Kind::kCorrupt:
      break;  // at the result (corrupts())
  }
}

bool FaultInjector::corrupts(const program::Op& op) const {
  return targets(op) && fault_->kind == ExecutionOptions::Fault::Kind::kCorrupt;
}

collectives::CollectiveSpec collective_spec(const program::Program& program, const program::CollectiveOp& collective,
                                            std::int32_t world_rank, const std::vector<std::int32_t>& nodes,
                                            program::Algorithm algorithm) {
  const program::GroupFamily& family = program.family(collective.group);
  const std::vector<std::int32_t>& members =
      family.instances[static_cast<std::size_t>(family.instance_of_rank[static_cast<std::size_t>(world_rank)])];
  collectives::CollectiveSpec spec;
  spec.kind = collective.kind;
  spec.members = static_cast<std::int32_t>(members.size());
  spec.bytes = collective.bytes;
  spec.root = collective.root;
  spec.ps_servers = collective.ps_servers;
  std::map<std::int32_t, std::int32_t> on_node;
  for (const std::int32_t member_rank : members) {
    const std::int32_t node = nodes[static_cast<std::size_t>(member_rank)];
    spec.locations.push_back({node, on_node[node]++});
  }
  if (algorithm == program::Algorithm::kAuto) {
    for (const program::Algorithm candidate : collectives::algorithms_for(collective.kind)) {
      spec.algorithm = candidate;
      if (!collectives::unsupported_reason(spec)) {
        algorithm = candidate;
        if (candidate == program::Algorithm::kRing) break;
      }
    }
  }
  spec.algorithm = algorithm;
  if (const auto reason = collectives::unsupported_reason(spec)) {
    throw ExecutionError(fmt::format("algorithm {} cannot run here: {}", program::algorithm_name(algorithm), *reason));
  }
  return spec;
}

namespace {

// What a rank's communication spans and memory samples need, computed once per op of each
// distinct rank program and group position.
class SpanFacts {
 public:
  SpanFacts(const program::Program& program, const std::vector<std::int32_t>& nodes, const ExecutionOptions& options)
      : program_(program), nodes_(nodes), options_(options) {}

  // Bytes `rank` sends in communication op `index`, by dtsim's schedule (see gather_timeline).
  std::int64_t bytes_sent(std::int32_t rank, program::OpIndex index) {
    const program::Op& op = program_.ranks[static_cast<std::size_t>(rank)]->ops[index];
    if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) return p2p->is_send ? p2p->bytes : 0;
    const auto* collective = std::get_if<program::CollectiveOp>(&op.body);
    if (collective == nullptr) return 0;
    const program::GroupFamily& family = program_.family(collective->group);
    const std::int32_t member = family.index_in_instance[static_cast<std::size_t>(rank)];
    const std::int32_t instance = family.instance_of_rank[static_cast<std::size_t>(rank)];
    const auto key = std::tuple{program_.ranks[static_cast<std::size_t>(rank)].get(), index, instance, member};
    if (const auto found = bytes_.find(key); found != bytes_.end()) return found->second;
    const program::Algorithm fixed = options_.algorithm ? options_.algorithm(*collective, family.name) : collective->algorithm;
    collectives::CollectiveSpec spec;
    try {
      spec = collective_spec(program_, *collective, rank, nodes_, fixed);
    } catch (const ExecutionError&) {  // MPI or NCCL ran their own algorithm: price the automatic one
      spec = collective_spec(program_, *collective, rank, nodes_, program::Algorithm::kAuto);
    }
    const std::vector<double> sent = collectives::bytes_sent(collectives::build_schedule(spec), spec.members);
    return bytes_[key] = static_cast<std::int64_t>(sent[static_cast<std::size_t>(member)]);  // as the simulator
  }

 private:
  const program::Program& program_;
  const std::vector<std::int32_t>& nodes_;
  const ExecutionOptions& options_;
  // (rank program, op, group instance, member) → bytes
  std::map<std::tuple<const program::RankProgram*, program::OpIndex, std::int32_t, std::int32_t>, std::int64_t> bytes_;
};

}  // namespace

trace::Timeline gather_timeline(const program::Program& program, const std::vector<OpTiming>& mine,
                                const std::vector<std::int32_t>& nodes, const ExecutionOptions& options) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int count = static_cast<int>(mine.size() * 3);
  std::vector<int> counts(static_cast<std::size_t>(size));
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Igather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &request);
  wait_for_job(request, options.timeout_s, "gathering the spans");
  std::vector<int> offsets(static_cast<std::size_t>(size));
  for (int r = 1; r < size; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<std::int64_t> all(rank == 0 ? static_cast<std::size_t>(offsets.back() + counts.back()) : 0);
  MPI_Igatherv(mine.data(), count, MPI_INT64_T, all.data(), counts.data(), offsets.data(), MPI_INT64_T, 0, MPI_COMM_WORLD,
               &request);
  wait_for_job(request, options.timeout_s, "gathering the spans");
  trace::Timeline timeline;
  if (rank != 0) return timeline;
  timeline.streams = program.streams;
  for (std::size_t c = 0; c < program::kMemoryCategoryCount; ++c) {
    timeline.memory_series.emplace_back(program::memory_category_name(static_cast<program::MemoryCategory>(c)));
  }
  for (int r = 0; r < size; ++r) {
    timeline.ranks.push_back({fmt::format("rank {} (node {}, process {})", r, nodes[r], r), nodes[r], true});
  }
  SpanFacts facts(program, nodes, options);
  std::map<std::pair<const program::RankProgram*, program::OpIndex>, program::SpanLabels> labels;
  for (int r = 0; r < size; ++r) {
    const program::RankProgram& ops = *program.ranks[static_cast<std::size_t>(r)];
    std::vector<OpTiming> allocations;  // memory ops, applied in time order below
    for (int i = offsets[r]; i < offsets[r] + counts[r]; i += 3) {
      const OpTiming timing{all[i], all[i + 1], all[i + 2]};
      const auto index = static_cast<program::OpIndex>(timing.op);
      auto found = labels.find({&ops, index});
      if (found == labels.end()) {
        found = labels.emplace(std::pair{&ops, index}, program::span_labels(ops.ops[index], timeline.strings)).first;
      }
      if (std::holds_alternative<program::MemoryOp>(ops.ops[index].body)) {
        allocations.push_back(timing);
        continue;
      }
      trace::Span span;
      span.rank = r;
      span.stream = ops.ops[index].stream;
      span.start_ps = timing.start_ps;
      span.end_ps = timing.end_ps;
      span.op = timing.op;
      found->second.apply_to(span);
      if (const auto* compute = std::get_if<program::ComputeOp>(&ops.ops[index].body)) {
        span.flops = compute->flops;
        span.bytes = static_cast<std::int64_t>(compute->bytes);
      } else {
        span.bytes = facts.bytes_sent(r, index);
      }
      timeline.spans.push_back(span);
      for (const program::OpIndex after : program::span_dependencies(ops, index)) {
        timeline.dependencies.push_back({r, index, after});
      }
    }
    std::sort(allocations.begin(), allocations.end(), [](const OpTiming& a, const OpTiming& b) {
      return std::tie(a.end_ps, a.op) < std::tie(b.end_ps, b.op);
    });
    std::vector<std::int64_t> held(program::kMemoryCategoryCount, 0);
    for (const OpTiming& timing : allocations) {
      const auto& memory = std::get<program::MemoryOp>(ops.ops[static_cast<program::OpIndex>(timing.op)].body);
      held[static_cast<std::size_t>(memory.category)] += memory.allocate ? memory.bytes : -memory.bytes;
      timeline.memory.push_back({r, timing.end_ps, held, labels.at({&ops, static_cast<program::OpIndex>(timing.op)}).name});
    }
  }
  timeline.sort_spans_by_lane();
  std::sort(timeline.dependencies.begin(), timeline.dependencies.end());
  return timeline;
}

std::vector<double> max_over_ranks(const std::vector<double>& values, double timeout_s) {
  std::vector<double> largest(values.size());
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(values.data(), largest.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD,
                 &request);
  wait_for_job(request, timeout_s, "taking the slowest rank's time");
  return largest;
}

std::size_t agreed_median_index(const std::vector<double>& values, double timeout_s) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  auto median = static_cast<std::uint64_t>(order.empty() ? 0 : order[(order.size() - 1) / 2]);
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibcast(&median, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, &request);
  wait_for_job(request, timeout_s, "agreeing on the median run");
  return static_cast<std::size_t>(median);
}

namespace {

bool has_parameter_server_collectives(const program::Program& program) {
  for (const auto& rank : program.ranks) {
    for (const program::Op& op : rank->ops) {
      const auto* collective = std::get_if<program::CollectiveOp>(&op.body);
      if (collective != nullptr && program::is_parameter_server(collective->kind)) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

namespace {

// The largest of `error(group)` over the instances of `family` with two members or more; every
// rank takes part (one in no such instance gives 0), so that all leave together.
double largest_over_family(const program::Program& program, program::GroupFamilyId id, double timeout_s,
                           const std::function<double(MPI_Comm)>& error) {
  const int rank = world_rank();
  const program::GroupFamily& family = program.family(id);
  const std::int32_t instance = family.instance_of_rank[static_cast<std::size_t>(rank)];
  const bool takes_part =
      instance >= 0 && family.instances[static_cast<std::size_t>(instance)].size() >= 2;
  MPI_Comm group = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, takes_part ? instance : MPI_UNDEFINED,
                 takes_part ? family.index_in_instance[static_cast<std::size_t>(rank)] : 0, &group);
  double mine = 0;
  if (group != MPI_COMM_NULL) {
    mine = error(group);
    MPI_Comm_free(&group);
  }
  double largest = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(&mine, &largest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &request);
  wait_for_job(request, timeout_s, "comparing a sharded layer with the unsharded one");
  return largest;
}

bool has_family_of_two(const program::Program& program, const char* name) {
  const auto id = program.find_family(name);
  if (!id) return false;
  const auto& instances = program.family(*id).instances;
  return std::any_of(instances.begin(), instances.end(), [](const auto& members) { return members.size() >= 2; });
}

// Float sums in another order: ~1e-6 seen on 2 ranks.
constexpr double kUnshardedTolerance = 1e-4;

// Ends the job when `error` is over the tolerance, naming the check.
void abort_unless_unsharded(double error, const std::string& what) {
  if (error <= kUnshardedTolerance) return;
  if (world_rank() == 0) {
    std::fprintf(stderr, "dtsim: %s differs from the unsharded one: relative error %.3g\n", what.c_str(), error);
  }
  MPI_Abort(MPI_COMM_WORLD, kExitRunFailed);
}

}  // namespace

std::string verify_results(const program::Program& program, const ExecutionOptions& options, std::int64_t checked_here) {
  std::int64_t checked = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(&checked_here, &checked, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD, &request);
  wait_for_job(request, options.timeout_s, "summing the checks");
  std::string summary = fmt::format("{} collective and transfer results checked element by element on every rank", checked);
  if (options.own_schedules) {
    summary += " (collectives ran as dtsim's schedules, whose results are not checked)";
  } else if (has_parameter_server_collectives(program)) {
    summary += " (parameter-server push and pull ran as dtsim's schedules, whose results are not checked)";
  }
  if (!options.layer) return summary;
  const ExecutionOptions::Layer& layer = *options.layer;
  const double timeout_s = options.timeout_s;

  if (has_family_of_two(program, "tp")) {
    if (4 * (2 * layer.hidden * layer.ffn + 4 * layer.hidden * layer.hidden +
             layer.tokens * (layer.tokens + 3 * layer.hidden + layer.ffn)) >
        options.max_op_bytes) {
      summary += "; the tensor-parallel check was skipped: the layer is too large for a CPU";
    } else {
      const program::GroupFamilyId tp = *program.find_family("tp");
      const double attention = largest_over_family(program, tp, timeout_s, [&](MPI_Comm group) {
        return verification::tensor_parallel_attention_error(group, layer.tokens, layer.hidden, layer.heads);
      });
      const double mlp = largest_over_family(program, tp, timeout_s, [&](MPI_Comm group) {
        return verification::tensor_parallel_mlp_error(group, layer.tokens, layer.hidden, layer.ffn);
      });
      abort_unless_unsharded(attention, "the tensor-parallel attention forward");
      abort_unless_unsharded(mlp, "the tensor-parallel MLP forward");
      summary += fmt::format("; the tensor-parallel forward of one layer ({} tokens, hidden {}, {} heads, ffn {}) "
                             "matches the unsharded one (relative error: attention {:.2g}, MLP {:.2g})",
                             layer.tokens, layer.hidden, layer.heads, layer.ffn, attention, mlp);
    }
  }
  if (layer.experts > 0 && has_family_of_two(program, "ep")) {
    if (4 * 2 * layer.experts * layer.hidden * layer.expert_ffn > options.max_op_bytes) {
      summary += "; the expert-parallel check was skipped: the experts are too large for a CPU";
    } else {
      const double moe = largest_over_family(program, *program.find_family("ep"), timeout_s, [&](MPI_Comm group) {
        return verification::expert_parallel_moe_error(group, layer.tokens, layer.hidden, layer.experts, layer.top_k,
                                                       layer.expert_ffn);
      });
      abort_unless_unsharded(moe, "the expert-parallel MoE forward");
      summary += fmt::format("; the expert-parallel MoE forward ({} tokens per rank, {} experts, top-{}, expert ffn {}: "
                             "router, dispatch, experts, combine) matches the unsharded one (relative error {:.2g})",
                             layer.tokens, layer.experts, layer.top_k, layer.expert_ffn, moe);
    }
  }
  if (has_family_of_two(program, "cp")) {
    if (4 * layer.tokens * (layer.tokens + 8 * layer.hidden) > options.max_op_bytes) {
      summary += "; the context-parallel check was skipped: the sequence is too long for a CPU";
    } else {
      const double attention =
          largest_over_family(program, *program.find_family("cp"), timeout_s, [&](MPI_Comm group) {
            return verification::context_parallel_attention_error(group, layer.context_parallel,
                                                                  layer.tokens, layer.hidden,
                                                                  layer.heads, layer.causal);
          });
      const std::string what = layer.context_parallel == ContextParallelKind::kUlysses
                                   ? "Ulysses attention (all-to-all to heads and back)"
                               : layer.context_parallel == ContextParallelKind::kAllGather
                                   ? "all-gather attention (K and V gathered, one pass)"
                                   : "ring attention (K,V blocks round the ring, running softmax)";
      abort_unless_unsharded(attention, "the context-parallel " + what);
      summary += fmt::format("; the context-parallel {} over {} tokens{} matches the unsharded one (relative error {:.2g})",
                             what, layer.tokens, layer.causal ? ", causal" : "", attention);
    }
  }
  return summary;
}

}  // namespace backend::job
