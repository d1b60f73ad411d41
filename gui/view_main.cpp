// dtsim-view: the desktop timeline viewer. With no export option it opens a window on the
// given timelines (and scenario); with --export-png / --export-json / --screenshot it renders
// without showing anything and exits: 0 when written, 1 on unreadable input or an unwritable
// output (one message on stderr, no file left behind), 2 on a usage error.
#include <fmt/format.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QEventLoop>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "gui/main_window.h"
#include "scenarios/one_line.h"
#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "sim/trace/chrome_trace.h"

namespace {

constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;

// One line of valid UTF-8 on stderr (the message may echo a path or a value of the user's).
void print_error(const std::string& message) { std::cerr << "dtsim-view: " << scenarios::one_line(message, 2000, 1600) << "\n"; }

struct Options {
  QStringList files;
  QString scenario;
  QStringList sets;
  QStringList what_if;  // overrides of a second run of the scenario, shown next to the first
  QString export_png, export_json, screenshot, select;
  QSize size{1600, 900};
  int step = 0;  // 0: fit everything; k: fit step k
  bool pipeline_view = false;
};

bool exporting(const Options& options) {
  return !options.export_png.isEmpty() || !options.export_json.isEmpty() || !options.screenshot.isEmpty();
}

// The options, declared on `parser`.
void declare_options(QCommandLineParser& parser) {
  parser.setApplicationDescription("dtsim-view: timelines of simulated and real training runs, side by side.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("files", "dtsim timelines or Chrome/Perfetto JSON traces (PyTorch profiler traces too)",
                               "[FILE…]");
  parser.addOptions({
      {"scenario", "Simulate this scenario TOML in the app (through the dtsim library).", "TOML"},
      {"set", "Override a scenario key, as dtsim run --set does (repeatable).", "KEY=VALUE"},
      {"what-if",
       "Simulate the scenario a second time with this override too (repeatable) and compare.",
       "KEY=VALUE"},
      {"export-png", "Render the timeline view to this PNG and exit.", "PNG"},
      {"export-json", "Write the (last) timeline as a Chrome trace and exit.", "JSON"},
      {"screenshot", "Render the whole window (docks and all) to this PNG and exit.", "PNG"},
      {"select", "Select the first span this query finds (Search panel syntax) before rendering.",
       "QUERY"},
      {"size",
       "Size of the rendered image, WIDTHxHEIGHT (default 1600x900); "
       "a --screenshot is no smaller than the window's docks need.",
       "WxH"},
      {"step", "Fit the view to this training step (1-based) before rendering.", "N"},
      {"pipeline-view",
       "Show one rank per pipeline stage (View ▸ Pipeline view) before rendering."},
  });
}

// The options of a command line parsed by `parser` (help and version already handled).
std::optional<Options> read_options(const QCommandLineParser& parser) {
  Options options;
  options.files = parser.positionalArguments();
  options.scenario = parser.value("scenario");
  options.sets = parser.values("set");
  options.what_if = parser.values("what-if");
  // Both change a scenario; given timeline files only, they would be ignored without a word.
  for (const auto& [values, option] :
       {std::pair{&options.sets, "--set"}, std::pair{&options.what_if, "--what-if"}}) {
    if (!values->isEmpty() && options.scenario.isEmpty()) {
      std::cerr << "dtsim-view: " << option << " changes a --scenario: give one\n";
      return std::nullopt;
    }
  }
  options.export_png = parser.value("export-png");
  options.export_json = parser.value("export-json");
  options.screenshot = parser.value("screenshot");
  options.select = parser.value("select");
  options.pipeline_view = parser.isSet("pipeline-view");
  if (parser.isSet("size")) {
    const QStringList parts = parser.value("size").split('x');
    bool width_ok = false, height_ok = false;
    if (parts.size() == 2) options.size = QSize(parts[0].toInt(&width_ok), parts[1].toInt(&height_ok));
    if (!width_ok || !height_ok || options.size.width() < 400 || options.size.height() < 200 ||
        options.size.width() > 16384 || options.size.height() > 16384) {
      std::cerr << "dtsim-view: --size: expected WIDTHxHEIGHT between 400x200 and 16384x16384, e.g. 1600x900\n";
      return std::nullopt;
    }
  }
  if (parser.isSet("step")) {
    bool ok = false;
    options.step = parser.value("step").toInt(&ok);
    if (!ok || options.step < 1) {
      std::cerr << "dtsim-view: --step: expected a step number ≥ 1\n";
      return std::nullopt;
    }
  }
  if (exporting(options) && options.files.isEmpty() && options.scenario.isEmpty()) {
    std::cerr << "dtsim-view: nothing to export: give timeline files or --scenario\n";
    return std::nullopt;
  }
  return options;
}

// The command line without the options QApplication takes for itself (-platform NAME, -style
// NAME, -reverse, …; one dash or two), which it removes from argv when it is made.
QStringList without_qt_options(const QStringList& arguments) {
  static const QStringList kWithValue = {"platform", "platformpluginpath", "platformtheme", "plugin", "qwindowgeometry",
                                         "qwindowicon", "qwindowtitle", "style", "stylesheet", "session", "display",
                                         "geometry", "title"};
  static const QStringList kFlags = {"reverse", "widgetcount", "nograb", "dograb"};
  QStringList kept;
  for (qsizetype i = 0; i < arguments.size(); ++i) {
    QString name = arguments[i];
    if (i == 0 || !name.startsWith('-')) {
      kept << name;
      continue;
    }
    name.remove(0, name.startsWith("--") ? 2 : 1);
    const QString bare = name.section('=', 0, 0);
    if (kFlags.contains(bare)) continue;
    if (kWithValue.contains(bare)) {
      if (!name.contains('=')) ++i;  // its value is the next argument
      continue;
    }
    kept << arguments[i];
  }
  return kept;
}

// Runs the event loop until `signal` of `sender` fires.
template <typename Sender, typename Signal>
void wait_for(Sender* sender, Signal signal) {
  QEventLoop loop;
  QObject::connect(sender, signal, &loop, &QEventLoop::quit);
  loop.exec();
}

// Loads the files, then simulates the scenario and its what-if, one after the other (so the
// what-if lands next to the run it changes). False, with the message in the window's banner,
// as soon as one of them fails: each file is checked as it loads, since a good file loaded after
// a bad one clears the banner.
bool load_inputs(gui::MainWindow& window, const Options& options) {
  for (const QString& file : options.files) {
    window.open_files({file});
    if (window.loading()) wait_for(&window, &gui::MainWindow::loads_finished);
    if (!window.error_text().isEmpty()) return false;
  }
  if (options.scenario.isEmpty()) return true;
  gui::ScenarioPanel& panel = *window.scenario_panel();
  panel.set_scenario_path(options.scenario);
  // --set keys the panel has no field for still apply: they are given to the loader as is.
  panel.set_extra_overrides(options.sets);
  panel.run();
  wait_for(&panel, &gui::ScenarioPanel::stopped);
  if (!window.error_text().isEmpty() || options.what_if.isEmpty()) return window.error_text().isEmpty();
  // The what-if is the scenario with more overrides, or other values for the --set keys.
  const auto key_of = [](const QString& assignment) {
    return assignment.section('=', 0, 0).trimmed();
  };
  QStringList what_if;
  for (const QString& set : options.sets) {
    const bool replaced =
        std::any_of(options.what_if.begin(), options.what_if.end(),
                    [&](const QString& other) { return key_of(other) == key_of(set); });
    if (!replaced) what_if << set;
  }
  panel.set_extra_overrides(what_if + options.what_if);
  panel.run();
  wait_for(&panel, &gui::ScenarioPanel::stopped);
  return window.error_text().isEmpty();
}

// Applies --select and --step; the reason when one cannot be (a query that finds nothing, a
// step past the last), else empty.
std::string prepare_view(gui::MainWindow& window, const Options& options) {
  gui::TimelineView& view = *window.view();
  if (options.pipeline_view && !view.set_pipeline_view(true)) {
    return "--pipeline-view: no timeline says where its pipeline stages are (dtsim timelines of pp > 1 do)";
  }
  if (!options.select.isEmpty()) {
    window.search_field()->setText(options.select);
    emit window.search_field()->returnPressed();
    if (window.search_model()->table().spans.empty()) {
      return "--select " + options.select.toStdString() + ": no span matches (the Search panel's syntax: words, rank:N, "
             "cat:NAME)";
    }
    view.select(window.search_model()->table().spans.front(), true);
    view.set_query({});  // the selection shows among unfaded spans
  }
  if (options.step > 0 && !view.state().documents.empty()) {
    const auto& steps = view.state().documents.front()->index->steps();
    if (static_cast<std::size_t>(options.step) > steps.size()) {
      return fmt::format("--step {}: the timeline has {} step{}", options.step, steps.size(), steps.size() == 1 ? "" : "s");
    }
    const gui::Window step = steps[static_cast<std::size_t>(options.step) - 1];
    const double offset = view.state().offset_ps(0);
    view.set_window({step.begin_ps - offset, step.end_ps - offset});
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  // The command line is read before any window system is touched, so that --help, --version and
  // usage errors work without a display.
  QStringList arguments;
  for (int i = 0; i < argc; ++i) arguments << QString::fromLocal8Bit(argv[i]);
  arguments = without_qt_options(arguments);
  QCommandLineParser parser;
  declare_options(parser);
  if (!parser.parse(arguments)) {
    print_error(parser.errorText().toStdString() + " (see dtsim-view --help)");
    return kExitUsage;
  }
  if (parser.isSet("help")) {
    std::cout << parser.helpText().replace("<executable_name>", "dtsim-view").toStdString();
    return 0;
  }
  if (parser.isSet("version")) {
    std::cout << "dtsim-view " << scenarios::dtsim_version() << "\n";
    return 0;
  }
  const auto options = read_options(parser);
  if (!options) return kExitUsage;

  // Exporting needs no display: render offscreen unless a platform was chosen. A window does
  // (on Linux, where DISPLAY or WAYLAND_DISPLAY says there is one).
  bool platform_chosen = std::getenv("QT_QPA_PLATFORM") != nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    platform_chosen = platform_chosen || argument.starts_with("-platform") || argument.starts_with("--platform");
  }
#ifdef __linux__
  const bool headless = std::getenv("DISPLAY") == nullptr && std::getenv("WAYLAND_DISPLAY") == nullptr;
#else
  const bool headless = false;
#endif
  if (headless && !platform_chosen) {
    if (!exporting(*options)) {
      print_error("no display to open a window on (DISPLAY and WAYLAND_DISPLAY are unset): render to a file with "
                  "--export-png or --screenshot, or set QT_QPA_PLATFORM=offscreen");
      return kExitUsage;
    }
    setenv("QT_QPA_PLATFORM", "offscreen", 1);
  }

  QApplication app(argc, argv);
  QApplication::setApplicationName("dtsim-view");

  gui::MainWindow window;
  window.resize(options->size);
  if (!exporting(*options)) {
    window.show();
    // From inside the event loop, so that closing the window meanwhile ends the program.
    QTimer::singleShot(0, &window, [&window, &options] {
      if (!load_inputs(window, *options)) return;  // a failure stays in the window's banner
      if (const std::string problem = prepare_view(window, *options); !problem.empty()) {
        window.show_error(QString::fromStdString(problem));
      }
    });
    return QApplication::exec();
  }

  window.setAttribute(Qt::WA_DontShowOnScreen);
  window.show();
  if (!load_inputs(window, *options)) {
    print_error(window.error_text().toStdString());
    return kExitBadInput;
  }
  if (const std::string problem = prepare_view(window, *options); !problem.empty()) {
    print_error(problem);
    return kExitBadInput;
  }
  QApplication::processEvents();
  if (!options->export_png.isEmpty()) {
    window.view()->resize(options->size);
    if (!window.export_png(options->export_png)) {
      print_error(window.error_text().toStdString());
      return kExitBadInput;
    }
  }
  if (!options->export_json.isEmpty() && !window.export_chrome_json(options->export_json)) {
    print_error(window.error_text().toStdString());
    return kExitBadInput;
  }
  if (!options->screenshot.isEmpty() && !window.grab().save(options->screenshot, "PNG")) {
    print_error("cannot write " + options->screenshot.toStdString());
    return kExitBadInput;
  }
  return 0;
}
