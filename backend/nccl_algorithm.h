// The NCCL_ALGO setting for a GPU run: when a scenario fixes a collective's algorithm
// ([collectives] in the scenario), NCCL must run that algorithm, which it only takes from
// the environment, per collective function, before the first communicator is created
// (NCCL ≥ 2.24 syntax: "allreduce:tree;allgather:ring").
//
// NCCL's own algorithms for what dtsim models: ring for every collective, tree for all-reduce
// (NCCL has none for the others). Halving-doubling, hierarchical and parameter-server have no
// NCCL counterpart, and one process cannot give one collective two algorithms (say a ring
// all-reduce on "tp" and a tree all-reduce on "dp"): both are refused, naming the op and what
// to do instead. "direct" all-to-all is NCCL's only all-to-all, so it needs no setting.
//
// Plain C++ (no CUDA), so that every build tests it.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "strategies/program/program.h"

namespace backend {

// `algorithm` gives each collective's algorithm (the scenario's fixed one, or the op's own);
// nullopt: nothing fixed, NCCL chooses. Throws ExecutionError.
std::optional<std::string> nccl_algo_setting(
    const program::Program& program,
    const std::function<program::Algorithm(const program::CollectiveOp&, const std::string& family)>& algorithm);

}  // namespace backend
