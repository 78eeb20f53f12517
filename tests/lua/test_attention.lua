-- tests/lua/test_attention.lua - attention through the Lua bindings: every mha.MultiheadAttention fixture
-- case from torch 1.13 (tests/fixtures/mha, parameters assigned by name from Lua), the attn/ cases for
-- softmax, linear, layer_norm, positional_encoding and scaled_dot_product_attention, trace, parameters
-- sharing storage, and the issue's acceptance line. Tolerance: |got - want| <= 1e-6 + 1e-5·|want|.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

-- Each line of a cases.txt: {name=..., key=value...}; numbers stay strings.
local function read_cases(kind)
    local cases = {}
    for line in io.lines(T.path("tests/fixtures/" .. kind .. "/cases.txt")) do
        if not line:match("^%s*#") and line:match("%S") then
            local case = {}
            for key, value in line:gmatch("([%w_]+)=(%S+)") do case[key] = value end
            cases[#cases + 1] = case
        end
    end
    return cases
end

local function exists(path)
    local f = io.open(path, "rb")
    if f then f:close() end
    return f ~= nil
end

-- The fixture file of a case, or nil when the case has none by that name.
local function fixture(kind, case, file)
    local path = T.path("tests/fixtures/" .. kind .. "/" .. case.name .. "/" .. file .. ".npy")
    if exists(path) then return mha.load(path) end
    return nil
end

T.test("MultiheadAttention fixtures", function()
    local cases = read_cases("mha")
    T.ok("mha/cases.txt lists cases", #cases >= 20, #cases .. " cases")
    for _, case in ipairs(cases) do
        local F = function(file) return fixture("mha", case, file) end
        local name = "mha " .. case.name
        local m = mha.MultiheadAttention {
            embed_dim = tonumber(case.embed_dim), num_heads = tonumber(case.num_heads),
            kdim = tonumber(case.kdim), vdim = tonumber(case.vdim), bias = case.bias == "1",
            add_bias_kv = case.add_bias_kv == "1", add_zero_attn = case.add_zero_attn == "1",
        }
        -- the module has exactly the parameters the fixture has; assign each from its file
        local have = {}
        for _, pname in ipairs(m:parameter_names()) do
            local value = F(pname)
            if value then
                m[pname] = value
                have[#have + 1] = pname
            else
                T.report(false, name .. " parameters", "no fixture file for " .. pname)
            end
        end
        T.eq(name .. " parameter names", have, m:parameter_names())
        local q = F("query")
        local k, v = q, q
        if case.self_attn == "0" then k, v = F("key"), F("value") end
        local opts = {
            attn_mask = F("attn_mask"), key_padding_mask = F("key_padding_mask"),
            need_weights = case.need_weights == "1", average_attn_weights = case.average_attn_weights == "1",
            is_causal = case.is_causal == "1",
        }
        local out, weights = m:forward(q, k, v, opts)
        T.close(name .. " out", out, F("out"))
        if case.need_weights == "1" then
            T.close(name .. " weights", weights, F("weights"))
        else
            T.eq(name .. " weights are nil when need_weights=false", weights, nil)
        end
        m:close()
    end
end)

T.test("MultiheadAttention module", function()
    local case
    for _, c in ipairs(read_cases("mha")) do
        if c.name == "self_basic" then case = c end
    end
    local F = function(file) return fixture("mha", case, file) end
    local m = mha.MultiheadAttention { embed_dim = 8, num_heads = 2 }
    for _, pname in ipairs(m:parameter_names()) do m[pname] = F(pname) end
    local x = F("query")
    local out, weights = m(x, x, x)
    T.close("m(q, k, v) calls forward", out, F("out"))
    T.close("m:forward(x) is self-attention", m:forward(x), F("out"))
    T.eq("fields", { m.embed_dim, m.num_heads, m.head_dim, m.kdim, m.vdim, m.bias, m.add_bias_kv, m.add_zero_attn },
        { 8, 2, 4, 8, 8, true, false, false })
    T.eq("parameter_names", m:parameter_names(), { "in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias" })
    -- __fields, which the REPL's completion reads: every option field and every parameter name of any module
    local fields = getmetatable(m).__fields
    T.ok("__fields is a list", type(fields) == "table" and #fields > 0, type(fields))
    local listed = {}
    for _, f in ipairs(fields or {}) do listed[f] = true end
    for _, f in ipairs { "embed_dim", "num_heads", "head_dim", "kdim", "vdim", "bias", "add_bias_kv", "add_zero_attn", "batch_first" } do
        T.ok("__fields lists " .. f, listed[f], table.concat(fields or {}, " "))
    end
    for _, opts in ipairs { { embed_dim = 4, num_heads = 2 }, { embed_dim = 4, num_heads = 2, kdim = 3, vdim = 5, add_bias_kv = true } } do
        local other = mha.MultiheadAttention(opts)
        for _, pname in ipairs(other:parameter_names()) do
            T.ok("__fields lists the parameter " .. pname, listed[pname], table.concat(fields or {}, " "))
        end
    end
    local unreadable = {}
    for _, f in ipairs(fields or {}) do
        if not pcall(function() return m[f] end) then unreadable[#unreadable + 1] = f end
    end
    T.eq("every name in __fields reads without an error", unreadable, {})
    T.eq("absent parameter reads nil", m.q_proj_weight, nil)
    T.shape("in_proj_weight (3E,E)", m.in_proj_weight, { 24, 8 })
    local params = m:parameters() -- PyTorch's dotted names
    T.shape("parameters()[\"out_proj.bias\"]", params["out_proj.bias"], { 8 })
    -- a parameter read back IS the module's (it requires grad, so it is written under no_grad, as in torch)
    local bias = m.out_proj_bias
    mha.no_grad(function() bias:set(1, bias:get(1) + 1) end)
    T.close("writing through m.out_proj_bias moves out[...,1] by 1", m:forward(x, x, x), out + mha.tensor { 1, 0, 0, 0, 0, 0, 0, 0 })
    m.out_proj_bias = F("out_proj_bias") -- assignment copies
    T.close("assigning the parameter back restores out", m:forward(x, x, x), out)
    T.close("weights from forward", weights, F("weights"))

    -- trace: every intermediate by name, in order
    local tr = m:trace(x, x, x)
    T.ok("trace lists names", #tr >= 10, #tr .. " names")
    T.eq("trace starts with the inputs", { tr[1], tr[2], tr[3] }, { "query", "key", "value" })
    T.eq("trace ends with the output", tr[#tr], "output")
    for _, tname in ipairs(tr) do
        T.ok("trace." .. tname .. " is a tensor", mha.is_tensor(tr[tname]))
    end
    T.close("trace.output == out", tr.output, out)
    T.close("trace.weights (N,H,L,S) averaged over heads == weights", tr.weights:mean(2), weights)
    T.close("trace.Q == linear(x, W_q, b_q)", tr.Q,
        mha.linear(x, m.in_proj_weight:narrow(1, 1, 8), m.in_proj_bias:narrow(1, 1, 8)))
    T.close("trace: weights = softmax(masked_scores)", tr.weights, tr.masked_scores:softmax(-1))

    T.ok("tostring like PyTorch's repr", tostring(m):find("NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)", 1, true))
    T.ok("tostring shows the options", tostring(m):find("embed_dim=8, num_heads=2", 1, true))
    local n
    do
        local closing <close> = mha.MultiheadAttention { embed_dim = 4, num_heads = 1 }
        n = closing.embed_dim
    end
    T.eq("a <close> module works in its scope", n, 4)
    m:close()
    T.raises("a closed module refuses forward", function() m:forward(x, x, x) end, "closed")
end)

T.test("acceptance line", function()
    local x = mha.randn(5, 4)
    local m = mha.MultiheadAttention { embed_dim = 4, num_heads = 2 }
    local out, w = m:forward(x, x, x)
    T.shape("out (L,4)", out, { 5, 4 })
    T.shape("w (L,L)", w, { 5, 5 })
    T.close("weights rows sum to 1", w:sum(-1), mha.ones(5))
    -- the same by hand: per-head sdpa of the projections, concatenated, then out_proj
    local E, H, D = 4, 2, 2
    local W, b = m.in_proj_weight, m.in_proj_bias
    local Q = mha.linear(x, W:narrow(1, 1, E), b:narrow(1, 1, E))
    local K = mha.linear(x, W:narrow(1, E + 1, E), b:narrow(1, E + 1, E))
    local V = mha.linear(x, W:narrow(1, 2 * E + 1, E), b:narrow(1, 2 * E + 1, E))
    local split = function(t) return t:view(5, H, D):transpose(1, 2) end -- (H,L,D)
    local heads, hw = mha.scaled_dot_product_attention(split(Q), split(K), split(V))
    local concat = heads:transpose(1, 2):reshape(5, E)
    T.close("out == out_proj(concat of heads)", out, mha.linear(concat, m.out_proj_weight, m.out_proj_bias))
    T.close("w == mean of head weights", w, hw:mean(1))
end)

T.test("MultiheadAttention untraced: a bool causal mask runs as is_causal, with the bits of the mask in floats", function()
    -- 40 queries: ragged against every register tile; inf in x makes q, k and v non-finite, where
    -- the causal products may not skip a 0·inf. Both masks take the plain path: per-head weights,
    -- their head mean, and no weights (the bool mask's output against the float mask's with them).
    for _, poisoned in ipairs{false, true} do
        mha.seed(12)
        local m = mha.MultiheadAttention{embed_dim = 16, num_heads = 2}
        local L = 40
        local x = mha.randn(3, L, 16)
        if poisoned then x = x:masked_fill(mha.rand(3, L, 16):gt(0.995), math.huge) end
        local causal = mha.causal_mask(L)
        local as_float = mha.zeros(L, L):masked_fill(causal, -math.huge)
        local label = poisoned and " (inf in x)" or ""
        local function run(mask, opts)
            opts.attn_mask = mask
            return mha.no_grad(function() return m:forward(x, x, x, opts) end)
        end
        for _, average in ipairs{false, true} do
            local ob, wb = run(causal, {average_attn_weights = average})
            local of, wf = run(as_float, {average_attn_weights = average})
            local what = average and "head mean" or "per-head weights"
            local why = T.bits_differ(ob, of) or T.bits_differ(wb, wf)
            T.ok(what .. label .. ": output and weights have the float mask's bits", why == nil, why)
        end
        local ob = run(causal, {need_weights = false})
        local of = run(as_float, {average_attn_weights = false})
        local why = T.bits_differ(ob, of)
        T.ok("no weights" .. label .. ": the output has the float mask's bits", why == nil, why)
    end
end)

T.test("attn fixtures", function()
    for _, case in ipairs(read_cases("attn")) do
        local F = function(file) return fixture("attn", case, file) end
        local name = "attn " .. case.name
        if case.fn == "softmax" then
            T.close(name, mha.softmax(F("x"), tonumber(case.dim) + 1), F("out"))
        elseif case.fn == "linear" then
            T.close(name, mha.linear(F("x"), F("W"), F("b")), F("out"))
        elseif case.fn == "layer_norm" then
            -- normalized_shape as PyTorch takes it: the last norm_ndim sizes of x (a number when one)
            local x, n = F("x"), tonumber(case.norm_ndim)
            local shape = x:shape()
            local normalized = table.move(shape, #shape - n + 1, #shape, 1, {})
            if n == 1 then normalized = normalized[1] end
            T.close(name, mha.layer_norm(x, normalized, F("weight"), F("bias"), tonumber(case.eps)), F("out"), 1e-5, 1e-5)
        elseif case.fn == "positional_encoding" then
            T.close(name, mha.positional_encoding(tonumber(case.L), tonumber(case.E)), F("out"))
        elseif case.fn == "sdpa" then
            local scale = tonumber(case.scale)
            local opts = { attn_mask = F("attn_mask"), is_causal = case.is_causal == "1", scale = scale > 0 and scale or nil }
            local out, weights = mha.sdpa(F("q"), F("k"), F("v"), opts)
            T.close(name .. " out", out, F("out"))
            T.close(name .. " weights", weights, F("weights"))
            opts.need_weights = false
            local fused, none = mha.scaled_dot_product_attention(F("q"), F("k"), F("v"), opts)
            T.close(name .. " need_weights=false (fused)", fused, F("out"))
            T.eq(name .. " need_weights=false returns only out", none, nil)
        else
            T.report(false, name, "unknown fn " .. tostring(case.fn))
        end
    end
end)

T.done()
