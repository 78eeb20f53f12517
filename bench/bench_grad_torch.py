#!/usr/bin/python3
# bench/bench_grad_torch.py - torch 1.13's side of bench_grad: nn.MultiheadAttention (E=512, H=8, batch_first)
# forward + backward on x (1,L,512) requiring grad, need_weights=False, loss = mean(out²); one thread; prints
# "L median_ms" (median of 5 runs after one warm-up, CPU time as bench_grad.c) for each L given as an argument
# (default 512 and 2048),
# as bench_grad.c reads them.
import sys
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
m = torch.nn.MultiheadAttention(512, 8, batch_first=True)
for L in [int(a) for a in sys.argv[1:]] or [512, 2048]:
    x = torch.randn(1, L, 512, requires_grad=True)

    def step():
        out, _ = m(x, x, x, need_weights=False)
        (out * out).mean().backward()
        x.grad = None
        m.zero_grad(set_to_none=True)

    step()
    runs = []
    for _ in range(5):
        t0 = time.process_time()
        step()
        runs.append((time.process_time() - t0) * 1e3)
    runs.sort()
    print(L, "%.3f" % runs[2], flush=True)
