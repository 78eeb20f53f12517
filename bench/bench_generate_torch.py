#!/usr/bin/python3
"""bench/bench_generate_torch.py - generation with a KV cache in torch 1.13 on one thread: the
loops bench/bench_generate.lua times in mha-repl, each beside its own.

    bench_generate_torch.py          greedy, 256 tokens, from the model of bench_generate.lua
                                     (gen_transformer.py's PyTorch copy of mha.nn.Transformer:
                                     4 layers, d_model 128, 4 heads, d_ff 512, pre-norm, learned
                                     positions), one token at a time with each layer's K and V
                                     kept, as model:generate does. Prints "torch_gen_ms X".
    bench_generate_torch.py char_en  mha.generate's loop on the shipped models/char_en.npz:
                                     the prompt PROMPT read at once, then 256 characters drawn at
                                     temperature 1 from the top TOP_K, each read alone; when the
                                     context of 64 is full, a fresh cache reads the last 32 again.
                                     Prints "torch_char_en_ms X" (CPU ms, best of 3).
"""
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fixtures", "gen"))
from gen_transformer import Transformer  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
NEW = 256
PROMPT, TOP_K = "In the beginning", 10


def step(model, tokens, pos, cache):
    """The logits (L, vocab) of tokens (L ids) at positions pos.. pos+L-1, each seeing the cache and
    the tokens before it; cache: per layer [K (H,S,D), V (H,S,D)], extended in place."""
    c = model.c
    H, E = c["heads"], c["d_model"]
    D, L = E // H, len(tokens)
    x = model.embed.weight[tokens] + model.pos.weight[pos:pos + L]          # (L, E)
    mask = None
    if L > 1:   # query i sees the cache and new keys 0..i
        mask = torch.ones(L, L, dtype=torch.bool).triu(1)
        mask = torch.cat([torch.zeros(L, pos, dtype=torch.bool), mask], 1)   # (L, S)
    for layer, kv in zip(model.layers, cache):
        qkv = F.linear(layer.ln1(x), layer.attn.in_proj_weight, layer.attn.in_proj_bias)  # (L, 3E)
        q, k, v = qkv.view(L, 3, H, D).permute(1, 2, 0, 3)                  # each (H, L, D)
        kv[0] = k if kv[0] is None else torch.cat([kv[0], k], 1)
        kv[1] = v if kv[1] is None else torch.cat([kv[1], v], 1)
        scores = q @ kv[0].transpose(1, 2) / D ** 0.5                        # (H, L, S)
        if mask is not None:
            scores = scores.masked_fill(mask, -float("inf"))
        a = (torch.softmax(scores, -1) @ kv[1]).transpose(0, 1).reshape(L, E)
        x = x + layer.attn.out_proj(a)
        x = x + layer.mlp(layer.ln2(x))
    return model.unembed(model.ln_f(x))


def timed(fn):
    """CPU ms of fn, best of 3 after one warm-up."""
    with torch.no_grad():
        fn()
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
    return best * 1e3


def greedy():
    c = dict(vocab=64, d_model=128, heads=4, layers=4, d_ff=512, max_len=512, causal=True,
             norm="pre", pos="learned")
    model = Transformer(c).eval()

    def generate():
        cache = [[None, None] for _ in model.layers]
        tokens = [0]
        for pos in range(NEW):
            tokens.append(int(step(model, tokens[-1:], pos, cache)[-1].argmax()))
        return tokens

    print("torch_gen_ms %.3f" % timed(generate))


def char_en():
    z = np.load(os.path.join(HERE, "..", "models", "char_en.npz"))
    c = dict(vocab=int(z["config.vocab"][0]), d_model=128, heads=4, layers=4, d_ff=512, max_len=64,
             causal=True, norm="pre", pos="learned")
    model = Transformer(c).eval()
    model.load_state_dict({k: torch.from_numpy(z[k]) for k in model.state_dict()})
    chars = "".join(map(chr, z["tokenizer.codepoints"].astype(np.int64)))
    prompt = [chars.index(ch) for ch in PROMPT]
    ctx = c["max_len"]

    def draw(logits):
        top, idx = torch.topk(logits, TOP_K)
        return int(idx[torch.multinomial(torch.softmax(top, -1), 1)])

    def generate():
        tokens = list(prompt)
        cache = [[None, None] for _ in model.layers]
        logits, used = step(model, tokens, 0, cache), len(tokens)
        for n in range(NEW):
            tokens.append(draw(logits[-1]))
            if n == NEW - 1:
                break
            if used == ctx:   # the context is full: a fresh cache reads the last half again
                keep = tokens[-(ctx // 2):]
                cache = [[None, None] for _ in model.layers]
                logits, used = step(model, keep, 0, cache), len(keep)
            else:
                logits = step(model, tokens[-1:], used, cache)
                used += 1
        return tokens

    print("torch_char_en_ms %.3f" % timed(generate))


if __name__ == "__main__":
    char_en() if sys.argv[1:] == ["char_en"] else greedy()
