// Figures of a whole timeline, computed from the timeline alone with the report's definitions
// (summary.h), so a simulated and a measured timeline are measured alike — used by `dtsim
// compare` and the viewer's summary and compare panels:
//   ranks          = those that compute or communicate (a PyTorch trace's host process,
//                    with CPU ops only, is left out);
//   step time      = (last end − first start) / steps, steps from the producer's metadata
//                    (1 when absent or not a positive whole number);
//   R, overlap     = mean over ranks of each rank's comm/compute and 1 − exposed/comm;
//   compute, comm  = mean over ranks of the union of compute (communication) spans, per step;
//   exposed comm   = mean over ranks of communication not hidden under compute, per step;
//   per category   = mean over ranks of the summed span durations, per step;
//   peak memory    = per rank, the largest total over its memory samples.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace/timeline.h"

namespace trace {

struct TimelineStats {
  std::int32_t steps = 1;
  double step_s = 0;
  double comm_compute_ratio = 0;
  double overlap_ratio = 1;
  double exposed_comm_s = 0;
  double compute_s = 0;  // mean over ranks of the compute union, per step
  double comm_s = 0;     // mean over ranks of the communication union, per step
  std::array<double, kCategoryCount> seconds_by_category{};
  std::vector<std::int64_t> peak_memory_bytes;  // per rank; 0 when the trace has no samples
};

TimelineStats timeline_stats(const Timeline& timeline);

// One line of a comparison: a figure of timeline A (the reference), of B, and how B differs.
struct Difference {
  std::string what;  // "step time", "exposed communication", a category name
  double a_s = 0;
  double b_s = 0;
  double delta_s() const { return b_s - a_s; }
  std::optional<double> relative() const;  // (b − a) / a; none when a is 0
};
// Step time, compute, communication, exposed communication, then every category either
// timeline has time in.
std::vector<Difference> compare_timelines(const TimelineStats& a, const TimelineStats& b);

// One rank's total memory over time: (time, bytes summed over series) at every sample.
struct MemoryPoint {
  std::int64_t time_ps = 0;
  std::int64_t bytes = 0;
};
std::vector<MemoryPoint> memory_curve(const Timeline& timeline, std::int32_t rank);
// A sample's bytes summed over the series.
std::int64_t total_bytes(const MemorySample& sample);

}  // namespace trace
