#!/usr/bin/env python3
"""dtsim's compute model against bench/gpu_components.py's measurements (BENCHMARKS.md, "The GPU
path on real GPUs"): each MPT block it timed, written as a one-GPU scenario on the H200 preset,
simulated by dtsim; then every GEMM (forward, data and weight gradient) matched to the measured
one, and the block's forward and forward + backward per layer against the measured ones.

  python3 bench/gpu_components_vs_model.py [RESULTS_DIR] [DTSIM]
    RESULTS_DIR  holds components.json (GEMMs) and layers.json (blocks)
                 (default bench/results/h200-2026-12-04)
    DTSIM        default build/scenarios/dtsim
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bench/results/h200-2026-12-04")
DTSIM = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build/scenarios/dtsim")
LAYERS = 4  # the simulated blocks; layer1's ops are read (a middle layer, as the benchmark's)
SCENARIO = """[scenario]
name = "{name}_layers_1gpu"

[cluster]
node = "hgx-h200"
nodes = 1
gpus_per_node = 1

[model]
name = "{name}, {layers} layers"
layers = {layers}
hidden = {hidden}
heads = {heads}
ffn_hidden = {ffn}
vocab = 50368
sequence = {sequence}
mlp = "gelu"
norm = "layernorm"
attention = "flash"
biases = {biases}
tied_embeddings = true
learned_positions = true
causal = true
dropout = false

[training]
global_batch = {micro}
micro_batch = {micro}
precision = "bf16"
optimizer = "adamw"

[parallel]
strategy = "ddp"
"""
# The benchmark's GEMM labels and dtsim's op names for the same linear layers.
LINEARS = {"qkv": "qkv", "proj": "attn_out", "fc1": "mlp_up", "fc2": "mlp_down"}


def simulated_layer(block, work):
    """Milliseconds of each of layer1's ops, simulated for the block `block` (a layers.json row)."""
    name = block["model"].replace(" ", "_")
    path = os.path.join(work, name + ".toml")
    with open(path, "w") as f:
        f.write(SCENARIO.format(name=name, layers=LAYERS, hidden=block["hidden"], heads=block["heads"],
                                ffn=4 * block["hidden"], sequence=block["sequence"], micro=block["micro_batch"],
                                biases=str(block["biases"]).lower()))
    out = os.path.join(work, name)
    subprocess.run([DTSIM, "run", path, "-o", out], check=True, capture_output=True)
    with open(os.path.join(out, "timeline.json")) as f:
        events = json.load(f)["traceEvents"]
    return {e["name"]: e["dur"] / 1e3 for e in events if e.get("ph") == "X" and e["name"].startswith("layer1.")}


def percent(predicted, measured):
    return 100 * (predicted / measured - 1)


def main():
    with open(os.path.join(RESULTS, "layers.json")) as f:
        blocks = json.load(f)["layer"]
    with open(os.path.join(RESULTS, "components.json")) as f:
        gemms = {row["label"]: row for row in json.load(f)["gemm"]}
    errors = []
    with tempfile.TemporaryDirectory() as work:
        print("block (micro-batch × sequence)        forward ms: measured  dtsim  error   fwd + bwd ms: measured  dtsim  error")
        for block in blocks:
            ops = simulated_layer(block, work)
            forward = sum(ms for op, ms in ops.items() if ".fwd." in op)
            both = sum(ops.values())
            print(f"{block['model']:24s} ({block['micro_batch']:2d} × {block['sequence']})"
                  f"   {block['fwd_ms_per_layer']:8.3f} {forward:7.3f} {percent(forward, block['fwd_ms_per_layer']):+6.1f} %"
                  f"        {block['fwd_bwd_ms_per_layer']:8.3f} {both:7.3f} {percent(both, block['fwd_bwd_ms_per_layer']):+6.1f} %")
            if not block["biases"]:
                continue
            for label, op in LINEARS.items():
                for kind, name in (("fwd", f"layer1.fwd.{op}"), ("dgrad", f"layer1.bwd.{op}.dgrad"),
                                   ("wgrad", f"layer1.bwd.{op}.wgrad")):
                    measured = gemms.get(f"{block['model']} {label} {kind}")
                    if measured:
                        errors.append((percent(ops[name], measured["ms"]), f"{block['model']} {label} {kind}", measured))
    print()
    for error, label, m in errors:
        print(f"GEMM {label:22s} M {m['m']:6d} N {m['n']:6d} K {m['k']:6d}  measured {m['ms']:.3f} ms  {error:+6.1f} %")
    values = [e for e, _, _ in errors]
    print(f"{len(values)} GEMMs: median error {statistics.median(values):+.1f} %, median |error| "
          f"{statistics.median(map(abs, values)):.1f} %, max |error| {max(map(abs, values)):.1f} %")


if __name__ == "__main__":
    main()
