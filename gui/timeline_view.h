// gui::TimelineView — the timeline widget: paints through TimelinePainter and turns input into
// navigation (Perfetto's keys where they exist):
//   wheel           zoom around the cursor      Shift+wheel   scroll lanes
//   drag            pan                         Shift+drag or right-drag   box zoom
//   W / S           zoom in / out               A / D         pan left / right
//   F               fit one step (again: the next step)        0   fit everything
//   Alt+← / Alt+→   zoom history back / forward (also Backspace for back)
//   click           select a span (its dependencies are outlined); click a node header to
//                   collapse or expand it; Esc clears the selection
#pragma once

#include <QScrollBar>
#include <QTimer>
#include <QWidget>

#include <optional>

#include "gui/timeline_painter.h"

namespace gui {

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);

  // Shows these documents stacked (compare mode when there are two or more). The window is
  // kept when `keep_window`, else fitted to everything.
  void set_documents(std::vector<std::shared_ptr<const Document>> documents, bool keep_window = false);
  const ViewState& state() const { return state_; }

  void set_query(SpanQuery query);
  void set_category_hidden(trace::Category category, bool hidden);
  // Selects a span (or nothing); `reveal` zooms to it and scrolls its lane into view.
  void select(std::optional<SpanRef> span, bool reveal = false);
  void set_window(Window window);  // records it in the history

  void zoom(double factor);
  void pan(double fraction);
  void fit_all();
  void fit_step();
  void go_back();
  void go_forward();
  void toggle_node(std::size_t document, std::int32_t node);
  // Shows a run of identical ranks rank by rank, or again as one group.
  void toggle_rank_group(std::size_t document, std::int32_t first_rank);
  // The pipeline view: one rank per pipeline stage (the first, as dtsim timelines list them in
  // "pipeline_stage_ranks"), so that the bubbles line up; off: every rank. False when no open
  // timeline says where its stages are.
  bool set_pipeline_view(bool on);

  QImage render(QSize size) const { return render_view(state_, size); }
  std::optional<SpanRef> span_at(QPoint position) const;
  // Widget x ↔ time under it.
  double time_at(double x) const { return state_.viewport.time_at(x - ViewGeometry::kGutterWidth, lanes_width()); }
  double x_of(double time_ps) const { return ViewGeometry::kGutterWidth + state_.viewport.x_of(time_ps, lanes_width()); }

 signals:
  void selection_changed();
  void window_changed();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  bool event(QEvent* event) override;

 private:
  int lanes_width() const { return std::max(1, width() - ViewGeometry::kGutterWidth - scroll_bar_->width()); }
  int lanes_height() const { return std::max(1, height() - ViewGeometry::kAxisHeight); }
  double anchor_fraction() const;  // where the cursor is, as a fraction of the lanes' width
  void update_scroll_range();
  void window_moved(bool record);

  QScrollBar* scroll_bar_;
  QTimer history_timer_;  // records the window once a burst of wheel zooming settles
  ViewState state_;
  TimelinePainter painter_;
  ZoomHistory history_;
  std::optional<QPoint> press_position_;
  Window window_at_press_;
  bool dragging_ = false;
  bool box_zooming_ = false;
};

}  // namespace gui
