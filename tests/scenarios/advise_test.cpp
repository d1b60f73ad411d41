// `dtsim advise`: the chapter's rules pick the candidates, the simulator ranks them.
#include "scenarios/advise.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

scenarios::Advice advise(const std::string& model, const std::vector<std::string>& overrides = {}) {
  auto document = scenarios::ScenarioDocument::from_string(R"(
[cluster]
node = "hgx-h100"
nodes = 1

[training]
global_batch = 16
micro_batch = 1
sequence_length = 2048

[network]
model = "analytic"
)" + model,
                                                           "advise_test.toml");
  for (const std::string& assignment : overrides) document.set(assignment, "test");
  return scenarios::advise(document, 1);
}

bool proposes(const scenarios::Advice& advice, const std::string& layout) {
  return std::any_of(advice.candidates.begin(), advice.candidates.end(),
                     [&](const scenarios::AdviceCandidate& c) { return c.layout == layout; });
}

bool mentions(const scenarios::Advice& advice, const std::string& text) {
  return std::any_of(advice.rules.begin(), advice.rules.end(),
                     [&](const std::string& rule) { return rule.find(text) != std::string::npos; });
}

TEST(AdviseTest, SevenBillionWithAdamNeedsZeroOneOnAnH100) {
  // 16 B × 6.74 B = 108 GB > 80 GB, but the 13.5 GB of weights fit: ZeRO-1 (and FSDP).
  const auto advice = advise("[model]\npreset = \"llama-2-7b\"\n");
  EXPECT_TRUE(mentions(advice, "→ ZeRO-1"));
  EXPECT_TRUE(proposes(advice, "ZeRO-1, dp 8"));
  EXPECT_TRUE(proposes(advice, "FSDP, dp 8"));
  EXPECT_TRUE(proposes(advice, "as written"));
  // hidden 4096, 6.7 B parameters, sequence 2048: the tree's middle branch, tp 2–4.
  EXPECT_TRUE(mentions(advice, "tp 2–4"));
  EXPECT_TRUE(proposes(advice, "DDP, dp 4 × tp 2"));
  // Fitting candidates first, fastest first; every listed candidate was simulated or says why not.
  const auto& candidates = advice.candidates;
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    const auto& a = candidates[i - 1];
    const auto& b = candidates[i];
    if (!a.report || !b.report) continue;
    if (a.report->oom == b.report->oom) {
      EXPECT_GE(a.report->tokens_per_s, b.report->tokens_per_s);
    } else {
      EXPECT_FALSE(a.report->oom);
    }
  }
  for (const auto& candidate : candidates) EXPECT_TRUE(candidate.report || !candidate.rejected.empty()) << candidate.layout;
  // Plain DDP does not fit (the simulation agrees with the rule).
  const auto baseline = std::find_if(candidates.begin(), candidates.end(), [](const auto& c) { return c.layout == "as written"; });
  ASSERT_TRUE(baseline->report);
  EXPECT_TRUE(baseline->report->oom);
  EXPECT_NE(scenarios::format_advice(advice).find("advice: "), std::string::npos);
}

TEST(AdviseTest, SmallModelsStayDataParallel) {
  // 1.3 B parameters fit with DDP; hidden 2048 < 4096 keeps tp at 1–2.
  const auto advice = advise(R"([model]
name = "GPT-1.3B"
layers = 24
hidden = 2048
heads = 16
ffn_hidden = 8192
vocab = 50304
sequence = 2048
)");
  EXPECT_TRUE(mentions(advice, "→ DDP"));
  EXPECT_TRUE(mentions(advice, "tp 1–2"));
  EXPECT_TRUE(proposes(advice, "DDP, dp 8"));
  EXPECT_FALSE(proposes(advice, "ZeRO-1, dp 8"));
}

TEST(AdviseTest, LongSequencesGetTensorAndSequenceParallelismUpToTheKvHeads) {
  // Llama-3-8B at 16 k tokens: tp 4–8 with SP; its 8 KV heads cap tp at 8.
  const auto advice = advise("[model]\npreset = \"llama-3-8b\"\n", {"training.sequence_length=16384"});
  EXPECT_TRUE(mentions(advice, "tp ≤ 8"));
  EXPECT_TRUE(mentions(advice, "sequence parallelism"));
  EXPECT_TRUE(std::any_of(advice.candidates.begin(), advice.candidates.end(), [](const auto& c) {
    return c.layout.find("tp 8 (SP)") != std::string::npos;
  }));
}

TEST(AdviseTest, LayoutsTheBatchCannotFillAreRejectedWithTheReason) {
  // A global batch of 4 cannot be split over 8 data-parallel replicas.
  const auto advice = advise("[model]\npreset = \"llama-2-7b\"\n", {"training.global_batch=4", "parallel.dp=4", "parallel.tp=2"});
  const auto rejected = std::find_if(advice.candidates.begin(), advice.candidates.end(),
                                     [](const auto& c) { return c.layout == "ZeRO-1, dp 8"; });
  ASSERT_NE(rejected, advice.candidates.end());
  EXPECT_FALSE(rejected->report);
  EXPECT_NE(rejected->rejected.find("not a multiple of micro-batch 1 × dp 8"), std::string::npos);
}

TEST(AdviseTest, WhenNoCandidateCanRunTheAdviceSaysSoNotThatNoneFits) {
  // On two nodes every candidate has two replicas or more, which a global batch of 1 cannot
  // fill: nothing is simulated, and memory is not why.
  const auto advice =
      advise("[model]\npreset = \"llama-2-7b\"\n", {"cluster.nodes=2", "training.global_batch=1"});
  ASSERT_FALSE(advice.candidates.empty());
  ASSERT_FALSE(advice.candidates.front().report);
  const std::string text = scenarios::format_advice(advice);
  EXPECT_NE(text.find("advice: no candidate could be simulated"), std::string::npos) << text;
  EXPECT_EQ(text.find("fits in memory"), std::string::npos) << text;
}

TEST(AdviseTest, AScenarioWhoseOwnLayoutBreaksARuleStillGetsAdvice) {
  // dp 8 cannot split a global batch of 4: the layout as written is rejected with that
  // reason, the rules' other candidates are simulated.
  const auto advice = advise("[model]\npreset = \"llama-2-7b\"\n", {"training.global_batch=4"});
  const auto written = std::find_if(advice.candidates.begin(), advice.candidates.end(),
                                    [](const auto& c) { return c.layout == "as written"; });
  ASSERT_NE(written, advice.candidates.end());
  EXPECT_FALSE(written->report);
  EXPECT_NE(written->rejected.find("global batch 4 is not a multiple of micro_batch 1 × dp 8"),
            std::string::npos)
      << written->rejected;
  EXPECT_TRUE(proposes(advice, "DDP, dp 4 × tp 2"));
  EXPECT_GE(std::count_if(advice.candidates.begin(), advice.candidates.end(),
                          [](const auto& c) { return c.report.has_value(); }),
            2);
  // A fault beyond the layout is still the scenario's error.
  EXPECT_THROW(
      advise("[model]\npreset = \"llama-2-7b\"\n", {"training.global_batch=4", "model.layers=0"}),
      scenarios::ScenarioError);
}

TEST(AdviseTest, AnInterleavedScenarioStillGetsItsCandidatesRanked) {
  // The candidates are compared as 1F1B layouts: pp = 1 could not be interleaved at all.
  const auto advice = advise("[model]\npreset = \"llama-2-7b\"\n",
                             {"parallel.dp=2", "parallel.pp=4", "parallel.pipeline_schedule=\"interleaved-1f1b\"",
                              "parallel.virtual_stages=2", "parallel.strategy=\"zero\"", "zero.stage=1"});
  const auto simulated = std::count_if(advice.candidates.begin(), advice.candidates.end(),
                                       [](const auto& c) { return c.report.has_value(); });
  EXPECT_GE(simulated, 3);
  for (const auto& candidate : advice.candidates) {
    EXPECT_EQ(candidate.rejected.find("interleaved"), std::string::npos) << candidate.layout << ": " << candidate.rejected;
  }
}

TEST(AdviseTest, LayoutOnlyOptionsOfTheScenarioRejectNoCandidate) {
  // Pipeline scatter/gather (tp > 1 and pp > 1 only), the distributed optimizer's overlapped
  // gather (ZeRO only) and the tensor-parallel overlap (sequence parallelism only): a candidate
  // that cannot hold one runs without it, rather than being turned away.
  const auto advice = advise(
      "[model]\npreset = \"llama-2-7b\"\n",
      {"parallel.strategy=\"zero\"", "zero.stage=1", "parallel.dp=2", "parallel.tp=2",
       "parallel.pp=2", "parallel.pipeline_scatter_gather=true", "zero.overlap_param_gather=true"});
  for (const auto& candidate : advice.candidates) {
    EXPECT_TRUE(candidate.rejected.empty()) << candidate.layout << ": " << candidate.rejected;
  }
  EXPECT_TRUE(proposes(advice, "ZeRO-1, dp 8"));
  const auto zero = std::find_if(advice.candidates.begin(), advice.candidates.end(),
                                 [](const auto& c) { return c.layout == "ZeRO-1, dp 8"; });
  ASSERT_NE(zero, advice.candidates.end());
  EXPECT_TRUE(zero->report);
  const auto& keys = zero->overrides;
  EXPECT_NE(std::find(keys.begin(), keys.end(), "zero.overlap_param_gather=true"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "parallel.pipeline_scatter_gather=false"),
            keys.end());
}

}  // namespace
