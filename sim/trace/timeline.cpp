// String interning, stream lookup and the recorded job size of trace::Timeline.
#include "sim/trace/timeline.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <tuple>

namespace trace {

std::vector<const Span*> Timeline::op_spans() const {
  const std::optional<StringId> step = strings.find(kAlgorithmStepKind);
  std::vector<const Span*> ops;
  ops.reserve(spans.size());
  for (const Span& span : spans) {
    if (!step || span.kind != *step) ops.push_back(&span);
  }
  return ops;
}

std::optional<StringId> StringTable::find(std::string_view text) const {
  const auto it = ids_.find(text);
  return it == ids_.end() ? std::nullopt : std::optional<StringId>(it->second);
}

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

std::optional<std::size_t> Timeline::recorded_count(const std::string& key) const {
  const auto recorded = metadata.find(key);
  if (recorded == metadata.end()) return std::nullopt;
  const std::string& text = recorded->second;
  std::size_t count = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error != std::errc{} || end != text.data() + text.size() || count == 0) return std::nullopt;
  return count;
}

std::optional<std::size_t> Timeline::recorded_job_ranks() const { return recorded_count("ranks"); }

std::optional<std::size_t> Timeline::recorded_steps() const {
  // At most a simulation's: a larger "steps" is not one a producer wrote.
  const auto steps = recorded_count("steps");
  return steps && *steps <= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())
             ? steps
             : std::nullopt;
}

}  // namespace trace
