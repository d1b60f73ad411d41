#!/usr/bin/env bash
# Every GPU check of dtsim, in one command, on a machine with NVIDIA GPUs (and dtsim's build
# dependencies, CUDA Toolkit and NCCL under /usr/local/cuda):
#
#   tests/gpu/run_gpu_checks.sh            # results and a summary in gpu-checks/ (or $DTSIM_CHECKS_OUT)
#   DTSIM_BUNDLE=device-bundle tests/gpu/run_gpu_checks.sh   # prebuilt (make_device_bundle.sh)
#
#  1. builds dtsim (./dev.sh build; DTSIM_SKIP_BUILD=1 uses build/ as it is; with DTSIM_BUNDLE,
#     the bundle's binaries and libraries instead, on a machine that cannot build);
#  2. `dtsim info`: the GPUs, CUDA runtime and NCCL it sees;
#  3. the GPU tests (ctest -L gpu): the one-GPU ones, and the two-GPU ones where two are visible;
#  4. `dtsim calibrate --backend nccl` on every visible GPU → gpu-checks/profile.toml;
#  5. scenarios/real/small_1gpu.toml on one GPU: simulated on the GPU's node preset, simulated
#     with the calibrated profile, run for real, and the two comparisons;
#  6. a summary (gpu-checks/summary.txt) to record in BENCHMARKS.md with the date and device.
# Exits non-zero if any step failed; every step still runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${DTSIM_CHECKS_OUT:-gpu-checks}"
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
failed=0
note() { echo "$*" | tee -a "$summary"; }
step() {  # step NAME COMMAND...: runs it, logs to $out/NAME.log, notes pass/fail
  local name="$1"; shift
  if "$@" >"$out/$name.log" 2>&1; then note "PASS  $name"; else note "FAIL  $name (see $out/$name.log)"; failed=1; fi
}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
note "dtsim GPU checks, $(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD 2>/dev/null || echo 'no git')"
if [ -n "${DTSIM_BUNDLE:-}" ]; then
  # shellcheck source=/dev/null
  source "$DTSIM_BUNDLE/env.sh"
  dtsim="$DTSIM_PATH"
  gpu_tests=("$DTSIM_BUNDLE/bin/gpu_tests")
  export DTSIM_SOURCE_DIR="$PWD"
else
  if [ "${DTSIM_SKIP_BUILD:-0}" != 1 ]; then step build ./dev.sh build; fi
  dtsim=./build/scenarios/dtsim
  gpu_tests=(ctest --test-dir build -L gpu -V)
fi
mpirun="${DTSIM_MPIEXEC:-mpirun}"
if [ ! -x "$dtsim" ]; then note "FAIL  no dtsim at $dtsim"; exit 1; fi

"$dtsim" info | tee "$out/info.txt" | sed 's/^/      /' | tee -a "$summary"
gpus=$(grep -c '^GPU [0-9]' "$out/info.txt" || true)
if [ "$gpus" -eq 0 ]; then
  note "FAIL  dtsim sees no GPU (see above): nothing GPU-side can run here"
  exit 1
fi
gpu_name=$(grep -m1 '^GPU 0:' "$out/info.txt" | sed 's/^GPU 0: //; s/,.*//')
case "$gpu_name" in
  *H200*) node=hgx-h200 ;;
  *A100*) node=dgx-a100 ;;
  *L40S*) node=pcie-l40s ;;
  *) node=hgx-h100 ;;
esac
note "      $gpus GPU(s): $gpu_name; simulated on the node preset $node"

step gpu-tests env DTSIM_GPU_NODE="$node" "${gpu_tests[@]}"
grep -E "^(small_1gpu|tiny_)|Skipped|SKIPPED|tests passed|PASSED|FAILED" "$out/gpu-tests.log" | sed 's/^/      /' | tee -a "$summary"

step calibrate "$mpirun" --oversubscribe -np "$gpus" "$dtsim" calibrate --backend nccl -o "$out/profile.toml"
sed 's/^/      /' "$out/profile.toml" 2>/dev/null | tee -a "$summary"

scenario=scenarios/real/small_1gpu.toml
step simulate-preset "$dtsim" run "$scenario" --set cluster.node="$node" -o "$out/sim-preset"
sed "s|^\[scenario\]|[scenario]\nhardware_profile = \"profile.toml\"|" "$scenario" >"$out/small_1gpu_calibrated.toml"
step simulate-calibrated "$dtsim" run "$out/small_1gpu_calibrated.toml" --set cluster.node="$node" -o "$out/sim-calibrated"
step run-real "$mpirun" -np 1 "$dtsim" run "$scenario" --set cluster.node="$node" --backend nccl --verify -o "$out/real"
grep -E "step time|verified" "$out/run-real.log" | sed 's/^/      real: /' | tee -a "$summary"
for predicted in preset calibrated; do
  step "compare-$predicted" "$dtsim" compare "$out/sim-$predicted/timeline.json" "$out/real/timeline.json"
  sed 's/^/      /' "$out/compare-$predicted.log" | head -25 | tee -a "$summary"
done

note "summary: $summary"
exit "$failed"
