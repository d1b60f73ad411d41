#!/usr/bin/env bash
# Sim-vs-real step-time accuracy on CPU ranks (BENCHMARKS.md, "Simulated vs measured"): REPEATS
# times, a fresh `dtsim calibrate`, the scaled-down DDP and TP scenarios simulated with that
# profile, run for real (`--backend mpi`, the median of 5 runs) and compared. Prints the load
# average before each repeat (the figure is meaningful on an idle machine only: other tenants
# slow real runs by up to 2×), every repeat's errors, then per scenario the median step-time
# error and whether it meets TARGET.
#   bench/e2e_accuracy.sh [REPEATS] [TARGET_PERCENT]   (defaults 5 and 25; needs ./dev.sh build)
set -euo pipefail
repeats="${1:-5}"
target="${2:-25}"
source "$(dirname "$0")/real_runs_lib.sh"
scenarios=(tiny_ddp_2ranks tiny_tp_2ranks)
echo "$(date -u +%F) $(nproc) cores, $repeats repeats, target ±$target %"
for repeat in $(seq "$repeats"); do
  echo "repeat $repeat: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  mpirun --oversubscribe -np 2 "$dtsim" calibrate -o profile.toml >/dev/null
  for scenario in "${scenarios[@]}"; do
    with_profile "$scenario" profile.toml "$scenario.toml"
    "$dtsim" run "$scenario.toml" -o "sim-$scenario" >/dev/null
    mpirun --oversubscribe -np 2 "$dtsim" run "$scenario.toml" --backend mpi -o "real-$scenario" >/dev/null
    line="$(errors "sim-$scenario" "real-$scenario")"
    echo "  $scenario: $line"
    echo "$line" | sed 's/^step \([-+0-9.]*\) %.*/\1/' >>"steps-$scenario"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
for scenario in "${scenarios[@]}"; do
  sort -g "steps-$scenario" | python3 -c '
import statistics, sys
errors = [float(line) for line in sys.stdin]
median = statistics.median(errors)
verdict = "meets" if abs(median) <= float(sys.argv[2]) else "misses"
print("%s: step-time error median %+.1f %% (%+.1f … %+.1f %%), %s the ±%s %% target" % (
    sys.argv[1], median, errors[0], errors[-1], verdict, sys.argv[2]))' "$scenario" "$target"
done
