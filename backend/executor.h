// backend::execute — run a Program for real, one rank per MPI process, and record when every
// op ran: the same trace::Timeline the simulator writes, so the two compare op by op.
//
// Two executors behind one call (ExecutionOptions::device):
//  * CPU (backend/mpi/): compute ops as OpenBLAS single-precision GEMMs of the op's shapes
//    (attention as its two batched GEMMs) and memory passes over the op's bytes for
//    memory-bound kinds; collectives as MPI collectives on one communicator per (rank group,
//    stream), split from MPI_COMM_WORLD; point-to-point ops as MPI sends and receives. Each
//    stream runs on its own thread (MPI_THREAD_MULTIPLE), so compute and communication overlap
//    as the Program allows. Spans from the monotonic clock.
//  * GPU (backend/gpu/, builds with CUDA and NCCL): one GPU per rank, chosen by the rank's
//    index on its host; compute ops as cuBLAS GEMMs of the op's shapes and dtype and a small
//    CUDA kernel for memory-bound kinds; collectives as NCCL calls on communicators split from
//    one world communicator; each Program stream is a CUDA stream, dependencies across
//    streams are CUDA events, and spans come from CUDA events.
// In both, an op starts once its dependencies have finished, ranks start at a common barrier,
// and each run is host-timed (barrier → all work done on the slowest rank, each rank by its own
// clock from its barrier exit, the origin of its spans: no span ends after it). After the warm-up, the Program runs ExecutionOptions::measured_runs times and the
// timeline is the median run's: a shared machine's stray pauses land in one run, not in the
// figure. Metadata "host_run_time_s" is the median run's time, "host_run_times_s" every run's.
//
// Failures end the whole job with one message naming the rank and the op: an MPI or NCCL
// error, an op not finished within ExecutionOptions::timeout_s (a watchdog, as NCCL's), a
// failed allocation (host or device, with the bytes asked for); a rank that dies is reported
// by mpirun, which stops the others. Faults can be injected to test this.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "sim/trace/timeline.h"
#include "strategies/program/program.h"

namespace backend {

// MPI for the life of the object (MPI_Init_thread with MPI_THREAD_MULTIPLE … MPI_Finalize).
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

// A Program that cannot run here, or a failure while running it; what() names the rank and
// the op.
class ExecutionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How context parallelism splits attention over a "cp" group (strategies' ContextParallelScheme,
// as verification checks it; backend/mpi/verification.h).
enum class ContextParallelKind { kRing, kUlysses, kAllGather };

struct ExecutionOptions {
  enum class Device { kCpu, kGpu };  // `--backend mpi` / `--backend nccl`
  Device device = Device::kCpu;
  // Runs of the whole Program before the recorded one (warm caches, connections, BLAS
  // threads), as nccl-tests warms up before timing.
  int warmup_runs = 1;
  // Recorded runs after the warm-up; the timeline is the run whose host time is the median
  // (for an even count, the faster of the two middle runs).
  int measured_runs = 5;
  // Largest buffer one op may ask for; a full-size model does not run on a CPU: use the
  // scaled-down scenarios of scenarios/real/. GPU runs are bounded by device memory instead
  // (an allocation that fails names the op and the bytes).
  std::int64_t max_op_bytes = std::int64_t{1} << 30;
  // An op still waiting on MPI after this long aborts the job (NCCL's watchdog waits 10 min).
  double timeout_s = 300;
  // GPU: more ranks on a host than it has GPUs share them round-robin (--share-gpu; see
  // gpu_rules.h) — a one-GPU machine then runs NCCL between ranks, over its socket transport.
  bool share_gpu = false;
  // A fault to inject (tests): when rank `rank` reaches op `op`, it hangs (stops issuing
  // ops), crashes (the process exits) or fails an allocation.
  struct Fault {
    enum class Kind { kHang, kCrash, kOutOfMemory, kCorrupt };  // corrupt: a wrong result (with verify)
    Kind kind = Kind::kHang;
    int rank = 0;
    std::string op;
  };
  std::optional<Fault> fault;
  // Check every collective's and transfer's result on every rank (crafted inputs, in the
  // warm-up run), and each sharded layer of `layer`'s shape against the unsharded one: the
  // tensor-parallel forward (attention and MLP) with a "tp" group, the MoE layer with an "ep"
  // group, context-parallel attention with a "cp" group; a mismatch ends the job naming what
  // differs.
  bool verify = false;
  // Run collectives as dtsim's own algorithm schedules (sim/collectives), step by step with
  // MPI point-to-point, instead of MPI's collectives; `algorithm` picks each one's algorithm
  // (kAuto: ring where it can run, else the first that can). The bytes, steps and reduction
  // arithmetic are the algorithm's; the schedules do not track which chunk is which, so the
  // results are not the collective's and --verify does not check them.
  bool own_schedules = false;
  std::function<program::Algorithm(const program::CollectiveOp&, const std::string& family)> algorithm;
  struct Layer {
    std::int64_t tokens = 0, hidden = 0, ffn = 0, heads = 0;
    std::int64_t experts = 0, top_k = 0, expert_ffn = 0;  // a MoE layer's; no experts: dense
    ContextParallelKind context_parallel =
        ContextParallelKind::kRing;  // the scenario's parallel.cp_scheme
    bool causal = true;
  };
  std::optional<Layer> layer;
};

// Parses "hang|crash|oom|corrupt:RANK:OP_NAME" (dtsim run --inject-fault). Throws ExecutionError.
// Whether the rank and op exist in the job is checked when the job starts.
ExecutionOptions::Fault parse_fault(const std::string& text);

// The name --inject-fault gives a fault kind: hang, crash, oom or corrupt.
const char* fault_kind_name(ExecutionOptions::Fault::Kind kind);

// The exit status of a job ended by a failure (an MPI error, a timeout, an allocation).
inline constexpr int kExitRunFailed = 3;

// Every rank of MPI_COMM_WORLD calls this with the same Program (world size = ranks). Returns
// the whole timeline on rank 0 and an empty one elsewhere; with `verify`, its metadata
// "verification" says what was checked.
trace::Timeline execute(const program::Program& program, const ExecutionOptions& options = {});

}  // namespace backend
