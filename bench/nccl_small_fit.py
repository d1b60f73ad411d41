#!/usr/bin/env python3
"""The fit behind sim/net/nccl_model.cpp's kLLChannelBandwidth (issue #13): what each of the few
channels NCCL's runtime gives a small ring/LL all-reduce moves per second.

nccl-tests' 8 × H100 all-reduce (NVIDIA/dgxc-benchmarking nccl/README.md, NCCL defaults) stays
at 18.7–19.7 µs from 32 KiB to 512 KiB: NCCL adds a channel per 32 KiB (512 threads × 8 bytes ×
8 ranks, src/enqueue.cc topoGetAlgoInfo), so the time each channel needs, not the links', is
what grows past the latency. dtsim prices the bandwidth term as the larger of the links' and
(2·7/8 · bytes) / (channels · r). This script asks `dtsim collective` for its curve with the
preset r, takes the channels' term back out and refits r by the smallest RMS log error over
4 KiB – 512 KiB.

  python3 bench/nccl_small_fit.py [DTSIM]
"""
import math
import os
import sys

from dtsim_collective import ROOT, h100_all_reduce_curve

DTSIM = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/scenarios/dtsim")
# In-place times (µs) of the dgxc sample, as docs/research/nccl_tests_curves.md copies them.
DGXC = {4096: 16.46, 8192: 16.83, 16384: 17.24, 32768: 18.68, 65536: 18.85, 131072: 19.19, 262144: 19.50,
        524288: 19.70}
PRESET = 13.7e9        # kLLChannelBandwidth
RANKS = 8
LINK_LL = 365e9 / 2    # NVLink 4 at its nccl-tests efficiency, halved by LL's flags (nccl_model.cpp)


def channels(size):
    return max(1, size // (512 * 8 * RANKS))


def main():
    curve = h100_all_reduce_curve(DTSIM, "4K:512K", "ring/LL")
    ring = {size: 2 * (RANKS - 1) / RANKS * size for size in curve}
    # dtsim's latency: its time less the larger of the two bandwidth terms at the preset.
    latency = {size: us - 1e6 * max(ring[size] / LINK_LL, ring[size] / (channels(size) * PRESET)) for size, us in curve.items()}

    def predicted(size, rate):
        return latency[size] + 1e6 * max(ring[size] / LINK_LL, ring[size] / (channels(size) * rate) if rate else 0)

    def rms(rate):
        logs = [math.log(predicted(size, rate) / DGXC[size]) for size in curve]
        return math.sqrt(sum(v * v for v in logs) / len(logs))

    best = min((r / 10 * 1e9 for r in range(20, 400)), key=rms)
    print(f"r = {best / 1e9:.1f} GB/s fits best (RMS log error {rms(best):.3f}; without the channels' term "
          f"{rms(0):.3f}); dtsim's preset: {PRESET / 1e9:.1f} GB/s")
    for size in sorted(curve):
        print(f"{size:8d} B  {channels(size):3d} channels  measured {DGXC[size]:6.2f} µs  dtsim {curve[size]:6.2f} "
              f"({100 * (curve[size] / DGXC[size] - 1):+5.1f} %)  without {predicted(size, 0):6.2f} "
              f"({100 * (predicted(size, 0) / DGXC[size] - 1):+5.1f} %)")


if __name__ == "__main__":
    main()
