// Memory chart painting (see memory_chart.h).
#include "gui/memory_chart.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <fmt/format.h>

#include "gui/core/time_axis.h"

namespace gui {
namespace {

const QColor kLineColors[] = {QColor(0x2F, 0x7F, 0xC1), QColor(0xC2, 0x4E, 0x2E), QColor(0x5C, 0xB8, 0x6B),
                              QColor(0x8E, 0x5B, 0x9E)};
constexpr int kLeft = 64, kBottom = 22, kTop = 20, kRight = 10;

}  // namespace

MemoryChart::MemoryChart(QWidget* parent) : QWidget(parent) { setMinimumSize(260, 140); }

void MemoryChart::set_documents(Documents documents) {
  documents_ = std::move(documents);
  update();
}

void MemoryChart::set_rank(int rank) {
  rank_ = rank;
  update();
}

void MemoryChart::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), Qt::white);
  painter.setRenderHint(QPainter::Antialiasing);
  std::vector<std::vector<trace::MemoryPoint>> curves;
  // Each timeline from its own start, as in the timeline view.
  const double begin = 0;
  double end = 0, peak = 0;
  for (const auto& document : documents_) {
    curves.push_back(trace::memory_curve(document->index->timeline(), rank_));
    for (trace::MemoryPoint& point : curves.back()) {
      point.time_ps -= static_cast<std::int64_t>(document->index->extent().begin_ps);
      peak = std::max(peak, static_cast<double>(point.bytes));
    }
    end = std::max(end, document->index->extent().length());
  }
  painter.setPen(Qt::black);
  const QRect plot(kLeft, kTop, width() - kLeft - kRight, height() - kTop - kBottom);
  if (peak <= 0 || end <= begin || plot.width() <= 0 || plot.height() <= 0) {
    painter.drawText(rect(), Qt::AlignCenter, QStringLiteral("no memory samples for rank %1").arg(rank_));
    return;
  }
  painter.drawRect(plot);
  painter.drawText(QRect(0, plot.top() - 16, kLeft * 3, 14), Qt::AlignLeft,
                   QString::fromStdString(fmt::format("rank {} · peak {:.2f} GiB", rank_, peak / (1 << 30))));
  painter.drawText(QRect(0, plot.top(), kLeft - 4, 14), Qt::AlignRight, QString::fromStdString(fmt::format("{:.1f} GiB", peak / (1 << 30))));
  painter.drawText(QRect(0, plot.bottom() - 14, kLeft - 4, 14), Qt::AlignRight, "0");
  painter.drawText(QRect(plot.left(), plot.bottom() + 2, plot.width(), 16), Qt::AlignRight,
                   QString::fromStdString(format_duration(end - begin)));
  auto x_of = [&](double time) { return plot.left() + (time - begin) / (end - begin) * plot.width(); };
  auto y_of = [&](double bytes) { return plot.bottom() - bytes / peak * plot.height(); };
  for (std::size_t d = 0; d < curves.size(); ++d) {
    if (curves[d].empty()) continue;
    QPainterPath path;
    path.moveTo(x_of(static_cast<double>(curves[d].front().time_ps)), y_of(0));
    double previous = 0;
    for (const trace::MemoryPoint& point : curves[d]) {
      path.lineTo(x_of(static_cast<double>(point.time_ps)), y_of(previous));
      path.lineTo(x_of(static_cast<double>(point.time_ps)), y_of(static_cast<double>(point.bytes)));
      previous = static_cast<double>(point.bytes);
    }
    path.lineTo(x_of(end), y_of(previous));
    const QColor color = kLineColors[d % std::size(kLineColors)];
    painter.setPen(QPen(color, 1.5));
    painter.drawPath(path);
    painter.drawText(plot.left() + 6, plot.top() + 14 + static_cast<int>(d) * 14, QString::fromStdString(documents_[d]->title));
  }
}

}  // namespace gui
