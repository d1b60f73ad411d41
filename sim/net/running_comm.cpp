// RunningComm (see running_comm.h).
#include "sim/net/running_comm.h"

#include <algorithm>

namespace sim {

RunningComm::RunningComm(const CommPlan& plan_in, Time now, std::function<void(const CommResult&)> done_in)
    : plan(&plan_in), done(std::move(done_in)) {
  result.start = now;
  result.algorithm = plan_in.schedule.algorithm;
  result.protocol = plan_in.protocol;
  result.bytes_sent = plan_in.bytes_sent;
}

std::pair<std::function<void(const CommResult&)>, CommResult> RunningComm::finish(Time now) {
  result.end = now;
  result.bandwidth_seconds = std::max(0.0, (result.end - result.start).seconds() - result.latency_seconds);
  return {std::move(done), std::move(result)};
}

}  // namespace sim
