#!/usr/bin/env bash
# Runs each libFuzzer target of a DTSIM_FUZZ build for SECONDS (./dev.sh fuzz SECONDS calls it
# with the sanitizer environment set). Each target starts from its seeds and regression inputs
# (the folders tests/fuzz/fuzz_corpus_test.cpp runs) plus the corpus it grew before, kept in
# BUILD/fuzz-corpus/TARGET; a finding is written to BUILD/fuzz-findings/TARGET/ and fails the
# script, with what to do about it.
#   scripts/fuzz.sh BUILD_DIR SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS}"
seconds="${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS}"

declare -A seeds=(
  [scenario]="scenarios tests/scenarios/broken fuzz/seeds/scenario fuzz/regressions/scenario"
  [trace]="tests/data fuzz/seeds/trace fuzz/regressions/trace"
  [compare]="tests/data fuzz/seeds/trace fuzz/regressions/compare"
  [nccl_tests_log]="tests/validation/nccl_tests/logs fuzz/seeds/nccl_tests_log fuzz/regressions/nccl_tests_log"
)
failed=()
for target in scenario trace compare nccl_tests_log; do
  corpus="$build/fuzz-corpus/$target"
  findings="$build/fuzz-findings/$target"
  mkdir -p "$corpus" "$findings"
  echo "fuzz: $target for $seconds s (corpus $corpus)"
  # -timeout: one input taking longer is a finding (a hang); -rss_limit_mb: one using more
  # memory is too; -max_len: scenarios, traces and logs of up to 64 KiB.
  # shellcheck disable=SC2086  # the seed folders are words
  if ! "$build/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" ${seeds[$target]} 2>"$build/fuzz-$target.log"; then
    tail -n 40 "$build/fuzz-$target.log"
    failed+=("$target")
  fi
  echo "  $(grep -E "^stat::(number_of_executed_units|peak_rss_mb)|DONE" "$build/fuzz-$target.log" | tr -s ' \t\n' ' ' || true)"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]}: each file in $build/fuzz-findings/<target>/ is an input that broke dtsim." >&2
  echo "Reproduce with $build/fuzz/fuzz_<target> FILE, fix it, and add the file to fuzz/regressions/<target>/." >&2
  exit 1
fi
echo "fuzz: no findings"
