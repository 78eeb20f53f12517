#!/usr/bin/python3
"""bench/bench_numpy.py - times in NumPy the cases bench/bench.c sends, the same float32 computations
on the same shapes: it reads one case line at a time ("id kind sizes...") and answers one line,
"id median_ms runs peak_bytes", so bench.c can time each case on both sides back to back.

usage: build/bench --numpy '/usr/bin/python3 bench/bench_numpy.py'    (what `make bench` runs)
       build/bench --list | /usr/bin/python3 bench/bench_numpy.py      (NumPy's side alone)
       /usr/bin/python3 bench/bench_numpy.py --coretype               (the Makefile's fair-peer helper)

--coretype prints the OPENBLAS_CORETYPE OpenBLAS should have chosen on this CPU when, left to
itself, it falls back to its generic Prescott kernel (OpenBLAS 0.3.21 does on CPUs newer than it):
SkylakeX with AVX-512, Zen on AMD family 23 or 25, Haswell with AVX2; it prints nothing when OpenBLAS
chose a kernel of its own, or none fits. `make bench` then also times every peer told that name
(the "fair peer").

Two more requests: "info" answers "info TEXT", the BLAS NumPy runs on and the kernel OpenBLAS chose for
this CPU (threadpoolctl's architecture, its corename); "threads N" sets NumPy's (and torch's) thread
count and answers "threads N"; "clock cpu" (bench --cpu) times by CPU time (time.process_time) and
reports the fastest run instead of the median, and answers "clock cpu". Run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (`make bench`
does) so OpenBLAS picks its kernels as a user's NumPy does.

OpenBLAS starts pinned to one thread (set here too, before numpy loads it) so both sides use one core.
Where torch is installed each case is also timed in torch, on the same thread count, and the answer
ends with its median ms (nan without torch, or for a case torch is not asked to run).
NumPy is written the way a careful NumPy user would: in-place softmax, no float64 anywhere. It has no
fused attention, so with or without weights it forms the (H,L,L) scores; for attention alone at
L > 4096 the scores would not fit in memory and it goes one head and 1024 queries at a time.
Peak bytes are the highest NumPy allocation (tracemalloc) during one call, outputs included.
"""
import os
import sys
import time
import tracemalloc

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402  (after the thread pinning)

try:
    import torch  # noqa: E402
    torch.set_num_threads(1)
except ImportError:
    torch = None

F32 = np.float32


def softmax_(s):
    """softmax along the last axis, in place: exp(s - max) / sum."""
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s


def attention(q, k, v):
    """q, k, v (H,L,D) -> softmax(q·kᵀ/√D)·v, (H,L,D)."""
    H, L, D = q.shape
    scale = F32(1.0 / np.sqrt(D))
    if L <= 4096:
        return softmax_((q * scale) @ k.transpose(0, 2, 1)) @ v
    out = np.empty_like(q)
    for h in range(H):
        kt = k[h].T
        for i in range(0, L, 1024):
            out[h, i:i + 1024] = softmax_((q[h, i:i + 1024] * scale) @ kt) @ v[h]
    return out


def multihead(x, w_in, b_in, w_out, b_out, H, need_weights):
    """nn.MultiheadAttention forward, self-attention, x (L,E); weights averaged over heads."""
    L, E = x.shape
    D = E // H
    qkv = x @ w_in.T + b_in                                            # (L,3E)
    q = qkv[:, :E].reshape(L, H, D).transpose(1, 0, 2) * F32(1.0 / np.sqrt(D))  # (H,L,D), scaled first as torch
    k = qkv[:, E:2 * E].reshape(L, H, D).transpose(1, 0, 2)
    v = qkv[:, 2 * E:].reshape(L, H, D).transpose(1, 0, 2)
    weights = softmax_(q @ k.transpose(0, 2, 1))                       # (H,L,L)
    heads = weights @ v                                                # (H,L,D)
    out = heads.transpose(1, 0, 2).reshape(L, E) @ w_out.T + b_out     # (L,E)
    return (out, weights.mean(axis=0)) if need_weights else (out, None)


def make_case(fields, rng):
    """A function running one case of bench.c's list, with its inputs made once."""
    kind = fields[1]
    n = [int(f) for f in fields[2:]]
    u = lambda *shape: rng.uniform(-1, 1, shape).astype(F32)  # noqa: E731
    if kind == "matmul":
        M, K, N, transposed_b = n
        a = u(M, K)
        if transposed_b:
            w = u(N, K)
            return lambda: a @ w.T
        b = u(K, N)
        return lambda: a @ b
    if kind == "attention":
        H, L, D = n
        q, k, v = u(H, L, D), u(H, L, D), u(H, L, D)
        return lambda: attention(q, k, v)
    if kind == "attention_gqa":
        # each K/V head's group of query heads stacked as one longer query block (H_kv, G·L, D): no copy of K, V
        H, H_kv, L, D = n
        q, k, v = u(H, L, D), u(H_kv, L, D), u(H_kv, L, D)
        return lambda: attention(q.reshape(H_kv, H // H_kv * L, D), k, v).reshape(H, L, D)
    if kind == "mha":
        H, L, D, need_weights = n
        E = H * D
        x, w_in, b_in, w_out, b_out = u(L, E), u(3 * E, E), np.zeros(3 * E, F32), u(E, E), np.zeros(E, F32)
        return lambda: multihead(x, w_in, b_in, w_out, b_out, H, bool(need_weights))
    raise SystemExit(f"bench_numpy.py: unknown case kind {kind!r}")


def make_torch_case(fields):
    """The case in torch 1.13 (no autograd), or None: matmul, x·Wᵀ through F.linear, attention as
    softmax(q·kᵀ·scale)·v up to L = 4096 (GQA: K and V repeat_interleave'd per query head first), MHA
    through nn.MultiheadAttention (self-attention, weights averaged over heads when asked for)."""
    if torch is None:
        return None
    kind = fields[1]
    n = [int(f) for f in fields[2:]]
    g = torch.Generator().manual_seed(0)
    u = lambda *shape: torch.rand(*shape, generator=g) * 2 - 1  # noqa: E731
    if kind == "matmul":
        M, K, N, transposed_b = n
        a = u(M, K)
        if transposed_b:
            w = u(N, K)
            return lambda: torch.nn.functional.linear(a, w)
        b = u(K, N)
        return lambda: a @ b
    if kind == "attention":
        H, L, D = n
        if L > 4096:
            return None
        q, k, v = u(H, L, D), u(H, L, D), u(H, L, D)
        scale = 1.0 / D ** 0.5
        return lambda: torch.softmax((q * scale) @ k.transpose(1, 2), dim=-1) @ v
    if kind == "attention_gqa":
        # torch 1.13 has no enable_gqa: K and V repeated per query head, as Hugging Face's repeat_kv does
        H, H_kv, L, D = n
        q, k, v = u(H, L, D), u(H_kv, L, D), u(H_kv, L, D)
        scale, group = 1.0 / D ** 0.5, H // H_kv
        return lambda: torch.softmax((q * scale) @ k.repeat_interleave(group, dim=0).transpose(1, 2), dim=-1) @ \
            v.repeat_interleave(group, dim=0)
    if kind == "mha":
        H, L, D, need_weights = n
        m = torch.nn.MultiheadAttention(H * D, H)
        x = u(L, 1, H * D)
        return lambda: m(x, x, x, need_weights=bool(need_weights))
    return None


def time_torch(fields):
    fn = make_torch_case(fields)
    if fn is None:
        return float("nan")
    with torch.no_grad():
        return time_case(fn, trace=False)[0]


def blas_info():
    """The BLAS NumPy calls and the kernel it chose, e.g. "openblas 0.3.21, kernel Zen, 1 thread"."""
    try:
        from threadpoolctl import threadpool_info
        for lib in threadpool_info():
            if lib.get("user_api") == "blas":
                return (f"{lib.get('internal_api')} {lib.get('version')}, kernel {lib.get('architecture')}, "
                        f"{lib.get('num_threads')} thread(s)")
    except ImportError:
        pass
    return "BLAS unknown (python3-threadpoolctl not installed)"


def fair_coretype():
    """The kernel name for OPENBLAS_CORETYPE when OpenBLAS fell back to Prescott here, else ""."""
    arch = blas_info()
    if "kernel Prescott" not in arch:
        return ""
    flags, vendor, family = set(), "", ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key == "flags" and not flags:
                flags = set(value.split())
            elif key == "vendor_id" and not vendor:
                vendor = value
            elif key == "cpu family" and not family:
                family = value
    if vendor == "AuthenticAMD" and family in ("23", "25") and "avx2" in flags:
        return "Zen"
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return ""


def set_threads(n):
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=n, user_api="blas")
    except ImportError:
        pass
    if torch is not None:
        torch.set_num_threads(n)


CLOCK = {"now": time.perf_counter, "cpu": False}


def time_case(fn, trace=True):
    """As bench.c: a warm-up run (with tracemalloc, for the peak), then runs for about a second,
    at least 3, at most 400; a case slower than a second is timed by its warm-up run alone.
    The median of the runs, or after "clock cpu" the fastest by CPU time."""
    clock = CLOCK["now"]
    if trace:
        tracemalloc.start()
        tracemalloc.reset_peak()
    t0 = clock()
    fn()
    first = clock() - t0
    peak = tracemalloc.get_traced_memory()[1] if trace else 0
    if trace:
        tracemalloc.stop()
    if first > 1.0:
        return first * 1e3, 1, peak
    runs = int(min(400, max(3, 1.0 / first)))
    samples = []
    for _ in range(runs):
        t0 = clock()
        fn()
        samples.append(clock() - t0)
    best = min(samples) if CLOCK["cpu"] else float(np.median(samples))
    return best * 1e3, runs, peak


def main():
    if sys.argv[1:] == ["--coretype"]:
        print(fair_coretype())
        return
    rng = np.random.default_rng(0)
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "info":
            print(f"info {blas_info()}" + (f"; torch {torch.__version__}" if torch is not None else "; no torch"),
                  flush=True)
            continue
        if fields[0] == "clock" and fields[1:] == ["cpu"]:
            CLOCK.update(now=time.process_time, cpu=True)
            print("clock cpu", flush=True)
            continue
        if fields[0] == "threads":
            set_threads(int(fields[1]))
            print(f"threads {fields[1]}", flush=True)
            continue
        fn = make_case(fields, rng)
        ms, runs, peak = time_case(fn)
        torch_ms = time_torch(fields)
        print(f"{fields[0]} {ms:.4f} {runs} {peak} {torch_ms:.4f}", flush=True)


if __name__ == "__main__":
    main()
