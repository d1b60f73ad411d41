// The CPU executor: a Program run with MPI and OpenBLAS (see backend/executor.h), one
// thread per stream.
#include <mpi.h>
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "backend/job.h"
#include "backend/mpi/cpu_kernels.h"
#include "backend/mpi/verification.h"
#include "sim/collectives/schedule.h"

namespace backend {
namespace {

using program::OpIndex;
using job::Clock;
using job::OpTiming;

// Bytes of scratch memory an op needs on the CPU (to refuse full-size models up front). A
// parameter server receives a 1/servers shard from every worker at once.
std::int64_t scratch_bytes(const program::Program& program, const program::Op& op) {
  if (const auto* compute = std::get_if<program::ComputeOp>(&op.body)) {
    const program::Shape& s = compute->shape;
    switch (compute->kind) {
      case program::ComputeKind::kMatmul: return 4 * (s[1] * s[3] + s[3] * s[2] + s[1] * s[2]);
      case program::ComputeKind::kAttention: return 4 * (3 * s[3] * s[4] + s[3] * s[3]);
      default: return 2 * static_cast<std::int64_t>(compute->bytes);
    }
  }
  if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
    if (program::is_parameter_server(collective->kind)) {
      const auto members = static_cast<std::int64_t>(program.family(collective->group).instances.front().size());
      return collective->bytes + collective->bytes / std::max(1, collective->ps_servers) * members;
    }
    return 2 * collective->bytes;
  }
  if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) return p2p->bytes;
  return 0;
}

class RankExecutor final : public job::RankRunner {
 public:
  RankExecutor(const program::Program& program, const ExecutionOptions& options, std::vector<std::int32_t> nodes)
      : program_(program), options_(options), nodes_(std::move(nodes)) {
    job::check_program(
        program, options, [&program](const program::Op& op) { return scratch_bytes(program, op); }, "on a CPU", {});
    ops_ = &program.ranks[static_cast<std::size_t>(rank_)]->ops;  // world size checked above
    number_transfers();
    check_schedules();
    split_communicators();
    for (OpIndex i = 0; i < ops_->size(); ++i) {
      const program::StreamId stream = (*ops_)[i].stream;
      if (streams_.size() <= stream) streams_.resize(stream + 1u);
      streams_[stream].push_back(i);
    }
    scratch_.resize(streams_.size());
    openblas_set_num_threads(1);  // one core per rank: ranks are processes
  }

  ~RankExecutor() override {
    for (auto& [key, comm] : comms_) MPI_Comm_free(&comm);
  }

  job::RankRecord run(bool verifying) override {
    verifying_ = verifying;
    done_.assign(ops_->size(), 0);
    timings_.clear();
    MPI_Request barrier = MPI_REQUEST_NULL;
    MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
    job::wait_for_job(barrier, options_.timeout_s, "the barrier before the run");
    start_ = Clock::now();
    std::vector<std::thread> threads;
    for (std::size_t stream = 0; stream < streams_.size(); ++stream) {
      if (streams_[stream].empty()) continue;
      threads.emplace_back([this, stream] { run_stream(streams_[stream], scratch_[stream]); });
    }
    for (std::thread& thread : threads) thread.join();
    job::RankRecord record;
    record.host_seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    record.timings = std::move(timings_);
    std::sort(record.timings.begin(), record.timings.end(), [](const OpTiming& a, const OpTiming& b) { return a.op < b.op; });
    return record;
  }

  std::int64_t results_checked() const override { return checked_; }
  std::string description() const override { return "MPI + OpenBLAS on CPU ranks (one core each)"; }

 private:
  void check_schedules() const {
    for (std::int32_t rank = 0; rank < program_.world_size; ++rank) {
      for (const program::Op& op : program_.ranks[static_cast<std::size_t>(rank)]->ops) {
        const auto* collective = std::get_if<program::CollectiveOp>(&op.body);
        if (collective == nullptr || !runs_as_schedule(*collective)) continue;
        try {
          schedule_spec(*collective, rank);
        } catch (const ExecutionError& error) {
          throw ExecutionError(fmt::format("rank {}, op '{}': {}", rank, op.name, error.what()));
        }
      }
    }
  }

  // One communicator per (group family, stream) for collectives — ops of one stream are issued
  // in order, so the n-th collective of a group on a stream matches the n-th of every member —
  // and one per family for point-to-point, where a send and its receive sit on different
  // streams. Every rank splits every one in the same order (MPI_Comm_split is collective).
  void split_communicators() {
    std::vector<std::pair<program::GroupFamilyId, int>> needed;  // (family, stream or −1 for p2p)
    for (std::int32_t rank = 0; rank < program_.world_size; ++rank) {
      for (const program::Op& op : program_.ranks[static_cast<std::size_t>(rank)]->ops) {
        if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
          needed.emplace_back(collective->group, op.stream);
        } else if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) {
          needed.emplace_back(p2p->group, -1);
        }
      }
    }
    std::sort(needed.begin(), needed.end());
    needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
    for (const auto& key : needed) {
      const program::GroupFamily& family = program_.family(key.first);
      const std::int32_t instance = family.instance_of_rank[static_cast<std::size_t>(rank_)];
      MPI_Comm comm = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, instance < 0 ? MPI_UNDEFINED : instance,
                     instance < 0 ? 0 : family.index_in_instance[static_cast<std::size_t>(rank_)], &comm);
      if (comm != MPI_COMM_NULL) comms_[key] = comm;
    }
  }

  MPI_Comm comm_of(program::GroupFamilyId family, int stream, const program::Op& op) const {
    const auto found = comms_.find({family, stream});
    if (found == comms_.end()) {
      throw ExecutionError(fmt::format("rank {}, op '{}': this rank is in no instance of group '{}'", rank_, op.name,
                                       program_.family(family).name));
    }
    return found->second;
  }

  [[noreturn]] void fail(const std::string& message) const { job::fail(rank_, message); }

  void check(int code, const program::Op& op) const {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(code, text, &length);
    fail(fmt::format("op '{}': MPI error: {}", op.name, text));
  }

  void verify_result(const program::Op& op, int member, std::optional<std::string> wrong) {
    if (wrong) fail(fmt::format("op '{}': wrong result (group member {}): {}", op.name, member, *wrong));
    ++checked_;
  }

  void run_stream(const std::vector<OpIndex>& queue, cpu::Scratch& scratch) {
    for (const OpIndex index : queue) {
      const program::Op& op = (*ops_)[index];
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] {
          return std::all_of(op.deps.begin(), op.deps.end(), [&](OpIndex dependency) { return done_[dependency] != 0; });
        });
      }
      Clock::time_point begin;
      try {
        faults_.at_start(op);
        begin = run_op(op, scratch);
      } catch (const std::bad_alloc&) {
        fail(fmt::format("op '{}': out of memory allocating {} bytes of buffers", op.name, scratch_bytes(program_, op)));
      } catch (const std::exception& error) {
        fail(fmt::format("op '{}': {}", op.name, error.what()));
      }
      const Clock::time_point end = Clock::now();
      {
        std::lock_guard lock(mutex_);
        done_[index] = 1;
        timings_.push_back({index, picoseconds(begin), picoseconds(end)});
      }
      ready_.notify_all();
    }
  }

  std::int64_t picoseconds(Clock::time_point time) const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(time - start_).count() * 1000;
  }

  // Runs one op; returns when it started (a collective: once every member had reached it).
  Clock::time_point run_op(const program::Op& op, cpu::Scratch& scratch) {
    if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
      return run_collective(*collective, op, comm_of(collective->group, op.stream, op), scratch);
    }
    const Clock::time_point start = Clock::now();
    if (const auto* compute = std::get_if<program::ComputeOp>(&op.body)) cpu::run_compute(*compute, scratch);
    if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) run_send_recv(*p2p, op, scratch);
    return start;
  }

  // Waits for a nonblocking MPI call, yielding the core between tests (ranks share the cores
  // with their own compute threads, which a spinning wait would starve), and ends the job if
  // it has not finished after the timeout.
  void wait_yielding(MPI_Request& request, const program::Op& op, const char* what) const {
    if (job::wait_within(request, options_.timeout_s)) return;
    job::wait_before_timeout_report();
    fail(fmt::format("op '{}': {} did not finish within {} s (timeout), or failed: a peer never reached it, or stopped",
                     op.name, what, options_.timeout_s));
  }

  // Point-to-point tags: the n-th transfer of a (sender, receiver) pair in op-list order has
  // tag n on both sides (sends and receives match in order per pair), so that transfers of one
  // pair issued from different streams cannot match the wrong receive.
  void number_transfers() {
    std::map<std::tuple<program::GroupFamilyId, std::int32_t, bool>, int> counts;
    int upper = 32767;  // the least MPI_TAG_UB the standard guarantees
    for (OpIndex i = 0; i < ops_->size(); ++i) {
      const auto* p2p = std::get_if<program::SendRecvOp>(&(*ops_)[i].body);
      if (p2p == nullptr) continue;
      tags_[i] = counts[{p2p->group, p2p->peer_offset, p2p->is_send}]++ % upper;
    }
  }

  int tag_of(const program::Op& op) const { return tags_.at(static_cast<OpIndex>(&op - ops_->data())); }

  // MPI collectives with the op's byte counts: reductions in float (the bytes moved match;
  // MPI has no bfloat16 sum), the others as raw bytes.
  // The simulator starts a collective when its last member arrives: so does the span here,
  // after a rendezvous (a nonblocking barrier); the time spent waiting for peers is not the
  // collective's.
  Clock::time_point run_collective(const program::CollectiveOp& collective, const program::Op& op, MPI_Comm comm,
                                   cpu::Scratch& scratch) {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(comm, &request), op);
    wait_yielding(request, op, "the rendezvous of its group");
    const Clock::time_point start = Clock::now();
    int size = 1;
    MPI_Comm_size(comm, &size);
    int member = 0;
    MPI_Comm_rank(comm, &member);
    const std::int64_t bytes = collective.bytes;
    char* in = cpu::Scratch::sized(scratch.send, std::max<std::int64_t>(bytes, 4));
    char* out = cpu::Scratch::sized(scratch.receive, std::max<std::int64_t>(bytes, 4));
    if (verifying_) {
      verification::fill_collective(collective, member, size, in);
      std::memset(out, 0xFF, static_cast<std::size_t>(std::max<std::int64_t>(bytes, 4)));  // poison: NaN floats
    }
    if (runs_as_schedule(collective)) {
      run_schedule(collective, op, comm, member, size, scratch);
      return start;
    }
    const int floats = static_cast<int>(bytes / 4);
    const int share = static_cast<int>(bytes / size);
    switch (collective.kind) {
      case program::CollectiveKind::kAllReduce:
        check(MPI_Iallreduce(in, out, floats, MPI_FLOAT, MPI_SUM, comm, &request), op);
        break;
      case program::CollectiveKind::kAllGather:
        check(MPI_Iallgather(in, share, MPI_BYTE, out, share, MPI_BYTE, comm, &request), op);
        break;
      case program::CollectiveKind::kReduceScatter:
        check(MPI_Ireduce_scatter_block(in, out, floats / size, MPI_FLOAT, MPI_SUM, comm, &request), op);
        break;
      case program::CollectiveKind::kBroadcast:
        check(MPI_Ibcast(in, static_cast<int>(bytes), MPI_BYTE, collective.root, comm, &request), op);
        break;
      case program::CollectiveKind::kReduce:
        check(MPI_Ireduce(in, out, floats, MPI_FLOAT, MPI_SUM, collective.root, comm, &request), op);
        break;
      case program::CollectiveKind::kAllToAll:
        check(MPI_Ialltoall(in, share, MPI_BYTE, out, share, MPI_BYTE, comm, &request), op);
        break;
      case program::CollectiveKind::kBarrier:
        break;  // the rendezvous was the barrier
      case program::CollectiveKind::kPsPush:
      case program::CollectiveKind::kPsPull:
        break;  // run as schedules above
    }
    if (request != MPI_REQUEST_NULL) wait_yielding(request, op, "the collective");
    if (verifying_) {
      if (faults_.corrupts(op)) (collective.kind == program::CollectiveKind::kBroadcast ? in : out)[0] ^= 0x40;
      verify_result(op, member, verification::check_collective(collective, member, size, in, out));
    }
    return start;
  }

  // The collective as dtsim's schedule: in every step of every phase this member posts its
  // sends and receives at once and waits for them; in reducing phases it then sums what it
  // received into its buffer.
  void run_schedule(const program::CollectiveOp& collective, const program::Op& op, MPI_Comm comm, int member, int size,
                    cpu::Scratch& scratch) {
    const collectives::Schedule& schedule = schedule_of(collective, op, size);
    const bool reducing_kind = collective.kind == program::CollectiveKind::kPsPush ||
                               collective.kind == program::CollectiveKind::kAllReduce ||
                               collective.kind == program::CollectiveKind::kReduceScatter ||
                               collective.kind == program::CollectiveKind::kReduce;
    for (const collectives::Phase& phase : schedule.phases) {
      const auto bytes = static_cast<std::int64_t>(std::llround(phase.bytes_per_transfer));
      std::vector<int> to, from;
      for (const collectives::Transfer& transfer : phase.transfers) {
        if (transfer.src == member) to.push_back(transfer.dst);
        if (transfer.dst == member) from.push_back(transfer.src);
      }
      const bool reducing = reducing_kind && reduces(phase.name);
      char* send = cpu::Scratch::sized(scratch.send, std::max<std::int64_t>(bytes, 4));
      char* receive = cpu::Scratch::sized(scratch.receive, std::max<std::int64_t>(bytes, 4) * std::max<std::size_t>(from.size(), 1));
      for (std::int32_t step = 0; step < phase.steps; ++step) {
        std::vector<MPI_Request> requests(to.size() + from.size(), MPI_REQUEST_NULL);
        for (std::size_t i = 0; i < from.size(); ++i) {
          check(MPI_Irecv(receive + static_cast<std::int64_t>(i) * bytes, static_cast<int>(bytes), MPI_BYTE, from[i], 0, comm,
                          &requests[i]),
                op);
        }
        for (std::size_t i = 0; i < to.size(); ++i) {
          check(MPI_Isend(send, static_cast<int>(bytes), MPI_BYTE, to[i], 0, comm, &requests[from.size() + i]), op);
        }
        for (MPI_Request& request : requests) wait_yielding(request, op, "a step of its schedule");
        if (reducing) {
          for (std::size_t i = 0; i < from.size(); ++i) {
            cblas_saxpy(static_cast<int>(bytes / 4), 1.0f,
                        reinterpret_cast<const float*>(receive + static_cast<std::int64_t>(i) * bytes), 1,
                        reinterpret_cast<float*>(send), 1);
          }
        }
      }
    }
  }

  // Phases that combine what they receive (sim/collectives names them); a push's servers sum
  // the workers' gradient shards.
  static bool reduces(std::string_view phase) {
    return phase.find("reduce") != std::string_view::npos || phase.find("halving") != std::string_view::npos ||
           phase == "fold" || phase == "tree fill" || phase == "push";
  }

  // Collectives MPI has no call for — parameter-server push and pull — always run as dtsim's
  // schedule (each worker sends a 1/servers shard to every server, or receives one from each);
  // the others do with [backend] collectives = "dtsim".
  bool runs_as_schedule(const program::CollectiveOp& collective) const {
    return options_.own_schedules || program::is_parameter_server(collective.kind);
  }

  // Built once per op and kept: every run issues the same collectives.
  const collectives::Schedule& schedule_of(const program::CollectiveOp& collective, const program::Op& op, int) {
    std::lock_guard lock(schedules_mutex_);
    const auto key = &op;
    if (auto found = schedules_.find(key); found != schedules_.end()) return found->second;
    return schedules_.emplace(key, collectives::build_schedule(schedule_spec(collective, rank_))).first->second;
  }

  // The schedule for `world_rank`'s instance of the collective's group (job::collective_spec);
  // throws ExecutionError when the chosen algorithm cannot run it (check_schedules() asks for
  // every rank, so that all refuse alike before anything runs).
  collectives::CollectiveSpec schedule_spec(const program::CollectiveOp& collective, std::int32_t world_rank) const {
    const program::Algorithm algorithm =
        options_.algorithm ? options_.algorithm(collective, program_.family(collective.group).name) : collective.algorithm;
    return job::collective_spec(program_, collective, world_rank, nodes_, algorithm);
  }

  void run_send_recv(const program::SendRecvOp& p2p, const program::Op& op, cpu::Scratch& scratch) {
    const MPI_Comm comm = comm_of(p2p.group, -1, op);
    int me = 0, size = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    const int peer = program::peer_position(p2p, me, size);
    if (peer < 0) {
      throw ExecutionError(fmt::format("rank {}, op '{}': peer offset {} leaves the group", rank_, op.name, p2p.peer_offset));
    }
    char* buffer = cpu::Scratch::sized(scratch.send, std::max<std::int64_t>(p2p.bytes, 1));
    MPI_Request request = MPI_REQUEST_NULL;
    if (verifying_ && p2p.is_send) verification::fill_transfer(me, p2p.bytes, buffer);
    if (p2p.is_send) {
      check(MPI_Isend(buffer, static_cast<int>(p2p.bytes), MPI_BYTE, peer, tag_of(op), comm, &request), op);
    } else {
      if (verifying_) std::memset(buffer, 0xFF, static_cast<std::size_t>(p2p.bytes));  // poison
      check(MPI_Irecv(buffer, static_cast<int>(p2p.bytes), MPI_BYTE, peer, tag_of(op), comm, &request), op);
    }
    wait_yielding(request, op, p2p.is_send ? "the send" : "the receive");
    if (verifying_ && !p2p.is_send) {
      if (faults_.corrupts(op)) buffer[0] ^= 0x40;
      verify_result(op, me, verification::check_transfer(peer, p2p.bytes, buffer));
    }
  }

 private:
  const program::Program& program_;
  const ExecutionOptions& options_;
  std::vector<std::int32_t> nodes_;  // per world rank
  int rank_ = job::world_rank();
  job::FaultInjector faults_{options_, rank_};
  const std::vector<program::Op>* ops_ = nullptr;
  std::vector<std::vector<OpIndex>> streams_;
  std::vector<cpu::Scratch> scratch_;  // per stream, kept across runs: the warm-up run allocates
  std::map<std::pair<program::GroupFamilyId, int>, MPI_Comm> comms_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::uint8_t> done_;
  std::vector<OpTiming> timings_;
  Clock::time_point start_;
  bool verifying_ = false;
  std::map<OpIndex, int> tags_;      // point-to-point ops
  std::mutex schedules_mutex_;
  std::map<const program::Op*, collectives::Schedule> schedules_;
  std::atomic<std::int64_t> checked_{0};
};

}  // namespace

std::unique_ptr<job::RankRunner> job::cpu_runner(const program::Program& program, const ExecutionOptions& options,
                                            const std::vector<std::int32_t>& nodes) {
  return std::make_unique<RankExecutor>(program, options, nodes);
}

}  // namespace backend
