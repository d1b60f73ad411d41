// Reading nccl-tests' output (scenarios/nccl_tests_log.h): the result rows of the layouts
// nccl-tests' versions print, the ranks and the test a log names, and one clear error for a
// torn row or a file with no rows.
#include "scenarios/nccl_tests_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "scenarios/scenario.h"
#include "scenarios/validation.h"
#include "sim/collectives/schedule.h"

namespace {

scenarios::NcclTestsLog parse(const std::string& text) {
  std::istringstream log(text);
  return scenarios::parse_nccl_tests_log(log, "run.log");
}

TEST(NcclTestsLogTest, ReadsTodaysLayoutAndTheOlderOnesWithoutRootOrRedop) {
  const auto log = parse(R"(# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5
#  Rank  0 Group  0 Pid  29262 on bm-h100-01 device  0 [0000:19:00] NVIDIA H100 80GB HBM3
#  Rank 15 Group  0 Pid  26640 on bm-h100-02 device  7 [0000:db:00] NVIDIA H100 80GB HBM3
NCCL version 2.26.2+cuda12.8
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           8             2     float     sum      -1    68.52    0.00    0.00      0    24.70    0.00    0.00      0
        1024           256     float     sum    29.75    0.03    0.06  0e+00    26.65    0.04    0.07  0e+00
        2048           512     float    28.19    0.07    0.14  0e+00    28.22    0.07    0.14  0e+00
        4096          1024     float     sum      -1    30.24    0.14    0.25    N/A    29.72    0.14    0.26    N/A
# Out of bounds values : 0 OK
)");
  EXPECT_EQ(log.op, "all_reduce");
  EXPECT_EQ(log.ranks, 16);
  ASSERT_EQ(log.rows.size(), 4u);
  EXPECT_EQ(log.rows[0].bytes, 8);
  EXPECT_DOUBLE_EQ(log.rows[0].out_of_place_us, 68.52);
  EXPECT_DOUBLE_EQ(log.rows[0].in_place_us, 24.70);
  EXPECT_EQ(log.rows[0].line, 7);
  EXPECT_DOUBLE_EQ(log.rows[1].in_place_us, 26.65);  // redop, no root
  EXPECT_DOUBLE_EQ(log.rows[2].in_place_us, 28.22);  // neither
  EXPECT_DOUBLE_EQ(log.rows[3].in_place_us, 29.72);  // #wrong not checked: N/A
}

TEST(NcclTestsLogTest, SkipsNoiseAndZeroByteRowsAndNamesNcclTestsOwnTestNames) {
  const auto log =
      parse(R"(--------------------------------------------------------------------------
WARNING: Could not generate an xpmem segment id for this process'
Run-1 Starting command at 2025-05-22 07:36:17
# Collective test starting: alltoall_perf_mpi
           0             0     float    none      -1     5.70    0.00    0.00      0     5.54    0.00    0.00      0
     1048576        262144     float    none      -1    82.17   12.76   11.96      0    82.21   12.75   11.95      0
)");
  EXPECT_EQ(log.op, "all_to_all");
  EXPECT_EQ(log.ranks, 0);  // not listed
  ASSERT_EQ(log.rows.size(), 1u);
  EXPECT_EQ(log.rows[0].bytes, 1048576);
}

TEST(NcclTestsLogTest, ATornRowAWrongResultOrALogWithoutRowsIsOneErrorNamingTheFileAndLine) {
  try {
    parse(R"(#  Rank  0 Group  0
        1024           256     float     sum      -1    29.75    0.03
)");
    FAIL() << "accepted";
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.location(), "run.log:2");
    EXPECT_EQ(error.key(), "--compare");
    EXPECT_NE(error.hint().find("#wrong"), std::string::npos) << error.hint();
  }
  try {
    parse(R"(# nThread 1 nGpus 8
nothing measured
)");
    FAIL() << "accepted";
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.location(), "run.log");
    EXPECT_NE(error.message().find("no nccl-tests result rows"), std::string::npos);
  }
  // A row whose results nccl-tests found wrong is no reference for the times.
  try {
    parse(R"(#  Rank  0 Group  0
        1024           256     float     sum      -1    29.75    0.03    0.06      0    26.65    0.04    0.07      3
)");
    FAIL() << "accepted";
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.location(), "run.log:2");
    EXPECT_NE(error.message().find("wrong results in this row (#wrong 0 out of place, 3 in place)"),
              std::string::npos)
        << error.message();
  }
  // A time of 0 reads, but is no measurement: said so (it was "times do not read").
  try {
    parse(
        R"(        1024           256     float     sum      -1    29.75    0.03    0.06      0     0.00    0.00    0.00      0
)");
    FAIL() << "accepted";
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_NE(error.message().find("a time of 29.75 µs out of place and 0.00 µs in place"),
              std::string::npos)
        << error.message();
  }
  // A size too large for any integer is not a row, not a crash.
  EXPECT_THROW(parse(R"(99999999999999999999999 2 float sum -1 1 1 1 0 1 1 1 0
)"),
               scenarios::ScenarioError);
}

// The published logs the research notes compare against (tests/validation/nccl_tests/logs) read
// whole, and the validation rows taken from them are the logs' own in-place figures.
TEST(NcclTestsLogTest, ThePublishedLogsReadWholeAndAgreeWithTheValidationRowsTakenFromThem) {
  const std::string validation = std::string(DTSIM_SOURCE_DIR) + "/tests/validation/";
  const scenarios::NcclTestsLog two =
      scenarios::read_nccl_tests_log(validation + "nccl_tests/logs/issue309_2nodes_h100.txt");
  const scenarios::NcclTestsLog four =
      scenarios::read_nccl_tests_log(validation + "nccl_tests/logs/issue309_4nodes_h100.txt");
  EXPECT_EQ(two.ranks, 16);
  EXPECT_EQ(four.ranks, 32);
  EXPECT_EQ(two.op, "all_reduce");
  ASSERT_EQ(two.rows.size(), 32u);  // 8 B to 16 GiB by factors of 2
  ASSERT_EQ(four.rows.size(), 32u);
  std::size_t checked = 0;
  for (const scenarios::ValidationCase& c :
       scenarios::read_validation_manifest(validation + "cases.toml")) {
    const bool from_two = c.scenario.ends_with("hgx_h100_2nodes.toml");
    if (!from_two && !c.scenario.ends_with("hgx_h100_4nodes.toml")) continue;
    const scenarios::NcclTestsLog& log = from_two ? two : four;
    const auto row = std::find_if(log.rows.begin(), log.rows.end(),
                                  [&](const auto& r) { return r.bytes == c.bytes; });
    ASSERT_NE(row, log.rows.end()) << c.name;
    const double busbw =
        static_cast<double>(c.bytes) / row->in_place_us / 1e3 *
        collectives::bus_bandwidth_factor(program::CollectiveKind::kAllReduce, c.ranks);
    EXPECT_NEAR(c.metric == "time_us" ? row->in_place_us : busbw, c.published, 0.001 * c.published)
        << c.name;
    ++checked;
  }
  EXPECT_EQ(checked, 6u);
}

}  // namespace
