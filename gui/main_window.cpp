// The viewer's main window (see main_window.h).
#include "gui/main_window.h"

#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QHeaderView>
#include <QMenuBar>
#include <QMessageBox>
#include <QPixmap>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QThread>
#include <QVBoxLayout>

#include <fmt/format.h>

#include <cmath>

#include "gui/category_palette.h"
#include "gui/core/span_details.h"
#include "scenarios/run_scenario.h"
#include "sim/trace/chrome_trace.h"

namespace gui {
namespace {

constexpr std::size_t kSearchLimit = 5000;

QTableView* table_view(QAbstractItemModel* model, QWidget* parent) {
  auto* view = new QTableView(parent);
  auto* sorted = new QSortFilterProxyModel(view);
  sorted->setSourceModel(model);
  sorted->setSortRole(Qt::UserRole);
  view->setModel(sorted);
  view->setSortingEnabled(true);
  view->sortByColumn(-1, Qt::AscendingOrder);
  view->verticalHeader()->hide();
  // Every column as wide as its widest text (a scroll bar when the dock is narrower): never
  // "exposed communicati…".
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view->horizontalHeader()->setStretchLastSection(true);
  view->setTextElideMode(Qt::ElideNone);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  return view;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      view_(new TimelineView),
      banner_(new QLabel),
      warnings_banner_(new QLabel),
      legend_(new QListWidget),
      details_(new QTextBrowser),
      search_field_(new QLineEdit),
      search_status_(new QLabel),
      search_model_(new TableModel(this)),
      summary_model_(new TableModel(this)),
      memory_model_(new TableModel(this)),
      compare_model_(new TableModel(this)),
      memory_chart_(new MemoryChart),
      memory_rank_(new QSpinBox),
      scenario_panel_(new ScenarioPanel) {
  setWindowTitle("dtsim-view");
  banner_->setStyleSheet("QLabel { background: #fde2e1; color: #8a1c12; padding: 6px; border-bottom: 1px solid #e0a19c; }");
  banner_->setWordWrap(true);
  banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  banner_->hide();
  warnings_banner_->setStyleSheet(
      "QLabel { background: #fff4d6; color: #6b4a00; padding: 6px; border-bottom: 1px solid #e8cf8a; }");
  warnings_banner_->setWordWrap(true);
  warnings_banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  warnings_banner_->hide();
  auto* central = new QWidget;
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(banner_);
  layout->addWidget(warnings_banner_);
  layout->addWidget(view_, 1);
  setCentralWidget(central);

  for (std::size_t c = 0; c < trace::kCategoryCount; ++c) {
    const auto category = static_cast<trace::Category>(c);
    QPixmap swatch(14, 14);
    swatch.fill(category_color(category));
    auto* item = new QListWidgetItem(QIcon(swatch), QString::fromStdString(std::string(trace::category_name(category))));
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Checked);
    legend_->addItem(item);
  }
  connect(legend_, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    view_->set_category_hidden(static_cast<trace::Category>(legend_->row(item)), item->checkState() != Qt::Checked);
  });

  auto* search_panel = new QWidget;
  auto* search_layout = new QVBoxLayout(search_panel);
  search_field_->setPlaceholderText("name words, cat:all_reduce, rank:0-7");
  search_results_ = table_view(search_model_, search_panel);
  search_layout->addWidget(search_field_);
  search_layout->addWidget(search_status_);
  search_layout->addWidget(search_results_);
  connect(search_field_, &QLineEdit::returnPressed, this, &MainWindow::search);
  connect(search_results_, &QTableView::activated, this, [this](const QModelIndex& index) {
    const auto* sorted = static_cast<const QSortFilterProxyModel*>(search_results_->model());
    const int row = sorted->mapToSource(index).row();
    view_->select(search_model_->table().spans.at(static_cast<std::size_t>(row)), true);
  });

  auto* summary_panel = new QWidget;
  auto* summary_layout = new QVBoxLayout(summary_panel);
  summary_view_ = table_view(summary_model_, summary_panel);
  summary_layout->addWidget(summary_view_, 2);
  summary_layout->addWidget(new QLabel("peak memory per rank"));
  summary_layout->addWidget(table_view(memory_model_, summary_panel), 1);

  auto* memory_panel = new QWidget;
  auto* memory_layout = new QVBoxLayout(memory_panel);
  auto* rank_row = new QHBoxLayout;
  rank_row->addWidget(new QLabel("rank"));
  rank_row->addWidget(memory_rank_);
  rank_row->addStretch();
  memory_layout->addLayout(rank_row);
  memory_layout->addWidget(memory_chart_, 1);
  connect(memory_rank_, &QSpinBox::valueChanged, memory_chart_, &MemoryChart::set_rank);

  add_dock("Legend", legend_, Qt::LeftDockWidgetArea);
  add_dock("Search", search_panel, Qt::LeftDockWidgetArea);
  add_dock("Scenario", scenario_panel_, Qt::LeftDockWidgetArea);
  details_dock_ = add_dock("Details", details_, Qt::RightDockWidgetArea);
  summary_dock_ = add_dock("Summary", summary_panel, Qt::RightDockWidgetArea);
  memory_dock_ = add_dock("Memory", memory_panel, Qt::BottomDockWidgetArea);
  compare_dock_ = add_dock("Compare", table_view(compare_model_, this), Qt::BottomDockWidgetArea);
  compare_dock_->hide();  // until two timelines are open

  connect(view_, &TimelineView::selection_changed, this, &MainWindow::selection_updated);
  connect(scenario_panel_, &ScenarioPanel::simulated, this, &MainWindow::add_document);
  connect(scenario_panel_, &ScenarioPanel::failed, this, &MainWindow::show_error);
  build_menus();
  statusBar()->showMessage("Open a timeline (File ▸ Open) or simulate a scenario (Scenario panel)");
  resize(1500, 900);
}

QDockWidget* MainWindow::add_dock(const QString& title, QWidget* content, Qt::DockWidgetArea area) {
  auto* dock = new QDockWidget(title, this);
  dock->setObjectName(title);
  dock->setWidget(content);
  addDockWidget(area, dock);
  return dock;
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open timeline…", QKeySequence::Open, this, [this] {
    const QStringList paths = QFileDialog::getOpenFileNames(this, "Open timelines", {}, "Chrome traces (*.json);;All files (*)");
    if (!paths.isEmpty()) open_files(paths);
  });
  file->addAction("Open &scenario…", this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, "Open scenario", {}, "Scenarios (*.toml)");
    if (path.isEmpty()) return;
    scenario_panel_->set_scenario_path(path);
    scenario_panel_->run();
  });
  file->addAction("Export view as &PNG…", this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, "Export PNG", "timeline.png", "PNG (*.png)");
    if (!path.isEmpty()) export_png(path);
  });
  file->addAction("Export timeline as Chrome &JSON…", this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, "Export Chrome trace", "timeline.json", "JSON (*.json)");
    if (!path.isEmpty()) export_chrome_json(path);
  });
  file->addAction("&Close all", this, &MainWindow::close_all);
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, qApp, &QApplication::quit);

  QMenu* navigate = menuBar()->addMenu("&View");
  navigate->addAction("Fit &everything (0)", view_, &TimelineView::fit_all);
  navigate->addAction("Fit one &step (F)", view_, &TimelineView::fit_step);
  navigate->addAction("Zoom &back (Alt+←)", view_, &TimelineView::go_back);
  navigate->addAction("Zoom &forward (Alt+→)", view_, &TimelineView::go_forward);
  QAction* pipeline = navigate->addAction("&Pipeline view: one rank per stage");
  pipeline->setCheckable(true);
  connect(pipeline, &QAction::toggled, this, [this, pipeline](bool on) {
    if (!view_->set_pipeline_view(on)) {
      pipeline->setChecked(false);
      statusBar()->showMessage("no open timeline says where its pipeline stages are (dtsim timelines of pp > 1 do)");
    }
  });
  connect(this, &MainWindow::documents_changed, pipeline, [pipeline] { pipeline->setChecked(false); });

  QMenu* help = menuBar()->addMenu("&Help");
  help->addAction("&Keys", this, [this] {
    QMessageBox::information(this, "dtsim-view keys",
                             "wheel: zoom at cursor · Shift+wheel: scroll lanes\n"
                             "drag: pan · Shift+drag or right-drag: box zoom\n"
                             "W/S: zoom in/out · A/D: pan · F: fit one step · 0: fit everything\n"
                             "Alt+←/Alt+→ or Backspace: zoom history · click: select · Esc: clear\n"
                             "click a node header: collapse or expand its lanes");
  });
}

MainWindow::~MainWindow() {
  closing_ = true;  // loaders stop after the file they are reading
  for (QThread* loader : loaders_) loader->wait();
}

void MainWindow::open_files(const QStringList& paths) {
  // One loader per call, reading the files in the order given, so that the documents (and
  // which is A and which is B in the compare table) come in that order.
  ++loads_in_flight_;
  statusBar()->showMessage("loading " + paths.join(", ") + " …");
  QThread* loader = QThread::create([this, paths] {
    for (const QString& path : paths) {
      if (closing_) return;
      std::shared_ptr<const Document> document;
      QString error;
      try {
        document = load_document(path.toStdString());
      } catch (const std::exception& failure) {
        error = QString::fromStdString(failure.what());
      }
      QMetaObject::invokeMethod(this, [this, document, error] {
        if (document) add_document(document);
        if (!error.isEmpty()) show_error(error);
      }, Qt::QueuedConnection);
    }
  });
  loaders_.push_back(loader);
  connect(loader, &QThread::finished, this, [this, loader] {
    loaders_.erase(std::find(loaders_.begin(), loaders_.end(), loader));
    loader->deleteLater();
    if (--loads_in_flight_ == 0) emit loads_finished();
  });
  loader->start();
}

void MainWindow::add_document(std::shared_ptr<const Document> document) {
  documents_.push_back(std::move(document));
  if (documents_.size() > kMaxDocuments) documents_.erase(documents_.begin());
  banner_->hide();
  documents_updated();
}

void MainWindow::close_all() {
  documents_.clear();
  documents_updated();
}

void MainWindow::documents_updated() {
  view_->set_documents(documents_);
  QStringList warnings;  // what the report says, as dtsim run prints it under "warnings"
  for (const auto& document : documents_) {
    for (const std::string& warning : document->warnings) {
      warnings << QString::fromStdString("⚠ " + (documents_.size() > 1 ? document->title + ": " : "") + warning);
    }
  }
  warnings_banner_->setText(warnings.join("\n"));
  warnings_banner_->setVisible(!warnings.isEmpty());
  summary_model_->set_table(summary_table(documents_));
  memory_model_->set_table(peak_memory_table(documents_));
  compare_model_->set_table(documents_.size() >= 2 ? compare_table(**(documents_.end() - 2), *documents_.back()) : Table{});
  if (documents_.size() >= 2 && compare_dock_->isHidden()) {
    compare_dock_->show();
    resizeDocks({memory_dock_, compare_dock_}, {width() / 2, width() / 2}, Qt::Horizontal);
  }
  compare_dock_->setVisible(documents_.size() >= 2);
  memory_chart_->set_documents(documents_);
  // The Summary dock as wide as its table, up to a third of the window.
  summary_view_->resizeColumnsToContents();
  const int table_width = summary_view_->horizontalHeader()->length() + 2 * summary_view_->frameWidth() +
                          summary_view_->verticalScrollBar()->sizeHint().width();
  const int wanted = std::min(table_width + (summary_dock_->width() - summary_view_->width()), width() / 3);
  if (summary_dock_->width() < wanted) resizeDocks({summary_dock_}, {wanted}, Qt::Horizontal);
  std::size_t ranks = 1;
  for (const auto& document : documents_) ranks = std::max(ranks, document->index->timeline().ranks.size());
  memory_rank_->setRange(0, static_cast<int>(ranks) - 1);
  std::size_t spans = 0;
  for (const auto& document : documents_) spans += document->index->timeline().spans.size();
  statusBar()->showMessage(QString::fromStdString(fmt::format("{} timeline(s), {} spans", documents_.size(), spans)));
  search();  // results refer to documents by position: never keep old ones
  emit documents_changed();
}

void MainWindow::selection_updated() {
  const auto& selected = view_->state().selected;
  if (!selected) {
    details_->clear();
    return;
  }
  const Document& document = *documents_.at(selected->document);
  QString html = QStringLiteral("<b>%1</b><table>").arg(QString::fromStdString(document.title).toHtmlEscaped());
  for (const auto& [field, value] : span_details(document.index->timeline(), selected->span, view_->state().offset_ps(selected->document))) {
    html += QStringLiteral("<tr><td><b>%1</b>&nbsp;</td><td>%2</td></tr>")
                .arg(QString::fromStdString(field).toHtmlEscaped(), QString::fromStdString(value).toHtmlEscaped());
  }
  const RelatedSpans& related = view_->state().related;
  html += QStringLiteral("</table><p>waited for %1 op(s) (orange), %2 op(s) waited for it (green), %3 peer(s) on other "
                         "ranks (blue)</p>")
              .arg(related.predecessors.size())
              .arg(related.successors.size())
              .arg(related.peers.size());
  details_->setHtml(html);
  // The whole of it in view: the dock grows to the text's height when it can.
  details_->document()->setTextWidth(details_->viewport()->width());
  const int needed = static_cast<int>(std::ceil(details_->document()->size().height())) + 2 * details_->frameWidth() +
                     (details_dock_->height() - details_->height());
  if (details_dock_->height() < needed) {  // taken from the Summary dock under it
    const int both = details_dock_->height() + summary_dock_->height();
    resizeDocks({details_dock_, summary_dock_}, {needed, std::max(both - needed, summary_dock_->minimumSizeHint().height())},
                Qt::Vertical);
  }
}

void MainWindow::search() {
  try {
    const SpanQuery query = SpanQuery::parse(search_field_->text().toStdString());
    view_->set_query(query);
    Table results;
    for (std::size_t d = 0; d < documents_.size() && !query.empty(); ++d) {
      Table found = search_table(*documents_[d], d, query, kSearchLimit - results.rows.size());
      if (results.headers.isEmpty()) results.headers = found.headers;
      std::move(found.rows.begin(), found.rows.end(), std::back_inserter(results.rows));
      results.spans.insert(results.spans.end(), found.spans.begin(), found.spans.end());
    }
    search_status_->setText(query.empty() ? QString()
                                          : QStringLiteral("%1 span(s)%2").arg(results.rows.size())
                                                .arg(results.rows.size() >= kSearchLimit ? " (first ones)" : ""));
    search_model_->set_table(std::move(results));
  } catch (const InvalidQuery& error) {
    search_status_->setText(QString::fromStdString(error.what()));
    view_->set_query({});
    search_model_->set_table({});
  }
}

void MainWindow::show_error(const QString& message) {
  banner_->setText(message);
  banner_->show();
  statusBar()->showMessage(message);
}

bool MainWindow::export_png(const QString& path) {
  const QImage image = view_->render(view_->size());
  if (!image.save(path, "PNG")) {
    show_error("cannot write " + path);
    return false;
  }
  return true;
}

bool MainWindow::export_chrome_json(const QString& path) {
  if (documents_.empty()) {
    show_error("nothing to export: no timeline is open");
    return false;
  }
  const auto& selected = view_->state().selected;
  const Document& document = *documents_[selected ? selected->document : documents_.size() - 1];
  try {
    scenarios::write_file_atomically(path.toStdString(), [&](std::ostream& out) {
      trace::write_chrome_trace(document.index->timeline(), out);
    });
  } catch (const std::exception& error) {
    show_error(QStringLiteral("cannot write %1: %2").arg(path, QString::fromStdString(error.what())));
    return false;
  }
  return true;
}

}  // namespace gui
