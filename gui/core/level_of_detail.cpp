// Folding of narrow spans (see level_of_detail.h).
#include "gui/core/level_of_detail.h"

#include <algorithm>

namespace gui {

void fold_row(const TimelineIndex& index, const Row& row, Window window, double width_px, double min_width_px,
              std::vector<DrawItem>& items) {
  if (window.length() <= 0 || width_px <= 0) return;
  const std::vector<trace::Span>& spans = index.timeline().spans;
  const double min_width_ps = min_width_px * window.length() / width_px;
  const std::size_t count = row.spans.size();
  auto span = [&](std::size_t position) -> const trace::Span& { return spans[row.spans[position]]; };
  auto narrow = [&](std::size_t position) {
    return static_cast<double>(span(position).duration_ps()) < min_width_ps;
  };
  // First position at or after `from` whose span starts at or after `time_ps`.
  auto first_starting_at = [&](std::size_t from, double time_ps) {
    return static_cast<std::size_t>(
        std::partition_point(row.spans.begin() + static_cast<std::ptrdiff_t>(from), row.spans.end(),
                             [&](std::uint32_t s) { return static_cast<double>(spans[s].start_ps) < time_ps; }) -
        row.spans.begin());
  };

  std::size_t position = index.first_reaching(row, window.begin_ps);
  while (position < count && static_cast<double>(span(position).start_ps) < window.end_ps) {
    const trace::Span& first = span(position);
    DrawItem item{first.start_ps, first.end_ps, static_cast<std::uint32_t>(position), 1, first.category};
    ++position;
    if (!narrow(item.first)) {
      items.push_back(item);
      continue;
    }
    // Grow the fold one bucket at a time: the spans starting within min_width_ps of its end.
    while (position < count) {
      const std::size_t bucket_end = first_starting_at(position, static_cast<double>(item.end_ps) + min_width_ps);
      if (bucket_end == position) break;
      std::size_t absorbed = bucket_end;
      const std::size_t last = bucket_end - 1;
      if (span(last).category != item.category || !narrow(last)) {
        absorbed = position;
        while (absorbed < bucket_end && span(absorbed).category == item.category && narrow(absorbed)) ++absorbed;
      }
      if (absorbed == position) break;
      item.count += static_cast<std::uint32_t>(absorbed - position);
      item.end_ps = std::max(item.end_ps, row.running_end[absorbed - 1]);
      position = absorbed;
      if (absorbed < bucket_end) break;
    }
    items.push_back(item);
  }
}

}  // namespace gui
