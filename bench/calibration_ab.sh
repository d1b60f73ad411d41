#!/usr/bin/env bash
# A/B of one calibrated figure on CPU ranks (BENCHMARKS.md, "Simulated vs measured"): one
# `dtsim calibrate`, then the scaled-down DDP and TP scenarios simulated with the profile as
# written (A) and with that figure taken out (B), each compared with the same real runs.
#   bench/calibration_ab.sh MODE [RUNS]     (RUNS default 3; needs ./dev.sh build first)
# MODE: collective-efficiency  B sets the link efficiency (all-reduce bus bandwidth / link
#                              bandwidth) to 1.0;
#       memory-by-size         B prices every size at the largest pass's rate (one DRAM rate).
set -euo pipefail
mode="${1:?usage: bench/calibration_ab.sh collective-efficiency|memory-by-size [RUNS]}"
runs="${2:-3}"
source "$(dirname "$0")/real_runs_lib.sh"
mpirun --oversubscribe -np 2 "$dtsim" calibrate -o measured.toml >/dev/null
case "$mode" in
  collective-efficiency) sed 's/^efficiency = 0.*/efficiency = 1.0/' measured.toml >without.toml ;;
  memory-by-size)
    largest="$(grep '^memory_efficiency_by_size' measured.toml | grep -o '[0-9.]*\]\]$' | tr -d ']')"
    sed "s/^memory_efficiency_by_size = .*/memory_efficiency = $largest/" measured.toml >without.toml ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
diff measured.toml without.toml || true
for scenario in tiny_ddp_2ranks tiny_tp_2ranks; do
  for profile in measured without; do
    with_profile "$scenario" "$profile.toml" "$scenario-$profile.toml"
    "$dtsim" run "$scenario-$profile.toml" -o "sim-$scenario-$profile" >/dev/null
  done
  for run in $(seq "$runs"); do
    mpirun --oversubscribe -np 2 "$dtsim" run "$root/scenarios/real/$scenario.toml" --backend mpi -o "real-$run" >/dev/null
    echo "$scenario run $run: A $(errors "sim-$scenario-measured" "real-$run")"
    echo "$scenario run $run: B $(errors "sim-$scenario-without" "real-$run")"
  done
done
