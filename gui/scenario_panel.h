// gui::ScenarioPanel — simulate a scenario TOML inside the viewer through the same library
// the CLI uses (scenarios::load_scenario + run_scenario). The fields set the keys people
// change most in a what-if (bucket size, tp/dp/pp, FSDP prefetch, network model, all-reduce
// algorithm) as `--set` overrides; each run becomes a new document shown next to the
// previous one. The simulation runs on a worker thread: the window stays live, a progress
// bar follows it and Cancel stops it.
#pragma once

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QThread>
#include <QTimer>
#include <QWidget>

#include <atomic>
#include <memory>

#include "gui/document.h"

namespace gui {

class ScenarioPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ScenarioPanel(QWidget* parent = nullptr);
  ~ScenarioPanel() override;

  void set_scenario_path(const QString& path);
  QString scenario_path() const { return path_->text(); }
  // The `--set key=value` overrides the fields stand for (fields left at "—" add none).
  QStringList overrides() const;
  // More `--set` overrides applied before the fields' (from dtsim-view --set).
  void set_extra_overrides(QStringList overrides) { extra_overrides_ = std::move(overrides); }
  bool running() const { return worker_ != nullptr; }
  QString status() const { return status_->text(); }

  // Fields by scenario key, so that tests and scripts can set them.
  QSpinBox* degree_field(const QString& key) const;
  QDoubleSpinBox* bucket_field() const { return bucket_; }
  QComboBox* choice_field(const QString& key) const;

 public slots:
  void run();
  void cancel();

 signals:
  void simulated(std::shared_ptr<const gui::Document> document);
  void failed(const QString& message);
  void stopped();  // after every run: simulated, failed or cancelled

 private:
  void finish_run(std::shared_ptr<const Document> document, const QString& error, bool cancelled);

  QLineEdit* path_;
  QDoubleSpinBox* bucket_;
  std::vector<std::pair<QString, QSpinBox*>> degrees_;
  std::vector<std::pair<QString, QComboBox*>> choices_;
  QPushButton* run_button_;
  QPushButton* cancel_button_;
  QProgressBar* progress_bar_;
  QLabel* status_;
  QTimer progress_timer_;
  QThread* worker_ = nullptr;
  std::atomic<bool> cancel_requested_{false};
  std::atomic<double> progress_{0};
  int runs_ = 0;
  QStringList extra_overrides_;
};

}  // namespace gui
