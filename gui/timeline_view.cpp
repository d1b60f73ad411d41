// The timeline widget's input handling (see timeline_view.h).
#include "gui/timeline_view.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <cmath>
#include <sstream>

#include "gui/core/span_details.h"

namespace gui {
namespace {

constexpr double kKeyZoomFactor = 1.5;
constexpr double kKeyPanFraction = 0.15;
constexpr double kWheelZoomPerNotch = 1.25;
constexpr int kDragThresholdPx = 4;

}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent), scroll_bar_(new QScrollBar(Qt::Vertical, this)) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setMinimumSize(400, 200);
  connect(scroll_bar_, &QScrollBar::valueChanged, this, [this](int value) {
    state_.scroll_y = value;
    update();
  });
  history_timer_.setSingleShot(true);
  history_timer_.setInterval(400);
  connect(&history_timer_, &QTimer::timeout, this, [this] { history_.record(state_.viewport.window()); });
}

void TimelineView::set_documents(std::vector<std::shared_ptr<const Document>> documents, bool keep_window) {
  state_.documents = std::move(documents);
  state_.selected.reset();
  state_.related = {};
  state_.lanes = {};
  state_.relayout();
  update_scroll_range();
  if (keep_window && !state_.documents.empty()) {
    update();
  } else {
    fit_all();
  }
  emit selection_changed();
}

void TimelineView::set_query(SpanQuery query) {
  state_.query = std::move(query);
  update();
}

void TimelineView::set_category_hidden(trace::Category category, bool hidden) {
  state_.hidden_categories[static_cast<std::size_t>(category)] = hidden;
  update();
}

void TimelineView::select(std::optional<SpanRef> span, bool reveal) {
  if (span && (span->document >= state_.documents.size() ||
               span->span >= state_.documents[span->document]->index->timeline().spans.size())) {
    span.reset();  // a reference into timelines no longer shown
  }
  state_.selected = span;
  state_.related = span ? related_spans(state_.documents[span->document]->index->timeline(), span->span) : RelatedSpans{};
  if (span && reveal) {
    const TimelineIndex& index = *state_.documents[span->document]->index;
    const trace::Span& selected = index.timeline().spans[span->span];
    // Show the span at a third of the view, with room around it.
    const double length = std::max(static_cast<double>(selected.duration_ps()) * 3, Viewport::kMinimumLengthPs);
    const double start = static_cast<double>(selected.start_ps) - state_.offset_ps(span->document);
    set_window({start - length / 3, start + length * 2 / 3});
    const std::size_t row = index.row_of(span->span);
    bool changed = state_.lanes.collapsed.erase({span->document, index.node_of(index.rows()[row])}) != 0;
    if (!state_.layout.entry_of_row(span->document, row)) {  // a rank shown by its group's first: expand the group
      for (const NodeGroup& node : index.nodes()) {
        for (const RankRun& run : node.runs) {
          const std::int32_t rank = index.rows()[row].rank;
          if (rank >= run.first_rank && rank < run.first_rank + run.ranks) {
            changed = state_.lanes.expanded.insert({span->document, run.first_rank}).second || changed;
          }
        }
      }
      if (span->document < state_.lanes.shown.size() && !state_.lanes.shown[span->document].empty()) {
        changed = state_.lanes.shown[span->document].insert(index.rows()[row].rank).second || changed;  // past the pipeline view
      }
    }
    if (changed || !state_.layout.entry_of_row(span->document, row)) {
      state_.relayout();
      update_scroll_range();
    }
    if (const LayoutEntry* entry = state_.layout.entry_of_row(span->document, row)) {
      if (entry->y < scroll_bar_->value() || entry->y + entry->height > scroll_bar_->value() + lanes_height()) {
        scroll_bar_->setValue(entry->y - lanes_height() / 3);
      }
    }
  }
  update();
  emit selection_changed();
}

void TimelineView::set_window(Window window) {
  state_.viewport.set(window);
  window_moved(true);
}

void TimelineView::window_moved(bool record) {
  if (record) {
    history_timer_.stop();
    history_.record(state_.viewport.window());
  } else {
    history_timer_.start();
  }
  update();
  emit window_changed();
}

void TimelineView::zoom(double factor) {
  state_.viewport.zoom(factor, anchor_fraction());
  window_moved(true);
}

void TimelineView::pan(double fraction) {
  state_.viewport.pan(fraction);
  window_moved(true);
}

void TimelineView::fit_all() {
  if (!state_.documents.empty()) set_window(state_.aligned_extent());
}

void TimelineView::fit_step() {
  if (state_.documents.empty()) return;
  std::vector<Window> steps = state_.documents.front()->index->steps();
  for (Window& step : steps) step = {step.begin_ps - state_.offset_ps(0), step.end_ps - state_.offset_ps(0)};
  const Window now = state_.viewport.window();
  const double middle = (now.begin_ps + now.end_ps) / 2;
  std::size_t step = 0;
  while (step + 1 < steps.size() && steps[step].end_ps <= middle) ++step;
  // Already showing that step: move on to the next one.
  if (std::abs(steps[step].begin_ps - now.begin_ps) < 1 && std::abs(steps[step].end_ps - now.end_ps) < 1) {
    step = (step + 1) % steps.size();
  }
  set_window(steps[step]);
}

void TimelineView::go_back() {
  if (history_timer_.isActive()) history_.record(state_.viewport.window());  // a wheel zoom not yet recorded
  if (!history_.can_go_back()) return;
  state_.viewport.set(history_.back());
  window_moved(false);
  history_timer_.stop();
}

void TimelineView::go_forward() {
  if (history_timer_.isActive()) history_.record(state_.viewport.window());
  if (!history_.can_go_forward()) return;
  state_.viewport.set(history_.forward());
  window_moved(false);
  history_timer_.stop();
}

void TimelineView::toggle_node(std::size_t document, std::int32_t node) {
  if (state_.lanes.collapsed.erase({document, node}) == 0) state_.lanes.collapsed.insert({document, node});
  state_.relayout();
  update_scroll_range();
  update();
}

void TimelineView::toggle_rank_group(std::size_t document, std::int32_t first_rank) {
  if (state_.lanes.expanded.erase({document, first_rank}) == 0) state_.lanes.expanded.insert({document, first_rank});
  state_.relayout();
  update_scroll_range();
  update();
}

bool TimelineView::set_pipeline_view(bool on) {
  ShownRanks shown(state_.documents.size());
  bool any = false;
  for (std::size_t d = 0; on && d < state_.documents.size(); ++d) {
    const auto& metadata = state_.documents[d]->index->timeline().metadata;
    const auto stages = metadata.find("pipeline_stage_ranks");
    if (stages == metadata.end()) continue;
    const auto& ranks = state_.documents[d]->index->timeline().ranks;
    std::stringstream list(stages->second);
    for (std::string rank; std::getline(list, rank, ',');) {
      try {
        const int number = std::stoi(rank);
        // Only the stages whose rank has spans here (--trace-ranks may have left some out).
        if (number >= 0 && static_cast<std::size_t>(number) < ranks.size() && ranks[number].traced) shown[d].insert(number);
      } catch (const std::exception&) {  // not a dtsim list: show this timeline whole
        shown[d].clear();
        break;
      }
    }
    any = any || !shown[d].empty();
  }
  state_.lanes.shown = any ? std::move(shown) : ShownRanks{};
  state_.relayout();
  update_scroll_range();
  update();
  return any || !on;
}

std::optional<SpanRef> TimelineView::span_at(QPoint position) const {
  if (position.x() < ViewGeometry::kGutterWidth || position.y() < ViewGeometry::kAxisHeight) return std::nullopt;
  const LayoutEntry* entry = state_.layout.entry_at(position.y() - ViewGeometry::kAxisHeight + state_.scroll_y);
  if (entry == nullptr || entry->kind != LayoutEntry::Kind::kRow) return std::nullopt;
  const TimelineIndex& index = *state_.documents[entry->document]->index;
  const double time = time_at(position.x()) + state_.offset_ps(entry->document);
  const double tolerance = state_.viewport.window().length() / lanes_width() * 2;  // 2 px
  const auto span = index.span_at(index.rows()[entry->row], time, tolerance);
  if (!span || state_.hidden_categories[static_cast<std::size_t>(index.timeline().spans[*span].category)]) {
    return std::nullopt;
  }
  return SpanRef{entry->document, *span};
}

double TimelineView::anchor_fraction() const {
  const QPoint cursor = mapFromGlobal(QCursor::pos());
  const double x = cursor.x() - ViewGeometry::kGutterWidth;
  if (!rect().contains(cursor) || x < 0 || x > lanes_width()) return 0.5;
  return x / lanes_width();
}

void TimelineView::update_scroll_range() {
  scroll_bar_->setRange(0, std::max(0, state_.layout.height() - lanes_height()));
  scroll_bar_->setPageStep(lanes_height());
  scroll_bar_->setSingleStep(LaneMetrics{}.row_height * 3);
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter_.paint(painter, QSize(width() - scroll_bar_->width(), height()), state_);
}

void TimelineView::resizeEvent(QResizeEvent*) {
  scroll_bar_->setGeometry(width() - scroll_bar_->sizeHint().width(), ViewGeometry::kAxisHeight,
                           scroll_bar_->sizeHint().width(), lanes_height());
  update_scroll_range();
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  const QPoint delta = event->angleDelta();
  if (event->modifiers() & Qt::ShiftModifier) {
    scroll_bar_->setValue(scroll_bar_->value() - delta.y() - delta.x());
  } else if (std::abs(delta.x()) > std::abs(delta.y())) {
    state_.viewport.pan(-delta.x() / 1200.0);
    window_moved(false);
  } else if (delta.y() != 0) {
    const double x = event->position().x() - ViewGeometry::kGutterWidth;
    const double anchor = std::clamp(x / lanes_width(), 0.0, 1.0);
    state_.viewport.zoom(std::pow(kWheelZoomPerNotch, delta.y() / 120.0), anchor);
    window_moved(false);
  }
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  setFocus();
  press_position_ = event->position().toPoint();
  window_at_press_ = state_.viewport.window();
  dragging_ = false;
  box_zooming_ = event->button() == Qt::RightButton || (event->modifiers() & Qt::ShiftModifier);
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  const QPoint position = event->position().toPoint();
  if (!press_position_) return;
  if (!dragging_ && (position - *press_position_).manhattanLength() < kDragThresholdPx) return;
  dragging_ = true;
  if (box_zooming_) {
    state_.box_zoom = std::pair{std::max(press_position_->x(), ViewGeometry::kGutterWidth),
                                std::max(position.x(), ViewGeometry::kGutterWidth)};
    update();
    return;
  }
  const double dx = position.x() - press_position_->x();
  state_.viewport.set(window_at_press_);
  state_.viewport.pan(-dx / lanes_width());
  const int dy = position.y() - press_position_->y();
  if (dy != 0) {
    scroll_bar_->setValue(scroll_bar_->value() - dy);
    press_position_->setY(position.y());
  }
  window_moved(false);
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
  const QPoint position = event->position().toPoint();
  if (dragging_ && box_zooming_ && state_.box_zoom) {
    const auto [from, to] = *state_.box_zoom;
    state_.box_zoom.reset();
    if (std::abs(to - from) >= kDragThresholdPx) {
      set_window({time_at(std::min(from, to)), time_at(std::max(from, to))});
    }
  } else if (dragging_) {
    window_moved(true);
  } else if (press_position_) {
    const LayoutEntry* entry = position.y() >= ViewGeometry::kAxisHeight
                                   ? state_.layout.entry_at(position.y() - ViewGeometry::kAxisHeight + state_.scroll_y)
                                   : nullptr;
    if (entry != nullptr && entry->kind == LayoutEntry::Kind::kNode) {
      toggle_node(entry->document, state_.documents[entry->document]->index->nodes()[entry->node].node);
    } else if (entry != nullptr && entry->kind == LayoutEntry::Kind::kRanks) {
      toggle_rank_group(entry->document,
                        state_.documents[entry->document]->index->nodes()[entry->node].runs[entry->run].first_rank);
    } else {
      select(span_at(position));
    }
  }
  press_position_.reset();
  dragging_ = false;
  update();
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  const bool alt = event->modifiers() & Qt::AltModifier;
  switch (event->key()) {
    case Qt::Key_W: zoom(kKeyZoomFactor); break;
    case Qt::Key_S: zoom(1 / kKeyZoomFactor); break;
    case Qt::Key_A: pan(-kKeyPanFraction); break;
    case Qt::Key_D: pan(kKeyPanFraction); break;
    case Qt::Key_F: fit_step(); break;
    case Qt::Key_0: fit_all(); break;
    case Qt::Key_Backspace: go_back(); break;
    case Qt::Key_Left:
      if (alt) go_back(); else pan(-kKeyPanFraction);
      break;
    case Qt::Key_Right:
      if (alt) go_forward(); else pan(kKeyPanFraction);
      break;
    case Qt::Key_Escape: select(std::nullopt); break;
    default: QWidget::keyPressEvent(event); return;
  }
  event->accept();
}

bool TimelineView::event(QEvent* event) {
  if (event->type() != QEvent::ToolTip) return QWidget::event(event);
  auto* help = static_cast<QHelpEvent*>(event);
  const auto span = span_at(help->pos());
  if (!span) {
    QToolTip::hideText();
    event->ignore();
    return true;
  }
  QString text = "<table>";
  for (const auto& [field, value] : span_details(state_.documents[span->document]->index->timeline(), span->span,
                                                 state_.offset_ps(span->document))) {
    text += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
                .arg(QString::fromStdString(field).toHtmlEscaped(), QString::fromStdString(value).toHtmlEscaped());
  }
  QToolTip::showText(help->globalPos(), text + "</table>", this);
  return true;
}

}  // namespace gui
