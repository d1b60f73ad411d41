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
// Not yet (see the note): the NCCL/CUDA path, parameter-server push/pull, memory
// samples, result verification, timeouts and fault reports.
#pragma once

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
};

// Every rank of MPI_COMM_WORLD calls this with the same Program (world size = ranks). Returns
// the whole timeline on rank 0 and an empty one elsewhere.
trace::Timeline execute(const program::Program& program, const ExecutionOptions& options = {});

}  // namespace backend
