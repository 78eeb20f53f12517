-- lua/interp/lens.lua - module "mha.interp.lens": a Transformer's residual stream read through its
-- unembedding: the logit lens, and the direct logit attribution of each head and MLP.
--
-- The residual stream is the sum of what each part writes into it (pre or no norm):
--   stream = embed + pos + Σ_layers (Σ_heads z_h·W_O,hᵀ + b_O) + Σ_layers mlp_out
-- and the logit of token t is W_U[t] · ln_final(stream). ln_final is linear once its scale
-- σ = √(var(stream) + eps) is read from the run and held fixed (TransformerLens's apply_ln):
--   ln_final(stream) = w ⊙ (stream - mean(stream)) / σ + b
-- so each part's direct attribution is W_U[t] · (w ⊙ centre(part) / σ), and the bias terms, the
-- b_O of every layer and W_U[t] · b of ln_final, add up to the rest of the logit exactly.

local mha = require "mha.core"
local hooks = require "mha.nn.hooks"
local raise = require "mha.raise"   -- errors at the user's line

local M = {}

-- mha.interp.logit_lens(model, tokens) -> (layers + 1, N, L, vocab): the stream entering each
-- block, then the stream after the last, each read through ln_final (when the model has one) and
-- the unembedding; the last row equals model:forward(tokens) bit for bit.
function M.logit_lens(model, tokens)
    local names = {}
    for l = 0, model.layers - 1 do names[#names + 1] = "blocks." .. l .. ".hook_resid_pre" end
    names[#names + 1] = hooks.final_stream(model)
    local run = hooks.new_run(model, "mha.interp.logit_lens", nil, {})
    for _, n in ipairs(names) do run.keep[n] = true end
    hooks.run(model, tokens, run)
    local rows = {}
    for i, n in ipairs(names) do
        local x = run.cache[n]
        if model.ln_f then x = model.ln_f(x) end
        rows[i] = model.unembed(x):detach()
    end
    return mha.stack(rows)
end

-- The unembedding's rows of target: (E) for one id, (N, L, E) for an (N, L) tensor or table.
local function target_rows(fname, model, target, N, L)
    local W = model.unembed.weight:detach()
    if type(target) == "number" then
        if target ~= math.floor(target) or target < 1 or target > model.vocab then
            raise(string.format("%s: target must be a token id from 1 to vocab %d, got %s", fname,
                                model.vocab, tostring(target)))
        end
        return W[math.tointeger(target)]
    end
    local ok, t = pcall(function() return mha.is_tensor(target) and target or mha.tensor(target) end)
    if not ok or #t:shape() ~= 2 or t:shape()[1] ~= N or t:shape()[2] ~= L then
        raise(string.format("%s: target must be a token id or (N, L) = (%d, %d) ids, one per " ..
                            "position", fname, N, L))
    end
    return mha.embedding(t, W)
end

-- mha.interp.attribution(model, tokens, target) -> {heads = (layers, H, N, L), mlp = (layers, N, L)
-- or nil, embed = (N, L), pos = (N, L) or nil, bias = (N, L), logit = (N, L)}: each part's direct
-- contribution to the logit of target (one id, or (N, L) ids such as the next tokens), where
-- Σ heads + Σ mlp + embed + pos + bias = logit. bias holds every layer's b_O term and W_U[t]·b of
-- ln_final; an MLP's share includes its fc2 bias.
function M.attribution(model, tokens, target)
    local fname = "mha.interp.attribution"
    local c = model:config()
    if c.norm == "post" then
        raise(fname .. ': a model with norm = "post" normalises the stream after each layer, so ' ..
              'no part has a direct share of the logit; use norm = "pre" or "none"')
    end
    local final = hooks.final_stream(model)
    local keep = {hook_embed = true, [final] = true}
    if c.pos == "learned" or c.pos == "sinusoidal" then keep.hook_pos_embed = true end
    for l = 0, c.layers - 1 do
        keep["blocks." .. l .. ".attn.hook_z"] = true
        if c.d_ff > 0 then keep["blocks." .. l .. ".hook_mlp_out"] = true end
    end
    local run = hooks.new_run(model, fname, nil, keep)
    return mha.no_grad(function()
        local logits = hooks.run(model, tokens, run)
        local cache = run.cache
        local stream = cache[final]
        local N, L, E = table.unpack(stream:shape())
        local u = target_rows(fname, model, target, N, L)   -- (E) or (N, L, E)
        local dir, bias = u, nil   -- part ↦ Σ_E part ⊙ dir, after centring when ln_final is there
        local ln = model.ln_f
        if ln then
            local centred = stream - stream:mean(-1, true)
            local sigma = ((centred * centred):mean(-1, true) + ln.eps):sqrt()   -- (N, L, 1)
            dir = ln.weight * u / sigma
            bias = (ln.bias * u):sum(-1)
            if #bias:shape() == 0 then bias = mha.full({N, L}, bias:item()) end
        else
            bias = mha.zeros(N, L)
        end
        local function share(part)   -- part (N, L, E) -> (N, L)
            if ln then part = part - part:mean(-1, true) end
            return (part * dir):sum(-1)
        end
        local out = {embed = share(cache.hook_embed)}
        if cache.hook_pos_embed then out.pos = share(cache.hook_pos_embed) end
        local heads, mlps = {}, {}
        for l = 1, c.layers do
            local block = model:blocks()[l]
            local attn = block.attn
            local wo, bo
            if rawget(block, "llama") then wo = attn.o_proj.weight else
                wo, bo = attn.out_proj_weight, attn.out_proj_bias
            end
            local z = cache["blocks." .. (l - 1) .. ".attn.hook_z"]   -- (N, L, H, D)
            local H, D = z:shape()[3], z:shape()[4]
            local per = {}
            for h = 1, H do
                per[h] = share(mha.linear(z:select(3, h), wo:narrow(2, (h - 1) * D + 1, D)))
            end
            heads[l] = mha.stack(per)
            if bo then bias = bias + share(bo:view(1, 1, E):expand(N, L, E)) end
            if c.d_ff > 0 then mlps[l] = share(cache["blocks." .. (l - 1) .. ".hook_mlp_out"]) end
        end
        out.heads = mha.stack(heads)
        if c.d_ff > 0 then out.mlp = mha.stack(mlps) end
        out.bias = bias
        local V = logits:shape()[3]
        if type(target) == "number" then
            out.logit = logits:narrow(3, math.tointeger(target), 1):view(N, L)
        else
            out.logit = (mha.embedding(mha.is_tensor(target) and target or mha.tensor(target),
                                       mha.eye(V)) * logits):sum(-1)
        end
        return out
    end)
end

return M
