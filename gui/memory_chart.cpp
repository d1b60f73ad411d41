// Memory chart painting (see memory_chart.h).
#include "gui/memory_chart.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "gui/core/time_axis.h"

namespace gui {
namespace {

// Lines of the timelines shown as totals (all but the last).
const QColor kLineColors[] = {QColor(0x2F, 0x7F, 0xC1), QColor(0xC2, 0x4E, 0x2E), QColor(0x5C, 0xB8, 0x6B),
                              QColor(0x8E, 0x5B, 0x9E)};
constexpr int kLeft = 64, kBottom = 22, kTop = 20, kRight = 10;
constexpr double kHeadroom = 1.08;  // the value axis ends this much above the highest of peak and capacity

std::string gigabytes(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

// The samples of `rank`, in time order.
std::vector<const trace::MemorySample*> samples_of(const trace::Timeline& timeline, int rank) {
  std::vector<const trace::MemorySample*> samples;
  for (const trace::MemorySample& sample : timeline.memory) {
    if (sample.rank == rank) samples.push_back(&sample);
  }
  std::stable_sort(samples.begin(), samples.end(),
                   [](const trace::MemorySample* a, const trace::MemorySample* b) { return a->time_ps < b->time_ps; });
  return samples;
}

// The device memory a dtsim timeline states (metadata "memory_capacity_bytes"); none for traces
// that do not say.
std::optional<double> capacity_of(const trace::Timeline& timeline) {
  const auto found = timeline.metadata.find("memory_capacity_bytes");
  if (found == timeline.metadata.end()) return std::nullopt;
  try {
    const double bytes = std::stod(found->second);
    return bytes > 0 ? std::optional<double>(bytes) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

QColor memory_series_color(const std::string& series) {
  static const std::map<std::string, QColor> kColors = {
      {"parameters", QColor(0x4C, 0x78, 0xA8)},          {"gradients", QColor(0xF5, 0x85, 0x18)},
      {"master_weights", QColor(0xB2, 0x79, 0xA2)},      {"optimizer_states", QColor(0x54, 0xA2, 0x4B)},
      {"activations", QColor(0xEE, 0xCA, 0x3B)},         {"comm_buffers", QColor(0x9D, 0x75, 0x5D)},
      {"gathered_parameters", QColor(0x72, 0xB7, 0xB2)}, {"unsharded_gradients", QColor(0xFF, 0x9D, 0xA6)},
  };
  const auto found = kColors.find(series);
  return found != kColors.end() ? found->second : QColor(0xBA, 0xB0, 0xAC);
}

MemoryChart::MemoryChart(QWidget* parent) : QWidget(parent) { setMinimumSize(260, 140); }

void MemoryChart::set_documents(Documents documents) {
  documents_ = std::move(documents);
  update();
}

void MemoryChart::set_rank(int rank) {
  rank_ = rank;
  update();
}

std::optional<MemoryChartGeometry> MemoryChart::geometry() const {
  MemoryChartGeometry geometry;
  geometry.plot = QRect(kLeft, kTop, width() - kLeft - kRight, height() - kTop - kBottom);
  double peak = 0;
  for (const auto& document : documents_) {
    for (const trace::MemorySample* sample : samples_of(document->index->timeline(), rank_)) {
      peak = std::max(peak, static_cast<double>(trace::total_bytes(*sample)));
    }
    geometry.end_ps = std::max(geometry.end_ps, document->index->extent().length());
  }
  if (peak <= 0 || geometry.end_ps <= 0 || geometry.plot.width() <= 0 || geometry.plot.height() <= 0) return std::nullopt;
  const std::optional<double> capacity = capacity_of(documents_.back()->index->timeline());
  geometry.top_bytes = std::max(peak, capacity.value_or(0)) * kHeadroom;
  return geometry;
}

std::optional<MemoryChart::OutOfMemory> MemoryChart::out_of_memory() const {
  if (documents_.empty()) return std::nullopt;
  const trace::Timeline& timeline = documents_.back()->index->timeline();
  const std::optional<double> capacity = capacity_of(timeline);
  if (!capacity) return std::nullopt;
  for (const trace::MemorySample* sample : samples_of(timeline, rank_)) {
    if (static_cast<double>(trace::total_bytes(*sample)) > *capacity) {
      return OutOfMemory{static_cast<double>(sample->time_ps) - documents_.back()->index->extent().begin_ps,
                         timeline.strings.at(sample->cause)};
    }
  }
  return std::nullopt;
}

void MemoryChart::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), Qt::white);
  painter.setPen(Qt::black);
  const std::optional<MemoryChartGeometry> geometry = this->geometry();
  if (!geometry) {
    painter.drawText(rect(), Qt::AlignCenter, QStringLiteral("no memory samples for rank %1").arg(rank_));
    return;
  }
  const MemoryChartGeometry& g = *geometry;
  const QRect& plot = g.plot;
  painter.setClipRect(plot.adjusted(0, 0, 1, 1));

  // The last timeline, stacked by series: each interval between samples a column of boxes.
  const trace::Timeline& shown = documents_.back()->index->timeline();
  const double shown_begin = documents_.back()->index->extent().begin_ps;
  const auto samples = samples_of(shown, rank_);
  std::vector<bool> present(shown.memory_series.size(), false);
  double peak = 0;
  for (std::size_t k = 0; k < samples.size(); ++k) {
    const double x0 = g.x_of(static_cast<double>(samples[k]->time_ps) - shown_begin);
    const double x1 = k + 1 < samples.size() ? g.x_of(static_cast<double>(samples[k + 1]->time_ps) - shown_begin)
                                             : g.x_of(g.end_ps);
    double below = 0;
    for (std::size_t s = 0; s < samples[k]->bytes.size() && s < shown.memory_series.size(); ++s) {
      const auto bytes = static_cast<double>(samples[k]->bytes[s]);
      if (bytes <= 0) continue;
      present[s] = true;
      painter.fillRect(QRectF(QPointF(x0, g.y_of(below + bytes)), QPointF(x1, g.y_of(below))),
                       memory_series_color(shown.memory_series[s]));
      below += bytes;
    }
    peak = std::max(peak, below);
  }

  // The other timelines: their totals, as step lines.
  painter.setRenderHint(QPainter::Antialiasing);
  for (std::size_t d = 0; d + 1 < documents_.size(); ++d) {
    const double begin = documents_[d]->index->extent().begin_ps;
    const auto curve = samples_of(documents_[d]->index->timeline(), rank_);
    if (curve.empty()) continue;
    QPainterPath path;
    path.moveTo(g.x_of(static_cast<double>(curve.front()->time_ps) - begin), g.y_of(0));
    double previous = 0;
    for (const trace::MemorySample* sample : curve) {
      const double x = g.x_of(static_cast<double>(sample->time_ps) - begin);
      path.lineTo(x, g.y_of(previous));
      previous = static_cast<double>(trace::total_bytes(*sample));
      path.lineTo(x, g.y_of(previous));
    }
    path.lineTo(g.x_of(g.end_ps), g.y_of(previous));
    painter.setPen(QPen(kLineColors[d % std::size(kLineColors)], 1.5));
    painter.drawPath(path);
  }
  painter.setRenderHint(QPainter::Antialiasing, false);

  // The device's capacity, and where the rank first needs more.
  const std::optional<double> capacity = capacity_of(shown);
  if (capacity) {
    painter.setPen(QPen(kCapacityColor, 1.5, Qt::DashLine));
    const double y = g.y_of(*capacity);
    painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    painter.drawText(QRectF(plot.left() + 4, y - 15, plot.width() - 8, 14), Qt::AlignLeft,
                     QString::fromStdString("capacity " + gigabytes(*capacity)));
  }
  if (const auto oom = out_of_memory()) {
    const double x = g.x_of(oom->time_ps);
    painter.setPen(QPen(kCapacityColor, 2));
    painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
    painter.drawText(QRectF(x + 4, plot.top() + 2, plot.right() - x - 4, 14), Qt::AlignLeft,
                     QString::fromStdString("OOM at " + oom->cause));
  }

  // Legend: the stacked series, top down as they stack bottom up; totals of the others; on a
  // white box so that it reads over the areas.
  const int lines = static_cast<int>(std::count(present.begin(), present.end(), true) + documents_.size() - 1);
  int legend_width = 0;
  for (std::size_t s = 0; s < shown.memory_series.size(); ++s) {
    if (present[s]) legend_width = std::max(legend_width, painter.fontMetrics().horizontalAdvance(QString::fromStdString(shown.memory_series[s])) + 26);
  }
  for (std::size_t d = 0; d + 1 < documents_.size(); ++d) {
    legend_width = std::max(legend_width,
                            painter.fontMetrics().horizontalAdvance(QString::fromStdString("— " + documents_[d]->title + " (total)")) + 12);
  }
  const int left = plot.right() - legend_width - 4;  // top right, under the capacity's label
  const int top = plot.top() + 20;
  if (lines > 0) painter.fillRect(QRect(left - 4, top, legend_width + 4, lines * 14 + 6), QColor(255, 255, 255, 220));
  painter.setPen(Qt::black);
  int line = 0;
  for (std::size_t s = shown.memory_series.size(); s-- > 0;) {
    if (!present[s]) continue;
    const int y = top + 14 + line++ * 14;
    painter.fillRect(QRect(left, y - 9, 10, 10), memory_series_color(shown.memory_series[s]));
    painter.drawText(left + 14, y, QString::fromStdString(shown.memory_series[s]));
  }
  for (std::size_t d = 0; d + 1 < documents_.size(); ++d) {
    const int y = top + 14 + line++ * 14;
    painter.setPen(kLineColors[d % std::size(kLineColors)]);
    painter.drawText(left, y, QString::fromStdString("— " + documents_[d]->title + " (total)"));
  }

  painter.setClipping(false);
  painter.setPen(Qt::black);
  painter.drawRect(plot);
  painter.drawText(QRect(0, plot.top() - 16, width(), 14), Qt::AlignLeft,
                   QString::fromStdString(fmt::format("rank {} · {} · peak {}{}", rank_, documents_.back()->title,
                                                      gigabytes(peak), capacity ? " of " + gigabytes(*capacity) : "")));
  painter.drawText(QRect(0, plot.top(), kLeft - 4, 14), Qt::AlignRight, QString::fromStdString(gigabytes(g.top_bytes)));
  painter.drawText(QRect(0, plot.bottom() - 14, kLeft - 4, 14), Qt::AlignRight, "0");
  painter.drawText(QRect(plot.left(), plot.bottom() + 2, plot.width(), 16), Qt::AlignRight,
                   QString::fromStdString(format_duration(g.end_ps)));
}

}  // namespace gui
