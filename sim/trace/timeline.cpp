// String interning and stream lookup for trace::Timeline.
#include "sim/trace/timeline.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace trace {

StringId StringTable::intern(std::string_view text) {
  auto it = ids_.find(text);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<StringId>(strings_.size());
  strings_.emplace_back(text);
  ids_.emplace(strings_.back(), id);
  return id;
}

void Timeline::sort_spans_by_lane() {
  auto lane_order = [](const Span& a, const Span& b) {
    return std::tie(a.rank, a.stream, a.start_ps) < std::tie(b.rank, b.stream, b.start_ps);
  };
  if (!std::is_sorted(spans.begin(), spans.end(), lane_order)) std::stable_sort(spans.begin(), spans.end(), lane_order);
}

std::uint16_t Timeline::stream_index(std::string_view name) {
  for (std::size_t i = 0; i < streams.size(); ++i) {
    if (streams[i] == name) return static_cast<std::uint16_t>(i);
  }
  if (streams.size() >= 0xFFFF) throw std::length_error("trace::Timeline: too many streams");
  streams.emplace_back(name);
  return static_cast<std::uint16_t>(streams.size() - 1);
}

}  // namespace trace
