// `dtsim advise`: the chapter's decision rules applied to a scenario's model, batch and
// cluster, then every layout they propose simulated and ranked.
//
// Rules (chapter §6.2.7, §6.4.6–6.4.7, §6.7.6):
//   data parallelism by memory — with b bytes of model state per parameter (16 for
//     mixed-precision Adam) and Ψ parameters against device memory M:
//       bΨ ≤ M                        → DDP, no extra communication;
//       bΨ > M, parameters 2Ψ ≤ M     → ZeRO-1 (ZeroRedundancyOptimizer): shard the optimizer;
//       parameters do not fit         → FSDP FULL_SHARD (ZeRO-3);
//   tensor-parallel degree — tp must divide the KV heads (and heads and FFN width) and stay
//     inside a node; hidden < 4096 → tp 1–2; Ψ > 70B → tp 8; sequence > 8192 → tp 4–8 with
//     sequence parallelism; otherwise tp 2–4;
//   pipeline depth (Megatron's manual recipe) — the smallest pp with bΨ/(tp·pp) ≤ M, data
//     parallelism over the remaining GPUs;
//   R = T_comm / T_comp > 1 marks a candidate communication-bound.
// Every candidate keeps the scenario's cluster, model, global batch, micro-batch and models;
// its gradient accumulation follows from the global batch (rule R3). The scenario as written
// is simulated too, as the baseline.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/scenario_loader.h"
#include "scenarios/sweep.h"
#include "sim/trace/report.h"

namespace scenarios {

struct AdviceCandidate {
  std::string layout;                  // e.g. "ZeRO-1, dp 8 × tp 8"
  std::string reason;                  // the rule that proposed it
  std::vector<std::string> overrides;  // scenario keys that make it
  std::optional<trace::Report> report;
  std::string rejected;                // why it was not simulated (empty: it was)
};

struct Advice {
  std::string title;
  std::vector<std::string> rules;          // each rule as applied to this scenario
  std::vector<AdviceCandidate> candidates; // fitting ones fastest first, then the rest
};

// The rules as applied and the candidates they propose, none simulated yet (what `dtsim search
// --with-advise` simulates beside its own).
Advice propose_layouts(const ScenarioDocument& document);
// `progress`, when set, hears of the simulations done (of the candidates, then of those retried
// with full recomputation).
Advice advise(const ScenarioDocument& document, unsigned threads, const Progress& progress = {});
std::string format_advice(const Advice& advice);
// The same as JSON: the rules, every candidate (its layout, rule, overrides, and report or why
// it was not simulated) in rank order, and "advice": the best's overrides (null: none fits).
nlohmann::json advice_json(const Advice& advice);

}  // namespace scenarios
