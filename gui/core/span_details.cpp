// Span descriptions (see span_details.h).
#include "gui/core/span_details.h"

#include <fmt/format.h>

#include <utility>

#include "gui/core/time_axis.h"

namespace gui {

std::vector<std::pair<std::string, std::string>> span_details(const trace::Timeline& timeline, std::uint32_t index,
                                                               double origin_ps) {
  const trace::Span& span = timeline.spans.at(index);
  std::vector<std::pair<std::string, std::string>> details;
  auto add = [&](std::string field, std::string value) { details.emplace_back(std::move(field), std::move(value)); };
  auto add_string = [&](const char* field, trace::StringId id) {
    if (id != 0) add(field, timeline.strings.at(id));
  };
  add("op", timeline.strings.at(span.name));
  add("category", std::string(trace::category_name(span.category)));
  const auto rank = static_cast<std::size_t>(span.rank);
  add("rank", rank < timeline.ranks.size() ? timeline.ranks[rank].name : std::to_string(span.rank));
  add("stream", span.stream < timeline.streams.size() ? timeline.streams[span.stream] : std::to_string(span.stream));
  add("start", format_duration(static_cast<double>(span.start_ps) - origin_ps));
  add("duration", format_duration(static_cast<double>(span.duration_ps())));
  add_string("kind", span.kind);
  add_string("algorithm", span.algorithm);
  add_string("group", span.group);
  add_string("dtype", span.dtype);
  add_string("shape", span.shape);
  const double seconds = static_cast<double>(span.duration_ps()) * 1e-12;
  if (span.bytes != 0) {
    // In decimal units, as everywhere in dtsim (docs/viewer.md: GB = 1e9 bytes), beside the exact
    // count.
    const double bytes = static_cast<double>(span.bytes);
    const auto [scale, unit] = bytes >= 1e9   ? std::pair{1e9, "GB"}
                               : bytes >= 1e6 ? std::pair{1e6, "MB"}
                               : bytes >= 1e3 ? std::pair{1e3, "kB"}
                                              : std::pair{1.0, "B"};
    add("bytes", scale == 1 ? fmt::format("{} B", span.bytes)
                            : fmt::format("{:.3f} {} ({} B)", bytes / scale, unit, span.bytes));
    if (trace::is_communication(span.category) && seconds > 0) {
      add("achieved bandwidth", fmt::format("{:.1f} GB/s", static_cast<double>(span.bytes) / seconds / 1e9));
    }
  }
  if (span.flops != 0) {
    add("FLOPs", fmt::format("{:.3g}", span.flops));
    if (seconds > 0) add("achieved FLOP rate", fmt::format("{:.1f} TFLOP/s", span.flops / seconds / 1e12));
  }
  if (span.op >= 0) add("program op", std::to_string(span.op));
  return details;
}

}  // namespace gui
