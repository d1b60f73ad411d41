// Comparing a predicted timeline with a measured one (see comparison.h).
#include "sim/trace/comparison.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_map>

#include "sim/trace/report.h"

namespace trace {
namespace {

constexpr double kSecondsPerPs = 1e-12;

// The category's name, for spans without a kind (a category name outlives any timeline).
const std::string& category_name_string(Category category) {
  static const auto names = [] {
    std::vector<std::string> all;
    for (std::size_t c = 0; c < kCategoryCount; ++c) all.emplace_back(category_name(static_cast<Category>(c)));
    return all;
  }();
  return names[static_cast<std::size_t>(category)];
}

struct OpSpan {
  double seconds = 0;
  const std::string* kind = nullptr;
};

// Per (rank, name): its spans in start order.
std::unordered_map<std::string, std::vector<OpSpan>> spans_by_op(const Timeline& timeline) {
  std::vector<const Span*> spans = timeline.op_spans();
  std::stable_sort(spans.begin(), spans.end(), [](const Span* a, const Span* b) {
    return std::tie(a->rank, a->start_ps) < std::tie(b->rank, b->start_ps);
  });
  std::unordered_map<std::string, std::vector<OpSpan>> by_op;
  for (const Span* span : spans) {
    const std::string& kind = timeline.strings.at(span->kind);
    by_op[fmt::format("{}\n{}", span->rank, timeline.strings.at(span->name))].push_back(
        {static_cast<double>(span->duration_ps()) * kSecondsPerPs,
         kind.empty() ? &category_name_string(span->category) : &kind});
  }
  return by_op;
}

std::vector<KindError> errors_by_kind(const std::vector<OpError>& errors) {
  std::map<std::string, KindError> by_kind;
  for (const OpError& op : errors) {
    KindError& kind = by_kind[op.kind];
    kind.kind = op.kind;
    ++kind.ops;
    kind.mape += std::abs(op.error());
    kind.predicted_s += op.predicted_s;
    kind.measured_s += op.measured_s;
  }
  std::vector<KindError> kinds;
  for (auto& [name, kind] : by_kind) {
    kind.mape /= static_cast<double>(kind.ops);
    kinds.push_back(std::move(kind));
  }
  return kinds;
}

std::string percent(const std::optional<double>& fraction) {
  return fraction ? fmt::format("{:+.1f} %", *fraction * 100) : std::string("—");
}


}  // namespace

bool is_measured(const Timeline& timeline) {
  const auto made_by = timeline.metadata.find("made_by");
  return made_by == timeline.metadata.end() || made_by->second.starts_with("measured");
}

namespace {

// A timeline's ranks: the job's, and the numbers of those it holds spans of.
struct JobRanks {
  std::size_t job = 0;
  std::vector<std::size_t> traced;
};

// As its producer recorded them (dtsim's timelines: a trace of some ranks keeps the job's count
// and marks the others untraced); else — another tool's trace — the ranks that compute or
// communicate (a PyTorch trace's host process, with CPU ops only, is not one: timeline_stats.h).
JobRanks ranks_of(const Timeline& timeline) {
  JobRanks ranks;
  const std::optional<std::size_t> recorded = timeline.recorded_job_ranks();
  const std::vector<RankSummary> summaries =
      recorded ? std::vector<RankSummary>{} : summarize_ranks(timeline);
  for (std::size_t rank = 0; rank < timeline.ranks.size(); ++rank) {
    const bool works = recorded || summaries[rank].compute_ps > 0 || summaries[rank].comm_ps > 0;
    if (timeline.ranks[rank].traced && works) ranks.traced.push_back(rank);
  }
  ranks.job = recorded.value_or(ranks.traced.size());
  return ranks;
}

// comparability_warnings with each timeline's ranks already found (compare_runs counts ops with
// them).
std::vector<std::string> warnings_of(const Timeline& first, const Timeline& second,
                                     const std::string& first_name, const std::string& second_name,
                                     const JobRanks& first_ranks, const JobRanks& second_ranks) {
  std::vector<std::string> warnings;
  if (first_ranks.job != second_ranks.job) {
    warnings.push_back(fmt::format("{} has {} ranks and {} has {}: they are not the same job",
                                   first_name, first_ranks.job, second_name, second_ranks.job));
  } else if (const std::vector<std::size_t>& a = first_ranks.traced, &b = second_ranks.traced;
             a != b) {
    std::vector<std::size_t> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    warnings.push_back(
        fmt::format("{} holds {} of the job's {} ranks and {} holds {}, {} of them the same: ops "
                    "are paired by rank "
                    "number, so only those are compared op by op, and the figures are each over "
                    "the ranks its trace "
                    "holds; trace the same ranks in both (--trace-ranks)",
                    first_name, a.size(), first_ranks.job, second_name, b.size(), both.size()));
  }
  // The dimensions only where the names agree (one preset, overridden: model.layers = 4).
  bool models_differ = false;
  for (const auto& [key, what] :
       {std::pair{"model", "models"}, std::pair{"model_dimensions", "model dimensions"}}) {
    const auto a = first.metadata.find(key), b = second.metadata.find(key);
    if (a == first.metadata.end() || b == second.metadata.end() || a->second == b->second) continue;
    if (std::string_view(key) == "model_dimensions" && models_differ) continue;
    models_differ = models_differ || std::string_view(key) == "model";
    warnings.push_back(fmt::format("different {}: {} in {}, {} in {}", what, a->second, first_name,
                                   b->second, second_name));
  }
  // Steps as the figures divide by them: an unreadable count is taken as one step.
  for (const auto& [timeline, name] :
       {std::pair{&first, &first_name}, std::pair{&second, &second_name}}) {
    const auto written = timeline->metadata.find("steps");
    if (written != timeline->metadata.end() && !timeline->recorded_steps()) {
      warnings.push_back(
          fmt::format("{}'s \"steps\" metadata, \"{}\", is not a step count: its "
                      "figures are taken over one step",
                      *name, written->second));
    }
  }
  if (const auto a = first.recorded_steps(), b = second.recorded_steps(); a && b && *a != *b) {
    warnings.push_back(
        fmt::format("different steps: {} in {}, {} in {}", *a, first_name, *b, second_name));
  }
  // A prediction from presets prices its scenario's GPU; a run on other hardware is not that.
  for (const auto& [prediction, run, run_name] :
       {std::tuple{&first, &second, &second_name}, std::tuple{&second, &first, &first_name}}) {
    const auto executed_on = run->metadata.find("executed_on");
    const auto gpu = prediction->metadata.find("gpu");
    if (is_measured(*prediction) || executed_on == run->metadata.end() || gpu == prediction->metadata.end()) continue;
    const auto profile = prediction->metadata.find("hardware_profile");
    const bool calibrated = profile != prediction->metadata.end() && !profile->second.empty();
    if (!calibrated && executed_on->second.find(gpu->second.substr(0, gpu->second.find(' '))) == std::string::npos) {
      warnings.push_back(fmt::format("the prediction prices the {} from dtsim's presets, but {} ran on {}: run "
                                     "`dtsim calibrate` there and simulate with its profile (--profile FILE)",
                                     gpu->second, *run_name, executed_on->second));
    }
  }
  return warnings;
}

}  // namespace

std::vector<std::string> comparability_warnings(const Timeline& first, const Timeline& second,
                                                const std::string& first_name,
                                                const std::string& second_name) {
  return warnings_of(first, second, first_name, second_name, ranks_of(first), ranks_of(second));
}

Comparison compare_runs(const Timeline& predicted, const Timeline& measured) {
  Comparison comparison;
  const JobRanks predicted_ranks = ranks_of(predicted), measured_ranks = ranks_of(measured);
  comparison.warnings = warnings_of(predicted, measured, "the prediction", "the measurement",
                                    predicted_ranks, measured_ranks);
  comparison.figures = compare_timelines(timeline_stats(measured), timeline_stats(predicted));
  const auto measured_ops = spans_by_op(measured);
  const auto predicted_ops = spans_by_op(predicted);
  // Ops on the ranks that compute or communicate (not a PyTorch trace's host process).
  const auto count = [](const auto& by_op, const JobRanks& job) {
    const std::vector<std::size_t>& ranks = job.traced;
    std::size_t spans = 0;
    for (const auto& [key, of_op] : by_op) {
      const auto rank = static_cast<std::size_t>(std::stoul(key.substr(0, key.find('\n'))));
      if (std::binary_search(ranks.begin(), ranks.end(), rank)) spans += of_op.size();
    }
    return spans;
  };
  comparison.predicted_ops = count(predicted_ops, predicted_ranks);
  comparison.measured_ops = count(measured_ops, measured_ranks);
  std::vector<OpError>& errors = comparison.matched;
  for (const auto& [key, predicted_spans] : predicted_ops) {
    const auto found = measured_ops.find(key);
    if (found == measured_ops.end()) continue;
    const std::size_t newline = key.find('\n');
    const std::int32_t rank = std::stoi(key.substr(0, newline));
    const std::string name = key.substr(newline + 1);
    for (std::size_t k = 0; k < std::min(predicted_spans.size(), found->second.size()); ++k) {
      if (found->second[k].seconds <= 0) continue;
      errors.push_back({rank, name, *predicted_spans[k].kind, k, predicted_spans[k].seconds, found->second[k].seconds});
    }
  }
  const auto by_rank_name_occurrence = [](const OpError& a, const OpError& b) {
    return std::tie(a.rank, a.name, a.occurrence) < std::tie(b.rank, b.name, b.occurrence);
  };
  std::sort(errors.begin(), errors.end(), by_rank_name_occurrence);
  comparison.matched_ops = errors.size();
  if (errors.empty()) return comparison;
  double sum = 0;
  for (const OpError& error : errors) sum += std::abs(error.error());
  comparison.op_mape = sum / static_cast<double>(errors.size());
  comparison.by_kind = errors_by_kind(errors);
  // Largest error first; ties in the matched order, so the output is deterministic.
  std::vector<std::size_t> order(errors.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  const auto worst = order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), Comparison::kWorstOps));
  std::partial_sort(order.begin(), worst, order.end(), [&](std::size_t a, std::size_t b) {
    const double x = std::abs(errors[a].error()), y = std::abs(errors[b].error());
    return x != y ? x > y : a < b;
  });
  for (auto index = order.begin(); index != worst; ++index) comparison.worst_ops.push_back(errors[*index]);
  return comparison;
}

std::string format_comparison(const Comparison& comparison, const std::string& predicted, const std::string& measured) {
  std::string out = fmt::format("predicted: {}\nmeasured:  {}\nerror = (predicted − measured) / measured\n", predicted,
                                measured);
  for (const std::string& warning : comparison.warnings) out += fmt::format("warning: {}\n", warning);
  out += "\n";
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
  out += fmt::format("per-op MAPE: {:.1f} %\n", *comparison.op_mape * 100);
  out += fmt::format("{:>24} {:>6} {:>10} {:>14} {:>14} {:>10}\n", "by op kind", "ops", "MAPE", "predicted", "measured",
                     "error");
  for (const KindError& kind : comparison.by_kind) {
    out += fmt::format("{:>24} {:>6} {:>8.1f} % {:>14} {:>14} {:>10}\n", kind.kind, kind.ops, kind.mape * 100,
                       human_seconds(kind.predicted_s), human_seconds(kind.measured_s),
                       percent((kind.predicted_s - kind.measured_s) / kind.measured_s));
  }
  out += "largest errors:\n";
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
                     {"kind", op.kind},
                     {"predicted_s", op.predicted_s},
                     {"measured_s", op.measured_s},
                     {"error", op.error()}});
  }
  nlohmann::json kinds = nlohmann::json::object();
  for (const KindError& kind : comparison.by_kind) {
    kinds[kind.kind] = {{"ops", kind.ops},
                        {"mape", kind.mape},
                        {"predicted_s", kind.predicted_s},
                        {"measured_s", kind.measured_s},
                        {"error", (kind.predicted_s - kind.measured_s) / kind.measured_s}};
  }
  return {{"error", "(predicted - measured) / measured"},
          {"warnings", comparison.warnings},
          {"figures", figures},
          {"ops",
           {{"predicted", comparison.predicted_ops},
            {"measured", comparison.measured_ops},
            {"matched", comparison.matched_ops},
            {"mape", comparison.op_mape ? nlohmann::json(*comparison.op_mape) : nlohmann::json(nullptr)},
            {"by_kind", kinds},
            {"largest_errors", worst}}}};
}

std::string matched_ops_csv(const Comparison& comparison) {
  std::string csv = "rank,op,occurrence,kind,predicted_s,measured_s,error\n";
  for (const OpError& op : comparison.matched) {
    std::string quoted_name;  // RFC 4180: quotes doubled inside a quoted field
    for (const char c : op.name) quoted_name += c == '"' ? std::string("\"\"") : std::string(1, c);
    csv += fmt::format("{},\"{}\",{},{},{:.9g},{:.9g},{:.6g}\n", op.rank, quoted_name, op.occurrence, op.kind,
                       op.predicted_s, op.measured_s, op.error());
  }
  return csv;
}

}  // namespace trace
