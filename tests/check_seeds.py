#!/usr/bin/python3
# tests/check_seeds.py - recomputes with NumPy every number the seed documents (../shared/seeds/) print,
# and writes the true values to tests/fixtures/seeds_truth.txt, which lesson 12 is checked against.
# usage: /usr/bin/python3 tests/check_seeds.py [--write]   (prints a claimed-vs-true table; --write saves)
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "seeds_truth.txt")

rows = []    # (name, claimed, true, verdict) for the table
truth = {}   # name -> list of floats, written to the fixture


def record(name, claimed, true, tol=0.05):
    """Sets a seed's printed number beside the true one; verdict 'ok' when within tol (the
    seed prints one decimal or four), 'WRONG' otherwise."""
    true = np.atleast_1d(np.asarray(true, dtype=np.float64)).ravel()
    truth[name] = true.ravel().tolist()
    if claimed is None:
        rows.append((name, "-", true, "(not printed)"))
        return
    claimed = np.atleast_1d(np.asarray(claimed, dtype=np.float64)).ravel()
    true = true.ravel()
    ok = claimed.shape == true.shape and np.allclose(claimed, true, atol=tol, rtol=0)
    rows.append((name, claimed, true, "ok" if ok else "WRONG"))


# ---- seed 000 §4.1: one query, one key, one value (d_k = 3) -----------------------------------
q = np.array([0.1, 0.2, 0.3])
k = np.array([0.4, 0.5, 0.6])
v = np.array([1.0, 2.0, 3.0])
dot = q @ k
record("s41_qk", None, dot)
record("s41_score", 0.2598, dot / math.sqrt(3), tol=5e-5)
record("s41_alpha", 1.0, 1.0)                       # softmax over ONE score is always 1
record("s41_output", v, 1.0 * v)

# ---- seed 000 §4.2: x = [1,2,3], h = 2, d_k = d_v = 2, d_model = 3 --------------------------------
x = np.array([1.0, 2.0, 3.0])
W = {
    "W1Q": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]],
    "W1K": [[0.7, 0.8], [0.9, 1.0], [1.1, 1.2]],
    "W1V": [[1.3, 1.4], [1.5, 1.6], [1.7, 1.8]],
    "W2Q": [[1.9, 2.0], [2.1, 2.2], [2.3, 2.4]],
    "W2K": [[2.5, 2.6], [2.7, 2.8], [2.9, 3.0]],
    "W2V": [[3.1, 3.2], [3.3, 3.4], [3.5, 3.6]],
}
W = {name: np.array(m) for name, m in W.items()}
WO_printed = np.array([[3.7, 3.8, 3.9, 4.0],
                       [4.1, 4.2, 4.3, 4.4],
                       [4.5, 4.6, 4.7, 4.8]])  # printed 3x4; Concat is 1x4, so W^O must be 4x3


def softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V):
    d_k = K.shape[-1]
    return softmax(Q @ K.T / math.sqrt(d_k)) @ V


X = x[None, :]  # one token: a 1x3 matrix
claims = {"Q1": [2.3, 3.5], "K1": [6.6, 7.8], "V1": [10.9, 12.1],
          "Q2": [13.7, 14.3], "K2": [17.1, 17.7], "V2": [20.5, 21.1]}
proj = {}
for i in (1, 2):
    for part in "QKV":
        name = f"{part}{i}"
        proj[name] = X @ W[f"W{i}{part}"]
        record(f"s42_{name}", claims[name], proj[name])
heads = {}
for i, claimed in ((1, [11.8, 13.2]), (2, [20.9, 21.5])):
    Qi, Ki, Vi = proj[f"Q{i}"], proj[f"K{i}"], proj[f"V{i}"]
    record(f"s42_score{i}", None, Qi @ Ki.T / math.sqrt(2))
    record(f"s42_weight{i}", None, softmax(Qi @ Ki.T / math.sqrt(2)))
    heads[i] = attention(Qi, Ki, Vi)
    assert np.allclose(heads[i], Vi)  # one token: the head IS its value row
    record(f"s42_head{i}", claimed, heads[i])
concat = np.concatenate([heads[1], heads[2]], axis=1)
record("s42_concat", [11.8, 13.2, 20.9, 21.5], concat)
WO = WO_printed.T  # the only reading that makes the product defined: 4x3
record("s42_multihead", [197.5, 208.7, 220.0], concat @ WO)
# what the printed numbers give if one trusts the printed heads (still with W^O read as 4x3)
record("s42_multihead_from_printed_heads", [197.5, 208.7, 220.0],
       np.array([11.8, 13.2, 20.9, 21.5]) @ WO)
# lesson 12's exercise: head 1 of §4.2 given a second token, X2 = [[1,2,3],[3,2,1]]: now there is a choice
X2 = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
Q12, K12 = X2 @ W["W1Q"], X2 @ W["W1K"]
record("ex12_two_tokens_weights", None, softmax(Q12 @ K12.T / math.sqrt(2)))

# ---- seed 002: "8 heads of 64x64 cost about one 512x512" - count multiply-adds -------------------
def attention_macs(L, E, H):
    """Multiply-adds of one self-attention layer on L tokens, width E, H heads (D = E/H):
    projections 3·L·E·E, scores H·L·L·D, weighted sum H·L·L·D, output projection L·E·E."""
    D = E // H
    return {"projections": 3 * L * E * E, "scores": H * L * L * D,
            "weighted_sum": H * L * L * D, "output": L * E * E}


for L in (10, 128, 1024):
    one = attention_macs(L, 512, 1)
    eight = attention_macs(L, 512, 8)
    record(f"s002_macs_L{L}_h1", None, sum(one.values()))
    record(f"s002_macs_L{L}_h8", None, sum(eight.values()))
    record(f"s002_softmax_exps_L{L}", None, [L * L * 1, L * L * 8])  # one exp per score: H·L·L
# the seed's literal comparison: one 512x512 product against eight 64x64 ones (per token row)
record("s002_literal_512x512", None, 512 * 512)
record("s002_literal_8x64x64", None, 8 * 64 * 64)

# ---- scaling: var(q·k) for q, k with i.i.d. N(0,1) entries is d_k; after /√d_k it is 1 -----------
rng = np.random.default_rng(0)
for d_k in (4, 16, 64, 256):
    qs = rng.standard_normal((20000, d_k))
    ks = rng.standard_normal((20000, d_k))
    dots = (qs * ks).sum(axis=1)
    record(f"var_qk_d{d_k}", None, [dots.var(), (dots / math.sqrt(d_k)).var()])

# ---- seed 003: head size is d_model / h, not (sequence length) / h --------------------------------
record("s003_head_dim_512_8", None, 512 // 8)

if __name__ == "__main__":
    for name, claimed, true, verdict in rows:
        c = claimed if isinstance(claimed, str) else np.array2string(claimed, precision=4)
        print(f"{name:34s} {verdict:14s} seed: {c:28s} true: {np.array2string(true, precision=4)}")
    if "--write" in sys.argv:
        os.makedirs(os.path.dirname(OUT), exist_ok=True)
        with open(OUT, "w") as f:
            f.write("# true values of the numbers in the seed documents, from tests/check_seeds.py\n")
            f.write("# name value... (row-major)\n")
            for name, vals in truth.items():
                f.write(name + " " + " ".join(repr(float(x)) for x in vals) + "\n")
        print("wrote", OUT)
