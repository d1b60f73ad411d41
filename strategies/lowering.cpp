// Strategy dispatch (see lowering.h).
#include "strategies/lowering.h"

#include <stdexcept>

#include "strategies/parallel_training.h"
#include "strategies/parameter_server.h"

namespace strategies {

std::vector<std::string> strategy_names() { return {"ddp", "zero", "fsdp", "ps"}; }

std::vector<std::string> group_family_names() {
  return {"world", "dp", "tp", "pp", "pp_wrap", "embedding", "dp_shard", "dp_replicate", "ps", "ep", "expert_dp", "cp"};
}

program::Program lower(const LoweringInput& input) {
  const std::string& strategy = input.parallel.strategy;
  if (strategy == "ddp" || strategy == "zero" || strategy == "fsdp") return lower_parallel(input);
  if (input.parallel.strategy == "ps") return lower_parameter_server(input);
  throw std::invalid_argument("unknown strategy '" + input.parallel.strategy + "'");
}

}  // namespace strategies
