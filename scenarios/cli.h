// The `dtsim` command line (CLI11): run, sweep, presets, info. A library function so tests
// can drive it in-process and check what it prints, what it writes and its exit code.
//
// Exit codes: 0 success; 2 bad input (scenario, override or command line) — nothing is
// written; 1 an internal failure.
#pragma once

#include <iosfwd>

namespace scenarios {

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace scenarios
