// What would make a run that does not fit in GPU memory fit: the chapter's remedies (§6.2.4,
// §6.2.7: activation checkpointing, mixed precision, sharding model states with ZeRO/FSDP, a
// smaller micro-batch, FSDP's limit_all_gathers and CPU offload), only those that apply to the
// scenario as it is (a run already in mixed precision under FSDP is not told to try either),
// each simulated so that what it saves is computed, not quoted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/scenario_loader.h"
#include "sim/trace/report.h"

namespace scenarios {

struct MemoryRemedy {
  std::string name;                    // e.g. "activation checkpointing (full)"
  std::vector<std::string> overrides;  // the --set keys that apply it
  std::int64_t peak_memory_bytes = 0;  // its simulated peak
  std::int64_t saved_bytes = 0;        // the scenario's peak minus that
  bool fits = false;
};

// The remedies that apply to `scenario` (read from `document`) and that make a valid scenario,
// each simulated (run_all on `threads`), most saved first. `report` is the scenario's own.
std::vector<MemoryRemedy> memory_remedies(const ScenarioDocument& document, const Scenario& scenario,
                                          const trace::Report& report, unsigned threads);

// "activation checkpointing (full): --set training.activation_checkpointing="full" → peak 61.2 GB,
// saves 23.4 GB, fits" per remedy, one line each.
std::string format_memory_remedies(const std::vector<MemoryRemedy>& remedies);
nlohmann::json memory_remedies_json(const std::vector<MemoryRemedy>& remedies);

}  // namespace scenarios
