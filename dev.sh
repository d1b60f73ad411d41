#!/usr/bin/env bash
# dtsim's one entry point for people and CI:
#   ./dev.sh run          install what is missing, build, simulate scenarios/default.toml
#   ./dev.sh test         install what is missing, build, run every test
#   ./dev.sh view         install what is missing, build, open dtsim-view on scenarios/default.toml
#   ./dev.sh build        install what is missing and build only
#   ./dev.sh sanitize     build with clang, ASan and UBSan in build-sanitize/ and run every test
#   ./dev.sh fuzz [SECS]  the same build, then each libFuzzer target for SECS seconds (default 60)
#   ./dev.sh build-types  configure and link dtsim as Debug, Release and MinSizeRel (build-types/)
# Builds go to build/ (Ninja, RelWithDebInfo, ccache when present). sanitizers/README.md has
# the sanitizer and fuzzing details.
set -euo pipefail
cd "$(dirname "$0")"

command="${1:-run}"
jobs="${DTSIM_JOBS:-$(nproc)}"

./scripts/install-deps.sh

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi

build_main() {
  if [ ! -f build/build.ninja ]; then
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}"
  fi
  cmake --build build -j "$jobs"
}

# build-sanitize/: clang at -O1 with ASan (and LeakSanitizer), UBSan and libFuzzer's coverage,
# the fuzz targets included; without CUDA (no GPU to run it on) and the benchmarks.
build_sanitize() {
  if [ ! -f build-sanitize/build.ninja ]; then
    CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DDTSIM_FUZZ=ON -DDTSIM_WITH_CUDA=OFF \
      -DDTSIM_BUILD_BENCHMARKS=OFF "${launcher[@]}"
  fi
  cmake --build build-sanitize -j "$jobs"
}

# Every error stops the process. Leaks of the libraries dtsim uses are suppressed by
# sanitizers/lsan.supp, whose matching needs the slow unwinder (fast_unwind_on_malloc=0).
sanitizer_environment() {
  export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_string_checks=1:fast_unwind_on_malloc=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  export LSAN_OPTIONS="suppressions=$PWD/sanitizers/lsan.supp:print_suppressions=0"
}

case "$command" in
  run)
    build_main
    ./build/scenarios/dtsim run scenarios/default.toml
    ;;
  test)
    build_main
    ctest --test-dir build --output-on-failure -j "$jobs"
    ;;
  view)
    build_main
    shift
    ./build/gui/dtsim-view --scenario scenarios/default.toml "$@"
    ;;
  build)
    build_main
    ;;
  sanitize)
    build_sanitize
    sanitizer_environment
    # The validation suite simulates ten runs of up to 3,072 GPUs: 77 s in the main build, ten
    # times that under ASan; the main build runs it, and its code runs here in the other tests.
    ctest --test-dir build-sanitize --output-on-failure -j "$jobs" -E "ValidationTest.EveryCaseRuns"
    ;;
  fuzz)
    seconds="${2:-60}"
    build_sanitize
    sanitizer_environment
    ./scripts/fuzz.sh build-sanitize "$seconds"
    ;;
  build-types)
    ./scripts/check-build-types.sh "$jobs"
    ;;
  *)
    echo "usage: ./dev.sh [run|test|view|build|sanitize|fuzz [SECONDS]|build-types]" >&2
    exit 2
    ;;
esac
