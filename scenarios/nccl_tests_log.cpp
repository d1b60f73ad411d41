// Parsing nccl-tests' output (see nccl_tests_log.h).
#include "scenarios/nccl_tests_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <optional>
#include <sstream>

#include "scenarios/scenario.h"
#include "scenarios/scenario_loader.h"

namespace scenarios {
namespace {

constexpr const char* kColumns =
    "nccl-tests' columns: size count type [redop root] time algbw busbw #wrong time algbw busbw "
    "#wrong";

std::vector<std::string> fields(const std::string& line) {
  std::istringstream stream(line);
  std::vector<std::string> out;
  for (std::string field; stream >> field;) out.push_back(field);
  return out;
}

// A non-negative integer, or nothing when `text` is not one (or does not fit).
template <typename Integer>
std::optional<Integer> count(const std::string& text) {
  Integer value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

bool is_type(const std::string& text) {
  return !text.empty() && std::isalpha(static_cast<unsigned char>(text.front())) != 0;
}

// A number, or nothing when `text` is not one.
std::optional<double> number(const std::string& text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Whether a #wrong column reports errors: nccl-tests prints 0 (or 0e+00) when the results
// check out and N/A when it did not check (-c 0).
bool reports_wrong_results(const std::string& text) {
  if (text == "N/A") return false;
  const std::optional<double> wrong = number(text);
  return !wrong || *wrong != 0;
}

// nccl-tests' test names, as dtsim collective --op spells them.
std::string op_of_test(std::string test) {
  if (test.ends_with("_mpi")) test.resize(test.size() - 4);  // the MPI build's binaries
  if (test.ends_with("_perf")) test.resize(test.size() - 5);
  if (test == "alltoall") return "all_to_all";
  return test;
}

}  // namespace

NcclTestsLog parse_nccl_tests_log(std::istream& log, const std::string& name) {
  NcclTestsLog result;
  std::int32_t line_number = 0;
  for (std::string line; std::getline(log, line);) {
    ++line_number;
    const std::vector<std::string> f = fields(line);
    if (f.empty()) continue;
    if (f.front() == "#") {
      const auto rank = f.size() >= 3 && f[1] == "Rank" ? count<std::int32_t>(f[2]) : std::nullopt;
      if (rank && *rank < std::numeric_limits<std::int32_t>::max()) {
        result.ranks = std::max(result.ranks, *rank + 1);
      }
      const auto starting = std::find(f.begin(), f.end(), "starting:");
      if (starting != f.end() && starting + 1 != f.end()) result.op = op_of_test(*(starting + 1));
      continue;
    }
    const auto bytes = f.size() >= 3 ? count<std::int64_t>(f[0]) : std::nullopt;
    if (!bytes || !count<std::int64_t>(f[1]) || !is_type(f[2])) continue;
    const auto out_of_place = f.size() >= 11 ? number(f[f.size() - 8]) : std::nullopt;
    const auto in_place = f.size() >= 11 ? number(f[f.size() - 4]) : std::nullopt;
    if (!out_of_place || !in_place) {
      throw ScenarioError(fmt::format("{}:{}", name, line_number), "--compare",
                          fmt::format("a result row whose times do not read: \"{}\"", line),
                          fmt::format("expected {}", kColumns));
    }
    if (*out_of_place <= 0 || *in_place <= 0) {
      throw ScenarioError(
          fmt::format("{}:{}", name, line_number), "--compare",
          fmt::format("a result row with a time of {} µs out of place and {} µs in place: \"{}\"",
                      f[f.size() - 8], f[f.size() - 4], line),
          "every collective takes some time: a row of 0 is not a measurement; rerun it or drop the "
          "row");
    }
    if (reports_wrong_results(f[f.size() - 5]) || reports_wrong_results(f.back())) {
      throw ScenarioError(
          fmt::format("{}:{}", name, line_number), "--compare",
          fmt::format(
              "nccl-tests found wrong results in this row (#wrong {} out of place, {} in place): "
              "\"{}\"",
              f[f.size() - 5], f.back(), line),
          "the times of a run that computed wrong results are not a reference; rerun it");
    }
    if (*bytes > 0) result.rows.push_back({*bytes, *out_of_place, *in_place, line_number});
  }
  if (result.rows.empty()) {
    throw ScenarioError(
        name, "--compare", "no nccl-tests result rows in this file",
        fmt::format("a log of all_reduce_perf or another *_perf test, with {}", kColumns));
  }
  return result;
}

NcclTestsLog read_nccl_tests_log(const std::string& path) {
  const auto text = read_input_file(path);
  if (const auto* why = std::get_if<std::string_view>(&text)) {
    throw ScenarioError(path, "--compare", std::string(*why), "the path of an nccl-tests log");
  }
  std::istringstream file(std::get<std::string>(text));
  return parse_nccl_tests_log(file, path);
}

}  // namespace scenarios
