// The MPI executor end to end: `mpirun -np 2 dtsim run … --backend mpi` on the scaled-down
// scenarios, checked against the simulated timeline of the same Program: every op ran once,
// in dependency order, on the rank and stream the Program put it on.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>

#include "tests/support/real_runs.h"
#include "tests/support/temporary_directory.h"

namespace {

namespace fs = std::filesystem;
using test_support::CommandResult;
using test_support::mpirun;
using test_support::run;
const std::string kSource = test_support::source_dir();

// dtsim's messages in a job's output ("dtsim: …" lines; mpirun adds its own about the exit code).
std::size_t count_messages(const std::string& output) {
  std::size_t messages = 0;
  for (std::size_t at = output.find("dtsim: "); at != std::string::npos; at = output.find("dtsim: ", at + 1)) ++messages;
  return messages;
}

struct RealScenario {
  const char* name;
  int ranks;
};
void PrintTo(const RealScenario& scenario, std::ostream* out) { *out << scenario.name << " on " << scenario.ranks << " ranks"; }

class MpiExecutorTest : public ::testing::TestWithParam<RealScenario> {
 protected:
  test_support::TemporaryDirectory directory_{"dtsim-mpi"};
};

// Every op ran once, in dependency order, where the Program put it; the traffic and the memory
// held are the simulator's (the same schedules and allocations, attached by the executor).
TEST_P(MpiExecutorTest, EveryOpRunsOnceInDependencyOrderOnItsRankAndStream) {
  const std::string scenario = kSource + "/scenarios/real/" + GetParam().name + ".toml";
  const CommandResult real =
      run(mpirun(GetParam().ranks) + " run " + scenario + " --backend mpi -o " + (directory_ / "real").string());
  ASSERT_EQ(real.code, 0) << real.output;
  EXPECT_NE(real.output.find("measured: MPI + OpenBLAS"), std::string::npos) << real.output;
  EXPECT_NE(real.output.find("host-timed step"), std::string::npos) << real.output;
  const CommandResult simulated = run(test_support::dtsim() + " run " + scenario + " -o " + (directory_ / "sim").string());
  ASSERT_EQ(simulated.code, 0) << simulated.output;

  test_support::expect_same_ops_in_dependency_order(directory_ / "real" / "timeline.json",
                                                    directory_ / "sim" / "timeline.json");
  const auto report = [](const fs::path& path) { return nlohmann::json::parse(std::ifstream(path)); };
  const nlohmann::json measured = report(directory_ / "real" / "report.json");
  const nlohmann::json predicted = report(directory_ / "sim" / "report.json");
  ASSERT_EQ(measured["per_rank"].size(), predicted["per_rank"].size());
  for (std::size_t r = 0; r < measured["per_rank"].size(); ++r) {  // every rank: PS servers send more than workers
    EXPECT_GT(measured["per_rank"][r]["comm_bytes"].get<std::int64_t>(), 0) << "rank " << r;
    EXPECT_EQ(measured["per_rank"][r]["comm_bytes"], predicted["per_rank"][r]["comm_bytes"]) << "rank " << r;
  }
  EXPECT_GT(measured["peak_memory_bytes"].get<std::int64_t>(), 0);
  EXPECT_EQ(measured["peak_memory_bytes"], predicted["peak_memory_bytes"]);
  EXPECT_TRUE(predicted["host_step_time_s"].is_null());
  EXPECT_GT(measured["host_step_time_s"].get<double>(), 0);
}

// Data, tensor and parameter-server parallelism (push and pull run as dtsim's schedules).
INSTANTIATE_TEST_SUITE_P(ScaledDownScenarios, MpiExecutorTest,
                         ::testing::Values(RealScenario{"tiny_ddp_2ranks", 2}, RealScenario{"tiny_tp_2ranks", 2},
                                           RealScenario{"tiny_ps_3ranks", 3}),
                         [](const auto& test) { return std::string(test.param.name); });

// `--runs N`: N recorded runs after the warm-up; the report gives each one's host-timed step and
// the median's, and the timeline is the median run's. Its spans fit in that run's host time by
// construction: each rank's spans and host time start at its barrier exit, and the host-timed
// step is the slowest rank's.
TEST(MpiExecutorRunsTest, TheTimelineAndHostTimedStepAreTheMedianRunsOfN) {
  const test_support::TemporaryDirectory scratch("dtsim-mpi-runs");
  const fs::path directory = scratch / "out";
  const std::string scenario = kSource + "/scenarios/real/tiny_tp_2ranks.toml";
  const CommandResult real = run(mpirun(2) + " run " + scenario + " --backend mpi --runs 3 -o " + directory.string());
  ASSERT_EQ(real.code, 0) << real.output;
  EXPECT_NE(real.output.find("median of 3 runs"), std::string::npos) << real.output;
  const nlohmann::json report = nlohmann::json::parse(std::ifstream(directory / "report.json"));
  std::vector<double> runs = report["host_step_times_s"].get<std::vector<double>>();
  ASSERT_EQ(runs.size(), 3u);
  std::sort(runs.begin(), runs.end());
  EXPECT_EQ(report["host_step_time_s"].get<double>(), runs[1]);
  EXPECT_LE(report["step_time_s"].get<double>(), runs[1]);
  fs::remove_all(directory);  // --runs 0 below must not create it

  const CommandResult none = run(mpirun(2) + " run " + scenario + " --backend mpi --runs 0 -o " + directory.string());
  EXPECT_NE(none.code, 0);
  EXPECT_NE(none.output.find("--runs"), std::string::npos) << none.output;
  EXPECT_FALSE(fs::exists(directory));
}

TEST(MpiExecutorErrorsTest, AWrongRankCountOrAFullSizeModelIsRefusedWithOneMessage) {
  const std::string scenario = kSource + "/scenarios/real/tiny_ddp_2ranks.toml";
  const test_support::TemporaryDirectory scratch("dtsim-mpi-wrong");
  const CommandResult one_rank = run(mpirun(1) + " run " + scenario + " --backend mpi -o " + (scratch / "out").string());
  EXPECT_EQ(one_rank.code, 2) << one_rank.output;
  EXPECT_NE(one_rank.output.find("mpirun -np 2"), std::string::npos) << one_rank.output;
  EXPECT_FALSE(fs::exists(scratch / "out"));

  const CommandResult huge = run(mpirun(2) + " run " + scenario + " --set model.hidden=65536 --set model.ffn_hidden=262144" +
                       " --set model.heads=64 --backend mpi");
  EXPECT_NE(huge.code, 0);
  EXPECT_NE(huge.output.find("scaled-down"), std::string::npos) << huge.output;
  EXPECT_EQ(count_messages(huge.output), 1u) << huge.output;  // rank 0 alone reports
}

}  // namespace

namespace {

// Issue #6's pipeline on CPU ranks: calibrate this machine, simulate the scaled-down DDP and TP
// steps priced with that profile, run them for real (the median of 5 runs), compare. This test
// checks the pipeline, not the accuracy: every simulated op is matched by a measured one, every
// error is finite, and the step times agree within a factor no load breaks but a wiring or unit
// error does (a microsecond priced as a millisecond is 1000× off). Other tenants slowed the
// real runs by up to 4× against their calibration (two CPU hogs on the two cores: every
// collective waits for both ranks to be scheduled; BENCHMARKS.md), hence 20×. The accuracy
// itself (the 25 % target) is measured on an idle machine by bench/e2e_accuracy.sh.
constexpr double kStepTimeFactorBound = 20.0;

// mpirun gives its processes a pseudo-terminal for stdout and a pipe for stderr whatever its own
// are: calibrate's progress follows the launcher's terminal (script(1) gives it one here).
TEST(EndToEndTest, CalibrateShowsItsProgressWhenMpirunRunsOnATerminal) {
  const CommandResult calibration = run("script -qec '" + mpirun(2) + " calibrate' /dev/null");
  ASSERT_EQ(calibration.code, 0) << calibration.output;
  EXPECT_NE(calibration.output.find("fp32_tflops"), std::string::npos) << calibration.output;
  const std::size_t bar = calibration.output.find(" measurements");
  ASSERT_NE(bar, std::string::npos) << calibration.output;
  EXPECT_NE(calibration.output.rfind("] ", bar), std::string::npos) << calibration.output;  // "[###  ] 7/31 measurements"
  const CommandResult quiet = run("script -qec '" + mpirun(2) + " calibrate --quiet' /dev/null");
  ASSERT_EQ(quiet.code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find(" measurements"), std::string::npos) << quiet.output;
}

TEST(EndToEndTest, CalibrateSimulateRunAndCompareOnTwoCpuRanks) {
  const test_support::TemporaryDirectory directory("dtsim-end-to-end");
  const CommandResult calibration = run(mpirun(2) + " calibrate -o " + (directory / "profile.toml").string());
  ASSERT_EQ(calibration.code, 0) << calibration.output;
  EXPECT_NE(calibration.output.find("fp32_tflops"), std::string::npos) << calibration.output;
  EXPECT_NE(calibration.output.find("# all-reduce bus bandwidth / link bandwidth"), std::string::npos) << calibration.output;
  EXPECT_EQ(calibration.output.find("measurements"), std::string::npos) << "progress without a terminal";

  for (const std::string name : {"tiny_ddp_2ranks", "tiny_tp_2ranks"}) {
    std::ifstream in(kSource + "/scenarios/real/" + name + ".toml");
    std::stringstream text;
    text << in.rdbuf();
    std::string scenario = text.str();
    scenario.replace(scenario.find("[scenario]\n"), 11, "[scenario]\nhardware_profile = \"profile.toml\"\n");
    const fs::path scenario_path = directory / (name + ".toml");
    std::ofstream(scenario_path) << scenario;

    const fs::path sim = directory / (name + "-sim"), real = directory / (name + "-real");
    ASSERT_EQ(run(test_support::dtsim() + " run " + scenario_path.string() + " -o " + sim.string()).code, 0);
    const CommandResult measured = run(mpirun(2) + " run " + scenario_path.string() + " --backend mpi -o " + real.string());
    ASSERT_EQ(measured.code, 0) << measured.output;
    const nlohmann::json json = test_support::compare_and_print(name, sim / "timeline.json", real / "timeline.json");
    ASSERT_FALSE(json.is_null());
    EXPECT_EQ(json["ops"]["matched"], json["ops"]["measured"]) << name;
    EXPECT_EQ(json["ops"]["matched"], json["ops"]["predicted"]) << name;
    for (const auto& figure : json["figures"]) {
      if (!figure["error"].is_null()) {
        EXPECT_TRUE(std::isfinite(figure["error"].get<double>())) << name << " " << figure;
      }
    }
    EXPECT_TRUE(std::isfinite(json["ops"]["mape"].get<double>())) << name;
    ASSERT_EQ(json["figures"][0]["figure"], "step time");
    const double ratio = 1 + json["figures"][0]["error"].get<double>();  // predicted / measured
    EXPECT_LT(ratio, kStepTimeFactorBound) << name;
    EXPECT_GT(ratio, 1 / kStepTimeFactorBound) << name;
  }
}

}  // namespace
namespace {

// Injected faults end every rank within the timeout, with a message naming the rank and the op,
// and leave no output behind.
TEST(MpiExecutorFaultsTest, HangsCrashesAndFailedAllocationsStopTheJobNamingRankAndOp) {
  const std::string scenario = kSource + "/scenarios/real/tiny_ddp_2ranks.toml";
  const test_support::TemporaryDirectory scratch("dtsim-mpi-fault");
  const fs::path output = scratch / "out";
  struct Case {
    std::string fault;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"hang:1:ddp.bucket0.all_reduce", 3,
       "rank 0: op 'ddp.bucket0.all_reduce': the rendezvous of its group did not finish within 2 s"},
      {"crash:1:layer0.fwd.qkv", 1, "rank 1: injected crash at op 'layer0.fwd.qkv'"},
      // A rank stuck in compute after its last collective: the others' next job-wide step times out.
      {"hang:1:optimizer.adamw", 3, "did not finish within 2 s (timeout): another rank stopped"},
      {"oom:0:layer1.bwd.qkv.dgrad", 3, "rank 0: op 'layer1.bwd.qkv.dgrad': out of memory allocating"},
  };
  for (const Case& c : cases) {
    fs::remove_all(output);
    const auto start = std::chrono::steady_clock::now();
    const CommandResult result = run(mpirun(2) + " run " + scenario + " --backend mpi --timeout 2 --inject-fault " +
                                     c.fault + " -o " + output.string());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(result.code, c.exit_code) << c.fault << "\n" << result.output;
    EXPECT_NE(result.output.find(c.message), std::string::npos) << c.fault << "\n" << result.output;
    EXPECT_LT(seconds, 60) << c.fault;  // the 2 s watchdog, mpirun's start and teardown
    EXPECT_FALSE(fs::exists(output)) << c.fault;
  }
  // A parameter server that hangs: both workers time out waiting for it, one of them reports.
  const CommandResult server = run(mpirun(3) + " run " + kSource + "/scenarios/real/tiny_ps_3ranks.toml --backend mpi " +
                                   "--timeout 2 --inject-fault hang:2:ps.push_gradients -o " + output.string());
  EXPECT_EQ(server.code, 3) << server.output;
  EXPECT_EQ(count_messages(server.output), 1u) << server.output;
  EXPECT_NE(server.output.find("op 'ps.push_gradients': the rendezvous of its group did not finish within 2 s"),
            std::string::npos)
      << server.output;
  EXPECT_FALSE(fs::exists(output));
}

// A fault that could never happen is refused before anything runs (it used to be ignored, and
// the run exited 0): one message from rank 0, exit 2, nothing written.
TEST(MpiExecutorFaultsTest, AFaultThatCannotHappenIsRefused) {
  const std::string scenario = kSource + "/scenarios/real/tiny_ddp_2ranks.toml";
  const test_support::TemporaryDirectory scratch("dtsim-mpi-bad-fault");
  const fs::path output = scratch / "out";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"explode:1:x", "expected KIND:RANK:OP with KIND hang, crash, oom or corrupt"},
      {"hang:1x:ddp.bucket0.all_reduce", "expected KIND:RANK:OP"},
      {"hang:2:ddp.bucket0.all_reduce", "rank 2 is not in this job of 2 ranks (0 to 1)"},
      {"hang:-1:ddp.bucket0.all_reduce", "rank -1 is not in this job of 2 ranks"},
      {"crash:1:no.such.op", "rank 1 has no op of that name (the timeline of a simulated run lists them; e.g. compute '"},
      {"corrupt:1:ddp.bucket0.all_reduce", "a corrupted result is seen only by the check: add --verify"},
      {"corrupt:1:layer0.fwd.qkv --verify", "--verify does not check this op's result on rank 1"},
      {"corrupt:1:ddp.bucket0.all_reduce --verify --set backend.collectives=dtsim",
       "not sends, barriers, parameter-server push and pull, collectives run as dtsim's schedules"},
  };
  for (const auto& [fault, message] : cases) {
    const CommandResult result =
        run(mpirun(2) + " run " + scenario + " --backend mpi --inject-fault " + fault + " -o " + output.string());
    EXPECT_EQ(result.code, 2) << fault << "\n" << result.output;
    EXPECT_NE(result.output.find("dtsim: cannot execute: --inject-fault "), std::string::npos) << fault << "\n" << result.output;
    EXPECT_NE(result.output.find(message), std::string::npos) << fault << "\n" << result.output;
    EXPECT_EQ(count_messages(result.output), 1u) << fault << "\n" << result.output;
    EXPECT_FALSE(fs::exists(output)) << fault;
  }
}

}  // namespace

namespace {

TEST(MpiExecutorVerifyTest, EveryResultIsCheckedAndTensorParallelismMatchesTheUnshardedForward) {
  const test_support::TemporaryDirectory scratch("dtsim-verify");
  const CommandResult ddp = run(mpirun(2) + " run " + kSource + "/scenarios/real/tiny_ddp_2ranks.toml --backend mpi --verify -o " +
                                (scratch / "ddp").string());
  ASSERT_EQ(ddp.code, 0) << ddp.output;
  EXPECT_NE(ddp.output.find("collective and transfer results checked element by element"), std::string::npos) << ddp.output;
  const std::string tp_scenario = kSource + "/scenarios/real/tiny_tp_2ranks.toml";
  const CommandResult tp =
      run(mpirun(2) + " run " + tp_scenario + " --backend mpi --verify -o " + (scratch / "tp").string());
  ASSERT_EQ(tp.code, 0) << tp.output;
  EXPECT_NE(tp.output.find("matches the unsharded one (relative error: attention"), std::string::npos) << tp.output;

  // A wrong element is caught, and the message names the rank, the op and the element.
  const CommandResult corrupt =
      run(mpirun(2) + " run " + tp_scenario + " --backend mpi --verify --inject-fault corrupt:1:layer0.fwd.mlp_g");
  EXPECT_EQ(corrupt.code, 3) << corrupt.output;
  EXPECT_NE(corrupt.output.find("rank 1: op 'layer0.fwd.mlp_g': wrong result (group member 1): element 0: expected 3"),
            std::string::npos)
      << corrupt.output;
  // Parameter-server push and pull run as dtsim's schedules, which --verify cannot check: a
  // corruption aimed at one is refused before anything runs.
  const CommandResult unchecked = run(mpirun(3) + " run " + kSource +
                                      "/scenarios/real/tiny_ps_3ranks.toml --backend mpi --verify --inject-fault "
                                      "corrupt:2:ps.push_gradients");
  EXPECT_EQ(unchecked.code, 2) << unchecked.output;
  EXPECT_NE(unchecked.output.find("--inject-fault corrupt:2:ps.push_gradients: --verify does not check this op's result"),
            std::string::npos)
      << unchecked.output;
}

// The MoE and context-parallel Programs run for real with every all-to-all and ring transfer
// checked, and the layers they shard — the MoE layer over ep, ring attention (cp 2 and 4),
// Ulysses and all-gather attention over cp — computed sharded over the same ranks match the
// unsharded layer.
TEST(MpiExecutorVerifyTest, ExpertAndContextParallelProgramsRunForRealAndTheirTransfersVerify) {
  const test_support::TemporaryDirectory scratch("dtsim-verify-moe-cp");
  struct Run {
    std::string scenario, set;
    int ranks;
    std::string matches;  // what the sharded-layer check says
  };
  const std::string four = " --set cluster.gpus_per_node=4 --set parallel.cp=4";
  const std::vector<Run> runs = {
      {"/scenarios/real/tiny_moe_2ranks.toml", "", 2,
       "the expert-parallel MoE forward (128 tokens per rank, 4 experts, top-2"},
      {"/scenarios/real/tiny_cp_2ranks.toml", "", 2, "the context-parallel ring attention"},
      {"/scenarios/real/tiny_cp_2ranks.toml", four, 4, "the context-parallel ring attention"},
      {"/scenarios/real/tiny_cp_2ranks.toml", " --set 'parallel.cp_scheme=\"ulysses\"'", 2,
       "the context-parallel Ulysses attention"},
      {"/scenarios/real/tiny_cp_2ranks.toml", four + " --set 'parallel.cp_scheme=\"all_gather\"'",
       4, "the context-parallel all-gather attention"}};
  int index = 0;
  for (const Run& r : runs) {
    const fs::path directory = scratch / std::to_string(index++);
    const CommandResult real =
        run(mpirun(r.ranks) + " run " + kSource + r.scenario + r.set + " --backend mpi --verify -o " + directory.string());
    ASSERT_EQ(real.code, 0) << r.scenario << r.set << real.output;
    EXPECT_NE(real.output.find("collective and transfer results checked element by element"), std::string::npos) << real.output;
    const std::size_t check = real.output.find(r.matches);
    ASSERT_NE(check, std::string::npos) << r.scenario << r.set << real.output;
    EXPECT_NE(real.output.find("matches the unsharded one (relative error", check), std::string::npos) << real.output;
    // Expert dispatch/combine and Ulysses as all-to-alls, the ring's K,V blocks as send/recv,
    // all-gather attention's K and V as all-gathers.
    const std::string traffic = r.matches.find("ring") != std::string::npos         ? "send_recv"
                                : r.matches.find("all-gather") != std::string::npos ? "all_gather"
                                                                                    : "all_to_all";
    EXPECT_NE(real.output.find(traffic), std::string::npos) << r.scenario << r.set << real.output;
  }
  // A corrupted token dispatch is caught on the rank that received it.
  const CommandResult corrupt = run(mpirun(2) + " run " + kSource +
                                    "/scenarios/real/tiny_moe_2ranks.toml --backend mpi --verify --inject-fault corrupt:1:layer0.fwd.dispatch");
  EXPECT_EQ(corrupt.code, 3) << corrupt.output;
  EXPECT_NE(corrupt.output.find("rank 1: op 'layer0.fwd.dispatch': wrong result"), std::string::npos) << corrupt.output;
}

}  // namespace

namespace {

// [backend] collectives = "dtsim": the ring, tree and halving-doubling schedules the simulator
// prices run step by step with MPI point-to-point; every op still runs once.
TEST(MpiExecutorSchedulesTest, DtsimsOwnCollectiveSchedulesRunForReal) {
  const std::string scenario = kSource + "/scenarios/real/tiny_ddp_2ranks.toml";
  const test_support::TemporaryDirectory scratch("dtsim-mpi-schedules");
  for (const std::string algorithm : {"ring", "tree", "hd"}) {
    const fs::path directory = scratch / algorithm;
    const std::string sets = " --set backend.collectives=dtsim --set collectives.all_reduce=" + algorithm;
    const CommandResult real = run(mpirun(2) + " run " + scenario + sets + " --backend mpi -o " + directory.string());
    ASSERT_EQ(real.code, 0) << algorithm << "\n" << real.output;
    const trace::Timeline measured = trace::read_chrome_trace_file((directory / "timeline.json").string());
    std::size_t all_reduces = 0;
    for (const trace::Span& span : measured.spans) all_reduces += span.category == trace::Category::kAllReduce;
    EXPECT_GT(all_reduces, 0u) << algorithm;
  }
  const CommandResult hier = run(mpirun(2) + " run " + scenario +
                                 " --set backend.collectives=dtsim --set collectives.all_reduce=hier --backend mpi");
  EXPECT_EQ(hier.code, 2);  // refused before anything runs, by rank 0 alone
  EXPECT_NE(hier.output.find("dtsim: cannot execute: rank 0, op 'ddp.bucket0.all_reduce': algorithm hier cannot run here"),
            std::string::npos)
      << hier.output;  // hier needs two nodes
}

}  // namespace

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream file(path);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// `mpirun -np 2 dtsim sweep|search` shares the simulations out over the two processes and
// prints and writes what one process does (search's JSON differs only in its own wall time).
TEST(MpiSharedWorkTest, SweepAndSearchUnderMpirunGiveTheSingleProcessResult) {
  const test_support::TemporaryDirectory scratch("dtsim-shared-work");
  const std::string sweep = " sweep " + kSource + "/scenarios/ps_consistency_stragglers.toml --sweep ps.staleness=1,3 --json";
  const std::string search =
      " search " + kSource + "/tests/data/search_llama2_70b_64gpu.toml --simulate 3 --sample 1 --json";
  for (const auto& [name, command] : {std::pair{"sweep", sweep}, std::pair{"search", search}}) {
    const fs::path one = scratch / (std::string(name) + "-one"), two = scratch / (std::string(name) + "-two");
    const CommandResult single = run("{ " + test_support::dtsim() + command + " -o " + one.string() + " 2>/dev/null; } > " +
                                     (scratch / "one.json").string());
    ASSERT_EQ(single.code, 0) << name << single.output;
    const CommandResult shared = run("{ " + mpirun(2) + command + " -o " + two.string() + " 2>/dev/null; } > " +
                                     (scratch / "two.json").string());
    ASSERT_EQ(shared.code, 0) << name << shared.output << read_file(scratch / "two.json");
    nlohmann::json alone = nlohmann::json::parse(read_file(scratch / "one.json"));
    nlohmann::json together = nlohmann::json::parse(read_file(scratch / "two.json"));  // one process printed
    if (std::string(name) == "search") {
      ASSERT_GE(alone["ranking"].size(), 3u) << alone.dump(2);
      alone.erase("estimate_seconds");
      together.erase("estimate_seconds");
    } else {
      ASSERT_EQ(alone["rows"].size(), 6u) << alone.dump(2);  // 3 consistencies × 2 staleness bounds
    }
    EXPECT_EQ(together, alone) << name;
    const std::string csv = std::string(name) == "search" ? "search/search.csv" : "sweep.csv";
    EXPECT_EQ(read_file(two / csv), read_file(one / csv)) << name;
  }
  // Each process simulates its share: on a terminal (script(1) gives one), the first process's
  // progress counts 2 of the 4 simulated layouts, not all 4.
  const CommandResult shown =
      run("DTSIM_PROGRESS_AFTER_MS=0 script -qec '" + mpirun(2) + search + " -o " + (scratch / "shown").string() + "' /dev/null");
  ASSERT_EQ(shown.code, 0) << shown.output;
  EXPECT_NE(shown.output.find("2/2 layouts simulated by this process"), std::string::npos) << shown.output;
  EXPECT_EQ(shown.output.find("/4 layouts"), std::string::npos) << shown.output;

  // Bad input: every process finds it, one message.
  const CommandResult bad = run(mpirun(2) + " sweep " + kSource + "/scenarios/default.toml -o " + (scratch / "bad").string());
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.output.find("no [sweep] table"), std::string::npos) << bad.output;
  EXPECT_EQ(count_messages(bad.output), 1u) << bad.output;
  EXPECT_FALSE(fs::exists(scratch / "bad"));

  // A process that cannot read its scenario (a file missing on its host) stops the others
  // instead of leaving them waiting for it, and says why.
  const std::string sweep_file = kSource + "/scenarios/ps_consistency_stragglers.toml";
  const CommandResult alone = run(
      "timeout 120 env " +
      test_support::mpirun_program(2, "sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then f=" +
                                          (scratch / "missing.toml").string() + "; else f=" + sweep_file + "; fi; exec " +
                                          test_support::dtsim() + " sweep \"$f\" -o " + (scratch / "alone").string() + "'"));
  EXPECT_NE(alone.code, 0) << alone.output;
  EXPECT_NE(alone.code, 124) << "the job hung: " << alone.output;
  EXPECT_NE(alone.output.find("(process 1 of 2) dtsim: error: "), std::string::npos) << alone.output;
  EXPECT_NE(alone.output.find("missing.toml"), std::string::npos) << alone.output;
  EXPECT_NE(alone.output.find("process 1 of 2 stopped before the simulations"), std::string::npos) << alone.output;
  EXPECT_FALSE(fs::exists(scratch / "alone" / "sweep.csv"));
}

}  // namespace
