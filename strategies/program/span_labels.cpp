// Span labels of Program ops (see span_labels.h).
#include "strategies/program/span_labels.h"

#include <algorithm>
#include <string>

namespace program {
namespace {

trace::Category category_of(const Op& op) {
  if (const auto* compute = std::get_if<ComputeOp>(&op.body)) {
    if (compute->kind == ComputeKind::kMemcpy) return trace::Category::kMemcpy;
    switch (compute->phase) {
      case Phase::kForward: return trace::Category::kForward;
      case Phase::kBackward: return trace::Category::kBackward;
      case Phase::kRecompute: return trace::Category::kRecompute;
      case Phase::kOptimizer: return trace::Category::kOptimizer;
    }
  }
  if (const auto* collective = std::get_if<CollectiveOp>(&op.body)) {
    switch (collective->kind) {
      case CollectiveKind::kAllReduce: return trace::Category::kAllReduce;
      case CollectiveKind::kAllGather: return trace::Category::kAllGather;
      case CollectiveKind::kReduceScatter: return trace::Category::kReduceScatter;
      case CollectiveKind::kBroadcast: return trace::Category::kBroadcast;
      case CollectiveKind::kReduce: return trace::Category::kReduce;
      case CollectiveKind::kAllToAll: return trace::Category::kAllToAll;
      case CollectiveKind::kBarrier: return trace::Category::kBarrier;
      case CollectiveKind::kPsPush: return trace::Category::kPsPush;
      case CollectiveKind::kPsPull: return trace::Category::kPsPull;
    }
  }
  if (std::holds_alternative<SendRecvOp>(op.body)) return trace::Category::kSendRecv;
  return trace::Category::kOther;
}

std::string shape_text(const Shape& shape) {
  std::string text;
  for (std::uint8_t i = 0; i < shape.rank; ++i) text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

}  // namespace

void SpanLabels::apply_to(trace::Span& span) const {
  span.category = category;
  span.name = name;
  span.kind = kind;
  span.dtype = dtype;
  span.shape = shape;
}

SpanLabels span_labels(const Op& op, trace::StringTable& strings) {
  SpanLabels labels;
  labels.category = category_of(op);
  labels.name = strings.intern(op.name);
  if (const auto* compute = std::get_if<ComputeOp>(&op.body)) {
    labels.kind = strings.intern(compute_kind_name(compute->kind));
    labels.dtype = strings.intern(dtype_name(compute->dtype));
    labels.shape = strings.intern(shape_text(compute->shape));
  } else if (const auto* collective = std::get_if<CollectiveOp>(&op.body)) {
    labels.kind = strings.intern(collective_name(collective->kind));
    labels.dtype = strings.intern(dtype_name(collective->dtype));
  } else if (const auto* p2p = std::get_if<SendRecvOp>(&op.body)) {
    labels.kind = strings.intern(p2p->is_send ? "send" : "recv");
    labels.dtype = strings.intern(dtype_name(p2p->dtype));
  }
  return labels;
}

std::vector<OpIndex> span_dependencies(const RankProgram& program, OpIndex index) {
  std::vector<OpIndex> pending(program.ops[index].deps.begin(), program.ops[index].deps.end());
  std::vector<OpIndex> found;
  while (!pending.empty()) {
    const OpIndex dependency = pending.back();
    pending.pop_back();
    const Op& op = program.ops[dependency];
    if (std::holds_alternative<MemoryOp>(op.body)) {
      pending.insert(pending.end(), op.deps.begin(), op.deps.end());
    } else {
      found.push_back(dependency);
    }
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

}  // namespace program
