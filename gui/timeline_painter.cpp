// Timeline painting (see timeline_painter.h).
//
// Cost per frame: the folds of the rows on screen (level_of_detail.h bounds them by the
// width), one fillRect per item, and a label only where the item is wide enough to hold one.
#include "gui/timeline_painter.h"

#include <QFontMetrics>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "gui/category_palette.h"
#include "gui/core/time_axis.h"

namespace gui {
namespace {

const QColor kBackground(0xFF, 0xFF, 0xFF);
const QColor kGutter(0xF4, 0xF4, 0xF6);
const QColor kNodeHeader(0xE4, 0xE7, 0xEC);
const QColor kRankGroupHeader(0xEE, 0xF0, 0xF4);
const QColor kTitleBar(0x3A, 0x44, 0x55);
const QColor kGrid(0xE6, 0xE6, 0xE6);
const QColor kText(0x22, 0x22, 0x22);
const QColor kSelected(0x00, 0x00, 0x00);
const QColor kPredecessor(0xE6, 0x55, 0x00);  // what the selected op waited for
const QColor kSuccessor(0x00, 0x99, 0x44);    // what waited for it
const QColor kPeer(0x11, 0x55, 0xCC);         // the same collective on other ranks
// dtsim's GPU compute stream: its gaps (pipeline bubbles, waits on communication) are drawn
// as idle time.
constexpr const char* kComputeStream = "compute";
const QColor kMixedHatch(0xFF, 0xFF, 0xFF, 110);  // over folds of several categories
constexpr int kMinLabelWidth = 24;

// The whole pixels an interval covers in a lane drawn `scale` px per ps from `begin`, clipped a
// pixel beyond the lane's edges: its offset, its width (at least 1) and its unrounded width.
struct PixelExtent {
  int x = 0;
  int width = 0;
  double exact_width = 0;
};
PixelExtent pixel_extent(double from_ps, double to_ps, double begin, double scale, int lane_width) {
  const double left = std::max((from_ps - begin) * scale, -1.0);
  const double right = std::min((to_ps - begin) * scale, lane_width + 1.0);
  return {static_cast<int>(std::floor(left)),
          std::max(1, static_cast<int>(std::ceil(right)) - static_cast<int>(std::floor(left))), right - left};
}

QColor faded(QColor color) {
  color.setAlpha(45);
  return color;
}

}  // namespace

std::vector<const TimelineIndex*> ViewState::indices() const {
  std::vector<const TimelineIndex*> result;
  for (const auto& document : documents) result.push_back(document->index.get());
  return result;
}

QString item_label(const DrawItem& item, const trace::Span& first, const trace::Timeline& timeline) {
  if (item.count == 1) return QString::fromStdString(timeline.strings.at(first.name));
  if (item.mixed) return QStringLiteral("mixed · %1 ops").arg(item.count);
  return QString::fromStdString(fmt::format("{} · {} ops", trace::category_name(item.category), item.count));
}

void ViewState::relayout(const LaneMetrics& metrics) { layout.rebuild(indices(), lanes, metrics); }

Window ViewState::document_window(std::size_t document) const {
  const Window window = viewport.window();
  return {window.begin_ps + offset_ps(document), window.end_ps + offset_ps(document)};
}

Window ViewState::aligned_extent() const {
  Window extent{0, 1};
  for (const auto& document : documents) extent.end_ps = std::max(extent.end_ps, document->index->extent().length());
  return extent;
}

void TimelinePainter::paint(QPainter& painter, QSize size, const ViewState& state) {
  painter.fillRect(QRect(QPoint(0, 0), size), kBackground);
  const int lanes_top = ViewGeometry::kAxisHeight;
  const int width = size.width() - ViewGeometry::kGutterWidth;
  if (width <= 0) return;
  painter.fillRect(QRect(0, lanes_top, ViewGeometry::kGutterWidth, size.height() - lanes_top), kGutter);

  // Tick grid under the lanes.
  const std::vector<Tick> ticks = axis_ticks(state.viewport.window(), width, 0);
  painter.setPen(kGrid);
  for (const Tick& tick : ticks) {
    const int x = ViewGeometry::kGutterWidth + static_cast<int>(std::lround(state.viewport.x_of(tick.time_ps, width)));
    painter.drawLine(x, lanes_top, x, size.height());
  }

  const QFontMetrics metrics(painter.font());
  const auto [first, last] = state.layout.visible(state.scroll_y, state.scroll_y + size.height() - lanes_top);
  for (std::size_t e = first; e < last; ++e) {
    const LayoutEntry& entry = state.layout.entries()[e];
    const int y = lanes_top + entry.y - state.scroll_y;
    const Document& document = *state.documents[entry.document];
    switch (entry.kind) {
      case LayoutEntry::Kind::kTitle:
        painter.fillRect(0, y, size.width(), entry.height, kTitleBar);
        painter.setPen(Qt::white);
        painter.drawText(QRect(6, y, size.width() - 12, entry.height), Qt::AlignVCenter | Qt::AlignLeft,
                         QString::fromStdString(document.title + " — " + document.source));
        break;
      case LayoutEntry::Kind::kNode: {
        const NodeGroup& node = document.index->nodes()[entry.node];
        const bool collapsed = state.lanes.collapsed.count({entry.document, node.node}) != 0;
        painter.fillRect(0, y, size.width(), entry.height, kNodeHeader);
        painter.setPen(kText);
        painter.drawText(QRect(6, y, size.width(), entry.height), Qt::AlignVCenter | Qt::AlignLeft,
                         QString::fromStdString(fmt::format("{} node {} · {} lanes", collapsed ? "▸" : "▾", node.node,
                                                            node.rows.size())));
        break;
      }
      case LayoutEntry::Kind::kRanks: {
        const RankRun& run = document.index->nodes()[entry.node].runs[entry.run];
        painter.fillRect(0, y, size.width(), entry.height, kRankGroupHeader);
        painter.setPen(kText);
        painter.drawText(QRect(14, y, size.width(), entry.height), Qt::AlignVCenter | Qt::AlignLeft,
                         QString::fromStdString(fmt::format("▸ ranks {}–{} · {} identical ranks, rank {} shown (click to expand)",
                                                            run.first_rank, run.first_rank + run.ranks - 1, run.ranks,
                                                            run.first_rank)));
        break;
      }
      case LayoutEntry::Kind::kRow: {
        const Row& row = document.index->rows()[entry.row];
        painter.setPen(kText);
        painter.drawText(QRect(14, y, ViewGeometry::kGutterWidth - 18, entry.height), Qt::AlignVCenter | Qt::AlignLeft,
                         metrics.elidedText(QString::fromStdString(document.index->row_label(row)), Qt::ElideMiddle,
                                            ViewGeometry::kGutterWidth - 18));
        painter.setClipRect(ViewGeometry::kGutterWidth, y, width, entry.height);
        paint_row(painter, QRect(ViewGeometry::kGutterWidth, y + 1, width, entry.height - 2), entry.document, row, state);
        painter.setClipping(false);
        break;
      }
    }
  }
  paint_related(painter, size, state);
  if (state.box_zoom) {
    const int left = std::min(state.box_zoom->first, state.box_zoom->second);
    const int right = std::max(state.box_zoom->first, state.box_zoom->second);
    painter.fillRect(QRect(left, lanes_top, right - left, size.height() - lanes_top), QColor(0x33, 0x66, 0xCC, 50));
  }
  paint_axis(painter, size, state);
}

void TimelinePainter::paint_axis(QPainter& painter, QSize size, const ViewState& state) {
  const int width = size.width() - ViewGeometry::kGutterWidth;
  painter.fillRect(0, 0, size.width(), ViewGeometry::kAxisHeight, kBackground);
  painter.setPen(kText);
  painter.drawText(QRect(6, 0, ViewGeometry::kGutterWidth - 12, ViewGeometry::kAxisHeight),
                   Qt::AlignVCenter | Qt::AlignLeft,
                   QString::fromStdString("view " + format_duration(state.viewport.window().length())));
  for (const Tick& tick : axis_ticks(state.viewport.window(), width, 0)) {
    const int x = ViewGeometry::kGutterWidth + static_cast<int>(std::lround(state.viewport.x_of(tick.time_ps, width)));
    painter.drawLine(x, ViewGeometry::kAxisHeight - 6, x, ViewGeometry::kAxisHeight);
    painter.drawText(x + 3, ViewGeometry::kAxisHeight - 8, QString::fromStdString(tick.label));
  }
  painter.drawLine(0, ViewGeometry::kAxisHeight - 1, size.width(), ViewGeometry::kAxisHeight - 1);
}

void TimelinePainter::paint_row(QPainter& painter, QRect lane, std::size_t document, const Row& row,
                                const ViewState& state) {
  const TimelineIndex& index = *state.documents[document]->index;
  const trace::Timeline& timeline = index.timeline();
  const Window window = state.document_window(document);
  items_.clear();
  fold_row(index, row, window, lane.width(), ViewGeometry::kFoldBelowPx, items_);
  const double scale = lane.width() / window.length();
  const double begin = window.begin_ps;
  const QFontMetrics metrics(painter.font());
  const int average_char = std::max(1, metrics.averageCharWidth());
  const bool filtering = !state.query.empty();
  if (row.stream < timeline.streams.size() && timeline.streams[row.stream] == kComputeStream &&
      !state.hidden_categories[static_cast<std::size_t>(trace::Category::kIdle)]) {
    paint_idle(painter, lane, scale, begin, average_char);
  }
  for (const DrawItem& item : items_) {
    if (state.hidden_categories[static_cast<std::size_t>(item.category)]) continue;
    const PixelExtent extent = pixel_extent(static_cast<double>(item.start_ps), static_cast<double>(item.end_ps), begin,
                                            scale, lane.width());
    const int w = extent.width;
    const QRect box(lane.left() + extent.x, lane.top(), w, lane.height());
    QColor color = category_color(item.category);
    const trace::Span& first = timeline.spans[row.spans[item.first]];
    const bool matches = !filtering || (item.count == 1 ? state.query.matches(timeline, first)
                                                        : !item.mixed && state.query.matches_whole_category(item.category));
    if (!matches) color = faded(color);
    if (item.count > 1) color = color.darker(115);
    painter.fillRect(box, color);
    if (item.mixed) painter.fillRect(box, QBrush(kMixedHatch, Qt::BDiagPattern));
    if (w < kMinLabelWidth || !matches) continue;
    QString label = item_label(item, first, timeline);  // cut to the characters that fit
    const int fits = (w - 4) / average_char;
    if (label.size() > fits) label = fits > 2 ? label.left(fits - 1) + QChar(0x2026) : QString();
    if (label.isEmpty()) continue;
    painter.setPen(Qt::white);
    painter.drawText(box.adjusted(2, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft, label);
  }
}

void TimelinePainter::paint_idle(QPainter& painter, QRect lane, double scale, double begin, int average_char) {
  const QColor idle = category_color(trace::Category::kIdle);
  for (std::size_t i = 1; i < items_.size(); ++i) {
    const double from = static_cast<double>(items_[i - 1].end_ps);
    const double to = static_cast<double>(items_[i].start_ps);
    const PixelExtent extent = pixel_extent(from, to, begin, scale, lane.width());
    if (extent.exact_width < ViewGeometry::kFoldBelowPx) continue;
    const QRect box(lane.left() + extent.x, lane.top() + lane.height() / 4, extent.width, lane.height() / 2);
    painter.fillRect(box, idle);
    const QString label = QString::fromStdString("idle " + format_duration(to - from));
    if (box.width() > (label.size() + 1) * average_char) {
      painter.setPen(kText);
      painter.drawText(box.adjusted(2, -lane.height(), -2, lane.height()), Qt::AlignVCenter | Qt::AlignLeft, label);
    }
  }
}

void TimelinePainter::paint_related(QPainter& painter, QSize size, const ViewState& state) {
  if (!state.selected || state.selected->document >= state.documents.size()) return;
  const Document& document = *state.documents[state.selected->document];
  const TimelineIndex& index = *document.index;
  const int width = size.width() - ViewGeometry::kGutterWidth;
  auto outline = [&](std::uint32_t span_index, const QColor& color, int thickness) {
    const LayoutEntry* entry = state.layout.entry_of_row(state.selected->document, index.row_of(span_index));
    if (entry == nullptr) return;
    const trace::Span& span = index.timeline().spans[span_index];
    const double offset = state.offset_ps(state.selected->document);
    const double left = std::max(state.viewport.x_of(static_cast<double>(span.start_ps) - offset, width), -4.0);
    const double right = std::min(state.viewport.x_of(static_cast<double>(span.end_ps) - offset, width), width + 4.0);
    if (right < -2 || left > width + 2) return;
    const int y = ViewGeometry::kAxisHeight + entry->y - state.scroll_y;
    painter.setPen(QPen(color, thickness));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(QRectF(ViewGeometry::kGutterWidth + left, y, std::max(right - left, 2.0), entry->height - 1));
  };
  painter.setClipRect(ViewGeometry::kGutterWidth, ViewGeometry::kAxisHeight, width, size.height());
  for (const std::uint32_t span : state.related.predecessors) outline(span, kPredecessor, 2);
  for (const std::uint32_t span : state.related.successors) outline(span, kSuccessor, 2);
  for (const std::uint32_t span : state.related.peers) outline(span, kPeer, 2);
  outline(state.selected->span, kSelected, 2);
  painter.setClipping(false);
}

QImage render_view(const ViewState& state, QSize size) {
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  QPainter painter(&image);
  TimelinePainter().paint(painter, size, state);
  return image;
}

}  // namespace gui
