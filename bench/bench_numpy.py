#!/usr/bin/python3
"""bench/bench_numpy.py - times in NumPy the cases bench/bench.c sends, the same float32 computations
on the same shapes: it reads one case line at a time ("id kind sizes...") and answers one line,
"id median_ms runs peak_bytes", so bench.c can time each case on both sides back to back.

usage: build/bench --numpy '/usr/bin/python3 bench/bench_numpy.py'    (what `make bench` runs)
       build/bench --list | /usr/bin/python3 bench/bench_numpy.py      (NumPy's side alone)

OpenBLAS is pinned to one thread (set here too, before numpy loads it) so both sides use one core.
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
    if kind == "mha":
        H, L, D, need_weights = n
        E = H * D
        x, w_in, b_in, w_out, b_out = u(L, E), u(3 * E, E), np.zeros(3 * E, F32), u(E, E), np.zeros(E, F32)
        return lambda: multihead(x, w_in, b_in, w_out, b_out, H, bool(need_weights))
    raise SystemExit(f"bench_numpy.py: unknown case kind {kind!r}")


def time_case(fn):
    """As bench.c: a warm-up run (with tracemalloc, for the peak), then runs for about a second,
    at least 3, at most 25; a case slower than a second is timed by its warm-up run alone."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    if first > 1.0:
        return first * 1e3, 1, peak
    runs = int(min(25, max(3, 1.0 / first)))
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples)) * 1e3, runs, peak


def main():
    rng = np.random.default_rng(0)
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        fields = line.split()
        if not fields:
            continue
        fn = make_case(fields, rng)
        ms, runs, peak = time_case(fn)
        print(f"{fields[0]} {ms:.4f} {runs} {peak}", flush=True)


if __name__ == "__main__":
    main()
