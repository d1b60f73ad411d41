"""`dtsim collective`'s all-reduce curve on one 8 × H100 node (tests/validation/nccl_tests), for
the fits of NCCL's runtime constants (bench/nvls_chunk_fit.py, bench/nccl_small_fit.py)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def h100_all_reduce_curve(dtsim, sizes, algorithm):
    """{bytes: µs} for `sizes` ("MIN:MAX"), exiting if dtsim ran anything but `algorithm`."""
    out = subprocess.run([dtsim, "collective", "--scenario", os.path.join(ROOT, "tests/validation/nccl_tests/hgx_h100_1node.toml"),
                          "--ranks", "8", "--sizes", sizes], check=True, capture_output=True, text=True).stdout
    curve = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 7 and fields[0].isdigit():
            if fields[4] != algorithm:
                sys.exit(f"dtsim ran {fields[4]} at {fields[0]} B: the fit assumes {algorithm}")
            curve[int(fields[0])] = float(fields[5])
    return curve
