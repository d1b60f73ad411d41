#!/usr/bin/env bash
# The whole test suite RUNS times in a row while HOGS busy loops keep the cores loaded (issue
# #12's proof that no test depends on the machine's load). Prints one line per run (result,
# duration, load average) and the count of failed runs; keeps each failed run's log in
# out/suite-under-load/. Exits 1 if any run failed.
#   bench/suite_under_load.sh [RUNS] [HOGS]    (defaults 20 and 2; needs ./dev.sh build)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
hogs="${2:-2}"
logs=out/suite-under-load
mkdir -p "$logs"
hog_pids=()
for _ in $(seq "$hogs"); do
  (while :; do :; done) &
  hog_pids+=($!)
done
trap 'kill "${hog_pids[@]}" 2>/dev/null || true' EXIT
echo "$(date -u '+%F %H:%M') $(nproc) cores, $hogs CPU hogs, $runs runs of ctest -j $(nproc)"
failed=0
for run in $(seq "$runs"); do
  start=$SECONDS
  if ctest --test-dir build -j "$(nproc)" --output-on-failure >"$logs/run-$run.log" 2>&1; then
    result=pass
    rm "$logs/run-$run.log"
  else
    result="FAIL ($(grep -c 'Failed\|Timeout' "$logs/run-$run.log" || true) lines of failures, $logs/run-$run.log)"
    failed=$((failed + 1))
  fi
  echo "run $run: $result, $((SECONDS - start)) s, load average $(cut -d' ' -f1 /proc/loadavg)"
  # The end-to-end test's step-time errors (predicted vs measured under this load), from ctest's log.
  grep -E "^tiny_(ddp|tp)_2ranks: +step time" build/Testing/Temporary/LastTest.log | sed 's/  compute.*//; s/^/  /' || true
done
echo "$failed of $runs runs failed"
[ "$failed" -eq 0 ]
