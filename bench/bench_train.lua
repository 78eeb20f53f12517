-- bench/bench_train.lua - one AdamW training step (forward, masked loss, backward, clip, step) of lesson 16's
-- induction model in mha-repl, beside the same step in torch 1.13 (`make bench-train`; arg[1] is the command
-- that runs bench/bench_train_torch.py). CPU time per step, best of 5 rounds of 50 steps, one thread.

local torch_cmd = arg and arg[1]
mha.seed(0)
local model = mha.nn.Transformer{vocab = 20, d_model = 32, heads = 2, layers = 2, d_ff = 0, max_len = 24}
local task = mha.tasks.induction{vocab = 20, len = 24, batch = 32}
local params = model:parameters()
local opt = mha.optim.AdamW(params, {lr = 1e-2, weight_decay = 0.01})
local tokens, targets = task:batch()

local function step()
    local loss = mha.train.loss(model:forward(tokens, {need_weights = false}), targets)
    opt:zero_grad()
    loss:backward()
    mha.clip_grad_norm(params, 1.0)
    opt:step()
end

for _ = 1, 20 do step() end
local best = math.huge
for _ = 1, 5 do
    local t0 = os.clock()
    for _ = 1, 50 do step() end
    best = math.min(best, (os.clock() - t0) / 50)
end
local ours = best * 1e3
local theirs
if torch_cmd then
    local p = io.popen(torch_cmd)
    local out = p and p:read("a") or ""
    if p then p:close() end
    theirs = tonumber(out:match("torch_step_ms ([%d.]+)"))
end
print(string.format("training step, induction model (2 layers attn-only, d_model 32, 2 heads, batch 32 x 24), 1 thread, kernels \"%s\"",
    (mha.isa())))
print(string.format("%-28s %10s %10s %8s", "row", "mha ms", "torch ms", "ratio"))
print(string.format("%-28s %10.3f %10s %8s", "train_step_induction", ours, theirs and string.format("%.3f", theirs) or "-",
                    theirs and string.format("%.2f", ours / theirs) or "-"))
