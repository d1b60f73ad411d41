#!/usr/bin/env bash
# Every GPU check of dtsim in one command, cheapest first, on a machine with NVIDIA GPUs:
#
#   tests/gpu/run_gpu_checks.sh                                  # builds dtsim here first (./dev.sh build)
#   DTSIM_BUNDLE=device-bundle tests/gpu/run_gpu_checks.sh       # prebuilt: tests/gpu/make_device_bundle.sh
#
# Made for a GPU lent for minutes: it never stops before its results are saved, whatever fails.
# Each step has its own time limit (dtsim runs also --timeout 20, and NCCL_DEBUG=INFO to a file);
# with a bundle the limits add up to under 8 minutes, so the whole script ends in time even
# when every step hangs. Steps:
#   facts            ldd --version, /etc/os-release, nvidia-smi, Python, torch and NCCL wheels
#   libraries        ldd of every dtsim binary ("not found" lines), dtsim info (versions, library
#                    paths, GPUs); when the loader cannot start dtsim, the checks stop there
#   one-gpu          scenarios/real/small_1gpu.toml --backend nccl --verify, one rank
#   watchdog         tiny_ddp_2ranks with --inject-fault hang: exit 3 expected within the limit
#   two-rank-ddp/tp  tiny_ddp_2ranks and tiny_tp_2ranks --verify on two ranks — sharing the GPU
#                    (--share-gpu) on a one-GPU machine
#   calibrate        dtsim calibrate --backend nccl (every GPU) → profile.toml
#   simulate-*       small_1gpu simulated on the GPU's node preset, and with the profile
#   compare-*        each simulation against the one-gpu run
#   gtests           the GPU gtests but the calibration's (gtests.xml): real and simulated
#                    timelines hold the same ops in dependency order
# Results: everything (logs, NCCL logs, reports, timelines, profile, gtests.xml) in
# gpu-checks.tar.gz and the summary in summary.txt, both in $OUT when set (the device tool's
# output folder) or else in $DTSIM_CHECKS_OUT (default gpu-checks/), where the logs are written.
# The last thing printed is a table — step, exit code, seconds, result — so that the end of the
# console alone tells what happened. Exits 0 when every step passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
work="${DTSIM_CHECKS_OUT:-gpu-checks}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
results="${OUT:-$work}"
mkdir -p "$results"
summary="$work/summary.txt"
: >"$summary"
rows=()
failed=0
stopped=""  # why the remaining steps are skipped, once a step makes them pointless
bundle_problem=""

note() { echo "$*" | tee -a "$summary"; }
row() { rows+=("$(printf '%-22s %5s %7s  %s' "$1" "$2" "$3" "$4")"); }

# step NAME LIMIT_S EXPECTED_EXIT COMMAND...: runs COMMAND (a program, or a function of this
# script) under `timeout`, output in NAME.log.
step() {
  local name="$1" limit="$2" expected="$3"
  shift 3
  if [ -n "$stopped" ]; then
    row "$name" - - "skipped${skip_reason_shown:-: $stopped}"
    skip_reason_shown=" (as above)"
    failed=1
    return 1
  fi
  if [ "$(type -t "$1")" = function ]; then set -- bash -c "$(declare -f "$1"); $1 \"\$@\"" "$1" "${@:2}"; fi
  local start=$SECONDS code=0
  timeout --kill-after=3 "$limit" "$@" >"$work/$name.log" 2>&1 || code=$?
  local seconds=$((SECONDS - start)) verdict
  if [ "$code" -eq "$expected" ]; then
    verdict=pass
  elif [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
    verdict="FAIL: timed out after $limit s"
    failed=1
  else
    verdict="FAIL (expected exit $expected; see $name.log)"
    failed=1
  fi
  row "$name" "$code" "$seconds" "$verdict"
  note "$(printf '%-22s %s (exit %s, %s s)' "$name" "$verdict" "$code" "$seconds")"
  [ "$verdict" = pass ]
}

finish() {
  trap - EXIT
  {
    echo
    echo "dtsim GPU checks: $(date -u +%Y-%m-%dT%H:%MZ)"
    printf '%-22s %5s %7s  %s\n' step exit seconds result
    printf '%s\n' "${rows[@]}"
  } >"$work/table.txt"
  cat "$work/table.txt" >>"$summary"
  # A rank still writing its NCCL log makes tar exit 1 ("file changed as we read it"): kept.
  local packed=0
  tar -czf "$results/gpu-checks.tar.gz.partial" --warning=no-file-changed --exclude='gpu-checks.tar.gz*' \
    -C "$(dirname "$work")" "$(basename "$work")" 2>/dev/null || packed=$?
  if [ "$packed" -le 1 ]; then mv "$results/gpu-checks.tar.gz.partial" "$results/gpu-checks.tar.gz"; fi
  [ "$results" = "$work" ] || cp "$summary" "$results/summary.txt"
  echo "results: $results/gpu-checks.tar.gz, $results/summary.txt"
  cat "$work/table.txt"
  exit "$failed"
}
trap finish EXIT
trap 'stopped="interrupted"; failed=1; exit' INT TERM

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$work/nccl.%h.%p.log"
note "dtsim GPU checks, $(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD 2>/dev/null || echo 'no git')"

if [[ "${DTSIM_BUNDLE:-}" == *.tar.gz ]]; then  # make_device_bundle.sh FILE.tar.gz
  unpacked="$(mktemp -d)"
  tar -xzf "$DTSIM_BUNDLE" -C "$unpacked" || bundle_problem="the bundle $DTSIM_BUNDLE cannot be unpacked"
  DTSIM_BUNDLE="$unpacked"
fi
if [ -n "${DTSIM_BUNDLE:-}" ]; then
  # shellcheck source=/dev/null
  source "$DTSIM_BUNDLE/env.sh" || bundle_problem="${bundle_problem:-the bundle has no env.sh}"
  dtsim="${DTSIM_PATH:-$DTSIM_BUNDLE/bin/dtsim}"
  gpu_tests="$DTSIM_BUNDLE/bin/gpu_tests"
  binaries=("$DTSIM_BUNDLE/bin/dtsim" "$DTSIM_BUNDLE/bin/gpu_tests" "$DTSIM_BUNDLE/usr/bin/orterun")
  export DTSIM_SOURCE_DIR="$PWD"
  note "bundle: $DTSIM_BUNDLE; GPU libraries from: ${DTSIM_GPU_LIBRARIES:-none found}"
else
  build="${DTSIM_BUILD_DIR:-build}"
  if [ "${DTSIM_SKIP_BUILD:-0}" != 1 ]; then step build 1800 0 ./dev.sh build || stopped="the build failed"; fi
  dtsim="$build/scenarios/dtsim"
  gpu_tests="$build/tests/gpu_tests"
  binaries=("$dtsim" "$gpu_tests")
fi
mpirun="${DTSIM_MPIEXEC:-mpirun}"

machine_facts() {
  echo "== ldd --version"; ldd --version 2>&1 | head -1
  echo "== /etc/os-release"; grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release 2>&1
  echo "== nvidia-smi"; timeout 5 nvidia-smi 2>&1 | head -20
  timeout 3 nvidia-smi --query-gpu=name,compute_mode,memory.used --format=csv 2>&1  # Exclusive_Process refuses a 2nd rank
  echo "== python3, torch, NCCL wheel"
  timeout 8 python3 -c 'import sys; print("python", sys.version.split()[0])
try:
    import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))
except Exception as error: print("torch:", error)' 2>&1
  echo "== GPU library folders (env.sh)"; echo "${DTSIM_GPU_LIBRARIES:-none (not a bundle)}"
  echo "== LD_LIBRARY_PATH"; echo "${LD_LIBRARY_PATH:-}"
}
loader_check() {  # loader_check DTSIM BINARY...
  local dtsim="$1" missing=0
  shift
  for binary in "$@"; do
    echo "== ldd $binary"
    ldd "$binary" 2>&1 | grep -E 'not found|libnccl|libcuda|libmpi|libc\.so|version' || true
    if ldd "$binary" 2>&1 | grep -q 'not found'; then missing=1; fi
  done
  echo "== dtsim info"
  "$dtsim" info || return 1
  return "$missing"
}
step facts 20 0 machine_facts
sed 's/^/      /' "$work/facts.log" | tee -a "$summary"
if ! step libraries 20 0 loader_check "$dtsim" "${binaries[@]}"; then
  stopped="${bundle_problem:-the loader cannot start dtsim (libraries.log: missing libraries or glibc too old)}"
fi
sed 's/^/      /' "$work/libraries.log" | tail -25 | tee -a "$summary"

gpus=$(grep -ac '^GPU [0-9]' "$work/libraries.log" 2>/dev/null || true)
gpus=${gpus:-0}
if [ -z "$stopped" ] && [ "$gpus" -eq 0 ]; then
  stopped="dtsim sees no GPU: $(grep -a -m1 '^GPUs:' "$work/libraries.log" | sed 's/^GPUs: *//' || true)"
fi
gpu_name=$(grep -a -m1 '^GPU 0:' "$work/libraries.log" | sed 's/^GPU 0: //; s/,.*//')
case "$gpu_name" in
  *H200*) node=hgx-h200 ;;
  *A100*) node=dgx-a100 ;;
  *L40S*) node=pcie-l40s ;;
  *) node=hgx-h100 ;;
esac
share=()
if [ "$gpus" -lt 2 ]; then share=(--share-gpu); fi
[ -z "$stopped" ] && note "      $gpus GPU(s): $gpu_name; simulated on the node preset $node; two ranks: ${share[*]:-one GPU each}"

real=(--backend nccl --timeout 20 --runs 3)
scenario=scenarios/real/small_1gpu.toml
step one-gpu 45 0 "$mpirun" -np 1 "$dtsim" run "$scenario" --set cluster.node="$node" "${real[@]}" --verify -o "$work/one-gpu" &&
  grep -E "step time|verified" "$work/one-gpu.log" | sed 's/^/      /' | tee -a "$summary"
hang_reported() {  # hang_reported COMMAND...: exit 3 with the watchdog's report on an op, or the command's exit
  local output code
  output="$(mktemp)"
  "$@" 2>&1 | tee "$output"  # to the step's log as it comes: kept if the step's limit strikes
  code=${PIPESTATUS[0]}
  if [ "$code" -eq 3 ] && ! grep -q "op '.*' did not finish within 5 s" "$output"; then
    echo "exit 3 without the watchdog's report on an op"
    code=1
  fi
  rm -f "$output"
  return "$code"
}
step watchdog 40 3 hang_reported "$mpirun" --oversubscribe -np 2 "$dtsim" run scenarios/real/tiny_ddp_2ranks.toml \
  --backend nccl "${share[@]}" --timeout 5 --inject-fault hang:1:ddp.bucket0.all_reduce
for name in ddp tp; do
  step "two-rank-$name" 45 0 "$mpirun" --oversubscribe -np 2 "$dtsim" run "scenarios/real/tiny_${name}_2ranks.toml" \
    "${real[@]}" "${share[@]}" --verify -o "$work/two-rank-$name" &&
    grep -E "step time|verified" "$work/two-rank-$name.log" | sed 's/^/      /' | tee -a "$summary"
done
step calibrate 70 0 "$mpirun" --oversubscribe -np "$((gpus > 0 ? gpus : 1))" "$dtsim" calibrate --backend nccl \
  --timeout 20 -o "$work/profile.toml" && sed 's/^/      /' "$work/profile.toml" | tee -a "$summary"
step simulate-preset 20 0 "$dtsim" run "$scenario" --set cluster.node="$node" -o "$work/sim-preset"
sed "s|^\[scenario\]|[scenario]\nhardware_profile = \"profile.toml\"|" "$scenario" >"$work/small_1gpu_calibrated.toml"
step simulate-calibrated 20 0 "$dtsim" run "$work/small_1gpu_calibrated.toml" --set cluster.node="$node" -o "$work/sim-calibrated"
for predicted in preset calibrated; do
  step "compare-$predicted" 10 0 "$dtsim" compare "$work/sim-$predicted/timeline.json" "$work/one-gpu/timeline.json" &&
    head -25 "$work/compare-$predicted.log" | sed 's/^/      /' | tee -a "$summary"
done
# The calibration test repeats the calibrate step: left out for time.
step gtests 85 0 env DTSIM_GPU_NODE="$node" "$gpu_tests" --gtest_filter=-GpuCalibrationTest.* --gtest_output=xml:"$work/gtests.xml"
grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$work/gtests.log" 2>/dev/null | sed 's/^/      /' | tee -a "$summary"
