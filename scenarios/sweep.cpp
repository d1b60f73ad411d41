// Parallel sweep runner and its table/CSV output (see sweep.h).
#include "scenarios/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>

#include "scenarios/run_scenario.h"

namespace scenarios {
namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// A figure rows can be ranked by.
struct SortColumn {
  const char* name;
  double (*value)(const trace::Report&);
  bool lower_is_better;
};

const std::vector<SortColumn>& sort_columns() {
  static const std::vector<SortColumn> columns = {
      {"step_time_s", [](const trace::Report& r) { return r.step_time_s; }, true},
      {"tokens_per_s", [](const trace::Report& r) { return r.tokens_per_s; }, false},
      {"mfu", [](const trace::Report& r) { return r.mfu; }, false},
      {"comm_compute_ratio", [](const trace::Report& r) { return r.comm_compute_ratio; }, true},
      {"overlap_ratio", [](const trace::Report& r) { return r.overlap_ratio; }, false},
      {"exposed_comm_s", [](const trace::Report& r) { return r.exposed_comm_s; }, true},
      {"peak_memory_bytes", [](const trace::Report& r) { return static_cast<double>(r.peak_memory_bytes); }, true},
  };
  return columns;
}

const SortColumn& sort_column(const std::string& name) {
  for (const SortColumn& column : sort_columns()) {
    if (name == column.name) return column;
  }
  return sort_columns().front();  // step time
}

// Whether row a ranks before row b by `column`: rows that ran before invalid ones, then the
// better figure, then point order.
bool ranks_before(const SweepResult& result, const SortColumn& column, std::size_t a, std::size_t b) {
  const SweepRow& x = result.rows[a];
  const SweepRow& y = result.rows[b];
  if (x.invalid.empty() != y.invalid.empty()) return x.invalid.empty();
  if (x.invalid.empty()) {
    const double u = column.value(x.report), v = column.value(y.report);
    if (u != v) return column.lower_is_better ? u < v : u > v;
  }
  return a < b;
}

// The rows to show, in order.
std::vector<std::size_t> shown_rows(const SweepResult& result, const SweepView& view) {
  std::vector<std::size_t> order(result.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (!view.sort_by.empty()) {
    const SortColumn& column = sort_column(view.sort_by);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return ranks_before(result, column, a, b); });
  }
  if (view.top > 0 && order.size() > view.top) order.resize(view.top);
  return order;
}

// The best point that ran and fits, by the view's column; none when no point did.
std::optional<std::size_t> best_row(const SweepResult& result, const SweepView& view) {
  const SortColumn& column = sort_column(view.sort_by);
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    const SweepRow& row = result.rows[i];
    if (!row.invalid.empty() || row.report.oom) continue;
    if (!best || ranks_before(result, column, i, *best)) best = i;
  }
  return best;
}

// "key = value, key = value" of a row's point.
std::string point_text(const SweepResult& result, const SweepRow& row) {
  std::string point;
  for (std::size_t a = 0; a < result.axes.size(); ++a) {
    point += fmt::format("{}{} = {}", a == 0 ? "" : ", ", result.axes[a].key, row.values[a]);
  }
  return point;
}

}  // namespace

std::vector<std::string> sweep_sort_columns() {
  std::vector<std::string> names;
  for (const SortColumn& column : sort_columns()) names.emplace_back(column.name);
  return names;
}

namespace {

// One simulation's outcome as the processes of a split job exchange it (CBOR, so that every
// double arrives bit for bit): its report, or why it failed — `fatal` when the caller takes no
// failures, or the error was not a std::exception.
std::string encode_outcome(const trace::Report& report, const std::string& failed, bool fatal) {
  const nlohmann::json outcome = failed.empty() ? nlohmann::json{{"report", trace::report_to_json(report)}}
                                                : nlohmann::json{{"failed", failed}, {"fatal", fatal}};
  const std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(outcome);
  return {bytes.begin(), bytes.end()};
}

}  // namespace

std::vector<trace::Report> run_all(const std::vector<Scenario>& scenarios, unsigned threads, const Progress& progress,
                                   std::vector<std::string>* failures, const backend::WorkSplit& split) {
  if (split.size() > 1) {
    const std::vector<bool> ready = split.meet(true);
    const auto stopped = std::find(ready.begin(), ready.end(), false);
    if (stopped != ready.end()) {
      throw backend::ExecutionError(fmt::format("process {} of {} stopped before the simulations (its error is above)",
                                                stopped - ready.begin(), ready.size()));
    }
  }
  const std::size_t total = scenarios.size();
  std::vector<std::size_t> share;  // the scenarios this process runs
  for (std::size_t i = 0; i < total; ++i) {
    if (split.mine(i)) share.push_back(i);
  }
  std::vector<trace::Report> reports(total);
  std::vector<std::string> failed(total);
  std::vector<char> fatal(total, 0);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(share.size(), 1)));
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    for (std::size_t n = next++; n < share.size(); n = next++) {
      const std::size_t i = share[n];
      try {
        Scenario untraced = scenarios[i];  // only the report is kept: no spans to record
        untraced.trace = TraceSelection::none();
        reports[i] = run_scenario(untraced).report;
      } catch (const std::exception& error) {
        failed[i] = error.what();  // each thread writes its own points
        fatal[i] = failures == nullptr;
        std::lock_guard lock(failure_mutex);
        if (fatal[i] && !failure) failure = std::current_exception();
      } catch (...) {
        failed[i] = "an unknown error";
        fatal[i] = 1;
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
      ++done;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  while (done.load() < share.size()) {
    if (progress) progress(done.load(), share.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (std::thread& thread : pool) thread.join();
  if (progress) progress(share.size(), share.size());
  if (split.size() > 1) {
    // Every process reaches the exchange, whatever failed, and then holds every outcome.
    std::vector<std::string> outcomes(total);
    for (const std::size_t i : share) outcomes[i] = encode_outcome(reports[i], failed[i], fatal[i] != 0);
    outcomes = split.gather(std::move(outcomes));
    failure = nullptr;
    for (std::size_t i = 0; i < total; ++i) {
      const nlohmann::json outcome = nlohmann::json::from_cbor(outcomes[i]);
      if (outcome.contains("report")) {
        reports[i] = trace::report_from_json(outcome["report"]);
        continue;
      }
      failed[i] = outcome["failed"].get<std::string>();
      if (outcome["fatal"].get<bool>() && !failure) failure = std::make_exception_ptr(std::runtime_error(failed[i]));
    }
  }
  if (failure) std::rethrow_exception(failure);
  if (failures != nullptr) *failures = std::move(failed);
  return reports;
}

SweepResult run_sweep(const ScenarioDocument& document, unsigned threads, const Progress& progress,
                      const backend::WorkSplit& split) {
  SweepResult result;
  result.axes = document.sweep_axes();
  const std::vector<ScenarioDocument> points = document.sweep_points();
  const std::size_t total = points.size();
  result.rows.resize(total);
  std::vector<Scenario> scenarios;  // the points that read
  std::vector<std::size_t> row_of;  // their rows
  for (std::size_t row = 0; row < total; ++row) {
    const ScenarioDocument& point = points[row];
    result.rows[row].provenance = {point.file(), point.overrides(), point.hardware_profile(), ""};
    try {
      scenarios.push_back(point.read());
      row_of.push_back(row);
      result.rows[row].provenance = provenance_of(scenarios.back());
    } catch (const ScenarioError& error) {
      if (error.kind() == ErrorKind::kValue) throw;  // a typo, not a point that does not fit
      result.rows[row].invalid = error.what();
      if (!result.first_read_error) result.first_read_error = error;
    }
  }
  // Axis values of each point, in the same row-major order sweep_points uses.
  for (std::size_t row = 0; row < total; ++row) {
    std::size_t rest = row;
    result.rows[row].values.resize(result.axes.size());
    for (std::size_t a = result.axes.size(); a-- > 0;) {
      const std::size_t n = result.axes[a].values.size();
      result.rows[row].values[a] = result.axes[a].values[rest % n];
      rest /= n;
    }
  }
  std::vector<std::string> failures;
  std::vector<trace::Report> reports = run_all(scenarios, threads, progress, &failures, split);
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    SweepRow& row = result.rows[row_of[i]];
    row.report = std::move(reports[i]);
    row.invalid = std::move(failures[i]);
    row.warnings = scenarios[i].warnings;
    if (row.invalid.empty()) {
      const bool fp8 = scenarios[i].lowering.training.precision == strategies::Precision::kFP8;
      if (std::string mfu = trace::mfu_above_peak_warning(row.report.mfu, fp8); !mfu.empty()) {
        row.warnings.push_back(std::move(mfu));
      }
    }
  }
  if (!scenarios.empty()) result.name = scenarios.front().name;
  return result;
}

std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& line : rows) width[c] = std::max(width[c], line[c].size());
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& line) {
    for (std::size_t c = 0; c < line.size(); ++c) {
      out += fmt::format("{:>{}}{}", line[c], width[c], c + 1 == line.size() ? "\n" : "  ");
    }
  };
  emit(header);
  for (const auto& line : rows) emit(line);
  return out;
}

std::vector<std::string> report_columns() {
  return {"step time", "tokens/s", "MFU", "R", "overlap", "exposed comm", "peak memory", "fits"};
}

std::vector<std::string> report_cells(const trace::Report& r) {
  return {fmt::format("{:.2f} ms", r.step_time_s * 1e3),
          fmt::format("{:.0f}", r.tokens_per_s),
          fmt::format("{:.1f} %", r.mfu * 100),
          fmt::format("{:.3f}", r.comm_compute_ratio),
          fmt::format("{:.1f} %", r.overlap_ratio * 100),
          fmt::format("{:.2f} ms", r.exposed_comm_s * 1e3),
          fmt::format("{:.2f} GB", static_cast<double>(r.peak_memory_bytes) / 1e9),
          r.oom ? "OOM" : "yes"};
}

std::string format_sweep_table(const SweepResult& result, const SweepView& view) {
  std::vector<std::string> header;
  for (const SweepAxis& axis : result.axes) header.push_back(axis.key);
  for (std::string& column : report_columns()) header.push_back(std::move(column));
  header.emplace_back("best");
  const std::optional<std::size_t> best = best_row(result, view);
  std::vector<std::vector<std::string>> cells;
  std::string reasons;
  for (std::size_t index : shown_rows(result, view)) {
    const SweepRow& row = result.rows[index];
    std::vector<std::string> line = row.values;
    if (row.invalid.empty()) {
      for (std::string& cell : report_cells(row.report)) line.push_back(std::move(cell));
      line.emplace_back(best == index ? "*" : "");
    } else {
      line.resize(header.size(), "—");
      line[header.size() - 2] = "invalid";
      line.back() = "";
      reasons += fmt::format("invalid: {}: {}\n", point_text(result, row), row.invalid);
    }
    cells.push_back(std::move(line));
  }
  // Each warning once, with the points it concerns, in the order first met.
  std::vector<std::pair<std::string, std::string>> warned;  // warning, its points
  for (std::size_t index : shown_rows(result, view)) {
    for (const std::string& warning : result.rows[index].warnings) {
      auto found = std::find_if(warned.begin(), warned.end(), [&](const auto& w) { return w.first == warning; });
      if (found == warned.end()) found = warned.insert(warned.end(), {warning, ""});
      found->second += (found->second.empty() ? "" : "; ") + point_text(result, result.rows[index]);
    }
  }
  std::string warnings;
  for (const auto& [warning, points] : warned) warnings += fmt::format("warning: {}: {}\n", points, warning);
  return format_table(header, cells) + (reasons.empty() ? "" : "\n" + reasons) + (warnings.empty() ? "" : "\n" + warnings);
}

std::string sweep_json(const SweepResult& result, const SweepView& view) {
  const std::optional<std::size_t> best = best_row(result, view);
  nlohmann::json json;
  json["axes"] = nlohmann::json::array();
  for (const SweepAxis& axis : result.axes) json["axes"].push_back(axis.key);
  json["sorted_by"] = view.sort_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(view.sort_by);
  json["points"] = result.rows.size();
  json["rows"] = nlohmann::json::array();
  for (std::size_t index : shown_rows(result, view)) {
    const SweepRow& row = result.rows[index];
    nlohmann::json entry;
    entry["point"] = index;
    for (std::size_t a = 0; a < result.axes.size(); ++a) entry["values"][result.axes[a].key] = row.values[a];
    if (row.invalid.empty()) {
      for (const SortColumn& column : sort_columns()) entry[column.name] = column.value(row.report);
      entry["oom"] = row.report.oom;
    } else {
      entry["invalid"] = row.invalid;
    }
    entry["best"] = best == index;
    entry["warnings"] = row.warnings;
    entry["provenance"] = provenance_json(row.provenance);
    json["rows"].push_back(std::move(entry));
  }
  return json.dump(2) + "\n";
}

namespace {

// A swept value as a spreadsheet reads it: a TOML string without its quotes (where it has no
// escapes), anything else as written.
std::string csv_value(const std::string& toml_text) {
  const bool plain_string = toml_text.size() >= 2 && toml_text.front() == '"' &&
                            toml_text.back() == '"' && toml_text.find('\\') == std::string::npos;
  return plain_string ? toml_text.substr(1, toml_text.size() - 2) : toml_text;
}

}  // namespace

std::string sweep_csv(const SweepResult& result) {
  std::string out;
  for (const SweepAxis& axis : result.axes) out += csv_field(axis.key) + ",";
  out += "step_time_s,tokens_per_s,mfu,compute_time_s,comm_time_s,exposed_comm_s,"
         "comm_compute_ratio,overlap_ratio,peak_memory_bytes,oom,invalid,"
         "scenario,overrides,hardware_profile,network_model,dtsim_version\n";
  for (const SweepRow& row : result.rows) {
    for (const std::string& value : row.values) out += csv_field(csv_value(value)) + ",";
    const trace::Report& r = row.report;
    out += row.invalid.empty()
               ? fmt::format("{},{},{},{},{},{},{},{},{},{},,", r.step_time_s, r.tokens_per_s, r.mfu, r.compute_time_s,
                             r.comm_time_s, r.exposed_comm_s, r.comm_compute_ratio, r.overlap_ratio,
                             r.peak_memory_bytes, r.oom ? "true" : "false")
               : ",,,,,,,,,," + csv_field(row.invalid) + ",";  // no figures: empty fields, and the reason
    std::string overrides;
    for (const std::string& assignment : row.provenance.overrides) overrides += (overrides.empty() ? "" : "; ") + assignment;
    out += fmt::format("{},{},{},{},{}\n", csv_field(row.provenance.scenario), csv_field(overrides),
                       csv_field(row.provenance.hardware_profile), csv_field(row.provenance.network_model),
                       csv_field(dtsim_version()));
  }
  return out;
}

}  // namespace scenarios
