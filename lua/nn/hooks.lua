-- lua/nn/hooks.lua - module "mha.nn.hooks": a Transformer's activations under TransformerLens's
-- hook names, read (model:run_with_cache) or replaced (model:run_with_hooks) during one forward.
--
--   logits, cache = model:run_with_cache(tokens)          -- cache["blocks.0.attn.hook_pattern"]
--   logits = model:run_with_hooks(tokens, {["blocks.1.attn.hook_z"] = function(z, name)
--       return z * keep end})                             -- a replacement of the same shape
--   model:hook_names()                                    -- the names this model has, in order
--
-- Names count layers from 0, as the state_dict keys do; shapes are batch first (N batch, L
-- positions, S keys, E d_model, H heads, H_kv K/V heads, D head dim, F d_ff):
--   hook_embed, hook_pos_embed (N, L, E)         blocks.l.hook_resid_pre (N, L, E)
--   blocks.l.ln1.hook_normalized (N, L, E)       blocks.l.attn.hook_q (N, L, H, D)
--   blocks.l.attn.hook_k, hook_v (N, L, H_kv, D) blocks.l.attn.hook_rot_q, hook_rot_k (RoPE)
--   blocks.l.attn.hook_attn_scores (N, H, L, S)  blocks.l.attn.hook_pattern (N, H, L, S)
--   blocks.l.attn.hook_z (N, L, H, D)            blocks.l.hook_attn_out (N, L, E)
--   blocks.l.hook_resid_mid (N, L, E)            blocks.l.ln2.hook_normalized (N, L, E)
--   blocks.l.mlp.hook_pre, hook_post (N, L, F)   blocks.l.hook_mlp_out (N, L, E)
--   blocks.l.hook_resid_post (N, L, E)           ln_final.hook_normalized (N, L, E)
-- A name exists only where its part does (no MLP: no resid_mid, ln2 or mlp names; norm = "none":
-- no ln names; pos = "rope", "alibi" or "none": no hook_pos_embed). hook_normalized is the
-- LayerNorm's output, weight and bias applied. With norm = "post" a sum's hook sees the sum before
-- its norm, and lnX.hook_normalized is what goes on down the stream.
-- The attention's inside (q, k, v, scores, pattern, z) is computed here from the module's weights
-- with mha ops (in_proj split, scores · 1/√D, mask, softmax, @V, out_proj) only for a layer whose
-- inside a hook or the cache asks for; every other layer runs the plain forward's fused kernels,
-- so hook_attn_out and the names around it cost nothing beyond what the forward computes. The
-- opened layer's numbers equal the fused ones to float rounding, not bit for bit (docs/interp.md).

local mha = require "mha.core"
local module = require "mha.nn.module"
local options = require "mha.options"
local raise = require "mha.raise"   -- errors at the user's line

local M = {}

-- The names inside the attention, which open it (see above).
local INSIDE = {["attn.hook_q"] = true, ["attn.hook_k"] = true, ["attn.hook_v"] = true,
                ["attn.hook_rot_q"] = true, ["attn.hook_rot_k"] = true,
                ["attn.hook_attn_scores"] = true, ["attn.hook_pattern"] = true,
                ["attn.hook_z"] = true}

-- A block's names after "blocks.l.", in the order the forward reaches them.
local function block_names(c)
    local normed = c.norm ~= "none"
    local names = {"hook_resid_pre"}
    local function add(cond, ...)
        if cond then for _, n in ipairs({...}) do names[#names + 1] = n end end
    end
    add(normed and c.norm == "pre", "ln1.hook_normalized")
    add(true, "attn.hook_q", "attn.hook_k", "attn.hook_v")
    add(c.pos == "rope", "attn.hook_rot_q", "attn.hook_rot_k")
    add(true, "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z", "hook_attn_out")
    if c.d_ff > 0 then
        add(true, "hook_resid_mid")
        add(c.norm == "post", "ln1.hook_normalized")
        add(c.norm == "pre", "ln2.hook_normalized")
        add(true, "mlp.hook_pre", "mlp.hook_post", "hook_mlp_out", "hook_resid_post")
        add(c.norm == "post", "ln2.hook_normalized")
    else
        add(true, "hook_resid_post")
        add(c.norm == "post", "ln1.hook_normalized")
    end
    return names
end

-- model:hook_names() -> {"hook_embed", ..., "ln_final.hook_normalized"}: every name of this model.
function M.names(model)
    local c = model:config()
    local names = {"hook_embed"}
    if c.pos == "learned" or c.pos == "sinusoidal" then names[2] = "hook_pos_embed" end
    local inner = block_names(c)
    for l = 0, c.layers - 1 do
        for _, n in ipairs(inner) do names[#names + 1] = "blocks." .. l .. "." .. n end
    end
    if c.norm == "pre" then names[#names + 1] = "ln_final.hook_normalized" end
    return names
end

-- The name of the residual stream the unembedding reads after the last block (before ln_final).
function M.final_stream(model)
    local c = model:config()
    local last = "blocks." .. (c.layers - 1) .. "."
    if c.norm ~= "post" then return last .. "hook_resid_post" end
    return last .. (c.d_ff > 0 and "ln2" or "ln1") .. ".hook_normalized"
end

-- Refuses a name the model lacks, with the closest one or the name inside a block.
local function check_name(fname, name, known, list)
    if type(name) ~= "string" then
        raise(string.format("%s: hook names are strings such as " ..
                            "\"blocks.0.attn.hook_pattern\", got %s", fname, type(name)))
    end
    if known[name] then return end
    local guess = options.closest(name, list) or module.closest(name, list)
    for _, n in ipairs(guess and {} or list) do   -- a name inside a block: its first one
        if n:sub(-#name - 1) == "." .. name then guess = n break end
    end
    raise(string.format("%s: no activation named '%s'%s (model:hook_names() lists them)", fname,
                        name, guess and "; did you mean '" .. guess .. "'?" or ""))
end

-- ---------------------------------------------------------------------------------------------
-- One run: the hooks and the names to keep, called at each hook point of the forward
-- ---------------------------------------------------------------------------------------------

local Run = {}
Run.__index = Run

-- fname names the caller in errors; hooks: {name = fn}; keep: {name = true}; both checked.
function M.new_run(model, fname, hooks, keep)
    local list = M.names(model)
    local known = {}
    for _, n in ipairs(list) do known[n] = true end
    local run = setmetatable({fname = fname, hooks = {}, keep = {}, cache = {}, open = {}}, Run)
    local function mark(name)
        local l, inner = name:match("^blocks%.(%d+)%.(.*)$")
        if l and INSIDE[inner] then run.open[tonumber(l) + 1] = true end
    end
    for name, fn in pairs(hooks or {}) do
        check_name(fname, name, known, list)
        if type(fn) ~= "function" then
            raise(string.format("%s: the hook of '%s' must be a function(t, name), got %s", fname,
                                name, type(fn)))
        end
        run.hooks[name] = fn
        mark(name)
    end
    for name in pairs(keep or {}) do
        check_name(fname, name, known, list)
        run.keep[name] = true
        mark(name)
    end
    return run
end

-- The hook point `name`: the hook may return a replacement of t's shape; the cache keeps the
-- tensor the forward goes on with, detached from the graph.
function Run:point(name, t)
    local fn = self.hooks[name]
    if fn then
        -- a hook's failure travels as a table to M.run, which raises it at the user's line
        local function fail(fmt, ...)
            local msg = string.format("%s: the hook of '%s' " .. fmt, self.fname, name, ...)
            error({hook_error = msg}, 0)
        end
        local ok, out = pcall(fn, t, name)
        if not ok then fail("failed: %s", tostring(out)) end
        if out ~= nil then
            if not mha.is_tensor(out) then
                fail("must return nil or a tensor, got %s", type(out))
            end
            local shape_str = require("mha.display").shape_str
            local want, got = shape_str(t:shape()), shape_str(out:shape())
            if want ~= got then fail("returned shape %s; the activation is %s", got, want) end
            t = out
        end
    end
    if self.keep[name] then self.cache[name] = t:detach() end
    return t
end

-- The token embedding (N, L, E) and the position embedding at offset.. as (N, L, E): their sum.
function Run:embed(model, x, offset, L)
    x = self:point("hook_embed", x)
    local table_ = model.pos and model.pos.weight or rawget(model, "pe")
    if not table_ then return x end
    local N, _, E = table.unpack(x:shape())
    local pos = table_:narrow(1, offset + 1, L):unsqueeze(1):expand(N, L, E):contiguous()
    return x + self:point("hook_pos_embed", pos)
end

-- The attention of one block opened: q, k, v, scores, pattern and z at their hook points.
-- x (N, L, E) -> out (N, L, E), pattern (N, H, L, S).
function Run:attention(block, x, ctx, p)
    local attn = block.attn
    local N, L, E = table.unpack(x:shape())
    local H, H_kv, wq, wk, wv, bq, bk, bv, wo, bo
    if rawget(block, "llama") then
        H, H_kv = rawget(attn, "heads"), rawget(attn, "kv_heads")
        wq, wk, wv = attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight
        wo = attn.o_proj.weight
    else
        H = attn.num_heads
        H_kv = H
        local w, b = attn.in_proj_weight, attn.in_proj_bias
        wq, wk, wv = w:narrow(1, 1, E), w:narrow(1, E + 1, E), w:narrow(1, 2 * E + 1, E)
        if b then
            bq, bk, bv = b:narrow(1, 1, E), b:narrow(1, E + 1, E), b:narrow(1, 2 * E + 1, E)
        end
        wo, bo = attn.out_proj_weight, attn.out_proj_bias
    end
    local D = E // H
    -- pass 1: projections, (N, L, heads, D) at the hook points, (N, heads, L, D) to compute
    local q = self:point(p .. "attn.hook_q", mha.linear(x, wq, bq):view(N, L, H, D))
    local k = self:point(p .. "attn.hook_k", mha.linear(x, wk, bk):view(N, L, H_kv, D))
    local v = self:point(p .. "attn.hook_v", mha.linear(x, wv, bv):view(N, L, H_kv, D))
    q, k, v = q:transpose(2, 3), k:transpose(2, 3), v:transpose(2, 3)
    if ctx.rope then
        local turn = {layout = ctx.rope.layout, base = ctx.rope.base, offset = ctx.offset}
        q = self:point(p .. "attn.hook_rot_q", mha.rope(q, turn):transpose(2, 3)):transpose(2, 3)
        k = self:point(p .. "attn.hook_rot_k", mha.rope(k, turn):transpose(2, 3)):transpose(2, 3)
    end
    if H_kv ~= H then   -- query head h reads K/V head h // (H / H_kv): repeat_interleave's order
        local S = k:shape()[3]
        k = k:unsqueeze(3):expand(N, H_kv, H // H_kv, S, D):reshape(N, H, S, D)
        v = v:unsqueeze(3):expand(N, H_kv, H // H_kv, S, D):reshape(N, H, S, D)
    end
    -- pass 2: scores (N, H, L, S) = q·kᵀ/√D, masked (-inf where not allowed, ALiBi's bias added)
    local scores = q:matmul(k:transpose(3, 4)) / math.sqrt(D)
    local mask = ctx.attn_opts and ctx.attn_opts.attn_mask or ctx.mask
    if mask then
        if mask:dtype() == "bool" then
            scores = scores:masked_fill(mask, -math.huge)
        else
            scores = scores + mask
        end
    end
    local padding = ctx.attn_opts and ctx.attn_opts.key_padding_mask   -- bool (N, S), true = hidden
    if padding then
        scores = scores:masked_fill(padding:view(N, 1, 1, padding:shape()[2]), -math.huge)
    end
    scores = self:point(p .. "attn.hook_attn_scores", scores)
    -- pass 3: pattern = softmax over the keys; z = pattern·v, (N, L, H, D); out = z·W_Oᵀ + b_O
    local pattern = self:point(p .. "attn.hook_pattern", scores:softmax(-1))
    local z = self:point(p .. "attn.hook_z", pattern:matmul(v):transpose(2, 3))
    return mha.linear(z:reshape(N, L, H * D), wo, bo), pattern
end

-- Block:forward with its hook points: flow is lua/nn/transformer.lua's block_flow, the same ops in
-- the same order, so a run whose hooks return nothing gives the plain forward's bits; an opened
-- layer's attention is Run:attention, with the attention's own points.
function Run:block(block, x, ctx, flow)
    local p = "blocks." .. (ctx.layer - 1) .. "."
    local function point(name, t) return self:point(p .. name, t) end
    local parts = block
    if self.open[ctx.layer] then
        parts = setmetatable({attend = function(_, a_in) return self:attention(block, a_in, ctx, p) end},
                             {__index = block})
    end
    return flow(parts, x, ctx, point)
end

-- ---------------------------------------------------------------------------------------------
-- The methods: run_with_cache, run_with_hooks, hook_names
-- ---------------------------------------------------------------------------------------------

-- model:forward(tokens) with run's hook points; the model keeps no trace of run, also when a
-- hook or the forward fails (its attention maps stay those of the last forward that succeeded).
function M.run(model, tokens, run)
    rawset(model, "_hooks", run)
    local ok, logits = pcall(model.forward, model, tokens)
    rawset(model, "_hooks", nil)
    if not ok then
        if type(logits) == "table" and logits.hook_error then raise(logits.hook_error) end
        local msg = tostring(logits):gsub("^[^:]*:%d+: ", "")
        raise(run.fname .. ": " .. msg)
    end
    return logits
end

-- names: nil (every name), a list of names, or a function(name) -> true to keep it
local function kept_names(fname, model, names)
    local keep = {}
    if names == nil then
        for _, n in ipairs(M.names(model)) do keep[n] = true end
    elseif type(names) == "function" then
        for _, n in ipairs(M.names(model)) do
            if names(n) then keep[n] = true end
        end
    elseif type(names) == "table" then
        for _, n in ipairs(names) do keep[n] = true end
    else
        raise(string.format("%s: option names must be a list of hook names or a function(name), " ..
                            "got %s", fname, type(names)))
    end
    return keep
end

-- A cache read at a name it lacks says why, as TransformerLens's KeyError: a misspelt name (with
-- the closest), or one the names option left out. pairs and the printer see the plain table.
local function strict_cache(cache, model)
    local list = M.names(model)
    local known = {}
    for _, n in ipairs(list) do known[n] = true end
    return setmetatable(cache, {__index = function(_, name)
        if type(name) ~= "string" then return nil end
        if known[name] then
            raise(string.format("cache: '%s' was not kept; run_with_cache keeps it when option " ..
                                "names lists it, or without names", name))
        end
        check_name("cache", name, known, list)
    end})
end

-- model:run_with_cache(tokens [, {names =, hooks =}]) -> logits (N, L, vocab), cache {name = t}
function M.run_with_cache(model, tokens, opts)
    local fname = "Transformer:run_with_cache"
    module.check_options(fname, opts, {"names", "hooks"})
    opts = opts or {}
    if opts.hooks ~= nil and type(opts.hooks) ~= "table" then
        raise(fname .. ": option hooks must be a table {[name] = function(t, name) ... end}")
    end
    local run = M.new_run(model, fname, opts.hooks, kept_names(fname, model, opts.names))
    local logits = M.run(model, tokens, run)
    return logits, strict_cache(run.cache, model)
end

-- Two hooks on one name run in turn, the second seeing what the first returned.
local function chain(first, second)
    return function(t, name)
        local r = first(t, name)
        local s = second(r == nil and t or r, name)
        if s == nil then return r end
        return s
    end
end

-- The {[name] = fn} map of run_with_hooks's second argument, which may also come in
-- TransformerLens's keyword form {fwd_hooks = {{name, fn}, ...}} (name a string, or a filter
-- function(name) -> true for each name to hook) or run_with_cache's {hooks = {[name] = fn}}.
local function hook_map(fname, model, hooks)
    local fwd, inner = rawget(hooks, "fwd_hooks"), rawget(hooks, "hooks")
    if fwd == nil and inner == nil then return hooks end
    for k in pairs(hooks) do
        if k ~= "fwd_hooks" and k ~= "hooks" then
            raise(string.format("%s: give {[name] = fn}, {fwd_hooks = {{name, fn}, ...}} or " ..
                                "{hooks = {[name] = fn}}, not a mix (found '%s')", fname,
                                tostring(k)))
        end
    end
    if inner ~= nil and type(inner) ~= "table" then
        raise(string.format("%s: hooks must be a table {[name] = function(t, name) ... end}, " ..
                            "got %s", fname, type(inner)))
    end
    if fwd ~= nil and type(fwd) ~= "table" then
        raise(string.format("%s: fwd_hooks must be a list {{name, function(t, name) ... end}, " ..
                            "...}, got %s", fname, type(fwd)))
    end
    local map = {}
    for name, fn in pairs(inner or {}) do map[name] = fn end
    for i, pair in ipairs(fwd or {}) do
        if type(pair) ~= "table" or (type(pair[1]) ~= "string" and type(pair[1]) ~= "function")
           or type(pair[2]) ~= "function" then
            raise(string.format("%s: fwd_hooks[%d] must be {name, function(t, name) ... end}, " ..
                                "e.g. {\"blocks.0.attn.hook_z\", f}", fname, i))
        end
        local names = {pair[1]}
        if type(pair[1]) == "function" then   -- a filter: every name it accepts
            names = {}
            for _, n in ipairs(M.names(model)) do
                if pair[1](n) then names[#names + 1] = n end
            end
        end
        for _, n in ipairs(names) do map[n] = map[n] and chain(map[n], pair[2]) or pair[2] end
    end
    return map
end

-- model:run_with_hooks(tokens, {[name] = function(t, name) -> nil | replacement}) -> logits;
-- {fwd_hooks = {{name, fn}, ...}} (TransformerLens's form) and {hooks = {...}} work too.
function M.run_with_hooks(model, tokens, hooks)
    local fname = "Transformer:run_with_hooks"
    if type(hooks) ~= "table" then
        raise(string.format("%s: hooks must be a table {[\"blocks.0.attn.hook_z\"] = " ..
                            "function(t, name) ... end}, got %s", fname, type(hooks)))
    end
    return M.run(model, tokens, M.new_run(model, fname, hook_map(fname, model, hooks), nil))
end

return M
