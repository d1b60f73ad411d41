// Category names and classes (see category.h).
#include "sim/trace/category.h"

namespace trace {
namespace {
constexpr std::array<std::string_view, kCategoryCount> kNames = {
    "forward",  "backward",  "recompute", "optimizer", "gpu_kernel", "all_reduce", "all_gather",
    "reduce_scatter", "all_to_all", "broadcast", "reduce", "barrier", "send_recv",
    "ps_push",  "ps_pull",   "memcpy",    "idle",      "other",
};
}  // namespace

std::string_view category_name(Category category) {
  return kNames[static_cast<std::size_t>(category)];
}

std::optional<Category> category_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Category>(i);
  }
  return std::nullopt;
}

bool is_compute(Category category) {
  return category == Category::kForward || category == Category::kBackward ||
         category == Category::kRecompute || category == Category::kOptimizer || category == Category::kCompute;
}

bool is_communication(Category category) {
  switch (category) {
    case Category::kAllReduce:
    case Category::kAllGather:
    case Category::kReduceScatter:
    case Category::kAllToAll:
    case Category::kBroadcast:
    case Category::kReduce:
    case Category::kBarrier:
    case Category::kSendRecv:
    case Category::kPsPush:
    case Category::kPsPull:
      return true;
    default:
      return false;
  }
}

}  // namespace trace
