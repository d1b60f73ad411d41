// The GPU backend's decisions that need no GPU, kept apart from CUDA and NCCL so that this
// machine's tests check them (backend/gpu/ applies them on a GPU machine):
//  * which GPU a rank drives, one per rank or — opt-in, for a machine with fewer GPUs than
//    ranks — shared (--share-gpu), and the NCCL_HOSTID that makes NCCL accept two ranks on one
//    GPU (it refuses a duplicate GPU on one host: each rank then looks like a host of its own,
//    and NCCL connects them over its socket transport);
//  * which loaded NCCL dtsim can use;
//  * an op's span from CUDA event times.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace backend::gpu_rules {

// The GPU this rank drives: `local_rank` among the ranks of its host, `visible` GPUs;
// `launcher_chose`: one GPU visible because the launcher set CUDA_VISIBLE_DEVICES per rank.
// With `share`, ranks beyond the GPU count wrap round (local rank mod GPUs). Either a device
// index or why none.
struct GpuChoice {
  int device = -1;
  std::string refusal;  // empty when device is set
};
GpuChoice choose_gpu(int local_rank, int visible, bool launcher_chose, bool share);

// Two ranks of one host that drive the same GPU (by PCI bus id, `bus_ids` in host-rank order)
// when they did not ask to share: NCCL would refuse them late and obscurely ("Duplicate GPU
// detected"), e.g. when CUDA_VISIBLE_DEVICES shows every rank the same one GPU. The first such
// pair of host-local ranks, or none.
std::optional<std::pair<int, int>> first_shared_gpu(const std::vector<std::string>& bus_ids);

// NCCL_HOSTID for a rank sharing a GPU: the host's name and the world rank, so that no two
// ranks of the job share one (NCCL hashes it in place of the boot id).
std::string shared_gpu_host_id(std::string_view host, int world_rank);

// NCCL versions as ncclGetVersion gives them (2.18.1 → 21801).
inline constexpr int kNcclCommSplit = 21800;         // ncclCommSplit: communicators per group
inline constexpr int kNcclAlgoPerCollective = 22400;  // NCCL_ALGO="allreduce:tree;…"
std::string nccl_version_text(int code);

// Why the loaded NCCL (`code`) cannot run dtsim's GPU jobs — older than 2.18, or older than
// 2.24 when the scenario fixes algorithms per collective (`per_collective_algo`) — or none.
std::optional<std::string> nccl_version_problem(int code, bool per_collective_algo);

// An op's start and end in picoseconds after the run's origin event, from the milliseconds
// cudaEventElapsedTime gives between the origin and each of the op's two events. Both ends
// are read from the one origin: the end of an op and the start of the next recorded on its
// stream read the same, so spans of back-to-back ops never overlap (a duration added to a
// rounded start could overshoot the next start by the rounding).
struct EventSpan {
  std::int64_t start_ps = 0;
  std::int64_t end_ps = 0;
};
EventSpan span_from_origin(float start_ms, float end_ms);

}  // namespace backend::gpu_rules
