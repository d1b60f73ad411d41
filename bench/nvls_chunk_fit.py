#!/usr/bin/env python3
"""The fit behind sim/net/nccl_model.cpp's kNvlsChunkOverheadBytes (issue #13): how much each of
NCCL's NVLS chunks costs beyond its bytes, from nccl-tests' all-reduce curves on 8 × H100.

dtsim prices NVLS's bandwidth term times (1 + x / chunk) / (1 + x / 128 KiB), the chunk being
what NCCL's calcCollChunking picks at that size (nccl::nvls_chunk_bytes). This script asks
`dtsim collective` for its 8 × H100 curve, takes the chunk factor back out (its chunk rule and
preset x transcribed below: update them with nccl_model.cpp's), and refits x against the
dgxc-benchmarking curve by the smallest RMS log error; Together's curve, from another cluster,
is the check. The measurements are copied from docs/research/nccl_tests_curves.md (in-place
times, µs).

  python3 bench/nvls_chunk_fit.py [DTSIM]
"""
import math
import os
import sys

from dtsim_collective import ROOT, h100_all_reduce_curve

DTSIM = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/scenarios/dtsim")
KIB, MIB = 1024, 1024 * 1024
# NVIDIA/dgxc-benchmarking nccl/README.md, 8 × H100 80GB HBM3, NCCL defaults (NVLS from 2 MiB).
DGXC = {2 * MIB: 42.09, 4 * MIB: 53.82, 8 * MIB: 82.03, 16 * MIB: 123.00, 32 * MIB: 198.90, 64 * MIB: 324.70,
        128 * MIB: 586.00, 256 * MIB: 1113.40, 512 * MIB: 2149.30, 1024 * MIB: 4016.40, 2048 * MIB: 7938.00,
        4096 * MIB: 15754.00, 8192 * MIB: 31328.00, 16384 * MIB: 62636.00}
# togethercomputer/together-nccl-tests benchmarks/H100/results/20260306_001221_slurm/all_reduce_nvls.out.
TOGETHER = {2 * MIB: 43.52, 4 * MIB: 55.51, 8 * MIB: 84.29, 16 * MIB: 125.42, 32 * MIB: 200.15, 64 * MIB: 327.27,
            128 * MIB: 587.34, 256 * MIB: 1113.48, 512 * MIB: 2151.19, 1024 * MIB: 4023.96, 2048 * MIB: 7952.69,
            4096 * MIB: 15771.4, 8192 * MIB: 31358.5}
PRESET_X = 26 * KIB     # kNvlsChunkOverheadBytes
LATENCY_US = 25.0       # NVLS's latency in dtsim (nccl_model.cpp kNvlsLatency)
CONCURRENT = 16 * 8     # NVLS channels on Hopper × a head per GPU


def chunk(size):
    """nccl::nvls_chunk_bytes for 8 Hopper GPUs."""
    c = 128 * KIB
    if size < 64 * CONCURRENT * c:
        c = 64 * KIB
    if size < 8 * CONCURRENT * c:
        c = 32 * KIB
    if size < 2 * CONCURRENT * c:
        c = 16 * KIB
    return c


def factor(size, x):
    return (1 + x / chunk(size)) / (1 + x / (128 * KIB))


def main():
    curve = h100_all_reduce_curve(DTSIM, "2M:16G", "nvls/Simple")
    # The bandwidth term without the chunks' cost: dtsim's time less its latency, over its factor.
    bare = {size: (us - LATENCY_US) / factor(size, PRESET_X) for size, us in curve.items()}

    def predicted(size, x):
        return LATENCY_US + bare[size] * factor(size, x)

    def rms(measured, x):
        logs = [math.log(predicted(size, x) / us) for size, us in measured.items() if size in bare]
        return math.sqrt(sum(v * v for v in logs) / len(logs))

    best = min(range(0, 129), key=lambda k: rms(DGXC, k * KIB))
    print(f"x = {best} KiB fits dgxc best (RMS log error {rms(DGXC, best * KIB):.3f}; "
          f"x = 0: {rms(DGXC, 0):.3f}); dtsim's preset: {PRESET_X // KIB} KiB")
    print(f"Together's curve at the preset: RMS log error {rms(TOGETHER, PRESET_X):.3f} (x = 0: {rms(TOGETHER, 0):.3f})")
    print("     size  chunk   dgxc µs  x = 0   preset  | Together µs  preset")
    for size in sorted(bare):
        row = f"{size // MIB:6d} MiB {chunk(size) // KIB:4d}K {DGXC[size]:9.1f} {100 * (predicted(size, 0) / DGXC[size] - 1):+6.1f} % " \
              f"{100 * (predicted(size, PRESET_X) / DGXC[size] - 1):+6.1f} %"
        if size in TOGETHER:
            row += f" | {TOGETHER[size]:9.1f} {100 * (predicted(size, PRESET_X) / TOGETHER[size] - 1):+6.1f} %"
        print(row)


if __name__ == "__main__":
    main()
