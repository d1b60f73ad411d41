// Paints the timeline view — time axis, lane labels, spans and folds, selection and related
// spans — onto any QPainter: the widget, a PNG export and the render test and benchmark all
// draw through this one function.
#pragma once

#include <QColor>
#include <QImage>
#include <QPainter>
#include <QRect>

#include <memory>
#include <optional>
#include <vector>

#include "gui/core/lane_layout.h"
#include "gui/core/level_of_detail.h"
#include "gui/core/span_query.h"
#include "gui/core/viewport.h"
#include "gui/document.h"

namespace gui {

// A span of one of the open documents.
struct SpanRef {
  std::size_t document = 0;
  std::uint32_t span = 0;
  friend bool operator==(const SpanRef&, const SpanRef&) = default;
};

struct ViewGeometry {
  static constexpr int kGutterWidth = 200;  // lane labels
  static constexpr int kAxisHeight = 24;
  static constexpr double kFoldBelowPx = 3.0;  // spans narrower than this fold (issue #5: ~3 px)
};

struct ViewState {
  std::vector<std::shared_ptr<const Document>> documents;
  LaneLayout layout;
  Viewport viewport;
  int scroll_y = 0;                 // of the lanes, below the axis
  SpanQuery query;                  // non-matching spans are drawn faded
  std::array<bool, trace::kCategoryCount> hidden_categories{};
  std::optional<SpanRef> selected;
  RelatedSpans related;             // of the selected span, in its document
  std::optional<std::pair<int, int>> box_zoom;  // x range being dragged out
  LayoutChoices lanes;  // collapsed nodes, expanded rank groups, the ranks shown

  std::vector<const TimelineIndex*> indices() const;
  void relayout(const LaneMetrics& metrics = {});

  // Every timeline is drawn from its own first span: 0 on the axis is the start of each, so a
  // simulated run (from 0) and a measured one (from a wall-clock epoch) line up. The viewport
  // is in this aligned time; a document's own time is aligned time + its offset.
  double offset_ps(std::size_t document) const { return documents[document]->index->extent().begin_ps; }
  Window document_window(std::size_t document) const;
  // From 0 to the end of the longest timeline.
  Window aligned_extent() const;
};

// What a drawn item says: the op's name, or what a fold holds ("backward · 200 ops", "mixed ·
// 3264 ops"); `first` is its first span.
QString item_label(const DrawItem& item, const trace::Span& first, const trace::Timeline& timeline);

class TimelinePainter {
 public:
  void paint(QPainter& painter, QSize size, const ViewState& state);

 private:
  void paint_axis(QPainter& painter, QSize size, const ViewState& state);
  void paint_row(QPainter& painter, QRect lane, std::size_t document, const Row& row, const ViewState& state);
  void paint_idle(QPainter& painter, QRect lane, double scale, double begin, int average_char);
  void paint_related(QPainter& painter, QSize size, const ViewState& state);

  std::vector<DrawItem> items_;  // reused between rows and frames
};

// The view drawn into an image of `size` (PNG export, tests, benchmarks).
QImage render_view(const ViewState& state, QSize size);

}  // namespace gui
