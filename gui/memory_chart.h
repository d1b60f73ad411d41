// gui::MemoryChart — one rank's memory in use over time, a step line per open document, on
// the same time origin as the timeline (so a simulated and a measured run line up).
#pragma once

#include <QWidget>

#include "gui/tables.h"

namespace gui {

class MemoryChart : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  void set_documents(Documents documents);
  void set_rank(int rank);
  int rank() const { return rank_; }
  QSize sizeHint() const override { return {420, 220}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  Documents documents_;
  int rank_ = 0;
};

}  // namespace gui
