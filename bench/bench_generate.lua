-- bench/bench_generate.lua - greedy generation of 256 tokens by model:generate, with the KV cache
-- and without it, and characters per second of mha.generate on the shipped char_en (a prompt and
-- 256 new characters, temperature 1, top_k 10), each beside the same cached loop in torch 1.13
-- (`make bench-generate`; arg[1] is the command that runs bench/bench_generate_torch.py, which
-- takes "char_en" for the second). CPU time of the best of 3 runs, one thread.
-- usage: bench_generate.lua TORCH_COMMAND [--fair COMMAND] [--save FILE]
--   --fair: torch's command told the kernel OpenBLAS should have chosen here (the Makefile passes it
--   when OpenBLAS fell back to its generic one; "" for none): "fair ms", "ours/fair"
--   --save: also write "row ID key=value..." lines (bench/table.lua reads them)

local parse_args = dofile((arg and arg[0] or ""):match("^(.*)/") .. "/args.lua")
local opts, positional = parse_args(arg, {"fair", "save"})
local torch_cmd, fair_cmd, save_path = positional[#positional], opts.fair, opts.save
local NEW = 256
mha.seed(0)
local model = mha.nn.Transformer{vocab = 64, d_model = 128, heads = 4, layers = 4, max_len = 512}

local function time_of(cache)
    local opts = {max_new_tokens = NEW, temperature = 0, cache = cache}
    model:generate({1}, opts)
    local best = math.huge
    for _ = 1, 3 do
        local t0 = os.clock()
        model:generate({1}, opts)
        best = math.min(best, os.clock() - t0)
    end
    return best * 1e3
end

-- CPU ms of mha.generate on char_en, best of 3 after a warm-up; nil when char_en is not shipped.
local PROMPT, TOP_K = "In the beginning", 10   -- as bench_generate_torch.py's
local function char_en_ms()
    local ok, m, extra = pcall(mha.load_model, "char_en")
    if not ok then return nil end
    local opts = {max_new_tokens = NEW, temperature = 1, top_k = TOP_K, seed = 1, stream = false}
    mha.generate(m, extra.tokenizer, PROMPT, opts)
    local best = math.huge
    for _ = 1, 3 do
        local t0 = os.clock()
        mha.generate(m, extra.tokenizer, PROMPT, opts)
        best = math.min(best, os.clock() - t0)
    end
    return best * 1e3
end

-- The number torch's script, run by cmd with args, prints after key; nil without torch.
local function torch_ms(cmd, key, args)
    if not cmd then return nil end
    local p = io.popen(cmd .. args)
    local out = p and p:read("a") or ""
    if p then p:close() end
    return tonumber(out:match(key .. " ([%d.]+)"))
end

local cached, uncached = time_of(true), time_of(false)
local theirs, fair = torch_ms(torch_cmd, "torch_gen_ms", ""), torch_ms(fair_cmd, "torch_gen_ms", "")
local ours_en, theirs_en = char_en_ms(), torch_ms(torch_cmd, "torch_char_en_ms", " char_en")
local fair_en = torch_ms(fair_cmd, "torch_char_en_ms", " char_en")
local function fmt(x, f) return x and string.format(f, x) or "-" end
print(string.format("generation: %d tokens, greedy, 4 layers, d_model 128, 4 heads, 1 thread, kernels \"%s\"",
    NEW, (mha.isa())))
if fair_cmd then print("fair: torch told the kernel OpenBLAS should have chosen on this CPU") end
print(string.format("%-28s %10s %10s %8s %10s %9s", "row", "mha ms", "torch ms", "ratio", "fair ms", "ours/fair"))
print(string.format("%-28s %10.1f %10s %8s %10s %9s", "generate_cached", cached, fmt(theirs, "%.1f"),
                    fmt(theirs and cached / theirs, "%.2f"), fmt(fair, "%.1f"), fmt(fair and cached / fair, "%.2f")))
print(string.format("%-28s %10.1f %10s %8s %10s %9s", "generate_uncached", uncached, "-", "-", "-", "-"))
if save_path then
    local f = assert(io.open(save_path, "w"))
    f:write(string.format("row generate_cached ours=%.4f torch=%.4f fair_torch=%.4f\n", cached, theirs or 0 / 0,
                          fair or 0 / 0))
    if ours_en then
        f:write(string.format("row char_en ours=%.4f torch=%.4f fair_torch=%.4f\n", ours_en, theirs_en or 0 / 0,
                              fair_en or 0 / 0))
    end
    f:close()
end
print(string.format("the cache makes generation %.1fx faster", uncached / cached))
if ours_en then
    local function rate(ms) return ms and string.format("%.0f", NEW / ms * 1e3) or "-" end
    print(string.format("char_en: %q + %d characters, temperature 1, top_k %d, KV cache, 1 thread",
                        PROMPT, NEW, TOP_K))
    print(string.format("%-28s %12s %14s %10s %14s %10s", "row", "mha chars/s", "torch chars/s", "mha/torch",
                        "fair chars/s", "mha/fair"))
    print(string.format("%-28s %12s %14s %10s %14s %10s", "char_en_generate", rate(ours_en), rate(theirs_en),
                        fmt(theirs_en and theirs_en / ours_en, "%.2f"), rate(fair_en),
                        fmt(fair_en and fair_en / ours_en, "%.2f")))
end
