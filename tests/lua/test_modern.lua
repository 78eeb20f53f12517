-- tests/lua/test_modern.lua - mha.rope, mha.alibi_slopes, mha.alibi_bias, mha.sliding_window_mask,
-- mha.sample and sdpa's enable_gqa and return_lse from Lua against tests/fixtures/modern
-- (gen_modern_fixtures.py), sampling by chi-square over 10^4 draws; the refusals.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local function F(name) return mha.load(T.path("tests/fixtures/modern/" .. name .. ".npy")) end

T.test("rope equals torch 1.13's model code and its gradient, both layouts", function()
    local x, gout = F("rope_x"), F("rope_gout")
    for _, layout in ipairs{"half", "interleaved"} do
        for _, case in ipairs{{0, 10000}, {7, 10000}, {100, 500000}} do
            local name = string.format("rope_%s_o%d_b%d", layout, case[1], case[2])
            local leaf = x:clone()
            leaf:requires_grad(true)
            local out = mha.rope(leaf, {layout = layout, offset = case[1], base = case[2]})
            T.close(name .. ": the exact formula (atol 1e-6)", out, F(name .. "_exact"), 0, 1e-6)
            T.close(name .. ": torch's float32 code (atol 1e-5)", out, F(name .. "_torch"), 0, 1e-5)
            ;(out * gout):sum():backward()
            T.close(name .. ": gradient (atol 1e-5)", leaf:grad(), F(name .. "_grad"), 0, 1e-5)
        end
    end
    T.close("the defaults are base 10000, layout half, offset 0", mha.rope(x), F("rope_half_o0_b10000_exact"), 0, 1e-6)
end)

T.test("rope: the two layouts agree once the features are permuted", function()
    local x = F("rope_x")   -- (2,3,6,8)
    -- interleaved pairs (2i, 2i+1) become half pairs (i, i+4): features 0,2,4,6 then 1,3,5,7
    local as_half = x:view(2, 3, 6, 4, 2):transpose(-1, -2):reshape(2, 3, 6, 8)
    local back = mha.rope(as_half, {layout = "half", offset = 3}):view(2, 3, 6, 2, 4):transpose(-1, -2):reshape(2, 3, 6, 8)
    T.close("rope(x, interleaved) = unpermute(rope(permute(x), half))", back,
            mha.rope(x, {layout = "interleaved", offset = 3}), 0, 1e-6)
    local wrong = mha.rope(x, {layout = "half", offset = 3})
    T.ok("the wrong layout on the same features differs", (wrong - mha.rope(x, {layout = "interleaved", offset = 3}))
         :abs():max():item() > 0.1)
end)

T.test("rope: q·k depends only on the distance between the positions", function()
    mha.seed(3)
    local q, k = mha.randn(1, 8), mha.randn(1, 8)
    local function score(m, n)
        return mha.rope(q, {offset = m}):matmul(mha.rope(k, {offset = n}):transpose(1, 2)):item()
    end
    T.close("positions (5, 2) and (25, 22) give one score", score(25, 22), score(5, 2), 1e-5, 1e-5)
end)

T.test("alibi_slopes and alibi_bias equal the official get_slopes", function()
    for H = 1, 12 do T.close("slopes of H = " .. H .. " (exact)", mha.alibi_slopes(H), F("alibi_slopes_" .. H), 0, 0) end
    T.close("alibi_bias(6, 3, 5) (rtol 1e-7)", mha.alibi_bias(6, 3, 5), F("alibi_bias_6_3_5"), 1e-7, 0)
    T.close("alibi_bias(12, 4): S defaults to L (rtol 1e-7)", mha.alibi_bias(12, 4), F("alibi_bias_12_4_4"), 1e-7, 0)
    T.shape("alibi_bias is (H, L, S)", mha.alibi_bias(2, 1, 7), {2, 1, 7})
end)

T.test("sliding_window_mask equals NumPy's, with sinks", function()
    for _, c in ipairs{{6, 3, 0, 6}, {6, 3, 2, 6}, {4, 2, 1, 9}, {1, 4, 2, 10}, {5, 1, 0, 5}, {5, 5, 0, 5}, {5, 9, 3, 5}} do
        local name = string.format("window_L%d_W%d_s%d_S%d", c[1], c[2], c[3], c[4])
        local mask = mha.sliding_window_mask(c[1], c[2], {sinks = c[3], S = c[4]})
        T.ok(name .. " (exact)", mha.equal(mask, F(name)))
    end
    T.ok("W >= S is mha.causal_mask(L, L)", mha.equal(mha.sliding_window_mask(6, 6), mha.causal_mask(6)))
    T.ok("a window masks scores through sdpa", (function()
        local q = mha.randn(4, 2)
        local _, w = mha.sdpa(q, q, q, {attn_mask = mha.sliding_window_mask(4, 2)})
        return w[4][1] == 0 and w[4][2] == 0 and w[4][3] > 0
    end)())
end)

-- Pearson's chi-square of counts against probs over the tokens probs allows; any other count is a
-- failure.
-- the 0.999 quantile of chi-square for 1..7 degrees of freedom
local CHI2_999 = {10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32}
local function chi_square(name, counts, probs, n)
    local chi2, df, stray = 0, -1, 0
    for j = 1, #probs do
        if probs[j] > 0 then
            local expected = n * probs[j]
            chi2 = chi2 + (counts[j] - expected) ^ 2 / expected
            df = df + 1
        else
            stray = stray + counts[j]
        end
    end
    T.ok(name .. ": no token outside the kept set", stray == 0, stray .. " strays")
    T.ok(name .. string.format(": chi-square %.2f below %.2f (df %d, p = 0.001)", chi2, CHI2_999[df], df),
         df < 1 or chi2 < CHI2_999[df])
end

T.test("sample draws each token with the warped probability (chi-square, 10^4 draws)", function()
    local logits, n = F("sample_logits"), 10000
    local cases = {
        t1 = {temperature = 1}, t07 = {temperature = 0.7}, t2 = {temperature = 2}, k3 = {top_k = 3},
        p08 = {top_p = 0.8}, t15_k5_p09 = {temperature = 1.5, top_k = 5, top_p = 0.9},
    }
    for _, name in ipairs{"t1", "t07", "t2", "k3", "p08", "t15_k5_p09"} do
        local opts = cases[name]
        opts.seed = 2026
        local tokens = mha.sample(logits:expand(n, 8), opts)
        T.shape(name .. ": one token per row", tokens, {n})
        local counts = {0, 0, 0, 0, 0, 0, 0, 0}
        for _, t in ipairs(tokens:totable()) do counts[t] = counts[t] + 1 end
        local probs = F("sample_" .. name):totable()
        chi_square(name, counts, probs, n)
    end
end)

T.test("sample: exact cases, determinism and the Lua integer for (V)", function()
    local logits = mha.tensor{0.5, 3, 3, -1}
    T.eq("temperature 0 is the first largest, a Lua integer", mha.sample(logits, {temperature = 0}), 2)
    T.eq("top_k 1 is the argmax", mha.sample(logits, {top_k = 1}), 2)
    T.eq("a table of logits works too", math.type(mha.sample({1, 2, 9})), "integer")
    local rows = mha.randn(50, 6)
    T.ok("a seed gives the same tokens", mha.equal(mha.sample(rows, {seed = 5}), mha.sample(rows, {seed = 5})))
    mha.seed(9)
    local first = mha.sample(rows)
    mha.seed(9)
    T.ok("mha.seed gives the same tokens", mha.equal(first, mha.sample(rows)))
    T.shape("(2, 3, V) logits give (2, 3) tokens", mha.sample(mha.randn(2, 3, 5)), {2, 3})
    T.ok("tokens are 1-based", mha.sample(mha.tensor{{-math.huge, 0}}, {seed = 1})[1] == 2)
end)

T.test("errors name the function, the argument and the shape", function()
    T.raises("rope: D odd", function() return mha.rope(mha.zeros(3, 5)) end,
             "rope: the last dim D of x (3,5) is odd (5); RoPE turns pairs of features, so D must be even")
    T.raises("rope: x not float", function() return mha.rope(mha.zeros(3, 4):gt(0)) end,
             "rope: x must be a float tensor, got a bool one of shape (3,4)")
    T.raises("rope: offset negative", function() return mha.rope(mha.zeros(3, 4), {offset = -1}) end,
             "rope: option offset must be a whole number >= 0, got -1 (x of shape (3,4))")
    T.raises("rope: layout unknown", function() return mha.rope(mha.zeros(3, 4), {layout = "neox"}) end,
             "rope: option layout must be \"half\" (GPT-NeoX, Hugging Face) or \"interleaved\" (RoFormer, GPT-J, "
             .. "Meta's LLaMA), got neox (x of shape (3,4))")
    T.raises("rope: x of one dim", function() return mha.rope(mha.zeros(4)) end,
             "rope: x must be (..., L, D) with at least 2 dims, got shape (4)")
    T.raises("rope: a misspelt option", function() return mha.rope(mha.zeros(3, 4), {offest = 1}) end, "offset")
    T.raises("alibi_slopes: H = 0", function() return mha.alibi_slopes(0) end,
             "alibi_slopes: H must be at least 1 (one slope per head), got 0")
    T.raises("alibi_bias: L > S", function() return mha.alibi_bias(2, 4, 3) end,
             "alibi_bias: L = 4 queries exceed S = 3 positions; the queries are the last L of the S positions")
    T.raises("sliding_window_mask: W < 1", function() return mha.sliding_window_mask(4, 0) end,
             "sliding_window_mask: W must be at least 1 (a query sees itself), got 0")
    T.raises("sample: top_k 0", function() return mha.sample(mha.zeros(4), {top_k = 0}) end,
             "sample: option top_k must be a whole number >= 1, got 0")
    T.raises("sample: top_p 0", function() return mha.sample(mha.zeros(4), {top_p = 0}) end,
             "sample: top_p must be in (0, 1], got 0")
    T.raises("sample: temperature < 0", function() return mha.sample(mha.zeros(4), {temperature = -1}) end,
             "sample: temperature must be a number >= 0 (0 takes the argmax), got -1")
    T.raises("sample: a NaN logit", function() return mha.sample(mha.tensor{1, 0 / 0}) end,
             "sample: row 1 of logits holds NaN at index 2")
    T.raises("sample: a scalar", function() return mha.sample(mha.tensor(1)) end,
             "sample: logits must be (..., V) with a vocabulary of at least one token, got shape ()")
end)

-- ---- grouped-query attention and the row log-sum-exp ----

local GQA_CASES = {}
for _, heads in ipairs{{8, 2}, {8, 1}, {4, 4}} do
    for _, kind in ipairs{"bool", "causal", "float"} do
        GQA_CASES[#GQA_CASES + 1] = string.format("gqa_h%d_kv%d_%s", heads[1], heads[2], kind)
    end
end

local function gqa_options(c, extra)
    local opt = {enable_gqa = true, attn_mask = c.attn_mask, is_causal = c.attn_mask == nil}
    for key, value in pairs(extra or {}) do opt[key] = value end
    return opt
end

T.test("sdpa enable_gqa equals repeat_interleave + attention (torch, float64; atol 1e-5)", function()
    for _, name in ipairs(GQA_CASES) do
        local c = mha.load(T.path("tests/fixtures/modern/" .. name .. ".npz"))
        local out, w, lse = mha.sdpa(c.q, c.k, c.v, gqa_options(c, {return_lse = true}))
        T.close(name .. ": out, plain path", out, c.out, 0, 1e-5)
        T.close(name .. ": weights", w, c.weights, 0, 1e-5)
        T.close(name .. ": lse, plain path", lse, c.lse, 0, 1e-5)
        local fused, fused_lse = mha.sdpa(c.q, c.k, c.v, gqa_options(c, {return_lse = true, need_weights = false}))
        T.close(name .. ": out, fused kernel", fused, c.out, 0, 1e-5)
        T.close(name .. ": lse, fused kernel = plain path (atol 1e-6)", fused_lse, lse, 0, 1e-6)
        -- autograd: d(sum(out * gout)) through the graph node
        local q, k, v = c.q:clone(), c.k:clone(), c.v:clone()
        for _, t in ipairs{q, k, v} do t:requires_grad(true) end
        local o = mha.sdpa(q, k, v, gqa_options(c, {need_weights = false}))
        ;(o * c.gout):sum():backward()
        T.close(name .. ": dq", q:grad(), c.dq, 0, 1e-5)
        T.close(name .. ": dk sums over the group's query heads", k:grad(), c.dk, 0, 1e-5)
        T.close(name .. ": dv sums over the group's query heads", v:grad(), c.dv, 0, 1e-5)
        -- mha.sdpa_backward, plain (from the weights) and fused (from the output)
        for _, from in ipairs{{weights = w}, {out = out}} do
            local path = from.weights and "plain" or "fused"
            local dq, dk, dv = mha.sdpa_backward(c.gout, c.q, c.k, c.v, gqa_options(c, from))
            T.close(name .. ": sdpa_backward " .. path .. ": dq", dq, c.dq, 0, 1e-5)
            T.close(name .. ": sdpa_backward " .. path .. ": dk", dk, c.dk, 0, 1e-5)
            T.close(name .. ": sdpa_backward " .. path .. ": dv", dv, c.dv, 0, 1e-5)
        end
    end
end)

T.test("sdpa enable_gqa: 1 and 2 threads give the same bits", function()
    mha.seed(21)
    local q, k, v = mha.randn(2, 8, 96, 16), mha.randn(2, 2, 80, 16), mha.randn(2, 2, 80, 16)
    local mask = mha.randn(2, 1, 96, 80)
    local function run(threads)
        local before = mha.threads(threads)
        local leaves = {q:clone(), k:clone(), v:clone()}
        for _, t in ipairs(leaves) do t:requires_grad(true) end
        local out, w, lse = mha.sdpa(leaves[1], leaves[2], leaves[3], {enable_gqa = true, attn_mask = mask,
                                                                     return_lse = true})
        local fused, fused_lse = mha.sdpa(q, k, v, {enable_gqa = true, attn_mask = mask, is_causal = true,
                                                    need_weights = false, return_lse = true})
        out:sum():backward()
        mha.threads(before)
        return {out, w, lse, fused, fused_lse, leaves[1]:grad(), leaves[2]:grad(), leaves[3]:grad()}
    end
    local one, two = run(1), run(2)
    local names = {"out", "weights", "lse", "fused out", "fused lse", "dq", "dk", "dv"}
    for i, name in ipairs(names) do T.ok(name .. ": bit-identical", mha.equal(one[i], two[i])) end
end)

T.test("sdpa return_lse: the log-sum-exp of the scaled, masked scores; -inf for a fully masked row", function()
    mha.seed(4)
    local q, k, v = mha.randn(3, 4), mha.randn(5, 4), mha.randn(5, 2)
    local mask = mha.zeros(3, 5):gt(1)
    mask[2] = true                                             -- query 2 sees no key
    local scores = (q:matmul(k:transpose(1, 2)) / 2):totable()   -- scale 1/sqrt(4)
    local want = {}
    for _, i in ipairs{1, 3} do
        local sum = 0
        for j = 1, 5 do sum = sum + math.exp(scores[i][j]) end
        want[#want + 1] = math.log(sum)
    end
    local out, w, lse = mha.sdpa(q, k, v, {attn_mask = mask, return_lse = true})
    local _, fused_lse = mha.sdpa(q, k, v, {attn_mask = mask, return_lse = true, need_weights = false})
    T.shape("lse is (..., L)", lse, {3})
    T.eq("a fully masked row: -inf (plain)", lse[2], -math.huge)
    T.eq("a fully masked row: -inf (fused)", fused_lse[2], -math.huge)
    T.close("rows 1 and 3: log Σ exp(s) (atol 1e-6)", {lse[1], lse[3]}, want, 0, 1e-6)
    T.close("fused = plain (atol 1e-6)", {fused_lse[1], fused_lse[3]}, {lse[1], lse[3]}, 0, 1e-6)
    T.ok("out and weights come first", out:shape()[2] == 2 and w:shape()[2] == 5)
    T.ok("without return_lse: out and weights only", select("#", mha.sdpa(q, k, v)) == 2)
end)

T.test("sdpa enable_gqa: errors name the function, the argument and the shapes", function()
    T.raises("H not a multiple of H_kv", function()
        return mha.sdpa(mha.randn(1, 6, 3, 4), mha.randn(1, 4, 3, 4), mha.randn(1, 4, 3, 4), {enable_gqa = true})
    end, "sdpa: q (1,6,3,4) has 6 heads, k (1,4,3,4) has 4: enable_gqa needs H a multiple of H_kv")
    T.raises("without enable_gqa a head mismatch errors as before", function()
        return mha.sdpa(mha.randn(1, 8, 3, 4), mha.randn(1, 2, 3, 4), mha.randn(1, 2, 3, 4))
    end, "sdpa: q (1,8,3,4), k (1,2,3,4), v (1,2,3,4): leading (batch) dims do not broadcast")
    T.raises("k and v differ in heads", function()
        return mha.sdpa(mha.randn(8, 3, 4), mha.randn(2, 3, 4), mha.randn(4, 3, 4), {enable_gqa = true})
    end, "sdpa: k (2,3,4) has 2 heads, v (4,3,4) has 4: enable_gqa needs them equal")
    T.raises("no heads dim", function()
        return mha.sdpa(mha.randn(3, 4), mha.randn(3, 4), mha.randn(3, 4), {enable_gqa = true})
    end, "sdpa: q (3,4), k (3,4), v (3,4): enable_gqa needs a heads dim in each (..., H, L, E)")
    T.raises("sdpa_backward checks too", function()
        return mha.sdpa_backward(mha.randn(6, 3, 4), mha.randn(6, 3, 4), mha.randn(4, 3, 4), mha.randn(4, 3, 4),
                                 {enable_gqa = true, out = mha.randn(6, 3, 4)})
    end, "sdpa_backward: q (6,3,4) has 6 heads, k (4,3,4) has 4: enable_gqa needs H a multiple of H_kv")
    T.raises("a misspelt option", function()
        return mha.sdpa(mha.randn(3, 4), mha.randn(3, 4), mha.randn(3, 4), {enable_gqo = true})
    end, "enable_gqa")
end)

T.done()
