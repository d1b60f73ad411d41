// A predicted timeline (simulated) against a measured one (a real run: dtsim's backend, or a
// PyTorch profiler trace whose NCCL kernels the reader maps to collective categories):
//   figure errors  = (predicted − measured) / measured of the step time, compute,
//                    communication, exposed communication and each category
//                    (the whole-timeline figures of timeline_stats.h);
//   per-op errors  = for every op both timelines have — matched by rank, name and
//                    occurrence (the k-th span of that name on that rank in start order) —
//                    (predicted − measured) / measured of its duration; their mean absolute
//                    value is the MAPE, overall and per op kind (matmul, norm, all_reduce, …:
//                    which part of the model is off).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace/timeline.h"
#include "sim/trace/timeline_stats.h"

namespace trace {

struct OpError {
  std::int32_t rank = 0;
  std::string name;
  std::string kind;            // the predicted span's kind ("matmul", "all_reduce", …), else its category
  std::size_t occurrence = 0;  // 0 for the first span of this name on this rank
  double predicted_s = 0;
  double measured_s = 0;
  double error() const { return (predicted_s - measured_s) / measured_s; }
};

// The matched ops of one kind: how many, their MAPE, and their summed durations.
struct KindError {
  std::string kind;
  std::size_t ops = 0;
  double mape = 0;
  double predicted_s = 0;
  double measured_s = 0;
};

struct Comparison {
  // Reference = measured, other = predicted: relative() is the prediction's error.
  std::vector<Difference> figures;
  std::size_t predicted_ops = 0;
  std::size_t measured_ops = 0;
  std::size_t matched_ops = 0;         // pairs with a measured duration > 0
  std::optional<double> op_mape;       // none when no op matched
  std::vector<OpError> worst_ops;      // the largest |error| first, at most kWorstOps
  std::vector<std::string> warnings;   // comparability_warnings(predicted, measured)
  static constexpr std::size_t kWorstOps = 10;
  std::vector<KindError> by_kind;      // by kind name
  std::vector<OpError> matched;        // every matched op, by rank, name and occurrence
};

Comparison compare_runs(const Timeline& predicted, const Timeline& measured);

// Whether a timeline is of a real run: dtsim's backend ("made_by": "measured: …") or another
// tool's trace (a PyTorch profiler trace has no "made_by").
bool is_measured(const Timeline& timeline);

// Why two timelines may not be comparable, one line each: different rank counts, models or
// steps (from dtsim's metadata, where both have it); a prediction priced for a GPU from dtsim's
// presets against a run measured on other hardware (CPU ranks, another GPU), which
// `dtsim calibrate` fixes. `first` and `second` name the two in the lines.
std::vector<std::string> comparability_warnings(const Timeline& first, const Timeline& second, const std::string& first_name,
                                                const std::string& second_name);

// A table for the terminal; `predicted` and `measured` name the two inputs.
std::string format_comparison(const Comparison& comparison, const std::string& predicted, const std::string& measured);
nlohmann::json comparison_to_json(const Comparison& comparison);
// Every matched op, one line each: rank,op,occurrence,kind,predicted_s,measured_s,error.
std::string matched_ops_csv(const Comparison& comparison);

}  // namespace trace
