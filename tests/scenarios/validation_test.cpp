// The validation suite (tests/validation/cases.toml, `dtsim validate`): the manifest reads,
// every published measurement gets a finite prediction, the metrics follow their sources'
// formulas, and the errors stay within the bounds docs/validation.md records for today.
#include "scenarios/validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "scenarios/scenario_loader.h"
#include "tests/support/temporary_directory.h"

namespace {

const std::string kSource = DTSIM_SOURCE_DIR;
const std::string kManifest = kSource + "/tests/validation/cases.toml";

// Equation 3 of Narayanan et al. (SC'21) for GPT 1.7B (B 512, s 2048, l 24, h 2304, V 51,200)
// on 32 GPUs, worked by hand: F = 1.54668e16 FLOPs per iteration, 483.34 TFLOP/s per GPU for a
// one-second iteration; the paper's 137 TFLOP/s is an iteration of 3.53 s.
TEST(ValidationTest, MegatronThroughputIsThePapersEquationThree) {
  const scenarios::Scenario gpt = scenarios::load_scenario(kSource + "/tests/validation/megatron_sc21/gpt_1.7b.toml");
  EXPECT_NEAR(scenarios::megatron_tflops_per_gpu(gpt, 1.0), 483.338, 1e-3);
  EXPECT_NEAR(scenarios::megatron_tflops_per_gpu(gpt, 483.338 / 137), 137, 1e-3);
}

TEST(ValidationTest, TheManifestNamesEverySourceAndEveryScenarioLoads) {
  const auto cases = scenarios::read_validation_manifest(kManifest);
  ASSERT_GE(cases.size(), 18u);
  for (const scenarios::ValidationCase& c : cases) {
    EXPECT_FALSE(c.source.empty()) << c.name;
    EXPECT_GT(c.published, 0) << c.name;
    EXPECT_NO_THROW(scenarios::load_scenario(c.scenario)) << c.name;
  }
}

// The explored runs (docs/validation.md, "Explored, not in the manifest") are not simulated
// here, but their scenarios must keep reading, without warnings, as the notes describe them.
TEST(ValidationTest, TheExploredScenariosRead) {
  int read = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(kSource + "/tests/validation/explored")) {
    EXPECT_EQ(scenarios::load_scenario(entry.path().string()).warnings, std::vector<std::string>{})
        << entry.path();
    ++read;
  }
  EXPECT_GE(read, 1);
}

// Reading `manifest` fails with one error naming `key`, whose message mentions `expected`.
void expect_manifest_error(const std::filesystem::path& manifest, const std::string& key,
                           const std::string& expected) {
  try {
    scenarios::read_validation_manifest(manifest.string());
    FAIL() << "accepted";
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.key(), key);
    EXPECT_NE(error.message().find(expected), std::string::npos) << error.what();
  }
}

TEST(ValidationTest, AManifestMistakeIsOneMessageNamingTheKey) {
  const test_support::TemporaryDirectory scratch("dtsim-validation");
  const std::string scenario = kSource + "/scenarios/default.toml";
  std::ofstream(scratch / "cases.toml")
      << "[[case]]\nname = \"x\"\ngroup = \"throughput\"\nscenario = \"" << scenario << "\"\n"
      << "metric = \"bus_bandwidth_gbyte_s\"\npublished = 1\nsource = \"s\"\n";
  expect_manifest_error(scratch / "cases.toml", "case.metric", "megatron_tflops_per_gpu");
  // A row's missing scenario is the manifest's line (it was the scenario's path alone).
  std::ofstream(scratch / "missing.toml")
      << "[[case]]\nname = \"x\"\ngroup = \"throughput\"\nscenario = \"nowhere.toml\"\n"
      << "metric = \"megatron_tflops_per_gpu\"\npublished = 1\nsource = \"s\"\n";
  expect_manifest_error(scratch / "missing.toml", "case.scenario", "no scenario file");
  try {
    scenarios::read_validation_manifest((scratch / "missing.toml").string());
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.location(), (scratch / "missing.toml").string() + ":4:12") << error.what();
  }
}

TEST(ValidationTest, ACollectiveRowRunsTheAlgorithmItsSourceForced) {
  const test_support::TemporaryDirectory scratch("dtsim-validation");
  const std::string cluster = kSource + "/tests/validation/nccl_tests/hgx_h100_1node.toml";
  const auto row = [&](const std::string& name, const std::string& extra) {
    return "[[case]]\nname = \"" + name + "\"\ngroup = \"collective\"\nscenario = \"" + cluster +
           "\"\nop = \"all_reduce\"\nranks = 8\nbytes = 134217728\nmetric = \"time_us\"\npublished "
           "= 600\n" +
           "source = \"s\"\n" + extra;
  };
  std::ofstream(scratch / "cases.toml")
      << row("default", "") << row("ring forced", "algorithm = \"ring\"\n");
  const scenarios::ValidationResult result =
      scenarios::run_validation((scratch / "cases.toml").string(), 0);
  ASSERT_EQ(result.rows.size(), 2u);
  EXPECT_EQ(result.rows[0].validation_case.algorithm, "auto");
  EXPECT_EQ(result.rows[1].validation_case.algorithm, "ring");
  // On an HGX H100 NCCL picks NVLS at 128 MiB, which moves (P+1)/P of the data per GPU where the
  // ring moves 2(P−1)/P: forcing the ring takes longer.
  EXPECT_GT(result.rows[1].predicted, result.rows[0].predicted * 1.1);

  std::ofstream(scratch / "bad.toml") << row("x", "algorithm = \"hd\"\n");
  expect_manifest_error(scratch / "bad.toml", "case.algorithm", "ring");
  // One rank moves nothing (its bus bandwidth printed NaN), a barrier no data (71,582 GB/s).
  std::ofstream(scratch / "one.toml")
      << std::regex_replace(row("x", ""), std::regex("ranks = 8"), "ranks = 1");
  expect_manifest_error(scratch / "one.toml", "case.ranks", "one rank moves nothing");
  std::ofstream(scratch / "barrier.toml")
      << std::regex_replace(row("x", ""), std::regex("op = \"all_reduce\""), "op = \"barrier\"");
  expect_manifest_error(scratch / "barrier.toml", "case.op", "expected one of: all_reduce");
  // More ranks than the row's scenario has GPUs is the row's mistake (it was blamed on
  // "dtsim collective: --ranks").
  std::ofstream(scratch / "large.toml")
      << std::regex_replace(row("x", ""), std::regex("ranks = 8"), "ranks = 16");
  expect_manifest_error(scratch / "large.toml", "case.ranks", "16 ranks do not fit the 8 GPUs of");
}

// The accuracy dtsim has today on the development set, as docs/validation.md records it: a
// change that makes any group worse fails here. Issue #13's targets (median ≤ 5 %, max ≤ 10 %)
// replace these bounds once the models meet them.
struct GroupBound {
  const char* group;
  double median;
  double max;
};
// Measured 2026-12-03, after the compute model from component measurements (sustained GEMMs,
// their memory traffic, each memory-bound kernel's own rate, fused dropout-add) and PyTorch
// FSDP's passes over each unit's gradient before its reduce-scatter, autograd's gradient
// accumulation and the mixed-precision optimizer's passes: throughput median 5.8 %, max 13.0 %
// (2026-12-04, with Composer's unfused AdamW in the llm-foundry rows: 5.2 %, 12.9 %; with the
// backward kernels that have no forward twin — bias gradients, the QKV concatenation under fused
// attention, the residual stream's gradient sums: 3.6 %, 11.0 %);
// collective median 2.0 %, max 17.9 % (the small-message rows from
// H100 runs with NCCL's defaults); kernel median 2.6 %, max 3.2 % (Hugging Face's LlamaMLP on
// an A100, Liger-Kernel's data: the attention rows set a model constant, so the group counted
// only the MLP rows). 2026-12-04, with Hopper's GEMM traffic 10 % exposed (measured on an H200
// with today's cuBLAS), the H100's 2023 "PyTorch" attention rows no longer set the constant and
// count: +12 % and +20 % (dtsim fast; today's kernels run them 30–40 % faster than the sum
// rule said, bench/results/h200-2026-12-04-shapes); kernel median 3.2 %, max 20.4 %. Each
// kernel row of an A100 must stay within 10 % (below). 2026-12-04, late, with Megatron-LM's
// interleaved chunks reducing their gradients only after the whole schedule (no
// overlap_grad_reduce): throughput median 3.6 %, max 9.9 % (76B) — issue #13's targets, which
// are now the throughput group's bounds. 2026-12-05, with NCCL's NVLSTree across H100 nodes
// and its tree correction: collective median 1.8 %, max 15.1 % (the one-node 8 B row); with
// three rows of a four-node H100 run: median 1.9 %, max 15.1 %. 2026-12-06, with three
// sendrecv_perf rows: median 1.8 %, max 15.1 %. 2026-12-07, with a backward collective waiting
// for the gradient accumulation before it: throughput median 2.4 %, max 8.8 % (76B).
constexpr GroupBound kTodaysBounds[] = {
    {"throughput", 0.05, 0.10}, {"collective", 0.05, 0.16}, {"kernel", 0.04, 0.21}};

TEST(ValidationTest, EveryCaseRunsAndEachGroupStaysWithinTodaysBounds) {
  const scenarios::ValidationResult result = scenarios::run_validation(kManifest, 0);
  for (const scenarios::ValidationRow& row : result.rows) {
    EXPECT_TRUE(std::isfinite(row.predicted) && row.predicted > 0) << row.validation_case.name;
    if (row.validation_case.group == "kernel" &&
        row.validation_case.name.find("A100") != std::string::npos) {
      EXPECT_LE(std::abs(row.error), 0.10) << row.validation_case.name;
    }
  }
  ASSERT_EQ(result.summaries.size(), std::size(kTodaysBounds));
  for (std::size_t g = 0; g < result.summaries.size(); ++g) {
    EXPECT_EQ(result.summaries[g].group, kTodaysBounds[g].group);
    EXPECT_LE(result.summaries[g].median_abs_error, kTodaysBounds[g].median) << result.summaries[g].group;
    EXPECT_LE(result.summaries[g].max_abs_error, kTodaysBounds[g].max) << result.summaries[g].group;
  }
  std::fputs(scenarios::format_validation(result).c_str(), stdout);
}

}  // namespace
