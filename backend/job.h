// The MPI job around a real run, shared by the CPU executor (backend/mpi/) and the GPU
// executor (backend/gpu/): both launch one rank per process with mpirun, so both refuse a
// Program the same way before anything runs, start their ranks at a common barrier, end the
// whole job with one message when something fails, and gather the spans on rank 0.
//
// An executor implements RankRunner (one rank's ops, run once); backend::execute() drives it
// (warm-up runs, the recorded run, verification, the gathered timeline).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/executor.h"
#include "sim/collectives/schedule.h"
#include "sim/trace/timeline.h"
#include "strategies/program/program.h"

namespace backend::job {

using Clock = std::chrono::steady_clock;

// One recorded op: its index in the rank's op list and when it ran, in picoseconds after the
// rank's start (the common barrier).
struct OpTiming {
  std::int64_t op = 0;
  std::int64_t start_ps = 0;
  std::int64_t end_ps = 0;
};

struct RankRecord {
  std::vector<OpTiming> timings;  // every op, ascending index (memory ops: when they applied)
  double host_seconds = 0;        // barrier → every op finished, by the host clock
};

// One rank's executor.
class RankRunner {
 public:
  virtual ~RankRunner() = default;
  // Runs the rank's ops once, after a barrier of all ranks. `verifying`: crafted inputs, and
  // every collective's and transfer's result checked (a mismatch ends the job).
  virtual RankRecord run(bool verifying) = 0;
  virtual std::int64_t results_checked() const = 0;
  // What ran the ops, for the report (e.g. "MPI + OpenBLAS on CPU ranks").
  virtual std::string description() const = 0;
};

// This process's rank in MPI_COMM_WORLD.
int world_rank();

// Polls `ready` until it returns true or `timeout_s` passes, yielding the core between polls;
// false when the time ran out. Every wait of a real run that could hang goes through it: MPI
// requests (below), NCCL communicators being created, split and connected, GPU streams.
bool poll_until(const std::function<bool()>& ready, double timeout_s);

// Waits for a nonblocking MPI call (poll_until); false when `timeout_s` passed first, or the
// call failed.
bool wait_within(MPI_Request& request, double timeout_s);

// A step every rank takes (barrier, gathers), under the same watchdog as the ops: a rank that
// never gets there (hung, dead) ends the job instead of hanging it.
void wait_for_job(MPI_Request& request, double timeout_s, const char* what);

// Ends the job: "dtsim: rank R: MESSAGE" on stderr, then MPI_Abort stops every rank with
// kExitRunFailed.
[[noreturn]] void fail(int rank, const std::string& message);

// Called by a rank that timed out, before it reports: waits kTimeoutReportStagger_s times
// min(world rank, 3). The peers of one hung rank time out together; staggered, the first of
// them reports and its MPI_Abort ends the others before they print, so a hang gives one
// message (a parameter server's workers each printed one).
void wait_before_timeout_report();
inline constexpr double kTimeoutReportStagger_s = 5.0;  // ≫ mpirun's teardown after MPI_Abort (~0.1 s)

// Which node each world rank runs on: ranks on one host share a node, numbered in order of
// first appearance.
std::vector<std::int32_t> nodes_of_ranks(double timeout_s);

// This rank's index among the ranks on its host (the GPU it drives).
int local_rank();

// Everything that would fail mid-run, refused before any rank starts and identically on every
// rank (they hold the same Program): world size, an --inject-fault that could not happen (a
// rank outside the job, an op the rank lacks, corrupt without --verify or on an op whose
// result --verify does not check), a malformed Program, ops larger than
// `options.max_op_bytes` by `bytes_of` (when given; `device` names where, e.g. "on a CPU"), and op kinds
// the executor cannot run (`refusal`, when given, returns why, or an empty string).
void check_program(const program::Program& program, const ExecutionOptions& options,
                   const std::function<std::int64_t(const program::Op&)>& bytes_of, const char* device,
                   const std::function<std::string(const program::Op&)>& refusal);

// The fault ExecutionOptions::fault asks this rank to inject.
class FaultInjector {
 public:
  FaultInjector(const ExecutionOptions& options, int rank) : fault_(options.fault), rank_(rank) {}
  // At the start of `op`: hangs (forever: a peer's watchdog ends the job), exits the process,
  // or throws std::bad_alloc.
  void at_start(const program::Op& op) const;
  // Whether `op`'s result is to be corrupted (checked by verification).
  bool corrupts(const program::Op& op) const;

 private:
  bool targets(const program::Op& op) const { return fault_ && fault_->rank == rank_ && fault_->op == op.name; }
  std::optional<ExecutionOptions::Fault> fault_;
  int rank_;
};

// The executors (one rank's runner each). The GPU one exists in builds with CUDA and NCCL;
// elsewhere it throws ExecutionError saying so.
std::unique_ptr<RankRunner> cpu_runner(const program::Program& program, const ExecutionOptions& options,
                                       const std::vector<std::int32_t>& nodes);
std::unique_ptr<RankRunner> gpu_runner(const program::Program& program, const ExecutionOptions& options,
                                       const std::vector<std::int32_t>& nodes);

// dtsim's schedule of a collective for `world_rank`'s instance of its group, the members placed
// on `nodes` (per world rank); kAuto picks ring where it can run, else the first algorithm
// that can. Throws ExecutionError when `algorithm` cannot run it.
collectives::CollectiveSpec collective_spec(const program::Program& program, const program::CollectiveOp& collective,
                                            std::int32_t world_rank, const std::vector<std::int32_t>& nodes,
                                            program::Algorithm algorithm);

// Rank 0 gathers every rank's timings and labels them from the Program; empty elsewhere.
// Communication spans carry the bytes their rank sends by dtsim's schedule of the algorithm
// (`options.algorithm`, or the automatic choice where MPI or NCCL chose their own), as the
// simulator's do; memory ops become memory samples: the Program's allocations, applied at the
// measured times (accounting, not a measurement of the process).
trace::Timeline gather_timeline(const program::Program& program, const std::vector<OpTiming>& mine,
                                const std::vector<std::int32_t>& nodes, const ExecutionOptions& options);

// After a verified run: sums the checks of all ranks, and — with options.layer set — compares
// each sharded layer the Program has with the unsharded one on the CPU (verification.h): the
// tensor-parallel attention and MLP forward (a "tp" group), the expert-parallel MoE forward
// (an "ep" group and experts), ring, Ulysses or all-gather attention (a "cp" group), ending the job
// if one differs. Returns what was checked.
std::string verify_results(const program::Program& program, const ExecutionOptions& options, std::int64_t checked_here);

// Per element, the largest over ranks of each rank's values (the same length on every rank).
std::vector<double> max_over_ranks(const std::vector<double>& values, double timeout_s);

// The index of the median of `values` (the lower middle for an even count), decided by rank 0
// and broadcast, so every rank keeps the same run.
std::size_t agreed_median_index(const std::vector<double>& values, double timeout_s);

}  // namespace backend::job
