// What the viewer tells about one span (hover tooltip and details panel): its identity, times,
// sizes, and the rates they imply — achieved bandwidth = bytes / duration for communication
// (the bytes this rank sent: algorithm bandwidth in nccl-tests' terms), achieved FLOP rate =
// FLOPs / duration for compute.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/trace/timeline.h"

namespace gui {

// (field, value) pairs in display order; fields the span does not have are left out.
std::vector<std::pair<std::string, std::string>> span_details(const trace::Timeline& timeline, std::uint32_t span,
                                                               double origin_ps);

}  // namespace gui
