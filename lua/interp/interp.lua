-- lua/interp/interp.lua - module "mha.interp": the instruments of mechanistic interpretability on a
-- Transformer, built on its hook points (lua/nn/hooks.lua): ablation and activation patching.
--
--   logits = mha.interp.ablate(model, tokens, {layer = 2, head = 1})          -- head 1 knocked out
--   scores = mha.interp.patch(model, clean, corrupt, "hook_resid_pre", metric, {positions = true})
--   lens = mha.interp.logit_lens(model, tokens)      -- (layers + 1, N, L, vocab)  (lens.lua)
--   dla = mha.interp.attribution(model, tokens, target)   -- per head and MLP      (lens.lua)
--
-- layer and head are 1-based, as every Lua index; only hook names count layers from 0.

local mha = require "mha.core"
local module = require "mha.nn.module"
local hooks = require "mha.nn.hooks"
local lens = require "mha.interp.lens"
local raise = require "mha.raise"   -- errors at the user's line

local M = {}

-- A whole number in 1..hi, or raise naming it.
local function index(fname, what, v, hi)
    local whole = math.type(v) == "integer" or (type(v) == "number" and v == math.floor(v))
    if not whole or v < 1 or v > hi then
        raise(string.format("%s: %s must be a whole number from 1 to %d, got %s", fname, what, hi,
                            tostring(v)))
    end
    return math.tointeger(v)
end

local check_model = lens.check_model

-- A bool tensor of shape dims (a list of sizes) that is true at the 1-based places `at` (a list
-- {dim, i}, ...): the cells a patch or an ablation replaces.
local function selector(dims, at)
    local n = 1
    for _, d in ipairs(dims) do n = n * d end
    local flat = {}
    for i = 1, n do flat[i] = 1 end
    for i = 1, n do   -- cell i is true when every {dim, index} of at matches
        local rest, stride = i - 1, n
        for d = 1, #dims do
            stride = stride // dims[d]
            local idx = rest // stride + 1
            rest = rest % stride
            for _, a in ipairs(at) do
                if a[1] == d and a[2] ~= idx then flat[i] = 0 end
            end
        end
    end
    return mha.tensor(flat):view(table.unpack(dims)):bool()
end

-- act with the cells of mask taken from src (exactly: each cell is one or the other, never a sum).
local function replace_where(act, mask, src)
    return act:masked_fill(mask, 0) + src:masked_fill(mask:logical_not(), 0)
end

-- mha.interp.ablate(model, tokens, {layer =, head =, kind = "zero" | "mean", reference =})
-- -> logits (N, L, vocab) with head `head` of layer `layer` (every head when head is nil) replaced
-- at blocks.{layer-1}.attn.hook_z: by zeros, or by its mean over the batch of reference (default
-- tokens), position by position. Zeroing z of head h equals zeroing head h's columns of W_O.
function M.ablate(model, tokens, opts)
    local fname = "mha.interp.ablate"
    check_model(fname, model)
    module.check_options(fname, opts, {"layer", "head", "kind", "reference"})
    opts = opts or {}
    if opts.layer == nil then
        raise(fname .. ": option layer is required, " ..
              "e.g. mha.interp.ablate(m, tokens, {layer = 2, head = 1})")
    end
    local layer = index(fname, "option layer", opts.layer, model.layers)
    local head = opts.head ~= nil and index(fname, "option head", opts.head, model.heads) or nil
    local kind = opts.kind or "zero"
    if kind ~= "zero" and kind ~= "mean" then
        raise(string.format('%s: option kind must be "zero" or "mean", got %s', fname,
                            tostring(kind)))
    end
    local name = "blocks." .. (layer - 1) .. ".attn.hook_z"
    local mean
    if kind == "mean" then
        local _, cache = model:run_with_cache(opts.reference or tokens, {names = {name}})
        mean = cache[name]:mean(1, true)   -- (1, L, H, D)
    end
    local function ablation(z)   -- z (N, L, H, D)
        local N, L, H = table.unpack(z:shape())
        local mask = selector({1, 1, H, 1}, head and {{3, head}} or {})
        if kind == "zero" then return z:masked_fill(mask, 0) end
        if mean:shape()[2] ~= L then
            error(string.format("%s: reference has length %d and tokens %d; the mean is taken " ..
                                "position by position, so they must agree", fname,
                                mean:shape()[2], L), 0)
        end
        return replace_where(z, mask, mean:expand(N, L, H, z:shape()[4]))
    end
    return hooks.run(model, tokens, hooks.new_run(model, fname, {[name] = ablation}))
end

-- The head axis and the position axis (the query's) of a block's activation, by its name.
local function axes(inner)
    if inner == "attn.hook_attn_scores" or inner == "attn.hook_pattern" then return 2, 3 end
    if inner:match("^attn%.hook_") then return 3, 2 end
    return nil, 2
end

-- A number from the metric's result (a number or a one-element tensor).
local function metric_value(fname, metric, logits)
    local v = metric(logits)
    if mha.is_tensor(v) then v = v:item() end
    if type(v) ~= "number" then
        raise(string.format("%s: metric(logits) must return a number or a one-element " ..
                            "tensor, got %s", fname, type(v)))
    end
    return v
end

-- mha.interp.patch(model, clean, corrupt, name, metric [, {positions = true, heads = true}])
-- -> (layers), (layers, L), (layers, H) or (layers, L, H): for each layer (and position, head),
-- metric of the corrupt run with that activation taken from the clean run, as
--   (metric(patched) - metric(corrupt)) / (metric(clean) - metric(corrupt))
-- so 0 is nothing patched and 1 the clean run's value. name is a block's hook name without
-- "blocks.l." ("hook_resid_pre", "attn.hook_z", ...); metric(logits) -> a number.
-- Runs without a graph (mha.no_grad): only the metric's numbers are kept.
local function patch(model, clean, corrupt, name, metric, opts)
    local fname = "mha.interp.patch"
    check_model(fname, model)
    module.check_options(fname, opts, {"positions", "heads"})
    opts = opts or {}
    if type(name) ~= "string" then
        raise(fname .. ': name must be a block\'s hook name such as "hook_resid_pre" or ' ..
              '"attn.hook_z"')
    end
    local layer = name:match("^blocks%.(%d+)%.")
    if layer then   -- patch runs every layer in turn: one layer's name is a slip, not a choice
        raise(string.format('%s: name "%s" names one block, but patch patches each layer in turn; ' ..
                            'give the name without "blocks.%s.": "%s"', fname, name, layer,
                            name:sub(#layer + 9)))
    end
    local inner = name:gsub("^blocks%.{?l}?%.", "")
    hooks.new_run(model, fname, nil, {["blocks.0." .. inner] = true})   -- refuses an unknown name
    if type(metric) ~= "function" then
        raise(fname .. ": metric must be a function(logits) -> number, e.g. the logit difference")
    end
    local head_axis, pos_axis = axes(inner)
    if opts.heads and not head_axis then
        raise(string.format("%s: option heads needs a name with a head axis (attn.hook_q, " ..
                            "k, v, z, attn_scores, pattern), got %s", fname, inner))
    end
    local names = {}
    for l = 0, model.layers - 1 do names[#names + 1] = "blocks." .. l .. "." .. inner end
    local clean_logits, cache = model:run_with_cache(clean, {names = names})
    local corrupt_logits, ccache = model:run_with_cache(corrupt, {names = {names[1]}})
    local a, b = cache[names[1]]:shape(), ccache[names[1]]:shape()
    if table.concat(a, ",") ~= table.concat(b, ",") then
        local c, d = clean_logits:shape(), corrupt_logits:shape()   -- (N, L, vocab) each
        raise(string.format("%s: clean and corrupt tokens must have the same shape, got (%d,%d) " ..
                            "and (%d,%d)", fname, c[1], c[2], d[1], d[2]))
    end
    local m_clean = metric_value(fname, metric, clean_logits)
    local m_corrupt = metric_value(fname, metric, corrupt_logits)
    local span = m_clean - m_corrupt
    if span == 0 then
        raise(string.format("%s: metric is %g on both the clean and the corrupt run, so " ..
                            "there is nothing to normalise against", fname, m_clean))
    end
    local dims = cache[names[1]]:shape()
    local n_pos = opts.positions and dims[pos_axis] or 1
    local n_head = opts.heads and dims[head_axis] or 1
    local out = {}
    for l = 1, model.layers do
        local src, row = cache[names[l]], {}
        for p = 1, n_pos do
            local cells = {}
            for h = 1, n_head do
                local at, ones = {}, {}
                for d = 1, #dims do ones[d] = 1 end
                if opts.positions then
                    at[#at + 1], ones[pos_axis] = {pos_axis, p}, dims[pos_axis]
                end
                if opts.heads then
                    at[#at + 1], ones[head_axis] = {head_axis, h}, dims[head_axis]
                end
                local mask = #at > 0 and selector(ones, at) or nil
                local fn = function(t) return mask and replace_where(t, mask, src) or src end
                local run = hooks.new_run(model, fname, {[names[l]] = fn})
                local logits = hooks.run(model, corrupt, run)
                cells[h] = (metric_value(fname, metric, logits) - m_corrupt) / span
            end
            row[p] = opts.heads and cells or cells[1]
        end
        out[l] = opts.positions and row or row[1]
    end
    return mha.tensor(out)
end

-- Every function of mha.interp refuses arguments beyond its last one (logit_lens(m, x, 3)), which
-- Lua would drop without a word: f wrapped, its parameters named in the error.
local function strict(fname, params, f)
    local n = #params
    return function(...)
        local got = select("#", ...)
        if got > n then
            raise(string.format("%s: %d arguments given; it takes at most %d (%s)", fname, got,
                                n, table.concat(params, ", ")))
        end
        return f(...)
    end
end

M.ablate = strict("mha.interp.ablate", {"model", "tokens", "opts"}, M.ablate)
M.patch = strict("mha.interp.patch", {"model", "clean", "corrupt", "name", "metric", "opts"},
                 function(model, clean, corrupt, name, metric, opts)
                     return mha.no_grad(function()
                         return patch(model, clean, corrupt, name, metric, opts)
                     end)
                 end)
M.logit_lens = strict("mha.interp.logit_lens", {"model", "tokens"}, lens.logit_lens)
M.attribution = strict("mha.interp.attribution", {"model", "tokens", "target"}, lens.attribution)

return M
