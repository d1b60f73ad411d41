// backend::execute — run a Program for real, one rank per MPI process, and record when every
// op ran: the same trace::Timeline the simulator writes, so the two compare op by op.
//
// This is the CPU path (issue #6): compute ops run as OpenBLAS single-precision GEMMs of the
// op's shapes (attention as its two batched GEMMs) and as memory passes over the op's bytes
// for memory-bound kinds; collectives run as MPI collectives on one communicator per (rank
// group, stream), split from MPI_COMM_WORLD; point-to-point ops as MPI_Send/MPI_Recv. Each
// stream runs on its own thread (MPI_THREAD_MULTIPLE), so compute and communication overlap as
// the Program allows; an op starts once its dependencies have finished. Spans come from the
// monotonic clock after a common barrier.
//
// Failures end the whole job with one message naming the rank and the op: an MPI error, an
// op not finished within ExecutionOptions::timeout_s (a watchdog, as NCCL's), a failed
// allocation; a rank that dies is reported by mpirun, which stops the others. Faults can be
// injected to test this.
//
// Not yet (see the note): the NCCL/CUDA path, parameter-server push/pull, memory
// samples, result verification.
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

struct ExecutionOptions {
  // Runs of the whole Program before the recorded one (warm caches, connections, BLAS
  // threads), as nccl-tests warms up before timing.
  int warmup_runs = 1;
  // Largest buffer one op may ask for; a full-size model does not run on a CPU: use the
  // scaled-down presets of scenarios/real/.
  std::int64_t max_op_bytes = std::int64_t{1} << 30;
  // An op still waiting on MPI after this long aborts the job (NCCL's watchdog waits 10 min).
  double timeout_s = 300;
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
  // warm-up run), and the tensor-parallel forward of `layer` (attention and MLP blocks)
  // against the unsharded one when the Program has a "tp" group; a mismatch ends the job naming rank, op and element.
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
  };
  std::optional<Layer> layer;
};

// Parses "hang|crash|oom|corrupt:RANK:OP_NAME" (dtsim run --inject-fault). Throws ExecutionError.
ExecutionOptions::Fault parse_fault(const std::string& text);

// The exit status of a job ended by a failure (an MPI error, a timeout, an allocation).
inline constexpr int kExitRunFailed = 3;

// Every rank of MPI_COMM_WORLD calls this with the same Program (world size = ranks). Returns
// the whole timeline on rank 0 and an empty one elsewhere; with `verify`, its metadata
// "verification" says what was checked.
trace::Timeline execute(const program::Program& program, const ExecutionOptions& options = {});

}  // namespace backend
