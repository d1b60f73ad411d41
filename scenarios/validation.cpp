// `dtsim validate` (see validation.h).
#include "scenarios/validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <functional>

#include "scenarios/collective_bench.h"
#include "scenarios/scenario_loader.h"
#include "scenarios/statistics.h"
#include "scenarios/sweep.h"
#include "sim/collectives/schedule.h"
#include "sim/compute/compute_model.h"
#include "strategies/training.h"
#include "strategies/transformer_ops.h"

namespace scenarios {

namespace {

bool is_throughput_metric(const std::string& metric) {
  return metric == "megatron_tflops_per_gpu" || metric == "tokens_per_second_per_gpu";
}

}  // namespace

// Megatron-LM's FLOPs per iteration (Narayanan et al., SC'21, equation 3), activation
// recomputation included: F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)); TFLOP/s per GPU =
// F / (T · N) for an iteration of T seconds on N GPUs. B is the global batch.
double megatron_tflops_per_gpu(const Scenario& scenario, double step_seconds) {
  const auto& model = scenario.lowering.model;
  const double batch = static_cast<double>(scenario.lowering.training.global_batch);
  const double s = static_cast<double>(scenario.lowering.training.sequence);
  const double l = static_cast<double>(model.layers);
  const double h = static_cast<double>(model.hidden);
  const double vocab = static_cast<double>(model.vocab);
  const double flops = 96 * batch * s * l * h * h * (1 + s / (6 * h) + vocab / (16 * l * h));
  return flops / (step_seconds * scenario.cluster.gpu_count()) / 1e12;
}

// The seconds of the scenario's first layer's compute ops (one micro-batch, as the lowering
// builds it) that `selected` picks by name and attention-core flag, in the forward and/or the
// backward, priced one after another by the compute model.
double first_layer_seconds(const Scenario& scenario, bool forward, bool backward,
                           const std::function<bool(const std::string& name, bool attention_core)>& selected) {
  const strategies::TrainingSpec& training = scenario.lowering.training;
  strategies::BlockShape shape;
  shape.micro_batch = training.micro_batch;
  shape.sequence = training.sequence;
  shape.dtype = strategies::compute_dtype(training.precision);
  const strategies::Block layer = strategies::transformer_layer_block(scenario.lowering.model, shape, 0);
  const sim::ComputeModel compute(scenario.cluster.node.gpu, scenario.efficiency);
  double seconds = 0;
  for (const strategies::ForwardStep& step : layer.forward) {
    if (forward && step.compute && selected(step.name, step.attention_core)) seconds += compute.seconds(*step.compute);
  }
  for (const strategies::BackwardStep& step : layer.backward) {
    const auto* op = std::get_if<program::ComputeOp>(&step.op);
    if (backward && op != nullptr && selected(step.name, step.attention_core)) seconds += compute.seconds(*op);
  }
  return seconds;
}

// FlashAttention's benchmark counts 4·b·s²·heads·d FLOPs forward, 2.5 times that backward, halved
// when causal (benchmarks/benchmark_flash_attention.py); the time is the scenario's first layer's
// attention-core ops, forward and backward.
double attention_tflops(const Scenario& scenario) {
  const strategies::ModelSpec& model = scenario.lowering.model;
  const strategies::TrainingSpec& training = scenario.lowering.training;
  const double seconds = first_layer_seconds(scenario, true, true, [](const std::string&, bool core) { return core; });
  const double s = static_cast<double>(training.sequence);
  const double forward = 4 * static_cast<double>(training.micro_batch) * s * s * static_cast<double>(model.heads) *
                         static_cast<double>(model.head_dim()) / (model.causal ? 2 : 1);
  return 3.5 * forward / seconds / 1e12;
}

// The MLP of the scenario's first layer — its GEMMs and activation, not the norm, dropout or
// residual around it — forward or backward: milliseconds (Liger-Kernel's benchmark of Hugging
// Face's LlamaMLP: gate, up, act · up, down).
double mlp_ms(const Scenario& scenario, bool backward) {
  // Step names are the block's: "layer0.fwd.mlp_down", "layer0.bwd.mlp_down.dgrad".
  const auto in_mlp = [](const std::string& name, bool) {
    return std::ranges::any_of(std::array{".mlp_up", ".mlp_gate_up", ".mlp_act", ".mlp_down"},
                               [&](const char* op) { return name.find(op) != std::string::npos; });
  };
  return first_layer_seconds(scenario, !backward, backward, in_mlp) * 1e3;
}

std::string validation_unit(const std::string& metric) {
  if (metric == "megatron_tflops_per_gpu") return "TFLOP/s per GPU";
  if (metric == "tokens_per_second_per_gpu") return "tokens/s per GPU";
  if (metric == "bus_bandwidth_gbyte_s") return "GB/s bus bandwidth";
  if (metric == "time_us") return "µs";
  if (metric == "attention_tflops") return "TFLOP/s";
  if (metric == "mlp_forward_ms" || metric == "mlp_backward_ms") return "ms";
  return "";
}

ValidationResult run_validation(const std::string& manifest, unsigned threads, const Progress& progress) {
  ValidationResult result;
  result.manifest = manifest;
  const std::vector<ValidationCase> cases = read_validation_manifest(manifest);
  std::vector<Scenario> runs;
  std::vector<std::size_t> run_of_case(cases.size(), 0);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (!is_throughput_metric(cases[i].metric)) continue;
    run_of_case[i] = runs.size();
    runs.push_back(load_scenario(cases[i].scenario));
  }
  const std::vector<trace::Report> reports = run_all(runs, threads, progress);

  for (std::size_t i = 0; i < cases.size(); ++i) {
    const ValidationCase& c = cases[i];
    ValidationRow row{c, 0, 0};
    if (c.metric == "attention_tflops") {
      row.predicted = attention_tflops(load_scenario(c.scenario));
    } else if (c.metric == "mlp_forward_ms" || c.metric == "mlp_backward_ms") {
      row.predicted = mlp_ms(load_scenario(c.scenario), c.metric == "mlp_backward_ms");
    } else if (is_throughput_metric(c.metric)) {
      const Scenario& run = runs[run_of_case[i]];
      const double step_seconds = reports[run_of_case[i]].step_time_s;
      row.predicted = c.metric == "megatron_tflops_per_gpu"
                          ? megatron_tflops_per_gpu(run, step_seconds)
                          : static_cast<double>(run.lowering.training.global_batch * run.lowering.training.sequence) /
                                (step_seconds * run.cluster.gpu_count());
    } else {
      CollectiveBenchOptions bench;
      bench.op = c.op;
      bench.ranks = c.ranks;
      bench.sizes = fmt::format("{}:{}", c.bytes, c.bytes);
      bench.algorithms = c.algorithm;
      bench.scenario = c.scenario;
      const Scenario cluster_scenario = load_scenario(c.scenario);
      bench.model = cluster_scenario.network.model;
      bench.library = cluster_scenario.network.library;
      const CollectiveBenchResult measured = run_collective_bench(bench);
      const double seconds = measured.rows.front().seconds.front();
      row.predicted = c.metric == "time_us" ? seconds * 1e6
                                            : static_cast<double>(c.bytes) / seconds *
                                                  bus_bandwidth_factor(measured) / 1e9;
    }
    row.error = (row.predicted - c.published) / c.published;
    result.rows.push_back(std::move(row));
  }

  for (const ValidationRow& row : result.rows) {
    const auto found = std::find_if(result.summaries.begin(), result.summaries.end(),
                                    [&](const ValidationSummary& s) { return s.group == row.validation_case.group; });
    if (found == result.summaries.end()) result.summaries.push_back({row.validation_case.group});
  }
  for (ValidationSummary& summary : result.summaries) {
    std::vector<double> errors;
    for (const ValidationRow& row : result.rows) {
      if (row.validation_case.group == summary.group && row.validation_case.sets_constant.empty()) {
        errors.push_back(std::abs(row.error));
      }
    }
    summary.cases = errors.size();
    summary.median_abs_error = median(errors);
    summary.max_abs_error = errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end());
  }
  return result;
}

std::string format_validation(const ValidationResult& result) {
  std::vector<std::vector<std::string>> rows;
  bool any_sets = false;
  for (const ValidationRow& row : result.rows) {
    const bool sets = !row.validation_case.sets_constant.empty();
    any_sets = any_sets || sets;
    rows.push_back({row.validation_case.name + (sets ? " *" : ""), validation_unit(row.validation_case.metric),
                    fmt::format("{:.1f}", row.validation_case.published), fmt::format("{:.1f}", row.predicted),
                    fmt::format("{:+.1f} %", 100 * row.error)});
  }
  std::string out = fmt::format("dtsim validate: {} published measurements ({})\n\n", result.rows.size(), result.manifest);
  out += format_table({"case", "figure", "published", "predicted", "error"}, rows);
  out += "\n";
  if (any_sets) out += "* sets a model constant (its source is cited where the constant is): not counted below\n";
  for (const ValidationSummary& summary : result.summaries) {
    out += summary.cases == 0 ? fmt::format("{}: every row sets a constant\n", summary.group)
                              : fmt::format("{}: median |error| {:.1f} %, max {:.1f} % over {} cases\n", summary.group,
                                            100 * summary.median_abs_error, 100 * summary.max_abs_error, summary.cases);
  }
  out += "error = (predicted − published) / published; sources: dtsim validate --json, or the manifest\n";
  return out;
}

nlohmann::json validation_to_json(const ValidationResult& result) {
  nlohmann::json json = {{"manifest", result.manifest}, {"cases", nlohmann::json::array()},
                         {"summaries", nlohmann::json::array()}};
  for (const ValidationRow& row : result.rows) {
    const ValidationCase& c = row.validation_case;
    json["cases"].push_back({{"name", c.name}, {"group", c.group}, {"scenario", c.scenario}, {"metric", c.metric},
                             {"unit", validation_unit(c.metric)}, {"published", c.published},
                             {"predicted", row.predicted}, {"error", row.error}, {"source", c.source},
                             {"setup", c.setup}, {"sets_constant", c.sets_constant}});
  }
  for (const ValidationSummary& summary : result.summaries) {
    json["summaries"].push_back({{"group", summary.group}, {"cases", summary.cases},
                                 {"median_abs_error", summary.median_abs_error},
                                 {"max_abs_error", summary.max_abs_error}});
  }
  return json;
}

}  // namespace scenarios
