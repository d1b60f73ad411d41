// Hand-built timelines for tests: ranks on nodes, named streams, spans added one by one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/trace/timeline.h"

namespace test_support {

struct TimelineMaker {
  std::shared_ptr<trace::Timeline> timeline = std::make_shared<trace::Timeline>();
  TimelineMaker(std::vector<std::int32_t> nodes_of_ranks, std::vector<std::string> streams) {
    for (std::size_t r = 0; r < nodes_of_ranks.size(); ++r) {
      timeline->ranks.push_back({"rank " + std::to_string(r), nodes_of_ranks[r], true});
    }
    timeline->streams = std::move(streams);
  }
  trace::Span& add(std::int32_t rank, std::uint16_t stream, trace::Category category, const std::string& name,
                   std::int64_t start, std::int64_t end) {
    trace::Span span;
    span.rank = rank;
    span.stream = stream;
    span.category = category;
    span.name = timeline->strings.intern(name);
    span.start_ps = start;
    span.end_ps = end;
    timeline->spans.push_back(span);
    return timeline->spans.back();
  }
};

}  // namespace test_support
