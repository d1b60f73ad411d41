// Scenario pipeline and output writing (see run_scenario.h).
#include "scenarios/run_scenario.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <random>
#include <set>
#include <sstream>
#include <system_error>
#include <variant>

#include "sim/compute/compute_model.h"
#include "sim/trace/chrome_trace.h"
#include "strategies/layout.h"
#include "strategies/lowering.h"
#include "strategies/transformer_ops.h"
#include "topology/cluster.h"

namespace scenarios {
namespace {

// The first rank of each pipeline stage (Megatron's order, strategies/layout.h); empty without
// pipeline parallelism.
std::vector<std::int32_t> pipeline_stage_ranks(const Scenario& scenario) {
  const strategies::ParallelSpec& parallel = scenario.lowering.parallel;
  if (parallel.pp <= 1 || parallel.strategy == "ps") return {};
  const strategies::ParallelLayout layout(parallel.dp, parallel.tp, parallel.pp, parallel.ep, parallel.cp);
  std::vector<std::int32_t> ranks;
  for (std::int32_t stage = 0; stage < parallel.pp; ++stage) ranks.push_back(layout.rank_of({0, 0, stage}));
  return ranks;
}

// The ranks whose spans the timeline keeps (empty: all) before the critical rank is known.
std::vector<bool> traced_ranks(const Scenario& scenario, const program::Program& program) {
  const TraceSelection& trace = scenario.trace;
  const std::int32_t world = program.world_size;
  if (trace.all || (trace.automatic && world <= TraceSelection::kAutoTraceRanks)) return {};
  std::vector<bool> traced(static_cast<std::size_t>(world), false);
  if (trace.automatic || trace.first_node) {
    for (std::int32_t r = 0; r < std::min(world, scenario.cluster.node.gpus); ++r) traced[r] = true;
  }
  if (trace.automatic) {  // one rank per pipeline stage, for the viewer's pipeline view
    for (const std::int32_t rank : pipeline_stage_ranks(scenario)) traced[rank] = true;
  }
  // Staleness is measured on the first parameter server's spans.
  if (program.info.parameter_server) traced[program.info.parameter_server->first_server] = true;
  for (const auto& [first, last] : trace.ranges) {
    if (last >= world) {
      throw ScenarioError(
          trace.origin, trace.key,
          fmt::format("rank {} does not exist: the program has {} ranks", last, world),
          fmt::format("ranks are 0 to {}", world - 1));
    }
    std::fill(traced.begin() + first, traced.begin() + last + 1, true);
  }
  return traced;
}

// Whether the critical rank goes into the timeline too (auto does that above kAutoTraceRanks).
bool traces_critical(const TraceSelection& trace) { return trace.critical || (trace.automatic && !trace.all); }

// The factor that makes one transformer layer's forward and backward, unsharded on one GPU,
// take `seconds` under the roofline model.
double layer_time_scale(const Scenario& scenario, double seconds) {
  const strategies::TrainingSpec& training = scenario.lowering.training;
  const strategies::Block layer = strategies::transformer_layer_block(
      scenario.lowering.model,
      {training.micro_batch, training.sequence, strategies::compute_dtype(training.precision), {}}, 0);
  const sim::ComputeModel model(scenario.cluster.node.gpu, scenario.efficiency);
  double modelled = 0;
  for (const strategies::ForwardStep& step : layer.forward) {
    if (step.compute) modelled += model.seconds(*step.compute);
  }
  for (const strategies::BackwardStep& step : layer.backward) {
    if (const auto* op = std::get_if<program::ComputeOp>(&step.op)) modelled += model.seconds(*op);
  }
  return seconds / modelled;
}

// Uniform doubles in [0, 1) from the top 53 bits of a 64-bit Mersenne Twister (whose output
// the standard fixes), and normal deviates by Box–Muller: the same seed gives the same
// factors with any standard library.
class SeededRandom {
 public:
  explicit SeededRandom(std::uint64_t seed) : engine_(seed) {}
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double normal() {
    const double radius = std::sqrt(-2 * std::log(1 - uniform()));
    return radius * std::cos(2 * std::numbers::pi * uniform());
  }

 private:
  std::mt19937_64 engine_;
};

// [collectives] algorithms no collective of the program takes — a kind the strategy never runs,
// a family whose groups are single ranks (collectives.groups.tp.* with tp 1): a warning each,
// naming where it was set.
std::vector<std::string> unused_collective_overrides(const sim::CollectiveOverrides& overrides,
                                                     const program::Program& program) {
  if (overrides.by_kind.empty() && overrides.by_group.empty()) return {};  // no scan of the ops
  std::set<program::CollectiveKind> kinds;
  std::set<std::pair<std::string, program::CollectiveKind>> by_family;
  std::set<const program::RankProgram*> seen;
  for (const auto& rank : program.ranks) {
    if (!seen.insert(rank.get()).second) continue;
    for (const program::Op& op : rank->ops) {
      const auto* collective = std::get_if<program::CollectiveOp>(&op.body);
      if (collective == nullptr) continue;
      const program::GroupFamily& family = program.family(collective->group);
      if (std::none_of(family.instances.begin(), family.instances.end(),
                       [](const auto& members) { return members.size() > 1; })) {
        continue;
      }
      // A per-kind algorithm is used where no per-family one comes first.
      if (overrides.by_group.count({family.name, collective->kind}) == 0)
        kinds.insert(collective->kind);
      by_family.insert({family.name, collective->kind});
    }
  }
  std::vector<std::string> warnings;
  const auto warn = [&](const sim::CollectiveOverride& unused, program::CollectiveKind kind,
                        const std::string& over) {
    warnings.push_back(fmt::format("{}: {} is never used: no {} of two or more ranks runs{}",
                                   unused.origin, unused.key, program::collective_name(kind),
                                   over));
  };
  for (const auto& [kind, fixed] : overrides.by_kind) {
    if (kinds.count(kind) == 0) warn(fixed, kind, "");
  }
  for (const auto& [family_and_kind, fixed] : overrides.by_group) {
    if (by_family.count(family_and_kind) == 0) {
      warn(fixed, family_and_kind.second,
           fmt::format(" over the {} groups", family_and_kind.first));
    }
  }
  return warnings;
}

std::vector<double> straggler_factors(const Scenario& scenario, const program::Program& program) {
  const StragglerSpec& spec = scenario.stragglers;
  if (!spec.any()) return {};
  SeededRandom random(spec.seed);
  std::vector<double> factors(static_cast<std::size_t>(program.world_size), 1.0);
  for (std::int32_t rank = 0; rank < program.world_size && spec.distribution != "none"; ++rank) {
    if (program.placement[rank] >= scenario.cluster.gpu_count()) continue;  // parameter servers
    factors[rank] = spec.distribution == "lognormal" ? std::exp(spec.sigma * random.normal())
                                                     : 1 + spec.spread * random.uniform();
  }
  for (std::int32_t rank : spec.slow_ranks) factors[rank] *= spec.slow_factor;
  return factors;
}

// Per worker and step: how many updates the first server applied between sending the
// parameters the worker computed on and applying the worker's gradient (parameter_server.h).
trace::ParameterServerFacts parameter_server_facts(const program::ProgramInfo::ParameterServer& ps,
                                                   const trace::Timeline& timeline) {
  std::map<program::OpIndex, std::pair<std::int64_t, std::int64_t>> times;  // op → (start, end)
  for (const trace::Span& span : timeline.spans) {
    if (span.rank == ps.first_server) times[static_cast<program::OpIndex>(span.op)] = {span.start_ps, span.end_ps};
  }
  std::set<program::OpIndex> update_ops;
  for (const auto& ops : ps.update_op) update_ops.insert(ops.begin(), ops.end());
  std::vector<std::int64_t> update_ends;
  for (program::OpIndex op : update_ops) update_ends.push_back(times.at(op).second);
  std::sort(update_ends.begin(), update_ends.end());
  auto version_at = [&update_ends](std::int64_t time) {
    return std::upper_bound(update_ends.begin(), update_ends.end(), time) - update_ends.begin();
  };
  trace::ParameterServerFacts facts;
  facts.consistency = ps.consistency;
  facts.workers = ps.workers;
  double sum = 0;
  std::int64_t count = 0;
  for (std::int32_t w = 0; w < ps.workers; ++w) {
    for (std::size_t step = 0; step < ps.update_op[w].size(); ++step) {
      const std::int64_t computed_on = step == 0 ? 0 : version_at(times.at(ps.pull_op[w][step - 1]).first);
      const std::int64_t staleness = version_at(times.at(ps.update_op[w][step]).first) - computed_on;
      sum += static_cast<double>(staleness);
      facts.staleness_max = std::max(facts.staleness_max, staleness);
      ++count;
    }
  }
  facts.staleness_mean = count > 0 ? sum / static_cast<double>(count) : 0;
  return facts;
}

// The cluster as it is after the scenario's keys and overrides: figures, not preset names (a
// NIC overridden to 200 Gb/s is not "NDR 400").
std::string cluster_summary(const topology::ClusterSpec& cluster) {
  const topology::NodeSpec& node = cluster.node;
  const topology::DeviceSpec& gpu = node.gpu;
  const char* fabric = cluster.fabric.kind == topology::FabricKind::kRoCE ? "RoCE" : "InfiniBand";
  const auto gigabytes_per_s = [](const topology::LinkSpec& link) { return link.bandwidth / 1e9; };
  std::string intra;
  switch (node.kind) {
    case topology::NodeKind::kNvSwitch: intra = fmt::format("NVSwitch {:.0f} GB/s", gigabytes_per_s(node.nvlink)); break;
    case topology::NodeKind::kFullMesh: intra = fmt::format("mesh links {:.0f} GB/s", gigabytes_per_s(node.nvlink)); break;
    case topology::NodeKind::kPcie: intra = fmt::format("PCIe {:.0f} GB/s", gigabytes_per_s(node.pcie)); break;
  }
  std::string summary = fmt::format("{} × {} {} ({:.0f} TFLOP/s bf16, {:.0f} GB, {}) = {} GPUs", cluster.nodes,
                                    node.gpus, gpu.name, gpu.bf16_flops / 1e12, gpu.memory_bytes / 1e9, intra,
                                    cluster.gpu_count());
  if (cluster.nodes > 1 || cluster.parameter_servers.count > 0) {
    summary +=
        fmt::format(", {} fat-tree, {} × {:.4g} Gb/s NICs per node{}{}{}", fabric, node.nics,
                    cluster.fabric.nic.bandwidth * 8 / 1e9,
                    cluster.fabric.oversubscription > 1
                        ? fmt::format(", {:g}:1 oversubscribed", cluster.fabric.oversubscription)
                        : "",
                    cluster.fabric.rail_optimized ? ", rail-optimized" : "",
                    cluster.fabric.sharp ? ", SHARP" : "");
  }
  return summary;
}

// The timeline's title and metadata, and the report's facts that do not depend on how the
// timeline was made (simulated or measured).
trace::RunFacts describe_run(const Scenario& scenario, const program::Program& program, trace::Timeline& timeline,
                             const std::string& made_by) {
  timeline.title = scenario.name;
  timeline.metadata["scenario"] = scenario.source;
  timeline.metadata["description"] = program.info.description;
  timeline.metadata["cluster"] = cluster_summary(scenario.cluster);
  timeline.metadata["made_by"] = made_by;
  timeline.metadata["steps"] = std::to_string(program.info.steps);
  timeline.metadata["ranks"] = std::to_string(program.world_size);  // traced or not
  timeline.metadata["model"] = scenario.lowering.model.name;
  // A preset with an override (model.layers = 4) is another model to compare.
  timeline.metadata["model_dimensions"] = strategies::describe(scenario.lowering.model);
  timeline.metadata["gpu"] = scenario.cluster.node.gpu.name;  // what the prediction prices
  timeline.metadata["hardware_profile"] = scenario.hardware_profile;
  timeline.metadata["memory_capacity_bytes"] = fmt::format("{:.0f}", scenario.cluster.node.gpu.memory_bytes);
  if (const auto stages = pipeline_stage_ranks(scenario); !stages.empty()) {
    timeline.metadata["pipeline_stage_ranks"] = fmt::format("{}", fmt::join(stages, ","));
  }

  trace::RunFacts facts;
  facts.notes = scenario.warnings;
  for (std::string& unused : unused_collective_overrides(scenario.collectives, program)) {
    facts.notes.push_back(std::move(unused));
  }
  facts.title = fmt::format("{} — {}\n{}, {}", scenario.name, program.info.description,
                            cluster_summary(scenario.cluster), made_by);
  facts.steps = program.info.steps;
  facts.tokens_per_step = program.info.tokens_per_step;
  facts.model_flops_per_step = program.info.model_flops_per_step;
  facts.peak_flops_per_rank =
      sim::ComputeModel(scenario.cluster.node.gpu, scenario.efficiency).peak_flops(program.info.compute_dtype);
  facts.fp8_gemms = scenario.lowering.training.precision == strategies::Precision::kFP8;
  for (std::int32_t endpoint : program.placement) {
    facts.compute_ranks += endpoint < scenario.cluster.gpu_count() ? 1 : 0;
    facts.memory_capacity_bytes.push_back(endpoint < scenario.cluster.gpu_count()
                                              ? scenario.cluster.node.gpu.memory_bytes
                                              : scenario.cluster.parameter_servers.host.memory_bytes);
  }
  if (program.info.parameter_server) {
    facts.parameter_server = parameter_server_facts(*program.info.parameter_server, timeline);
  }
  facts.pipeline = program.info.pipeline;
  facts.pipeline_bubble = program.info.pipeline_bubble;
  facts.pipeline_chunks = program.info.pipeline_chunks;
  return facts;
}

}  // namespace

std::string dtsim_version() { return DTSIM_VERSION; }

Provenance provenance_of(const Scenario& scenario) {
  return {scenario.source, scenario.overrides, scenario.hardware_profile,
          fmt::format("{} ({})", scenario.network.model, scenario.network.library)};
}

nlohmann::json provenance_json(const Provenance& provenance) {
  return {{"scenario", provenance.scenario},
          {"overrides", provenance.overrides},
          {"hardware_profile", provenance.hardware_profile},
          {"network_model", provenance.network_model},
          {"dtsim_version", dtsim_version()}};
}

RunResult run_scenario(const Scenario& scenario, const std::function<bool(const sim::SimulationProgress&)>& progress,
                       std::uint64_t memory_available_bytes) {
  const topology::Cluster cluster(scenario.cluster);
  RunResult result;
  result.provenance = provenance_of(scenario);
  result.program = strategies::lower(scenario.lowering);

  sim::SimulationOptions options;
  options.network = scenario.network;
  options.efficiency = scenario.efficiency;
  options.step_compute_time_s = scenario.step_compute_time_s;
  if (scenario.layer_compute_time_s) {
    options.compute_time_scale = layer_time_scale(scenario, *scenario.layer_compute_time_s);
  }
  options.collectives = scenario.collectives;
  options.traced_ranks = traced_ranks(scenario, result.program);
  options.compute_slowdown = straggler_factors(scenario, result.program);
  options.progress = progress;
  options.use_symmetry = scenario.symmetry;
  options.memory_available_bytes = memory_available_bytes;
  const auto simulate = [&] {
    try {
      return sim::simulate(result.program, cluster, options);
    } catch (const sim::InvalidOverride& error) {
      throw ScenarioError(error.origin, error.key, error.what(),
                          "choose an algorithm that runs on this group, or \"auto\"; collectives.library = \"ideal\" "
                          "prices every schedule dtsim has");
    }
  };
  result.simulation = simulate();
  if (traces_critical(scenario.trace) && !options.traced_ranks.empty()) {
    // The rank the report describes is known once the step has run: run it again to trace it
    // (the same simulation, deterministic; only the spans kept differ).
    const auto critical =
        static_cast<std::size_t>(trace::critical_rank(trace::summarize_ranks(result.simulation.timeline)));
    if (!options.traced_ranks[critical]) {
      options.traced_ranks[critical] = true;
      options.replica_splits = result.simulation.replica_splits;  // found once is enough
      result.simulation = simulate();
    }
  }

  trace::Timeline& timeline = result.simulation.timeline;
  timeline.metadata["network_model"] = scenario.network.model;
  trace::RunFacts facts =
      describe_run(scenario, result.program, timeline, fmt::format("{} network model", scenario.network.model));
  if (scenario.stragglers.distribution != "none") {
    std::vector<double> drawn = options.compute_slowdown;  // the distribution's factors alone
    for (std::int32_t rank : scenario.stragglers.slow_ranks) drawn[rank] /= scenario.stragglers.slow_factor;
    const auto [fastest, slowest] = std::minmax_element(drawn.begin(), drawn.end());
    facts.notes.push_back(fmt::format(
        "stragglers: GPU compute times multiplied by factors from {:.3f} to {:.3f} ({}, seed {})",
        *fastest, *slowest, scenario.stragglers.distribution, scenario.stragglers.seed));
  }
  if (!scenario.stragglers.slow_ranks.empty()) {
    const bool one = scenario.stragglers.slow_ranks.size() == 1;
    const double factor = scenario.stragglers.slow_factor;
    facts.notes.push_back(fmt::format(
        "stragglers: rank{} {} compute{} {:.3g}× {} (stragglers.slow_ranks, slow_factor {:g})",
        one ? "" : "s", fmt::join(scenario.stragglers.slow_ranks, ", "), one ? "s" : "",
        factor >= 1 ? factor : 1 / factor, factor >= 1 ? "slower" : "faster", factor));
  }
  facts.comm_latency_s = result.simulation.comm_latency_s;
  facts.comm_bandwidth_s = result.simulation.comm_bandwidth_s;
  if (scenario.step_compute_time_s) {
    facts.notes.push_back(fmt::format(
        "compute time imposed by compute.step_compute_time_s = {} s (the roofline model's "
        "times are scaled to it)",
        *scenario.step_compute_time_s));
  }
  if (scenario.layer_compute_time_s) {
    facts.notes.push_back(
        fmt::format("compute time imposed by compute.layer_compute_time_s = {} s per unsharded "
                    "layer (roofline times × {:.4g})",
                    *scenario.layer_compute_time_s, *options.compute_time_scale));
  }
  result.report = trace::build_report(timeline, facts);
  return result;
}

std::function<program::Algorithm(const program::CollectiveOp&, const std::string&)> fixed_algorithms(
    const Scenario& scenario) {
  return [&scenario](const program::CollectiveOp& op, const std::string& family) {
    const sim::CollectiveOverride* fixed = scenario.collectives.find(op.kind, family);
    return fixed != nullptr ? fixed->algorithm : op.algorithm;
  };
}

RunResult execute_scenario(const Scenario& scenario, backend::ExecutionOptions options) {
  RunResult result;
  result.program = strategies::lower(scenario.lowering);
  const strategies::ModelSpec& model = scenario.lowering.model;
  // The sequence the Program trains on (which the loader checked divides over cp).
  options.layer = backend::ExecutionOptions::Layer{scenario.lowering.training.sequence, model.hidden, model.ffn_hidden,
                                                   model.heads};
  if (model.moe) {
    options.layer->experts = model.moe->experts;
    options.layer->top_k = model.moe->top_k;
    options.layer->expert_ffn = model.moe->expert_ffn_hidden;
  }
  switch (scenario.lowering.parallel.cp_scheme) {
    case strategies::ContextParallelScheme::kRing:
      options.layer->context_parallel = backend::ContextParallelKind::kRing;
      break;
    case strategies::ContextParallelScheme::kUlysses:
      options.layer->context_parallel = backend::ContextParallelKind::kUlysses;
      break;
    case strategies::ContextParallelScheme::kAllGather:
      options.layer->context_parallel = backend::ContextParallelKind::kAllGather;
      break;
  }
  options.layer->causal = model.causal;
  options.own_schedules = scenario.backend_collectives == "dtsim";
  options.algorithm = fixed_algorithms(scenario);
  trace::Timeline& timeline = result.simulation.timeline;
  timeline = backend::execute(result.program, options);
  if (timeline.ranks.empty()) return result;  // not rank 0
  result.provenance = provenance_of(scenario);
  result.provenance.network_model = "measured (" + timeline.metadata.at("executed_on") + ")";
  trace::RunFacts facts =
      describe_run(scenario, result.program, timeline, "measured: " + timeline.metadata.at("executed_on"));
  facts.host_run_time_s = std::stod(timeline.metadata.at("host_run_time_s"));
  std::stringstream runs(timeline.metadata.at("host_run_times_s"));
  for (std::string run; std::getline(runs, run, ',');) facts.host_run_times_s.push_back(std::stod(run));
  if (options.device == backend::ExecutionOptions::Device::kCpu) {
    // A CPU profile (dtsim calibrate --backend mpi) measures the fp32 rate only.
    const std::string_view dtype = program::dtype_name(result.program.info.compute_dtype);
    facts.notes.push_back(fmt::format(
        "measured on CPU processes: MFU uses the scenario's {} peak, {:.3g} TFLOP/s per rank{}",
        dtype, facts.peak_flops_per_rank / 1e12,
        scenario.hardware_profile.empty()
            ? ", a GPU's, not this machine's"
            : fmt::format(" after the hardware profile {}: this machine's where the profile "
                          "measured it (a CPU "
                          "profile measures fp32)",
                          scenario.hardware_profile)));
  }
  facts.notes.push_back(
      "memory is the Program's allocations applied at the measured times, not measured; traffic is what dtsim's "
      "schedule of each collective sends (MPI and NCCL choose their own algorithms)");
  result.report = trace::build_report(timeline, facts);
  return result;
}

nlohmann::json result_json(const RunResult& result) {
  nlohmann::json report = trace::report_to_json(result.report);
  report["provenance"] = provenance_json(result.provenance);
  if (result.memory_remedies) report["oom_remedies"] = memory_remedies_json(*result.memory_remedies);
  return report;
}

void write_outputs(const RunResult& result, const std::filesystem::path& directory, bool timeline) {
  prepare_output_directory(directory);
  std::uint64_t timeline_digest = 0;
  std::vector<FileWriter> files;
  if (timeline) {
    files.push_back({directory / "timeline.json", [&](std::ostream& out) {
                       DigestingBuffer digesting(out.rdbuf());
                       std::ostream through(&digesting);
                       trace::write_chrome_trace(result.simulation.timeline, through);
                       if (!through) out.setstate(std::ios::badbit);
                       timeline_digest = digesting.digest();
                     }});
  }
  files.push_back({directory / "report.json", [&](std::ostream& out) {
                     nlohmann::json report = result_json(result);
                     if (timeline) report["timeline_digest"] = format_digest(timeline_digest);
                     out << report.dump(2) << "\n";
                   }});
  write_files_atomically(files);
  if (!timeline) {  // an earlier run's timeline would pass for this report's
    std::error_code ignored;
    std::filesystem::remove(directory / "timeline.json", ignored);
  }
}

}  // namespace scenarios
