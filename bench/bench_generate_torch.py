#!/usr/bin/python3
"""bench/bench_generate_torch.py - greedy generation of 256 tokens with a KV cache in torch 1.13 on one
thread: the model of bench/bench_generate.lua (tests/fixtures/gen/gen_transformer.py's PyTorch copy of
mha.nn.Transformer: 4 layers, d_model 128, 4 heads, d_ff 512, pre-norm, learned positions), decoded
one token at a time with each layer's K and V kept, as model:generate does. Prints "torch_gen_ms X"."""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "gen"))
from gen_transformer import Transformer  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
NEW = 256
c = dict(vocab=64, d_model=128, heads=4, layers=4, d_ff=512, max_len=512, causal=True, norm="pre", pos="learned")
model = Transformer(c).eval()
H, E = c["heads"], c["d_model"]
D = E // H


def step(token, pos, cache):
    """The logits (vocab) of one new token at position pos; cache: per layer [K (H,S,D), V (H,S,D)]."""
    x = model.embed.weight[token] + model.pos.weight[pos]            # (E)
    for layer, kv in zip(model.layers, cache):
        a_in = layer.ln1(x)
        qkv = F.linear(a_in, layer.attn.in_proj_weight, layer.attn.in_proj_bias)   # (3E)
        q, k, v = qkv.view(3, H, 1, D)
        kv[0] = k if kv[0] is None else torch.cat([kv[0], k], 1)
        kv[1] = v if kv[1] is None else torch.cat([kv[1], v], 1)
        w = torch.softmax(q @ kv[0].transpose(1, 2) / D ** 0.5, -1)       # (H,1,S)
        a = (w @ kv[1]).reshape(E)
        x = x + layer.attn.out_proj(a)
        x = x + layer.mlp(layer.ln2(x))
    return model.unembed(model.ln_f(x))


def generate():
    cache = [[None, None] for _ in model.layers]
    tokens = [0]
    for pos in range(NEW):
        tokens.append(int(step(tokens[-1], pos, cache).argmax()))
    return tokens


with torch.no_grad():
    generate()
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        generate()
        best = min(best, time.process_time() - t0)
print("torch_gen_ms %.3f" % (best * 1e3))
