#!/usr/bin/python3
# tests/gen_ops_fixtures.py - writes tests/fixtures/ops/*.npy: the inputs and the NumPy answers that
# tests/core/test_ops.c holds core/ops.c to (elementwise, broadcasting, reductions, cat/stack, matmul).
#
# Regenerate (needs Debian's python3-numpy; run from anywhere, it finds the repository itself):
#     /usr/bin/python3 tests/gen_ops_fixtures.py
# The generator is seeded, so a rerun writes identical files; commit them, since `make test` runs
# no Python. Every answer is computed in float64 from the float32 inputs and then rounded to
# float32, so it is the correctly rounded result the C code should come within tolerance of.
# Names: <case>_a/_b/... are inputs, the others are answers. How test_ops.c turns an input into a
# view (transpose, narrow, expand, select, permute) is written beside each case below; the two
# files must agree.
import math
import os
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "ops")
rng = np.random.default_rng(20240521)

BINOPS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum,
}
CMPOPS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
          "gt": np.greater, "ge": np.greater_equal}


def save(name, array):
    array = np.asarray(array)
    if array.dtype != np.bool_:
        array = array.astype(np.float32)
    np.save(os.path.join(OUT, name + ".npy"), array.copy(order="C"))  # ascontiguousarray would make a 0-d array 1-d


def f32(array):
    """float32 inputs, returned as float64 so the answers are computed from exactly those values."""
    return np.asarray(array, dtype=np.float32).astype(np.float64)


def uniform(lo, hi, *shape):
    return f32(rng.uniform(lo, hi, size=shape))


def normal(*shape):
    return f32(rng.standard_normal(size=shape))


def gelu(x):
    # x·Phi(x) = 0.5·x·erfc(-x/sqrt 2), the exact GELU (PyTorch's default)
    return np.vectorize(lambda v: 0.5 * v * math.erfc(-v / math.sqrt(2.0)))(x)


UNOPS = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh,
    "relu": lambda x: np.where(x < 0, 0.0, x),   # NaN stays NaN, as torch.relu
    "gelu": gelu, "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
}


def binary_cases():
    # a is positive so pow has real answers; b has both signs. The "special" layout has the rest.
    layouts = {
        "same": (uniform(0.2, 3, 3, 5), uniform(-2, 2, 3, 5)),
        "colrow": (uniform(0.2, 3, 3, 1), uniform(-2, 2, 1, 4)),
        "rank": (uniform(0.2, 3, 2, 3, 4), uniform(-2, 2, 4)),
        "scalar": (uniform(0.2, 3), uniform(-2, 2, 3, 4)),
        "zero": (uniform(0.2, 3, 1), uniform(-2, 2, 0)),   # (1) with (0) -> (0)
        "special": (f32([np.nan, 1.0, np.inf, np.inf, 0.0, 1.0, -1.0, -2.0, 0.0, np.inf, -np.inf, -0.0, 3.0]),
                    f32([1.0, np.nan, np.inf, -np.inf, 0.0, 0.0, 0.0, 0.5, -1.0, 0.0, 2.0, 0.0, -np.inf])),
    }
    with np.errstate(all="ignore"):
        for layout, (a, b) in layouts.items():
            save(f"bin_{layout}_a", a)
            save(f"bin_{layout}_b", b)
            for name, fn in BINOPS.items():
                save(f"bin_{layout}_{name}", fn(a, b))
        # tensor op number and number op tensor, on bin_same_a
        a = layouts["same"][0]
        for name, fn in BINOPS.items():
            save(f"bsc_{name}_r", fn(a, np.float64(np.float32(1.5))))
            save(f"bsc_{name}_l", fn(np.float64(np.float32(2.5)), a))


def noncontiguous_cases():
    a = uniform(0.2, 3, 4, 3)      # test: transpose(0,1) -> (3,4)
    b = uniform(-2, 2, 5, 6)       # test: narrow(0,1,3) then narrow(1,2,4) -> (3,4)
    c = uniform(-2, 2, 1, 4)       # test: expand to (3,4), stride 0 along dim 0
    p = normal(2, 3, 4)            # test: permute (2,0,1) -> (4,2,3)
    q = normal(3)
    save("nc_a", a); save("nc_b", b); save("nc_c", c); save("nc_p", p); save("nc_q", q)
    at, bn, ce = a.T, b[1:4, 2:6], np.broadcast_to(c, (3, 4))
    with np.errstate(all="ignore"):
        for name, fn in BINOPS.items():
            save(f"nc_{name}", fn(at, bn))
        save("nc_expand_add", bn + ce)
        save("nc_expand_mul", ce * bn)
        save("nc_perm_add", np.transpose(p, (2, 0, 1)) + q)
        for name, fn in UNOPS.items():
            save(f"nc_un_{name}", fn(bn))


def compare_and_logic_cases():
    a = f32([[-1.0], [0.0], [np.nan]])          # (3,1)
    b = f32([[0.0, -1.0, np.nan, 2.0]])         # (1,4)
    save("cmp_a", a); save("cmp_b", b)
    with np.errstate(all="ignore"):
        for name, fn in CMPOPS.items():
            save(f"cmp_{name}", fn(a, b))
            save(f"cmpsc_{name}", fn(b, 0.0))   # compare_scalar(b, 0)
    x = rng.random((3, 4)) < 0.5
    y = rng.random(4) < 0.5
    z = rng.random((3, 1)) < 0.5
    save("lg_a", x); save("lg_b", y); save("lg_c", z)
    save("lg_and", x & y); save("lg_or", x | y); save("lg_xor", x ^ y); save("lg_not", ~x)
    save("lg_where_bool", np.where(x, y, z))
    save("lg_sum_1", x.sum(axis=1))             # reductions read bool as 0/1
    save("lg_stack", np.stack([x, ~x], axis=2))  # bool pieces stay bool
    save("lg_cat_float", np.concatenate([x.astype(np.float64), uniform(-1, 1, 1, 4)], axis=0))


def unary_cases():
    x = f32([-100.0, -20.0, -10.0, -5.0, -3.3, -1.0, -0.5, -1e-3, -0.0, 0.0, 1e-3, 0.5, 1.0, 2.7, 5.0,
             10.0, 20.0, 88.0, 100.0, np.nan, np.inf, -np.inf])
    save("un_x", x)
    with np.errstate(all="ignore"):
        for name, fn in UNOPS.items():
            save(f"un_{name}", fn(x))


def where_cases():
    cond = rng.random((3, 1)) < 0.5
    cond[0, 0], cond[1, 0] = True, False
    a, b = normal(1, 4), normal()
    save("wh_c", cond); save("wh_a", a); save("wh_b", b); save("wh_out", np.where(cond, a, b))
    cond2 = rng.random((2, 3)) < 0.5
    a2 = normal(3, 2)          # test: transpose -> (2,3)
    b2 = normal(3)
    save("wh_c2", cond2); save("wh_a2", a2); save("wh_b2", b2); save("wh_out2", np.where(cond2, a2.T, b2))
    t = normal(2, 3, 4)
    mask = np.array([[True], [False], [True]])
    save("mf_t", t); save("mf_mask", mask)
    out = t.copy(); out[:, [0, 2], :] = -np.inf
    save("mf_out", out)
    # a causal mask over a transposed t: t2 stored (4,4), the test transposes it
    t2 = normal(4, 4)
    causal = np.triu(np.ones((4, 4), dtype=bool), k=1)
    save("mf_t2", t2); save("mf_causal", causal); save("mf_out2", np.where(causal, -1e9, t2.T))


def reduction_cases():
    x = normal(3, 4, 5)
    save("rd_x", x)

    def answers(prefix, x, dims):
        for d in dims:
            axis = None if d == "all" else d
            save(f"{prefix}_sum_{d}", x.sum(axis=axis))
            save(f"{prefix}_mean_{d}", x.mean(axis=axis))
            save(f"{prefix}_max_{d}", x.max(axis=axis))
            save(f"{prefix}_min_{d}", x.min(axis=axis))
            save(f"{prefix}_argmax_{d}", x.argmax(axis=axis))   # flat C-order index for "all"
            save(f"{prefix}_argmin_{d}", x.argmin(axis=axis))
            save(f"{prefix}_var1_{d}", x.var(axis=axis, ddof=1))
            save(f"{prefix}_var0_{d}", x.var(axis=axis, ddof=0))

    answers("rd", x, [0, 1, 2, "all"])
    answers("rdp", np.transpose(x, (2, 0, 1)), [0, 1, 2, "all"])   # test: permute rd_x (2,0,1)

    # NaN and -inf: max/min propagate NaN, argmax/argmin give the first NaN, ties take the first
    y = f32([[1.0, 3.0, np.nan, 3.0, -np.inf],
             [np.nan, 2.0, 2.0, np.nan, 0.0],
             [-np.inf, -np.inf, -np.inf, -np.inf, -np.inf],
             [4.0, 4.0, -1.0, -1.0, 4.0]])
    save("rdn_x", y)
    with np.errstate(all="ignore"):
        for d in (0, 1):
            save(f"rdn_max_{d}", y.max(axis=d)); save(f"rdn_min_{d}", y.min(axis=d))
            save(f"rdn_argmax_{d}", y.argmax(axis=d)); save(f"rdn_argmin_{d}", y.argmin(axis=d))
            save(f"rdn_sum_{d}", y.sum(axis=d)); save(f"rdn_mean_{d}", y.mean(axis=d))

    # an empty dim: the sum is 0, the mean and var NaN (NumPy); max is an error (the test asserts it)
    e = np.zeros((2, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        save("rde_sum_1", e.sum(axis=1)); save("rde_mean_1", e.mean(axis=1)); save("rde_var1_1", e.var(axis=1, ddof=1))
        one = normal(3, 1)
        save("rd1_x", one); save("rd1_var1_1", one.var(axis=1, ddof=1)); save("rd1_var0_1", one.var(axis=1, ddof=0))

    # long enough to cross the 65536-element poll block and to show accumulation error
    big = uniform(0, 1, 70001)
    big[68000], big[66000] = 1.5, -0.5    # argmax/argmin past the first block, so r counts across blocks
    save("rdb_x", big); save("rdb_sum", big.sum()); save("rdb_mean", big.mean()); save("rdb_var1", big.var(ddof=1))
    save("rdb_max", big.max()); save("rdb_argmax", big.argmax()); save("rdb_argmin", big.argmin())
    save("rdb_mul3", big * np.float64(3.0)); save("rdb_exp", np.exp(big))


def join_cases():
    p0, p1, p2 = normal(2, 3), normal(2, 1), normal(2, 4)
    q0 = normal(1, 3)
    t = normal(3, 2)                           # test: transpose -> (2,3)
    save("cat_p0", p0); save("cat_p1", p1); save("cat_p2", p2); save("cat_q0", q0); save("cat_t", t)
    save("cat_d1", np.concatenate([p0, p1, p2], axis=1))
    save("cat_d0", np.concatenate([q0, p0, t.T], axis=0))
    a3, b3 = normal(2, 3, 4), normal(2, 1, 4)
    save("cat3_a", a3); save("cat3_b", b3); save("cat3_d1", np.concatenate([a3, b3, a3], axis=1))
    s0, s1, s2 = normal(2, 3), normal(2, 3), normal(3, 2)   # test: s2 transposed -> (2,3)
    save("stk_0", s0); save("stk_1", s1); save("stk_2", s2)
    for d in (0, 1, 2):
        save(f"stk_d{d}", np.stack([s0, s1, s2.T], axis=d))


def matmul_cases():
    def case(name, a_shape, b_shape, view_a=lambda a: a, view_b=lambda b: b):
        a, b = uniform(-1, 1, *a_shape), uniform(-1, 1, *b_shape)
        save(f"mm_{name}_a", a); save(f"mm_{name}_b", b)
        save(f"mm_{name}_want", np.matmul(view_a(a), view_b(b)))

    case("dot", (17,), (17,))
    case("vecmat", (7,), (7, 33))
    case("matvec", (33, 65), (65,))
    case("mm", (17, 33), (33, 65))
    case("mm_n1", (65, 7), (7, 1))
    case("mm_m1", (1, 3), (3, 17))
    case("mm_11", (1, 1), (1, 1))
    case("mm_sq", (33, 65), (65, 65))
    case("bmm", (3, 7, 17), (3, 17, 33))
    case("bcast", (2, 1, 7, 3), (3, 3, 17))
    case("fold", (3, 7, 17), (17, 33))
    case("mat_bmm", (7, 17), (2, 17, 3))
    case("vec_bmm", (17,), (3, 17, 7))
    case("bmm_vec", (3, 7, 17), (17,))
    # views built by the test:
    case("tt", (33, 17), (65, 33), lambda a: a.T, lambda b: b.T)                        # both transposed
    case("btt", (3, 17, 7), (3, 33, 17), lambda a: a.transpose(0, 2, 1), lambda b: b.transpose(0, 2, 1))
    case("nofold", (7, 3, 17), (17, 33), lambda a: a.transpose(1, 0, 2))               # batch dim not outermost
    case("nounit", (3, 17, 2), (17, 7), lambda a: a[:, :, 1])                           # select: strides (34,2)
    case("expand", (7, 17), (17, 1), view_b=lambda b: np.broadcast_to(b, (17, 33)))    # stride 0 columns
    case("colvec", (5, 17), (17, 3), lambda a: a[2, :], lambda b: b[:, 1])             # strided vectors
    save("mm_k0_want", np.matmul(np.zeros((3, 0)), np.zeros((0, 4))))


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith(".npy"):
            os.remove(os.path.join(OUT, old))
    binary_cases()
    noncontiguous_cases()
    compare_and_logic_cases()
    unary_cases()
    where_cases()
    reduction_cases()
    join_cases()
    matmul_cases()
    print(f"wrote {len(os.listdir(OUT))} files to {OUT}")


if __name__ == "__main__":
    main()
