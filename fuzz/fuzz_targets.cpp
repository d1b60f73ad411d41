// The fuzz targets (see fuzz_targets.h).
#include "fuzz/fuzz_targets.h"

#include <sstream>
#include <string>
#include <typeinfo>
#include <utility>

#include "scenarios/nccl_tests_log.h"
#include "scenarios/scenario_loader.h"
#include "sim/trace/chrome_trace.h"
#include "sim/trace/comparison.h"

namespace fuzz {

namespace {

// `input` split at the first line that is exactly `separator`: (before, after), or (input, none).
std::pair<std::string_view, std::string_view> split_at_line(std::string_view input, std::string_view separator) {
  const std::string marker = "\n" + std::string(separator) + "\n";
  const std::size_t at = input.find(marker);
  if (at == std::string_view::npos) return {input, {}};
  return {input.substr(0, at + 1), input.substr(at + marker.size())};
}

// Runs `read`; the reader's own error for bad input is fine, anything else is a finding.
template <typename ExpectedError, typename Read>
void expecting(const char* what, Read&& read) {
  try {
    read();
  } catch (const ExpectedError&) {
  } catch (const std::exception& error) {
    throw FuzzFinding(std::string(what) + ": unexpected " + typeid(error).name() + ": " + error.what());
  }
}

trace::Timeline read_trace(std::string_view text) {
  std::istringstream in{std::string(text)};
  return trace::read_chrome_trace(in);
}

}  // namespace

void scenario(std::string_view input) {
  expecting<scenarios::ScenarioError>("scenario", [&] {
    const auto [toml, sets] = split_at_line(input, "#--set");
    scenarios::ScenarioDocument document = scenarios::ScenarioDocument::from_string(std::string(toml), "fuzz.toml");
    std::istringstream lines{std::string(sets)};
    for (std::string assignment; std::getline(lines, assignment);) document.set(assignment, "--set " + assignment);
    document.read();
    document.sweep_axes();
  });
}

void trace(std::string_view input) {
  expecting<trace::TraceFormatError>("trace", [&] { read_trace(input); });
}

void compare(std::string_view input) {
  expecting<trace::TraceFormatError>("compare", [&] {
    const auto [first, second] = split_at_line(input, "#--measured");
    const trace::Timeline predicted = read_trace(first);
    const trace::Timeline measured = second.empty() ? predicted : read_trace(second);
    if (predicted.spans.empty() || measured.spans.empty()) return;  // refused by dtsim compare
    const trace::Comparison comparison = trace::compare_runs(predicted, measured);
    (void)trace::comparison_to_json(comparison).dump();
    (void)trace::format_comparison(comparison, "predicted.json", "measured.json");
    (void)trace::matched_ops_csv(comparison);
  });
}

void nccl_tests_log(std::string_view input) {
  expecting<scenarios::ScenarioError>("nccl_tests_log", [&] {
    std::istringstream log{std::string(input)};
    scenarios::parse_nccl_tests_log(log, "fuzz.log");
  });
}

}  // namespace fuzz
