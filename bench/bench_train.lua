-- bench/bench_train.lua - one AdamW training step (forward, masked loss, backward, clip, step) of lesson 16's
-- induction model and of nanoGPT's CPU configuration in mha-repl, beside the same steps in torch 1.13
-- (`make bench-train`; arg[1] is the command that runs bench/bench_train_torch.py, which takes the row's
-- name, the thread count and the steps to time). Ours and torch's are timed in turn, round after round, so
-- a shared machine's load falls on both alike, each after the same warm-up; each row prints the median of the
-- rounds.
-- One thread is timed by CPU time, every core by wall time (CPU time adds up the threads).
-- usage: bench_train.lua TORCH_COMMAND [--fair COMMAND] [--save FILE]
--   --fair: torch's command told the kernel OpenBLAS should have chosen here (the Makefile passes it
--   when OpenBLAS fell back to its generic one; "" for none), timed in each round of the 1-thread
--   rows too: "fair ms", "ours/fair"
--   --save: also write "row ID key=value..." lines (bench/table.lua reads them)

local parse_args = dofile((arg and arg[0] or ""):match("^(.*)/") .. "/args.lua")
local opts, positional = parse_args(arg, {"fair", "save"})
local torch_cmd, fair_cmd, save_path = positional[#positional], opts.fair, opts.save
-- BENCH_TRAIN_ROUNDS (5), BENCH_TRAIN_ONLY (a row's name), BENCH_TRAIN_THREADS (1: one thread only)
local ROUNDS = tonumber(os.getenv("BENCH_TRAIN_ROUNDS") or "") or 5
local ONLY = os.getenv("BENCH_TRAIN_ONLY")

-- The rows: the model, the batch (N, L) and the steps per timed round.
local ROWS = {
    {name = "induction", steps = 50, N = 32, L = 24,
     title = "induction model (2 layers attn-only, d_model 32, 2 heads, batch 32 x 24)",
     model = {vocab = 20, d_model = 32, heads = 2, layers = 2, d_ff = 0, max_len = 24}},
    {name = "nanogpt", steps = 5, N = 12, L = 64,
     title = "nanoGPT's CPU configuration (4 layers, 4 heads, d_model 128, GELU MLP 512, pre-norm, vocab 65, " ..
             "batch 12 x 64)",
     model = {vocab = 65, d_model = 128, heads = 4, layers = 4, max_len = 64, norm = "pre"}},
}

-- A step function over a fresh model and one fixed batch of random tokens (ids 1..vocab).
local function make_step(row)
    mha.seed(0)
    local model = mha.nn.Transformer(row.model)
    local params = model:parameters()
    local opt = mha.optim.AdamW(params, {lr = 1e-3, weight_decay = 0.01})
    local V = row.model.vocab
    local function ids()
        local t = {}
        for i = 1, row.N do
            t[i] = {}
            for j = 1, row.L do t[i][j] = math.random(V) end
        end
        return mha.tensor(t)
    end
    math.randomseed(0)
    local tokens, targets = ids(), ids()
    return function()
        local loss = mha.train.loss(model:forward(tokens, {need_weights = false}), targets)
        opt:zero_grad()
        loss:backward()
        mha.clip_grad_norm(params, 1.0)
        opt:step()
    end
end

local function median(xs)
    local s = {}
    for i, x in ipairs(xs) do s[i] = x end
    table.sort(s)
    local n = #s
    if n == 0 then return nil end
    return n % 2 == 1 and s[(n + 1) // 2] or (s[n // 2] + s[n // 2 + 1]) / 2
end

-- torch's ms per step for one round: its process builds the same model, warms up and times `steps`.
local function torch_round(cmd, row, threads)
    if not cmd then return nil end
    local p = io.popen(string.format("%s %s %d %d", cmd, row.name, threads, row.steps))
    local out = p and p:read("a") or ""
    if p then p:close() end
    return tonumber(out:match("torch_step_ms ([%d.]+)"))
end

local function load_average()
    local f = io.open("/proc/loadavg")
    local s = f and f:read("l") or "?"
    if f then f:close() end
    return s:match("^(%S+ %S+ %S+)") or s
end

local cores = mha.threads()
print(string.format("training steps, AdamW (forward, loss, backward, clip 1.0, step), kernels \"%s\", %d core(s), " ..
                    "load average %s", (mha.isa()), cores, load_average()))
print(string.format("ours and torch 1.13 timed in turn, %d rounds, median ms per step; 1 thread by CPU time, " ..
                    "%d threads by wall time", ROUNDS, cores))
for _, row in ipairs(ROWS) do print(string.format("  %-10s %s", row.name, row.title)) end
if fair_cmd then print("  fair: torch told the kernel OpenBLAS should have chosen on this CPU, timed in the same rounds") end
print(string.format("%-24s %8s %10s %10s %8s %10s %9s %16s", "row", "threads", "mha ms", "torch ms", "ratio",
                    "fair ms", "ours/fair", "mha min-max"))
local save = save_path and assert(io.open(save_path, "w"))
local function fmt(x, f) return x and string.format(f, x) or "-" end
local thread_counts = (cores > 1 and os.getenv("BENCH_TRAIN_THREADS") ~= "1") and {1, cores} or {1}
for _, row in ipairs(ROWS) do
    if ONLY and row.name ~= ONLY then goto next_row end
    local step = make_step(row)
    for _, threads in ipairs(thread_counts) do
        mha.threads(threads)
        local clock = threads == 1 and os.clock or mha.clock
        local ours, theirs, fairs = {}, {}, {}
        for r = 1, ROUNDS do
            -- warmed up in every round, as torch's process is before it times its steps: the
            -- round before ran torch, whose memory took the caches
            for _ = 1, math.max(3, row.steps // 2) do step() end
            collectgarbage()
            local t0 = clock()
            for _ = 1, row.steps do step() end
            ours[r] = (clock() - t0) / row.steps * 1e3
            theirs[#theirs + 1] = torch_round(torch_cmd, row, threads)
            -- the fair peer on one thread only: on every core torch's OpenMP threads spin while
            -- they wait for a core, and a loaded machine's 2-thread rows measure its other work
            if threads == 1 then fairs[#fairs + 1] = torch_round(fair_cmd, row, threads) end
        end
        local m, t, f = median(ours), median(theirs), median(fairs)
        table.sort(ours)
        print(string.format("%-24s %8d %10.2f %10s %8s %10s %9s %7.2f-%-8.2f", "train_step_" .. row.name, threads, m,
                            fmt(t, "%.2f"), fmt(t and m / t, "%.2f"), fmt(f, "%.2f"), fmt(f and m / f, "%.2f"),
                            ours[1], ours[#ours]))
        if save then
            save:write(string.format("row train_%s_%d ours=%.4f torch=%.4f fair_torch=%.4f threads=%d\n", row.name,
                                     threads, m, t or 0 / 0, f or 0 / 0, threads))
        end
    end
    ::next_row::
end
mha.threads(cores)
if save then save:close() end
print(string.format("load average after: %s", load_average()))
