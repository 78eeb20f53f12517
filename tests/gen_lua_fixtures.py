#!/usr/bin/python3
# tests/gen_lua_fixtures.py - writes tests/fixtures/lua/*.npy: inputs and NumPy answers that the Lua tests
# (tests/lua/test_ops.lua, test_npy.lua) hold the bindings to, in Lua's conventions (1-based indices).
#
# Regenerate with Debian's python (numpy): /usr/bin/python3 tests/gen_lua_fixtures.py
# Seeded, so a rerun writes identical files; they are committed, `make test` runs no Python.
# Answers are computed in float64 from the float32 inputs, then rounded to float32.
# Each answer's name says the Lua expression test_ops.lua evaluates; the two files must agree.
import math
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "lua")
rng = np.random.default_rng(5404)


def save(name, array):
    array = np.asarray(array)
    if array.dtype != np.bool_:
        array = array.astype(np.float32)
    np.save(os.path.join(OUT, name + ".npy"), np.ascontiguousarray(array))


def f32(shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(np.float64)


def main():
    os.makedirs(OUT, exist_ok=True)
    x = f32((3, 4, 5))        # the main operand
    y = f32((4, 5))           # broadcasts against x from the right
    z = f32((3, 1, 5))        # broadcasts along dim 2
    p = np.abs(f32((3, 4, 5))) + 0.25  # positive, for log, sqrt, pow, division
    for name, value in [("x", x), ("y", y), ("z", z), ("p", p)]:
        save(name, value)

    # metamethods and arithmetic, both orders with numbers
    save("x_add_y", x + y)
    save("z_sub_x", z - x)
    save("x_mul_z", x * z)
    save("x_div_p", x / p)
    save("p_pow_y", p ** y)
    save("x_add_2_5", x + 2.5)
    save("two_sub_x", 2 - x)
    save("three_mul_x", 3 * x)
    save("one_div_p", 1 / p)
    save("p_pow_2", p ** 2)
    save("neg_x", -x)
    save("maximum_x_y", np.maximum(x, y))
    save("minimum_x_z", np.minimum(x, z))

    # unary functions
    save("exp_x", np.exp(x))
    save("log_p", np.log(p))
    save("sqrt_p", np.sqrt(p))
    save("tanh_x", np.tanh(x))
    save("relu_x", np.maximum(x, 0))
    save("gelu_x", 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))))
    save("sigmoid_x", 1 / (1 + np.exp(-x)))
    save("abs_x", np.abs(x))

    # comparisons -> bool
    save("x_gt_y", x > y)
    save("x_le_0", x <= 0)
    save("x_eq_x", x == x)

    # reductions: Lua dim d (1-based) is numpy axis d-1; -1 is the last
    save("sum_all", np.sum(x))
    save("sum_d1", np.sum(x, axis=0))
    save("sum_d2_keep", np.sum(x, axis=1, keepdims=True))
    save("mean_dm1", np.mean(x, axis=-1))
    save("var_d2", np.var(x, axis=1, ddof=1))
    save("var_d3_c0", np.var(x, axis=2, ddof=0))
    save("max_d3_values", np.max(x, axis=2))
    save("max_d3_indices", np.argmax(x, axis=2) + 1)
    save("min_d1_values_keep", np.min(x, axis=0, keepdims=True))
    save("min_d1_indices_keep", np.argmin(x, axis=0)[np.newaxis] + 1)
    save("argmax_dm2", np.argmax(x, axis=1) + 1)
    save("argmax_all", np.float32(np.argmax(x) + 1))
    save("max_all", np.max(x))

    # softmax along every dim
    for axis, lua in [(0, "1"), (1, "2"), (2, "m1")]:
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        save("softmax_" + lua, e / e.sum(axis=axis, keepdims=True))

    # matmul with batch broadcasting
    a = f32((2, 3, 4))
    b = f32((4, 5))
    c = f32((2, 1, 3, 4))
    d = f32((3, 4, 2))
    v = f32((4,))
    save("mm_a", a)
    save("mm_b", b)
    save("mm_c", c)
    save("mm_d", d)
    save("mm_v", v)
    save("mm_a_b", a @ b)
    save("mm_c_d", c @ d)
    save("mm_a_v", a @ v)
    save("mm_aT_a", np.swapaxes(a, 1, 2) @ a)  # a:transpose(2, 3):matmul(a), a non-contiguous operand

    # joining and splitting
    w = f32((3, 2, 5))
    save("w", w)
    save("cat_x_w_d2", np.concatenate([x, w], axis=1))
    save("stack_x_x_d1", np.stack([x, x], axis=0))
    save("stack_y_y_dm1", np.stack([y, y], axis=-1))
    for i, piece in enumerate(np.split(x, [2, 4], axis=1)):  # x:split(2, 2): sizes 2, 2 of dim 2 (size 4)
        save("split_x_2_d2_%d" % (i + 1), piece)
    for i, piece in enumerate(np.array_split(x, [2, 4], axis=2)):  # x:chunk(3, -1): sizes 2, 2, 1
        save("chunk_x_3_dm1_%d" % (i + 1), piece)

    # where and masked_fill
    mask = rng.random((4, 5)) < 0.3
    save("mask", mask)
    save("where_mask_x_y", np.where(mask, x, y))
    save("where_mask_x_0", np.where(mask, x, 0.0))
    save("masked_fill_x_mask_m7", np.where(mask, -7.0, x))

    # views: what a permuted/narrowed/selected tensor holds, and their contiguous copies
    save("permute_x_3_1_2", np.transpose(x, (2, 0, 1)))
    save("narrow_x_d3_2_3", x[:, :, 1:4])
    save("select_x_d2_m1", x[:, -1, :])
    save("transpose_x_1_3_reshape", np.swapaxes(x, 0, 2).reshape(5, 12))

    # layer norm over the last dim, with weight and bias
    gamma = f32((5,))
    beta = f32((5,))
    save("ln_weight", gamma)
    save("ln_bias", beta)
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    save("layer_norm_x", (x - mu) / np.sqrt(var + 1e-5) * gamma + beta)

    # npy interchange: files numpy wrote that mha.load must read
    save("np_float32_2x3", np.arange(6, dtype=np.float32).reshape(2, 3) / 4)
    np.save(os.path.join(OUT, "np_float64_3.npy"), np.array([1.5, -2.25, 1e-3], dtype=np.float64))
    np.save(os.path.join(OUT, "np_int32_2x2.npy"), np.array([[1, -2], [3, 40000]], dtype=np.int32))
    np.save(os.path.join(OUT, "np_bool_3.npy"), np.array([True, False, True]))
    np.save(os.path.join(OUT, "np_scalar.npy"), np.array(3.25, dtype=np.float32))


if __name__ == "__main__":
    main()
