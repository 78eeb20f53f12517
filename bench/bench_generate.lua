-- bench/bench_generate.lua - greedy generation of 256 tokens by model:generate, with the KV cache and
-- without it, beside the same loop with a cache in torch 1.13 (`make bench-generate`; arg[1] is the
-- command that runs bench/bench_generate_torch.py). CPU time of the best of 3 runs, one thread.

local torch_cmd = arg and arg[1]
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

local cached, uncached = time_of(true), time_of(false)
local theirs
if torch_cmd then
    local p = io.popen(torch_cmd)
    local out = p and p:read("a") or ""
    if p then p:close() end
    theirs = tonumber(out:match("torch_gen_ms ([%d.]+)"))
end
print(string.format("generation: %d tokens, greedy, 4 layers, d_model 128, 4 heads, 1 thread, kernels \"%s\"",
    NEW, (mha.isa())))
print(string.format("%-28s %10s %10s %8s", "row", "mha ms", "torch ms", "ratio"))
print(string.format("%-28s %10.1f %10s %8s", "generate_cached", cached, theirs and string.format("%.1f", theirs) or "-",
                    theirs and string.format("%.2f", cached / theirs) or "-"))
print(string.format("%-28s %10.1f %10s %8s", "generate_uncached", uncached, "-", "-"))
print(string.format("the cache makes generation %.1fx faster", uncached / cached))
