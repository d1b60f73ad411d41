// Strategy dispatch (see lowering.h).
#include "strategies/lowering.h"

#include <stdexcept>

#include "strategies/ddp.h"
#include "strategies/parameter_server.h"

namespace strategies {

std::vector<std::string> strategy_names() { return {"ddp", "ps"}; }

program::Program lower(const LoweringInput& input) {
  if (input.parallel.strategy == "ddp") return lower_ddp(input);
  if (input.parallel.strategy == "ps") return lower_parameter_server(input);
  throw std::invalid_argument("unknown strategy '" + input.parallel.strategy + "'");
}

}  // namespace strategies
