// The start of every GPU job, shared by the GPU executor and the GPU calibration: each rank
// takes its GPU and joins the world NCCL communicator, and every NCCL call that could wait on
// a peer is bounded by a deadline. Failures end the job naming the rank.
//
// Communicators are non-blocking (ncclConfig_t::blocking = 0): creating, splitting and
// connecting them, and every call on them, return at once (ncclInProgress) and go on in NCCL's
// own thread; `settled` then polls ncclCommGetAsyncError until the call is done or the deadline
// passes. A peer that never arrives — at the communicator's creation, a split, the first
// send — ends the job after the timeout with the step named, instead of hanging the host in
// NCCL. (NCCL_COMM_BLOCKING=1 in the environment makes them blocking again; `settled` then
// has nothing to wait for.)
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <optional>
#include <string>
#include <vector>

namespace backend::gpu {

// Selects this rank's GPU (gpu_rules::choose_gpu: its index among the ranks of its host, the
// one GPU a launcher left visible, or with `share` the GPUs shared round-robin, NCCL_HOSTID set
// per rank) and returns its name. Without `share`, ranks of one host that would drive the same
// GPU end the job saying so (compared over MPI within `timeout_s`). Collective over the job.
std::string select_gpu(bool share, double timeout_s);

// Refuses, with ExecutionError, a loaded NCCL older than dtsim needs (gpu_rules.h).
void check_nccl_version(bool per_collective_algo);

// Non-blocking communicators with their own resources (not shared with the parent of a split).
ncclConfig_t communicator_config();

// Waits until the call that returned `returned` on `comm` is done (at most `timeout_s`).
// Returns why it failed — NCCL's error, or the deadline passed — or none.
std::optional<std::string> settled(ncclComm_t comm, ncclResult_t returned, double timeout_s);

// The NCCL communicator of all ranks (rank 0's unique id broadcast over MPI), created within
// `timeout_s`.
ncclComm_t world_communicator(double timeout_s);

// A split of `parent` (ncclCommSplit: collective over the parent), within `timeout_s`; null
// where `color` is NCCL_SPLIT_NOCOLOR. `what` names the step in the failure.
ncclComm_t split_communicator(ncclComm_t parent, int color, int key, double timeout_s, const std::string& what);

// The first asynchronous error of `communicators` (ncclCommGetAsyncError; in progress is none),
// as a message, or none. Not to be called while another thread waits on one of them (it
// completes a pending call).
std::optional<std::string> async_error(const std::vector<ncclComm_t>& communicators);

// Waits until `stream` has run what was enqueued, polling the stream and the communicators'
// asynchronous errors (at most `timeout_s`). Returns why it failed, or none.
std::optional<std::string> wait_for_stream(cudaStream_t stream, const std::vector<ncclComm_t>& communicators,
                                           double timeout_s);

}  // namespace backend::gpu
