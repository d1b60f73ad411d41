// Folding of narrow spans (see level_of_detail.h).
#include "gui/core/level_of_detail.h"

#include <algorithm>

namespace gui {
namespace {

// The folding of one row in one window; positions are indices into Row::spans.
class RowFolder {
 public:
  RowFolder(const TimelineIndex& index, const Row& row, Window window, double width_px, double min_width_px)
      : spans_(index.timeline().spans),
        row_(row),
        window_(window),
        min_width_ps_(min_width_px * window.length() / width_px),
        position_(index.first_reaching(row, window.begin_ps)) {}

  void fold(std::vector<DrawItem>& items) {
    while (position_ < row_.spans.size() && static_cast<double>(span(position_).start_ps) < window_.end_ps) {
      const trace::Span& first = span(position_);
      DrawItem item{first.start_ps, first.end_ps, static_cast<std::uint32_t>(position_), 1, first.category, false};
      ++position_;
      if (narrow(item.first) && grow_run(item) && static_cast<double>(item.end_ps - item.start_ps) < min_width_ps_) {
        grow_mixture(item);
      }
      items.push_back(item);
    }
  }

 private:
  const trace::Span& span(std::size_t position) const { return spans_[row_.spans[position]]; }
  bool narrow(std::size_t position) const { return static_cast<double>(span(position).duration_ps()) < min_width_ps_; }

  // First position at or after `from` whose span starts at or after `time_ps`.
  std::size_t first_starting_at(std::size_t from, double time_ps) const {
    return static_cast<std::size_t>(
        std::partition_point(row_.spans.begin() + static_cast<std::ptrdiff_t>(from), row_.spans.end(),
                             [&](std::uint32_t s) { return static_cast<double>(spans_[s].start_ps) < time_ps; }) -
        row_.spans.begin());
  }
  // One past the last position of the category run that holds `position`.
  std::size_t run_end(std::size_t position) const {
    return static_cast<std::size_t>(std::upper_bound(row_.category_changes.begin() + static_cast<std::ptrdiff_t>(position),
                                                     row_.category_changes.end(), row_.category_changes[position]) -
                                    row_.category_changes.begin());
  }
  // The first position in [from, position] of the category run that holds `position`.
  std::size_t run_begin(std::size_t from, std::size_t position) const {
    return static_cast<std::size_t>(std::lower_bound(row_.category_changes.begin() + static_cast<std::ptrdiff_t>(from),
                                                     row_.category_changes.begin() + static_cast<std::ptrdiff_t>(position),
                                                     row_.category_changes[position]) -
                                    row_.category_changes.begin());
  }
  // The spans starting within min_width_ps of the fold's end: the next pixel bucket.
  std::size_t bucket_end(const DrawItem& item) const {
    return first_starting_at(position_, static_cast<double>(item.end_ps) + min_width_ps_);
  }
  void absorb(DrawItem& item, std::size_t until) {
    item.count += static_cast<std::uint32_t>(until - position_);
    item.end_ps = std::max(item.end_ps, row_.running_end[until - 1]);
    position_ = until;
  }

  // Grows the fold over the rest of its category's run, a bucket at a time. In a row spans do
  // not overlap, so only a bucket's last span can be wide. True when the run ended (the next
  // span is of another category), false when a gap or a wide span stopped the fold.
  bool grow_run(DrawItem& item) {
    const std::size_t end = run_end(item.first);
    while (position_ < end) {
      const std::size_t bucket = std::min(bucket_end(item), end);
      const std::size_t until = bucket > position_ && narrow(bucket - 1) ? bucket : bucket - 1;
      if (bucket == position_ || until == position_) return false;
      absorb(item, until);
      if (until < bucket) return false;
    }
    return position_ < row_.spans.size();
  }

  // A run narrower than min_width_px next to runs of other categories: categories alternate
  // faster than can be drawn. The fold takes whole buckets, whatever their categories, until a
  // gap, a wide span, or a run wide enough to be drawn by itself; it is drawn in the category
  // of the span at its middle.
  void grow_mixture(DrawItem& item) {
    while (position_ < row_.spans.size()) {
      const std::size_t bucket = bucket_end(item);
      if (bucket == position_) break;
      const std::size_t last = bucket - 1;
      const std::size_t last_run = run_begin(position_, last);
      const double last_run_width = static_cast<double>(row_.running_end[run_end(last) - 1] - span(last_run).start_ps);
      std::size_t until = last_run_width >= min_width_ps_ ? last_run : bucket;
      if (!narrow(last)) until = std::min(until, last);
      if (until == position_) break;
      absorb(item, until);
      item.mixed = true;
      if (until < bucket) break;
    }
    if (item.mixed) {
      const double middle = (static_cast<double>(item.start_ps) + static_cast<double>(item.end_ps)) / 2;
      const std::size_t at_middle = std::clamp<std::size_t>(first_starting_at(item.first, middle), item.first + 1,
                                                            item.first + item.count) - 1;
      item.category = span(at_middle).category;
    }
  }

  const std::vector<trace::Span>& spans_;
  const Row& row_;
  const Window window_;
  const double min_width_ps_;
  std::size_t position_;
};

}  // namespace

void fold_row(const TimelineIndex& index, const Row& row, Window window, double width_px, double min_width_px,
              std::vector<DrawItem>& items) {
  if (window.length() <= 0 || width_px <= 0) return;
  RowFolder(index, row, window, width_px, min_width_px).fold(items);
}

}  // namespace gui
