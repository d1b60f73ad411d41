// `dtsim` subcommands (see cli.h).
#include "scenarios/cli.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "backend/calibration.h"
#include "backend/capabilities.h"
#include "backend/executor.h"
#include "backend/work_split.h"
#include "scenarios/advise.h"
#include "scenarios/collective_bench.h"
#include "scenarios/machine_memory.h"
#include "scenarios/one_line.h"
#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "scenarios/search.h"
#include "scenarios/sweep.h"
#include "scenarios/validation.h"
#include "sim/compute/compute_model.h"
#include "sim/run/program_simulator.h"
#include "sim/trace/chrome_trace.h"
#include "sim/trace/comparison.h"
#include "strategies/model.h"
#include "strategies/program_builder.h"
#include "topology/presets.h"

namespace scenarios {
namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitFailure = 1;
constexpr int kExitOutOfMemory = 3;  // run --fail-on-oom: the step does not fit
constexpr std::int64_t kMostRows = 1'000'000'000;  // sweep/search counts: rows, layouts simulated

// For an option whose empty value would silently mean its default (-o '' wrote to out/<name>/).
const CLI::Validator kNotEmpty(
    [](const std::string& value) {
      return value.empty() ? std::string("expected a value, got \"\"") : std::string();
    },
    "");

// An output directory that exists as something else (a file) is refused when the command line is
// read, not after a simulation that may take minutes.
const CLI::Validator kNotAFile(
    [](const std::string& value) {
      std::error_code error;
      return std::filesystem::exists(value, error) && !std::filesystem::is_directory(value, error)
                 ? fmt::format(
                       "{} exists and is not a directory; -o names a directory to write into",
                       value)
                 : std::string();
    },
    "");

// A watchdog's timeout: from 1 ms (the job's own messages take that) to 10⁶ s (11.6 days). A larger
// one overflowed the clock's deadline and fired at once; NaN passed CLI11's positive-number check.
constexpr double kShortestTimeout = 1e-3, kLongestTimeout = 1e6;
const CLI::Validator kTimeout(
    [](const std::string& text) {
      std::string_view number = text;  // as CLI11 reads numbers: spaces around, a leading '+'
      while (!number.empty() && std::isspace(static_cast<unsigned char>(number.front())))
        number.remove_prefix(1);
      while (!number.empty() && std::isspace(static_cast<unsigned char>(number.back())))
        number.remove_suffix(1);
      if (number.starts_with('+')) number.remove_prefix(1);
      double seconds = 0;
      const auto [end, error] =
          std::from_chars(number.data(), number.data() + number.size(), seconds);
      if (number.empty() || error != std::errc() || end != number.data() + number.size() ||
          !(seconds >= kShortestTimeout && seconds <= kLongestTimeout)) {
        return fmt::format("expected seconds from {:g} to {:g}, got {}", kShortestTimeout,
                           kLongestTimeout, text);
      }
      return std::string();
    },
    "SECONDS");

// Prints "dtsim: KIND: MESSAGE" as one line of valid UTF-8 (MESSAGE may echo user input), in
// one write: std::cerr is unbuffered, and under mpirun another process's line would otherwise
// land between the pieces.
void print_error(std::ostream& err, std::string_view kind, const std::string& message) {
  constexpr std::size_t kLongestLine = 2000, kKept = 1600;
  err << fmt::format("dtsim: {}: {}\n", kind, one_line(message, kLongestLine, kKept)) << std::flush;
}

struct RunOptions {
  std::string scenario;
  std::string output;
  std::vector<std::string> overrides;
  std::string profile;  // --profile: a hardware profile in place of the scenario's
  bool json = false;
  unsigned threads = 0;
  std::string backend;  // empty: simulate; "mpi" or "nccl": execute for real under mpirun
  double timeout_s = backend::ExecutionOptions{}.timeout_s;
  int measured_runs = backend::ExecutionOptions{}.measured_runs;
  std::string inject_fault;
  bool verify = false;
  bool share_gpu = false;    // --backend nccl: ranks share the host's GPUs
  bool memory_check = true;  // refuse a run estimated not to fit in this machine's memory
  bool quiet = false;        // no progress
  bool fail_on_oom = false;  // run: exit 3 when the step does not fit
  std::string trace_ranks;   // run: --trace-ranks, in place of output.trace_ranks
  bool timeline = true;      // run: false with --no-timeline
  std::vector<std::string> sweep_axes;  // sweep: --sweep key=v1,v2,...
  SweepView sweep_view;                 // sweep: --sort, --top
  SearchOptions search;                 // search: --simulate, --sample, --objective
  std::size_t search_rows = 10;         // search: --top
  bool with_advise = false;             // search: simulate advise's candidates too
};

// Where a run writes: -o, else out/<name>/, and a run that changes the scenario from the
// command line (--set, --profile, --sweep) into out/<name>/what-if-<digest of the changes>/,
// so that a baseline and its what-ifs never overwrite each other.
std::filesystem::path output_directory(const RunOptions& options, const std::string& name) {
  if (!options.output.empty()) return options.output;
  const std::filesystem::path plain = std::filesystem::path("out") / name;
  if (options.overrides.empty() && options.profile.empty() && options.sweep_axes.empty()) return plain;
  std::uint64_t digest = fnv1a64("--profile " + options.profile);
  for (const auto* list : {&options.overrides, &options.sweep_axes}) {
    digest = fnv1a64("\n--", digest);  // which list each entry is in counts
    for (const std::string& entry : *list) digest = fnv1a64("\n" + entry, digest);
  }
  return plain / fmt::format("what-if-{:08x}", digest >> 32);
}

ScenarioDocument open_document(const RunOptions& options) {
  ScenarioDocument document = ScenarioDocument::from_file(options.scenario, options.profile);
  for (const std::string& assignment : options.overrides) document.set(assignment, "--set " + assignment);
  return document;
}

// "all 64 ranks", "ranks 0-7, 896 of 1024", "no rank (of 1024)": the ranks whose spans the timeline holds.
std::string traced_text(const trace::Timeline& timeline) {
  const auto world = static_cast<std::int32_t>(timeline.ranks.size());
  std::string ranges;
  std::int32_t traced = 0;
  for (std::int32_t r = 0; r < world; ++r) {
    if (!timeline.ranks[r].traced) continue;
    std::int32_t last = r;
    while (last + 1 < world && timeline.ranks[last + 1].traced) ++last;
    ranges += fmt::format("{}{}", ranges.empty() ? "" : ", ", last == r ? std::to_string(r) : fmt::format("{}-{}", r, last));
    traced += last - r + 1;
    r = last;
  }
  if (traced == world) return fmt::format("all {} ranks", world);
  if (traced == 0) return fmt::format("no rank (of {})", world);
  return fmt::format("rank{} {} of {}", traced == 1 ? "" : "s", ranges, world);
}

void print_result(const RunResult& result, const std::filesystem::path& directory, bool json, std::ostream& out,
                  bool timeline = true) {
  if (json) {
    out << result_json(result).dump(2) << "\n";
  } else {
    out << trace::format_report(result.report);
    if (result.memory_remedies) {
      out << "\n  remedies that apply here, each simulated (most saved first)\n"
          << format_memory_remedies(*result.memory_remedies);
    }
    if (!result.simulation.symmetry.empty()) out << fmt::format("\nsimulated: {}\n", result.simulation.symmetry);
    if (timeline) {
      out << fmt::format("\ntimeline: {} ({}; critical rank {})  report: {}\n", (directory / "timeline.json").string(),
                         traced_text(result.simulation.timeline), result.report.critical_rank,
                         (directory / "report.json").string());
    } else {
      out << fmt::format("\nreport: {} (no timeline)\n", (directory / "report.json").string());
    }
  }
}

// `word` as one word of a POSIX shell command: as it is when it holds nothing the shell
// would split or expand, else in single quotes.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("-_./=:,@%+").find(static_cast<char>(c)) != std::string_view::npos;
  });
  if (plain) return word;
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// A file written for dtsim sweep, run by `dtsim run` (simulated or executed): a warning that its
// points are not what runs, with the sweep command that would run them (the run's --profile and
// --set changes, but not those of a key the sweep varies: its axis would win).
void note_points_not_run(Scenario& scenario, const RunOptions& options,
                         std::string_view what_runs) {
  if (scenario.sweep.empty()) return;
  std::size_t points = 1;
  for (const SweepAxis& axis : scenario.sweep) points *= axis.values.size();
  std::string sweep_command = "dtsim sweep " + shell_word(options.scenario);
  if (!options.profile.empty()) sweep_command += " --profile " + shell_word(options.profile);
  for (const std::string& change : options.overrides) {
    const std::string key = change.substr(0, change.find('='));
    const bool swept = std::any_of(scenario.sweep.begin(), scenario.sweep.end(),
                                   [&](const SweepAxis& axis) { return axis.key == key; });
    if (!swept) sweep_command += " --set " + shell_word(change);
  }
  scenario.warnings.push_back(
      fmt::format("[sweep] ({} point{}) is not {}: dtsim run {} the scenario as written "
                  "without it, {} runs its points",
                  points, points == 1 ? "" : "s", what_runs,
                  what_runs == "simulated" ? "simulates" : "executes", sweep_command));
}

// `dtsim run --backend mpi|nccl` under mpirun: every rank loads the scenario and runs its part;
// rank 0 alone writes the outputs and prints, and reports errors (which every rank meets alike).
int command_execute(const RunOptions& options, std::ostream& out, std::ostream& err) {
  if (options.backend != "mpi" && options.backend != "nccl") {
    print_error(err, "error", "--backend " + options.backend + ": expected mpi (CPU ranks) or nccl (one GPU per rank)");
    return kExitBadInput;
  }
  if (!options.trace_ranks.empty() || !options.timeline) {
    print_error(err, "error", "--trace-ranks and --no-timeline choose what a simulation traces; a real run (--backend) "
                              "records every rank");
    return kExitBadInput;
  }
  const backend::MpiSession mpi(nullptr, nullptr);
  try {
    backend::ExecutionOptions execution;
    execution.device = options.backend == "nccl" ? backend::ExecutionOptions::Device::kGpu
                                                 : backend::ExecutionOptions::Device::kCpu;
    execution.timeout_s = options.timeout_s;
    execution.measured_runs = options.measured_runs;
    execution.verify = options.verify;
    execution.share_gpu = options.share_gpu;
    if (!options.inject_fault.empty()) execution.fault = backend::parse_fault(options.inject_fault);
    Scenario scenario = open_document(options).read();
    note_points_not_run(scenario, options, "executed");
    const RunResult result = execute_scenario(scenario, execution);
    if (mpi.rank() != 0) return 0;
    const auto directory = output_directory(options, scenario.name + "-measured");
    write_outputs(result, directory);
    print_result(result, directory, options.json, out);
    if (const auto verified = result.simulation.timeline.metadata.find("verification");
        verified != result.simulation.timeline.metadata.end() && !options.json) {
      out << "verified: " << verified->second << "\n";
    }
    return result.report.oom && options.fail_on_oom ? kExitOutOfMemory : 0;
  } catch (const ScenarioError& error) {
    if (mpi.rank() == 0) print_error(err, "error", error.what());
    return kExitBadInput;
  } catch (const OutputError& error) {
    if (mpi.rank() == 0) print_error(err, "error", std::string(error.what()) + " (hint: -o DIR names a directory to write)");
    return kExitBadInput;
  } catch (const backend::ExecutionError& error) {
    if (mpi.rank() == 0) print_error(err, "cannot execute", error.what());
    return kExitBadInput;
  }
}

// The calibration as a hardware profile: scenario keys a scenario takes in with
// [scenario] hardware_profile = "FILE" (its own keys win).
std::string hardware_profile_toml(const backend::Calibration& calibration) {
  std::string text = fmt::format(
      "# Hardware profile measured by `dtsim calibrate --backend {}` on {} with {} rank(s): {}.\n"
      "# A scenario takes it in with: [scenario] hardware_profile = \"<path relative to the scenario>\".\n"
      "# Each rank is priced as one GPU of this profile: {} peak = the best measured GEMM rate.\n\n"
      "[cluster.gpu]\n{}_tflops = {:.6g}\nmemory_bandwidth_gbyte_s = {:.6g}\n\n",
      calibration.backend, calibration.host, calibration.ranks, calibration.device, calibration.gemm_dtype,
      calibration.gemm_dtype, calibration.peak_flops / 1e12, calibration.memory_bytes_per_s / 1e9);
  for (const backend::LinkCalibration& link : calibration.links) {
    // The last (bounding) link class carries the all-reduce's measured efficiency.
    const bool bounding = &link == &calibration.links.back() && calibration.collective_efficiency;
    if (!link.latency_s || !link.bytes_per_s) {
      text += fmt::format("# ranks 0 and {} ({}): too noisy to fit α and β; the preset's link is kept\n\n", link.peer,
                          link.intra_node ? "one node" : "two nodes");
      continue;
    }
    // A path crosses two links of the class (GPU → switch → GPU, GPU → NIC … NIC → GPU on one
    // leaf), each with this latency.
    text += fmt::format("[cluster.{}]  # ranks 0 and {} {}\nbandwidth_gbyte_s = {:.6g}\nlatency_us = {:.6g}\nefficiency = {:.4f}{}\n\n",
                        link.intra_node ? "nvlink" : "fabric.nic", link.peer,
                        link.intra_node ? "on one node" : "on two nodes", *link.bytes_per_s / 1e9,
                        *link.latency_s / 2 * 1e6, bounding ? *calibration.collective_efficiency : 1.0,
                        bounding ? "  # all-reduce bus bandwidth / link bandwidth" : "");
  }
  // Rates by size as [[size, rate / best], …].
  const auto curve = [](const std::vector<std::pair<double, double>>& rates, double best) {
    std::string points;
    for (const auto& [size, rate] : rates) {
      points += fmt::format("{}[{:.6g}, {:.4g}]", points.empty() ? "" : ", ", size,
                            std::clamp(rate / best, 1e-4, 1.0));  // the loader takes (0, 1]
    }
    return "[" + points + "]";
  };
  text += fmt::format(
      "[compute]\nmatmul_efficiency_by_size = {}\nattention_efficiency = {:.4f}\nmemory_efficiency_by_size = {}\n"
      "kernel_overhead_us = {:.4g}\n",
      curve(calibration.gemm_rates, calibration.peak_flops),
      std::min(1.0, calibration.attention_flops / calibration.peak_flops),
      curve(calibration.memory_rates, calibration.memory_bytes_per_s), calibration.op_overhead_s * 1e6);
  return text;
}

// This process's place in a job that mpirun (Open MPI, or MPICH/Intel MPI's PMI) started with
// more than one process, as the launcher says in the environment; none otherwise.
struct LaunchedProcess {
  int size = 1;
  int rank = 0;
};
std::optional<LaunchedProcess> launched_by_mpirun() {
  for (const auto& [size_variable, rank_variable] :
       {std::pair{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, std::pair{"PMI_SIZE", "PMI_RANK"}}) {
    const char* size = std::getenv(size_variable);
    if (size == nullptr || std::atoi(size) <= 1) continue;
    const char* rank = std::getenv(rank_variable);
    return LaunchedProcess{std::atoi(size), rank == nullptr ? 0 : std::atoi(rank)};
  }
  return std::nullopt;
}

// Whether what this process writes to `fd` reaches a terminal: the descriptor itself, or under
// Open MPI's mpirun (any number of processes) — which gives its processes a pseudo-terminal for
// stdout and a pipe for stderr, whatever its own are — the launcher's (the parent process's, on
// Linux) descriptor. Under other launchers (MPICH's Hydra proxy, Slurm's step daemon) the parent
// holds pipes: no progress there.
bool reaches_terminal(int fd) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMI_SIZE") == nullptr) return isatty(fd) != 0;
  std::error_code unreadable;
  const std::string target =
      std::filesystem::read_symlink(fmt::format("/proc/{}/fd/{}", getppid(), fd), unreadable).string();
  return !unreadable && (target.starts_with("/dev/pts/") || target.starts_with("/dev/tty"));
}

// How long work runs before its progress shows: `after`, or DTSIM_PROGRESS_AFTER_MS milliseconds
// when that is set (0: at once — what a test of the progress line needs on a fast machine).
std::chrono::milliseconds progress_delay(std::chrono::milliseconds after) {
  const char* stated = std::getenv("DTSIM_PROGRESS_AFTER_MS");
  return stated != nullptr && *stated != '\0' ? std::chrono::milliseconds(std::atoi(stated)) : after;
}

// Progress on a terminal (stderr), once the work has run for longer than `after`; nothing with
// --quiet or when stdout or stderr is not a terminal. Clears its line when done.
class TerminalProgress {
 public:
  TerminalProgress(std::ostream& err, std::chrono::milliseconds after, bool quiet)
      : err_(err), start_(std::chrono::steady_clock::now()), after_(progress_delay(after)),
        terminal_(!quiet && &err == &std::cerr && reaches_terminal(STDERR_FILENO) && reaches_terminal(STDOUT_FILENO)) {}
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;
  ~TerminalProgress() {
    if (shown_) err_ << "\r\033[K" << std::flush;  // back to the line's start, erase it
  }
  bool on_terminal() const { return terminal_; }
  double elapsed_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  void show(const std::string& line) {
    if (!terminal_ || elapsed_s() * 1000 < static_cast<double>(after_.count())) return;
    err_ << "\r" << line << "\033[K" << std::flush;
    shown_ = true;
  }

 private:
  std::ostream& err_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds after_;
  bool terminal_;
  bool shown_ = false;
};

// A bar of simulations done of all: "[####    ] 3/8 points".
std::string bar_progress(std::size_t done, std::size_t total, std::string_view what) {
  constexpr std::size_t kWidth = 40;
  const std::size_t filled = kWidth * done / std::max<std::size_t>(total, 1);
  return fmt::format("[{}{}] {}/{} {}", std::string(filled, '#'), std::string(kWidth - filled, ' '), done, total, what);
}

// A Progress that draws a bar of `what` on `progress`.
Progress bar_on(TerminalProgress& progress, std::string_view what) {
  return [&progress, what](std::size_t done, std::size_t total) { progress.show(bar_progress(done, total, what)); };
}

struct CalibrateOptions {
  std::string backend = "mpi";
  std::string output;  // -o: the profile's file
  backend::CalibrationOptions measurement;
};

int command_calibrate(CalibrateOptions options, bool quiet, std::ostream& out, std::ostream& err) {
  if (options.backend != "mpi" && options.backend != "nccl") {
    print_error(err, "error", "--backend " + options.backend + ": expected mpi (CPU ranks) or nccl (one GPU per rank)");
    return kExitBadInput;
  }
  const backend::MpiSession mpi(nullptr, nullptr);
  backend::Calibration calibration;
  try {
    TerminalProgress progress(err, std::chrono::milliseconds(500), quiet);  // rank 0's
    options.measurement.progress = bar_on(progress, "measurements");
    calibration = options.backend == "nccl" ? backend::calibrate_gpus(options.measurement)
                                            : backend::calibrate(options.measurement);
  } catch (const backend::ExecutionError& error) {
    if (mpi.rank() == 0) print_error(err, "cannot calibrate", error.what());
    return kExitBadInput;
  }
  if (mpi.rank() != 0) return 0;
  const std::string profile = hardware_profile_toml(calibration);
  if (!options.output.empty()) write_file_atomically(options.output, [&](std::ostream& file) { file << profile; });
  out << profile;
  return 0;
}

// A simulation's line: share of the ops done, the simulated clock, events per second and the
// time left at the rate so far; `elapsed_s` counts from the start of this run (a simulation
// starts again when the network sets replicas apart).
std::string simulation_progress(const sim::SimulationProgress& progress, double elapsed_s) {
  const std::string run = progress.run > 1 ? fmt::format(" (run {}: the network set replicas apart)", progress.run) : "";
  if (progress.events == 0) return fmt::format("simulating{}: starting", run);
  const double left_s = progress.fraction_done > 0 ? elapsed_s * (1 - progress.fraction_done) / progress.fraction_done : 0;
  const double events_per_s = static_cast<double>(progress.events) / std::max(elapsed_s, 1e-9);
  return fmt::format("simulating{}: {:.0f} % of ops, simulated {}, {} events/s, about {} left", run,
                     100 * progress.fraction_done,
                     trace::human_seconds(progress.simulated_s),
                     events_per_s >= 1e6 ? fmt::format("{:.2f} M", events_per_s / 1e6) : fmt::format("{:.0f}", events_per_s),
                     trace::human_seconds(left_s));
}

// A command that simulates in one process, started by mpirun: N processes would run N identical
// simulations into one folder. Only the first process prints the refusal.
struct MpirunRefusal {
  std::string message;
  bool print;
};
std::optional<MpirunRefusal> refuse_under_mpirun(const std::string& command) {
  const std::optional<LaunchedProcess> launched = launched_by_mpirun();
  if (!launched) return std::nullopt;
  return MpirunRefusal{
      fmt::format("dtsim {} simulates in one process, and mpirun started {} processes: they would all run the same "
                  "simulation into one folder (run it without mpirun{})",
                  command, launched->size,
                  command == "run" ? ", or add --backend mpi|nccl to execute the scenario for real"
                                   : "; dtsim sweep and dtsim search share their simulations out under mpirun"),
      launched->rank == 0};
}

int command_run(const RunOptions& options, std::ostream& out, std::ostream& err) {
  const ScenarioDocument document = open_document(options);
  Scenario scenario = document.read();
  note_points_not_run(scenario, options, "simulated");
  if (!options.trace_ranks.empty()) {
    std::string why;
    const auto selection = parse_trace_selection(options.trace_ranks, &why);
    if (!selection) throw ScenarioError("--trace-ranks " + options.trace_ranks, "", why, "e.g. --trace-ranks 0-7,critical");
    scenario.trace = *selection;
    scenario.trace.origin = "--trace-ranks " + options.trace_ranks;
  }
  if (!options.timeline) scenario.trace = TraceSelection::none();
  RunResult result;
  {
    TerminalProgress progress(err, std::chrono::seconds(1), options.quiet);
    double run_started_s = 0;
    const auto show = [&](const sim::SimulationProgress& now) {
      if (now.events == 0) run_started_s = progress.elapsed_s();  // a run starts (there may be several)
      progress.show(simulation_progress(now, progress.elapsed_s() - run_started_s));
      return true;
    };
    // 0 is "no check" to the simulator: a machine known to have nothing left passes 1 byte.
    const auto available = options.memory_check ? available_memory_bytes() : std::nullopt;
    const std::uint64_t memory = available ? std::max<std::uint64_t>(*available, 1) : 0;
    result = progress.on_terminal() ? run_scenario(scenario, show, memory) : run_scenario(scenario, {}, memory);
    if (result.report.oom) {
      progress.show("out of memory: simulating the remedies that apply");
      // One at a time unless -j says otherwise: each needs about the memory of the run itself.
      result.memory_remedies = memory_remedies(document, scenario, result.report, options.threads == 0 ? 1 : options.threads);
    }
  }
  const auto directory = output_directory(options, scenario.name);
  write_outputs(result, directory, options.timeline);
  print_result(result, directory, options.json, out, options.timeline);
  if (options.timeline) {
    constexpr std::uintmax_t kLargeTimelineBytes = 200'000'000;  // where Perfetto and dtsim-view slow down
    std::error_code ignored;
    if (const std::uintmax_t bytes = std::filesystem::file_size(directory / "timeline.json", ignored);
        bytes > kLargeTimelineBytes && bytes != static_cast<std::uintmax_t>(-1)) {
      err << fmt::format("dtsim: warning: timeline.json is {:.0f} MB ({}); --trace-ranks first-node,critical or "
                         "--no-timeline keep it small\n",
                         static_cast<double>(bytes) / 1e6, traced_text(result.simulation.timeline));
    }
  }
  return result.report.oom && options.fail_on_oom ? kExitOutOfMemory : 0;
}

// Under mpirun every process reads the scenario and runs its share of the simulations; the
// first one prints and writes the result (the others' output is dropped by run_cli).
int command_sweep(const RunOptions& options, const backend::WorkSplit& split, std::ostream& out, std::ostream& err) {
  ScenarioDocument document = open_document(options);
  for (const std::string& axis : options.sweep_axes) document.add_sweep_axis(axis, "--sweep");
  if (document.sweep_axes().empty()) {
    throw ScenarioError(options.scenario, "sweep", "the scenario has no [sweep] table",
                        "add e.g. [sweep] \"ddp.bucket_cap_mb\" = [10, 25, 50], or --sweep ddp.bucket_cap_mb=10,25,50");
  }
  SweepResult result;
  {
    TerminalProgress progress(err, std::chrono::milliseconds(500), options.quiet);
    result = run_sweep(document, options.threads, bar_on(progress, split.size() > 1 ? "points of this process" : "points"),
                       split);
  }
  if (result.name.empty()) {  // no point read: nothing ran, nothing to write
    // The first point's own error: where (a --sweep argument, a [sweep] value or the file), the
    // key and its suggestion.
    const ScenarioError& first = *result.first_read_error;
    throw ScenarioError(
        first.location(), first.key(),
        fmt::format("{}; no point of the sweep is valid (the first: {})", first.message(),
                    fmt::join(result.rows.front().provenance.overrides, ", ")),
        first.hint());
  }
  if (!split.leader()) return 0;
  const auto directory = output_directory(options, result.name);
  prepare_output_directory(directory);
  write_file_atomically(directory / "sweep.csv", [&](std::ostream& file) { file << sweep_csv(result); });
  if (options.json) {
    out << sweep_json(result, options.sweep_view);
    return 0;
  }
  out << format_sweep_table(result, options.sweep_view);
  out << fmt::format("\n{} points; CSV: {}\n", result.rows.size(), (directory / "sweep.csv").string());
  return 0;
}

int command_advise(const RunOptions& options, std::ostream& out, std::ostream& err) {
  Advice advice;
  {
    TerminalProgress progress(err, std::chrono::milliseconds(500), options.quiet);
    advice = advise(open_document(options), options.threads, bar_on(progress, "layouts simulated"));
  }
  out << (options.json ? advice_json(advice).dump(2) + "\n" : format_advice(advice));
  return 0;
}

int command_search(RunOptions options, const backend::WorkSplit& split, std::ostream& out, std::ostream& err) {
  const ScenarioDocument document = open_document(options);
  options.search.threads = options.threads;
  options.search.split = split;
  if (options.with_advise) {
    for (const AdviceCandidate& candidate : propose_layouts(document).candidates) {
      if (candidate.rejected.empty()) options.search.also_simulate.emplace_back(candidate.layout, candidate.overrides);
    }
  }
  SearchResult result;
  {
    TerminalProgress progress(err, std::chrono::milliseconds(500), options.quiet);
    progress.show("estimating every layout");
    result = search(document, options.search,
                    bar_on(progress, split.size() > 1 ? "layouts simulated by this process" : "layouts simulated"));
  }
  if (!split.leader()) return 0;
  const auto directory = output_directory(options, result.name) / "search";
  prepare_output_directory(directory);
  write_file_atomically(directory / "search.csv", [&](std::ostream& file) { file << search_csv(result); });
  if (options.json) {
    out << search_json(result).dump(2) << "\n";
    return 0;
  }
  out << format_search(result, options.search_rows);
  out << fmt::format("\nevery layout that fits, with its estimate: {}\n",
                     (directory / "search.csv").string());
  return 0;
}

int command_validate(const RunOptions& options, const std::string& manifest, std::ostream& out, std::ostream& err) {
  ValidationResult result;
  {
    TerminalProgress progress(err, std::chrono::milliseconds(500), options.quiet);
    result = run_validation(manifest, options.threads, bar_on(progress, "published runs simulated"));
  }
  out << (options.json ? validation_to_json(result).dump(2) + "\n" : format_validation(result));
  return 0;
}

// The fraction of memory bandwidth the compute model gives a memory-bound op of `kind`.
double memory_fraction(const sim::ComputeModel& model, program::ComputeKind kind, program::Phase phase) {
  program::ComputeOp op;
  op.kind = kind;
  op.phase = phase;
  return model.memory_efficiency(op);
}

// The compute model's GEMM curve for one GPU: the bf16 rate of square n³ GEMMs (tiles, waves,
// the memory traffic and the launch overhead included) and the fraction of peak it is; the
// main loop's ceiling and how much of its memory traffic stays exposed, the memory-bound
// kernels' rates and the attention kernels' at 2k.
std::string gemm_curve(const topology::DeviceSpec& device) {
  using program::ComputeKind;
  using program::Phase;
  const sim::ComputeModel model(device, sim::ComputeEfficiency::preset());
  std::string text = fmt::format(
      "main loop {:.3f} (traffic exposed {:.2f}), memory: streaming {:.3f} norm {:.3f}/{:.3f} "
      "softmax {:.3f}, attention at s 2048",
      model.gemm_ceiling(program::DType::kBF16), model.exposed_gemm_traffic(),
      memory_fraction(model, ComputeKind::kElementwise, Phase::kForward),
      memory_fraction(model, ComputeKind::kNorm, Phase::kForward),
      memory_fraction(model, ComputeKind::kNorm, Phase::kBackward),
      memory_fraction(model, ComputeKind::kSoftmax, Phase::kForward));
  for (const auto& [name, kernel] : topology::attention_kernels()) {
    sim::ComputeEfficiency efficiency = sim::ComputeEfficiency::preset();
    efficiency.attention_kernel = kernel;
    text += fmt::format(" {} {:.3f}", name, sim::ComputeModel(device, efficiency).attention_efficiency(2048));
  }
  text += ":";
  for (const std::int64_t n : {512, 1024, 2048, 4096, 8192, 16384}) {
    program::ComputeOp gemm;
    gemm.kind = program::ComputeKind::kMatmul;
    gemm.shape = program::Shape::of({1, n, n, n});
    const double size = static_cast<double>(n);
    gemm.flops = 2 * size * size * size;
    gemm.bytes = 3 * size * size * static_cast<double>(program::dtype_bytes(gemm.dtype));
    const double rate = gemm.flops / model.seconds(gemm);
    text += fmt::format("  {} {:.0f} ({:.0f} %)", n, rate / 1e12, 100 * rate / device.bf16_flops);
  }
  return text;
}

int command_presets(std::ostream& out) {
  out << "GPUs ([cluster.gpu] preset):\n";
  for (const auto& name : topology::device_preset_names()) {
    out << fmt::format("  {:<16}{}\n", name, topology::describe(*topology::device_preset(name)));
  }
  out << "\nCompute model per GPU: efficiencies, then bf16 n × n × n GEMMs in TFLOP/s and % of peak (sim/compute):\n";
  for (const auto& name : topology::device_preset_names()) {
    out << fmt::format("  {:<16}{}\n", name, gemm_curve(*topology::device_preset(name)));
  }
  out << "\nNodes ([cluster] node):\n";
  for (const auto& name : topology::node_preset_names()) {
    out << fmt::format("  {:<16}{}\n", name, topology::describe(*topology::node_preset(name)));
  }
  out << "\nFabrics ([cluster.fabric] preset):\n";
  for (const auto& name : topology::fabric_preset_names()) {
    out << fmt::format("  {:<16}{}\n", name, topology::describe(*topology::fabric_preset(name)));
  }
  out << "\nParameter-server NICs ([cluster.parameter_servers] nic):\n";
  for (const auto& name : topology::server_nic_preset_names()) {
    out << fmt::format("  {:<16}{:.0f} Gb/s\n", name,
                       topology::server_nic_preset(name)->bandwidth * 8 / 1e9);
  }
  out << "\nModels ([model] preset):\n";
  for (const auto& name : strategies::model_preset_names()) {
    out << fmt::format("  {:<19}{}\n", name, strategies::describe(*strategies::model_preset(name)));
  }
  return 0;
}

struct CompareOptions {
  std::string predicted;
  std::string measured;
  std::string json_output;
  std::string ops_csv;
  bool json = false;
};

// Whether two paths name one file (existing or not, through links and "..").
bool same_file(const std::string& a, const std::string& b) {
  std::error_code error_a, error_b;
  if (std::filesystem::equivalent(a, b, error_a)) return true;
  const std::filesystem::path canonical_a = std::filesystem::weakly_canonical(a, error_a);
  const std::filesystem::path canonical_b = std::filesystem::weakly_canonical(b, error_b);
  return !error_a && !error_b && canonical_a == canonical_b;
}

int command_compare(const CompareOptions& options, std::ostream& out, std::ostream& err) {
  // An output written over an input, or over the other output, would lose what it replaces.
  const std::pair<const char*, const std::string*> outputs_asked[] = {
      {"-o", &options.json_output}, {"--ops-csv", &options.ops_csv}};
  for (const auto& [option, output] : outputs_asked) {
    if (output->empty()) continue;
    for (const std::string* other : {&options.predicted, &options.measured, &options.ops_csv}) {
      if (other != output && !other->empty() && same_file(*output, *other)) {
        print_error(
            err, "error",
            fmt::format("{} {}: the same file as {}, which the comparison {}; write it elsewhere",
                        option, *output, *other,
                        other == &options.ops_csv ? "writes too" : "reads"));
        return kExitBadInput;
      }
    }
  }
  trace::Timeline predicted, measured;
  try {
    predicted = trace::read_chrome_trace_file(options.predicted);
    measured = trace::read_chrome_trace_file(options.measured);
  } catch (const trace::TraceFormatError& error) {
    print_error(err, "error", error.what());  // names the file
    return kExitBadInput;
  }
  for (const auto& [path, timeline] : {std::pair{&options.predicted, &predicted}, std::pair{&options.measured, &measured}}) {
    if (timeline->spans.empty()) {
      print_error(err, "error", *path + ": the trace holds no spans (no \"X\" or \"B\"/\"E\" events) to compare");
      return kExitBadInput;
    }
  }
  const trace::Comparison comparison = trace::compare_runs(predicted, measured);
  const nlohmann::json json = trace::comparison_to_json(comparison);
  std::vector<FileWriter> outputs;  // written together: both or neither
  if (!options.json_output.empty()) {
    outputs.push_back({options.json_output, [&](std::ostream& file) { file << json.dump(2) << "\n"; }});
  }
  if (!options.ops_csv.empty()) {
    outputs.push_back({options.ops_csv, [&](std::ostream& file) { file << trace::matched_ops_csv(comparison); }});
  }
  write_files_atomically(outputs);
  out << (options.json ? json.dump(2) + "\n" : trace::format_comparison(comparison, options.predicted, options.measured));
  return 0;
}

// The options of every command that reads a scenario: the file (before or after the options),
// --set, --profile and, for those that write files, -o.
void add_scenario_options(CLI::App& command, RunOptions& options, bool writes_output) {
  command.add_option("scenario", options.scenario, "scenario TOML file")->required();
  if (writes_output) {
    command
        .add_option("-o,--output", options.output,
                    "output directory (default: out/<scenario name>/, and what-if-<digest>/ under "
                    "it for a run "
                    "changed by --set, --profile or --sweep)")
        ->check(kNotEmpty)
        ->check(kNotAFile);
  }
  // One value per --set, so that `run --set k=v FILE` leaves FILE to the scenario.
  command.add_option("--set", options.overrides, "override a scenario key: key=value (repeatable)")
      ->allow_extra_args(false);
  command.add_option("--profile", options.profile,
                     "a hardware profile TOML (as dtsim calibrate writes) in place of the scenario's hardware_profile");
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"dtsim — simulate distributed training steps on a described cluster"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dtsim " + dtsim_version());
  app.fallthrough();  // dtsim's own options after the command too: `dtsim run --quiet FILE`
  RunOptions options;
  app.add_flag("-q,--quiet", options.quiet, "no progress lines (they show only on a terminal anyway)");
  std::string help_topic;
  CLI::App* help = app.add_subcommand("help", "dtsim's help, or a command's: dtsim help run");
  help->add_option("command", help_topic, "the command to describe");

  CLI::App* run = app.add_subcommand("run", "simulate one training step of a scenario");
  add_scenario_options(*run, options, /*writes_output=*/true);
  run->add_flag("--json", options.json, "print the report as JSON instead of text");
  run->add_flag("--fail-on-oom", options.fail_on_oom,
                "exit 3 when the step does not fit in GPU memory (the outputs are written all the same)");
  run->add_option("-j,--threads", options.threads,
                  "simulations of an OOM's remedies at once (default 1: each needs about the run's own memory)");
  CLI::Option* trace_ranks =
      run->add_option("--trace-ranks", options.trace_ranks,
                      "ranks whose spans the timeline keeps: e.g. 0-7,896 | first-node,critical | "
                      "critical | all | none "
                      "(default: all up to 64 ranks, else the first node, each pipeline stage's "
                      "first rank and the critical rank)")
          ->check(kNotEmpty);
  run->add_flag("--no-timeline{false}", options.timeline,
                "write report.json only, no timeline.json")
      ->excludes(trace_ranks);
  CLI::Option* backend = run->add_option("--backend", options.backend,
                                         "execute for real instead of simulating, under mpirun -np "
                                         "<ranks>: mpi (CPU ranks) or nccl (one GPU per rank)");
  // What only a real run reads: without --backend each would be ignored without a word.
  run->add_option("--timeout", options.timeout_s,
                  "with --backend: abort the job when an op waits longer (seconds)")
      ->check(kTimeout)
      ->capture_default_str()
      ->needs(backend);
  run->add_option(
         "--runs", options.measured_runs,
         "with --backend: recorded runs after the warm-up; the timeline is the median run's")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str()
      ->needs(backend);
  run->add_option("--inject-fault", options.inject_fault,
                  "with --backend, for tests: KIND:RANK:OP, KIND hang, crash, oom or corrupt (e.g. "
                  "hang:1:ddp.bucket0.all_reduce)")
      ->needs(backend);
  run->add_flag("--no-memory-check{false}", options.memory_check,
                "run even when the estimate of the memory the simulation needs exceeds what this machine has available");
  run->add_flag("--verify", options.verify,
                "with --backend: check every collective's result and the tensor-parallel forward "
                "against the unsharded one")
      ->needs(backend);
  run->add_flag("--share-gpu", options.share_gpu,
                "with --backend nccl: let more ranks than GPUs share a host's GPUs (each rank a "
                "host of its own to NCCL, "
                "connected over sockets): NCCL on a one-GPU machine")
      ->needs(backend);

  CLI::App* sweep = app.add_subcommand("sweep", "simulate every point of the scenario's [sweep] table");
  add_scenario_options(*sweep, options, /*writes_output=*/true);
  sweep->add_option("-j,--threads", options.threads, "worker threads (default: all cores)");
  sweep->add_option("--sweep", options.sweep_axes,
                    "sweep a key over values: key=v1,v2,... (repeatable; crossed with the file's [sweep], replacing "
                    "an axis of the same key)")
      ->allow_extra_args(false);
  sweep->add_option("--sort", options.sweep_view.sort_by, "sort the rows by a figure, best first")
      ->check(CLI::IsMember(sweep_sort_columns()));
  sweep
      ->add_option("--top", options.sweep_view.top,
                   "show only the first N rows (the CSV keeps every point)")
      ->check(CLI::Range(std::int64_t{1}, kMostRows));
  sweep->add_flag("--json", options.json, "print the rows as JSON instead of a table");

  CLI::App* search_command = app.add_subcommand(
      "search", "every valid layout for the scenario's model and GPUs, estimated in closed form; the best simulated, ranked");
  add_scenario_options(*search_command, options, /*writes_output=*/true);
  search_command->add_option("-j,--threads", options.threads, "worker threads (default: all cores)");
  search_command
      ->add_option("--simulate", options.search.simulate,
                   "how many of the best estimates to simulate (default 8)")
      ->check(CLI::Range(std::int64_t{0}, kMostRows));
  search_command
      ->add_option("--sample", options.search.sample,
                   "more layouts simulated, spread over the ranking, to measure the estimate's "
                   "rank correlation (default 8)")
      ->check(CLI::Range(std::int64_t{0}, kMostRows));
  search_command->add_option("--objective", options.search.objective, "tokens (tokens/s, default) or cost (per token)")
      ->check(CLI::IsMember({"tokens", "cost"}));
  search_command->add_option("--top", options.search_rows, "rows of the ranked table (default 10)")
      ->check(CLI::Range(std::int64_t{1}, kMostRows));
  search_command->add_flag("--with-advise", options.with_advise, "simulate the layouts dtsim advise proposes beside them");
  search_command->add_flag("--json", options.json, "print the ranking and the Pareto front as JSON");
  CLI::App* advise_command =
      app.add_subcommand("advise", "apply the chapter's parallelism rules, simulate the layouts they propose, rank them");
  add_scenario_options(*advise_command, options, /*writes_output=*/false);
  advise_command->add_option("-j,--threads", options.threads, "worker threads (default: all cores)");
  advise_command->add_flag("--json", options.json, "print the rules and ranked candidates as JSON");

  CollectiveBenchOptions bench;
  CLI::App* collective = app.add_subcommand(
      "collective", "nccl-tests for the simulator: one collective over a range of sizes");
  collective
      ->add_option("--op", bench.op,
                   "all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, "
                   "barrier, or sendrecv (rank r to r + 1)")
      ->capture_default_str();
  collective
      ->add_option(
          "--algo", bench.algorithms,
          "ring, tree, hd, hier, direct, nvls, collnet, nvls_tree or auto; several with commas")
      ->capture_default_str();
  CLI::Option* ranks = collective->add_option("--ranks", bench.ranks, "ranks 0..N-1 of the cluster")->capture_default_str();
  collective->add_option("--nodes", bench.nodes, "every GPU of N nodes, in place of --ranks")
      ->excludes(ranks)
      ->check(CLI::Range(1, std::numeric_limits<std::int32_t>::max()));
  CLI::Option* sizes = collective->add_option("--sizes", bench.sizes, "MIN:MAX bytes, K/M/G suffixes")->capture_default_str();
  CLI::Option* min_bytes =
      collective
          ->add_option("-b,--minbytes", bench.min_bytes,
                       "smallest size, as nccl-tests' -b (in place of --sizes' MIN)")
          ->excludes(sizes);
  CLI::Option* max_bytes =
      collective
          ->add_option("-e,--maxbytes", bench.max_bytes,
                       "largest size, as nccl-tests' -e (in place of --sizes' MAX)")
          ->excludes(sizes);
  CLI::Option* factor = collective
                            ->add_option("-f,--factor,--stepfactor", bench.factor,
                                         "size multiplier between rows, as nccl-tests' -f")
                            ->capture_default_str();
  CLI::Option* topology = collective
                              ->add_option("--topology", bench.topology,
                                           "node preset (nodes as many as the ranks need)")
                              ->capture_default_str();
  CLI::Option* fabric =
      collective->add_option("--fabric", bench.fabric, "fabric preset")->capture_default_str();
  CLI::Option* sharp = collective->add_flag(
      "--sharp", bench.sharp, "the fabric's switches reduce in the network (SHARP), for collnet");
  collective->add_option("--scenario", bench.scenario, "take the cluster from a scenario instead")
      ->excludes(topology)
      ->excludes(fabric)
      ->excludes(sharp);
  collective->add_option("--model", bench.model, "network model: analytic, flow or packet")->capture_default_str();
  collective->add_option("--library", bench.library, "collective library priced: nccl (its algorithms, protocols and latencies) or ideal (any schedule, α-β)")
      ->capture_default_str();
  collective->add_option("--channels", bench.channels, "rings per ring collective: auto or a number")
      ->capture_default_str();
  collective
      ->add_option("--compare", bench.compare,
                   "an nccl-tests log (all_reduce_perf's output): its sizes, and its in-place "
                   "times beside dtsim's")
      ->excludes(sizes)
      ->excludes(min_bytes)
      ->excludes(max_bytes)
      ->excludes(factor);
  bool collective_json = false;
  collective->add_flag("--json", collective_json, "print the rows as JSON instead of a table");

  CompareOptions compare_options;
  CLI::App* compare = app.add_subcommand(
      "compare", "errors of a predicted (simulated) timeline against a measured one: step, categories, per op");
  compare->add_option("predicted", compare_options.predicted, "predicted timeline (Chrome trace)")->required();
  compare->add_option("measured", compare_options.measured,
                      "measured timeline: a dtsim timeline or a PyTorch profiler trace")->required();
  compare->add_flag("--json", compare_options.json, "print the comparison as JSON instead of a table");
  compare
      ->add_option("-o,--output", compare_options.json_output,
                   "also write the JSON comparison to this file")
      ->check(kNotEmpty);
  compare
      ->add_option("--ops-csv", compare_options.ops_csv,
                   "also write every matched op (rank, name, occurrence, kind, durations, error) "
                   "to this CSV file")
      ->check(kNotEmpty);

  CalibrateOptions calibrate_options;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "measure this machine (GEMM rate and memory bandwidth by size, α and β per link class, collective efficiency) as a hardware profile");
  calibrate->add_option("--backend", calibrate_options.backend, "mpi (CPU ranks) or nccl (one GPU per rank), under mpirun")
      ->capture_default_str();
  calibrate->add_option("-o,--output", calibrate_options.output, "write the profile TOML here too");
  calibrate
      ->add_option("--timeout", calibrate_options.measurement.timeout_s,
                   "abort the job when a step waits longer on another rank or the GPU (seconds)")
      ->check(kTimeout)
      ->capture_default_str();
  calibrate->add_flag("--share-gpu", calibrate_options.measurement.share_gpu,
                      "with --backend nccl: let more ranks than GPUs share a host's GPUs (see run --share-gpu)");

  std::string manifest = "tests/validation/cases.toml";
  CLI::App* validate = app.add_subcommand(
      "validate", "the validation suite: published measurements of real runs beside dtsim's predictions");
  validate->add_option("manifest", manifest, "validation manifest ([[case]] tables)")->capture_default_str();
  validate->add_flag("--json", options.json, "print the cases and summaries as JSON");
  validate->add_option("-j,--threads", options.threads, "worker threads (default: all cores)");

  CLI::App* presets = app.add_subcommand("presets", "list hardware and model presets");
  CLI::App* info = app.add_subcommand("info", "what this build can execute: MPI, BLAS, CUDA, NCCL, GPUs");

  // Under mpirun only the first process prints what every process would print alike.
  const std::optional<LaunchedProcess> launched = launched_by_mpirun();
  std::ostringstream follower_output;
  const bool follower = launched && launched->rank != 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    std::ostream& shown = follower ? follower_output : err;
    if (error.get_exit_code() == 0) return app.exit(error, follower ? follower_output : out, shown);  // --help, --version
    std::string message = error.what();
    // CLI11's "Could not convert: --ranks = 1e12": say what the option takes instead.
    constexpr std::string_view kConversion = "Could not convert: ";
    if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr &&
        message.rfind(kConversion, 0) == 0) {
      const std::string assignment = message.substr(kConversion.size());
      const std::string name = assignment.substr(0, assignment.find(" = "));
      const CLI::App* command =
          app.get_subcommands().empty() ? &app : app.get_subcommands().front();
      if (const CLI::Option* option = command->get_option_no_throw(name); option != nullptr) {
        const std::string type = option->get_type_name();
        const std::string expected = type == "UINT"    ? "a whole number ≥ 0"
                                     : type == "INT"   ? "a whole number"
                                     : type == "FLOAT" ? "a number"
                                                       : type;
        message = fmt::format("{}: expected {}", assignment, expected);
      }
    }
    if (argc > 1 && argv[1][0] != '-' &&
        app.get_subcommands().empty()) {  // `dtsim rnu`: name the word
      std::vector<std::string> commands;
      for (const CLI::App* command : app.get_subcommands({}))
        commands.push_back(command->get_name());
      const std::string closest = closest_match(argv[1], commands);
      message = fmt::format("unknown command \"{}\"{}", argv[1],
                            closest.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", closest));
    }
    print_error(shown, "error", message + " (see dtsim --help, or dtsim <command> --help)");
    return kExitBadInput;
  }
  // `mpirun -np N dtsim sweep|search`: MPI for the command's life, the simulations shared out
  // over the processes; only the first one's output is shown (the others' would repeat it).
  std::optional<backend::MpiSession> mpi;
  backend::WorkSplit split;
  if ((*sweep || *search_command) && launched) {
    mpi.emplace(nullptr, nullptr);
    split = backend::WorkSplit::world();
  }
  std::ostream& shown_out = split.leader() ? out : follower_output;
  std::ostream& shown_err = split.leader() ? err : follower_output;
  const auto run_command = [&]() -> int {
    // A scenario too large for the simulator is named by its file (its keys are each valid).
    const auto too_large = [&](const std::exception& error) {
      print_error(shown_err, "error", (options.scenario.empty() ? "" : options.scenario + ": ") + error.what());
      return kExitBadInput;
    };
    try {
      if (*help) {
        // help() of a parsed app describes the command it ran (help itself): format the one asked for.
        const CLI::App* topic = help_topic.empty() ? &app : app.get_subcommand(help_topic);
        shown_out << topic->get_formatter()->make_help(topic, topic == &app ? "dtsim" : "dtsim " + help_topic, CLI::AppFormatMode::Normal);
        return 0;
      }
      if ((*run && options.backend.empty()) || *advise_command || *validate) {
        if (const auto refusal = refuse_under_mpirun(app.get_subcommands().front()->get_name())) {
          if (refusal->print) print_error(shown_err, "error", refusal->message);
          return kExitBadInput;
        }
      }
      if (*run) return options.backend.empty() ? command_run(options, shown_out, shown_err) : command_execute(options, shown_out, shown_err);
      if (*sweep) return command_sweep(options, split, shown_out, shown_err);
      if (*advise_command) return command_advise(options, shown_out, shown_err);
      if (*search_command) return command_search(options, split, shown_out, shown_err);
      if (*compare) return command_compare(compare_options, shown_out, shown_err);
      if (*calibrate) return command_calibrate(calibrate_options, options.quiet, shown_out, shown_err);
      if (*collective) {
        const CollectiveBenchResult result = run_collective_bench(bench);
        shown_out << (collective_json ? collective_bench_json(result) : format_collective_bench(result));
        return 0;
      }
      if (*validate) return command_validate(options, manifest, shown_out, shown_err);
      if (*presets) return command_presets(shown_out);
      if (*info) {
        shown_out << backend::describe(backend::probe_capabilities());
        return 0;
      }
    } catch (const ScenarioError& error) {
      print_error(shown_err, "error", error.what());
      return kExitBadInput;
    } catch (const CLI::OptionNotFound&) {  // dtsim help NAME
      print_error(shown_err, "error", "help: no command \"" + help_topic + "\" (see dtsim --help)");
      return kExitBadInput;
    } catch (const OutputError& error) {
      print_error(
          shown_err, "error",
          std::string(error.what()) + (*compare ? " (hint: -o and --ops-csv name files to write)"
                                                : " (hint: -o names a directory to write)"));
      return kExitBadInput;
    } catch (const strategies::ProgramTooLarge& error) {
      return too_large(error);
    } catch (const sim::NetworkWorkLimit& error) {
      return too_large(error);
    } catch (const sim::SimulationTooLong& error) {
      return too_large(error);
    } catch (const sim::NotEnoughMemory& error) {
      return too_large(error);
    } catch (const sim::SimulationError& error) {
      print_error(shown_err, "simulation failed", error.what());
      return kExitFailure;
    } catch (const backend::ExecutionError& error) {  // a process of a shared sweep or search stopped
      print_error(shown_err, "error", error.what());
      return kExitBadInput;
    } catch (const std::exception& error) {
      print_error(shown_err, "internal error", error.what());
      return kExitFailure;
    }
    return kExitFailure;
  };
  const int code = run_command();
  // A process that stopped before the shared simulations meets the others on its way out, so
  // that they stop too (run_all meets them there); it says why when the first process did not
  // stop as well (then that one has said it).
  if (split.size() > 1 && !split.met()) {
    const std::vector<bool> ready = split.meet(false);
    if (!split.leader() && ready.front()) {
      err << fmt::format("(process {} of {}) {}", launched->rank, launched->size, follower_output.str()) << std::flush;
    }
  }
  return code;
}

}  // namespace scenarios
