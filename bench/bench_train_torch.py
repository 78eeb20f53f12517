#!/usr/bin/python3
"""bench/bench_train_torch.py - one AdamW training step of lesson 16's induction model (2 layers, attention only,
2 heads, d_model 32, vocab 20, batch 32, length 24) in torch 1.13 on one thread, the same model as
tests/fixtures/gen/gen_transformer.py's PyTorch copy of mha.nn.Transformer. Prints "torch_step_ms X"."""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "gen"))
from gen_transformer import Transformer  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
c = dict(vocab=20, d_model=32, heads=2, layers=2, d_ff=0, max_len=24, causal=True, norm="pre", pos="learned")
model = Transformer(c)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
tokens = torch.randint(0, 20, (32, 24))
targets = torch.randint(0, 20, (32, 24))


def step():
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, 20), targets.reshape(-1))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


for _ in range(20):
    step()
best = float("inf")
for _ in range(5):
    t0 = time.process_time()
    for _ in range(50):
        step()
    best = min(best, (time.process_time() - t0) / 50)
print("torch_step_ms %.3f" % (best * 1e3))
