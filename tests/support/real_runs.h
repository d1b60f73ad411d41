// Helpers for the tests of real runs (tests/backend on CPU ranks, tests/gpu on GPUs): run a
// command line, launch dtsim under mpirun, check that a measured timeline ran exactly the
// simulated Program, and compare the two with `dtsim compare`. The including test defines
// DTSIM_SOURCE_DIR, DTSIM_PATH and MPIEXEC_PATH; the environment variables DTSIM_SOURCE_DIR,
// DTSIM_PATH and DTSIM_MPIEXEC override them (a prebuilt bundle on another machine:
// tests/gpu/make_device_bundle.sh).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "sim/trace/chrome_trace.h"

namespace test_support {

struct CommandResult {
  int code = -1;
  std::string output;  // stdout and stderr
};

inline CommandResult run(const std::string& command) {
  CommandResult result;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + " 2>&1").c_str(), "r"), pclose);
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) result.output += buffer.data();
  const int status = pclose(pipe.release());
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

inline std::string from_environment(const char* variable, const char* built_in) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? value : built_in;
}
inline std::string source_dir() { return from_environment("DTSIM_SOURCE_DIR", DTSIM_SOURCE_DIR); }
inline std::string dtsim() { return from_environment("DTSIM_PATH", DTSIM_PATH); }

// "mpirun … -np N PROGRAM": as root in containers and CI, more ranks than cores on small machines.
inline std::string mpirun_program(int ranks, const std::string& program) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + from_environment("DTSIM_MPIEXEC", MPIEXEC_PATH) +
         " --oversubscribe -np " + std::to_string(ranks) + " " + program;
}
// "mpirun … -np N dtsim".
inline std::string mpirun(int ranks) { return mpirun_program(ranks, dtsim()); }

// The measured timeline ran every op of the predicted one exactly once, on the same rank and
// stream, with the same name and category, and no op started before its dependencies ended.
inline void expect_same_ops_in_dependency_order(const std::filesystem::path& measured_trace,
                                                const std::filesystem::path& predicted_trace) {
  const trace::Timeline measured = trace::read_chrome_trace_file(measured_trace.string());
  const trace::Timeline predicted = trace::read_chrome_trace_file(predicted_trace.string());
  ASSERT_EQ(measured.ranks.size(), predicted.ranks.size());
  ASSERT_EQ(measured.spans.size(), predicted.spans.size());
  std::map<std::pair<std::int32_t, std::int64_t>, const trace::Span*> by_op;
  for (const trace::Span& span : measured.spans) {
    EXPECT_GE(span.end_ps, span.start_ps);
    EXPECT_TRUE(by_op.emplace(std::pair{span.rank, span.op}, &span).second) << "op " << span.op << " ran twice";
  }
  for (const trace::Span& expected : predicted.spans) {
    const auto found = by_op.find({expected.rank, expected.op});
    ASSERT_NE(found, by_op.end()) << predicted.strings.at(expected.name) << " never ran";
    EXPECT_EQ(measured.strings.at(found->second->name), predicted.strings.at(expected.name));
    EXPECT_EQ(measured.streams[found->second->stream], predicted.streams[expected.stream]);
    EXPECT_EQ(found->second->category, expected.category);
  }
  ASSERT_EQ(measured.dependencies, predicted.dependencies);
  for (const trace::OpDependency& dependency : measured.dependencies) {
    EXPECT_GE(by_op.at({dependency.rank, dependency.op})->start_ps, by_op.at({dependency.rank, dependency.after_op})->end_ps)
        << "rank " << dependency.rank << " op " << dependency.op << " started before op " << dependency.after_op << " ended";
  }
}

// `dtsim compare PREDICTED MEASURED --json`, its figures printed on one line after `label`.
inline nlohmann::json compare_and_print(const std::string& label, const std::filesystem::path& predicted_trace,
                                        const std::filesystem::path& measured_trace) {
  const CommandResult comparison =
      run(dtsim() + " compare " + predicted_trace.string() + " " + measured_trace.string() + " --json");
  EXPECT_EQ(comparison.code, 0) << comparison.output;
  if (comparison.code != 0) return {};
  const auto json = nlohmann::json::parse(comparison.output);
  std::ostringstream line;
  line.precision(3);
  line << label << ":";
  for (const auto& figure : json["figures"]) {
    if (!figure["error"].is_null()) line << "  " << figure["figure"].get<std::string>() << " " << 100 * figure["error"].get<double>() << " %";
  }
  line << "  per-op MAPE " << 100 * json["ops"]["mape"].get<double>() << " %\n  by op kind (summed error, MAPE):";
  for (const auto& [kind, errors] : json["ops"]["by_kind"].items()) {
    line << "  " << kind << " " << 100 * errors["error"].get<double>() << " % (" << 100 * errors["mape"].get<double>() << " %)";
  }
  line << "\n";
  std::fputs(line.str().c_str(), stdout);
  return json;
}

}  // namespace test_support
