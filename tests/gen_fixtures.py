#!/usr/bin/python3
# tests/gen_fixtures.py - writes the reference fixtures the attention tests compare against: PyTorch 1.13's
# nn.MultiheadAttention (tests/fixtures/mha/) and NumPy float64 formulas for the smaller functions (tests/fixtures/attn/).
#
# Regenerate (only when a case is added or changed; the files are committed, `make test` needs no Python):
#     /usr/bin/python3 tests/gen_fixtures.py          # Debian's python3 with python3-torch 1.13 and numpy
# Seeds are fixed, so running it twice writes the same bytes. The layout is described in tests/fixtures/README.md.
#
# Mask conventions are mha-repl's (and nn.MultiheadAttention's): a bool mask is True where attention is NOT
# allowed, a float mask is added to the scores. Two combinations are defined the way torch 2 defines them,
# because torch 1.13 refuses or misreads them: a float key_padding_mask together with an attn_mask (1.13 raises
# for a float attn_mask and treats any nonzero float as True beside a bool one). There both masks are made
# additive (True -> -inf) and summed; the expected values come from torch 1.13 given that sum as a 3-D
# attn_mask. is_causal (not in 1.13) is passed to torch as an explicit causal attn_mask (j > i masked).
import os
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")

assert torch.__version__.startswith("1.13"), "the MultiheadAttention fixtures are defined against torch 1.13"


def save(case_dir, name, array):
    if isinstance(array, torch.Tensor):
        array = array.detach().numpy()
    array = np.ascontiguousarray(array)
    if array.dtype != np.bool_:
        array = array.astype(np.float32)
    np.save(os.path.join(case_dir, name + ".npy"), array)


def fmt_value(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return repr(v)
    return str(v)


class Index:
    """One cases.txt: a line per case, 'name=<case> key=value ...', and a directory per case."""

    def __init__(self, kind, header):
        self.dir = os.path.join(OUT, kind)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.lines = ["# " + line for line in header]

    def case(self, name, **options):
        d = os.path.join(self.dir, name)
        os.makedirs(d)
        self.lines.append(" ".join(["name=" + name] + ["%s=%s" % (k, fmt_value(v)) for k, v in options.items()]))
        return d

    def write(self):
        with open(os.path.join(self.dir, "cases.txt"), "w") as f:
            f.write("\n".join(self.lines) + "\n")


# ---------------------------------------------------------------------------------------------------------
# nn.MultiheadAttention (batch_first=True, dropout 0, the Python path of torch 1.13)

PARAM_NAMES = ["in_proj_weight", "in_proj_bias", "q_proj_weight", "k_proj_weight", "v_proj_weight",
               "out_proj_weight", "out_proj_bias", "bias_k", "bias_v"]


def additive(mask):
    """A bool mask (True = not allowed) as the float mask torch adds: -inf / 0."""
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape).masked_fill(mask, float("-inf"))
    return mask


def mha_case(index, rng, name, N=2, L=4, S=None, E=8, H=2, kdim=None, vdim=None, bias=True, add_bias_kv=False,
             add_zero_attn=False, batched=True, self_attn=None, attn_mask=None, key_padding_mask=None,
             need_weights=True, average_attn_weights=True, is_causal=False, fully_masked=None):
    """attn_mask: None, 'bool2d', 'float2d', 'bool3d', 'float3d'; key_padding_mask: None, 'bool', 'float'.
    fully_masked: None, 'kpm' (every key of batch 0 padded) or 'attn' (query row 1 sees no key)."""
    S = L if S is None else S
    kdim = E if kdim is None else kdim
    vdim = E if vdim is None else vdim
    if self_attn is None:
        self_attn = S == L and kdim == E and vdim == E
    torch.manual_seed(int(rng.randint(1 << 30)))
    m = torch.nn.MultiheadAttention(E, H, bias=bias, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
                                    kdim=kdim, vdim=vdim, batch_first=True)
    # Torch initialises biases to zero; random values make the test see whether they are added.
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.6, 0.6, size=tuple(p.shape)).astype(np.float32)))
    lead = (N,) if batched else ()
    query = torch.from_numpy(rng.randn(*lead, L, E).astype(np.float32))
    if self_attn:
        key = value = query
    else:
        key = torch.from_numpy(rng.randn(*lead, S, kdim).astype(np.float32))
        value = torch.from_numpy(rng.randn(*lead, S, vdim).astype(np.float32))
    nb = N if batched else 1

    am = None
    if attn_mask is not None:
        shape = (L, S) if attn_mask.endswith("2d") else (nb * H, L, S)
        if attn_mask.startswith("bool"):
            am = torch.from_numpy(rng.rand(*shape) < 0.3)
            am[..., 0] = False  # every query keeps at least one key unless a case asks otherwise
        else:
            am = torch.from_numpy(rng.uniform(-2.0, 2.0, size=shape).astype(np.float32))
        if fully_masked == "attn":
            if am.dtype == torch.bool:
                am[..., 1, :] = True
            else:
                am[..., 1, :] = float("-inf")
    kpm = None
    if key_padding_mask is not None:
        shape = (N, S) if batched else (S,)
        if key_padding_mask == "bool":
            kpm = torch.from_numpy(rng.rand(*shape) < 0.3)
            kpm[..., 0] = False
        else:
            kpm = torch.from_numpy(rng.uniform(-2.0, 2.0, size=shape).astype(np.float32))
        if fully_masked == "kpm":
            if kpm.dtype == torch.bool:
                kpm[0] = True
            else:
                kpm[0] = float("-inf")

    # What torch is given: the masks themselves, except where mha-repl's semantics are torch 2's (see the top).
    torch_am, torch_kpm = am, kpm
    if is_causal:
        causal = torch.ones(L, S, dtype=torch.bool).triu(1)
        if torch_am is None:
            torch_am = causal
        elif torch_am.dtype == torch.bool:
            torch_am = torch_am | causal
        else:
            torch_am = torch_am.masked_fill(causal, float("-inf"))
    if kpm is not None and kpm.dtype != torch.bool and torch_am is not None:
        a = additive(torch_am)
        if a.dim() == 2:
            a = a.unsqueeze(0).expand(nb * H, L, S)
        k = kpm.reshape(nb, 1, 1, S).expand(nb, H, 1, S).reshape(nb * H, 1, S)
        torch_am, torch_kpm = (a + k).contiguous(), None
        if not batched and torch_am.dim() == 3:
            torch_am = torch_am.reshape(H, L, S)

    out, weights = m(query, key, value, key_padding_mask=torch_kpm, need_weights=need_weights,
                     attn_mask=torch_am, average_attn_weights=average_attn_weights)

    options = dict(embed_dim=E, num_heads=H, kdim=kdim, vdim=vdim, bias=bias, add_bias_kv=add_bias_kv,
                   add_zero_attn=add_zero_attn, batched=batched, self_attn=self_attn,
                   attn_mask=attn_mask or "none", key_padding_mask=key_padding_mask or "none",
                   need_weights=need_weights, average_attn_weights=average_attn_weights, is_causal=is_causal,
                   fully_masked=fully_masked or "none")
    d = index.case(name, **options)
    save(d, "query", query)
    if not self_attn:
        save(d, "key", key)
        save(d, "value", value)
    state = dict(m.named_parameters())
    for pname in PARAM_NAMES:
        tname = pname.replace("out_proj_", "out_proj.")
        if tname in state:
            save(d, pname, state[tname])
    if am is not None:
        save(d, "attn_mask", am)
    if kpm is not None:
        save(d, "key_padding_mask", kpm)
    save(d, "out", out)
    if need_weights:
        save(d, "weights", weights)


def gen_mha():
    index = Index("mha", [
        "nn.MultiheadAttention fixtures from torch 1.13 (tests/gen_fixtures.py); layout in tests/fixtures/README.md.",
        "Each line: name=<dir> then the options; files in <dir>: query [key value when self_attn=0], the present",
        "parameters by name, attn_mask/key_padding_mask when not none, out, and weights when need_weights=1."])
    rng = np.random.RandomState(2024)
    c = lambda name, **kw: mha_case(index, rng, name, **kw)
    c("self_basic")
    c("cross_L_ne_S", N=2, L=3, S=5, self_attn=False)
    c("random_sizes", N=int(rng.randint(1, 4)), L=int(rng.randint(2, 8)), S=int(rng.randint(2, 8)), E=12, H=3,
      self_attn=False)
    c("one_head", N=1, L=3, E=6, H=1)
    c("head_dim_one", N=2, L=3, E=4, H=4)
    c("unbatched", batched=False, L=5)
    c("unbatched_cross", batched=False, L=3, S=6, self_attn=False)
    for kind in ["bool2d", "float2d", "bool3d", "float3d"]:
        c("attn_mask_" + kind, L=4, S=5, attn_mask=kind)
    c("kpm_bool", L=4, S=5, key_padding_mask="bool")
    c("kpm_float", L=4, S=5, key_padding_mask="float")
    c("both_bool_bool", L=4, S=5, attn_mask="bool2d", key_padding_mask="bool")
    c("both_float_bool", L=4, S=5, attn_mask="float3d", key_padding_mask="bool")
    c("both_bool3d_bool", L=4, S=5, attn_mask="bool3d", key_padding_mask="bool")
    c("both_float_float", L=4, S=5, attn_mask="float2d", key_padding_mask="float")
    c("both_bool_float", L=4, S=5, attn_mask="bool3d", key_padding_mask="float")
    c("fully_masked_kpm", L=3, S=4, key_padding_mask="bool", fully_masked="kpm")
    c("fully_masked_attn_row", L=3, S=4, attn_mask="bool2d", fully_masked="attn")
    c("fully_masked_float_row", L=3, S=4, attn_mask="float3d", fully_masked="attn")
    c("kdim_vdim", L=4, S=6, kdim=5, vdim=3)
    c("kdim_vdim_masks", L=4, S=6, kdim=5, vdim=7, attn_mask="float2d", key_padding_mask="bool")
    c("kdim_vdim_unbatched", batched=False, L=3, S=4, kdim=6, vdim=2)
    c("no_bias", L=4)
    c("no_bias_kdim", L=4, S=3, kdim=5, vdim=6, bias=False)
    c("add_bias_kv", L=4, S=5, self_attn=False, add_bias_kv=True)
    c("add_zero_attn", L=4, S=5, self_attn=False, add_zero_attn=True)
    c("bias_kv_zero_attn", L=4, S=5, self_attn=False, add_bias_kv=True, add_zero_attn=True)
    c("bias_kv_zero_attn_masks", L=4, S=5, add_bias_kv=True, add_zero_attn=True, attn_mask="bool3d",
      key_padding_mask="bool")
    c("bias_kv_float_masks", L=3, S=5, add_bias_kv=True, attn_mask="float2d", key_padding_mask="bool")
    c("zero_attn_fully_masked", L=3, S=4, add_zero_attn=True, key_padding_mask="bool", fully_masked="kpm")
    c("bias_kv_unbatched", batched=False, L=3, S=4, add_bias_kv=True, add_zero_attn=True, kdim=5, vdim=6,
      key_padding_mask="bool")
    c("need_weights_false", L=4, S=5, self_attn=False, need_weights=False)
    c("need_weights_false_masks", L=4, S=5, attn_mask="bool2d", key_padding_mask="bool", need_weights=False)
    c("per_head_weights", L=4, S=5, H=4, average_attn_weights=False)
    c("per_head_weights_unbatched", batched=False, L=4, S=3, average_attn_weights=False, attn_mask="float3d")
    c("unbatched_attn_mask_3d", batched=False, L=4, S=5, attn_mask="bool3d", key_padding_mask="bool")
    c("causal", L=5, is_causal=True)
    c("causal_cross", L=4, S=6, self_attn=False, key_padding_mask="bool", is_causal=True)
    c("causal_float_mask", L=5, attn_mask="float2d", need_weights=False, is_causal=True)
    c("causal_bias_kv", L=4, add_bias_kv=True, add_zero_attn=True, is_causal=True)
    c("causal_unbatched", batched=False, L=4, is_causal=True, average_attn_weights=False)
    c("larger", N=3, L=7, S=9, E=16, H=4, self_attn=False, attn_mask="float3d", key_padding_mask="bool")
    index.write()
    return index


# ---------------------------------------------------------------------------------------------------------
# The smaller functions, against float64 NumPy formulas

def softmax64(x, axis):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - m)
        return e / np.sum(e, axis=axis, keepdims=True)


def gen_attn():
    index = Index("attn", [
        "Fixtures for softmax, linear, layer_norm, positional_encoding and sdpa (tests/gen_fixtures.py): float64",
        "NumPy formulas rounded to float32. Each line: name=<dir> fn=<function> then its options; files in <dir>."])
    rng = np.random.RandomState(7)

    def softmax_case(name, x, dim):
        d = index.case(name, fn="softmax", dim=dim)
        save(d, "x", x)
        save(d, "out", softmax64(x.astype(np.float32), dim))

    softmax_case("softmax_rows", rng.randn(3, 5), 1)
    softmax_case("softmax_cols", rng.randn(3, 5), 0)
    softmax_case("softmax_3d_mid", rng.randn(2, 3, 4), 1)
    softmax_case("softmax_1d", rng.randn(6), 0)
    softmax_case("softmax_large", np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0],
                                            [3e4, 3e4, -3e4], [88.0, 89.0, 90.0]]), 1)
    x = rng.randn(4, 5)
    x[0, 1] = x[1, 0] = x[1, 4] = -np.inf
    x[2, :] = -np.inf  # every entry masked: NaN row (the documented policy)
    softmax_case("softmax_neg_inf", x, 1)

    def linear_case(name, x, W, b):
        d = index.case(name, fn="linear", bias=b is not None)
        save(d, "x", x)
        save(d, "W", W)
        x64, W64 = x.astype(np.float32).astype(np.float64), W.astype(np.float32).astype(np.float64)
        y = x64 @ W64.T
        if b is not None:
            save(d, "b", b)
            y = y + b.astype(np.float32).astype(np.float64)
        save(d, "out", y)

    linear_case("linear_3d", rng.randn(2, 3, 4), rng.randn(5, 4), rng.randn(5))
    linear_case("linear_no_bias", rng.randn(6, 7), rng.randn(3, 7), None)
    linear_case("linear_1d", rng.randn(4), rng.randn(2, 4), rng.randn(2))
    linear_case("linear_wide", rng.randn(5, 33), rng.randn(17, 33), rng.randn(17))

    def layer_norm_case(name, x, norm_ndim, weight, bias, eps=1e-5):
        d = index.case(name, fn="layer_norm", norm_ndim=norm_ndim, eps=eps, weight=weight is not None,
                       bias=bias is not None)
        save(d, "x", x)
        x64 = x.astype(np.float32).astype(np.float64)
        axes = tuple(range(x.ndim - norm_ndim, x.ndim))
        mean = x64.mean(axis=axes, keepdims=True)
        var = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
        y = (x64 - mean) / np.sqrt(var + eps)
        if weight is not None:
            save(d, "weight", weight)
            y = y * weight.astype(np.float32).astype(np.float64)
        if bias is not None:
            save(d, "bias", bias)
            y = y + bias.astype(np.float32).astype(np.float64)
        save(d, "out", y)

    layer_norm_case("layer_norm_last", rng.randn(2, 3, 6) * 3 + 1, 1, rng.randn(6), rng.randn(6))
    layer_norm_case("layer_norm_two_dims", rng.randn(3, 4, 5), 2, None, None)
    layer_norm_case("layer_norm_weight_only", rng.randn(4, 8), 1, rng.randn(8), None, eps=1e-3)

    def pe_case(name, L, E):
        d = index.case(name, fn="positional_encoding", L=L, E=E)
        pos = np.arange(L, dtype=np.float64)[:, None]
        two_i = (np.arange(E) // 2 * 2).astype(np.float64)[None, :]
        angle = pos / np.power(10000.0, two_i / E)
        pe = np.where(np.arange(E)[None, :] % 2 == 0, np.sin(angle), np.cos(angle))
        save(d, "out", pe)

    pe_case("pe_small", 6, 8)
    pe_case("pe_odd", 5, 7)
    pe_case("pe_long", 64, 16)

    def sdpa_case(name, qshape, kshape, vshape, mask=None, mask_shape=None, is_causal=False, scale=0.0,
                  fully_masked=False):
        q, k, v = rng.randn(*qshape), rng.randn(*kshape), rng.randn(*vshape)
        L, S, D = qshape[-2], kshape[-2], qshape[-1]
        d = index.case(name, fn="sdpa", attn_mask=mask or "none", is_causal=is_causal, scale=float(scale))
        save(d, "q", q)
        save(d, "k", k)
        save(d, "v", v)
        q64, k64, v64 = (a.astype(np.float32).astype(np.float64) for a in (q, k, v))
        s = scale if scale else 1.0 / np.sqrt(D)
        scores = np.matmul(q64, np.swapaxes(k64, -1, -2)) * s
        if mask is not None:
            if mask == "bool":
                m = rng.rand(*mask_shape) < 0.3
                m[..., 0] = False
                if fully_masked:
                    m[..., 1, :] = True
                save(d, "attn_mask", m)
                scores = np.where(m, -np.inf, scores)
            else:
                m = rng.uniform(-2, 2, size=mask_shape).astype(np.float32)
                save(d, "attn_mask", m)
                scores = scores + m.astype(np.float64)
        if is_causal:
            scores = np.where(np.triu(np.ones((L, S), dtype=bool), 1), -np.inf, scores)
        w = softmax64(scores, -1)
        save(d, "weights", w)
        save(d, "out", np.matmul(w, v64))

    sdpa_case("sdpa_plain_2d", (4, 3), (5, 3), (5, 2))
    sdpa_case("sdpa_4d", (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 4))
    sdpa_case("sdpa_bool_ls", (2, 4, 3), (2, 5, 3), (2, 5, 3), mask="bool", mask_shape=(4, 5))
    sdpa_case("sdpa_float_full", (2, 2, 4, 3), (2, 2, 5, 3), (2, 2, 5, 3), mask="float", mask_shape=(2, 2, 4, 5))
    sdpa_case("sdpa_kpm_row", (2, 2, 4, 3), (2, 2, 5, 3), (2, 2, 5, 3), mask="bool", mask_shape=(2, 1, 1, 5))
    sdpa_case("sdpa_float_row", (3, 4, 3), (3, 6, 3), (3, 6, 2), mask="float", mask_shape=(3, 1, 6))
    sdpa_case("sdpa_causal", (2, 5, 4), (2, 5, 4), (2, 5, 4), is_causal=True)
    sdpa_case("sdpa_causal_rect", (4, 3), (6, 3), (6, 3), is_causal=True)
    sdpa_case("sdpa_causal_and_mask", (2, 5, 4), (2, 5, 4), (2, 5, 4), mask="float", mask_shape=(5, 5),
              is_causal=True)
    sdpa_case("sdpa_broadcast_batch", (2, 1, 4, 3), (1, 3, 5, 3), (3, 5, 2))
    sdpa_case("sdpa_scale", (3, 4), (4, 4), (4, 5), scale=0.9)
    sdpa_case("sdpa_fully_masked_row", (2, 3, 4), (2, 5, 4), (2, 5, 4), mask="bool", mask_shape=(2, 3, 5),
              fully_masked=True)
    sdpa_case("sdpa_long", (1, 37, 8), (1, 70, 8), (1, 70, 8), mask="bool", mask_shape=(70,))
    index.write()


if __name__ == "__main__":
    gen_mha()
    gen_attn()
    total = 0
    for root, _, files in os.walk(OUT):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    print("wrote %s: %d bytes" % (OUT, total), file=sys.stderr)
