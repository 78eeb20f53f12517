#!/usr/bin/python3
"""bench/bench_train_torch.py - one AdamW training step in torch 1.13, the same models as bench/bench_train.lua
through tests/fixtures/gen/gen_transformer.py's PyTorch copy of mha.nn.Transformer: lesson 16's induction model
(2 layers, attention only, 2 heads, d_model 32, vocab 20, batch 32 x 24) or nanoGPT's CPU configuration (4 layers,
4 heads, d_model 128, GELU MLP 512, pre-norm, vocab 65, batch 12 x 64).
Usage: bench_train_torch.py [row [threads [steps]]]; prints "torch_step_ms X", the ms per step over `steps`
steps after a warm-up (CPU time on one thread, wall time on more)."""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "gen"))
from gen_transformer import Transformer  # noqa: E402

ROWS = {
    "induction": (dict(vocab=20, d_model=32, heads=2, layers=2, d_ff=0, max_len=24, causal=True, norm="pre",
                       pos="learned"), 32, 24),
    "nanogpt": (dict(vocab=65, d_model=128, heads=4, layers=4, d_ff=512, max_len=64, causal=True, norm="pre",
                     pos="learned"), 12, 64),
}
row = sys.argv[1] if len(sys.argv) > 1 else "induction"
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 50
c, N, L = ROWS[row]

torch.set_num_threads(threads)
torch.manual_seed(0)
model = Transformer(c)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
V = c["vocab"]
tokens = torch.randint(0, V, (N, L))
targets = torch.randint(0, V, (N, L))


def step():
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


clock = time.process_time if threads == 1 else time.perf_counter
for _ in range(max(3, steps // 2)):
    step()
t0 = clock()
for _ in range(steps):
    step()
print("torch_step_ms %.3f" % ((clock() - t0) / steps * 1e3))
