#!/usr/bin/env bash
# Runs each network speed benchmark in its own process, 3 repetitions, and prints the medians:
# wall time, events, events per second, peak resident memory. Build first (./dev.sh build).
set -euo pipefail
cd "$(dirname "$0")/.."
for benchmark in BM_FlowRingAllReduce1GiB1024Gpus BM_FlowDdpStepLlama70B1024Gpus BM_PacketAllReduce64MiB4096Gpus; do
  build/bench/network_bench --benchmark_filter="^${benchmark}/" --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_color=false 2>/dev/null | grep -E "_median"
done
