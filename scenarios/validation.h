// `dtsim validate`: the validation suite — published measurements of real runs, each beside
// what dtsim predicts for the run as its source describes it (a scenario with default presets
// only, nothing per case), and the error (predicted − published) / published.
//
// A case is a throughput row (a training step simulated, its time turned into the source's
// figure, e.g. Megatron's TFLOP/s per GPU), a collective row (one collective on the scenario's
// cluster, as nccl-tests times it) or a kernel row (the ops of one layer's attention core, as a
// kernel benchmark times them). The manifest (tests/validation/cases.toml)
// lists them with their published value, units, source and setup.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.h"
#include "scenarios/sweep.h"

namespace scenarios {

struct ValidationCase {
  std::string name;
  std::string group;       // "throughput", "collective" or "kernel": the summaries are per group
  std::string scenario;    // the run's scenario (a collective row: its cluster), as a path
  std::string metric;      // megatron_tflops_per_gpu, tokens_per_second_per_gpu, bus_bandwidth_gbyte_s, time_us,
                           // attention_tflops, mlp_forward_ms or mlp_backward_ms (docs/validation.md)
  double published = 0;
  std::string source;      // paper, table or figure, or repository file
  std::string setup;       // what the source says about the run, in a line
  // The model constant this measurement sets (a component row used for calibration): shown,
  // but left out of the group's summary, which would otherwise count it as agreement.
  std::string sets_constant;
  // Collective rows: the collective, its members (ranks 0..N−1 of the cluster) and size.
  std::string op;
  std::int32_t ranks = 0;
  std::int64_t bytes = 0;
  // The algorithm the source forced (NCCL_ALGO), or "auto": NCCL's own choice.
  std::string algorithm = "auto";
};

// The manifest: a TOML file of [[case]] tables (docs/validation.md lists the keys); scenario
// paths are relative to it. Throws ScenarioError.
std::vector<ValidationCase> read_validation_manifest(const std::string& path);

struct ValidationRow {
  ValidationCase validation_case;
  double predicted = 0;
  double error = 0;  // (predicted − published) / published
};

struct ValidationSummary {
  std::string group;
  std::size_t cases = 0;  // not counting the rows that set a constant
  double median_abs_error = 0;
  double max_abs_error = 0;
};

struct ValidationResult {
  std::string manifest;
  std::vector<ValidationRow> rows;
  std::vector<ValidationSummary> summaries;  // one per group, in order of first appearance
};

// Megatron-LM's TFLOP/s per GPU (Narayanan et al., SC'21, equation 3) of a step of
// `step_seconds` of this scenario (its global batch, sequence, layers, hidden size, vocabulary
// and GPUs).
double megatron_tflops_per_gpu(const Scenario& scenario, double step_seconds);

// The attention core of the scenario's first layer, forward and backward, in TFLOP/s as
// FlashAttention's benchmark counts them (3.5 × 4·b·s²·heads·d, halved when causal).
double attention_tflops(const Scenario& scenario);

// The unit a metric is printed in.
std::string validation_unit(const std::string& metric);

// Runs every case on `threads` threads (0: all cores). Throws ScenarioError for a case that
// cannot run (its scenario, its collective).
ValidationResult run_validation(const std::string& manifest, unsigned threads, const Progress& progress = {});

std::string format_validation(const ValidationResult& result);
nlohmann::json validation_to_json(const ValidationResult& result);

}  // namespace scenarios
