# Shared by the benchmark scripts that compare simulated and measured CPU runs (sourced, not
# run, after their arguments are read): sets $root (the repository) and $dtsim (build/'s
# binary), and moves into a temporary folder removed on exit.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dtsim="$root/build/scenarios/dtsim"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

# with_profile SCENARIO PROFILE OUT: writes OUT, scenarios/real/SCENARIO.toml priced with PROFILE
# (a path relative to OUT's folder).
with_profile() {
  sed "s|^\[scenario\]|[scenario]\nhardware_profile = \"$2\"|" "$root/scenarios/real/$1.toml" >"$3"
}

# errors PREDICTED_DIR MEASURED_DIR: one line, the step, compute and communication errors and
# the per-op MAPE (error = (predicted − measured) / measured).
errors() {
  "$dtsim" compare "$1/timeline.json" "$2/timeline.json" --json | python3 -c '
import json, sys
comparison = json.load(sys.stdin)
figures = {f["figure"]: f["error"] for f in comparison["figures"]}
print("step %+.1f %%, compute %+.1f %%, communication %+.1f %%, per-op MAPE %.1f %%" % (
    100 * figures["step time"], 100 * figures["compute"], 100 * figures["communication"],
    100 * comparison["ops"]["mape"]))'
}
