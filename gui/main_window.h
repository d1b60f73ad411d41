// gui::MainWindow — dtsim-view's window: the timeline view in the middle, an error banner
// above it, and docks around it: legend (click a category to hide it), details of the
// selected span, search and filter, summary with per-rank peak memory, memory over time,
// compare table, and the scenario panel. Files load on a worker thread; a file that cannot
// be read puts its message in the banner and leaves the window as it was.
#pragma once

#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMainWindow>
#include <QSpinBox>
#include <QTableView>
#include <QTextBrowser>
#include <QThread>

#include <atomic>

#include "gui/memory_chart.h"
#include "gui/scenario_panel.h"
#include "gui/tables.h"
#include "gui/timeline_view.h"

namespace gui {

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // At most this many timelines are shown at once; opening more drops the oldest.
  static constexpr std::size_t kMaxDocuments = 4;

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads the files on a worker thread, then shows them with what is open already.
  void open_files(const QStringList& paths);
  void add_document(std::shared_ptr<const Document> document);
  void close_all();
  // Writes the view as a PNG / the timeline holding the selection (else the last one) as a
  // Chrome trace. Errors go to the banner; returns whether the file was written.
  bool export_png(const QString& path);
  bool export_chrome_json(const QString& path);
  void show_error(const QString& message);

  TimelineView* view() const { return view_; }
  ScenarioPanel* scenario_panel() const { return scenario_panel_; }
  QString error_text() const { return banner_->isHidden() ? QString() : banner_->text(); }
  // The report warnings of the open timelines, as the amber banner shows them (empty: hidden).
  QString warnings_text() const { return warnings_banner_->isHidden() ? QString() : warnings_banner_->text(); }
  bool loading() const { return loads_in_flight_ > 0; }
  TableModel* summary_model() const { return summary_model_; }
  TableModel* memory_model() const { return memory_model_; }
  TableModel* compare_model() const { return compare_model_; }
  TableModel* search_model() const { return search_model_; }
  QLineEdit* search_field() const { return search_field_; }
  QString details_text() const { return details_->toPlainText(); }
  QTextBrowser* details() const { return details_; }

 signals:
  void documents_changed();
  void loads_finished();

 private:
  void build_menus();
  QDockWidget* add_dock(const QString& title, QWidget* content, Qt::DockWidgetArea area);
  void documents_updated();
  void selection_updated();
  void search();

  TimelineView* view_;
  QLabel* banner_;
  QLabel* warnings_banner_;
  QDockWidget* details_dock_ = nullptr;
  QDockWidget* summary_dock_ = nullptr;
  QTableView* summary_view_ = nullptr;
  QListWidget* legend_;
  QTextBrowser* details_;
  QLineEdit* search_field_;
  QLabel* search_status_;
  QTableView* search_results_;
  TableModel* search_model_;
  TableModel* summary_model_;
  TableModel* memory_model_;
  TableModel* compare_model_;
  MemoryChart* memory_chart_;
  QSpinBox* memory_rank_;
  ScenarioPanel* scenario_panel_;
  QDockWidget* memory_dock_ = nullptr;
  QDockWidget* compare_dock_ = nullptr;
  Documents documents_;
  int loads_in_flight_ = 0;
  std::vector<QThread*> loaders_;
  std::atomic<bool> closing_{false};
};

}  // namespace gui
