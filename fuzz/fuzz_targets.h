// The fuzz targets: each feeds arbitrary bytes to one of dtsim's input readers. A reader may
// refuse its input with its own error (ScenarioError, TraceFormatError), which is what bad
// input must get: one clear message. Any other exception that escapes is a finding, thrown as
// FuzzFinding; crashes, hangs and sanitizer reports are findings by themselves. libFuzzer
// drives them (fuzz/libfuzzer_main.cpp, ./dev.sh fuzz), and the test suite runs every seed and
// regression input through them in every build (tests/fuzz/fuzz_corpus_test.cpp).
#pragma once

#include <stdexcept>
#include <string_view>

namespace fuzz {

class FuzzFinding : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A scenario as `dtsim run FILE --set …` reads it: TOML text and, after a line "#--set", one
// --set assignment per line; then the [sweep] axes.
void scenario(std::string_view input);

// A Chrome or PyTorch-profiler (Kineto) trace, as `dtsim compare` and the viewer read it.
void trace(std::string_view input);

// `dtsim compare PREDICTED MEASURED`: two traces separated by a line "#--measured" (without
// one, the input is compared with itself), compared and written as JSON, text and CSV.
void compare(std::string_view input);

// The output of an nccl-tests run, as `dtsim collective --compare LOG` reads it.
void nccl_tests_log(std::string_view input);

}  // namespace fuzz
