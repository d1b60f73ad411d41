// The Program simulator: stream cursors, dependency checks, collective and send/recv
// matching, memory counters (see program_simulator.h).
#include "sim/run/program_simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/container_hash/hash.hpp>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "sim/collectives/schedule.h"
#include "sim/core/engine.h"
#include "sim/net/comm_planner.h"
#include "sim/net/network_model.h"
#include "sim/run/replica_symmetry.h"
#include "sim/trace/summary.h"
#include "strategies/program/span_labels.h"

namespace sim {
namespace {

using program::CollectiveKind;
using program::OpIndex;

constexpr OpIndex kNotWaiting = std::numeric_limits<OpIndex>::max();

// The simulator draws the packet model's steps on the timeline.
NetworkOptions with_step_recording(NetworkOptions options) {
  options.record_steps = options.model == "packet";
  return options;
}

// What the simulator keeps per distinct RankProgram and compute model (GPU or host): its ops
// split by stream (in program order), each compute op's duration, and each op's labels,
// interned on first use.
struct RankPlan {
  std::vector<std::vector<OpIndex>> streams;
  std::vector<Time> durations;  // compute ops; zero for the others
  // A compute op whose stream successor is a compute op and which nothing else waits for:
  // when the successor is ready as the op starts, both run in one engine event.
  std::vector<std::uint8_t> chains_into_next;
  std::vector<OpIndex> next_on_stream;
  std::vector<std::optional<program::SpanLabels>> labels;
};

// Thrown when a follower replica's communication does not take exactly the time, bytes and
// algorithm of its leader's: the network does not treat the replicas of a class alike.
// `split` groups the followers that differed by what they got instead (no groups when the run
// cannot say which replicas differ).
class AsymmetricNetwork : public std::runtime_error {
 public:
  explicit AsymmetricNetwork(const std::string& what, std::vector<std::vector<std::int32_t>> differing = {})
      : std::runtime_error(what), split{std::move(differing), what} {}
  ReplicaSplit split;
};

// With a ReplicaSymmetry, only the representatives (the ranks of each class's leader replica)
// run: their state, events and summaries. Each follower replica's communication runs beside
// its leader's on the network (so that links carry every replica's traffic) and must end
// exactly as the leader's does; collectives over the replicas' family run with every member,
// the followers arriving with their leaders. Mirror ranks (the followers') then get their
// representative's spans, samples and summary (a collective over the replicas may send
// different bytes per member: those spans are each member's own).
class Simulator {
 public:
  // `run`: how many times this simulation has started (SimulationProgress::run).
  Simulator(const program::Program& program, const topology::Cluster& cluster,
            const SimulationOptions& options, const ReplicaSymmetry* symmetry, std::int32_t run)
      : program_(program),
        symmetry_(symmetry),
        cluster_(cluster),
        gpu_compute_(cluster.spec().node.gpu, options.efficiency,
                     topology::host_link_per_gpu(cluster.spec().node)),
        host_compute_(cluster.spec().parameter_servers.host, host_efficiency(options.efficiency)),
        offload_compute_(topology::host_share_per_gpu(cluster.spec()),
                         host_efficiency(options.efficiency)),
        network_(make_network_model(with_step_recording(options.network), engine_, cluster)),
        options_(options),
        run_(run),
        // A stated compute time is the compute time: nothing slows it further.
        overlap_slowdown_(options.step_compute_time_s || options.compute_time_scale
                              ? 0.0
                              : options.efficiency.overlap_slowdown) {
    if (options.step_compute_time_s) {
      scale_compute_to(*options.step_compute_time_s);
    } else if (options.compute_time_scale) {
      gpu_compute_.set_time_scale(*options.compute_time_scale);
    }
  }

  SimulationResult run() {
    setup();
    check_overrides();
    for (std::int32_t rank = 0; rank < program_.world_size; ++rank) {
      if (simulated(rank)) try_start(rank);
    }
    run_events();
    if (engine_.now() == Time::max()) {
      throw SimulationTooLong();
    }
    check_finished();
    trace::Timeline& timeline = result_.timeline;
    for (std::int32_t rank = 0; rank < program_.world_size; ++rank) {
      const auto& peak = ranks_[representative_of(rank)].peak_sample;
      if (timeline.ranks[rank].traced || !peak) continue;
      timeline.memory.push_back(*peak);
      timeline.memory.back().rank = rank;
    }
    // Each rank's samples together, in time order (mirror replicas add theirs beside their
    // representative's).
    std::stable_sort(timeline.memory.begin(), timeline.memory.end(),
                     [](const trace::MemorySample& a, const trace::MemorySample& b) { return a.rank < b.rank; });
    timeline.summaries = summaries_.finish();
    copy_to_mirrors();
    std::sort(timeline.dependencies.begin(), timeline.dependencies.end());
    timeline.sort_spans_by_lane();
    result_.events = engine_.events_processed();
    return std::move(result_);
  }

 private:
  struct RankState {
    const program::RankProgram* program = nullptr;
    RankPlan* plan = nullptr;
    std::vector<std::uint8_t> done;
    std::vector<std::uint32_t> cursor;
    std::vector<std::uint8_t> busy;
    std::vector<Time> started;                       // per stream: when its running ops began
    std::vector<OpIndex> chain_last;                 // per stream: the last op of its running run
    std::vector<EventId> run_end;                    // per stream: its running compute run's end
    std::vector<double> stretch;                     // per stream: its running run's overlap slowdown
    std::int32_t communicating = 0;                  // collectives launched (arrived at) and not finished
    std::vector<OpIndex> waiting_on;                 // per stream: a dependency its head waits for
    std::vector<std::uint32_t> collective_sequence;  // per (group family, stream), family-major
    std::vector<std::int64_t> memory;                // per memory category
    // Untraced ranks keep only their highest sample (all the report needs).
    std::optional<trace::MemorySample> peak_sample;
    std::int64_t peak_bytes = -1;
    std::size_t completed = 0;
  };
  // A mirror rank's summary is its representative's, but for the bytes it sent in
  // collectives over the replicas' family: per rank, the difference by span category.
  void copy_to_mirrors() {
    if (symmetry_ == nullptr) return;
    for (std::int32_t rank = 0; rank < program_.world_size; ++rank) {
      const std::int32_t representative = representative_of(rank);
      if (rank == representative) continue;
      trace::RankSummary& summary = result_.timeline.summaries[rank];
      summary = result_.timeline.summaries[representative];
      summary.rank = rank;
      if (auto delta = mirror_bytes_delta_.find(rank); delta != mirror_bytes_delta_.end()) {
        for (std::size_t c = 0; c < delta->second.size(); ++c) {
          summary.bytes_by_category[c] += delta->second[c];
          if (trace::is_communication(static_cast<trace::Category>(c))) summary.comm_bytes += delta->second[c];
        }
      }
      result_.comm_latency_s[rank] = result_.comm_latency_s[representative];
      result_.comm_bandwidth_s[rank] = result_.comm_bandwidth_s[representative];
    }
  }

  bool simulated(std::int32_t rank) const { return symmetry_ == nullptr || symmetry_->is_representative(rank); }
  std::int32_t representative_of(std::int32_t rank) const {
    return symmetry_ == nullptr ? rank : symmetry_->representative[rank];
  }

  struct PendingCollective {
    std::int32_t arrived = 0;
    std::vector<OpIndex> ops;  // by member position
  };
  // Collectives match in issue order per group family and stream, as the executors match them
  // (one communicator per family and stream): the n-th collective of a group on a stream meets
  // the n-th of every member on that stream, whatever the family's other streams do.
  using CollectiveKey = std::tuple<program::GroupFamilyId, program::StreamId, std::int32_t, std::uint32_t>;
  using RankPair = std::pair<std::int32_t, std::int32_t>;  // (sender, receiver)
  // Transfers match in posting order per group family and rank pair, as the executors match
  // them (MPI tags, NCCL communicators per family): two families between the same ranks (an
  // interleaved pipeline's "pp" and "pp_wrap" on two stages) never cross.
  using TransferKey = std::pair<program::GroupFamilyId, RankPair>;

  // GPUs run the compute model of the node's GPU; parameter servers that of their host; a
  // GPU rank's host work (an offloaded optimizer) its share of the node's host CPU.
  const ComputeModel& compute_for(std::int32_t rank, const program::ComputeOp& op) const {
    if (!cluster_.is_gpu(program_.placement[rank])) return host_compute_;
    return op.on_host ? offload_compute_ : gpu_compute_;
  }

  // Host CPUs keep the scalar efficiencies: the measured curves are the GPU's (a calibrated
  // profile prices the ranks' device, not the host beside it).
  static ComputeEfficiency host_efficiency(ComputeEfficiency efficiency) {
    efficiency.matmul_by_size = {};
    efficiency.memory_by_size = {};
    return efficiency;
  }

  // Scales GPU compute so that the busiest GPU rank computes `target_seconds` per step.
  void scale_compute_to(double target_seconds) {
    double busiest = 0;
    for (std::int32_t rank = 0; rank < program_.world_size; ++rank) {
      if (!cluster_.is_gpu(program_.placement[rank])) continue;
      double total = 0;
      for (const program::Op& op : program_.ranks[rank]->ops) {
        const auto* compute = std::get_if<program::ComputeOp>(&op.body);
        if (compute && !compute->on_host && compute->kind != program::ComputeKind::kMemcpy) {
          total += gpu_compute_.seconds(*compute);
        }
      }
      busiest = std::max(busiest, total / std::max(1, program_.info.steps));
    }
    if (busiest > 0) gpu_compute_.set_time_scale(target_seconds / busiest);
  }

  void setup() {
    trace::Timeline& timeline = result_.timeline;
    timeline.streams = program_.streams;
    for (std::size_t c = 0; c < program::kMemoryCategoryCount; ++c) {
      timeline.memory_series.emplace_back(
          program::memory_category_name(static_cast<program::MemoryCategory>(c)));
    }
    const std::size_t streams = program_.streams.size();
    ranks_.resize(program_.world_size);
    for (std::int32_t rank = 0; rank < program_.world_size; ++rank) {
      const std::int32_t endpoint = program_.placement[rank];
      const std::int32_t node = cluster_.node_of(endpoint);
      trace::RankInfo info;
      info.node = node;
      info.traced = options_.traced_ranks.empty() ||
                    (static_cast<std::size_t>(rank) < options_.traced_ranks.size() && options_.traced_ranks[rank]);
      info.name = cluster_.is_gpu(endpoint)
                      ? fmt::format("rank {} (node {}, gpu {})", rank, node,
                                    endpoint % cluster_.spec().node.gpus)
                      : fmt::format("rank {} (server {})", rank, node - cluster_.spec().nodes);
      timeline.ranks.push_back(std::move(info));

      RankState& state = ranks_[rank];
      state.program = program_.ranks[rank].get();
      auto [plan, inserted] = plans_.try_emplace({state.program, cluster_.is_gpu(endpoint)});
      if (inserted) {
        plan->second.streams.resize(streams);
        plan->second.durations.assign(state.program->ops.size(), Time::zero());
        for (OpIndex i = 0; i < state.program->ops.size(); ++i) {
          const program::Op& op = state.program->ops[i];
          plan->second.streams[op.stream].push_back(i);
          if (const auto* compute = std::get_if<program::ComputeOp>(&op.body)) {
            plan->second.durations[i] = Time::from_seconds(compute_for(rank, *compute).seconds(*compute));
          }
        }
        find_chains(*state.program, plan->second);
        plan->second.labels.assign(state.program->ops.size(), std::nullopt);
      }
      state.plan = &plan->second;
      if (!simulated(rank)) continue;  // a mirror's state is its representative's
      state.done.assign(state.program->ops.size(), 0);
      state.cursor.assign(streams, 0);
      state.busy.assign(streams, 0);
      state.started.assign(streams, Time::zero());
      state.chain_last.assign(streams, 0);
      state.run_end.assign(streams, EventId{});
      state.stretch.assign(streams, 1.0);
      state.waiting_on.assign(streams, kNotWaiting);
      state.collective_sequence.assign(program_.group_families.size() * streams, 0);
      state.memory.assign(program::kMemoryCategoryCount, 0);
    }
    if (symmetry_ != nullptr) {
      mark_shared_nodes();
      traced_mirrors_.resize(ranks_.size());
      for (std::int32_t rank = 0; rank < program_.world_size; ++rank) {
        if (!simulated(rank) && timeline.ranks[rank].traced) traced_mirrors_[representative_of(rank)].push_back(rank);
      }
    }
    summaries_ = trace::SummaryBuilder(ranks_.size());
    std::size_t timed_ops = 0;  // every op but memory ops leaves a span
    for (std::size_t rank = 0; rank < ranks_.size(); ++rank) {
      if (!timeline.ranks[rank].traced) continue;
      for (const program::Op& op : ranks_[rank].program->ops) {
        timed_ops += std::holds_alternative<program::MemoryOp>(op.body) ? 0 : 1;
      }
    }
    timeline.spans.reserve(timed_ops);
    result_.comm_latency_s.assign(program_.world_size, 0);
    result_.comm_bandwidth_s.assign(program_.world_size, 0);
  }

  // Every algorithm the user fixed must run on every group it applies to.
  void check_overrides() const {
    std::set<std::pair<program::GroupFamilyId, program::CollectiveKind>> used;
    for (const auto& [key, plan] : plans_) {
      for (const program::Op& op : key.first->ops) {
        if (const auto* c = std::get_if<program::CollectiveOp>(&op.body)) used.insert({c->group, c->kind});
      }
    }
    for (const auto& [family_id, kind] : used) {
      const program::GroupFamily& family = program_.family(family_id);
      const CollectiveOverride* fixed = options_.collectives.find(kind, family.name);
      if (fixed == nullptr || fixed->algorithm == program::Algorithm::kAuto) continue;
      if (const auto missing = nccl::missing_algorithm(kind, fixed->algorithm); missing && options_.network.library == "nccl") {
        throw InvalidOverride(*fixed, "NCCL (collectives.library = \"nccl\") " + *missing);
      }
      for (std::size_t instance = 0; instance < family.instances.size(); ++instance) {
        CommRequest request;
        request.kind = kind;
        for (std::int32_t member : family.instances[instance]) request.endpoints.push_back(program_.placement[member]);
        const auto reason = collectives::unsupported_reason(
            collective_spec(cluster_, options_.network, request, fixed->algorithm));
        if (reason) throw InvalidOverride(*fixed, fmt::format("on group {}[{}]: {}", family.name, instance, *reason));
      }
    }
  }

  void run_events() {
    if (!options_.progress) {
      engine_.run();
      return;
    }
    constexpr std::uint64_t kEventsBetweenReports = 4096;
    // A first report as the run starts, so that a front end times each run from its start.
    if (!options_.progress(SimulationProgress{0, 0, 0, run_})) throw SimulationCancelled();
    std::size_t total_ops = 0;
    for (std::int32_t rank = 0; rank < program_.world_size; ++rank) {
      if (simulated(rank)) total_ops += ranks_[rank].program->ops.size();
    }
    for (std::uint64_t events = 1; engine_.step(); ++events) {
      if (events % kEventsBetweenReports != 0) continue;
      const SimulationProgress progress{static_cast<double>(completed_ops_) / static_cast<double>(std::max<std::size_t>(total_ops, 1)),
                                        engine_.now().seconds(), events, run_};
      if (!options_.progress(progress)) {
        throw SimulationCancelled();
      }
    }
  }

  const program::Op& op_of(std::int32_t rank, OpIndex index) const {
    return ranks_[rank].program->ops[index];
  }

  // Starts every op at the head of a stream whose dependencies are done; memory ops finish
  // on the spot, which may unblock more.
  void try_start(std::int32_t rank) {
    RankState& state = ranks_[rank];
    for (bool progressed = true; progressed;) {
      progressed = false;
      // Communication before compute: a collective ready at the same instant as a compute op has
      // launched when that op starts, and slows it (start()), whichever stream is numbered first —
      // one behind a memory op on its stream too (the first pass repeats while memory ops
      // complete).
      for (const bool compute_pass : {false, true}) {
        if (compute_pass && progressed) break;
        for (std::size_t s = 0; s < state.cursor.size(); ++s) {
          const auto& queue = state.plan->streams[s];
          if (state.busy[s] || state.cursor[s] >= queue.size()) continue;
          // A stream blocked on a dependency stays blocked until that one is done.
          if (state.waiting_on[s] != kNotWaiting && !state.done[state.waiting_on[s]]) continue;
          const OpIndex index = queue[state.cursor[s]];
          const program::Op& op = op_of(rank, index);
          if (std::holds_alternative<program::ComputeOp>(op.body) != compute_pass) continue;
          const auto pending = std::find_if(op.deps.begin(), op.deps.end(),
                                            [&](OpIndex dep) { return !state.done[dep]; });
          state.waiting_on[s] = pending == op.deps.end() ? kNotWaiting : *pending;
          if (pending != op.deps.end()) continue;
          state.busy[s] = 1;
          if (std::holds_alternative<program::MemoryOp>(op.body)) {
            apply_memory(rank, op);
            complete(rank, index);
            progressed = true;
          } else {
            start(rank, index);
          }
        }
      }
    }
  }

  static void find_chains(const program::RankProgram& program, RankPlan& plan) {
    const std::size_t ops = program.ops.size();
    plan.next_on_stream.assign(ops, 0);
    plan.chains_into_next.assign(ops, 0);
    std::vector<std::uint32_t> waiters(ops, 0);  // ops that list this one as a dependency
    for (const program::Op& op : program.ops) {
      for (OpIndex dep : op.deps) ++waiters[dep];
    }
    auto is_compute = [&](OpIndex i) { return std::holds_alternative<program::ComputeOp>(program.ops[i].body); };
    // A run is slowed, or not, as its first op is (start()): host and GPU ops never share one.
    auto on_host = [&](OpIndex i) {
      return std::get<program::ComputeOp>(program.ops[i].body).on_host;
    };
    for (const auto& queue : plan.streams) {
      for (std::size_t k = 0; k + 1 < queue.size(); ++k) {
        const OpIndex op = queue[k], next = queue[k + 1];
        plan.next_on_stream[op] = next;
        const auto& next_deps = program.ops[next].deps;
        const std::uint32_t by_next = static_cast<std::uint32_t>(std::count(next_deps.begin(), next_deps.end(), op));
        plan.chains_into_next[op] = is_compute(op) && is_compute(next) &&
                                    on_host(op) == on_host(next) && waiters[op] == by_next;
      }
    }
  }

  void start(std::int32_t rank, OpIndex index) {
    const program::Op& op = op_of(rank, index);
    if (std::holds_alternative<program::ComputeOp>(op.body)) {
      RankState& state = ranks_[rank];
      const RankPlan& plan = *state.plan;
      // Started beside a collective of this rank: NCCL's kernels slow it. The slowdown is
      // decided when an op starts, so beside a collective ops start one by one.
      const bool on_gpu = cluster_.is_gpu(program_.placement[rank]) && !std::get<program::ComputeOp>(op.body).on_host;
      const bool beside_collective = on_gpu && state.communicating > 0 && overlap_slowdown_ > 0;
      state.stretch[op.stream] = beside_collective ? 1 + overlap_slowdown_ : 1.0;
      OpIndex last = index;
      Time end = engine_.now() + duration_of(rank, index);
      // Successors nobody else waits for, ready now, run on in the same event: the same
      // spans at the same times, fewer events (a collective launched meanwhile cuts the run:
      // cut_unslowed_runs()).
      while (!beside_collective && plan.chains_into_next[last]) {
        const OpIndex next = plan.next_on_stream[last];
        const auto& deps = op_of(rank, next).deps;
        if (!std::all_of(deps.begin(), deps.end(), [&](OpIndex dep) { return dep == last || state.done[dep] != 0; })) break;
        last = next;
        end = end + duration_of(rank, next);
      }
      state.started[op.stream] = engine_.now();
      state.chain_last[op.stream] = last;
      schedule_run_end(rank, op.stream, end);
    } else if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
      arrive(rank, index, *collective);
    } else if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) {
      post(rank, index, *p2p);
    }
  }

  void schedule_run_end(std::int32_t rank, program::StreamId stream, Time end) {
    // The handler captures 16 bytes, which std::function keeps without allocating.
    ranks_[rank].run_end[stream] =
        engine_.schedule_at(end, [this, rank, stream] { finish_compute(rank, stream); });
  }

  // A collective launches on a rank that was not communicating: the ops its unslowed runs have
  // not started yet start beside it, so each run ends with the op running now (or ending now),
  // and the rest start one by one (start()) — as if no op had run on with another.
  void cut_unslowed_runs(std::int32_t rank) {
    RankState& state = ranks_[rank];
    const Time now = engine_.now();
    for (std::size_t stream = 0; stream < state.run_end.size(); ++stream) {
      const auto& queue = state.plan->streams[stream];
      if (!state.busy[stream] || state.stretch[stream] != 1.0) continue;
      const OpIndex head = queue[state.cursor[stream]];
      const auto* first = std::get_if<program::ComputeOp>(&op_of(rank, head).body);
      if (first == nullptr || first->on_host || !cluster_.is_gpu(program_.placement[rank])) {
        continue;  // not running compute on the GPU
      }
      if (state.started[stream] == now) {  // started at this instant: beside the collective too
        engine_.cancel(state.run_end[stream]);
        state.stretch[stream] = 1 + overlap_slowdown_;
        state.chain_last[stream] = head;
        schedule_run_end(rank, static_cast<program::StreamId>(stream),
                         now + duration_of(rank, head));
        continue;
      }
      std::uint32_t position = state.cursor[stream];
      Time end = state.started[stream] + duration_of(rank, queue[position]);
      while (end < now && queue[position] != state.chain_last[stream])
        end = end + duration_of(rank, queue[++position]);
      if (queue[position] == state.chain_last[stream]) continue;
      engine_.cancel(state.run_end[stream]);
      state.chain_last[stream] = queue[position];
      schedule_run_end(rank, static_cast<program::StreamId>(stream), end);
    }
  }

  Time duration_of(std::int32_t rank, OpIndex index) const {
    const RankState& state = ranks_[rank];
    const Time duration = state.plan->durations[index];
    const double factor = (options_.compute_slowdown.empty() ? 1.0 : options_.compute_slowdown[rank]) *
                          state.stretch[op_of(rank, index).stream];
    if (factor == 1.0) return duration;
    return Time::from_seconds(duration.seconds() * factor);
  }

  // The compute ops a stream started in one event have finished, one after the other.
  void finish_compute(std::int32_t rank, program::StreamId stream) {
    RankState& state = ranks_[rank];
    Time begin = state.started[stream];
    for (;;) {
      const OpIndex index = state.plan->streams[stream][state.cursor[stream]];
      const Time end = begin + duration_of(rank, index);
      trace::Span span = make_span(rank, index, begin, end);
      const auto& body = std::get<program::ComputeOp>(op_of(rank, index).body);
      span.flops = body.flops;
      span.bytes = static_cast<std::int64_t>(body.bytes);
      commit(span);
      for (std::int32_t mirror : traced_mirrors_of(rank)) {
        span.rank = mirror;
        keep(span);
      }
      complete(rank, index);
      if (index == state.chain_last[stream]) break;
      begin = end;
    }
    try_start(rank);
  }

  void arrive(std::int32_t rank, OpIndex index, const program::CollectiveOp& collective) {
    RankState& state = ranks_[rank];
    // NCCL's kernel holds its SMs from its launch, waiting for the peers included: compute
    // started beside it from now on is slowed (a rank's slowdown never depends on the order
    // in which simultaneous arrivals are processed).
    if (state.communicating++ == 0 && overlap_slowdown_ > 0) cut_unslowed_runs(rank);
    const program::GroupFamily& family = program_.family(collective.group);
    const std::int32_t instance = family.instance_of_rank[rank];
    const program::StreamId stream = op_of(rank, index).stream;
    const CollectiveKey key{collective.group, stream, instance,
                            state.collective_sequence[collective.group * program_.streams.size() + stream]++};
    const auto& members = family.instances[instance];
    PendingCollective& pending = collectives_[key];
    if (pending.ops.empty()) pending.ops.assign(members.size(), 0);
    pending.ops[family.index_in_instance[rank]] = index;
    ++pending.arrived;
    if (symmetry_ != nullptr && collective.group == symmetry_->family) {
      // Across the replicas (a member's position is its replica): the followers of this
      // rank's replica reach it now, at this op, with it.
      const auto& followers = symmetry_->followers[symmetry_->replica_of[rank]];
      for (std::int32_t follower : followers) pending.ops[follower] = index;
      pending.arrived += static_cast<std::int32_t>(followers.size());
    }
    if (pending.arrived < static_cast<std::int32_t>(members.size())) return;

    CommRequest request;
    request.kind = collective.kind;
    const CollectiveOverride* fixed = options_.collectives.find(collective.kind, family.name);
    request.algorithm = fixed && !collective.userbuffers ? fixed->algorithm : collective.algorithm;
    request.userbuffers = collective.userbuffers;
    request.bytes = collective.bytes;
    request.root = collective.root;
    request.ps_servers = collective.ps_servers;
    for (std::int32_t member : members) request.endpoints.push_back(program_.placement[member]);
    std::vector<OpIndex> ops = std::move(pending.ops);
    collectives_.erase(key);
    start_communication(request, collective.group, members, std::move(ops));
  }

  void post(std::int32_t rank, OpIndex index, const program::SendRecvOp& p2p) {
    const program::GroupFamily& family = program_.family(p2p.group);
    const auto& members = family.instances[family.instance_of_rank[rank]];
    const std::int32_t peer_position =
        program::peer_position(p2p, family.index_in_instance[rank], static_cast<std::int32_t>(members.size()));
    if (peer_position < 0) {
      throw SimulationError(fmt::format("rank {} op '{}': peer offset {} is outside its {} group",
                                        rank, op_of(rank, index).name, p2p.peer_offset,
                                        family.name));
    }
    const std::int32_t peer = members[peer_position];
    const RankPair pair = p2p.is_send ? RankPair{rank, peer} : RankPair{peer, rank};
    auto& sends = sends_[{p2p.group, pair}];
    auto& receives = receives_[{p2p.group, pair}];
    (p2p.is_send ? sends : receives).push_back(index);
    if (sends.empty() || receives.empty()) return;
    const OpIndex send_index = sends.front();
    const OpIndex receive_index = receives.front();
    sends.pop_front();
    receives.pop_front();
    CommRequest request;
    request.bytes = std::get<program::SendRecvOp>(op_of(pair.first, send_index).body).bytes;
    request.endpoints = {program_.placement[pair.first], program_.placement[pair.second]};
    if (p2p.pair_communicator) {
      request.communicator_nodes =
          cluster_.node_of(request.endpoints[0]) == cluster_.node_of(request.endpoints[1]) ? 1 : 2;
    } else {
      request.communicator_ranks = static_cast<std::int32_t>(members.size());
      request.communicator_nodes = nodes_spanned(p2p.group, family.instance_of_rank[rank], members);
    }
    start_communication(request, p2p.group, {pair.first, pair.second}, {send_index, receive_index});
  }

  // The nodes a group instance's members sit on (counted once per instance).
  std::int32_t nodes_spanned(program::GroupFamilyId family, std::int32_t instance,
                             const std::vector<std::int32_t>& members) {
    auto [count, first] = nodes_spanned_.try_emplace({family, instance}, 0);
    if (first) {
      std::vector<std::int32_t> nodes;
      for (std::int32_t member : members)
        nodes.push_back(cluster_.node_of(program_.placement[member]));
      std::sort(nodes.begin(), nodes.end());
      count->second =
          static_cast<std::int32_t>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
    }
    return count->second;
  }

  void start_communication(const CommRequest& request, program::GroupFamilyId family,
                           std::vector<std::int32_t> members, std::vector<OpIndex> ops) {
    // A send's slowdown of the compute beside it is not counted: it holds 1–32 of the GPU's SMs
    // (nccl_p2p.h), and the 18.9 % interference was measured for collectives.
    const bool collective = request.kind.has_value();
    const bool mirrored = symmetry_ != nullptr && family != symmetry_->family;
    const std::int32_t first_member = members.front();  // for an error message, as members moves
    const OpIndex first_op = ops.front();
    std::vector<CommRequest> mirrors;
    std::shared_ptr<MirrorCheck> check;
    if (symmetry_ != nullptr) {
      auto [placed, first_time] = placed_.try_emplace({mirrored, members}, false);
      if (mirrored && !placed->second) mirrors = mirror_requests(request, members);
      if (first_time) {
        if (mirrored && elide_node_local(request, mirrors)) {
          placed->second = true;
          mirrors.clear();
        } else {
          claim_shared_nodes(request);
          for (const CommRequest& mirror : mirrors) claim_shared_nodes(mirror);
        }
      }
      if (!mirrors.empty()) {
        check = std::make_shared<MirrorCheck>();
        check->rank = first_member;
        check->op = &op_of(first_member, first_op);
        check->leader = symmetry_->replica_of[first_member];
        check->unfinished = mirrors.size() + 1;
      }
    }
    try {
      auto done = [this, family, collective, mirrored, check, members = std::move(members),
                   ops = std::move(ops)](const CommResult& result) {
        if (check) check->finished(CommOutcome::of(result), check->leader);
        const trace::StringId algorithm =
            result_.timeline.strings.intern(program::algorithm_name(result.algorithm));
        const program::GroupFamily& group = program_.family(family);
        const trace::StringId group_name = group_name_of(family, group.instance_of_rank[members.front()]);
        for (std::size_t m = 0; m < members.size(); ++m) {
          trace::Span span = make_span(members[m], ops[m], result.start, result.end);
          span.bytes = static_cast<std::int64_t>(result.bytes_sent[m]);
          span.algorithm = algorithm;
          span.group = group_name;
          if (!simulated(members[m])) {  // a follower in a collective over the replicas
            const std::int64_t delta =
                span.bytes - static_cast<std::int64_t>(result.bytes_sent[symmetry_->leader[m]]);
            if (delta != 0)
              mirror_bytes_delta_[members[m]][static_cast<std::size_t>(span.category)] += delta;
            keep(span);
            continue;
          }
          commit(span);
          result_.comm_latency_s[members[m]] += result.latency_seconds;
          result_.comm_bandwidth_s[members[m]] += result.bandwidth_seconds;
          if (!mirrored) continue;  // over the replicas, every member is in `members`
          for (std::int32_t mirror : traced_mirrors_of(members[m])) {
            span.rank = mirror;
            span.group = group_name_of(family, group.instance_of_rank[mirror]);
            keep(span);
          }
        }
        record_steps(result, members, ops);
        for (std::size_t m = 0; m < members.size(); ++m) {
          if (!simulated(members[m])) continue;
          if (collective) --ranks_[members[m]].communicating;
          complete(members[m], ops[m]);
        }
        for (std::int32_t member : members) {
          if (simulated(member)) try_start(member);
        }
      };
      if (mirrors.empty()) {
        network_->start(request, std::move(done));
      } else {
        network_->start_with_copies(request, mirrors, std::move(done),
                                    [this, check](std::size_t m, const CommResult& result) {
                                      check->finished(CommOutcome::of(result),
                                                      symmetry_->followers[check->leader][m]);
                                    });
      }
    } catch (const std::exception& error) {  // an unschedulable collective, a missing route
      throw SimulationError(fmt::format("rank {} op '{}': {}", first_member, op_of(first_member, first_op).name,
                                        error.what()));
    }
  }

  // What must be equal for a mirror replica's communication to be its representative's.
  struct CommOutcome {
    Time start;
    Time end;
    program::Algorithm algorithm = program::Algorithm::kRing;
    double latency_seconds = 0;
    double bandwidth_seconds = 0;
    std::vector<double> bytes_sent;
    static CommOutcome of(const CommResult& result) {
      return {result.start, result.end, result.algorithm, result.latency_seconds, result.bandwidth_seconds,
              result.bytes_sent};
    }
    bool operator==(const CommOutcome&) const = default;
    bool operator<(const CommOutcome& other) const {
      return std::tie(start, end, algorithm, latency_seconds, bandwidth_seconds, bytes_sent) <
             std::tie(other.start, other.end, other.algorithm, other.latency_seconds, other.bandwidth_seconds,
                      other.bytes_sent);
    }
  };
  // The outcomes of one communication of a leader replica and its followers' copies, compared
  // as they finish (in any order). When the last has finished and some differed, the run stops
  // with the followers grouped by what they got.
  struct MirrorCheck {
    std::int32_t rank = 0;            // the leader's first member and its op, named in the
    const program::Op* op = nullptr;  // message (formatted only then: this runs for every transfer)
    std::int32_t leader = 0;          // its replica
    std::size_t unfinished = 0;       // of the leader's and the followers' copies
    std::optional<CommOutcome> leader_outcome;
    std::vector<std::pair<std::int32_t, CommOutcome>> early;      // followers finished before the leader
    std::map<CommOutcome, std::vector<std::int32_t>> differing;  // outcome → the followers that got it
    void finished(CommOutcome outcome, std::int32_t replica) {
      if (replica == leader) {
        leader_outcome = std::move(outcome);
        for (auto& [follower, its] : early) compare(follower, std::move(its));
        early.clear();
      } else if (leader_outcome) {
        compare(replica, std::move(outcome));
      } else {
        early.emplace_back(replica, std::move(outcome));
      }
      if (--unfinished > 0 || differing.empty()) return;
      // Each group in replica order, and the groups by their first replica, whatever the finishing order.
      std::vector<std::pair<std::vector<std::int32_t>, const CommOutcome*>> groups;
      for (auto& [its, followers] : differing) {
        std::sort(followers.begin(), followers.end());
        groups.emplace_back(std::move(followers), &its);
      }
      std::sort(groups.begin(), groups.end());
      const CommOutcome& first = *groups.front().second;
      std::vector<std::vector<std::int32_t>> splits;
      for (auto& [followers, its] : groups) splits.push_back(std::move(followers));
      std::string what =
          fmt::format("the network treats the replicas differently: rank {} op '{}' took {:.6f} to {:.6f} ms "
                      "in replica {}, {:.6f} to {:.6f} ms in replica {}",
                      rank, op->name, leader_outcome->start.seconds() * 1e3, leader_outcome->end.seconds() * 1e3,
                      leader, first.start.seconds() * 1e3, first.end.seconds() * 1e3, splits.front().front());
      throw AsymmetricNetwork(what, std::move(splits));
    }
    void compare(std::int32_t replica, CommOutcome outcome) {
      if (outcome == *leader_outcome) return;
      differing[std::move(outcome)].push_back(replica);
    }
  };

  // Communication inside one NVSwitch node travels only on that node's GPU–NVSwitch links, and
  // those links carry nothing else but transfers between two GPUs of the node (topology/
  // cluster.h). So when a communication of a class's leader and each of its followers' copies
  // lie inside one node each, at the same GPU indices, and no other communication ever has two
  // members on those nodes, every copy meets on its node exactly what the leader's meets on its
  // own: the copies need not run. Nodes are claimed for such private traffic here; a later
  // communication with two members on a claimed node means the assumption failed, and the run
  // starts over on every rank (claim_shared_nodes). A node holding ranks of two replicas is
  // shared from the start (mark_shared_nodes: an instance of the replicas' family has a member
  // in each), so a class without followers, claiming its node here, never meets another
  // replica's traffic there.
  bool elide_node_local(const CommRequest& request, const std::vector<CommRequest>& mirrors) {
    if (request.endpoints.size() < 2) return true;  // nothing travels: every copy is the same
    const topology::ClusterSpec& spec = cluster_.spec();
    if (spec.node.kind != topology::NodeKind::kNvSwitch) return false;
    const auto node_of = [&](const CommRequest& r) -> std::optional<std::int32_t> {
      const std::int32_t node = cluster_.node_of(r.endpoints.front());
      for (std::int32_t endpoint : r.endpoints) {
        if (!cluster_.is_gpu(endpoint) || cluster_.node_of(endpoint) != node) return std::nullopt;
      }
      return node;
    };
    const auto representative_node = node_of(request);
    if (!representative_node) return false;
    std::vector<std::int32_t> nodes = {*representative_node};
    for (const CommRequest& mirror : mirrors) {
      const auto node = node_of(mirror);
      if (!node) return false;
      for (std::size_t m = 0; m < mirror.endpoints.size(); ++m) {
        if (mirror.endpoints[m] % spec.node.gpus != request.endpoints[m] % spec.node.gpus) return false;
      }
      nodes.push_back(*node);
    }
    for (std::int32_t node : nodes) {
      if (node_use_[node] == NodeUse::kShared) return false;
    }
    for (std::int32_t node : nodes) node_use_[node] = NodeUse::kPrivate;
    return true;
  }

  // Nodes where a group of the program that cannot be elided (one over the replicas, or one
  // spanning nodes) has two or more members: shared from the start.
  void mark_shared_nodes() {
    node_use_.assign(static_cast<std::size_t>(cluster_.spec().nodes + cluster_.spec().parameter_servers.count),
                     NodeUse::kNone);
    const std::vector<bool> used = used_families(program_);
    for (std::size_t g = 0; g < used.size(); ++g) {
      if (!used[g]) continue;
      const auto family = static_cast<program::GroupFamilyId>(g);
      for (const auto& members : program_.family(family).instances) {
        CommRequest group;
        for (std::int32_t member : members) group.endpoints.push_back(program_.placement[member]);
        const std::int32_t first_node = cluster_.node_of(group.endpoints.front());
        const bool one_node = std::all_of(group.endpoints.begin(), group.endpoints.end(),
                                          [&](std::int32_t endpoint) { return cluster_.node_of(endpoint) == first_node; });
        if (family == symmetry_->family || !one_node) claim_shared_nodes(group);
      }
    }
  }

  // A communication that runs on the network with two or more members on one node shares that
  // node's links: such a node can no longer hold private traffic, and must not already.
  void claim_shared_nodes(const CommRequest& request) {
    if (request.endpoints.size() < 2) return;
    scratch_nodes_.clear();
    for (std::int32_t endpoint : request.endpoints) scratch_nodes_.push_back(cluster_.node_of(endpoint));
    std::sort(scratch_nodes_.begin(), scratch_nodes_.end());
    for (std::size_t i = 1; i < scratch_nodes_.size(); ++i) {
      const std::int32_t node = scratch_nodes_[i];
      if (node != scratch_nodes_[i - 1]) continue;
      if (node_use_[node] == NodeUse::kPrivate) {
        throw AsymmetricNetwork(fmt::format(
            "node {} carried one replica's private traffic, and now a communication over several replicas", node));
      }
      node_use_[node] = NodeUse::kShared;
    }
  }

  // Every follower replica's copy of a communication of its leader (run beside it so that links
  // carry all replicas' traffic, each checked against the leader's when done).
  std::vector<CommRequest> mirror_requests(const CommRequest& request, const std::vector<std::int32_t>& members) const {
    const auto& followers = symmetry_->followers[symmetry_->replica_of[members.front()]];
    std::vector<CommRequest> mirrors;
    mirrors.reserve(followers.size());
    for (std::int32_t replica : followers) {
      CommRequest& mirror = mirrors.emplace_back(request);
      for (std::size_t m = 0; m < members.size(); ++m) {
        mirror.endpoints[m] = program_.placement[symmetry_->mirror(program_, members[m], replica)];
      }
    }
    return mirrors;
  }

  const std::vector<std::int32_t>& traced_mirrors_of(std::int32_t rank) const {
    static const std::vector<std::int32_t> kNone;
    return traced_mirrors_.empty() ? kNone : traced_mirrors_[rank];
  }

  // The algorithm's steps (packet model) on a "<stream> steps" lane under each member's op.
  void record_steps(const CommResult& result, const std::vector<std::int32_t>& members,
                    const std::vector<OpIndex>& ops) {
    trace::Timeline& timeline = result_.timeline;
    for (const StepSpan& step : result.steps) {
      const std::int32_t rank = members[step.member];
      if (!timeline.ranks[rank].traced) continue;
      const program::Op& op = op_of(rank, ops[step.member]);
      trace::Span span;
      span.start_ps = step.start.ps();
      span.end_ps = step.end.ps();
      span.rank = rank;
      span.stream = timeline.stream_index(program_.streams[op.stream] + " steps");
      span.category = labels_of(rank, ops[step.member]).category;
      span.kind = timeline.strings.intern(trace::kAlgorithmStepKind);
      span.name = timeline.strings.intern(fmt::format("{} step {}", step.phase, step.step));
      timeline.spans.push_back(span);
    }
  }

  trace::StringId group_name_of(program::GroupFamilyId family, std::int32_t instance) {
    auto [it, inserted] = group_names_.try_emplace({family, instance}, 0);
    if (inserted) {
      it->second = result_.timeline.strings.intern(
          fmt::format("{}[{}]", program_.family(family).name, instance));
    }
    return it->second;
  }

  const program::SpanLabels& labels_of(std::int32_t rank, OpIndex index) {
    std::optional<program::SpanLabels>& labels = ranks_[rank].plan->labels[index];
    if (!labels) labels = program::span_labels(op_of(rank, index), result_.timeline.strings);
    return *labels;
  }

  trace::Span make_span(std::int32_t rank, OpIndex index, Time begin, Time end) {
    const program::Op& op = op_of(rank, index);
    trace::Span span;
    span.start_ps = begin.ps();
    span.end_ps = end.ps();
    span.rank = rank;
    span.stream = op.stream;
    labels_of(rank, index).apply_to(span);
    span.op = index;
    return span;
  }

  // Every span of a simulated rank counts in its summary (mirrors copy theirs at the end).
  void commit(const trace::Span& span) {
    summaries_.add(span);
    keep(span);
  }

  // Only traced ranks keep their spans.
  void keep(const trace::Span& span) {
    if (!result_.timeline.ranks[span.rank].traced) return;
    result_.timeline.spans.push_back(span);
    record_dependencies(span.rank, static_cast<OpIndex>(span.op));
  }

  void record_dependencies(std::int32_t rank, OpIndex index) {
    for (const OpIndex after : program::span_dependencies(*ranks_[rank].program, index)) {
      result_.timeline.dependencies.push_back({rank, index, after});
    }
  }

  void apply_memory(std::int32_t rank, const program::Op& op) {
    const auto& memory = std::get<program::MemoryOp>(op.body);
    RankState& state = ranks_[rank];
    state.memory[static_cast<std::size_t>(memory.category)] +=
        memory.allocate ? memory.bytes : -memory.bytes;
    trace::MemorySample sample;
    sample.rank = rank;
    sample.time_ps = engine_.now().ps();
    sample.bytes = state.memory;
    sample.cause = labels_of(rank, static_cast<OpIndex>(&op - ranks_[rank].program->ops.data())).name;
    for (std::int32_t mirror : traced_mirrors_of(rank)) {
      result_.timeline.memory.push_back(sample);
      result_.timeline.memory.back().rank = mirror;
    }
    // Untraced ranks keep their highest sample; so does a representative for its mirrors.
    const bool keeps_peak = !result_.timeline.ranks[rank].traced || symmetry_ != nullptr;
    if (result_.timeline.ranks[rank].traced) result_.timeline.memory.push_back(sample);
    if (!keeps_peak) return;
    std::int64_t total = 0;
    for (std::int64_t bytes : state.memory) total += bytes;
    if (total > state.peak_bytes) {
      state.peak_bytes = total;
      state.peak_sample = std::move(sample);
    }
  }

  void complete(std::int32_t rank, OpIndex index) {
    RankState& state = ranks_[rank];
    const program::Op& op = op_of(rank, index);
    state.done[index] = 1;
    state.busy[op.stream] = 0;
    ++state.cursor[op.stream];
    ++state.completed;
    ++completed_ops_;
  }

  void check_finished() const {
    for (std::int32_t rank = 0; rank < program_.world_size; ++rank) {
      const RankState& state = ranks_[rank];
      if (!simulated(rank) || state.completed == state.program->ops.size()) continue;
      for (std::size_t s = 0; s < state.cursor.size(); ++s) {
        const auto& queue = state.plan->streams[s];
        if (state.cursor[s] >= queue.size()) continue;
        const program::Op& op = op_of(rank, queue[state.cursor[s]]);
        throw SimulationError(fmt::format(
            "deadlock: rank {} never finished op '{}' on stream '{}' (its peers or dependencies "
            "never got there)",
            rank, op.name, program_.streams[s]));
      }
    }
  }

  const program::Program& program_;
  const ReplicaSymmetry* symmetry_;  // null: every rank is simulated
  const topology::Cluster& cluster_;
  Engine engine_;
  ComputeModel gpu_compute_;
  ComputeModel host_compute_;
  ComputeModel offload_compute_;
  std::unique_ptr<NetworkModel> network_;
  SimulationOptions options_;
  std::int32_t run_;
  double overlap_slowdown_;  // ComputeEfficiency::overlap_slowdown, 0 under a stated compute time
  std::vector<RankState> ranks_;
  std::map<std::pair<const program::RankProgram*, bool>, RankPlan> plans_;
  std::map<std::pair<program::GroupFamilyId, std::int32_t>, trace::StringId> group_names_;
  std::map<std::pair<program::GroupFamilyId, std::int32_t>, std::int32_t>
      nodes_spanned_;  // by instance
  std::map<CollectiveKey, PendingCollective> collectives_;
  std::map<TransferKey, std::deque<OpIndex>> sends_;
  std::map<TransferKey, std::deque<OpIndex>> receives_;
  SimulationResult result_;
  trace::SummaryBuilder summaries_{0};
  std::vector<std::vector<std::int32_t>> traced_mirrors_;  // per representative (empty without symmetry)
  std::map<std::int32_t, std::array<std::int64_t, trace::kCategoryCount>> mirror_bytes_delta_;
  // Per node, with symmetry: whether it carried traffic of one replica only, with mirrors not
  // run (elide_node_local), or communication among several of its ranks that ran.
  enum class NodeUse : std::uint8_t { kNone, kPrivate, kShared };
  std::vector<NodeUse> node_use_;
  // Per communication's members (and whether it is mirrored), with symmetry: whether its mirrors
  // are elided. Decided and its nodes claimed the first time: both stay true for the
  // run (a node shared stays shared; a private node claimed again ends the run), so a tensor-
  // parallel group's thousands of collectives build their followers' copies once.
  std::unordered_map<std::pair<bool, std::vector<std::int32_t>>, bool,
                     boost::hash<std::pair<bool, std::vector<std::int32_t>>>>
      placed_;
  std::size_t completed_ops_ = 0;  // by simulated ranks, for progress reports
  std::vector<std::int32_t> scratch_nodes_;
};

// What a simulation will allocate beyond the Program and the cluster it is given, from counts
// known before it runs. Unit costs measured with /usr/bin/time on the 3-D scenario
// (llama2_70b_3d_1024gpu.toml) at 1,024 and 2,048 GPUs, comparing runs that differ in one
// count, and rounded up so that the estimate stays above what was measured:
//   per op of a simulated rank (its state and summary): 10.6–11.5 bytes measured → 16;
//   per op of a traced rank (its spans, memory samples, names in the timeline): 130 → 160;
//   per link of the cluster (network state, routes, the mirrors' flows): 550 → 1,024.
struct MemoryEstimate {
  static constexpr double kBytesPerSimulatedOp = 16;
  static constexpr double kBytesPerTracedOp = 160;
  static constexpr double kBytesPerLink = 1024;
  double simulated_ops = 0;  // over the ranks simulated (the class leaders' only, with symmetry)
  double traced_ops = 0;     // over the ranks whose spans the timeline keeps
  std::int32_t traced_ranks = 0;
  double links = 0;

  MemoryEstimate(const program::Program& program, const topology::Cluster& cluster,
                 const std::vector<bool>& traced, const ReplicaSymmetry* symmetry)
      : links(static_cast<double>(cluster.link_count())) {
    for (std::int32_t rank = 0; rank < program.world_size; ++rank) {
      const auto ops = static_cast<double>(program.ranks[static_cast<std::size_t>(rank)]->ops.size());
      if (symmetry == nullptr || symmetry->representative[static_cast<std::size_t>(rank)] == rank) simulated_ops += ops;
      if (traced.empty() || (static_cast<std::size_t>(rank) < traced.size() && traced[static_cast<std::size_t>(rank)])) {
        traced_ops += ops;
        ++traced_ranks;
      }
    }
  }
  double simulation_bytes() const { return kBytesPerSimulatedOp * simulated_ops + kBytesPerLink * links; }
  double timeline_bytes() const { return kBytesPerTracedOp * traced_ops; }
  double bytes() const { return simulation_bytes() + timeline_bytes(); }

  // Throws NotEnoughMemory when the estimate exceeds `available` bytes (0: unchecked); `how`
  // says which ranks would be simulated.
  void check(std::uint64_t available, const std::string& how) const {
    if (available == 0 || bytes() <= static_cast<double>(available)) return;
    constexpr double kGB = 1e9;
    throw NotEnoughMemory(fmt::format(
        "this run would need about {:.1f} GB of memory but {:.1f} GB is available: the timeline of {} traced "
        "ranks ({:.1f} M ops) {:.1f} GB, the simulation ({}: {:.1f} M ops, {:.0f} links) {:.1f} GB (hint: trace fewer "
        "ranks with output.trace_ranks = \"auto\" or a list, keep network.symmetry = true, or run it where there "
        "is more memory; dtsim run --no-memory-check runs it anyway)",
        bytes() / kGB, static_cast<double>(available) / kGB, traced_ranks, traced_ops / 1e6, timeline_bytes() / kGB,
        how, simulated_ops / 1e6, links, simulation_bytes() / kGB));
  }
};

}  // namespace

const CollectiveOverride* CollectiveOverrides::find(program::CollectiveKind kind,
                                                    const std::string& family) const {
  if (auto it = by_group.find({family, kind}); it != by_group.end()) return &it->second;
  if (auto it = by_kind.find(kind); it != by_kind.end()) return &it->second;
  return nullptr;
}

SimulationResult simulate(const program::Program& program, const topology::Cluster& cluster,
                          const SimulationOptions& options) {
  const auto problems = program::validate(program);
  if (!problems.empty()) {
    throw SimulationError("malformed program: " + problems.front() +
                          (problems.size() > 1 ? fmt::format(" (and {} more)", problems.size() - 1) : ""));
  }
  std::string why_not;
  std::optional<ReplicaSymmetry> symmetry;
  if (!options.use_symmetry) {
    why_not = "symmetry turned off";
  } else if (options.network.model == "packet") {
    why_not = "the packet model draws every rank's algorithm steps";
  } else {
    symmetry = find_replica_symmetry(program, cluster, options.compute_slowdown, &why_not);
  }
  // Replicas the network treats differently from their leader leave its class, and the run
  // starts again — at most kMaxRuns runs in classes, then (or with every replica in a class of
  // its own) every rank is simulated. Splits an earlier run of this program found are applied
  // first.
  constexpr std::int32_t kMaxRuns = 8;
  std::int32_t runs = 0;
  std::vector<ReplicaSplit> splits;
  if (symmetry) {
    for (const ReplicaSplit& known : options.replica_splits) {
      symmetry->split(program, known);
      splits.push_back(known);
    }
  }
  while (symmetry && symmetry->classes() < symmetry->replicas) {
    MemoryEstimate(program, cluster, options.traced_ranks, &*symmetry)
        .check(options.memory_available_bytes,
               fmt::format("{} of {} replicas", symmetry->classes(), symmetry->replicas));
    try {
      SimulationResult result = Simulator(program, cluster, options, &*symmetry, ++runs).run();
      result.symmetry = symmetry->describe(program);
      result.replica_splits = std::move(splits);
      return result;
    } catch (const AsymmetricNetwork& asymmetric) {
      why_not = asymmetric.what();
      if (asymmetric.split.groups.empty()) break;
      if (runs == kMaxRuns) {
        why_not = fmt::format("the network set replicas apart in each of {} runs, the last: {}", kMaxRuns, why_not);
        break;
      }
      symmetry->split(program, asymmetric.split);
      splits.push_back(asymmetric.split);
    }
  }
  MemoryEstimate(program, cluster, options.traced_ranks, nullptr)
      .check(options.memory_available_bytes, "every rank, " + why_not);
  SimulationResult result = Simulator(program, cluster, options, nullptr, ++runs).run();
  result.symmetry = "every rank: " + why_not;
  return result;
}

}  // namespace sim
