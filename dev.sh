#!/usr/bin/env bash
# dtsim's one entry point for people and CI:
#   ./dev.sh run    install what is missing, build, simulate scenarios/default.toml
#   ./dev.sh test   install what is missing, build, run every test
#   ./dev.sh view   install what is missing, build, open dtsim-view on scenarios/default.toml
#   ./dev.sh build  install what is missing and build only
# Builds go to build/ (Ninja, RelWithDebInfo, ccache when present).
set -euo pipefail
cd "$(dirname "$0")"

command="${1:-run}"
jobs="${DTSIM_JOBS:-$(nproc)}"

./scripts/install-deps.sh

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}"
fi
cmake --build build -j "$jobs"

case "$command" in
  run)
    ./build/scenarios/dtsim run scenarios/default.toml
    ;;
  test)
    ctest --test-dir build --output-on-failure -j "$jobs"
    ;;
  view)
    shift
    ./build/gui/dtsim-view --scenario scenarios/default.toml "$@"
    ;;
  build)
    ;;
  *)
    echo "usage: ./dev.sh [run|test|view|build]" >&2
    exit 2
    ;;
esac
