// The GPU backend's decisions that need no GPU (see gpu_rules.h).
#include "backend/gpu_rules.h"

#include <fmt/format.h>

#include <cmath>

namespace backend::gpu_rules {

GpuChoice choose_gpu(int local_rank, int visible, bool launcher_chose, bool share) {
  if (visible <= 0) return {-1, "no GPU visible"};
  if (launcher_chose && visible == 1) return {0, ""};
  if (local_rank < visible) return {local_rank, ""};
  if (share) return {local_rank % visible, ""};
  return {-1, fmt::format("this host runs more ranks than it has GPUs ({}): --backend nccl needs one GPU per rank, "
                          "or --share-gpu to let ranks share them (NCCL then connects them as separate hosts)",
                          visible)};
}

std::optional<std::pair<int, int>> first_shared_gpu(const std::vector<std::string>& bus_ids) {
  for (std::size_t second = 1; second < bus_ids.size(); ++second) {
    for (std::size_t first = 0; first < second; ++first) {
      if (bus_ids[first] == bus_ids[second]) return std::pair{static_cast<int>(first), static_cast<int>(second)};
    }
  }
  return std::nullopt;
}

std::string shared_gpu_host_id(std::string_view host, int world_rank) {
  return fmt::format("{}-dtsim-rank{}", host, world_rank);
}

std::string nccl_version_text(int code) {
  return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
}

std::optional<std::string> nccl_version_problem(int code, bool per_collective_algo) {
  const auto load_newer = "put a newer libnccl.so.2 first on LD_LIBRARY_PATH (e.g. the nvidia-nccl-cu12 or -cu13 "
                          "wheel's nvidia/nccl/lib; dtsim info shows which one is loaded)";
  if (code < kNcclCommSplit) {
    return fmt::format("NCCL {} is loaded, older than 2.18, which dtsim needs (ncclCommSplit): {}",
                       nccl_version_text(code), load_newer);
  }
  if (per_collective_algo && code < kNcclAlgoPerCollective) {
    return fmt::format("NCCL {} is loaded, older than 2.24, the first to take NCCL_ALGO per collective, which this "
                       "scenario's fixed algorithms need: let NCCL choose (no algorithm in [collectives]), or {}",
                       nccl_version_text(code), load_newer);
  }
  return std::nullopt;
}

EventSpan span_from_origin(float start_ms, float end_ms) {
  const auto picoseconds = [](float ms) { return std::llround(static_cast<double>(ms) * 1e9); };
  return {picoseconds(start_ms), picoseconds(end_ms)};
}

}  // namespace backend::gpu_rules
