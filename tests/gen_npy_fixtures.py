#!/usr/bin/python3
"""tests/gen_npy_fixtures.py - makes the fixtures of tests/core/test_npy.c and test_rng.c with numpy 1.24
and torch 1.13 (run with Debian's /usr/bin/python3), so `make test` needs no Python.

    /usr/bin/python3 tests/gen_npy_fixtures.py        # rewrites tests/fixtures/npy/

What it writes into tests/fixtures/npy/:
  load_*.npy    numpy-made files of every dtype, byte order, format version and memory order mha reads;
  save_*.npy    np.save of float32/bool C-order arrays, which mha_npy_save must reproduce byte for byte;
  bad_*.npy     numpy-made files mha must refuse (complex, objects, strings, records, dates, 9 dims);
  manifest.txt  one line per load_/save_ file:  name kind ndim dims... count values...
                kind is f32 or bool; values are what numpy's astype(float32) gives, in C order, written
                as Python reprs (exact for float32), so the C test checks them without reading any .npy;
  rng_seed<S>.npy  the float32 values of a fixed sequence of calls after mha_seed(S), computed here by an
                independent Python implementation of the generator documented at the top of core/rng.c;
  xavier.npy    (k, 2) float64: PyTorch's Xavier bound and std for the shapes XAVIER_SHAPES, with fans from
                torch.nn.init._calculate_fan_in_and_fan_out.
"""
import math
import os
import struct

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "npy")
MASK64 = (1 << 64) - 1

# ------------------------------------------------------------------------------------------------
# The generator of core/rng.c, written again from its description: xoshiro256** seeded by splitmix64.


class Generator:
    def __init__(self, seed):
        x = seed & MASK64
        self.s = []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & MASK64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
            self.s.append(z ^ (z >> 31))

    @staticmethod
    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & MASK64

    def next(self):
        s = self.s
        result = (self.rotl((s[1] * 5) & MASK64, 7) * 9) & MASK64
        t = (s[1] << 17) & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = self.rotl(s[3], 45)
        return result

    def u24(self):
        return (self.next() >> 40) / 2.0**24

    def u53(self):
        return (self.next() >> 11) / 2.0**53

    def uniform(self, n, lo, hi):
        lo, hi = float(np.float32(lo)), float(np.float32(hi))
        out = []
        for _ in range(n):
            v = np.float32(lo + (hi - lo) * self.u24())
            if v >= hi and hi > lo:
                v = np.nextafter(np.float32(hi), np.float32(-np.inf))
            out.append(v)
        return out

    def normal(self, n, mean, std):
        out = []
        for i in range(0, n, 2):
            u1, u2 = self.u53(), self.u53()
            r = math.sqrt(-2.0 * math.log(1.0 - u1))
            out.append(np.float32(mean + std * (r * math.cos(2.0 * math.pi * u2))))
            if i + 1 < n:
                out.append(np.float32(mean + std * (r * math.sin(2.0 * math.pi * u2))))
        return out


def torch_fans(shape):
    return torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))


def rng_sequence(seed):
    """The calls test_rng.c makes after mha_seed(seed), in order, their values concatenated."""
    g = Generator(seed)
    values = []
    values += g.uniform(5, 0.0, 1.0)                    # rand (5)
    values += g.normal(7, 0.0, 1.0)                     # randn (7): odd, the last sine is dropped
    values += g.uniform(6, 0.0, 1.0)                    # rand (2,3)
    values += g.uniform(4, -2.0, 3.0)                   # uniform_ (4) on [-2, 3)
    values += g.normal(5, 1.0, 0.5)                     # normal_ (5) mean 1 std 0.5
    fan_in, fan_out = torch_fans((3, 4))
    a = float(np.float32(1.0 * math.sqrt(6.0 / (fan_in + fan_out))))
    values += g.uniform(12, -a, a)                      # xavier_uniform_ (3,4) gain 1
    fan_in, fan_out = torch_fans((2, 3, 2))
    values += g.normal(12, 0.0, float(np.float32(2.0)) * math.sqrt(2.0 / (fan_in + fan_out)))  # xavier_normal_ (2,3,2) gain 2
    values += g.normal(1, 0.0, 1.0)                     # randn () : a scalar takes one pair
    values += g.uniform(3, 0.0, 1.0)                    # rand (3)
    return np.array(values, dtype=np.float32)


XAVIER_SHAPES = [(300, 200), (16, 8, 3, 3), (5, 40, 7)]
XAVIER_GAIN = 1.5


def xavier_table():
    rows = []
    for shape in XAVIER_SHAPES:
        fan_in, fan_out = torch_fans(shape)
        std = XAVIER_GAIN * math.sqrt(2.0 / float(fan_in + fan_out))   # torch.nn.init.xavier_normal_
        rows.append((math.sqrt(3.0) * std, std))                         # xavier_uniform_ bound, std
    return np.array(rows, dtype=np.float64)


# ------------------------------------------------------------------------------------------------
# .npy fixtures

manifest = []


def record(name, arr):
    """Add name's expected C-order values (as numpy converts them) to the manifest."""
    kind = "bool" if arr.dtype == np.bool_ else "f32"
    flat = np.ascontiguousarray(arr).reshape(-1)
    if kind == "bool":
        vals = ["1" if v else "0" for v in flat]
    else:
        with np.errstate(over="ignore"):  # float64 beyond float32's range becomes inf, as intended
            vals = [repr(float(v)) for v in flat.astype(np.float32)]
    fields = [name, kind, str(arr.ndim)] + [str(d) for d in arr.shape] + [str(flat.size)] + vals
    manifest.append(" ".join(fields))


def save(name, arr, version=None):
    path = os.path.join(OUT, name)
    if version is None:
        np.save(path, arr)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, arr, version=version)
    return name


def load_fixture(name, arr, version=None):
    record(save(name, arr, version), arr)


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith(".npy") or f == "manifest.txt":
            os.remove(os.path.join(OUT, f))

    base = (np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 11.5) / 7.0
    # floats
    load_fixture("load_f4_le.npy", base.astype("<f4"))
    load_fixture("load_f4_be.npy", base.astype(">f4"))
    special = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-40, 3.4e38, 1e300, -1e300, 1e-320])
    load_fixture("load_f8_le.npy", special.astype("<f8"))
    load_fixture("load_f8_be.npy", special.reshape(3, 4).astype(">f8"))
    halfs = np.array([0.0, -0.0, 1.0, -2.5, 65504.0, 6e-8, 6.1e-5, np.inf, -np.inf, np.nan, 0.333, 1000.5])
    load_fixture("load_f2_le.npy", halfs.astype("<f2"))
    load_fixture("load_f2_be.npy", halfs.reshape(2, 6).astype(">f2"))
    # integers of every size and both byte orders, extremes included
    for kind in "iu":
        for size in (1, 2, 4, 8):
            info = np.iinfo(np.dtype("%s%d" % (kind, size)))
            vals = [info.min, info.min + 1, 0, 1, 2, 100, info.max - 1, info.max]
            if size == 8:
                vals += [2**53 + 1, 2**24 + 1, 123456789012345678] + ([-(2**53) - 1] if kind == "i" else [])
            orders = ("|",) if size == 1 else ("<", ">")
            for order in orders:
                dt = np.dtype("%s%s%d" % (order, kind, size))
                arr = np.array(vals, dtype=dt)
                tag = {"|": "", "<": "_le", ">": "_be"}[order]
                load_fixture("load_%s%d%s.npy" % (kind, size, tag), arr.reshape(2, -1) if len(vals) % 2 == 0 else arr)
    # bool
    flags = np.array([[True, False, True], [False, False, True]])
    load_fixture("load_b1.npy", flags)
    # Fortran order
    load_fixture("load_f4_fortran_3d.npy", np.asfortranarray(base.astype("<f4")))
    load_fixture("load_i2_fortran_be.npy", np.asfortranarray((np.arange(12).reshape(3, 4) * 37 - 200).astype(">i2")))
    load_fixture("load_b1_fortran.npy", np.asfortranarray(np.arange(24).reshape(2, 3, 4) % 3 == 0))
    load_fixture("load_f8_fortran_4d.npy", np.asfortranarray(np.arange(120, dtype="<f8").reshape(2, 3, 4, 5) / 8))
    # format versions 2.0 and 3.0
    load_fixture("load_v2_f4.npy", base.astype("<f4"), version=(2, 0))
    load_fixture("load_v3_f4.npy", base.astype("<f4"), version=(3, 0))
    load_fixture("load_v2_b1_fortran.npy", np.asfortranarray(flags), version=(2, 0))
    load_fixture("load_v3_u2_be.npy", np.arange(6, dtype=">u2").reshape(3, 2) * 1000, version=(3, 0))
    # shapes: scalars, 1-D, empty, 8-D
    load_fixture("load_scalar_f4.npy", np.float32(-7.25).reshape(()))
    load_fixture("load_scalar_b1.npy", np.array(True))
    load_fixture("load_scalar_i8.npy", np.array(-3, dtype="<i8"))
    load_fixture("load_1d_f8.npy", np.linspace(-1, 1, 5))
    load_fixture("load_empty_0.npy", np.zeros((0,), dtype="<f4"))
    load_fixture("load_empty_2x0x3.npy", np.zeros((2, 0, 3), dtype="<i4"))
    load_fixture("load_8d.npy", np.arange(16, dtype="<f4").reshape(1, 2, 1, 2, 1, 2, 1, 2))

    # what np.save writes for float32 and bool, C order: mha_npy_save must give the same bytes
    rnd = np.random.default_rng(1234)
    load_fixture("save_scalar_f4.npy", np.array(2.5, dtype=np.float32))
    load_fixture("save_scalar_b1.npy", np.array(False))
    load_fixture("save_1d_f4.npy", np.array([1.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4028235e38], dtype=np.float32))
    load_fixture("save_3x4_f4.npy", rnd.standard_normal((3, 4)).astype(np.float32))
    a34 = np.load(os.path.join(OUT, "save_3x4_f4.npy"))
    load_fixture("save_4x3_transposed_f4.npy", np.ascontiguousarray(a34.T))
    load_fixture("save_2x3x4_f4.npy", rnd.standard_normal((2, 3, 4)).astype(np.float32))
    load_fixture("save_8d_f4.npy", rnd.standard_normal((2, 1, 2, 1, 2, 1, 2, 1)).astype(np.float32))
    load_fixture("save_3x4_b1.npy", rnd.standard_normal((3, 4)) > 0)
    load_fixture("save_empty_0_f4.npy", np.zeros((0,), dtype=np.float32))
    load_fixture("save_empty_long_first_dim_f4.npy", np.zeros((12345678901, 0), dtype=np.float32))
    load_fixture("save_empty_long_last_dim_b1.npy", np.zeros((0, 98765432109876), dtype=np.bool_))
    load_fixture("save_1000_f4.npy", rnd.standard_normal(1000).astype(np.float32))

    # files mha must refuse: the C test checks the message of each
    save("bad_c8.npy", np.array([1 + 2j, 3 - 1j], dtype="<c8"))
    save("bad_object.npy", np.array([1, "two", None], dtype=object))
    save("bad_unicode.npy", np.array(["abc", "de"], dtype="<U3"))
    save("bad_record.npy", np.zeros(2, dtype=[("x", "<f4"), ("y", "<i2")]))
    save("bad_datetime.npy", np.array(["2024-01-02"], dtype="<M8[D]"))
    save("bad_9d.npy", np.zeros((1,) * 9, dtype="<f4"))

    # the generator
    for seed in (42, 0, MASK64):
        np.save(os.path.join(OUT, "rng_seed%d.npy" % seed), rng_sequence(seed))
    np.save(os.path.join(OUT, "xavier.npy"), xavier_table())

    with open(os.path.join(OUT, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    print("wrote %d manifest entries and the rng/xavier/bad fixtures into %s" % (len(manifest), OUT))


if __name__ == "__main__":
    main()
