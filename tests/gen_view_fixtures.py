#!/usr/bin/python3
# tests/gen_view_fixtures.py - records what PyTorch does when a strided tensor is viewed as another
# shape (success and the resulting strides, or failure), for tests/core/test_tensor.c to compare.
# Regenerate: /usr/bin/python3 tests/gen_view_fixtures.py > tests/fixtures/views.txt
import itertools
import torch

def fmt(xs):
    return ",".join(str(x) for x in xs) if len(xs) else "-"

def source(kind, shape):
    """A strided tensor built from a contiguous arange by one view operation."""
    base = torch.arange(float(torch.Size(shape).numel())).reshape(shape)
    if kind == "contig":
        return base, "contig"
    if kind.startswith("t"):           # transpose dims i and j
        i, j = int(kind[1]), int(kind[2])
        return base.transpose(i, j), kind
    if kind.startswith("n"):           # narrow dim i to [1, size)
        i = int(kind[1])
        return base.narrow(i, 1, shape[i] - 1), kind
    if kind == "perm":
        return base.permute(*reversed(range(len(shape)))), kind
    raise ValueError(kind)

print("# source-shape op target-shape | base strides of the view | result: ok strides / fail")
cases = [
    ((2, 3, 4), ["contig", "t01", "t12", "t02", "n1", "n2", "perm"], [(24,), (6, 4), (2, 12), (4, 3, 2), (2, 3, 2, 2), (3, 8), (1, 24), (2, 1, 12)]),
    ((4, 6), ["contig", "t01", "n0", "n1"], [(24,), (6, 4), (2, 12), (4, 3, 2), (2, 2, 6), (3, 2, 4), (24, 1)]),
    ((2, 3, 1, 4), ["contig", "t01", "t23", "n3"], [(6, 4), (2, 3, 4), (2, 12), (6, 1, 4), (24,)]),
]
for shape, kinds, targets in cases:
    for kind in kinds:
        src, name = source(kind, shape)
        for tgt in targets:
            if torch.Size(tgt).numel() != src.numel():
                continue
            try:
                v = src.view(*tgt)
                res = "ok " + fmt(v.stride())
            except RuntimeError:
                res = "fail"
            print(f"{fmt(shape)} {name} {fmt(tgt)} | {fmt(src.stride())} | {res}")
