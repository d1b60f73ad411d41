// A libFuzzer executable for one fuzz target, named at compile time by DTSIM_FUZZ_ENTRY
// (fuzz/CMakeLists.txt): a FuzzFinding aborts, which libFuzzer records as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    DTSIM_FUZZ_ENTRY(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const fuzz::FuzzFinding& finding) {
    std::fprintf(stderr, "dtsim fuzz finding: %s\n", finding.what());
    std::abort();
  }
  return 0;
}
