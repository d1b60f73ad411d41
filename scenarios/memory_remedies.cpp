// The remedies for a run that does not fit, each simulated (see memory_remedies.h).
#include "scenarios/memory_remedies.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "scenarios/sweep.h"

namespace scenarios {
namespace {

using strategies::Checkpointing;

struct Candidate {
  std::string name;
  std::vector<std::string> overrides;
};

// The chapter's remedies that change something in this scenario.
std::vector<Candidate> applicable(const Scenario& scenario) {
  const strategies::LoweringInput& lowering = scenario.lowering;
  const strategies::TrainingSpec& training = lowering.training;
  const std::string& strategy = lowering.parallel.strategy;
  std::vector<Candidate> candidates;
  if (training.checkpointing == Checkpointing::kNone) {
    candidates.push_back({"activation checkpointing (selective)", {"training.activation_checkpointing=\"selective\""}});
  }
  if (training.checkpointing != Checkpointing::kFull) {
    candidates.push_back({"activation checkpointing (full)", {"training.activation_checkpointing=\"full\""}});
  }
  if (training.precision == strategies::Precision::kFP32) {
    candidates.push_back({"mixed precision (bf16 compute, fp32 master weights)", {"training.precision=\"mixed\""}});
  }
  if (strategy == "ddp") {
    candidates.push_back({"ZeRO-1 (optimizer states sharded)", {"parallel.strategy=\"zero\"", "zero.stage=1"}});
    candidates.push_back({"FSDP FULL_SHARD (all model states sharded)", {"parallel.strategy=\"fsdp\""}});
  } else if (strategy == "zero") {
    for (std::int32_t stage = lowering.zero.stage + 1; stage <= 3; ++stage) {
      candidates.push_back({fmt::format("ZeRO-{}", stage), {fmt::format("zero.stage={}", stage)}});
    }
  } else if (strategy == "fsdp") {
    if (lowering.fsdp.sharding != strategies::ShardingStrategy::kFullShard) {
      candidates.push_back({"FSDP FULL_SHARD", {"fsdp.sharding_strategy=\"FULL_SHARD\""}});
    }
    if (!lowering.fsdp.limit_all_gathers) {
      candidates.push_back({"FSDP limit_all_gathers", {"fsdp.limit_all_gathers=true"}});
    }
    if (!lowering.fsdp.cpu_offload) candidates.push_back({"FSDP CPU offload", {"fsdp.cpu_offload=true"}});
  }
  if (training.micro_batch > 1) {  // the same global batch in more, smaller micro-batches
    const std::int64_t micro = training.micro_batch % 2 == 0 ? training.micro_batch / 2 : 1;
    candidates.push_back({fmt::format("micro-batch {} (accumulation {})", micro,
                                      training.accumulation * training.micro_batch / micro),
                          {fmt::format("training.micro_batch={}", micro),
                           fmt::format("training.gradient_accumulation={}",
                                       training.accumulation * training.micro_batch / micro)}});
  }
  return candidates;
}

std::string gigabytes(std::int64_t bytes) { return fmt::format("{:.2f} GB", static_cast<double>(bytes) / 1e9); }

}  // namespace

std::vector<MemoryRemedy> memory_remedies(const ScenarioDocument& document, const Scenario& scenario,
                                          const trace::Report& report, unsigned threads) {
  std::vector<Candidate> candidates;
  std::vector<Scenario> variants;
  for (Candidate& candidate : applicable(scenario)) {
    try {  // a remedy this layout cannot take (FSDP under pipeline parallelism, say) is no remedy
      variants.push_back(document.variant(candidate.overrides, "memory remedy: " + candidate.name).read());
      candidates.push_back(std::move(candidate));
    } catch (const ScenarioError&) {
    }
  }
  std::vector<std::string> failures;
  const std::vector<trace::Report> reports = run_all(variants, threads, {}, &failures);
  std::vector<MemoryRemedy> remedies;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!failures[i].empty()) continue;
    MemoryRemedy remedy{candidates[i].name, candidates[i].overrides, reports[i].peak_memory_bytes,
                        report.peak_memory_bytes - reports[i].peak_memory_bytes, !reports[i].oom};
    if (remedy.saved_bytes > 0) remedies.push_back(std::move(remedy));
  }
  std::stable_sort(remedies.begin(), remedies.end(),
                   [](const MemoryRemedy& a, const MemoryRemedy& b) { return a.saved_bytes > b.saved_bytes; });
  return remedies;
}

std::string format_memory_remedies(const std::vector<MemoryRemedy>& remedies) {
  if (remedies.empty()) return "none of the chapter's remedies that apply here lowers the peak; more GPUs, or tensor/pipeline parallelism\n";
  std::string text;
  for (const MemoryRemedy& remedy : remedies) {
    text += fmt::format("  {}: --set {} → peak {}, saves {}, {}\n", remedy.name, fmt::join(remedy.overrides, " --set "),
                        gigabytes(remedy.peak_memory_bytes), gigabytes(remedy.saved_bytes),
                        remedy.fits ? "fits" : "still does not fit");
  }
  return text;
}

nlohmann::json memory_remedies_json(const std::vector<MemoryRemedy>& remedies) {
  nlohmann::json json = nlohmann::json::array();
  for (const MemoryRemedy& remedy : remedies) {
    json.push_back({{"remedy", remedy.name},
                    {"overrides", remedy.overrides},
                    {"peak_memory_bytes", remedy.peak_memory_bytes},
                    {"saved_bytes", remedy.saved_bytes},
                    {"fits", remedy.fits}});
  }
  return json;
}

}  // namespace scenarios
