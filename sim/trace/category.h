// trace::Category — what a span on the timeline is, shared by the simulator, the real
// backend, the report and the viewer. Names are the stable strings written into Chrome
// traces ("cat" field) and JSON reports.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace trace {

enum class Category : unsigned char {
  kForward,
  kBackward,
  kRecompute,
  kOptimizer,
  kCompute,  // "gpu_kernel": a GPU kernel of a foreign trace (PyTorch profiler), its phase not known
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kReduce,
  kBarrier,
  kSendRecv,
  kPsPush,
  kPsPull,
  kMemcpy,
  kIdle,
  kOther,
};
inline constexpr std::size_t kCategoryCount = static_cast<std::size_t>(Category::kOther) + 1;

std::string_view category_name(Category category);
std::optional<Category> category_from_name(std::string_view name);

// Compute: forward, backward, recompute, optimizer, and compute of unknown phase.
bool is_compute(Category category);
// Communication: every collective, point-to-point and parameter-server transfer.
bool is_communication(Category category);

}  // namespace trace
