#!/usr/bin/env python3
"""How much of a GEMM's memory traffic Hopper's kernels leave exposed (issue #13; the fit behind
topology::kHopperExposedGemmTraffic). dtsim prices a GEMM as

    t = max(main loop, traffic) + ε · min(main loop, traffic)

(sim/compute/compute_model.h), the main loop's rate derived from Bekman's sustained GEMM under
the same ε. This script re-prices every GEMM the H200 ran (bench/gpu_components.py's `gemm` and
`shapes` sections) for ε from 0 to 1 and prints the errors, so the choice can be re-made when
new measurements come. The main loop is a transcription of sim/compute/gemm_model.cpp (tiles,
waves, split-K) at the h200-sxm preset; before fitting, the script checks it against dtsim
itself on the 48 MPT GEMMs (bench/gpu_components_vs_model.py's scenarios), so the two cannot
drift apart unnoticed.

  python3 bench/gemm_traffic_fit.py [GEMM_RESULTS_DIR] [SHAPES_RESULTS_DIR] [DTSIM]
    defaults: bench/results/h200-2026-12-04 (components.json, layers.json),
              bench/results/h200-2026-12-04-shapes (gpu_components.json), build/scenarios/dtsim
"""
import json
import math
import os
import statistics
import sys
import tempfile

import gpu_components_vs_model as versus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEMMS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bench/results/h200-2026-12-04")
SHAPES = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "bench/results/h200-2026-12-04-shapes")
versus.DTSIM = sys.argv[3] if len(sys.argv) > 3 else versus.DTSIM

# The h200-sxm preset (topology/presets.cpp): SMs, bf16 peak, HBM bandwidth and BabelStream's
# streaming rate; Bekman's sustained GEMM; dtsim's 2 µs per kernel (compute_model.cpp).
SMS, PEAK, BANDWIDTH, STREAMING = 132, 989.4e12, 4.8e12, 4.15 / 4.8
BEKMAN = (8192, 8448, 20480, 708.5e12)
OVERHEAD_S = 2e-6
TILES = ((256, 128), (128, 256), (128, 128))  # gemm_model.cpp's kTiles
MIN_SPLIT_DEPTH, MAX_SPLIT, PARTIAL_BYTES = 256, 16, 4


def main_loop(batch, m, n, k, ceiling):
    """gemm_model.cpp's GemmModel::plan: the fastest tile and split-K, whole tiles in whole waves."""
    best = math.inf
    for tile_m, tile_n in TILES:
        tiles = batch * math.ceil(m / tile_m) * math.ceil(n / tile_n)
        max_split = int(min(max(min(math.floor(SMS / tiles), math.floor(k / MIN_SPLIT_DEPTH)), 1), MAX_SPLIT))
        for split in range(1, max_split + 1):
            waves = math.ceil(tiles * split / SMS)
            seconds = waves * 2 * tile_m * tile_n * math.ceil(k / split) / (PEAK * ceiling / SMS)
            if split > 1:
                seconds += 2 * split * batch * m * n * PARTIAL_BYTES / BANDWIDTH
            best = min(best, seconds)
    return best


def traffic(batch, m, n, k):
    return batch * (m * k + k * n + m * n) * 2 / (BANDWIDTH * STREAMING)  # bf16 A, B read and C written


def ceiling_for(exposed):
    """compute_model.cpp's main_loop_ceiling: Bekman's GEMM less its own exposed traffic."""
    m, n, k, rate = BEKMAN
    measured = 2 * m * n * k / rate
    return min(1.0, main_loop(1, m, n, k, 1.0) / (measured - exposed * traffic(1, m, n, k)))


def priced_ms(batch, m, n, k, exposed, ceiling):
    loop, moved = main_loop(batch, m, n, k, ceiling), traffic(batch, m, n, k)
    return (max(loop, moved) + exposed * min(loop, moved) + OVERHEAD_S) * 1e3


def check_against_dtsim(gemms, exposed):
    """The transcription against dtsim's own prices of the MPT GEMMs, at the preset's ε."""
    with open(os.path.join(GEMMS, "layers.json")) as f:
        blocks = [b for b in json.load(f)["layer"] if b["biases"]]
    worst = 0.0
    with tempfile.TemporaryDirectory() as work:
        for block in blocks:
            ops = versus.simulated_layer(block, work)
            for label, op in versus.LINEARS.items():
                for kind, name in (("fwd", f"layer1.fwd.{op}"), ("dgrad", f"layer1.bwd.{op}.dgrad"),
                                   ("wgrad", f"layer1.bwd.{op}.wgrad")):
                    row = gemms[f"{block['model']} {label} {kind}"]
                    mine = priced_ms(1, row["m"], row["n"], row["k"], exposed, ceiling_for(exposed))
                    worst = max(worst, abs(mine / ops[name] - 1))
    return worst


def main():
    with open(os.path.join(GEMMS, "components.json")) as f:
        gemm_rows = json.load(f)["gemm"]
    with open(os.path.join(SHAPES, "gpu_components.json")) as f:
        shape_rows = json.load(f)["shapes"]
    preset = 0.10  # topology::kHopperExposedGemmTraffic
    worst = check_against_dtsim({row["label"]: row for row in gemm_rows}, preset)
    print(f"transcription vs dtsim on the 48 MPT GEMMs at ε = {preset}: largest difference {100 * worst:.3f} %")
    if worst > 0.005:
        sys.exit("the transcription no longer matches dtsim's GEMM model: update it before fitting")

    rows = [(1, r["m"], r["n"], r["k"], r["ms"], r["label"]) for r in gemm_rows]
    rows += [(r["batch"], r["m"], r["n"], r["k"], r["ms"], r["label"]) for r in shape_rows]
    rows = [r for r in rows if r[4] >= 0.1]  # shorter ones sit on a 40–50 µs floor (BENCHMARKS.md)
    groups = {"all": lambda label: True, "MPT": lambda label: label.startswith("mpt"),
              "attention": lambda label: label.startswith("attn"),
              "sweeps": lambda label: "sweep" in label or label.startswith(("square", "stas"))}
    print(f"{len(rows)} GEMMs of 0.1 ms or more; error = predicted / measured − 1")
    print("   ε   ceiling   " + "   ".join(f"{name}: median |e|, RMS log, mean" for name in groups))
    for exposed in (0, 0.05, 0.10, 0.15, 0.20, 0.30, 0.50, 1.0):
        ceiling = ceiling_for(exposed)
        cells = []
        for selected in groups.values():
            logs = [math.log(priced_ms(b, m, n, k, exposed, ceiling) / ms) for b, m, n, k, ms, label in rows
                    if selected(label)]
            errors = [math.exp(x) - 1 for x in logs]
            cells.append(f"{100 * statistics.median(map(abs, errors)):5.1f} % {math.sqrt(statistics.mean(x * x for x in logs)):.3f}"
                         f" {100 * statistics.mean(errors):+5.1f} %")
        print(f"{exposed:5.2f}  {ceiling:.3f}   " + "   ".join(cells))


if __name__ == "__main__":
    main()
