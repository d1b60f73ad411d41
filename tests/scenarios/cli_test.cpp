// The dtsim command line in-process: exit codes, outputs written or not, JSON and CSV.
#include "scenarios/cli.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "scenarios/machine_memory.h"
#include "tests/support/temporary_directory.h"

namespace {

namespace fs = std::filesystem;
const std::string kSource = DTSIM_SOURCE_DIR;

struct CliRun {
  int code;
  std::string out;
  std::string err;
};

CliRun dtsim(std::vector<std::string> args) {
  args.insert(args.begin(), "dtsim");
  std::vector<const char*> argv;
  for (const auto& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out, err;
  const int code = scenarios::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

// The result rows of a `dtsim collective` table: its lines not starting with '#'.
std::vector<std::string> table_rows(const std::string& table) {
  std::istringstream lines(table);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.front() != '#') rows.push_back(line);
  }
  return rows;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// directory_ is the output folder a test asks for; it does not exist until dtsim makes it.
class CliTest : public testing::Test {
 protected:
  test_support::TemporaryDirectory scratch_{"dtsim-cli"};
  fs::path directory_ = scratch_ / "out";
};

TEST_F(CliTest, SearchRanksSimulatedLayoutsAndWritesEveryEstimateAsCsv) {
  // Eight GPUs: whichever layouts the sample lands on, each simulation stays small (on 64 GPUs a
  // sampled ring-attention layout of 20 M ops took 2.6 s, over 300 s under the sanitizers).
  const CliRun run = dtsim({"search", kSource + "/scenarios/c1_7b_ddp_8xh100.toml", "-o", directory_.string(), "--simulate",
                            "2", "--sample", "3", "--with-advise", "--quiet"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("layouts pass the divisibility rules"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("rank correlation (Spearman)"), std::string::npos);
  EXPECT_NE(run.out.find("Pareto front"), std::string::npos);
  EXPECT_NE(run.out.find("advise: "), std::string::npos);  // its candidates simulated beside
  const std::string csv = slurp(directory_ / "search" / "search.csv");
  EXPECT_EQ(csv.rfind("layout,strategy,dp,tp,pp", 0), 0u);
  EXPECT_GT(std::count(csv.begin(), csv.end(), '\n'), 100);
  const CliRun cost = dtsim({"search", kSource + "/scenarios/c1_7b_ddp_8xh100.toml", "-o", directory_.string(),
                             "--objective", "cost", "--quiet"});
  EXPECT_EQ(cost.code, 2);
  EXPECT_NE(cost.err.find("search.gpu_hour_price"), std::string::npos) << cost.err;
}

TEST_F(CliTest, RunWritesTheTimelineAndTheReport) {
  const CliRun run = dtsim({"run", kSource + "/scenarios/c1_7b_ddp_8xh100.toml", "-o", directory_.string()});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("step time"), std::string::npos);
  EXPECT_NE(run.out.find("R = T_comm / T_comp"), std::string::npos);
  const auto report = nlohmann::json::parse(slurp(directory_ / "report.json"));
  EXPECT_GT(report["step_time_s"].get<double>(), 0);
  const auto timeline = nlohmann::json::parse(slurp(directory_ / "timeline.json"));
  EXPECT_GT(timeline["traceEvents"].size(), 1000u);
  EXPECT_FALSE(fs::exists(directory_ / "timeline.json.partial"));
}

TEST_F(CliTest, JsonFlagPrintsTheReportAsJson) {
  const CliRun run = dtsim({"run", kSource + "/scenarios/m1_7b_ddp_memory.toml", "-o", directory_.string(), "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  const auto report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["oom"], true);
  EXPECT_EQ(report["peak_memory_breakdown_bytes"]["optimizer_states"], 56'000'000'000);
}

// A step that does not fit: --fail-on-oom makes it exit 3 (outputs written all the same), and
// the remedies listed are those that apply to this scenario, each with what it saves, simulated.
TEST_F(CliTest, OutOfMemoryListsTheRemediesThatApplyWithWhatEachSaves) {
  const std::string m1 = kSource + "/scenarios/m1_7b_ddp_memory.toml";
  EXPECT_EQ(dtsim({"run", m1, "-o", directory_.string()}).code, 0);
  const CliRun failing = dtsim({"run", m1, "--fail-on-oom", "-o", directory_.string()});
  EXPECT_EQ(failing.code, 3) << failing.err;
  EXPECT_NE(failing.out.find("remedies that apply here"), std::string::npos) << failing.out;
  const auto report = nlohmann::json::parse(slurp(directory_ / "report.json"));
  ASSERT_TRUE(report["oom"].get<bool>());
  std::map<std::string, nlohmann::json> remedies;
  for (const auto& remedy : report["oom_remedies"]) remedies[remedy["remedy"]] = remedy;
  // Chapter §6.2.7: ZeRO-1 shards the fp32 master weights and Adam's two moments (12 bytes per
  // parameter) over the 8 data-parallel ranks: 12 × 7e9 × 7/8 = 73.5 GB less at the peak.
  ASSERT_TRUE(remedies.contains("ZeRO-1 (optimizer states sharded)")) << report["oom_remedies"];
  EXPECT_NEAR(remedies["ZeRO-1 (optimizer states sharded)"]["saved_bytes"].get<double>(), 12 * 7e9 * 7 / 8, 1e6);
  EXPECT_TRUE(remedies["ZeRO-1 (optimizer states sharded)"]["fits"].get<bool>());
  for (const auto& [name, remedy] : remedies) {
    EXPECT_EQ(name.find("mixed precision"), std::string::npos) << "already mixed precision";
    EXPECT_EQ(remedy["saved_bytes"].get<std::int64_t>(),
              report["peak_memory_bytes"].get<std::int64_t>() - remedy["peak_memory_bytes"].get<std::int64_t>());
  }

  // Already FSDP in mixed precision: neither is offered again; FSDP's own knobs are. (With a
  // process group of their own the backward's unlimited all-gathers run ahead of the
  // reduce-scatters, and their parameters pile up.)
  const fs::path fsdp = scratch_ / "fsdp70.toml";
  std::ofstream(fsdp) << "[cluster]\nnodes = 1\n[model]\npreset = \"llama-2-70b\"\n[training]\nglobal_batch = 16\n"
                         "micro_batch = 2\nsequence_length = 4096\nprecision = \"mixed\"\n[parallel]\n"
                         "strategy = \"fsdp\"\n[fsdp]\nlimit_all_gathers = false\nseparate_reduce_scatter_group = true\n";
  const CliRun sharded = dtsim({"run", fsdp.string(), "--json", "-o", directory_.string()});
  ASSERT_EQ(sharded.code, 0) << sharded.err;
  const auto json = nlohmann::json::parse(sharded.out);
  ASSERT_TRUE(json["oom"].get<bool>());
  std::set<std::string> names;
  for (const auto& remedy : json["oom_remedies"]) names.insert(remedy["remedy"].get<std::string>());
  EXPECT_TRUE(names.contains("FSDP limit_all_gathers")) << json["oom_remedies"];
  EXPECT_TRUE(names.contains("FSDP CPU offload")) << json["oom_remedies"];
  for (const std::string& name : names) {
    EXPECT_EQ(name.find("FULL_SHARD"), std::string::npos) << name;
    EXPECT_EQ(name.find("ZeRO"), std::string::npos) << name;
    EXPECT_EQ(name.find("precision"), std::string::npos) << name;
  }
}

// The ranks (pids) that have spans in a timeline.json.
std::set<int> traced_pids(const fs::path& timeline) {
  std::set<int> pids;
  const auto trace = nlohmann::json::parse(slurp(timeline));
  for (const auto& event : trace["traceEvents"]) {
    if (event.value("ph", "") == "X") pids.insert(event["pid"].get<int>());
  }
  return pids;
}

// Timeline size under control: by default the first node and the critical rank the report
// describes; --trace-ranks picks ranks, ranges, first-node, critical, all or none; --no-timeline
// writes the report alone. The simulation is the same whatever is traced.
TEST_F(CliTest, TraceRanksChoosesWhatTheTimelineHoldsAndTheCriticalRankIsInItByDefault) {
  // 128 ranks of a tiny model with seeded stragglers: the slowest rank sets the step.
  const fs::path scenario = scratch_ / "stragglers.toml";
  std::ofstream(scenario) << "[cluster]\nnodes = 16\n[model]\npreset = \"tiny-256\"\n[training]\nglobal_batch = 128\n"
                             "micro_batch = 1\n[parallel]\nstrategy = \"ddp\"\n[stragglers]\n"
                             "distribution = \"lognormal\"\nsigma = 0.2\nseed = 11\n";
  const auto run = [&](std::vector<std::string> extra, const std::string& folder) {
    std::vector<std::string> args = {"run", scenario.string(), "-o", (scratch_ / folder).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun result = dtsim(args);
    EXPECT_EQ(result.code, 0) << result.err;
    return nlohmann::json::parse(slurp(scratch_ / folder / "report.json"));
  };
  const auto report = run({}, "auto");
  const int critical = report["critical_rank"].get<int>();
  std::set<int> expected = {0, 1, 2, 3, 4, 5, 6, 7, critical};
  EXPECT_EQ(traced_pids(scratch_ / "auto" / "timeline.json"), expected);

  run({"--trace-ranks", "0-2,100"}, "listed");
  EXPECT_EQ(traced_pids(scratch_ / "listed" / "timeline.json"), (std::set<int>{0, 1, 2, 100}));
  run({"--trace-ranks", "critical"}, "critical");
  EXPECT_EQ(traced_pids(scratch_ / "critical" / "timeline.json"), (std::set<int>{critical}));
  const auto untraced = run({"--trace-ranks", "none"}, "none");
  EXPECT_TRUE(traced_pids(scratch_ / "none" / "timeline.json").empty());
  EXPECT_EQ(untraced["step_time_s"], report["step_time_s"]);
  EXPECT_EQ(untraced["critical_rank"], critical);
  const auto bare = run({"--no-timeline"}, "bare");
  EXPECT_FALSE(fs::exists(scratch_ / "bare" / "timeline.json"));
  EXPECT_FALSE(bare.contains("timeline_digest"));
  EXPECT_EQ(bare["step_time_s"], report["step_time_s"]);

  for (const std::string bad : {"0-7,x", "7-3", "0-200"}) {
    const CliRun refused = dtsim({"run", scenario.string(), "--trace-ranks", bad, "-o", directory_.string()});
    EXPECT_EQ(refused.code, 2) << bad;
    EXPECT_NE(refused.err.find("--trace-ranks " + bad), std::string::npos) << refused.err;  // not the file
  }
  // A report written alone: the timeline an earlier run left in the folder goes.
  ASSERT_TRUE(fs::exists(scratch_ / "auto" / "timeline.json"));
  run({"--no-timeline"}, "auto");
  EXPECT_FALSE(fs::exists(scratch_ / "auto" / "timeline.json"));
  EXPECT_FALSE(fs::exists(directory_));
}

// A timeline past 200 MB is written, with a warning that gives its size and the way out.
TEST_F(CliTest, ALargeTimelineIsWrittenWithAWarning) {
  const CliRun large = dtsim({"run", kSource + "/scenarios/ddp_llama2_70b_1024gpu.toml", "--trace-ranks", "0-399", "-o",
                              directory_.string()});
  ASSERT_EQ(large.code, 0) << large.err;
  EXPECT_GT(fs::file_size(directory_ / "timeline.json"), 200'000'000u);
  EXPECT_NE(large.err.find("dtsim: warning: timeline.json is "), std::string::npos) << large.err;
  EXPECT_NE(large.err.find("--no-timeline"), std::string::npos) << large.err;
  const CliRun small = dtsim({"run", kSource + "/scenarios/ddp_llama2_70b_1024gpu.toml", "-o", directory_.string()});
  ASSERT_EQ(small.code, 0) << small.err;
  EXPECT_TRUE(small.err.empty()) << small.err;
}

// The header shows the hardware as it is after overrides (a NIC set to 200 Gb/s is not "NDR
// 400"); an implausible value is a warning naming its key; a sweep row above 100 % MFU says so.
TEST_F(CliTest, TheHeaderShowsOverriddenHardwareAndImplausibleValuesAreWarnedAbout) {
  const std::string default_toml = kSource + "/scenarios/default.toml";
  const CliRun slower = dtsim({"run", default_toml, "--set", "cluster.fabric.nic.bandwidth_gbit_s=200", "--json", "-o",
                               directory_.string()});
  ASSERT_EQ(slower.code, 0) << slower.err;
  const std::string title = nlohmann::json::parse(slower.out)["title"];
  EXPECT_NE(title.find("8 × 200 Gb/s NICs per node"), std::string::npos) << title;
  EXPECT_EQ(title.find("400"), std::string::npos) << title;

  const CliRun odd = dtsim({"run", default_toml, "--set", "cluster.gpu.memory_gb=141e9", "-o", directory_.string()});
  ASSERT_EQ(odd.code, 0) << odd.err;
  EXPECT_NE(odd.out.find("! --set cluster.gpu.memory_gb=141e9: cluster.gpu.memory_gb = 1.41e+11 GB is implausible"),
            std::string::npos)
      << odd.out;

  // C2 imposes 0.2 s and 0.4 s of compute: the 0.2 s step runs above the H100's peak.
  const CliRun sweep = dtsim({"sweep", kSource + "/scenarios/c2_7b_ddp_comm_compute_ratio.toml", "--json", "-o",
                              directory_.string()});
  ASSERT_EQ(sweep.code, 0) << sweep.err;
  int warned = 0;
  const auto rows = nlohmann::json::parse(sweep.out);
  for (const auto& row : rows["rows"]) {
    const bool above_peak = row["mfu"].get<double>() > 1;
    EXPECT_EQ(row["warnings"].size(), above_peak ? 1u : 0u) << row;
    if (above_peak) {
      EXPECT_EQ(row["warnings"][0].get<std::string>().rfind("MFU ", 0), 0u) << row;
    }
    warned += above_peak ? 1 : 0;
  }
  EXPECT_EQ(warned, 1);
  const CliRun table = dtsim({"sweep", kSource + "/scenarios/c2_7b_ddp_comm_compute_ratio.toml", "-o", directory_.string()});
  EXPECT_NE(table.out.find("warning: compute.step_compute_time_s = 0.2: MFU "), std::string::npos) << table.out;
}

// compare states its sign convention and warns when the two timelines are not the same job.
TEST_F(CliTest, CompareStatesItsConventionAndWarnsWhenTheRunsDiffer) {
  ASSERT_EQ(dtsim({"run", kSource + "/scenarios/c1_7b_ddp_8xh100.toml", "-o", (scratch_ / "seven").string()}).code, 0);
  ASSERT_EQ(dtsim({"run", kSource + "/scenarios/c3_70b_ddp_64gpu.toml", "-o", (scratch_ / "seventy").string()}).code, 0);
  const std::string seven = (scratch_ / "seven" / "timeline.json").string();
  const std::string seventy = (scratch_ / "seventy" / "timeline.json").string();
  const CliRun same = dtsim({"compare", seven, seven});
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_NE(same.out.find("error = (predicted − measured) / measured"), std::string::npos) << same.out;
  EXPECT_EQ(same.out.find("warning:"), std::string::npos) << same.out;
  const CliRun differ = dtsim({"compare", seven, seventy, "--json"});
  ASSERT_EQ(differ.code, 0) << differ.err;
  const auto json = nlohmann::json::parse(differ.out);
  EXPECT_EQ(json["error"], "(predicted - measured) / measured");
  ASSERT_EQ(json["warnings"].size(), 2u) << json["warnings"];
  EXPECT_NE(json["warnings"][0].get<std::string>().find("has 8 ranks and the measurement has 64"), std::string::npos);
  EXPECT_NE(json["warnings"][1].get<std::string>().find("different models"), std::string::npos);
  // A trace of the first node's ranks only is of the same 64-rank job, but its ranks are matched
  // by position: said so, not that the jobs differ.
  ASSERT_EQ(dtsim({"run", kSource + "/scenarios/c3_70b_ddp_64gpu.toml", "-o",
                   (scratch_ / "node").string(), "--trace-ranks", "first-node"})
                .code,
            0);
  const CliRun partial =
      dtsim({"compare", (scratch_ / "node" / "timeline.json").string(), seventy});
  ASSERT_EQ(partial.code, 0) << partial.err;
  EXPECT_EQ(partial.out.find("not the same job"), std::string::npos) << partial.out;
  EXPECT_NE(partial.out.find("holds 8 of the job's 64 ranks"), std::string::npos) << partial.out;
  // The same preset with other dimensions is another model (only the preset's name was compared).
  ASSERT_EQ(dtsim({"run", kSource + "/scenarios/c1_7b_ddp_8xh100.toml", "--set", "model.layers=4",
                   "-o", (scratch_ / "four").string()})
                .code,
            0);
  const CliRun shallower =
      dtsim({"compare", seven, (scratch_ / "four" / "timeline.json").string()});
  ASSERT_EQ(shallower.code, 0) << shallower.err;
  EXPECT_NE(shallower.out.find("different model dimensions: Llama-2-7B: 32 layers"),
            std::string::npos)
      << shallower.out;
}

// compare never writes over what it reads or over its other output, and a FIFO for an input is
// refused at once: -o or --ops-csv naming an input replaced the measured trace with the CSV, and
// a FIFO with no writer waited forever.
TEST_F(CliTest, CompareNeitherOverwritesItsInputsNorWaitsOnAFifo) {
  ASSERT_EQ(dtsim({"run", kSource + "/scenarios/c1_7b_ddp_8xh100.toml", "-o",
                   (scratch_ / "seven").string()})
                .code,
            0);
  const fs::path trace = scratch_ / "seven" / "timeline.json";
  const std::string before = slurp(trace);
  const auto expect_refused = [&](const std::vector<std::string>& args,
                                  const std::string& message) {
    std::vector<std::string> command = {"compare", trace.string(), trace.string()};
    command.insert(command.end(), args.begin(), args.end());
    const CliRun run = dtsim(command);
    EXPECT_EQ(run.code, 2) << args.back();
    EXPECT_NE(run.err.find(message), std::string::npos) << run.err;
  };
  expect_refused({"--ops-csv", trace.string()}, "the same file as");
  expect_refused({"-o", (scratch_ / "seven" / ".." / "seven" / "timeline.json").string()},
                 "which the comparison reads");
  expect_refused({"-o", (scratch_ / "both").string(), "--ops-csv", (scratch_ / "both").string()},
                 "which the comparison writes too");
  EXPECT_EQ(slurp(trace), before);
  EXPECT_FALSE(fs::exists(scratch_ / "both"));
  const fs::path fifo = scratch_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const CliRun from_fifo = dtsim({"compare", trace.string(), fifo.string()});
  EXPECT_EQ(from_fifo.code, 2);
  EXPECT_NE(from_fifo.err.find("not a regular file"), std::string::npos) << from_fifo.err;
}

// Options a simulation would ignore or misread are one error each: --verify, --runs,
// --timeout, --inject-fault and --share-gpu without --backend did nothing (and --timeout 1e10 fired
// at once); -o '' wrote to the default directory; --trace-ranks '' meant the default;
// --channels 2.9 ran 2 channels and 1e1 one; a file name that is not UTF-8 ended in an internal
// error of the JSON writer.
TEST_F(CliTest, OptionsASimulationWouldIgnoreOrMisreadAreOneErrorEach) {
  const std::string tiny = kSource + "/scenarios/real/tiny_ddp_2ranks.toml";
  const auto expect_error = [&](const std::vector<std::string>& args, const std::string& message) {
    const CliRun run = dtsim(args);
    EXPECT_EQ(run.code, 2) << args.back();
    EXPECT_NE(run.err.find(message), std::string::npos) << run.err;
    EXPECT_FALSE(fs::exists(directory_)) << args.back();
  };
  for (const std::string option : {"--verify", "--share-gpu"}) {
    expect_error({"run", tiny, "-o", directory_.string(), option}, option + " requires --backend");
  }
  for (const std::string option : {"--runs", "--timeout"}) {
    expect_error({"run", tiny, "-o", directory_.string(), option, "3"},
                 option + " requires --backend");
  }
  expect_error({"run", tiny, "-o", directory_.string(), "--inject-fault", "hang:1:x"},
               "--inject-fault requires --backend");
  // 1e10 s overflowed the watchdog's deadline, which then fired at once; NaN passed the check.
  for (const std::string seconds : {"1e10", "nan", "0", "inf", "3x", "+-3"}) {
    expect_error({"run", tiny, "--backend", "mpi", "-o", directory_.string(), "--timeout", seconds},
                 "expected seconds from 0.001 to 1e+06, got " + seconds);
    expect_error({"calibrate", "--timeout", seconds},
                 "expected seconds from 0.001 to 1e+06, got " + seconds);
  }
  expect_error({"run", tiny, "-o", ""}, "expected a value, got \"\"");
  expect_error({"run", tiny, "-o", directory_.string(), "--trace-ranks", ""},
               "expected a value, got \"\"");
  for (const std::string channels : {"2.9", "1e1", "x"}) {
    expect_error(
        {"collective", "--ranks", "16", "--sizes", "1G:1G", "--algo", "ring", "--channels",
         channels},
        "--channels: expected \"auto\" or a whole number of rings >= 1, got \"" + channels + "\"");
  }
  const fs::path badly_named = scratch_ / "bad\xff.toml";
  fs::copy_file(kSource + "/scenarios/default.toml", badly_named);
  expect_error({"run", badly_named.string(), "-o", directory_.string()},
               "its name is not valid UTF-8");
}

TEST_F(CliTest, BadInputExitsWithTwoAndWritesNothing) {
  for (const char* file : {"unknown_key.toml", "syntax_error.toml", "r2_world_size.toml"}) {
    const CliRun run = dtsim({"run", kSource + "/tests/scenarios/broken/" + file, "-o", directory_.string()});
    EXPECT_EQ(run.code, 2) << file;
    EXPECT_EQ(run.err.rfind("dtsim: error: ", 0), 0u) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;  // one message
    EXPECT_TRUE(run.out.empty());
    EXPECT_FALSE(fs::exists(directory_)) << file;
  }
  // An output directory that is a file is refused as the command line is read, before any
  // simulation (it was refused after one).
  std::ofstream(scratch_ / "a_file") << "kept\n";
  for (const char* command : {"run", "sweep", "search"}) {
    const CliRun run =
        dtsim({command, kSource + "/scenarios/default.toml", "-o", (scratch_ / "a_file").string()});
    EXPECT_EQ(run.code, 2) << command;
    EXPECT_NE(
        run.err.find("a_file exists and is not a directory; -o names a directory to write into"),
        std::string::npos)
        << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << command << ": " << run.err;
    EXPECT_TRUE(run.out.empty()) << command;
  }
  EXPECT_EQ(slurp(scratch_ / "a_file"), "kept\n");
}

// Tracing all 131,072 ranks of the 405B scenario would take ~100 GB: refused up front with the
// estimate and a way out, nothing written. (Skipped on a machine with that much to spare.)
TEST_F(CliTest, ARunThatWouldNotFitInMemoryIsRefusedUpFront) {
  if (scenarios::available_memory_bytes().value_or(0) > 200'000'000'000ull) GTEST_SKIP() << "this machine has room";
  const CliRun run = dtsim({"run", kSource + "/scenarios/llama3_405b_131072gpu.toml", "--set",
                            "output.trace_ranks=\"all\"", "-o", directory_.string()});
  EXPECT_EQ(run.code, 2);
  EXPECT_EQ(run.err.rfind("dtsim: error: ", 0), 0u) << run.err;
  EXPECT_NE(run.err.find("this run would need about"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("the timeline of 131072 traced ranks"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--no-memory-check"), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_FALSE(fs::exists(directory_));
}

TEST_F(CliTest, BadOverrideAndMissingFileExitWithTwo) {
  EXPECT_EQ(dtsim({"run", kSource + "/scenarios/default.toml", "--set", "ddp.bucket_cap_mb=-1", "-o",
                   directory_.string()}).code, 2);
  const CliRun missing = dtsim({"run", "no/such/scenario.toml"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no such file"), std::string::npos);
  EXPECT_FALSE(fs::exists(directory_));
}

TEST_F(CliTest, UsageErrorsExitWithTwoAndHelpWithZero) {
  EXPECT_EQ(dtsim({}).code, 2);
  EXPECT_EQ(dtsim({"fly"}).code, 2);
  EXPECT_NE(dtsim({"rnu"}).err.find("unknown command \"rnu\" (did you mean \"run\"?)"),
            std::string::npos);
  EXPECT_EQ(dtsim({"run"}).code, 2);
  EXPECT_EQ(dtsim({"run", "x.toml", "--no-such-flag"}).code, 2);
  // A value an option cannot take says what it takes (CLI11 said "Could not convert").
  const CliRun exponent = dtsim({"collective", "--op", "all_reduce", "--ranks", "1e12"});
  EXPECT_EQ(exponent.code, 2);
  EXPECT_NE(exponent.err.find("--ranks = 1e12: expected a whole number"), std::string::npos)
      << exponent.err;
  EXPECT_NE(dtsim({"sweep", "x.toml", "-j", "-1"})
                .err.find("--threads = -1: expected a whole number ≥ 0"),
            std::string::npos);
  for (const char* command : {"run", "sweep", "presets", "info"}) {
    const CliRun help = dtsim({command, "--help"});
    EXPECT_EQ(help.code, 0) << command;
    EXPECT_NE(help.out.find("Usage"), std::string::npos) << command;
  }
}

TEST_F(CliTest, SweepPrintsATableAndWritesACsvRowPerPoint) {
  const CliRun run = dtsim({"sweep", kSource + "/scenarios/c2_7b_ddp_comm_compute_ratio.toml", "-o",
                            directory_.string(), "-j", "2"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("compute.step_compute_time_s"), std::string::npos);
  const std::string csv = slurp(directory_ / "sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(csv.rfind("compute.step_compute_time_s,step_time_s,", 0), 0u);
  // A swept string is the value a spreadsheet reads (it was """bf16""", its TOML quotes escaped).
  const CliRun strings =
      dtsim({"sweep", kSource + "/scenarios/c2_7b_ddp_comm_compute_ratio.toml", "--sweep",
             "training.precision=\"bf16\",\"fp32\"", "-o", (scratch_ / "strings").string()});
  ASSERT_EQ(strings.code, 0) << strings.err;
  const std::string string_csv = slurp(scratch_ / "strings" / "sweep.csv");
  EXPECT_NE(string_csv.find(",bf16,"), std::string::npos) << string_csv;
  EXPECT_EQ(string_csv.find("\"\"\"bf16"), std::string::npos) << string_csv;
}

// A sweep runs every point it can: the base need only be valid with each point's values
// (sequence parallelism at tp 1 is not), and a point that is not is a row marked invalid with
// its reason while the others run. With no valid point nothing is written.
TEST_F(CliTest, SweepKeepsGoingPastAnInvalidPoint) {
  const fs::path scenario = scratch_ / "sp_sweep.toml";
  std::ofstream(scenario) << "[cluster]\nnodes = 1\n[model]\npreset = \"llama-2-7b\"\n"
                             "[training]\nglobal_batch = 1\nmicro_batch = 1\n"
                             "[parallel]\ntp = 1\nsequence_parallel = true\n[sweep]\n\"parallel.tp\" = [3, 8]\n";
  const CliRun run = dtsim({"sweep", scenario.string(), "-o", directory_.string()});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("invalid: parallel.tp = 3: "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("does not match the cluster's 8 GPUs"), std::string::npos) << run.out;
  const std::string csv = slurp(directory_ / "sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << csv;
  EXPECT_NE(csv.find("\n3,,,,,,,,,,,"), std::string::npos) << csv;  // no figures, then the reason
  const auto tp8 = csv.find("\n8,");
  ASSERT_NE(tp8, std::string::npos) << csv;
  EXPECT_NE(csv.find(",false,,", tp8), std::string::npos) << csv;  // figures, no reason

  const CliRun none = dtsim({"sweep", scenario.string(), "--set", "cluster.nodes=3", "-o", (scratch_ / "none").string()});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("no point of the sweep is valid"), std::string::npos) << none.err;
  EXPECT_FALSE(fs::exists(scratch_ / "none"));
}

// A --sweep axis with no values, a key swept twice, a swept key dtsim does not know and a swept
// value wrong by itself (a typo: a name the key does not take, text for a number) are one
// error each, naming the --sweep argument and the key with the loader's suggestion: the empty
// list was blamed on line 1 of the file, the second axis silently replaced the first, an
// unknown key came back wrapped in "no point of the sweep is valid" with its hint cut off, and
// a typo'd value was an invalid row with exit 0 beside the points that ran.
TEST_F(CliTest, SweepAxesThatCannotRunAreOneErrorNamingTheArgument) {
  const std::string scenario = kSource + "/scenarios/default.toml";
  const auto expect_error = [&](const std::vector<std::string>& axes, const std::string& message) {
    std::vector<std::string> args = {"sweep", scenario, "-o", directory_.string()};
    for (const std::string& axis : axes) args.insert(args.end(), {"--sweep", axis});
    const CliRun run = dtsim(args);
    EXPECT_EQ(run.code, 2) << axes.back();
    EXPECT_NE(run.err.find(message), std::string::npos) << run.err;
    EXPECT_FALSE(fs::exists(directory_)) << axes.back();
  };
  expect_error({"parallel.tp="}, "--sweep: parallel.tp: no values after '='");
  expect_error({"training.micro_batch=1,2", "training.micro_batch=4"},
               "training.micro_batch: swept twice: --sweep training.micro_batch=4 after --sweep "
               "training.micro_batch=1,2");
  expect_error({"parallel.tpp=1,2"},
               "--sweep parallel.tpp=1,2 (parallel.tpp = 1): parallel.tpp: unknown key in "
               "[parallel]; no point of the "
               "sweep is valid (the first: parallel.tpp=1) (did you mean \"parallel.tp\"?)");
  expect_error(
      {"training.precision=bf16,fp9"},
      "--sweep training.precision=bf16,fp9 (training.precision = \"fp9\"): training.precision: "
      "unknown "
      "value \"fp9\"; expected one of: mixed, bf16, fp16, fp32, fp8 (did you mean \"fp8\"?)");
  expect_error({"ddp.bucket_cap_mb=25,50", "training.global_batch=32,abc"},
               "--sweep training.global_batch=32,abc (training.global_batch = \"abc\"): "
               "training.global_batch: "
               "expected an integer, got \"abc\"");
  // Out of its own range is wrong by itself too; out of range only beside the other values (a
  // degree above the GPU count) stays an invalid row.
  expect_error({"cluster.nodes=1,2,0"},
               "--sweep cluster.nodes=1,2,0 (cluster.nodes = 0): cluster.nodes: expected an "
               "integer between 1 and");
  expect_error({"ddp.bucket_cap_mb=25,-1"},
               "--sweep ddp.bucket_cap_mb=25,-1 (ddp.bucket_cap_mb = -1): ddp.bucket_cap_mb: "
               "expected a positive "
               "number, got -1");
  expect_error({"network.ring_channels=auto,autp"},
               "network.ring_channels: expected \"auto\" or an integer >= 1, got \"autp\"");
  expect_error({"cluster.fabric.spine_oversubscription=1,0.5"},
               "cluster.fabric.spine_oversubscription: expected a ratio >= 1, got 0.5");
  expect_error({"cluster.gpu.bf16_tflops=900,0"},
               "cluster.gpu.bf16_tflops: the device needs a positive bf16 rate");
  expect_error({"stragglers.slow_ranks=[1],[1.5]", "stragglers.slow_factor=1.2"},
               "stragglers.slow_ranks: expected a list of GPU ranks (integers >= 0), got [1.5]");
  expect_error(
      {"stragglers.slow_ranks=[1],[100000, 1.5]", "stragglers.slow_factor=1.2"},
      "stragglers.slow_ranks: expected a list of GPU ranks (integers >= 0), got [100000, 1.5]");
  expect_error({"output.trace_ranks=[0],[-1]"},
               "output.trace_ranks: expected rank numbers, got -1");
  expect_error({"compute.matmul_efficiency_by_size=[[1e9,0.5]],[[1e9,2]]"},
               "compute.matmul_efficiency_by_size: expected [[GEMM FLOPs, efficiency], …]");
  const CliRun beyond_the_gpus =
      dtsim({"sweep", scenario, "--sweep", "stragglers.slow_ranks=[1],[100000]", "--sweep",
             "stragglers.slow_factor=1.2", "-o", directory_.string()});
  EXPECT_EQ(beyond_the_gpus.code, 0) << beyond_the_gpus.err;
  EXPECT_NE(beyond_the_gpus.out.find(
                "invalid: stragglers.slow_factor = 1.2, stragglers.slow_ranks = [100000]"),
            std::string::npos)
      << beyond_the_gpus.out;
  const CliRun too_wide =
      dtsim({"sweep", scenario, "--sweep", "parallel.tp=8,1024", "-o", directory_.string()});
  EXPECT_EQ(too_wide.code, 0) << too_wide.err;
  EXPECT_NE(too_wide.out.find("invalid: parallel.tp = 1024"), std::string::npos) << too_wide.out;
}

// Sweeps from the command line: --sweep axes (crossed with the file's [sweep]), rows sorted by
// a figure, the first N shown, the best row marked, JSON.
TEST_F(CliTest, SweepAxesSortTopBestAndJsonFromTheCommandLine) {
  const std::string c2 = kSource + "/scenarios/c2_7b_ddp_comm_compute_ratio.toml";
  const CliRun crossed = dtsim({"sweep", c2, "--sweep", "ddp.bucket_cap_mb=25,100", "-o", directory_.string()});
  ASSERT_EQ(crossed.code, 0) << crossed.err;
  const std::string csv = slurp(directory_ / "sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5) << csv;  // 2 file values × 2 command-line values
  EXPECT_EQ(std::count(crossed.out.begin(), crossed.out.end(), '*'), 1) << crossed.out;  // one best row

  const CliRun json = dtsim({"sweep", c2, "--sweep", "ddp.bucket_cap_mb=10,25,100", "--sort", "step_time_s", "--top",
                             "4", "--json", "-o", directory_.string()});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto sweep = nlohmann::json::parse(json.out);
  EXPECT_EQ(sweep["points"], 6);
  EXPECT_EQ(sweep["sorted_by"], "step_time_s");
  ASSERT_EQ(sweep["rows"].size(), 4u);
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_LE(sweep["rows"][i - 1]["step_time_s"].get<double>(), sweep["rows"][i]["step_time_s"].get<double>());
  }
  EXPECT_TRUE(sweep["rows"][0]["best"].get<bool>());  // all fit: the fastest is the best
  EXPECT_EQ(sweep["rows"][0]["values"].size(), 2u);

  EXPECT_EQ(dtsim({"sweep", c2, "--sort", "speed", "-o", directory_.string()}).code, 2);
  const CliRun bare = dtsim({"sweep", kSource + "/scenarios/default.toml", "--sweep", "cluster.node=hgx-h100,hgx-h200",
                             "--json", "-o", directory_.string()});
  ASSERT_EQ(bare.code, 0) << bare.err;  // values that are not TOML are bare strings
  EXPECT_EQ(nlohmann::json::parse(bare.out)["rows"].size(), 2u);
  const CliRun spaced = dtsim({"sweep", kSource + "/scenarios/default.toml", "--sweep", "cluster.node=hgx-h100, hgx-h200",
                               "--json", "-o", directory_.string()});
  ASSERT_EQ(spaced.code, 0) << spaced.err;  // items are trimmed
  EXPECT_EQ(nlohmann::json::parse(spaced.out)["rows"][1]["values"]["cluster.node"], "\"hgx-h200\"");
  EXPECT_EQ(dtsim({"sweep", c2, "--sweep", "ddp.bucket_cap_mb=10,,25", "-o", directory_.string()}).code, 2);
}

// Runs in `directory` while it lives.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const fs::path& directory) : previous_(fs::current_path()) { fs::current_path(directory); }
  WorkingDirectory(const WorkingDirectory&) = delete;
  WorkingDirectory& operator=(const WorkingDirectory&) = delete;
  ~WorkingDirectory() { fs::current_path(previous_); }

 private:
  fs::path previous_;
};

// Every result says where it came from (the scenario, every override, the hardware profile,
// the network model, dtsim's version), and a run changed from the command line writes beside its
// baseline, not over it; -o still wins.
TEST_F(CliTest, ResultsRecordTheirProvenanceAndWhatIfsDoNotOverwriteTheBaseline) {
  const std::string c1 = kSource + "/scenarios/c1_7b_ddp_8xh100.toml";
  const WorkingDirectory in_scratch(scratch_.path());
  ASSERT_EQ(dtsim({"run", c1}).code, 0);
  const CliRun what_if = dtsim({"run", "--set", "ddp.bucket_cap_mb=100", "--set", "cluster.nodes=2", c1});  // file last
  ASSERT_EQ(what_if.code, 0) << what_if.err;
  ASSERT_EQ(dtsim({"run", c1, "--set", "ddp.bucket_cap_mb=50"}).code, 0);
  std::vector<fs::path> baselines;
  for (const auto& entry : fs::directory_iterator(scratch_ / "out")) baselines.push_back(entry.path());
  ASSERT_EQ(baselines.size(), 1u);
  const fs::path baseline = baselines.front();
  std::vector<fs::path> what_ifs;
  for (const auto& entry : fs::directory_iterator(baseline)) {
    if (entry.is_directory()) what_ifs.push_back(entry.path());
  }
  ASSERT_EQ(what_ifs.size(), 2u);  // one folder per set of changes, beside the baseline's files
  for (const fs::path& folder : what_ifs) EXPECT_EQ(folder.filename().string().rfind("what-if-", 0), 0u) << folder;

  const auto plain = nlohmann::json::parse(slurp(baseline / "report.json"))["provenance"];
  EXPECT_EQ(plain["scenario"], c1);
  EXPECT_TRUE(plain["overrides"].empty());
  EXPECT_EQ(plain["network_model"], "analytic (ideal)");  // the scenario's [network] and [collectives]
  const std::string version = dtsim({"--version"}).out;
  EXPECT_EQ(version, "dtsim " + plain["dtsim_version"].get<std::string>() + "\n");
  bool found = false;
  for (const fs::path& folder : what_ifs) {
    const auto provenance = nlohmann::json::parse(slurp(folder / "report.json"))["provenance"];
    if (provenance["overrides"].size() != 2) continue;
    found = true;
    EXPECT_EQ(provenance["overrides"][0], "ddp.bucket_cap_mb=100");
    EXPECT_EQ(provenance["overrides"][1], "cluster.nodes=2");
    EXPECT_NE(what_if.out.find((folder / "timeline.json").lexically_relative(scratch_.path()).string()), std::string::npos)
        << what_if.out;
  }
  EXPECT_TRUE(found);

  ASSERT_EQ(dtsim({"run", c1, "--set", "ddp.bucket_cap_mb=50", "-o", "mine"}).code, 0);
  EXPECT_TRUE(fs::exists(scratch_ / "mine" / "report.json"));

  // A sweep's rows carry theirs: the base's overrides, then the point's values.
  ASSERT_EQ(dtsim({"sweep", c1, "--set", "ddp.bucket_cap_mb=50", "--sweep", "cluster.nodes=1,2", "--json"}).code, 0);
  std::vector<fs::path> sweeps;
  for (const auto& entry : fs::recursive_directory_iterator(scratch_ / "out")) {
    if (entry.path().filename() == "sweep.csv") sweeps.push_back(entry.path());
  }
  ASSERT_EQ(sweeps.size(), 1u);
  EXPECT_EQ(sweeps.front().parent_path().parent_path(), baseline);
  const std::string csv = slurp(sweeps.front());
  EXPECT_NE(csv.find(",scenario,overrides,hardware_profile,network_model,dtsim_version\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(c1 + ",ddp.bucket_cap_mb=50; cluster.nodes=2,,analytic (ideal)," +
                     plain["dtsim_version"].get<std::string>() + "\n"),
            std::string::npos)
      << csv;
}

// --profile takes a hardware profile in place of the scenario's, under the scenario's own keys.
TEST_F(CliTest, AProfileFromTheCommandLineReplacesTheScenarios) {
  fs::create_directories(directory_);
  std::ofstream(scratch_ / "slow.toml") << "[cluster.gpu]\nbf16_tflops = 100\nfp16_tflops = 100\n";
  const std::string c1 = kSource + "/scenarios/c1_7b_ddp_8xh100.toml";
  const CliRun plain = dtsim({"run", c1, "--json", "-o", directory_.string()});
  const CliRun slow = dtsim({"run", c1, "--json", "--profile", (scratch_ / "slow.toml").string(), "-o", directory_.string()});
  ASSERT_EQ(slow.code, 0) << slow.err;
  EXPECT_GT(nlohmann::json::parse(slow.out)["step_time_s"].get<double>(),
            1.5 * nlohmann::json::parse(plain.out)["step_time_s"].get<double>());  // 100 of the H100's 989 TFLOP/s
  EXPECT_EQ(nlohmann::json::parse(slurp(directory_ / "report.json"))["provenance"]["hardware_profile"],
            (scratch_ / "slow.toml").string());
  const CliRun missing = dtsim({"run", c1, "--profile", (scratch_ / "none.toml").string(), "-o", directory_.string()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("--profile"), std::string::npos) << missing.err;
  // A profile with no hardware keys, or a scenario given as one (its model, training and
  // parallel keys were taken in under the scenario's own), is refused.
  std::ofstream(scratch_ / "empty.toml") << "[compute]\n";
  const CliRun empty = dtsim(
      {"run", c1, "--profile", (scratch_ / "empty.toml").string(), "-o", directory_.string()});
  EXPECT_EQ(empty.code, 2);
  EXPECT_NE(empty.err.find("empty.toml holds no hardware keys"), std::string::npos) << empty.err;
  const CliRun scenario = dtsim(
      {"run", c1, "--profile", kSource + "/scenarios/default.toml", "-o", directory_.string()});
  EXPECT_EQ(scenario.code, 2);
  EXPECT_NE(scenario.err.find("default.toml:5:1: scenario: not a hardware key"), std::string::npos)
      << scenario.err;
}

// CLI conventions: help for dtsim or a command, --version, --quiet anywhere, --json for advise
// and collective, nccl-tests' spellings of collective's options.
TEST_F(CliTest, HelpVersionQuietJsonAndNcclTestsSpellings) {
  const CliRun help = dtsim({"help"});
  ASSERT_EQ(help.code, 0) << help.err;
  EXPECT_NE(help.out.find("sweep"), std::string::npos) << help.out;
  const CliRun help_run = dtsim({"help", "run"});
  ASSERT_EQ(help_run.code, 0) << help_run.err;
  EXPECT_NE(help_run.out.find("--profile"), std::string::npos) << help_run.out;
  EXPECT_EQ(dtsim({"help", "nope"}).code, 2);
  EXPECT_EQ(dtsim({"--version"}).out.rfind("dtsim ", 0), 0u);

  const std::string c1 = kSource + "/scenarios/c1_7b_ddp_8xh100.toml";
  const CliRun quiet = dtsim({"run", "--quiet", c1, "-o", directory_.string()});
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_TRUE(quiet.err.empty()) << quiet.err;

  // Two 8-GPU HGX H100 nodes, 1 MiB to 4 MiB by factors of 4: two rows of 16 ranks.
  const CliRun bench = dtsim({"collective", "--nodes", "2", "-b", "1M", "-e", "4M", "-f", "4", "--json"});
  ASSERT_EQ(bench.code, 0) << bench.err;
  const auto rows = nlohmann::json::parse(bench.out);
  EXPECT_EQ(rows["ranks"], 16);
  ASSERT_EQ(rows["rows"].size(), 2u);
  EXPECT_EQ(rows["rows"][0]["bytes"], 1 << 20);
  EXPECT_EQ(rows["rows"][1]["bytes"], 4 << 20);
  const auto& first = rows["rows"][0]["results"][0];
  EXPECT_NEAR(first["algbw_gbyte_s"].get<double>(), (1 << 20) / first["time_us"].get<double>() / 1e3, 1e-9);
  EXPECT_NEAR(first["busbw_gbyte_s"].get<double>(), first["algbw_gbyte_s"].get<double>() * 2 * 15 / 16, 1e-9);
  // --compare: the log's sizes, dtsim's time beside the run's in-place time, and the error.
  const fs::path log = scratch_ / "all_reduce_perf.log";
  std::ofstream(log) << R"(#  Rank  0 Group  0 Pid 1 on a device  0 [0x01] NVIDIA H100 80GB HBM3
#  Rank 15 Group  0 Pid 2 on b device  7 [0x02] NVIDIA H100 80GB HBM3
           0             0     float     sum      -1     5.00    0.00    0.00      0     5.00    0.00    0.00      0
     1048576        262144     float     sum      -1    90.00   11.65   21.85      0    80.00   13.11   24.58      0
)";
  const CliRun compared =
      dtsim({"collective", "--nodes", "2", "--compare", log.string(), "--json"});
  ASSERT_EQ(compared.code, 0) << compared.err;
  const auto comparison = nlohmann::json::parse(compared.out);
  ASSERT_EQ(comparison["rows"].size(), 1u);  // the 0-byte row has nothing to compare
  const auto& row = comparison["rows"][0];
  EXPECT_EQ(row["bytes"], 1 << 20);
  EXPECT_EQ(row["measured_in_place_us"], 80.0);
  EXPECT_NEAR(row["results"][0]["error"].get<double>(),
              (row["results"][0]["time_us"].get<double>() - 80) / 80, 1e-12);
  EXPECT_EQ(comparison["comparison"][0]["sizes"], 1);
  EXPECT_EQ(dtsim({"collective", "--ranks", "8", "--compare", log.string()}).code,
            2);  // the log ran 16
  EXPECT_EQ(dtsim({"collective", "--nodes", "2", "--compare", log.string(), "-f", "4"}).code, 2);
  EXPECT_EQ(dtsim({"collective", "--nodes", "2", "--ranks", "3"}).code, 2);
  const CliRun too_many_nodes = dtsim(
      {"collective", "--scenario", kSource + "/scenarios/c1_7b_ddp_8xh100.toml", "--nodes", "3"});
  EXPECT_EQ(too_many_nodes.code, 2);
  EXPECT_NE(too_many_nodes.err.find(
                "--nodes: 3 nodes do not fit the scenario's cluster of 1 node (8 GPUs)"),
            std::string::npos)
      << too_many_nodes.err;
  EXPECT_EQ(dtsim({"collective", "--sizes", "1:2", "-b", "1"}).code, 2);
  EXPECT_EQ(dtsim({"collective", "--sizes", "1:1"}).code, 2);  // no whole float: a size-0 row
  EXPECT_EQ(dtsim({"collective", "-f", "inf"}).code, 2);

  const CliRun advice = dtsim({"advise", kSource + "/scenarios/c3_70b_ddp_64gpu.toml", "--json"});
  ASSERT_EQ(advice.code, 0) << advice.err;
  const auto json = nlohmann::json::parse(advice.out);
  ASSERT_FALSE(json["candidates"].empty());
  EXPECT_FALSE(json["rules"].empty());
  EXPECT_EQ(json["advice"], json["candidates"][0]["overrides"]);  // the best fits: its overrides are the advice
  EXPECT_GT(json["candidates"][0]["report"]["step_time_s"].get<double>(), 0);
}

// Counts out of range, options that cannot go together, and a log of a test dtsim does not run
// are one error each, naming the option (exit 2) — not run with a default: CLI11 once read
// --simulate -1 as the largest count (every layout simulated), --nodes 0 as "not given", and
// --scenario silently dropped --topology.
TEST_F(CliTest, CountsOutOfRangeConflictingOptionsAndForeignLogsAreOneErrorEach) {
  const std::string tiny = kSource + "/scenarios/real/tiny_ddp_2ranks.toml";
  const auto expect_error = [](const std::vector<std::string>& args, const std::string& message) {
    const CliRun run = dtsim(args);
    EXPECT_EQ(run.code, 2) << args[0] << " " << args.back();
    EXPECT_NE(run.err.find(message), std::string::npos) << run.err;
    EXPECT_TRUE(run.out.empty()) << run.out;
  };
  expect_error({"collective", "--nodes", "0"}, "--nodes: Value 0 not in range 1 to ");
  expect_error({"search", tiny, "--simulate", "-1"}, "--simulate: Value -1 not in range 0 to ");
  expect_error({"search", tiny, "--sample", "1e9x"}, "--sample: Value 1e9x not in range");
  expect_error({"search", tiny, "--top", "0"}, "--top: Value 0 not in range 1 to ");
  expect_error({"sweep", kSource + "/scenarios/c2_7b_ddp_comm_compute_ratio.toml", "--top", "0"},
               "--top: Value 0 not in range 1 to ");
  expect_error({"run", tiny, "--no-timeline", "--trace-ranks", "0"},
               "--trace-ranks excludes --no-timeline");
  expect_error(
      {"collective", "--scenario", kSource + "/scenarios/default.toml", "--topology", "hgx-b200"},
      "--topology excludes --scenario");
  expect_error({"collective", "--scenario", kSource + "/scenarios/default.toml", "--sharp"},
               "--sharp excludes --scenario");
  expect_error(
      {"collective", "--fabric", "roce-400", "--nodes", "2", "--sharp", "--algo", "collnet"},
      "--sharp: in-network reduction (SHARP) runs on InfiniBand switches, but roce-400 is RoCE");

  const auto write_log = [&](const std::string& test) {
    const fs::path log = scratch_ / (test + "_perf.log");
    std::ofstream(log) << "# Collective test starting: " << test
                       << "_perf\n"
                          "        1024           256     float     sum      -1    10.00    0.10   "
                          " 0.10      0    "
                          "10.00    0.10    0.10      0\n";
    return log.string();
  };
  expect_error(
      {"collective", "--compare", write_log("hypercube")},
      "measured hypercube, which this benchmark does not run (a log of one of all_reduce,");
  expect_error({"collective", "--compare", write_log("sendrecv")},
               "measured sendrecv; this benchmark runs all_reduce (--op sendrecv)");
  const CliRun sendrecv =
      dtsim({"collective", "--op", "sendrecv", "--compare", write_log("sendrecv")});
  EXPECT_EQ(sendrecv.code, 0) << sendrecv.err;
  expect_error({"collective", "--compare", (scratch_ / ".").string()},
               "--compare: not a regular file");
}

// Sizes are whole floats, as nccl-tests runs them, each once: a factor near 1 repeated sizes and
// printed 9914 bytes as 2478 floats.
TEST_F(CliTest, CollectiveSizesAreWholeFloatsEachOnce) {
  const CliRun run = dtsim({"collective", "--sizes", "7:9K", "--factor", "1.001", "--algo", "ring",
                            "--model", "analytic", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  const auto rows = nlohmann::json::parse(run.out)["rows"];
  ASSERT_GT(rows.size(), 500u);
  EXPECT_EQ(rows.front()["bytes"], 4);
  std::int64_t previous = 0;
  for (const auto& row : rows) {
    const auto bytes = row["bytes"].get<std::int64_t>();
    EXPECT_EQ(bytes % 4, 0) << bytes;
    EXPECT_GT(bytes, previous);
    previous = bytes;
  }
}

// Sets an environment variable while it lives, then puts back what was there.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    setenv(name, value, 1);
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;
  ~ScopedEnvironment() {
    if (previous_) {
      setenv(name_, previous_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

// `mpirun -np N dtsim run` without --backend would run N identical simulations into one folder:
// refused, with one message (from the first process), and nothing written. (sweep and search
// share their simulations out instead: tests/backend/mpi_executor_test.cpp runs them.)
TEST_F(CliTest, ASimulationUnderMpirunIsRefused) {
  const std::string c1 = kSource + "/scenarios/c1_7b_ddp_8xh100.toml";
  const ScopedEnvironment size("OMPI_COMM_WORLD_SIZE", "4");
  {
    const ScopedEnvironment rank("OMPI_COMM_WORLD_RANK", "0");
    for (const std::vector<std::string>& command : {std::vector<std::string>{"run", c1, "-o", directory_.string()}, {"advise", c1},
                                                    {"validate"}}) {
      const CliRun refused = dtsim(command);
      EXPECT_EQ(refused.code, 2) << command[0];
      EXPECT_NE(refused.err.find("mpirun started 4 processes"), std::string::npos) << refused.err;
      EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
    }
    EXPECT_NE(dtsim({"run", c1}).err.find("--backend mpi|nccl"), std::string::npos);
  }
  const ScopedEnvironment rank("OMPI_COMM_WORLD_RANK", "3");
  const CliRun other = dtsim({"run", c1, "-o", directory_.string()});
  EXPECT_EQ(other.code, 2);
  EXPECT_TRUE(other.err.empty()) << other.err;
  EXPECT_FALSE(fs::exists(directory_));
}

TEST_F(CliTest, SweepWithoutASweepTableIsBadInput) {
  const CliRun run = dtsim({"sweep", kSource + "/scenarios/default.toml", "-o", directory_.string()});
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("no [sweep] table"), std::string::npos);
}

// dtsim run on a file written for dtsim sweep says that the [sweep] points are not what it ran
// (it ran the scenario as written, silently, even with an axis no point could read).
TEST_F(CliTest, RunSaysThatItDoesNotSimulateTheFilesSweep) {
  const std::string c2 = kSource + "/scenarios/c2_7b_ddp_comm_compute_ratio.toml";
  const CliRun run =
      dtsim({"run", c2, "--set", "training.micro_batch=2", "--set", "stragglers.slow_ranks=[1, 2]",
             "--set", "stragglers.slow_factor=1.5", "--set", "compute.step_compute_time_s=0.3",
             "--no-timeline", "-o", directory_.string()});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find(
                "[sweep] (2 points) is not simulated: dtsim run simulates the scenario as written"),
            std::string::npos)
      << run.out;
  // The command it suggests runs the points with the same changes, as shell words, but for the
  // swept key (the axis would win).
  EXPECT_NE(run.out.find("dtsim sweep " + c2 +
                         " --set training.micro_batch=2 --set 'stragglers.slow_ranks=[1, 2]' --set "
                         "stragglers.slow_factor=1.5 runs its points"),
            std::string::npos)
      << run.out;
}

TEST_F(CliTest, AdvisePrintsRulesRankedCandidatesAndTheOverridesToUse) {
  const CliRun run = dtsim({"advise", kSource + "/scenarios/m1_7b_ddp_memory.toml", "-j", "1"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("memory: 16 B/parameter"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("ZeRO-1, dp 8"), std::string::npos);
  EXPECT_NE(run.out.find("advice: "), std::string::npos);
  EXPECT_NE(run.out.find("--set parallel.strategy="), std::string::npos);
  const CliRun missing = dtsim({"advise", kSource + "/scenarios/no_such.toml"});
  EXPECT_EQ(missing.code, 2);
}

TEST_F(CliTest, PresetsAndInfoList) {
  const CliRun presets = dtsim({"presets"});
  EXPECT_EQ(presets.code, 0);
  for (const char* name : {"h100-sxm5", "hgx-h200", "ib-ndr", "llama-2-70b", "gpt3-175b"}) {
    EXPECT_NE(presets.out.find(name), std::string::npos) << name;
  }
  const CliRun info = dtsim({"info"});
  EXPECT_EQ(info.code, 0);
  EXPECT_NE(info.out.find("MPI:"), std::string::npos);
}

TEST_F(CliTest, TheSameScenarioWritesTheSameTimelineTwice) {
  const std::string scenario = kSource + "/scenarios/default.toml";
  ASSERT_EQ(dtsim({"run", scenario, "-o", (directory_ / "a").string()}).code, 0);
  ASSERT_EQ(dtsim({"run", scenario, "-o", (directory_ / "b").string()}).code, 0);
  const std::string a = slurp(directory_ / "a" / "timeline.json");
  EXPECT_GT(a.size(), 100'000u);
  EXPECT_EQ(a, slurp(directory_ / "b" / "timeline.json"));
  EXPECT_EQ(slurp(directory_ / "a" / "report.json"), slurp(directory_ / "b" / "report.json"));
}

}  // namespace

namespace {

TEST_F(CliTest, CollectivePrintsAnNcclTestsTableAndTheCrossover) {
  // 64 ranks on 8 nodes, α-β pricing: the tree's log-depth latency wins for small messages
  // (26 µs against the ring's 126 steps of 3.1 µs), the ring's bandwidth for large ones (its
  // NIC traffic is 2(P−1)/P · M/8 per NIC, the double tree's slightly more), and the table says
  // where.
  const CliRun run = dtsim({"collective", "--op", "all_reduce", "--algo", "ring,tree", "--ranks", "64",
                            "--sizes", "4K:4G", "--factor", "4", "--model", "flow", "--library", "ideal"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(
      run.out.find("size         count   type |         algo     time(us) algbw(GB/s) busbw(GB/s)"),
      std::string::npos);
  EXPECT_NE(run.out.find("# crossover: tree is faster up to"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(", ring from "), std::string::npos) << run.out;
}

TEST_F(CliTest, CollectiveBusBandwidthIsAlgbwTimesTheNcclTestsFactor) {
  const CliRun run = dtsim({"collective", "--op", "all_gather", "--algo", "ring", "--ranks", "8", "--sizes",
                            "1G:1G", "--model", "analytic"});
  ASSERT_EQ(run.code, 0) << run.err;
  std::istringstream table(run.out);
  std::string line;
  while (std::getline(table, line) && line.rfind("#", 0) == 0) {}
  std::istringstream row(line);
  std::string size, count, type, bar, algo;
  double time_us = 0, algbw = 0, busbw = 0;
  row >> size >> count >> type >> bar >> algo >> time_us >> algbw >> busbw;
  EXPECT_EQ(algo, "ring/Simple");
  EXPECT_NEAR(algbw, 1073741824.0 / (time_us * 1e-6) / 1e9, 0.01);
  EXPECT_NEAR(busbw, algbw * 7.0 / 8, 0.01);
}

// A barrier moves no data: one row, no sizes and no bandwidths (it printed a row per size, each
// the same time at "0.00 GB/s"); the columns stay aligned up to the largest size, 1 TiB.
TEST_F(CliTest, CollectiveBarrierIsOneRowAndTheLargestSizesKeepTheColumns) {
  const CliRun barrier = dtsim({"collective", "--op", "barrier", "--sizes", "8:1M"});
  ASSERT_EQ(barrier.code, 0) << barrier.err;
  const std::vector<std::string> rows = table_rows(barrier.out);
  ASSERT_EQ(rows.size(), 1u) << barrier.out;
  EXPECT_EQ(rows[0].find("0.00"), std::string::npos) << rows[0];
  EXPECT_NE(rows[0].find("           -           -"), std::string::npos) << rows[0];
  const CliRun huge = dtsim({"collective", "--sizes", "512G:1024G", "--model", "analytic"});
  ASSERT_EQ(huge.code, 0) << huge.err;
  const std::string header = huge.out.substr(huge.out.find("#          size"));
  for (const std::string& row : table_rows(huge.out)) {
    EXPECT_EQ(row.find('|'), header.find('|')) << row;
  }
}

TEST_F(CliTest, CollectiveShowsTheProtocolNcclWouldRunBySize) {
  // NCCL's tuner: LL's low latency for 8 bytes, Simple's full bandwidth for 8 GiB (NVLS on an
  // H100 node, NVLink SHARP's in-switch reduction); --library ideal prices dtsim's schedules
  // with no protocol.
  const CliRun nccl = dtsim({"collective", "--ranks", "8", "--sizes", "8:8G", "--factor", "1024"});
  ASSERT_EQ(nccl.code, 0) << nccl.err;
  EXPECT_NE(nccl.out.find("nccl library"), std::string::npos) << nccl.out;
  EXPECT_NE(nccl.out.find("/LL "), std::string::npos) << nccl.out;
  EXPECT_NE(nccl.out.find("nvls/Simple"), std::string::npos) << nccl.out;
  const CliRun ideal = dtsim({"collective", "--ranks", "8", "--sizes", "8:8G", "--factor", "1024", "--library", "ideal"});
  ASSERT_EQ(ideal.code, 0) << ideal.err;
  EXPECT_EQ(ideal.out.find("/LL"), std::string::npos) << ideal.out;
  EXPECT_EQ(dtsim({"collective", "--library", "gloo"}).code, 2);
  EXPECT_EQ(dtsim({"collective", "--algo", "hd", "--ranks", "16"}).code, 2);  // NCCL has no halving-doubling
}

TEST_F(CliTest, CollectiveRejectsWhatCannotRun) {
  auto run = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"collective", "--ranks", "8"};
    args.insert(args.end(), extra.begin(), extra.end());
    return dtsim(args);
  };
  const CliRun hier = run({"--algo", "hier", "--library", "ideal"});  // 8 ranks: one node
  EXPECT_EQ(hier.code, 2);
  EXPECT_NE(hier.err.find("--algo: algorithm \"hier\" needs a group spread over two or more nodes"), std::string::npos)
      << hier.err;
  EXPECT_EQ(run({"--algo", "butterfly"}).code, 2);
  EXPECT_EQ(run({"--op", "all_to_all", "--algo", "ring"}).code, 2);
  EXPECT_EQ(run({"--sizes", "8G:8"}).code, 2);
  EXPECT_EQ(run({"--sizes", "lots"}).code, 2);
  EXPECT_EQ(run({"--model", "quantum"}).code, 2);
  EXPECT_EQ(run({"--topology", "dgx-z9"}).code, 2);
  EXPECT_EQ(dtsim({"collective", "--ranks", "100000"}).code, 2);
  EXPECT_EQ(dtsim({"collective", "--ranks", "0"}).code, 2);
  const CliRun lone = dtsim({"collective", "--op", "sendrecv", "--ranks", "1"});
  EXPECT_EQ(lone.code, 2);
  EXPECT_NE(lone.err.find("--ranks: a send/recv needs at least 2 ranks"), std::string::npos)
      << lone.err;
  const CliRun ring_send = run({"--op", "sendrecv", "--algo", "ring"});
  EXPECT_EQ(ring_send.code, 2);
  EXPECT_NE(ring_send.err.find("--algo: a send/recv has no algorithm to choose"), std::string::npos)
      << ring_send.err;
}

// nccl-tests' sendrecv_perf on one DGX A100: every rank sends to the next and receives from
// the previous, each send on the CTAs NCCL gives it in a communicator of all the ranks (4 per
// peer at 64 MiB among 8 ranks, 8 once a part passes 16 MiB, 16 among 2) at 110.81 / 8 GB/s each,
// at most 195.10 GB/s (li-plus/playground cuda/nccl.md, the rates sim/net/nccl_p2p.cpp cites).
TEST_F(CliTest, CollectiveSendRecvRunsEveryRankToTheNextOnNcclsCtas) {
  const auto bus_bandwidths = [](const std::string& ranks) {
    const CliRun bench = dtsim({"collective", "--op", "sendrecv", "--ranks", ranks, "--scenario",
                                kSource + "/tests/validation/nccl_tests/dgx_a100_1node.toml", "-b",
                                "64M", "-e", "128M", "--json"});
    EXPECT_EQ(bench.code, 0) << bench.err;
    const auto json = nlohmann::json::parse(bench.out);
    EXPECT_EQ(json["op"], "sendrecv");
    std::vector<double> busbw;
    for (const auto& row : json["rows"]) {
      const auto& result = row["results"][0];
      EXPECT_EQ(result["ran"], "p2p");
      EXPECT_EQ(result["busbw_gbyte_s"],
                result["algbw_gbyte_s"]);  // nccl-tests' factor for sendrecv: 1
      busbw.push_back(result["busbw_gbyte_s"].get<double>());
    }
    return busbw;
  };
  constexpr double kPerCta = 110.81 / 8;
  const std::vector<double> eight = bus_bandwidths("8"), two = bus_bandwidths("2");
  ASSERT_EQ(eight.size(), 2u);
  EXPECT_NEAR(eight[0], 4 * kPerCta, 0.01 * 4 * kPerCta);  // 64 MiB
  EXPECT_NEAR(eight[1], 8 * kPerCta, 0.01 * 8 * kPerCta);  // 128 MiB
  ASSERT_EQ(two.size(), 2u);
  EXPECT_NEAR(two[0], 195.10, 0.01 * 195.10);  // 16 CTAs would pass the peak
}

}  // namespace

namespace {

TEST_F(CliTest, CompareReportsFigureAndPerOpErrorsOnScreenAndInJson) {
  const fs::path flow = directory_ / "flow", analytic = directory_ / "analytic";
  ASSERT_EQ(dtsim({"run", kSource + "/scenarios/c1_7b_ddp_8xh100.toml", "-o", flow.string()}).code, 0);
  ASSERT_EQ(dtsim({"run", kSource + "/scenarios/c1_7b_ddp_8xh100.toml", "--set", "network.model=analytic", "-o",
                   analytic.string()}).code, 0);
  const fs::path json_path = directory_ / "comparison.json";
  const CliRun same = dtsim({"compare", (flow / "timeline.json").string(), (flow / "timeline.json").string()});
  EXPECT_EQ(same.code, 0);
  EXPECT_NE(same.out.find("per-op MAPE: 0.0 %"), std::string::npos) << same.out;

  const CliRun models = dtsim({"compare", (analytic / "timeline.json").string(), (flow / "timeline.json").string(),
                               "--json", "-o", json_path.string()});
  ASSERT_EQ(models.code, 0) << models.err;
  const auto json = nlohmann::json::parse(models.out);
  EXPECT_EQ(json, nlohmann::json::parse(slurp(json_path)));
  EXPECT_EQ(json["figures"][0]["figure"], "step time");
  EXPECT_GT(json["ops"]["matched"].get<int>(), 1000);  // the same program: every op matches
  EXPECT_EQ(json["ops"]["matched"], json["ops"]["measured"]);

  const CliRun pytorch = dtsim({"compare", (flow / "timeline.json").string(),
                                kSource + "/tests/data/pytorch_profiler_trace.json"});
  EXPECT_EQ(pytorch.code, 0);
  EXPECT_NE(pytorch.out.find("figures only"), std::string::npos) << pytorch.out;

  const CliRun broken = dtsim({"compare", (flow / "timeline.json").string(), (directory_ / "missing.json").string()});
  EXPECT_EQ(broken.code, 2);
  EXPECT_NE(broken.err.find("missing.json"), std::string::npos) << broken.err;

  // Both outputs or neither: an unwritable CSV path leaves no JSON behind (it used to).
  const fs::path both = directory_ / "both.json";
  const CliRun unwritable = dtsim({"compare", (flow / "timeline.json").string(), (flow / "timeline.json").string(), "-o",
                                   both.string(), "--ops-csv", (directory_ / "no" / "such" / "ops.csv").string()});
  EXPECT_EQ(unwritable.code, 2);
  EXPECT_EQ(std::count(unwritable.err.begin(), unwritable.err.end(), '\n'), 1) << unwritable.err;
  EXPECT_NE(unwritable.err.find("ops.csv"), std::string::npos) << unwritable.err;
  EXPECT_FALSE(fs::exists(both));
}

}  // namespace

namespace {

// Inputs a fuzzer found crashing, hanging, exhausting memory or exiting 0 with nonsense; each
// now gets one message and exit 2, and nothing is written.
TEST_F(CliTest, AbsurdInputsGetOneMessageAndExitTwo) {
  const fs::path inputs = scratch_ / "inputs";
  fs::create_directories(inputs);
  std::ofstream(inputs / "zero_profile.toml") << "[scenario]\nhardware_profile = \"/dev/zero\"\n";
  std::ofstream(inputs / "escape.toml") << "[scenario]\nname = \"../escape\"\n";
  std::ofstream(inputs / "empty_trace.json") << R"({"traceEvents": []})";
  std::ofstream(inputs / "torn_log.txt")
      << "# nThread 1 nGpus 1\n"
      << "           8             2     float     sum      -1    24.96\n";
  std::ofstream(inputs / "all_gather_log.txt") << R"(# Collective test starting: all_gather_perf
        1024            32     float    none      -1    20.00    0.05    0.04      0    19.00    0.05    0.05      0
)";
  {
    std::ofstream sweep(inputs / "huge_sweep.toml");
    sweep << slurp(kSource + "/scenarios/real/small_1gpu.toml") << "\n[sweep]\n";
    for (int axis = 0; axis < 14; ++axis) sweep << "\"ddp.k" << axis << "\" = [1, 2]\n";  // 16,384 points
  }
  const std::string default_toml = kSource + "/scenarios/default.toml", out = directory_.string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", default_toml, "--set", "cluster.nvlink.bandwidth_gbyte_s=inf", "-o", out},
       "expected a finite number"},
      {{"run", default_toml, "--set", "cluster.nvlink.bandwidth_gbyte_s=1e300", "-o", out},
       "magnitude at most 1e+30"},
      {{"run", default_toml, "--set", "compute.matmul_efficiency_by_size=[[1,nan]]", "-o", out},
       "got [1, nan]"},
      {{"run", default_toml, "--set", "model.parameter_count=1e20", "-o", out}, "up to 1e+15"},
      {{"run", default_toml, "--set", "cluster.gpu.sms=-1", "-o", out},
       "between 0 and 1024, got -1"},
      {{"run", default_toml, "--set", "cluster.interconnect=\"pcie\"", "--set",
        "cluster.nvlink_sharp=true", "-o", out},
       "NVLink SHARP reduces in an NVSwitch"},
      {{"run", default_toml, "--set", "cluster.node=\"dgx-a100\"", "--set",
        "collectives.all_reduce=\"nvls\"", "-o", out},
       "needs NVSwitches that reduce in the switch"},
      {{"run", default_toml, "--set", "collectives.all_reduce=\"collnet\"", "-o", out},
       "collectives.all_reduce: on group dp[0]: algorithm \"collnet\" needs InfiniBand switches "
       "that reduce in the network"},
      {{"run", default_toml, "--set", "cluster.node=\"dgx-a100\"", "--set",
        "training.precision=\"fp8\"", "-o", out},
       "training.precision: fp8 needs FP8 tensor cores; the A100 SXM4 80GB has none"},
      {{"run", default_toml, "--set", "model.layers=16777216", "-o", out}, "between 1 and 10000"},
      {{"run", default_toml, "--set", "cluster.interconnect=\"mesh\"", "--set",
        "cluster.gpus_per_node=32", "-o", out},
       "dtsim models meshes of up to 16 GPUs"},
      {{"run", default_toml, "--set", "cluster.gpu.bf16_tflops=1e-30", "-o", out}, "106 days"},
      {{"run", default_toml, "--set", "training.steps=10000", "-o", out},
       "training.steps = 10000: the Program would have more than 8,000,000 ops"},
      {{"run", default_toml, "--set", "a..b=1", "-o", out}, "empty part"},
      {{"run", default_toml, "--set", "collectives.groups.dq.all_reduce=\"ring\"", "-o", out},
       "did you mean \"dp\"?"},
      {{"run", (inputs / "zero_profile.toml").string(), "-o", out},
       "/dev/zero: not a regular file"},
      {{"run", default_toml, "--set", "scenario.hardware_profile=\"x.toml\"", "-o", out},
       "cannot change it"},
      {{"run", (inputs / "escape.toml").string()}, "scenario.name"},
      {{"run", default_toml, "-o", "/dev/null"},
       "/dev/null exists and is not a directory; -o names a directory to write into"},
      {{"sweep", (inputs / "huge_sweep.toml").string(), "-o", out}, "16384 points"},
      {{"collective", "--algo", ""}, "expected at least one algorithm"},
      {{"collective", "--sizes", "8:1M", "--factor", "1.0000001"}, "rows, more than 10000"},
      {{"collective", "--ranks", "abc"}, "--ranks"},
      {{"collective", "--topology", "gb200-nvl72", "--nodes", "2"},
       "--fabric: a gb200-nvl72 node's 72 NICs do not fit on a leaf of ib-ndr with 32 down ports"},
      {{"collective", "--compare", (inputs / "torn_log.txt").string()},
       "torn_log.txt:2: --compare: a result row whose times do not read"},
      {{"collective", "--compare", (inputs / "all_gather_log.txt").string()},
       "measured all_gather; this benchmark runs all_reduce"},
      {{"collective", "--compare", (inputs / "empty_trace.json").string()},
       "no nccl-tests result rows"},
      {{"compare", (inputs / "empty_trace.json").string(), (inputs / "empty_trace.json").string()},
       "holds no spans"},
  };
  for (const auto& [args, fragment] : cases) {
    const CliRun run = dtsim(args);
    const std::string what = args[0] + " " + args[args.size() > 2 ? 2 : 1];
    EXPECT_EQ(run.code, 2) << what << ": " << run.err;
    EXPECT_EQ(run.err.rfind("dtsim: error: ", 0), 0u) << what << ": " << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << what << ": " << run.err;
    EXPECT_NE(run.err.find(fragment), std::string::npos) << what << ": " << run.err;
    EXPECT_TRUE(run.out.empty()) << what;
    EXPECT_FALSE(fs::exists(directory_)) << what;
  }
  EXPECT_FALSE(fs::exists(fs::path("out") / ".." / "escape"));
}

// Echoed values, paths and arguments are one line of valid UTF-8 in every message.
TEST_F(CliTest, ErrorMessagesAreOneLineOfValidUtf8) {
  const std::string default_toml = kSource + "/scenarios/default.toml";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", default_toml, "--set", "network.model=a\nb\x01\xff"},
       "--set network.model=a\\nb\\x01\\xff: "},
      {{"run", "no\nsuch\xc0.toml"}, "no\\nsuch\\xc0.toml: cannot read"},
      {{"run", default_toml, "--bad\nflag"}, "--bad\\nflag"},
      {{"compare", "a\n.json", "b.json"}, "a\\n.json"},
  };
  for (const auto& [args, fragment] : cases) {
    const CliRun run = dtsim(args);
    EXPECT_EQ(run.code, 2) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_NE(run.err.find(fragment), std::string::npos) << run.err;
  }
  // A long value of two-byte characters is cut between characters, not inside one.
  std::string long_value;
  for (int i = 0; i < 300; ++i) long_value += "é";
  const CliRun run = dtsim({"run", default_toml, "--set", "network.model=" + long_value});
  EXPECT_EQ(run.code, 2);
  // "unknown value \"" (15 characters), then 185 of the 300, of a message of 357 characters.
  std::string kept;
  for (int i = 0; i < 185; ++i) kept += "é";
  EXPECT_NE(run.err.find("unknown value \"" + kept + "… (357 characters)"), std::string::npos) << run.err;
}

}  // namespace
