// How an op of a Program appears on a timeline — its category and its labels (name, kind,
// dtype, shape) — shared by the simulator and the real backend, so that their timelines of
// one Program match op by op (`dtsim compare`).
#pragma once

#include <vector>

#include "sim/trace/timeline.h"
#include "strategies/program/program.h"

namespace program {

struct SpanLabels {
  trace::Category category = trace::Category::kOther;
  trace::StringId name = 0;
  trace::StringId kind = 0;   // "matmul", "all_reduce", "send", …
  trace::StringId dtype = 0;
  trace::StringId shape = 0;  // compute ops: dimensions, e.g. "1x4096x12288x4096"
  void apply_to(trace::Span& span) const;
};

// The op's labels, their strings interned in `strings`.
SpanLabels span_labels(const Op& op, trace::StringTable& strings);

// The ops with spans that op `index` waited for: its dependencies, looking through memory ops
// (which take no time and have no span) to what they waited for; sorted, without repeats.
std::vector<OpIndex> span_dependencies(const RankProgram& program, OpIndex index);

}  // namespace program
