// The step report: what one training step costs, where the time goes and whether it fits
// in memory — computed from a timeline (simulated or measured) plus a few facts about the
// run, so both executors report through the same code.
//
//   step time     = (last span end − first span start) / steps
//   tokens/s      = tokens per step / step time
//   MFU           = model FLOPs per step / (step time × GPU ranks × peak FLOP/s per rank)
//                   (model FLOPs: forward + backward of the model, recompute excluded —
//                   Chowdhery et al., PaLM, 2022, appendix B)
//   compute, communication, exposed communication, R, overlap: summary.h, taken on the
//   critical rank (the one that finishes last), per step.
//   compute idle  = 1 − compute / step time on the critical rank; for a pipeline it sits
//                   beside the textbook bubble (p−1)/(M+p−1) (GPipe, Huang et al., 2019).
//   achieved bandwidth of a communication category = bytes the rank sent in it / time its
//   spans that sent bytes lasted (a receive sends none: a pipeline stage's send_recv rate is
//   its sends'; for a parameter-server push: what each worker gets of the server's NIC).
//
// JSON keys are stable and documented in docs/report.md.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace/summary.h"
#include "sim/trace/timeline.h"

namespace trace {

// Parameter-server runs: consistency and the staleness measured on the timeline.
struct ParameterServerFacts {
  std::string consistency;
  std::int32_t workers = 0;  // ranks 0..workers−1
  double staleness_mean = 0;
  std::int64_t staleness_max = 0;
};

// The report's parameter-server section: the facts plus, from the per-rank figures, each
// worker's idle time (step time − compute) and its own throughput.
struct ParameterServerReport {
  ParameterServerFacts facts;
  double idle_mean_s = 0, idle_min_s = 0, idle_max_s = 0;
  double tokens_per_s = 0;  // Σ over workers of tokens it trained / the time it took
};

struct RunFacts {
  std::string title;
  std::int32_t steps = 1;
  std::int64_t tokens_per_step = 0;
  double model_flops_per_step = 0;
  double peak_flops_per_rank = 0;
  bool fp8_gemms = false;  // GEMMs on FP8 tensor cores, above the peak MFU is counted against
  std::int32_t compute_ranks = 0;  // ranks that run the model (GPUs); 0: every rank
  std::vector<double> memory_capacity_bytes;  // per rank; empty when unknown
  // Simulation only: per-rank split of communication time into α and bandwidth terms.
  std::vector<double> comm_latency_s;
  std::vector<double> comm_bandwidth_s;
  std::vector<std::string> notes;  // extra warnings from the configuration
  std::string pipeline;            // the pipeline schedule, if any
  double pipeline_bubble = 0;      // its textbook bubble fraction
  std::int32_t pipeline_chunks = 1;  // model chunks per stage (interleaved 1F1B)
  std::optional<ParameterServerFacts> parameter_server;
  // Real runs: barrier → all work done by the host clock, on the slowest rank (whose spans all
  // end before it),
  // for all `steps` together: the median recorded run (the one the timeline shows), and every run.
  std::optional<double> host_run_time_s;
  std::vector<double> host_run_times_s;
};

struct RankReport {
  std::int32_t rank = 0;
  double step_time_s = 0;
  double compute_time_s = 0;
  double comm_time_s = 0;
  double exposed_comm_s = 0;
  std::int64_t comm_bytes = 0;
  std::int64_t peak_memory_bytes = 0;
  std::map<std::string, std::int64_t> peak_memory_breakdown;  // by series, at this rank's peak
};

struct Report {
  std::string title;
  std::int32_t steps = 1;
  std::int32_t ranks = 0;
  std::int32_t critical_rank = 0;
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double compute_time_s = 0;
  double comm_time_s = 0;
  double exposed_comm_s = 0;
  double comm_compute_ratio = 0;
  double overlap_ratio = 1;
  // Share of the step the critical rank does not compute: 1 − compute / step time (the
  // measured counterpart of a pipeline's bubble, plus exposed communication).
  double compute_idle_fraction = 0;
  std::string pipeline;
  double pipeline_bubble = 0;
  std::int32_t pipeline_chunks = 1;
  std::int64_t comm_bytes_per_rank = 0;
  std::optional<double> comm_latency_s;
  std::optional<double> comm_bandwidth_s;
  std::optional<double> host_step_time_s;  // real runs: RunFacts::host_run_time_s / steps
  std::vector<double> host_step_times_s;   // real runs: every recorded run's, per step
  std::map<std::string, double> time_by_category_s;  // critical rank, per step
  // Communication categories on the critical rank: bytes sent / time spent (bytes/s).
  std::map<std::string, double> achieved_bandwidth_by_category;
  std::int64_t peak_memory_bytes = 0;
  std::int32_t peak_memory_rank = 0;
  std::map<std::string, std::int64_t> peak_memory_breakdown;  // at the peak, by series
  // Of the peak, the resident model states — parameters, gradients, master weights, optimizer
  // states: what the ZeRO paper's per-device figures count; the rest (activations, buffers,
  // gathered parameters, unsharded gradients) is transient.
  std::int64_t peak_model_state_bytes = 0;
  std::string peak_memory_op;  // the op that reached the peak
  double memory_capacity_bytes = 0;  // of the peak rank (0 when unknown)
  bool oom = false;                  // some rank needs more than its device holds
  std::int32_t oom_rank = -1;        // the rank over its capacity by the most
  std::vector<RankReport> rank_reports;
  std::optional<ParameterServerReport> parameter_server;
  std::vector<std::string> warnings;
};

Report build_report(const Timeline& timeline, const RunFacts& facts);
// The rank the report describes: the one that finishes last (the first of equals); 0 when no
// rank ran anything.
std::int32_t critical_rank(const std::vector<RankSummary>& summaries);
std::string format_report(const Report& report);
// The warning for an MFU above 1 (the step computes faster than the devices' peak), naming the
// inputs that can cause it (FP8 GEMMs first when they run); empty when mfu ≤ 1.
std::string mfu_above_peak_warning(double mfu, bool fp8_gemms);
// A duration in s, ms or µs with the report's precision.
std::string human_seconds(double seconds);
nlohmann::json report_to_json(const Report& report);
// The report report_to_json wrote, every field as it was: through a binary encoding such as
// CBOR every double, NaN and infinities included; through JSON text every finite one (nlohmann
// writes the shortest digits that read back to the same double, and NaN or an infinity as
// null, which does not read back). Throws nlohmann::json::exception or std::invalid_argument
// for anything else.
Report report_from_json(const nlohmann::json& json);

}  // namespace trace
