// Every seed and every regression input of the fuzz targets (fuzz/fuzz_targets.h) run through
// them, in every build: an input a fuzzer once broke dtsim with stays fixed, and the seeds keep
// being inputs dtsim reads or refuses cleanly. Seeds: the example scenarios, the broken-scenario
// corpus, the traces of tests/data, fuzz/seeds; regressions: fuzz/regressions/<target>/,
// one file per finding (sanitizers/README.md says how to add one).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_targets.h"

namespace {

namespace fs = std::filesystem;
const fs::path kSource = DTSIM_SOURCE_DIR;

struct Corpus {
  const char* target;
  void (*entry)(std::string_view);
  std::vector<fs::path> folders;  // searched recursively
};
void PrintTo(const Corpus& corpus, std::ostream* out) { *out << corpus.target; }

class FuzzCorpusTest : public testing::TestWithParam<Corpus> {};

TEST_P(FuzzCorpusTest, EverySeedAndRegressionInputIsReadOrRefusedCleanly) {
  std::size_t inputs = 0;
  for (const fs::path& folder : GetParam().folders) {
    ASSERT_TRUE(fs::is_directory(kSource / folder)) << folder;
    for (const auto& entry : fs::recursive_directory_iterator(kSource / folder)) {
      const std::string name = entry.path().filename().string();
      if (!entry.is_regular_file() || name == "README.md" || name.front() == '.') continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream bytes;
      bytes << in.rdbuf();
      try {
        GetParam().entry(bytes.str());
      } catch (const fuzz::FuzzFinding& finding) {
        ADD_FAILURE() << entry.path() << ": " << finding.what();
      }
      ++inputs;
    }
  }
  EXPECT_GT(inputs, 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Targets, FuzzCorpusTest,
    testing::Values(
        Corpus{"scenario",
               fuzz::scenario,
               {"scenarios", "tests/scenarios/broken", "fuzz/seeds/scenario",
                "fuzz/regressions/scenario"}},
        Corpus{"trace", fuzz::trace, {"tests/data", "fuzz/seeds/trace", "fuzz/regressions/trace"}},
        Corpus{"compare",
               fuzz::compare,
               {"tests/data", "fuzz/seeds/trace", "fuzz/regressions/compare"}},
        Corpus{"nccl_tests_log",
               fuzz::nccl_tests_log,
               {"tests/validation/nccl_tests/logs", "fuzz/seeds/nccl_tests_log",
                "fuzz/regressions/nccl_tests_log"}}),
    [](const auto& test) { return std::string(test.param.target); });

}  // namespace
