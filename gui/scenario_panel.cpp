// The scenario panel (see scenario_panel.h).
#include "gui/scenario_panel.h"

#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QVBoxLayout>

#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"

namespace gui {
namespace {

constexpr auto kUnchanged = "—";

QComboBox* choice_box(const QStringList& values) {
  auto* box = new QComboBox;
  box->addItem(kUnchanged);
  box->addItems(values);
  return box;
}

}  // namespace

ScenarioPanel::ScenarioPanel(QWidget* parent)
    : QWidget(parent),
      path_(new QLineEdit),
      bucket_(new QDoubleSpinBox),
      run_button_(new QPushButton("Simulate")),
      cancel_button_(new QPushButton("Cancel")),
      progress_bar_(new QProgressBar),
      status_(new QLabel) {
  auto* browse = new QPushButton("…");
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, "Open scenario", path_->text(), "Scenarios (*.toml)");
    if (!path.isEmpty()) set_scenario_path(path);
  });
  auto* path_row = new QHBoxLayout;
  path_row->addWidget(path_);
  path_row->addWidget(browse);

  auto* form = new QFormLayout;
  form->addRow("scenario", path_row);
  bucket_->setRange(0, 4096);
  bucket_->setSpecialValueText(kUnchanged);
  bucket_->setSuffix(" MiB");
  form->addRow("ddp.bucket_cap_mb", bucket_);
  for (const char* key : {"parallel.dp", "parallel.tp", "parallel.pp", "parallel.cp", "parallel.ep"}) {
    auto* box = new QSpinBox;
    box->setRange(0, 65536);
    box->setSpecialValueText(kUnchanged);
    form->addRow(key, box);
    degrees_.emplace_back(key, box);
  }
  const std::pair<const char*, QStringList> choices[] = {
      {"parallel.cp_scheme", {"ring", "ulysses", "all_gather"}},
      {"fsdp.backward_prefetch", {"BACKWARD_PRE", "BACKWARD_POST", "NONE"}},
      {"network.model", {"analytic", "flow", "packet"}},
      {"collectives.all_reduce", {"auto", "ring", "tree", "hd", "hier", "nvls"}},
  };
  for (const auto& [key, values] : choices) {
    auto* box = choice_box(values);
    form->addRow(key, box);
    choices_.emplace_back(key, box);
  }

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_button_);
  buttons->addWidget(cancel_button_);
  cancel_button_->setEnabled(false);
  progress_bar_->setRange(0, 1000);
  progress_bar_->setValue(0);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(progress_bar_);
  layout->addWidget(status_);
  layout->addStretch();

  connect(run_button_, &QPushButton::clicked, this, &ScenarioPanel::run);
  connect(cancel_button_, &QPushButton::clicked, this, &ScenarioPanel::cancel);
  progress_timer_.setInterval(100);
  connect(&progress_timer_, &QTimer::timeout, this,
          [this] { progress_bar_->setValue(static_cast<int>(progress_.load() * 1000)); });
}

ScenarioPanel::~ScenarioPanel() {
  if (worker_ != nullptr) {
    cancel_requested_ = true;
    worker_->wait();
  }
}

void ScenarioPanel::set_scenario_path(const QString& path) { path_->setText(path); }

QSpinBox* ScenarioPanel::degree_field(const QString& key) const {
  for (const auto& [name, box] : degrees_) {
    if (name == key) return box;
  }
  return nullptr;
}

QComboBox* ScenarioPanel::choice_field(const QString& key) const {
  for (const auto& [name, box] : choices_) {
    if (name == key) return box;
  }
  return nullptr;
}

QStringList ScenarioPanel::overrides() const {
  QStringList result = extra_overrides_;
  if (bucket_->value() > 0) result << QStringLiteral("ddp.bucket_cap_mb=%1").arg(bucket_->value());
  for (const auto& [key, box] : degrees_) {
    if (box->value() > 0) result << QStringLiteral("%1=%2").arg(key).arg(box->value());
  }
  for (const auto& [key, box] : choices_) {
    if (box->currentIndex() > 0) result << QStringLiteral("%1=%2").arg(key, box->currentText());
  }
  return result;
}

void ScenarioPanel::run() {
  if (worker_ != nullptr) return;
  const std::string path = path_->text().toStdString();
  std::vector<std::string> sets;
  for (const QString& set : overrides()) sets.push_back(set.toStdString());
  const QString title = QStringLiteral("run %1%2").arg(++runs_).arg(overrides().isEmpty() ? QString() : " (" + overrides().join(", ") + ")");
  cancel_requested_ = false;
  progress_ = 0;
  worker_ = QThread::create([this, path, sets, title] {
    std::shared_ptr<const Document> document;
    QString error;
    bool cancelled = false;
    try {
      const scenarios::Scenario scenario = scenarios::load_scenario(path, sets);
      scenarios::RunResult result = scenarios::run_scenario(scenario, [this](const sim::SimulationProgress& progress) {
        progress_ = progress.fraction_done;
        return !cancel_requested_;
      });
      document = make_document(title.toStdString(), path, std::move(result.simulation.timeline), result.report.warnings);
    } catch (const sim::SimulationCancelled&) {
      cancelled = true;
    } catch (const std::exception& failure) {
      error = QString::fromStdString(failure.what());
    }
    QMetaObject::invokeMethod(this, [this, document, error, cancelled] { finish_run(document, error, cancelled); },
                              Qt::QueuedConnection);
  });
  run_button_->setEnabled(false);
  cancel_button_->setEnabled(true);
  status_->setText("simulating " + path_->text() + " …");
  progress_timer_.start();
  worker_->start();
}

void ScenarioPanel::cancel() {
  cancel_requested_ = true;
  status_->setText("cancelling …");
}

void ScenarioPanel::finish_run(std::shared_ptr<const Document> document, const QString& error, bool cancelled) {
  worker_->wait();
  worker_->deleteLater();
  worker_ = nullptr;
  progress_timer_.stop();
  run_button_->setEnabled(true);
  cancel_button_->setEnabled(false);
  progress_bar_->setValue(document ? 1000 : 0);
  if (cancelled) {
    status_->setText("cancelled");
  } else if (!error.isEmpty()) {
    status_->setText(error);
    emit failed(error);
  } else {
    status_->setText(QString::fromStdString("done: " + document->title));
    emit simulated(document);
  }
  emit stopped();
}

}  // namespace gui
