// The start of every GPU job, shared by the GPU executor and the GPU calibration: each rank
// takes its GPU and joins the world NCCL communicator. Failures end the job naming the rank.
#pragma once

#include <nccl.h>

#include <string>

namespace backend::gpu {

// Selects this rank's GPU — its index among the ranks of its host, or the one GPU a launcher
// left visible (CUDA_VISIBLE_DEVICES) — and returns its name.
std::string select_gpu();

// Blocking communicators with their own resources, whatever NCCL_COMM_BLOCKING or
// NCCL_COMM_SPLIT_SHARE_RESOURCES say: the executor and the calibration rely on both.
ncclConfig_t communicator_config();

// The NCCL communicator of all ranks (rank 0's unique id broadcast over MPI, within
// `timeout_s`).
ncclComm_t world_communicator(double timeout_s);

}  // namespace backend::gpu
