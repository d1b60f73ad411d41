// Building, printing and serialising the step report (see report.h).
#include "sim/trace/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace trace {
namespace {

constexpr double kPsPerSecond = 1e12;
double seconds(std::int64_t ps) { return static_cast<double>(ps) / kPsPerSecond; }

std::map<std::string, std::int64_t> breakdown_of(const Timeline& timeline, const MemorySample& sample) {
  std::map<std::string, std::int64_t> breakdown;
  for (std::size_t i = 0; i < sample.bytes.size() && i < timeline.memory_series.size(); ++i) {
    breakdown[timeline.memory_series[i]] = sample.bytes[i];
  }
  return breakdown;
}

// The memory series that are resident model states (program::MemoryCategory's first four).
std::int64_t model_state_bytes(const std::map<std::string, std::int64_t>& breakdown) {
  std::int64_t total = 0;
  for (const char* series : {"parameters", "gradients", "master_weights", "optimizer_states"}) {
    const auto found = breakdown.find(series);
    if (found != breakdown.end()) total += found->second;
  }
  return total;
}

std::string human_bytes(double bytes) {
  if (bytes >= 1e9) return fmt::format("{:.2f} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.2f} MB", bytes / 1e6);
  if (bytes >= 1e3) return fmt::format("{:.2f} kB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

}  // namespace

std::string human_seconds(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} µs", s * 1e6);
}

namespace {

void add_warnings(Report& report, const RunFacts& facts) {
  if (report.oom) {
    report.warnings.push_back(fmt::format(
        "OOM: rank {} needs {} but the device has {} (peak reached at '{}')",
        report.peak_memory_rank, human_bytes(static_cast<double>(report.peak_memory_bytes)),
        human_bytes(report.memory_capacity_bytes), report.peak_memory_op));
  }
  if (report.comm_compute_ratio > 1) {
    report.warnings.push_back(fmt::format(
        "communication-bound: R = T_comm / T_comp = {:.2f} > 1, communication takes longer than "
        "computation ({} vs {} per step); the time by category shows which collectives weigh "
        "most — under plain data parallelism, sharding (ZeRO/FSDP) or tensor/pipeline "
        "parallelism moves less per step (chapter §6.1.7)",
        report.comm_compute_ratio, human_seconds(report.comm_time_s),
        human_seconds(report.compute_time_s)));
  }
  if (std::string mfu = mfu_above_peak_warning(report.mfu, facts.fp8_gemms); !mfu.empty()) {
    report.warnings.push_back(std::move(mfu));
  }
  for (const std::string& note : facts.notes) report.warnings.push_back(note);
}

}  // namespace

std::string mfu_above_peak_warning(double mfu, bool fp8_gemms) {
  if (!(mfu > 1)) return {};
  if (fp8_gemms) {
    return fmt::format(
        "MFU {:.0f} % is above 100 %: MFU counts against the bf16 peak, and the FP8 GEMMs "
        "(training.precision = \"fp8\") run on tensor cores up to twice as fast; unless an imposed "
        "compute time, an efficiency or a capacity factor says otherwise, this is a GEMM-bound "
        "step "
        "at FP8 speed, not an error",
        mfu * 100);
  }
  return fmt::format(
      "MFU {:.0f} % is above 100 %: the step computes faster than the devices' peak FLOP/s, so an "
      "imposed compute time (compute.step_compute_time_s), an efficiency or a capacity factor "
      "that drops most tokens (model.moe.capacity_factor) is unrealistic",
      mfu * 100);
}

std::int32_t critical_rank(const std::vector<RankSummary>& summaries) {
  std::int32_t critical = 0;
  std::optional<std::int64_t> latest;
  for (const RankSummary& summary : summaries) {
    if (summary.end_ps == 0 && summary.begin_ps == 0) continue;  // ran nothing
    if (!latest || summary.end_ps > *latest) {
      latest = summary.end_ps;
      critical = summary.rank;
    }
  }
  return critical;
}

Report build_report(const Timeline& timeline, const RunFacts& facts) {
  Report report;
  report.title = facts.title.empty() ? timeline.title : facts.title;
  report.steps = std::max(1, facts.steps);
  report.pipeline = facts.pipeline;
  report.pipeline_bubble = facts.pipeline_bubble;
  report.pipeline_chunks = facts.pipeline_chunks;
  report.ranks = static_cast<std::int32_t>(timeline.ranks.size());
  const double steps = report.steps;

  const std::vector<RankSummary> summaries = summarize_ranks(timeline);
  const std::vector<MemoryPeak> peaks = memory_peaks(timeline);
  std::int64_t begin = 0;
  std::int64_t end = 0;
  bool any = false;
  for (const RankSummary& summary : summaries) {
    if (summary.end_ps == 0 && summary.begin_ps == 0) continue;
    begin = any ? std::min(begin, summary.begin_ps) : summary.begin_ps;
    end = any ? std::max(end, summary.end_ps) : summary.end_ps;
    any = true;
  }
  report.critical_rank = critical_rank(summaries);
  report.step_time_s = seconds(end - begin) / steps;
  if (facts.host_run_time_s) report.host_step_time_s = *facts.host_run_time_s / steps;
  for (const double run : facts.host_run_times_s) report.host_step_times_s.push_back(run / steps);
  if (report.step_time_s > 0) {
    report.tokens_per_s = static_cast<double>(facts.tokens_per_step) / report.step_time_s;
    const std::int32_t compute_ranks = facts.compute_ranks > 0 ? facts.compute_ranks : report.ranks;
    if (facts.peak_flops_per_rank > 0 && compute_ranks > 0) {
      report.mfu = facts.model_flops_per_step /
                   (report.step_time_s * compute_ranks * facts.peak_flops_per_rank);
    }
  }

  for (const RankSummary& summary : summaries) {
    RankReport rank;
    rank.rank = summary.rank;
    rank.step_time_s = seconds(summary.end_ps - begin) / steps;
    rank.compute_time_s = seconds(summary.compute_ps) / steps;
    rank.comm_time_s = seconds(summary.comm_ps) / steps;
    rank.exposed_comm_s = seconds(summary.exposed_comm_ps) / steps;
    rank.comm_bytes = static_cast<std::int64_t>(static_cast<double>(summary.comm_bytes) / steps);
    rank.peak_memory_bytes = peaks[summary.rank].bytes;
    if (peaks[summary.rank].found) {
      rank.peak_memory_breakdown = breakdown_of(timeline, timeline.memory[peaks[summary.rank].sample]);
    }
    report.rank_reports.push_back(rank);
  }
  if (!summaries.empty()) {
    const RankSummary& critical = summaries[report.critical_rank];
    report.compute_time_s = seconds(critical.compute_ps) / steps;
    report.comm_time_s = seconds(critical.comm_ps) / steps;
    report.exposed_comm_s = seconds(critical.exposed_comm_ps) / steps;
    report.comm_compute_ratio = critical.comm_compute_ratio();
    report.overlap_ratio = critical.overlap_ratio();
    if (report.step_time_s > 0) report.compute_idle_fraction = 1 - report.compute_time_s / report.step_time_s;
    report.comm_bytes_per_rank = report.rank_reports[report.critical_rank].comm_bytes;
    for (std::size_t c = 0; c < kCategoryCount; ++c) {
      if (critical.busy_ps_by_category[c] == 0) continue;
      const auto category = static_cast<Category>(c);
      const std::string name(category_name(category));
      report.time_by_category_s[name] = seconds(critical.busy_ps_by_category[c]) / steps;
      if (is_communication(category) && critical.bytes_by_category[c] > 0) {
        report.achieved_bandwidth_by_category[name] =
            static_cast<double>(critical.bytes_by_category[c]) /
            seconds(critical.sending_ps_by_category[c]);
      }
    }
    const auto critical_index = static_cast<std::size_t>(report.critical_rank);
    if (critical_index < facts.comm_latency_s.size()) {
      report.comm_latency_s = facts.comm_latency_s[critical_index] / steps;
      report.comm_bandwidth_s = facts.comm_bandwidth_s[critical_index] / steps;
    }
  }

  auto capacity_of = [&facts](std::size_t rank) {
    return rank < facts.memory_capacity_bytes.size() ? facts.memory_capacity_bytes[rank] : 0.0;
  };
  // The memory picture of one rank at its peak.
  auto adopt_peak = [&](std::size_t rank) {
    const MemorySample& sample = timeline.memory[peaks[rank].sample];
    report.peak_memory_bytes = peaks[rank].bytes;
    report.peak_memory_rank = static_cast<std::int32_t>(rank);
    report.memory_capacity_bytes = capacity_of(rank);
    report.peak_memory_breakdown = breakdown_of(timeline, sample);
    report.peak_model_state_bytes = model_state_bytes(report.peak_memory_breakdown);
    report.peak_memory_op = timeline.strings.at(sample.cause);
  };
  std::optional<std::size_t> highest;
  double worst_overshoot = 0;
  for (std::size_t rank = 0; rank < peaks.size(); ++rank) {
    if (!peaks[rank].found) continue;
    if (!highest || peaks[rank].bytes > peaks[*highest].bytes) highest = rank;
    const double capacity = capacity_of(rank);
    const double overshoot = static_cast<double>(peaks[rank].bytes) - capacity;
    if (capacity > 0 && overshoot > worst_overshoot) {
      worst_overshoot = overshoot;
      report.oom = true;
      report.oom_rank = static_cast<std::int32_t>(rank);
    }
  }
  // The highest peak, unless another rank does not fit: then that rank's picture.
  if (report.oom) {
    adopt_peak(static_cast<std::size_t>(report.oom_rank));
  } else if (highest) {
    adopt_peak(*highest);
  }
  if (facts.parameter_server) {
    ParameterServerReport ps;
    ps.facts = *facts.parameter_server;
    const std::int32_t workers = std::min<std::int32_t>(ps.facts.workers, static_cast<std::int32_t>(report.rank_reports.size()));
    const double tokens_per_worker_step = static_cast<double>(facts.tokens_per_step) / std::max(1, ps.facts.workers);
    for (std::int32_t w = 0; w < workers; ++w) {
      const RankReport& rank = report.rank_reports[w];
      const double idle = rank.step_time_s - rank.compute_time_s;
      ps.idle_mean_s += idle / workers;
      ps.idle_min_s = w == 0 ? idle : std::min(ps.idle_min_s, idle);
      ps.idle_max_s = w == 0 ? idle : std::max(ps.idle_max_s, idle);
      if (rank.step_time_s > 0) ps.tokens_per_s += tokens_per_worker_step / rank.step_time_s;
    }
    report.parameter_server = ps;
  }
  add_warnings(report, facts);
  return report;
}

std::string format_report(const Report& r) {
  std::string out;
  auto line = [&out](std::string_view label, const std::string& value) {
    out += fmt::format("  {:<22}{}\n", label, value);
  };
  out += fmt::format("{}\n", r.title);
  out += fmt::format("{} rank{}, {} step{}\n\n", r.ranks, r.ranks == 1 ? "" : "s", r.steps,
                     r.steps == 1 ? "" : "s");
  line("step time", human_seconds(r.step_time_s));
  if (r.host_step_time_s) {
    std::string runs;
    if (r.host_step_times_s.size() > 1) {
      const auto [fastest, slowest] = std::minmax_element(r.host_step_times_s.begin(), r.host_step_times_s.end());
      runs = fmt::format("median of {} runs, {} … {}; ", r.host_step_times_s.size(), human_seconds(*fastest),
                         human_seconds(*slowest));
    }
    line("host-timed step",
         human_seconds(*r.host_step_time_s) + fmt::format("  ({}barrier to all work done, slowest rank)", runs));
  }
  line("throughput", fmt::format("{:.0f} tokens/s", r.tokens_per_s));
  line("MFU", fmt::format("{:.1f} %", r.mfu * 100));
  line("compute", human_seconds(r.compute_time_s));
  std::string comm = human_seconds(r.comm_time_s);
  if (r.comm_latency_s) {
    // Each transfer's terms are its own: concurrent ones (a worker's shards to every parameter
    // server at once) add up to more than the time they took together.
    const bool concurrent = *r.comm_latency_s + *r.comm_bandwidth_s > 1.01 * r.comm_time_s;
    comm += fmt::format(
        "  (latency terms {}, bandwidth terms {}{})", human_seconds(*r.comm_latency_s),
        human_seconds(*r.comm_bandwidth_s),
        concurrent ? ", each transfer's own: concurrent ones add up past the time they took" : "");
  }
  line("communication", comm);
  line("traffic sent per rank", human_bytes(static_cast<double>(r.comm_bytes_per_rank)));
  line("exposed communication", human_seconds(r.exposed_comm_s));
  line("R = T_comm / T_comp", fmt::format("{:.3f}", r.comm_compute_ratio));
  line("overlap ratio", fmt::format("{:.1f} %", r.overlap_ratio * 100));
  if (!r.pipeline.empty()) {
    line("pipeline", fmt::format("{}; bubble (p−1)/({}M+p−1) = {:.1f} %, compute idle on rank {} = {:.1f} %", r.pipeline,
                                 r.pipeline_chunks > 1 ? "v·" : "", 100 * r.pipeline_bubble, r.critical_rank,
                                 100 * r.compute_idle_fraction));
  }
  if (r.parameter_server) {
    const ParameterServerReport& ps = *r.parameter_server;
    line("parameter server", fmt::format("{}, {} workers: staleness mean {:.2f}, max {} updates", ps.facts.consistency,
                                         ps.facts.workers, ps.facts.staleness_mean, ps.facts.staleness_max));
    line("worker idle", fmt::format("mean {}, min {}, max {} per step", human_seconds(ps.idle_mean_s),
                                    human_seconds(ps.idle_min_s), human_seconds(ps.idle_max_s)));
    line("worker throughput", fmt::format("{:.0f} tokens/s summed over workers", ps.tokens_per_s));
  }
  out += fmt::format("\n  time by category on rank {} (busy time, per step)\n", r.critical_rank);
  for (const auto& [category, time] : r.time_by_category_s) {
    std::string bandwidth;
    if (auto it = r.achieved_bandwidth_by_category.find(category);
        it != r.achieved_bandwidth_by_category.end()) {
      bandwidth = fmt::format("  ({}/s = {:.2f} Gb/s sent)", human_bytes(it->second), it->second * 8 / 1e9);
    }
    out += fmt::format("    {:<20}{}{}\n", category, human_seconds(time), bandwidth);
  }
  out += fmt::format("\n  peak memory           {} on rank {}", human_bytes(static_cast<double>(r.peak_memory_bytes)),
                     r.peak_memory_rank);
  if (r.memory_capacity_bytes > 0) {
    out += fmt::format(" of {} ({})", human_bytes(r.memory_capacity_bytes),
                       r.oom ? "OUT OF MEMORY" : "fits");
  }
  out += "\n";
  if (r.peak_model_state_bytes > 0) {
    out += fmt::format("    {:<20}{} (resident; the rest is transient)\n", "model states",
                       human_bytes(static_cast<double>(r.peak_model_state_bytes)));
  }
  for (const auto& [series, bytes] : r.peak_memory_breakdown) {
    if (bytes != 0) out += fmt::format("    {:<20}{}\n", series, human_bytes(static_cast<double>(bytes)));
  }
  if (!r.warnings.empty()) {
    out += "\nwarnings\n";
    for (const std::string& warning : r.warnings) out += fmt::format("  ! {}\n", warning);
  }
  return out;
}

nlohmann::json report_to_json(const Report& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankReport& rank : r.rank_reports) {
    ranks.push_back({{"rank", rank.rank},
                     {"step_time_s", rank.step_time_s},
                     {"compute_time_s", rank.compute_time_s},
                     {"comm_time_s", rank.comm_time_s},
                     {"exposed_comm_s", rank.exposed_comm_s},
                     {"comm_bytes", rank.comm_bytes},
                     {"peak_memory_bytes", rank.peak_memory_bytes},
                     {"peak_memory_breakdown_bytes", rank.peak_memory_breakdown}});
  }
  nlohmann::json json = {
      {"schema", "dtsim.report/1"},
      {"title", r.title},
      {"steps", r.steps},
      {"ranks", r.ranks},
      {"critical_rank", r.critical_rank},
      {"step_time_s", r.step_time_s},
      {"host_step_time_s", r.host_step_time_s ? nlohmann::json(*r.host_step_time_s) : nlohmann::json(nullptr)},
      {"host_step_times_s", r.host_step_times_s},
      {"tokens_per_s", r.tokens_per_s},
      {"mfu", r.mfu},
      {"compute_time_s", r.compute_time_s},
      {"comm_time_s", r.comm_time_s},
      {"exposed_comm_s", r.exposed_comm_s},
      {"comm_compute_ratio", r.comm_compute_ratio},
      {"overlap_ratio", r.overlap_ratio},
      {"compute_idle_fraction", r.compute_idle_fraction},
      {"pipeline", r.pipeline},
      {"pipeline_bubble", r.pipeline_bubble},
      {"pipeline_chunks", r.pipeline_chunks},
      {"comm_bytes_per_rank", r.comm_bytes_per_rank},
      {"time_by_category_s", r.time_by_category_s},
      {"achieved_bandwidth_bytes_per_s", r.achieved_bandwidth_by_category},
      {"peak_memory_bytes", r.peak_memory_bytes},
      {"peak_memory_rank", r.peak_memory_rank},
      {"peak_memory_breakdown_bytes", r.peak_memory_breakdown},
      {"peak_model_state_bytes", r.peak_model_state_bytes},
      {"peak_memory_op", r.peak_memory_op},
      {"memory_capacity_bytes", r.memory_capacity_bytes},
      {"oom", r.oom},
      {"oom_rank", r.oom_rank},
      {"per_rank", std::move(ranks)},
      {"warnings", r.warnings},
  };
  if (r.parameter_server) {
    const ParameterServerReport& ps = *r.parameter_server;
    json["parameter_server"] = {{"consistency", ps.facts.consistency},
                                {"workers", ps.facts.workers},
                                {"staleness_mean", ps.facts.staleness_mean},
                                {"staleness_max", ps.facts.staleness_max},
                                {"worker_idle_mean_s", ps.idle_mean_s},
                                {"worker_idle_min_s", ps.idle_min_s},
                                {"worker_idle_max_s", ps.idle_max_s},
                                {"worker_tokens_per_s", ps.tokens_per_s}};
  } else {
    json["parameter_server"] = nullptr;
  }
  json["comm_latency_s"] = r.comm_latency_s ? nlohmann::json(*r.comm_latency_s) : nlohmann::json();
  json["comm_bandwidth_s"] =
      r.comm_bandwidth_s ? nlohmann::json(*r.comm_bandwidth_s) : nlohmann::json();
  return json;
}

Report report_from_json(const nlohmann::json& json) {
  if (json.value("schema", "") != "dtsim.report/1") {
    throw std::invalid_argument("not a dtsim report (schema dtsim.report/1)");
  }
  const auto optional_number = [&](const char* key) {
    const nlohmann::json& value = json.at(key);
    return value.is_null() ? std::optional<double>() : std::optional<double>(value.get<double>());
  };
  Report r;
  json.at("title").get_to(r.title);
  json.at("steps").get_to(r.steps);
  json.at("ranks").get_to(r.ranks);
  json.at("critical_rank").get_to(r.critical_rank);
  json.at("step_time_s").get_to(r.step_time_s);
  r.host_step_time_s = optional_number("host_step_time_s");
  json.at("host_step_times_s").get_to(r.host_step_times_s);
  json.at("tokens_per_s").get_to(r.tokens_per_s);
  json.at("mfu").get_to(r.mfu);
  json.at("compute_time_s").get_to(r.compute_time_s);
  json.at("comm_time_s").get_to(r.comm_time_s);
  json.at("exposed_comm_s").get_to(r.exposed_comm_s);
  json.at("comm_compute_ratio").get_to(r.comm_compute_ratio);
  json.at("overlap_ratio").get_to(r.overlap_ratio);
  json.at("compute_idle_fraction").get_to(r.compute_idle_fraction);
  json.at("pipeline").get_to(r.pipeline);
  json.at("pipeline_bubble").get_to(r.pipeline_bubble);
  json.at("pipeline_chunks").get_to(r.pipeline_chunks);
  json.at("comm_bytes_per_rank").get_to(r.comm_bytes_per_rank);
  json.at("time_by_category_s").get_to(r.time_by_category_s);
  json.at("achieved_bandwidth_bytes_per_s").get_to(r.achieved_bandwidth_by_category);
  json.at("peak_memory_bytes").get_to(r.peak_memory_bytes);
  json.at("peak_memory_rank").get_to(r.peak_memory_rank);
  json.at("peak_memory_breakdown_bytes").get_to(r.peak_memory_breakdown);
  json.at("peak_model_state_bytes").get_to(r.peak_model_state_bytes);
  json.at("peak_memory_op").get_to(r.peak_memory_op);
  json.at("memory_capacity_bytes").get_to(r.memory_capacity_bytes);
  json.at("oom").get_to(r.oom);
  json.at("oom_rank").get_to(r.oom_rank);
  for (const nlohmann::json& rank : json.at("per_rank")) {
    RankReport& out = r.rank_reports.emplace_back();
    rank.at("rank").get_to(out.rank);
    rank.at("step_time_s").get_to(out.step_time_s);
    rank.at("compute_time_s").get_to(out.compute_time_s);
    rank.at("comm_time_s").get_to(out.comm_time_s);
    rank.at("exposed_comm_s").get_to(out.exposed_comm_s);
    rank.at("comm_bytes").get_to(out.comm_bytes);
    rank.at("peak_memory_bytes").get_to(out.peak_memory_bytes);
    rank.at("peak_memory_breakdown_bytes").get_to(out.peak_memory_breakdown);
  }
  json.at("warnings").get_to(r.warnings);
  if (const nlohmann::json& ps = json.at("parameter_server"); !ps.is_null()) {
    ParameterServerReport& out = r.parameter_server.emplace();
    ps.at("consistency").get_to(out.facts.consistency);
    ps.at("workers").get_to(out.facts.workers);
    ps.at("staleness_mean").get_to(out.facts.staleness_mean);
    ps.at("staleness_max").get_to(out.facts.staleness_max);
    ps.at("worker_idle_mean_s").get_to(out.idle_mean_s);
    ps.at("worker_idle_min_s").get_to(out.idle_min_s);
    ps.at("worker_idle_max_s").get_to(out.idle_max_s);
    ps.at("worker_tokens_per_s").get_to(out.tokens_per_s);
  }
  r.comm_latency_s = optional_number("comm_latency_s");
  r.comm_bandwidth_s = optional_number("comm_bandwidth_s");
  return r;
}

}  // namespace trace
