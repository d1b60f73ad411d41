// `dtsim search`: every valid parallel layout for a scenario's model, batch and GPUs, ranked.
//
// 1. Enumerate: tp (dividing heads, KV heads and FFN widths, inside a node), cp (ring, and
//    Ulysses where the heads allow), pp (≤ layers) with 1F1B or interleaved chunks, dp for the
//    rest, ep (MoE: dividing dp and the experts), sequence parallelism, micro-batch,
//    recompute (none, selective, full) and the data-parallel flavour (DDP, ZeRO-1, ZeRO-2, FSDP).
// 2. Prune by the loader's divisibility rules (R1–R3, 1F1B's M ≥ pp, interleaving's M % pp)
//    and by a closed-form memory estimate, before any simulation.
// 3. Estimate each survivor's step time in closed form — no event simulation — from the same
//    pieces the simulator uses: one micro-batch of each kind of block (embedding, dense layer,
//    MoE layer, head) emitted by the lowering's own emit_forward/emit_backward, its ops priced
//    by the simulator's ComputeModel and CommPlanner (the α-β price of each collective on its
//    group's GPUs, contention-free) and composed by the longest path through their
//    dependencies; then the pipeline (M + (p−1)/v micro-batch slots), the data-parallel
//    gradient and parameter traffic the backward does not hide, and the optimizer step.
// 4. Simulate the best K with the scenario's network model, and a sample spread over the rest
//    of the ranking, to measure the estimate's rank correlation with the simulator (Spearman).
//    A sampled layout whose simulation would execute more than 30 million ops (every rank's,
//    about 6 s on the development machine) gives way to the next one in the ranking that does not.
// 5. Rank the simulated layouts by the objective (tokens/s, or cost per token with
//    [search] gpu_hour_price) and show the Pareto front of step time against memory.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/scenario_loader.h"
#include "scenarios/sweep.h"
#include "sim/trace/report.h"
#include "strategies/training.h"

namespace scenarios {

// The layout-only options a scenario may ask for, each kept in a candidate layout only where the
// loader allows it there (a layout proposed by search or advise inherits none it cannot hold).
struct LayoutOptions {
  // Megatron-Core's --tp-comm-overlap: on where the scenario asks for it and the layout has
  // sequence parallelism (which it pipelines); never for a mixture of experts.
  bool tp_comm_overlap = false;
  // Megatron's --overlap-param-gather (the distributed optimizer's parameter all-gather during
  // the next forward): on where the scenario asks for it, in ZeRO-1/2 layouts without expert
  // parallelism.
  bool overlap_param_gather = false;
  // SC'21's pipeline scatter/gather (1/t of the activation across the stage boundary, then an
  // all-gather over the tensor-parallel group): on where the scenario asks for it, in pipelined
  // layouts with tp > 1 and no sequence parallelism.
  bool pipeline_scatter_gather = false;
  // Megatron-Core's --moe-shared-expert-overlap (the shared experts beside the dispatch and the
  // combine's gradient): on where the scenario asks for it, in layouts with ep > 1 of a model
  // with shared experts.
  bool moe_shared_expert_overlap = false;

  // Those the scenario `base` asks for (even where its own layout does not hold), kept where a
  // layout of `flavour` (ddp, zero1, zero2, fsdp) with these degrees allows them.
  static LayoutOptions wanted_in(const Scenario& base, const std::string& flavour, std::int32_t tp,
                                 std::int32_t pp, std::int32_t ep, bool sequence_parallel);
  // The scenario keys that set them (as `--set` takes them).
  std::vector<std::string> overrides() const;
};

struct SearchLayout {
  std::int32_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
  std::int32_t virtual_stages = 1;  // > 1: interleaved 1F1B
  bool sequence_parallel = false;
  strategies::ContextParallelScheme cp_scheme = strategies::ContextParallelScheme::kRing;
  std::int64_t micro_batch = 1;
  std::int64_t accumulation = 1;
  strategies::Checkpointing recompute = strategies::Checkpointing::kNone;
  std::string flavour = "ddp";  // ddp, zero1, zero2, fsdp
  LayoutOptions options;

  std::string label() const;
  // The scenario keys that make this layout (as `--set` takes them).
  std::vector<std::string> overrides() const;
};

struct LayoutEstimate {
  double step_s = 0;
  double compute_s = 0;        // compute on the slowest stage, all micro-batches, and the optimizer
  double bubble_s = 0;         // the pipeline's idle slots
  double exposed_comm_s = 0;   // communication the compute does not hide
  double memory_bytes = 0;     // peak per GPU: model states + activations in flight + transients
  double simulated_ops = 0;    // ops a simulation would execute, every rank's (its cost)
};

struct SearchCandidate {
  SearchLayout layout;
  std::string given;  // a layout given from outside (advise's), by its name: no estimate
  LayoutEstimate estimate;
  std::optional<trace::Report> report;  // when simulated
  std::string failed;                   // why its simulation did not run (empty: it ran, or was not tried)
};

struct SearchOptions {
  std::size_t simulate = 8;   // K: the best estimates simulated
  std::size_t sample = 8;     // more simulated, spread over the rest, for the rank correlation
  std::string objective = "tokens";  // or "cost"
  unsigned threads = 0;
  // Under mpirun: the simulations shared out over the job's processes (every process
  // enumerates and estimates, which takes well under a second, and ends with the same result).
  backend::WorkSplit split;
  // Layouts simulated besides (advise's candidates): a name and the overrides that make it.
  std::vector<std::pair<std::string, std::vector<std::string>>> also_simulate;
};

struct SearchResult {
  std::string name;  // the scenario's (its default output directory, out/<name>)
  std::string title;
  std::string objective;
  std::size_t enumerated = 0;          // layouts that pass the divisibility rules, every one estimated
  std::size_t rejected_by_memory = 0;  // of which over the GPU's memory
  std::size_t rejected_by_algorithm = 0;  // of which need an algorithm [collectives] fixes where it cannot run
  double estimate_seconds = 0;  // wall time of enumeration, pruning and estimates
  std::optional<double> gpu_hour_price;
  double gpus = 0;
  double tokens_per_step = 0;
  std::vector<SearchCandidate> candidates;  // the estimated, best estimate first
  std::vector<std::size_t> ranking;         // simulated candidates by the objective, best first
  std::vector<std::size_t> pareto;          // simulated and fitting: no other is faster and smaller
  std::optional<double> rank_correlation;   // Spearman's ρ, estimate vs simulation, over the simulated
  std::vector<std::string> extra;           // also_simulate layouts that did not read, with why
  std::string written_layout_fault;  // why the scenario's own layout does not hold (empty: it does)
};

SearchResult search(const ScenarioDocument& document, const SearchOptions& options, const Progress& progress = {});
std::string format_search(const SearchResult& result, std::size_t rows = 10);
nlohmann::json search_json(const SearchResult& result);
// Every estimated candidate: its layout, estimate and, when simulated, the simulated figures.
std::string search_csv(const SearchResult& result);

}  // namespace scenarios
