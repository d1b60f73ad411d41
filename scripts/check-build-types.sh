#!/usr/bin/env bash
# Configures and links dtsim in the build types CI does not otherwise build — Debug (-O0, where
# nothing unused is optimised away: a reference to a function only the headers declare fails
# to link), Release and MinSizeRel — with GCC and CUDA as found, without the viewer, tests and
# benchmarks (the main build has those). Each in build-types/<type>.
#   scripts/check-build-types.sh [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${1:-$(nproc)}"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
for type in Debug Release MinSizeRel; do
  echo "build-types: $type"
  cmake -S . -B "build-types/$type" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DDTSIM_BUILD_GUI=OFF -DDTSIM_BUILD_TESTS=OFF \
    -DDTSIM_BUILD_BENCHMARKS=OFF "${launcher[@]}" >/dev/null
  cmake --build "build-types/$type" -j "$jobs" --target dtsim
  "build-types/$type/scenarios/dtsim" --version
done
echo "build-types: Debug, Release and MinSizeRel configure and link"
