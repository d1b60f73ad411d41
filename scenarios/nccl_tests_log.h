// Reading what nccl-tests printed (all_reduce_perf and the other *_perf tests), so that
// `dtsim collective --compare LOG` can set dtsim's times beside a real run's: each result row's
// size and its out-of-place and in-place times, the ranks the run had (its "#  Rank N ..."
// lines) and the test it was ("# Collective test starting: all_reduce_perf").
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace scenarios {

struct NcclTestsMeasurement {
  std::int64_t bytes = 0;
  double out_of_place_us = 0;
  double in_place_us = 0;
  std::int32_t line = 0;  // where the row is in the log, for messages
};

struct NcclTestsLog {
  std::vector<NcclTestsMeasurement> rows;  // in the log's order, 0-byte rows left out
  std::int32_t ranks = 0;                  // 0: the log does not list them
  std::string op;                          // "all_reduce", "all_to_all", …; empty: not stated
};

// Rows are the lines whose first fields are a size, an element count and a type; their last
// eight fields are nccl-tests' out-of-place and in-place time, algbw, busbw and #wrong (with or
// without the redop and root columns before them, as nccl-tests' versions print). Everything
// else (banners, MPI warnings, comments) is skipped. Throws ScenarioError naming `name`:line
// for a row whose times do not read, and `name` when the log holds no row at all.
NcclTestsLog parse_nccl_tests_log(std::istream& log, const std::string& name);
NcclTestsLog read_nccl_tests_log(const std::string& path);

}  // namespace scenarios
