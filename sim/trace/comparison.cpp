// Comparing a predicted timeline with a measured one (see comparison.h).
#include "sim/trace/comparison.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <unordered_map>

#include "sim/trace/report.h"

namespace trace {
namespace {

constexpr double kSecondsPerPs = 1e-12;

// Per (rank, name): the durations of its spans in start order.
std::unordered_map<std::string, std::vector<double>> durations_by_op(const Timeline& timeline) {
  std::vector<const Span*> spans;
  spans.reserve(timeline.spans.size());
  for (const Span& span : timeline.spans) spans.push_back(&span);
  std::stable_sort(spans.begin(), spans.end(), [](const Span* a, const Span* b) {
    return std::tie(a->rank, a->start_ps) < std::tie(b->rank, b->start_ps);
  });
  std::unordered_map<std::string, std::vector<double>> durations;
  for (const Span* span : spans) {
    durations[fmt::format("{}\n{}", span->rank, timeline.strings.at(span->name))].push_back(
        static_cast<double>(span->duration_ps()) * kSecondsPerPs);
  }
  return durations;
}

std::string percent(const std::optional<double>& fraction) {
  return fraction ? fmt::format("{:+.1f} %", *fraction * 100) : std::string("—");
}


}  // namespace

Comparison compare_runs(const Timeline& predicted, const Timeline& measured) {
  Comparison comparison;
  comparison.figures = compare_timelines(timeline_stats(measured), timeline_stats(predicted));
  comparison.predicted_ops = predicted.spans.size();
  comparison.measured_ops = measured.spans.size();

  const auto measured_ops = durations_by_op(measured);
  std::vector<OpError> errors;
  for (const auto& [key, predicted_durations] : durations_by_op(predicted)) {
    const auto found = measured_ops.find(key);
    if (found == measured_ops.end()) continue;
    const std::size_t newline = key.find('\n');
    const std::int32_t rank = std::stoi(key.substr(0, newline));
    const std::string name = key.substr(newline + 1);
    for (std::size_t k = 0; k < std::min(predicted_durations.size(), found->second.size()); ++k) {
      if (found->second[k] <= 0) continue;
      errors.push_back({rank, name, k, predicted_durations[k], found->second[k]});
    }
  }
  comparison.matched_ops = errors.size();
  if (!errors.empty()) {
    double sum = 0;
    for (const OpError& error : errors) sum += std::abs(error.error());
    comparison.op_mape = sum / static_cast<double>(errors.size());
    // Largest error first; ties by rank, name, occurrence so the output is deterministic.
    std::sort(errors.begin(), errors.end(), [](const OpError& a, const OpError& b) {
      const double x = std::abs(a.error()), y = std::abs(b.error());
      if (x != y) return x > y;
      return std::tie(a.rank, a.name, a.occurrence) < std::tie(b.rank, b.name, b.occurrence);
    });
    errors.resize(std::min(errors.size(), Comparison::kWorstOps));
    comparison.worst_ops = std::move(errors);
  }
  return comparison;
}

std::string format_comparison(const Comparison& comparison, const std::string& predicted, const std::string& measured) {
  std::string out = fmt::format("predicted: {}\nmeasured:  {}\n\n", predicted, measured);
  out += fmt::format("{:>24} {:>14} {:>14} {:>10}\n", "figure (per step, rank)", "predicted", "measured", "error");
  for (const Difference& figure : comparison.figures) {
    out += fmt::format("{:>24} {:>14} {:>14} {:>10}\n", figure.what, human_seconds(figure.b_s), human_seconds(figure.a_s),
                       percent(figure.relative()));
  }
  out += fmt::format("\nops: {} predicted, {} measured, {} matched by rank, name and occurrence\n",
                     comparison.predicted_ops, comparison.measured_ops, comparison.matched_ops);
  if (!comparison.op_mape) {
    out += "no op is in both timelines (a PyTorch trace names kernels, not dtsim ops): figures only\n";
    return out;
  }
  out += fmt::format("per-op MAPE: {:.1f} %\nlargest errors:\n", *comparison.op_mape * 100);
  for (const OpError& op : comparison.worst_ops) {
    out += fmt::format("  rank {:>4}  {:<48} #{:<4} {:>12} {:>12} {:>10}\n", op.rank, op.name, op.occurrence,
                       human_seconds(op.predicted_s), human_seconds(op.measured_s), percent(op.error()));
  }
  return out;
}

nlohmann::json comparison_to_json(const Comparison& comparison) {
  nlohmann::json figures = nlohmann::json::array();
  for (const Difference& figure : comparison.figures) {
    const auto relative = figure.relative();
    figures.push_back({{"figure", figure.what},
                       {"predicted_s", figure.b_s},
                       {"measured_s", figure.a_s},
                       {"error", relative ? nlohmann::json(*relative) : nlohmann::json(nullptr)}});
  }
  nlohmann::json worst = nlohmann::json::array();
  for (const OpError& op : comparison.worst_ops) {
    worst.push_back({{"rank", op.rank},
                     {"op", op.name},
                     {"occurrence", op.occurrence},
                     {"predicted_s", op.predicted_s},
                     {"measured_s", op.measured_s},
                     {"error", op.error()}});
  }
  return {{"figures", figures},
          {"ops",
           {{"predicted", comparison.predicted_ops},
            {"measured", comparison.measured_ops},
            {"matched", comparison.matched_ops},
            {"mape", comparison.op_mape ? nlohmann::json(*comparison.op_mape) : nlohmann::json(nullptr)},
            {"largest_errors", worst}}}};
}

}  // namespace trace
