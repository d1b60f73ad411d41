#!/usr/bin/env bash
# Zero Bubble's Table 4 (Qi et al., ICLR 2024) against dtsim: samples per GPU per second of
# Megatron-LM's 1F1B and interleaved 1F1B on the explored scenarios
# (tests/validation/explored/zero_bubble_*.toml), and the interleaving gain (1F1B's step time over
# the interleaved one's). Extra arguments go to the interleaved runs only, e.g.
#   bench/zero_bubble_gains.sh build/scenarios/dtsim --set parallel.pipeline_p2p_blocking=false
# (Megatron at the paper's commit overlaps the interleaved schedule's transfers by default).
set -euo pipefail
cd "$(dirname "$0")/.."
dtsim="$1"
shift
interleaved_extra=("$@")
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
step_time() {
  "$dtsim" run "$1" -o "$out" --no-timeline --json "${@:2}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["step_time_s"])'
}
echo "model  micro-batches  1F1B  interleaved  gain   (samples per GPU per second)"
# model, virtual stages, micro-batch size, GPUs, micro-batch counts (the paper's)
for row in "1.5b 3 6 8 24 32 64" "6.2b 4 3 8 24 32 64" "14.6b 3 1 16 48 64 128"; do
  read -r model chunks micro gpus counts <<<"$row"
  for count in $counts; do
    scenario="tests/validation/explored/zero_bubble_${model}.toml"
    batch=$((count * micro))
    one_f_one_b=$(step_time "$scenario" --set "training.global_batch=$batch")
    interleaved=$(step_time "$scenario" --set "training.global_batch=$batch" \
      --set parallel.pipeline_schedule=interleaved-1f1b --set "parallel.virtual_stages=$chunks" \
      "${interleaved_extra[@]}")
    python3 -c "s = $batch / $gpus; a, b = $one_f_one_b, $interleaved
print(f'{\"$model\":6} {$count:>13}  {s / a:5.2f}  {s / b:11.2f}  {a / b:5.3f}')"
  done
done
