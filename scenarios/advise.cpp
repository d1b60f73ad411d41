// The chapter's parallelism rules and the candidates they propose (see advise.h).
#include "scenarios/advise.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "scenarios/search.h"
#include "scenarios/sweep.h"
#include "strategies/model.h"

namespace scenarios {
namespace {

constexpr double kGB = 1e9;
constexpr std::int32_t kLargestTensorParallel = 8;    // "TP generally does not exceed 8" (§6.7.6)
constexpr double kHugeModel = 70e9;                   // decision tree: Ψ > 70B → tp 8
constexpr std::int64_t kSmallHidden = 4096;           // hidden < 4096 → tp 1–2
constexpr std::int64_t kLongSequence = 8192;          // sequence > 8192 → tp 4–8 with SP

// What the rules look at.
struct Facts {
  std::int32_t gpus = 0;
  std::int32_t per_node = 0;
  double memory = 0;            // bytes per GPU
  double parameters = 0;        // Ψ
  double state_bytes = 0;       // b: model-state bytes per parameter
  double weight_bytes = 0;      // bytes per parameter of the weights alone
  strategies::ModelSpec model;
  std::int64_t sequence = 0;
  std::int64_t global_batch = 0;
  std::int64_t micro_batch = 0;
  bool interleaved = false;  // the scenario's pipeline is interleaved 1F1B
};

Facts facts_of(const Scenario& scenario) {
  Facts facts;
  facts.gpus = static_cast<std::int32_t>(scenario.cluster.gpu_count());
  facts.per_node = scenario.cluster.node.gpus;
  facts.interleaved = scenario.lowering.parallel.schedule == strategies::PipelineSchedule::kInterleaved;
  facts.memory = scenario.cluster.node.gpu.memory_bytes;
  facts.model = scenario.lowering.model;
  facts.parameters = strategies::total_parameters(facts.model);
  const strategies::ModelStateBytes state = strategies::model_state_bytes(scenario.lowering.training);
  facts.state_bytes = state.total();
  facts.weight_bytes = state.parameters;
  facts.sequence = scenario.lowering.training.sequence;
  facts.global_batch = scenario.lowering.training.global_batch;
  facts.micro_batch = scenario.lowering.training.micro_batch;
  return facts;
}

std::string gigabytes(double bytes) { return fmt::format("{:.1f} GB", bytes / kGB); }

// The largest tensor-parallel degree the model's heads, KV heads and FFN width divide, inside
// a node and at most 8, that also divides the GPU count.
std::int32_t largest_tensor_parallel(const Facts& facts) {
  for (std::int32_t t = std::min(kLargestTensorParallel, facts.per_node); t > 1; --t) {
    const strategies::ModelSpec& m = facts.model;
    if (m.heads % t == 0 && m.kv_heads % t == 0 && m.ffn_hidden % t == 0 && facts.gpus % t == 0) return t;
  }
  return 1;
}

class CandidateList {
 public:
  CandidateList(const Scenario& base, const Facts& facts) : base_(base), facts_(facts) {}

  // A layout; `flavour` is "ddp", "zero1" or "fsdp" for the data-parallel part.
  void add(const std::string& flavour, std::int32_t tp, std::int32_t pp, bool sequence_parallel, std::string reason) {
    const std::int32_t dp = facts_.gpus / (tp * pp);
    // A mixture of experts under tensor parallelism needs sequence parallelism (Megatron-Core).
    sequence_parallel = sequence_parallel || (facts_.model.moe.has_value() && tp > 1);
    AdviceCandidate candidate;
    candidate.reason = std::move(reason);
    candidate.layout = label(flavour, dp, tp, pp, sequence_parallel);
    if (!seen_.insert(candidate.layout).second) return;
    const std::string strategy = flavour == "zero1" ? "zero" : flavour;
    candidate.overrides = {fmt::format("parallel.strategy=\"{}\"", strategy), fmt::format("parallel.dp={}", dp),
                           fmt::format("parallel.tp={}", tp), fmt::format("parallel.pp={}", pp),
                           fmt::format("parallel.sequence_parallel={}", sequence_parallel),
                           "parallel.cp=1", "parallel.ep=1"};  // the chapter's rules know neither
    if (flavour == "zero1") candidate.overrides.push_back("zero.stage=1");
    // The scenario's overlaps where this layout can hold them, off elsewhere (as search does).
    for (std::string& key :
         LayoutOptions::wanted_in(base_, flavour, tp, pp, 1, sequence_parallel).overrides())
      candidate.overrides.push_back(std::move(key));
    if (facts_.interleaved) {  // candidates are compared as 1F1B layouts (chunks fit few of them)
      candidate.overrides.push_back("parallel.pipeline_schedule=\"1f1b\"");
      candidate.overrides.push_back("parallel.virtual_stages=1");
    }
    const std::int64_t per_step = facts_.micro_batch * dp;
    if (facts_.global_batch % per_step != 0) {
      candidate.rejected = fmt::format("global batch {} is not a multiple of micro-batch {} × dp {}",
                                       facts_.global_batch, facts_.micro_batch, dp);
    } else {
      const std::int64_t accumulation = facts_.global_batch / per_step;
      candidate.overrides.push_back(fmt::format("training.gradient_accumulation={}", accumulation));
      if (pp > 1 && accumulation < pp) {
        candidate.rejected = fmt::format(
            "{} micro-batch{} per replica cannot fill {} pipeline stages "
            "(raise the global batch)",
            accumulation, accumulation == 1 ? "" : "es", pp);
      }
    }
    candidates_.push_back(std::move(candidate));
  }
  void add_baseline() {
    AdviceCandidate candidate;
    candidate.layout = "as written";
    candidate.reason = "the scenario's own layout";
    candidates_.push_back(std::move(candidate));
  }
  std::vector<AdviceCandidate> take() { return std::move(candidates_); }

 private:
  static std::string label(const std::string& flavour, std::int32_t dp, std::int32_t tp, std::int32_t pp, bool sp) {
    const std::string name = flavour == "zero1" ? "ZeRO-1" : flavour == "fsdp" ? "FSDP" : "DDP";
    std::string layout = fmt::format("{}, dp {}", name, dp);
    if (tp > 1) layout += fmt::format(" × tp {}{}", tp, sp ? " (SP)" : "");
    if (pp > 1) layout += fmt::format(" × pp {}", pp);
    return layout;
  }

  const Scenario& base_;
  const Facts& facts_;
  std::vector<AdviceCandidate> candidates_;
  std::set<std::string> seen_;
};

// The data-parallel flavour the memory rule picks for `share` of the model per GPU.
std::string memory_flavour(const Facts& facts, double share) {
  if (facts.state_bytes * facts.parameters * share <= facts.memory) return "ddp";
  if (facts.weight_bytes * facts.parameters * share <= facts.memory) return "zero1";
  return "fsdp";
}

// The smallest pipeline depth that fits bΨ/(tp·pp) into a GPU (Megatron's recipe), if any.
std::optional<std::int32_t> pipeline_depth(const Facts& facts, std::int32_t tp) {
  for (std::int32_t pp = 1; pp <= facts.gpus / tp && pp <= facts.model.layers; ++pp) {
    if ((facts.gpus / tp) % pp != 0) continue;
    if (facts.state_bytes * facts.parameters / (tp * pp) <= facts.memory) return pp;
  }
  return std::nullopt;
}

// Reads and simulates every candidate not yet rejected (a read error rejects it).
void simulate(const ScenarioDocument& document, std::vector<AdviceCandidate>& candidates, unsigned threads,
              const Progress& progress) {
  std::vector<Scenario> runnable;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    AdviceCandidate& candidate = candidates[i];
    if (!candidate.rejected.empty()) continue;
    try {
      runnable.push_back(document.variant(candidate.overrides, "dtsim advise: " + candidate.layout).read());
      index.push_back(i);
    } catch (const ScenarioError& error) {
      candidate.rejected = error.message() + (error.hint().empty() ? "" : " (" + error.hint() + ")");
    }
  }
  std::vector<trace::Report> reports = run_all(runnable, threads, progress);
  for (std::size_t k = 0; k < reports.size(); ++k) candidates[index[k]].report = std::move(reports[k]);
}

}  // namespace

Advice propose_layouts(const ScenarioDocument& document) {
  std::string layout_fault;  // the "as written" candidate, rejected, shows it
  const Scenario base = document.read_for_layout_choice(&layout_fault);
  const Facts facts = facts_of(base);
  Advice advice;
  advice.title = fmt::format(
      "{}: {} ({} parameters) on {} × {} ({} per node, {} each), global batch {} × {} tokens",
      base.name, facts.model.name, strategies::parameter_count_text(facts.parameters), facts.gpus,
      base.cluster.node.gpu.name, facts.per_node, gigabytes(facts.memory), facts.global_batch,
      facts.sequence);
  CandidateList candidates(base, facts);

  // Data parallelism by memory.
  const double replicated = facts.state_bytes * facts.parameters;
  const double weights = facts.weight_bytes * facts.parameters;
  const std::string flavour = memory_flavour(facts, 1.0);
  if (flavour == "ddp") {
    advice.rules.push_back(fmt::format("memory: {:.0f} B/parameter × Ψ = {} ≤ {} per GPU → DDP, no extra communication",
                                       facts.state_bytes, gigabytes(replicated), gigabytes(facts.memory)));
    candidates.add("ddp", 1, 1, false, "model states fit every GPU: plain DDP");
  } else if (flavour == "zero1") {
    advice.rules.push_back(fmt::format(
        "memory: {:.0f} B/parameter × Ψ = {} > {}, but the weights ({}) fit → ZeRO-1: shard the optimizer states",
        facts.state_bytes, gigabytes(replicated), gigabytes(facts.memory), gigabytes(weights)));
    candidates.add("zero1", 1, 1, false, "states too big for DDP, weights fit: shard the optimizer (ZeRO-1)");
    candidates.add("fsdp", 1, 1, false, "shard everything (FSDP FULL_SHARD): 16Ψ/N per GPU, 1.5× DDP's traffic");
  } else {
    advice.rules.push_back(fmt::format("memory: even the weights ({}) exceed {} per GPU → shard everything (FSDP/ZeRO-3) "
                                       "or split the model (tensor/pipeline parallelism)",
                                       gigabytes(weights), gigabytes(facts.memory)));
    candidates.add("fsdp", 1, 1, false, "weights do not fit one GPU: FSDP FULL_SHARD");
  }

  // The tensor-parallel decision tree.
  const std::int32_t tp_max = largest_tensor_parallel(facts);
  const strategies::ModelSpec& m = facts.model;
  std::vector<std::int32_t> degrees;
  bool sequence_parallel = false;
  std::string branch;
  if (m.hidden < kSmallHidden) {
    degrees = {2};
    branch = fmt::format("hidden {} < {}: a small model, TP's communication share is high → tp 1–2", m.hidden, kSmallHidden);
  } else if (facts.parameters > kHugeModel) {
    degrees = {8};
    branch = "more than 70 B parameters → tp 8, the whole NVSwitch node";
  } else if (facts.sequence > kLongSequence) {
    degrees = {4, 8};
    sequence_parallel = true;
    branch = fmt::format("sequence {} > {} → tp 4–8 with sequence parallelism for the activations", facts.sequence,
                         kLongSequence);
  } else {
    degrees = {2, 4};
    branch = "mid-sized model, moderate sequence → tp 2–4 balances compute and communication";
  }
  advice.rules.push_back(fmt::format("tensor parallelism: heads {}, KV heads {}, FFN {} and {} GPUs per node allow tp ≤ {}; {}",
                                     m.heads, m.kv_heads, m.ffn_hidden, facts.per_node, tp_max, branch));
  for (std::int32_t tp : degrees) {
    const std::int32_t degree = std::min(tp, tp_max);
    if (degree <= 1) continue;
    const std::string tp_flavour = memory_flavour(facts, 1.0 / degree);
    if (tp_flavour != "fsdp") {
      candidates.add(tp_flavour, degree, 1, sequence_parallel,
                     fmt::format("decision tree: tp {}; {} over the rest by the memory rule", degree,
                                 tp_flavour == "ddp" ? "DDP" : "ZeRO-1"));
    } else if (const auto pp = pipeline_depth(facts, degree)) {
      candidates.add("zero1", degree, *pp, sequence_parallel,
                     fmt::format("decision tree: tp {}; weights still too big, pp {} by Megatron's recipe", degree, *pp));
    }
  }
  // Megatron's manual recipe: tp = min(8, heads), pp from memory, dp over the rest.
  if (const auto pp = pipeline_depth(facts, tp_max); pp && tp_max > 1) {
    advice.rules.push_back(fmt::format("Megatron's recipe: tp {}, smallest pp with {:.0f}Ψ/(tp·pp) ≤ {}: pp {}, dp {}",
                                       tp_max, facts.state_bytes, gigabytes(facts.memory), *pp,
                                       facts.gpus / (tp_max * *pp)));
    candidates.add(*pp > 1 || memory_flavour(facts, 1.0 / tp_max) != "ddp" ? "zero1" : "ddp", tp_max, *pp,
                   facts.sequence > kLongSequence, "Megatron's manual recipe");
  }
  advice.rules.push_back("R = T_comm / T_comp > 1 marks a communication-bound candidate");
  candidates.add_baseline();
  advice.candidates = candidates.take();
  return advice;
}

Advice advise(const ScenarioDocument& document, unsigned threads, const Progress& progress) {
  Advice advice = propose_layouts(document);

  // Simulate what can run; a layout whose activations do not fit is tried again with full
  // activation checkpointing, the chapter's first remedy.
  simulate(document, advice.candidates, threads, progress);
  std::vector<AdviceCandidate> recomputed;
  for (const AdviceCandidate& candidate : advice.candidates) {
    if (!candidate.report || !candidate.report->oom) continue;
    AdviceCandidate retry = candidate;
    retry.layout += ", full recompute";
    retry.reason += "; with each layer recomputed in backward, since its activations did not fit";
    retry.overrides.push_back("training.activation_checkpointing=\"full\"");
    retry.report.reset();
    recomputed.push_back(std::move(retry));
  }
  simulate(document, recomputed, threads, progress);
  for (AdviceCandidate& candidate : recomputed) advice.candidates.push_back(std::move(candidate));
  std::stable_sort(advice.candidates.begin(), advice.candidates.end(),
                   [](const AdviceCandidate& a, const AdviceCandidate& b) {
                     auto rank = [](const AdviceCandidate& c) {
                       return !c.report ? 2 : c.report->oom ? 1 : 0;
                     };
                     if (rank(a) != rank(b)) return rank(a) < rank(b);
                     return a.report && b.report && a.report->tokens_per_s > b.report->tokens_per_s;
                   });
  return advice;
}

std::string format_advice(const Advice& advice) {
  std::string out = fmt::format("dtsim advise — {}\n\nrules\n", advice.title);
  for (const std::string& rule : advice.rules) out += fmt::format("  • {}\n", rule);
  std::vector<std::string> header = {"#", "layout"};
  for (std::string& column : report_columns()) header.push_back(std::move(column));
  std::vector<std::vector<std::string>> rows;
  std::string reasons;
  std::string rejected;
  int number = 0;
  for (const AdviceCandidate& candidate : advice.candidates) {
    if (!candidate.report) {
      rejected += fmt::format("  - {}: {}\n", candidate.layout, candidate.rejected);
      continue;
    }
    std::vector<std::string> row = {std::to_string(++number), candidate.layout};
    for (std::string& cell : report_cells(*candidate.report)) row.push_back(std::move(cell));
    rows.push_back(std::move(row));
    std::string notes = candidate.reason;
    if (candidate.report->comm_compute_ratio > 1) {
      notes += fmt::format("; communication-bound (R = {:.2f})", candidate.report->comm_compute_ratio);
    }
    if (candidate.report->oom) notes += "; does not fit in memory";
    reasons += fmt::format("  {:>2}. {}\n", number, notes);
  }
  out += "\ncandidates, simulated (those that fit first, fastest first)\n";
  out += format_table(header, rows);
  out += "\nwhy each\n" + reasons;
  if (!rejected.empty()) out += "\nnot simulated\n" + rejected;
  const AdviceCandidate& best = advice.candidates.front();
  if (best.report && !best.report->oom) {
    out += best.overrides.empty() ? "\nadvice: keep the scenario as written\n"
                                  : fmt::format("\nadvice: {}: --set {}\n", best.layout, fmt::join(best.overrides, " --set "));
  } else if (!best.report) {
    out += "\nadvice: no candidate could be simulated (see why under 'not simulated')\n";
  } else {
    out += "\nadvice: no candidate fits in memory; try activation checkpointing, a smaller micro-batch or more GPUs\n";
  }
  return out;
}

nlohmann::json advice_json(const Advice& advice) {
  nlohmann::json json = {{"title", advice.title}, {"rules", advice.rules}, {"candidates", nlohmann::json::array()}};
  for (const AdviceCandidate& candidate : advice.candidates) {
    nlohmann::json entry = {{"layout", candidate.layout}, {"reason", candidate.reason}, {"overrides", candidate.overrides}};
    if (candidate.report) {
      entry["report"] = trace::report_to_json(*candidate.report);
    } else {
      entry["rejected"] = candidate.rejected;
    }
    json["candidates"].push_back(std::move(entry));
  }
  const AdviceCandidate& best = advice.candidates.front();
  json["advice"] = best.report && !best.report->oom ? nlohmann::json(best.overrides) : nlohmann::json(nullptr);
  return json;
}

}  // namespace scenarios
