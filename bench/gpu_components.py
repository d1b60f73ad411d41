#!/usr/bin/env python3
"""Component measurements on one NVIDIA GPU, for the compute model's constants (issue #13).

Measures, through PyTorch on random data, each figure the compute model prices an op from:
  gemm        bf16 GEMM TFLOP/s by (M, N, K): the forward, data-gradient and weight-gradient GEMMs
              of the MPT layers in tests/validation/llm_foundry (PyTorch's nn.Linear layouts), and
              squares 1024…16384; each after a power soak, so the rate is the one a training step
              sustains (topology/presets.cpp, "a rate the GPU sustains");
  attention   torch's FlashAttention-2 backend (scaled_dot_product_attention), forward + backward,
              TFLOP/s by sequence, causal and not, at FlashAttention's README benchmark setup
              (hidden 2048, 16k tokens, head dim 128) and at each MPT layer's shape;
  memory      achieved bandwidth by size of copy, add, GELU forward, LayerNorm forward and
              backward (rows of 5120), softmax (rows of 2048);
  launch      an eager PyTorch op's wall time (host and launch path) and a kernel's time in a
              replayed CUDA graph (the device-side floor), for 1-element ops;
  optimizer   torch.optim.AdamW fused, foreach and for-loop over 1.0e9 fp32 parameters: time and
              the bandwidth implied by strategies/training_step.cpp's bytes per parameter;
  layer       an MPT block (LayerNorm, QKV, causal SDPA, projection, LayerNorm, 4× MLP with GELU;
              bf16, biases) forward + backward, ms per layer, and torch.profiler's kernel table;
  fp8         FP8 e4m3 GEMM TFLOP/s (torch._scaled_mm, bf16 output) on squares and Bekman's shape;
  rows        softmax by row length, LayerNorm and RMSNorm by width, GELU (exact, tanh), SiLU,
              dropout: forward and backward rates over 1 GiB;
  baseline    FlashAttention's "PyTorch" attention baseline as its benchmark writes it, fp16,
              profiled (the code behind the README bars tests/validation cites);
  gaps        the GPU's idle time between back-to-back kernels, queued eagerly and from a CUDA
              graph (element-wise adds of 1–64 MiB tensors);
  shapes      how a GEMM's memory traffic and main loop combine: bf16 GEMMs sweeping K (M = N =
              8192) and N (M = 16384, K = 8192), and the batched GEMMs of unfused attention
              (Q·Kᵀ, P·V and their gradients' GEMMs, head dimension 64 and 128), after a soak; and
              unfused attention forward + backward as FlashAttention's benchmark runs its
              "PyTorch" baseline (baddbmm, softmax, bmm), not causal; with each GEMM's cuBLAS
              kernel name (its tile and pipeline stages).
Every figure is a median of CUDA-event timings. Results go to $OUT (or the current folder):
gpu_components.json, and gpu_components.txt with the profiler tables. Usage:
  python3 bench/gpu_components.py [--quick] [--only=gemm,layer,...]
"""
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

OUT = os.environ.get("OUT", ".")
QUICK = "--quick" in sys.argv
results = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
log_lines = []


def log(line=""):
    print(line, flush=True)
    log_lines.append(line)


def save():
    with open(os.path.join(OUT, "gpu_components.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(OUT, "gpu_components.txt"), "w") as f:
        f.write("\n".join(log_lines) + "\n")


def median_ms(fn, min_seconds=0.2, max_reps=200):
    """Median milliseconds of fn() by CUDA events, after two warm-up calls."""
    fn()
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    once = max(start.elapsed_time(end), 1e-3)
    reps = int(max(5, min(max_reps, min_seconds * 1e3 / once)))
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for s, e in events:
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


def gpu_state():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu",
                               "--format=csv,noheader"], capture_output=True, text=True, timeout=5).stdout.strip()
    except Exception as error:  # nvidia-smi missing or slow: the figure is then absent
        return str(error)


def soak(seconds):
    """Runs large GEMMs for `seconds` so that clocks and power settle at what a training step sees."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    deadline = time.time() + seconds
    while time.time() < deadline:
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()


# The MPT layers of tests/validation/llm_foundry's H100 rows: (name, hidden, heads, micro-batch).
MPT = [("mpt-1b", 2048, 16, 14), ("mpt-7b", 4096, 32, 6), ("mpt-13b", 5120, 40, 2), ("mpt-30b", 7168, 56, 3)]
SEQUENCE = 2048


def gpu_kernels(profile):
    """The GPU kernels a torch.profiler run saw: name, calls and µs on the device."""
    return [{"name": e.key, "calls": e.count, "us": getattr(e, "device_time_total", 0)}
            for e in profile.key_averages() if getattr(e, "device_time_total", 0) > 0]


def section(name, body):
    log(f"== {name}  ({gpu_state()})")
    start = time.time()
    try:
        body()
    except Exception:
        log(traceback.format_exc())
        results.setdefault("errors", []).append(name)
    log(f"   {name}: {time.time() - start:.1f} s")
    save()


def facts():
    p = torch.cuda.get_device_properties(0)
    results["device"] = {"name": p.name, "sms": p.multi_processor_count, "memory_gib": p.total_memory / 2**30,
                         "l2_bytes": getattr(p, "L2_cache_size", None), "torch": torch.__version__,
                         "cuda": torch.version.cuda, "cublas": torch.backends.cuda.preferred_blas_library().name
                         if hasattr(torch.backends.cuda, "preferred_blas_library") else None}
    log(json.dumps(results["device"]))


def gemm():
    rows = []
    soak(3 if QUICK else 8)

    def measure(label, m, n, k, a_shape, b_shape, op):
        a = torch.randn(*a_shape, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(*b_shape, device="cuda", dtype=torch.bfloat16)
        ms = median_ms(lambda: op(a, b))
        tflops = 2 * m * n * k / (ms * 1e-3) / 1e12
        rows.append({"label": label, "m": m, "n": n, "k": k, "ms": ms, "tflops": tflops})
        log(f"   {label:28s} M {m:6d} N {n:6d} K {k:6d}  {ms:8.3f} ms  {tflops:6.1f} TFLOP/s")

    for name, hidden, _, micro in MPT:
        tokens = micro * SEQUENCE
        for layer, n_out, k_in in (("qkv", 3 * hidden, hidden), ("proj", hidden, hidden),
                                   ("fc1", 4 * hidden, hidden), ("fc2", hidden, 4 * hidden)):
            # nn.Linear: forward y = x·Wᵀ; data gradient dx = dy·W; weight gradient dW = dyᵀ·x.
            measure(f"{name} {layer} fwd", tokens, n_out, k_in, (tokens, k_in), (n_out, k_in), lambda x, w: F.linear(x, w))
            measure(f"{name} {layer} dgrad", tokens, k_in, n_out, (tokens, n_out), (n_out, k_in), lambda dy, w: dy @ w)
            measure(f"{name} {layer} wgrad", n_out, k_in, tokens, (tokens, n_out), (tokens, k_in), lambda dy, x: dy.t() @ x)
    for size in (1024, 2048, 4096, 8192, 16384):
        measure(f"square {size}", size, size, size, (size, size), (size, size), lambda a, b: a @ b)
    measure("stas 8192x8448x20480", 8192, 8448, 20480, (8192, 20480), (20480, 8448), lambda a, b: a @ b)
    results["gemm"] = rows


def fp8_gemm():
    """FP8 (e4m3) GEMMs through torch._scaled_mm, bf16 output, per-tensor scales, as Transformer
    Engine's FP8 linear layers run them: squares and Bekman's FP8 shape (topology/presets.cpp)."""
    rows = []
    soak(3 if QUICK else 6)
    one = torch.ones((), device="cuda", dtype=torch.float32)
    for m, n, k in ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384),
                    (8448, 8192, 16384), (16384, 15360, 5120), (16384, 5120, 20480)):
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm needs
        op = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        ms = median_ms(op)
        tflops = 2 * m * n * k / (ms * 1e-3) / 1e12
        kernel = kernel_name(op)
        rows.append({"m": m, "n": n, "k": k, "ms": ms, "tflops": tflops, "kernel": kernel})
        log(f"   fp8 M {m:6d} N {n:6d} K {k:6d}  {ms:8.4f} ms  {tflops:7.1f} TFLOP/s  {kernel}")
    results["fp8_gemm"] = rows


def rows():
    """Memory-bound kernels by row length and variant, 1 GiB of bf16 input each, forward and
    backward (autograd): softmax over rows of 256 … 16384, LayerNorm and RMSNorm over widths
    1024 … 16384, GELU exact and tanh, SiLU, dropout (p = 0.1) — the rates dtsim prices norms,
    softmax and activations at, measured where it has one point or none."""
    found = []
    elements = 2**29  # 1 GiB of bf16

    def measure(label, width, make_input, op):
        x = make_input()
        y = op(x)
        grad = torch.randn_like(y)
        fwd_ms = median_ms(lambda: op(x))
        bwd_ms = median_ms(lambda: torch.autograd.grad(y, x, grad, retain_graph=True))
        moved = 2 * x.numel()  # bytes of one bf16 tensor
        found.append({"label": label, "width": width, "fwd_ms": fwd_ms, "bwd_ms": bwd_ms,
                      "fwd_tb_per_s": 2 * moved / fwd_ms / 1e9, "bwd_tb_per_s": 3 * moved / bwd_ms / 1e9})
        log(f"   {label:14s} width {width:6d}  fwd {fwd_ms:7.3f} ms {2 * moved / fwd_ms / 1e9:5.2f} TB/s (in + out)"
            f"   bwd {bwd_ms:7.3f} ms {3 * moved / bwd_ms / 1e9:5.2f} TB/s (x, dy, dx)")
        del x, y, grad

    def tensor(width):
        return lambda: torch.randn(elements // width, width, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    for width in (256, 512, 1024, 2048, 4096, 8192, 16384):
        measure("softmax", width, tensor(width), lambda x: torch.softmax(x, dim=-1))
    for width in (1024, 2048, 4096, 8192, 16384):
        norm = torch.nn.LayerNorm(width, device="cuda", dtype=torch.bfloat16)
        measure("layernorm", width, tensor(width), norm)
        if hasattr(torch.nn, "RMSNorm"):
            rms = torch.nn.RMSNorm(width, device="cuda", dtype=torch.bfloat16)
            measure("rmsnorm", width, tensor(width), rms)
    for label, op in (("gelu exact", lambda x: F.gelu(x)), ("gelu tanh", lambda x: F.gelu(x, approximate="tanh")),
                      ("silu", F.silu), ("dropout 0.1", lambda x: F.dropout(x, 0.1, training=True))):
        measure(label, 8192, tensor(8192), op)
    results["rows"] = found


def attention_baseline():
    """FlashAttention's "PyTorch" baseline exactly as benchmarks/benchmark_flash_attention.py
    writes it (attention_pytorch: packed qkv, baddbmm into fp16 scores, softmax, dropout p = 0,
    einsum with V), fp16, not causal, 16k tokens, forward + backward — the code behind the
    README's 2023 A100 and H100 bars that tests/validation uses — with torch.profiler's table."""
    found = []
    for dim, heads in ((64, 32), (128, 16)):
        batch, seq = 8, 2048
        qkv = torch.randn(batch, seq, 3, heads, dim, device="cuda", dtype=torch.float16, requires_grad=True)

        def forward():
            q, k, v = qkv.unbind(dim=2)
            q = q.permute(0, 2, 1, 3).reshape(batch * heads, seq, dim)       # 'b t h d -> (b h) t d'
            k = k.permute(0, 2, 3, 1).reshape(batch * heads, dim, seq)       # 'b s h d -> (b h) d s'
            scores = torch.empty(batch * heads, seq, seq, dtype=qkv.dtype, device="cuda")
            scores = torch.baddbmm(scores, q, k, beta=0, alpha=1.0 / math.sqrt(dim)).view(batch, heads, seq, seq)
            attention = F.dropout(torch.softmax(scores, dim=-1), 0.0)
            return torch.einsum("bhts,bshd->bthd", attention, v).to(qkv.dtype)

        grad = torch.randn(batch, seq, heads, dim, device="cuda", dtype=torch.float16)
        ms = median_ms(lambda: torch.autograd.grad(forward(), qkv, grad), min_seconds=0.3, max_reps=50)
        forward_flops, backward_flops = attention_flops(batch, heads, seq, dim, False)
        tflops = (forward_flops + backward_flops) / ms / 1e9
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
            torch.autograd.grad(forward(), qkv, grad)
            torch.cuda.synchronize()
        kernels = gpu_kernels(profile)
        found.append({"dim": dim, "heads": heads, "batch": batch, "seq": seq, "fwd_bwd_ms": ms,
                      "fwd_bwd_tflops": tflops, "kernels": kernels})
        log(f"   FlashAttention's PyTorch baseline hd{dim}: fwd + bwd {ms:.3f} ms, {tflops:.1f} TFLOP/s")
        log(profile.key_averages().table(sort_by="cuda_time_total", row_limit=15, max_name_column_width=90))
        del qkv, grad
    results["attention_baseline"] = found


def gaps():
    """The GPU's idle time between back-to-back kernels: N element-wise adds queued eagerly (the
    CPU ahead of the GPU once a kernel outlasts its launch) and replayed from a CUDA graph; the
    time per kernel in the stream less the kernel's own duration (torch.profiler) is the gap
    dtsim's per-kernel overhead stands for (sim/compute/compute_model.cpp, 2 µs)."""
    found = []
    count = 200
    for mib in (1, 4, 16, 64):
        elements = mib * 2**20 // 2
        x = torch.randn(elements, device="cuda", dtype=torch.bfloat16)
        y = torch.randn(elements, device="cuda", dtype=torch.bfloat16)
        out = torch.empty_like(x)

        def burst():
            for _ in range(count):
                torch.add(x, y, out=out)

        eager_ms = median_ms(burst, min_seconds=0.3, max_reps=30) / count
        graph = torch.cuda.CUDAGraph()
        burst()
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            burst()
        graph_ms = median_ms(graph.replay, min_seconds=0.3, max_reps=30) / count
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
            burst()
            torch.cuda.synchronize()
        kernel_us = sum(getattr(e, "device_time_total", 0) for e in profile.key_averages()) / count
        row = {"mib_per_tensor": mib, "kernels": count, "eager_us_per_kernel": eager_ms * 1e3,
               "graph_us_per_kernel": graph_ms * 1e3, "kernel_us": kernel_us,
               "eager_gap_us": eager_ms * 1e3 - kernel_us, "graph_gap_us": graph_ms * 1e3 - kernel_us}
        found.append(row)
        log(f"   add of {mib:3d} MiB tensors: kernel {kernel_us:7.2f} µs; per kernel in a stream: eager "
            f"{row['eager_us_per_kernel']:7.2f} (gap {row['eager_gap_us']:5.2f}), graph {row['graph_us_per_kernel']:7.2f} "
            f"(gap {row['graph_gap_us']:5.2f}) µs")
        del x, y, out, graph
    results["gaps"] = found


def kernel_name(fn):
    """The name of the CUDA kernel(s) one call of fn launches, from torch.profiler (the tile and stage counts)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
        fn()
        torch.cuda.synchronize()
    return " + ".join(kernel["name"] for kernel in gpu_kernels(profile))


def shapes():
    rows = []
    soak(3 if QUICK else 6)

    def measure(label, batch, m, n, k, transpose_a=False, transpose_b=False):
        a = torch.randn(batch, k, m, device="cuda", dtype=torch.bfloat16).transpose(1, 2) if transpose_a else \
            torch.randn(batch, m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(batch, n, k, device="cuda", dtype=torch.bfloat16).transpose(1, 2) if transpose_b else \
            torch.randn(batch, k, n, device="cuda", dtype=torch.bfloat16)
        ms = median_ms(lambda: torch.bmm(a, b))
        tflops = 2 * batch * m * n * k / (ms * 1e-3) / 1e12
        kernel = kernel_name(lambda: torch.bmm(a, b))
        rows.append({"label": label, "batch": batch, "m": m, "n": n, "k": k, "transpose_a": transpose_a,
                     "transpose_b": transpose_b, "ms": ms, "tflops": tflops, "kernel": kernel})
        log(f"   {label:26s} batch {batch:4d} M {m:6d} N {n:6d} K {k:6d}  {ms:8.4f} ms  {tflops:6.1f} TFLOP/s  {kernel}")

    for k in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384):
        measure("K sweep", 1, 8192, 8192, k)
    for k in (64, 256, 1024, 4096, 16384):
        measure("K sweep 4096", 1, 4096, 4096, k)
        measure("K sweep 16384", 1, 16384, 16384, k)
    for n in (64, 128, 256, 512, 1024, 2048, 4096):
        measure("N sweep", 1, 16384, n, 8192)
        measure("N sweep K 2048", 1, 16384, n, 2048)
    for dim, heads in ((64, 32), (128, 16)):  # hidden 2048, batch 8 × sequence 2048
        batch, s = 8 * heads, 2048
        measure(f"attn hd{dim} QK^T", batch, s, s, dim, transpose_b=True)
        measure(f"attn hd{dim} PV", batch, s, dim, s)
        measure(f"attn hd{dim} dP=dO.V^T", batch, s, s, dim, transpose_b=True)
        measure(f"attn hd{dim} dV=P^T.dO", batch, s, dim, s, transpose_a=True)
        measure(f"attn hd{dim} dQ=dS.K", batch, s, dim, s)
        measure(f"attn hd{dim} dK=dS^T.Q", batch, s, dim, s, transpose_a=True)
    results["shapes"] = rows

    unfused = []
    for dim, heads in ((64, 32), (128, 16)):
        for seq in (512, 1024, 2048, 4096, 8192):
            batch = 16384 // seq
            q, k, v = (torch.randn(batch * heads, seq, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            scale = dim ** -0.5

            def forward():
                scores = torch.baddbmm(torch.empty(batch * heads, seq, seq, device="cuda", dtype=torch.bfloat16),
                                       q, k.transpose(1, 2), beta=0, alpha=scale)
                return torch.bmm(torch.softmax(scores, dim=-1), v)

            grad = torch.randn(batch * heads, seq, dim, device="cuda", dtype=torch.bfloat16)
            both_ms = median_ms(lambda: torch.autograd.grad(forward(), (q, k, v), grad), min_seconds=0.3, max_reps=50)
            forward_flops, backward_flops = attention_flops(batch, heads, seq, dim, False)
            tflops = (forward_flops + backward_flops) / both_ms / 1e9
            unfused.append({"dim": dim, "heads": heads, "batch": batch, "seq": seq, "fwd_bwd_ms": both_ms,
                            "fwd_bwd_tflops": tflops})
            log(f"   unfused attention hd{dim} b {batch:3d} h {heads} s {seq:5d}: fwd + bwd {both_ms:8.3f} ms  {tflops:6.1f} TFLOP/s")
            del q, k, v, grad
    results["unfused_attention"] = unfused


def attention_flops(batch, heads, seq, dim, causal):
    # FlashAttention's benchmark convention: forward 4·b·h·s²·d, backward 2.5× the forward, the
    # causal mask halving both (benchmarks/benchmark_flash_attention.py, flops()).
    forward = 4 * batch * heads * seq * seq * dim / (2 if causal else 1)
    return forward, 2.5 * forward


def attention():
    rows = []
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def measure(label, batch, heads, seq, dim, causal):
        q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            grad = torch.randn_like(out)
            fwd_ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            both_ms = median_ms(lambda: torch.autograd.grad(
                F.scaled_dot_product_attention(q, k, v, is_causal=causal), (q, k, v), grad))
        forward, backward = attention_flops(batch, heads, seq, dim, causal)
        row = {"label": label, "batch": batch, "heads": heads, "seq": seq, "dim": dim, "causal": causal,
               "fwd_ms": fwd_ms, "fwd_bwd_ms": both_ms, "fwd_tflops": forward / fwd_ms / 1e9,
               "fwd_bwd_tflops": (forward + backward) / both_ms / 1e9}
        rows.append(row)
        log(f"   {label:24s} b {batch:3d} h {heads:3d} s {seq:6d} d {dim:4d} causal {causal!s:5s} "
            f"fwd {row['fwd_tflops']:6.1f}  fwd+bwd {row['fwd_bwd_tflops']:6.1f} TFLOP/s")

    for causal in (False, True):
        for seq in (512, 1024, 2048, 4096, 8192, 16384):
            measure("readme hd128", 16384 // seq, 16, seq, 128, causal)
    for seq in (512, 2048, 8192):
        measure("readme hd64", 16384 // seq, 32, seq, 64, True)
    for name, hidden, heads, micro in MPT:
        measure(name, micro, heads, SEQUENCE, hidden // heads, True)
    results["attention"] = rows


def memory():
    rows = []

    def measure(label, elements, make, op, bytes_moved):
        tensors = make(elements)
        ms = median_ms(lambda: op(*tensors))
        rate = bytes_moved(elements) / (ms * 1e-3) / 1e9
        rows.append({"label": label, "bytes": bytes_moved(elements), "ms": ms, "gb_per_s": rate})
        log(f"   {label:22s} {bytes_moved(elements) / 2**20:10.2f} MiB moved  {ms:9.4f} ms  {rate:7.1f} GB/s")

    def two(n):
        return (torch.randn(n, device="cuda", dtype=torch.bfloat16), torch.randn(n, device="cuda", dtype=torch.bfloat16))

    def norm_inputs(n):
        rows_ = max(1, n // 5120)
        x = torch.randn(rows_, 5120, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        w = torch.ones(5120, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        b = torch.zeros(5120, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        y = F.layer_norm(x, (5120,), w, b)
        return x, w, b, y, torch.randn_like(y)

    for log2 in range(18, 31, 2):  # 2^18 … 2^30 bf16 elements: 0.5 MiB … 2 GiB per tensor
        n = 2**log2
        measure("copy", n, two, lambda x, y: x.copy_(y), lambda e: 4 * e)
        measure("add", n, two, lambda x, y: torch.add(x, y), lambda e: 6 * e)
        measure("gelu fwd", n, two, lambda x, y: F.gelu(x), lambda e: 4 * e)
        measure("layernorm fwd 5120", n, norm_inputs, lambda x, w, b, y, g: F.layer_norm(x, (5120,), w, b),
                lambda e: 4 * (e // 5120 * 5120))
        measure("layernorm bwd 5120", n, norm_inputs,
                lambda x, w, b, y, g: torch.autograd.grad(y, (x, w, b), g, retain_graph=True),
                lambda e: 6 * (e // 5120 * 5120))
        measure("softmax 2048", n, lambda e: (torch.randn(max(1, e // 2048), 2048, device="cuda", dtype=torch.bfloat16),),
                lambda x: torch.softmax(x, dim=-1), lambda e: 4 * (e // 2048 * 2048))
    results["memory"] = rows


def launch():
    x = torch.zeros(1, device="cuda")
    for _ in range(100):
        x.add_(1)
    torch.cuda.synchronize()
    count = 2000
    start = time.perf_counter()
    for _ in range(count):
        x.add_(1)
    torch.cuda.synchronize()
    eager_us = (time.perf_counter() - start) / count * 1e6
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(100):
                x.add_(1)
    torch.cuda.synchronize()
    graph_us = median_ms(lambda: graph.replay()) * 1e3 / 100
    results["launch"] = {"eager_op_us": eager_us, "graph_kernel_us": graph_us}
    log(f"   eager 1-element add_: {eager_us:.2f} µs per op (host-bound); in a CUDA graph: {graph_us:.2f} µs per kernel")


def optimizer():
    # strategies/training_step.cpp, update_bytes_per_parameter: fp32 AdamW fused 28 B, torch 80 B
    # (weight decay 0.01 on: the decay pass reads and writes p).
    rows = []
    parameters = 250_000_000 if QUICK else 1_000_000_000
    tensors = 100
    params = [torch.randn(parameters // tensors, device="cuda", requires_grad=True) for _ in range(tensors)]
    for p in params:
        p.grad = torch.randn_like(p)
    for implementation, kwargs, modelled_bytes in (("fused", {"fused": True}, 28), ("foreach", {"foreach": True}, 80),
                                                   ("for-loop", {"foreach": False}, 80)):
        opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, **kwargs)
        ms = median_ms(opt.step, min_seconds=0.5, max_reps=20)
        rate = modelled_bytes * parameters / (ms * 1e-3) / 1e9
        rows.append({"implementation": implementation, "parameters": parameters, "ms": ms,
                     "modelled_bytes_per_parameter": modelled_bytes, "implied_gb_per_s": rate})
        log(f"   AdamW {implementation:8s} {parameters / 1e9:.2f} B params  {ms:8.2f} ms  "
            f"= {modelled_bytes} B/param at {rate:7.1f} GB/s")
        del opt
        torch.cuda.empty_cache()
    del params
    torch.cuda.empty_cache()
    results["optimizer"] = rows


class MptBlock(torch.nn.Module):
    def __init__(self, hidden, heads, bias=True):
        super().__init__()
        self.heads = heads
        self.norm_1 = torch.nn.LayerNorm(hidden, bias=bias)
        self.wqkv = torch.nn.Linear(hidden, 3 * hidden, bias=bias)
        self.out_proj = torch.nn.Linear(hidden, hidden, bias=bias)
        self.norm_2 = torch.nn.LayerNorm(hidden, bias=bias)
        self.up_proj = torch.nn.Linear(hidden, 4 * hidden, bias=bias)
        self.down_proj = torch.nn.Linear(4 * hidden, hidden, bias=bias)

    def forward(self, x):
        batch, seq, hidden = x.shape
        qkv = self.wqkv(self.norm_1(x)).view(batch, seq, 3, self.heads, hidden // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out_proj(attended.transpose(1, 2).reshape(batch, seq, hidden))
        return x + self.down_proj(F.gelu(self.up_proj(self.norm_2(x))))


def layer():
    rows = []
    from torch.nn.attention import SDPBackend, sdpa_kernel
    variants = [(name, hidden, heads, micro, True) for name, hidden, heads, micro in MPT]
    variants.append(("mpt-13b", 5120, 40, 2, False))
    for name, hidden, heads, micro, bias in variants:
        layers = 4
        model = torch.nn.Sequential(*[MptBlock(hidden, heads, bias) for _ in range(layers)]).cuda().to(torch.bfloat16)
        parameters = list(model.parameters())
        x = torch.randn(micro, SEQUENCE, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)

        def step():
            # Gradients set to None first, as optimizer.zero_grad() does by default: each backward
            # then writes them rather than adding to the previous step's.
            for p in parameters:
                p.grad = None
            x.grad = None
            model(x).float().pow(2).mean().backward()

        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            deadline = time.time() + 2  # the workload itself for 2 s first: clocks as in a training run
            while time.time() < deadline:
                step()
                torch.cuda.synchronize()
            fwd_ms = median_ms(lambda: model(x), min_seconds=0.3, max_reps=30) / layers
            both_ms = median_ms(step, min_seconds=0.5, max_reps=30) / layers
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA], acc_events=True) as profile:
                step()
                torch.cuda.synchronize()
        table = profile.key_averages().table(sort_by="cuda_time_total", row_limit=40, max_name_column_width=110)
        label = name + ("" if bias else " without biases")
        row = {"model": label, "hidden": hidden, "heads": heads, "micro_batch": micro, "sequence": SEQUENCE, "biases": bias,
               "layers_timed": layers, "fwd_ms_per_layer": fwd_ms, "fwd_bwd_ms_per_layer": both_ms,
               "kernels": gpu_kernels(profile)}
        rows.append(row)
        log(f"   {label}: {fwd_ms:.3f} ms forward, {both_ms:.3f} ms forward + backward per layer "
            f"(micro-batch {micro} × {SEQUENCE}); profile of one step of {layers} layers:")
        log(table)
        del model, parameters, x
        torch.cuda.empty_cache()
    results["layer"] = rows


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = False
    chosen = [arg.split("=", 1)[1].split(",") for arg in sys.argv if arg.startswith("--only=")]
    for name, body in (("facts", facts), ("launch", launch), ("gemm", gemm), ("attention", attention),
                       ("memory", memory), ("optimizer", optimizer), ("layer", layer), ("shapes", shapes),
                       ("fp8", fp8_gemm), ("rows", rows), ("baseline", attention_baseline),
                       ("gaps", gaps)):
        if name == "facts" or not chosen or name in chosen[0]:
            section(name, body)
    results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    log("errors: " + ", ".join(results.get("errors", [])) if results.get("errors") else "all sections ran")
