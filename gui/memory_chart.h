// gui::MemoryChart — one rank's memory in use over time, on the same time origin as the
// timeline (so a simulated and a measured run line up). The last open timeline is drawn as
// areas stacked by category (parameters, gradients, master weights, optimizer states,
// activations, buffers, …), the others as their total; the device's capacity is a dashed line
// and the first sample above it is marked OOM with the allocation that crossed it. Bytes are
// GB (1e9), as everywhere in dtsim.
#pragma once

#include <QColor>
#include <QRect>
#include <QWidget>

#include <optional>
#include <string>

#include "gui/tables.h"

namespace gui {

// Where the chart draws: the plot rectangle and the scales, for the painter and for tests.
struct MemoryChartGeometry {
  QRect plot;
  double end_ps = 0;      // the time axis runs from 0 to this
  double top_bytes = 0;   // the value axis runs from 0 to this
  double x_of(double time_ps) const { return plot.left() + time_ps / end_ps * plot.width(); }
  double y_of(double bytes) const { return plot.bottom() - bytes / top_bytes * plot.height(); }
};

// The colour of a memory series (the Program's memory categories), the same in every chart.
QColor memory_series_color(const std::string& series);
inline const QColor kCapacityColor{0xD0, 0x1C, 0x1C};

class MemoryChart : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  void set_documents(Documents documents);
  void set_rank(int rank);
  int rank() const { return rank_; }
  QSize sizeHint() const override { return {420, 220}; }

  // Empty when there is nothing to draw (no samples for the rank).
  std::optional<MemoryChartGeometry> geometry() const;
  // The first sample of the shown rank above the device's capacity: its time (from the
  // timeline's start) and the allocation that caused it.
  struct OutOfMemory {
    double time_ps = 0;
    std::string cause;
  };
  std::optional<OutOfMemory> out_of_memory() const;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  Documents documents_;
  int rank_ = 0;
};

}  // namespace gui
