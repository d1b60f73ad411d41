// trace::Timeline — what happened on every rank and stream, written by the simulator and by
// the real backend alike, read by the report, `dtsim compare` and the viewer.
//
// A span is one op on one (rank, stream) lane with integer-picosecond start and end; its
// attributes (bytes moved, FLOPs, collective algorithm and group) travel with it so a
// reader can compute achieved bandwidth or FLOP rate without the Program. Strings (op
// names, algorithms, groups) are interned once in `strings`. Memory use over time is a
// counter track per rank, one value per named series (parameters, gradients, ...).
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/trace/category.h"
#include "sim/trace/rank_summary.h"

namespace trace {

using StringId = std::uint32_t;

// Interned strings; id 0 is always the empty string.
class StringTable {
 public:
  StringTable() { intern(""); }
  StringId intern(std::string_view text);
  std::optional<StringId> find(std::string_view text) const;
  const std::string& at(StringId id) const { return strings_[id]; }
  std::size_t size() const { return strings_.size(); }

 private:
  // Looked up by string_view without building a std::string (a trace reader interns a few
  // strings per span).
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  std::vector<std::string> strings_;
  std::unordered_map<std::string, StringId, Hash, std::equal_to<>> ids_;
};

struct Span {
  std::int64_t start_ps = 0;
  std::int64_t end_ps = 0;
  std::int32_t rank = 0;
  std::uint16_t stream = 0;  // index into Timeline::streams
  Category category = Category::kOther;
  StringId name = 0;
  std::int64_t op = -1;      // index of the op in its rank's program; -1 when unknown
  std::int64_t bytes = 0;    // bytes this rank sends (communication) or touches (compute)
  double flops = 0;
  StringId algorithm = 0;    // collective algorithm, e.g. "ring"
  StringId group = 0;        // rank group, e.g. "dp[0]"
  StringId kind = 0;         // op kind: "matmul", "attention", …, "all_reduce", "send", "recv"
  StringId dtype = 0;        // "bf16", "fp32", …
  StringId shape = 0;        // compute ops: dimensions, e.g. "1x4096x12288x4096"
  std::int64_t duration_ps() const { return end_ps - start_ps; }
};

// The kind of the spans that divide a collective's span into its algorithm's steps (the packet
// model's "<stream> steps" lanes): drawn under the op, counted in no figure (the op's span is).
inline constexpr std::string_view kAlgorithmStepKind = "algorithm step";

struct RankInfo {
  std::string name;  // e.g. "rank 3 (node 0, gpu 3)"
  std::int32_t node = 0;
  bool traced = true;  // false: the producer kept no spans for this rank (only its summary)
};

struct MemorySample {
  std::int32_t rank = 0;
  std::int64_t time_ps = 0;
  std::vector<std::int64_t> bytes;  // one value per Timeline::memory_series entry
  StringId cause = 0;               // the allocation or free that produced this sample
};

// Span `op` of `rank` could start only after op `after_op` of the same rank had finished (both
// program op indices). Producers list only dependencies between ops that have spans.
struct OpDependency {
  std::int32_t rank = 0;
  std::int64_t op = 0;
  std::int64_t after_op = 0;
  friend auto operator<=>(const OpDependency&, const OpDependency&) = default;  // by rank, op, after_op
};

struct Timeline {
  std::string title;
  std::map<std::string, std::string> metadata;
  std::vector<RankInfo> ranks;
  std::vector<std::string> streams;
  std::vector<std::string> memory_series;
  std::vector<Span> spans;
  std::vector<MemorySample> memory;  // every sample of traced ranks; each untraced rank's peak
  StringTable strings;
  std::vector<OpDependency> dependencies;  // sorted by (rank, op, after_op)
  // Per-rank summaries computed by the producer from every op span (not algorithm steps),
  // including those of ranks it did not keep spans for (empty: compute them from `spans`).
  std::vector<RankSummary> summaries;

  std::uint16_t stream_index(std::string_view name);  // adds the stream when new
  // The job's rank count as its producer recorded it (metadata "ranks", which a trace of some
  // of the ranks keeps); none when it did not, or wrote no positive whole number.
  std::optional<std::size_t> recorded_job_ranks() const;
  // The training steps it holds as its producer recorded them (metadata "steps"); none when it
  // did not, or wrote no positive whole number.
  std::optional<std::size_t> recorded_steps() const;
  // Puts spans in lane order — rank, stream, start — as every producer hands them over (the
  // viewer and the Chrome trace writer rely on it); skips the sort when they already are.
  void sort_spans_by_lane();
  // The spans of ops (or of measured kernels): all but algorithm steps (kAlgorithmStepKind).
  std::vector<const Span*> op_spans() const;

 private:
  std::optional<std::size_t> recorded_count(
      const std::string& key) const;  // a positive whole number
};

}  // namespace trace
