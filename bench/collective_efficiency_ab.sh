#!/usr/bin/env bash
# A/B of the calibrated collective efficiency on CPU ranks (BENCHMARKS.md, "Simulated vs
# measured"): one `dtsim calibrate`, then the scaled-down DDP and TP scenarios simulated with the
# profile as written (link efficiency = the measured all-reduce bus bandwidth / link bandwidth)
# and with that efficiency set to 1.0, each compared with the same real runs.
#   bench/collective_efficiency_ab.sh [RUNS]      (default 3; needs ./dev.sh build first)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dtsim="$root/build/scenarios/dtsim"
runs="${1:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe -np 2 "$dtsim" calibrate -o measured.toml >/dev/null
sed 's/^efficiency = 0.*/efficiency = 1.0/' measured.toml >one.toml
grep '^efficiency' measured.toml
errors() {  # errors PREDICTED_DIR MEASURED_DIR: "step X% comm Y%"
  "$dtsim" compare "$1/timeline.json" "$2/timeline.json" --json | python3 -c '
import json, sys
figures = {f["figure"]: f["error"] for f in json.load(sys.stdin)["figures"]}
print("step %+.1f %%  communication %+.1f %%" % (100 * figures["step time"], 100 * figures["communication"]))'
}
for scenario in tiny_ddp_2ranks tiny_tp_2ranks; do
  for profile in measured one; do
    sed "s|^\[scenario\]|[scenario]\nhardware_profile = \"$profile.toml\"|" "$root/scenarios/real/$scenario.toml" >"$scenario-$profile.toml"
    "$dtsim" run "$scenario-$profile.toml" -o "sim-$scenario-$profile" >/dev/null
  done
  for run in $(seq "$runs"); do
    mpirun --oversubscribe -np 2 "$dtsim" run "$root/scenarios/real/$scenario.toml" --backend mpi -o "real-$run" >/dev/null
    echo "$scenario run $run: efficiency measured: $(errors "sim-$scenario-measured" "real-$run");  1.0: $(errors "sim-$scenario-one" "real-$run")"
  done
done
