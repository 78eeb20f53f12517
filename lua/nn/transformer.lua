-- lua/nn/transformer.lua - module "mha.nn.transformer": mha.nn.Transformer, a small decoder-only
-- transformer of the core's parts (Embedding, MultiheadAttention, LayerNorm, Linear) for toy tasks.
--
--   model = mha.nn.Transformer{vocab = 10, d_model = 32, heads = 2, layers = 2, d_ff = 0,
--                              max_len = 32}
--   logits = model:forward({{1, 2, 3}})      -- (N, L, vocab) for tokens (N, L), 1-based ids
--   model:attention()                        -- {(N, H, L, L), ...}: each layer's per-head weights
--   cache = model:new_cache(); model:forward({{4}}, {cache = cache})   -- only the new tokens
--   model:generate({1, 2, 3}, {max_new_tokens = 5, seed = 1})    -- {1, 2, 3, and 5 drawn tokens}
--
-- The structure and the state_dict keys are those of the PyTorch copy in
-- tests/fixtures/gen/gen_transformer.py:
--   embed.weight (vocab, d_model), pos.weight (max_len, d_model) when pos = "learned",
--   layers.i.ln1.{weight,bias},
--   layers.i.attn.{in_proj_weight,in_proj_bias,out_proj.weight,out_proj.bias},
--   layers.i.ln2.*, layers.i.mlp.fc1.*, layers.i.mlp.fc2.* (when d_ff > 0), ln_f.* (norm = "pre"),
--   unembed.weight (vocab, d_model), no bias.
-- With kv_heads < heads, pos = "rope" or "alibi", or a window, each block's attention is LLaMA's
-- (lua/nn/attention.lua): layers.i.attn.{q_proj,k_proj,v_proj,o_proj}.weight, no biases.
-- Per layer, x of shape (N, L, E):
--   pre:  x = x + attn(ln1(x));  x = x + mlp(ln2(x))   and ln_f before the unembedding
--   post: x = ln1(x + attn(x));  x = ln2(x + mlp(x))
--   none: x = x + attn(x);       x = x + mlp(x)
-- mlp(x) = fc2(gelu(fc1(x))). Attention is causal (query i sees keys 1..i) unless causal = false;
-- a window W with n sinks lets query i see keys i-W+1..i and the first n (sliding_window_mask).

local mha = require "mha.core"
local module = require "mha.nn.module"
local layers = require "mha.nn.layers"
local attention = require "mha.nn.attention"
-- the KV cache and the hook points load at their first use, so that a start stays fast
local function kvcache() return require "mha.nn.cache" end
local function hooks() return require "mha.nn.hooks" end
local raise = require "mha.raise"   -- errors at the user's line

local Module = module.Module
local M = {}

local MLP = Module:extend("MLP")

function MLP:init(d_model, d_ff)
    self.fc1 = layers.Linear{in_features = d_model, out_features = d_ff}
    self.fc2 = layers.Linear{in_features = d_ff, out_features = d_model}
end

-- x (N, L, E) -> fc2(gelu(fc1(x))), fc1 and fc2 functions of x; point(name, t) -> t, when given,
-- sees the hidden layer before and after the GELU (run_with_hooks' mlp.hook_pre and hook_post).
-- MLP:forward and generate's one-token step (block_plan) run it.
local function mlp_flow(fc1, fc2, x, point)
    local pre = fc1(x)
    if point then pre = point("mlp.hook_pre", pre) end
    local post = mha.gelu(pre)
    if point then post = point("mlp.hook_post", post) end
    return fc2(post)
end

function MLP:forward(x, point) return mlp_flow(self.fc1, self.fc2, x, point) end

local Block = Module:extend("Block")

-- Children in the order of the PyTorch copy, so state_dict lists the same keys in the same order.
function Block:init(o)
    if o.norm ~= "none" then self.ln1 = layers.LayerNorm{normalized_shape = o.d_model} end
    if o.llama then
        self.attn = attention.Attention(o)
    else
        self.attn = mha.MultiheadAttention{embed_dim = o.d_model, num_heads = o.heads,
                                           batch_first = true}
    end
    if o.d_ff > 0 then
        if o.norm ~= "none" then self.ln2 = layers.LayerNorm{normalized_shape = o.d_model} end
        self.mlp = MLP(o.d_model, o.d_ff)
    end
    rawset(self, "norm", o.norm)
    rawset(self, "llama", o.llama)
end

-- a_in (N, L, E) -> the attention's output (N, L, E), weights (N, H, L, S) when need_weights.
-- ctx.attn_opts runs nn.MultiheadAttention's own forward; else lua/nn/attention.lua's, with ctx.
function Block:attend(a_in, ctx)
    if ctx.attn_opts then
        return self.attn:forward(a_in, a_in, a_in, ctx.attn_opts)
    elseif rawget(self, "llama") then
        return self.attn:forward(a_in, ctx)
    end
    return attention.multihead(self.attn, a_in, ctx)
end

local function unseen(_, t) return t end

-- One block's residual stream, the one description of it that forward, run_with_hooks
-- (lua/nn/hooks.lua) and generate's one-token step (step_plan) run: x (N, L, E) ->
-- x + attend(ln1(x)), then x + mlp(ln2(x)) when the block has an MLP, the norms before each
-- sublayer ("pre"), after each sum ("post") or none. f gives f.norm, f.ln1, f.ln2, f:attend(a_in,
-- ctx) -> out, weights, and f.mlp(m_in, point); point(name, t) -> t sees each of TransformerLens's
-- hook points in the block as it is reached (nil: none). -> x, the weights
local function block_flow(f, x, ctx, point)
    local norm, seen = f.norm, point or unseen
    x = seen("hook_resid_pre", x)
    local a_in = norm == "pre" and seen("ln1.hook_normalized", f.ln1(x)) or x
    local a, w = f:attend(a_in, ctx)
    x = x + seen("hook_attn_out", a)
    if not f.mlp then
        x = seen("hook_resid_post", x)
        if norm == "post" then x = seen("ln1.hook_normalized", f.ln1(x)) end
        return x, w
    end
    x = seen("hook_resid_mid", x)
    if norm == "post" then x = seen("ln1.hook_normalized", f.ln1(x)) end
    local m_in = norm == "pre" and seen("ln2.hook_normalized", f.ln2(x)) or x
    x = x + seen("hook_mlp_out", f.mlp(m_in, point))
    x = seen("hook_resid_post", x)
    if norm == "post" then x = seen("ln2.hook_normalized", f.ln2(x)) end
    return x, w
end

-- x (N, L, E) -> (N, L, E), and the per-head weights (N, H, L, S) when need_weights. A run of
-- run_with_hooks or run_with_cache (ctx.hooks) sees its hook points (lua/nn/hooks.lua).
function Block:forward(x, ctx)
    if ctx.hooks then return ctx.hooks:block(self, x, ctx, block_flow) end
    return block_flow(self, x, ctx)
end

local Transformer = Module:extend("Transformer")
M.Transformer = Transformer

local OPTIONS = {"vocab", "d_model", "heads", "layers", "d_ff", "max_len", "causal", "norm", "pos",
                 "kv_heads", "rope_layout", "rope_base", "window", "sinks"}
local EXAMPLE = "mha.nn.Transformer{vocab = 10, d_model = 32, heads = 2, layers = 2, d_ff = 0, max_len = 32}"

local function opt_choice(fname, opts, key, choices, def)
    local v = opts[key]
    if v == nil then return def end
    for _, c in ipairs(choices) do
        if v == c then return v end
    end
    raise(string.format('%s: option %s must be one of "%s", got %s', fname, key, table.concat(choices, '", "'),
                        tostring(v)))
end

-- The options of attention as language models run it, into o: kv_heads, pos's rope_layout and
-- rope_base, window and sinks; o.llama when a block needs LLaMA's attention. Only options that
-- differ from the 2017 model go into o, so its config and checkpoints stay as they are.
local function modern_options(fname, opts, o)
    local kv_heads = module.opt_size(fname, opts, "kv_heads", o.heads, EXAMPLE)
    if o.heads % kv_heads ~= 0 then
        raise(string.format("%s: heads %d must be a multiple of kv_heads %d", fname, o.heads,
                            kv_heads))
    end
    if kv_heads ~= o.heads then o.kv_heads = kv_heads end
    if o.pos == "rope" then
        o.rope_layout = opt_choice(fname, opts, "rope_layout", {"half", "interleaved"}, "half")
        o.rope_base = opts.rope_base == nil and 10000 or opts.rope_base
        if type(o.rope_base) ~= "number" or not (o.rope_base > 0) then
            raise(string.format("%s: option rope_base must be a positive number, got %s", fname,
                                tostring(opts.rope_base)))
        end
        if (o.d_model // o.heads) % 2 ~= 0 then
            raise(string.format('%s: pos = "rope" needs an even head dim, got d_model %d / ' ..
                                'heads %d = %d', fname, o.d_model, o.heads, o.d_model // o.heads))
        end
    else
        for _, k in ipairs({"rope_layout", "rope_base"}) do
            if opts[k] ~= nil then
                raise(string.format('%s: option %s needs pos = "rope"', fname, k))
            end
        end
    end
    if opts.window ~= nil then
        o.window = module.opt_size(fname, opts, "window", nil, EXAMPLE)
        if not o.causal then
            raise(fname .. ": a window needs causal = true (it only looks back)")
        end
        o.sinks = module.opt_count(fname, opts, "sinks", 0)
    elseif opts.sinks ~= nil then
        raise(fname .. ": option sinks needs a window " ..
              "(window = W keeps the sinks and the last W tokens)")
    end
    o.llama = o.kv_heads ~= nil or o.pos == "rope" or o.pos == "alibi" or o.window ~= nil
end

function Transformer:init(opts)
    local fname = "nn.Transformer"
    module.check_options(fname, opts, OPTIONS)
    opts = opts or {}
    local o = {}
    o.vocab = module.opt_size(fname, opts, "vocab", nil, EXAMPLE)
    o.d_model = module.opt_size(fname, opts, "d_model", nil, EXAMPLE)
    o.heads = module.opt_size(fname, opts, "heads", 1, EXAMPLE)
    o.layers = module.opt_size(fname, opts, "layers", 1, EXAMPLE)
    o.max_len = module.opt_size(fname, opts, "max_len", nil, EXAMPLE)
    o.d_ff = module.opt_count(fname, opts, "d_ff", 4 * o.d_model, " (0 = attention-only)")
    if o.d_model % o.heads ~= 0 then
        raise(string.format("%s: d_model %d must be divisible by heads %d", fname, o.d_model, o.heads))
    end
    o.causal = module.opt_boolean(fname, opts, "causal", true)
    o.norm = opt_choice(fname, opts, "norm", {"pre", "post", "none"}, "pre")
    o.pos = opt_choice(fname, opts, "pos", {"learned", "sinusoidal", "rope", "alibi", "none"},
                       "learned")
    modern_options(fname, opts, o)
    local block_opts = {}
    for k, v in pairs(o) do block_opts[k] = v end
    block_opts.kv_heads = o.kv_heads or o.heads
    o.llama = nil
    rawset(self, "_config", o)
    for _, k in ipairs({"vocab", "d_model", "heads", "max_len", "d_ff", "causal", "window"}) do
        rawset(self, k, o[k])
    end
    rawset(self, "kv_heads", block_opts.kv_heads)
    rawset(self, "sinks", o.window and o.sinks)
    rawset(self, "_llama", block_opts.llama)
    self.embed = layers.Embedding{num_embeddings = o.vocab, embedding_dim = o.d_model}
    if o.pos == "learned" then
        self.pos = layers.Embedding{num_embeddings = o.max_len, embedding_dim = o.d_model}
    elseif o.pos == "sinusoidal" then
        rawset(self, "pe", mha.positional_encoding(o.max_len, o.d_model))
    end
    local list = module.ModuleList()
    for _ = 1, o.layers do list:append(Block(block_opts)) end
    self.layers = list
    -- model.layers is the count; the blocks are self._modules.values.layers
    rawset(self, "layers", o.layers)
    if o.norm == "pre" then self.ln_f = layers.LayerNorm{normalized_shape = o.d_model} end
    self.unembed = layers.Linear{in_features = o.d_model, out_features = o.vocab, bias = false}
    rawset(self, "_attention", {})
end

-- The blocks in order (a ModuleList; model.layers is their count).
function Transformer:blocks()
    return rawget(self, "_modules").values.layers
end

-- tokens: a tensor (N, L) or (L) of whole numbers, or a nested table; -> an (N, L) tensor
local function token_tensor(self, tokens)
    local fname = "Transformer:forward"
    local t = tokens
    if not mha.is_tensor(t) then
        if type(t) ~= "table" then
            raise(string.format("%s: tokens must be a tensor (N, L) or a table of 1-based ids, got %s", fname, type(t)))
        end
        local ok, v = pcall(mha.tensor, t)
        if not ok then raise(string.format("%s: tokens: %s", fname, tostring(v))) end
        t = v
    end
    local shape = t:shape()
    if #shape == 1 then t, shape = t:view(1, shape[1]), {1, shape[1]} end
    if #shape ~= 2 then
        raise(string.format("%s: tokens must be (N, L) or (L), got %s", fname, require("mha.display").shape_str(shape)))
    end
    if shape[2] > self.max_len then
        raise(string.format("%s: tokens have length %d, longer than max_len %d", fname, shape[2], self.max_len))
    end
    return t, shape[1], shape[2]
end

-- The attention context of one forward (lua/nn/attention.lua): positions from offset, RoPE, the
-- mask of L new queries over S keys (causal or windowed, bottom-right aligned; ALiBi's bias added
-- as floats).
local function attention_context(self, L, offset, cache, need)
    local c = rawget(self, "_config")
    local S = offset + L
    local ctx = {offset = offset, cache = cache, need_weights = need}
    if c.pos == "rope" then
        ctx.rope = {layout = c.rope_layout, base = c.rope_base, stream = c.window ~= nil}
    end
    local mask
    if self.causal then
        if c.window or S ~= L then
            mask = mha.sliding_window_mask(L, c.window or S, {sinks = c.sinks or 0, S = S})
        else
            mask = mha.causal_mask(L)
        end
    end
    if c.pos == "alibi" then
        local bias = mha.alibi_bias(self.heads, L, S)   -- (H, L, S)
        mask = mask and bias:masked_fill(mask, -math.huge) or bias
    end
    ctx.mask = mask
    return ctx
end

-- key_padding_mask checked: a bool (N, L) tensor, true at the padding of a batch of unequal lines
-- (torch's key_padding_mask); those keys get no attention from any query.
local function padding_mask(fname, kpm, N, L, cache)
    if kpm == nil then return nil end
    if not mha.is_tensor(kpm) or kpm:dtype() ~= "bool" then
        raise(string.format("%s: option key_padding_mask must be a bool tensor (N, L), true at " ..
                            "padding, got %s", fname, mha.is_tensor(kpm) and kpm:dtype() or
                            type(kpm)))
    end
    local shape = kpm:shape()
    if #shape ~= 2 or shape[1] ~= N or shape[2] ~= L then
        raise(string.format("%s: key_padding_mask has shape %s; tokens (N, L) = (%d, %d) need " ..
                            "(%d, %d)", fname, require("mha.display").shape_str(shape), N, L, N, L))
    end
    if cache then
        raise(fname .. ": key_padding_mask works without a cache (a cache runs one line)")
    end
    return kpm
end

-- model:forward(tokens [, {need_weights = true, cache =, key_padding_mask =}]) -> logits
-- (N, L, vocab). key_padding_mask (N, L) bool, true at padding: no query attends to those keys
-- (a padding query's own output is still computed and is not meant to be read). need_weights =
-- false skips forming the attention weights (the fused path training takes); model:attention() is
-- then empty. With a cache (model:new_cache()) tokens are only the new ones: their positions
-- continue from cache:length(), their keys and values join the cache's; weights are (N, H, L, S).
function Transformer:forward(tokens, opts)
    local fname = "Transformer:forward"
    module.check_options(fname, opts, {"need_weights", "cache", "key_padding_mask"})
    local need = not (opts and opts.need_weights == false)
    local cache = opts and opts.cache
    if cache ~= nil and not kvcache().is_cache(cache) then
        raise(string.format("%s: option cache must be a KV cache from model:new_cache(), got %s",
                            fname, type(cache)))
    end
    local t, N, L = token_tensor(self, tokens)
    local kpm = padding_mask(fname, opts and opts.key_padding_mask, N, L, cache)
    local offset = 0
    if cache then
        cache:begin(fname, self, N)
        offset = cache:length()
        if offset + L > self.max_len then
            local hint = self.window and "" or
                " (a model with a window = W keeps only the last W tokens and decodes on)"
            raise(string.format("%s: the cache holds %d tokens and %d more would reach position " ..
                                "%d, past max_len %d%s", fname, offset, L, offset + L, self.max_len,
                                hint))
        end
    end
    local x = self.embed(t)   -- (N, L, E); Embedding checks the ids' range and names it
    local run = rawget(self, "_hooks")   -- the hook points of run_with_hooks (lua/nn/hooks.lua)
    if run then
        rawset(self, "_hooks", nil)   -- taken once: a forward inside a hook runs plain
        x = run:embed(self, x, offset, L)
    elseif self.pos then
        x = x + self.pos.weight:narrow(1, offset + 1, L)
    elseif rawget(self, "pe") then
        x = x + rawget(self, "pe"):narrow(1, offset + 1, L)
    end
    local ctx
    if cache or rawget(self, "_llama") then
        ctx = attention_context(self, L, offset, cache, need)
        if kpm then   -- (N, 1, 1, S) over every head and query, with the model's own mask
            local pad = kpm:view(N, 1, 1, L)
            if ctx.mask == nil then ctx.mask = pad
            elseif ctx.mask:dtype() == "bool" then ctx.mask = mha.logical_or(ctx.mask, pad)
            else   -- ALiBi's (H, L, S) bias, -inf at padding: (N, H, L, S)
                local H = ctx.mask:shape()[1]
                local blocked = mha.zeros(N, 1, 1, L):masked_fill(pad, -math.huge)
                ctx.mask = ctx.mask:view(1, H, L, L) + blocked
            end
        end
    else
        local attn_opts = {need_weights = need, average_attn_weights = false,
                           key_padding_mask = kpm}
        if self.causal then attn_opts.attn_mask = mha.causal_mask(L) end
        ctx = {attn_opts = attn_opts}
    end
    ctx.hooks = run
    local maps = {}
    for i = 1, self.layers do
        local w
        ctx.layer = i
        x, w = self:blocks()[i]:forward(x, ctx)
        maps[i] = w and w:detach() or nil
    end
    if cache then cache:commit(L, N) end
    rawset(self, "_attention", maps)
    if self.ln_f then x = self.ln_f(x) end
    if run and self.ln_f then x = run:point("ln_final.hook_normalized", x) end
    return self.unembed(x)
end

-- After a forward: {layer 1's weights (N, H, L, L), ...}, weights[n][h][i][j] = how much query i of
-- head h attends to key j.
function Transformer:attention()
    local maps = rawget(self, "_attention")
    if #maps == 0 then
        raise("Transformer:attention: run model:forward(tokens) first (with need_weights left on)")
    end
    return maps
end

-- model:run_with_cache(tokens [, {names =, hooks =}]), run_with_hooks(tokens, hooks),
-- hook_names(): the activations by TransformerLens's names (lua/nn/hooks.lua).
function Transformer:run_with_cache(tokens, opts) return hooks().run_with_cache(self, tokens, opts) end
function Transformer:run_with_hooks(tokens, fns) return hooks().run_with_hooks(self, tokens, fns) end
function Transformer:hook_names() return hooks().names(self) end

-- The options, on lines of at most 76 columns: printed under "Transformer(" with two spaces before
-- them, they fit an 80-column terminal (a projector's).
function Transformer:extra_repr()
    local c = rawget(self, "_config")
    local items = {}
    for _, k in ipairs({"vocab", "d_model", "heads", "layers", "d_ff", "max_len", "causal"}) do
        items[#items + 1] = k .. "=" .. tostring(self[k])
    end
    for _, k in ipairs({"norm", "pos", "kv_heads", "rope_layout", "rope_base", "window", "sinks"}) do
        if c[k] ~= nil then items[#items + 1] = k .. "=" .. tostring(c[k]) end
    end
    local lines, line = {}, items[1]
    for i = 2, #items do
        if #line + 2 + #items[i] + 1 > 76 then   -- the line, ", ", the item and its comma
            lines[#lines + 1] = line .. ","
            line = items[i]
        else
            line = line .. ", " .. items[i]
        end
    end
    lines[#lines + 1] = line
    return table.concat(lines, "\n")
end

-- model:new_cache() -> an empty KV cache for this model (lua/nn/cache.lua), for model:forward.
function Transformer:new_cache()
    if not self.causal then
        raise("Transformer:new_cache: a cache needs a causal model " ..
              "(with causal = false earlier tokens see later ones)")
    end
    return kvcache().new(self, {layers = self.layers, window = self.window, sinks = self.sinks})
end

local GENERATE_OPTIONS = {"max_new_tokens", "temperature", "top_k", "top_p", "seed", "cache",
                          "on_token", "roll"}

-- prompt: a table of 1-based ids or a 1-D tensor -> a fresh table of its ids.
local function prompt_ids(fname, prompt, vocab)
    local ids = prompt
    if mha.is_tensor(prompt) then
        if #prompt:shape() ~= 1 then
            raise(fname .. ": prompt must be a table of ids or a 1-D tensor")
        end
        ids = prompt:totable()
    end
    if type(ids) ~= "table" or #ids == 0 then
        raise(string.format("%s: prompt must be a non-empty table of 1-based token ids, " ..
                            "e.g. {1, 2, 3}, got %s", fname,
                            type(ids) == "table" and "an empty table" or type(ids)))
    end
    local out = {}
    for i, id in ipairs(ids) do
        if math.type(id) ~= "integer" and not (type(id) == "number" and id == math.floor(id)) then
            raise(string.format("%s: prompt[%d] must be a whole number (a 1-based token id), " ..
                                "got %s", fname, i, tostring(id)))
        end
        if id < 1 or id > vocab then
            raise(string.format("%s: prompt[%d] is %d; token ids run from 1 to vocab %d", fname, i,
                                id, vocab))
        end
        out[i] = math.tointeger(id)
    end
    return out
end

-- The last n of a list of ids, as a fresh list.
local function last(ids, n)
    local out, from = {}, math.max(1, #ids - n + 1)
    for i = from, #ids do out[i - from + 1] = ids[i] end
    return out
end

-- The class of module m when it is a Lua module, else nil.
local function class_of(m)
    local mt = type(m) == "table" and getmetatable(m)
    return type(mt) == "table" and mt.__module_class or nil
end

-- A LayerNorm's forward as a function of x, its arguments to mha.layer_norm read once, or nil when
-- m is not one.
local function layer_norm_of(m)
    if class_of(m) ~= layers.LayerNorm then return nil end
    local shape, weight, bias, eps, layer_norm = m.normalized_shape, m.weight, m.bias, m.eps, mha.layer_norm
    return function(x) return layer_norm(x, shape, weight, bias, eps) end
end

-- A Linear's forward as a function of x, its weight and bias read once, or nil when m is not one.
local function linear_of(m)
    if class_of(m) ~= layers.Linear then return nil end
    local weight, bias, linear = m.weight, m.bias, mha.linear
    return function(x) return linear(x, weight, bias) end
end

local SDPA_OPTS = {need_weights = false}   -- read only by the binding, so made once

-- One block's parts for block_flow in a one-token step, its parameters read once: norm, ln1, ln2,
-- attend, mlp; nil when the block is not this file's Block of nn.MultiheadAttention, LayerNorms and
-- Linears (a module replaced by hand).
local function block_plan(block, norm)
    local attn = block.attn
    if class_of(block) ~= Block or rawget(block, "llama") or not module.is_module(attn)
            or class_of(attn) then
        return nil
    end
    local E, H = attn.embed_dim, attn.num_heads
    local D = E // H
    local in_w, in_b, out_w, out_b = attn.in_proj_weight, attn.in_proj_bias, attn.out_proj_weight,
                                     attn.out_proj_bias
    local linear, sdpa = mha.linear, mha.scaled_dot_product_attention
    -- one token's attention (ctx: the cache and the layer): q, k and v narrowed from one
    -- (1, 3H, 1, D) view of the in-projection, no mask, the heads joined by a view
    local plan = {norm = norm}
    function plan.attend(_, a_in, ctx)
        local qkv = linear(a_in, in_w, in_b):view(1, 3 * H, 1, D)
        local k, v = ctx.cache:append_step(ctx.layer, qkv:narrow(2, H + 1, H), qkv:narrow(2, 2 * H + 1, H))
        return linear(sdpa(qkv:narrow(2, 1, H), k, v, SDPA_OPTS):reshape(1, 1, E), out_w, out_b)
    end
    if norm ~= "none" then
        plan.ln1 = layer_norm_of(block.ln1)
        if not plan.ln1 then return nil end
    end
    if block.mlp then
        if class_of(block.mlp) ~= MLP then return nil end
        local fc1, fc2 = linear_of(block.mlp.fc1), linear_of(block.mlp.fc2)
        plan.ln2 = norm ~= "none" and layer_norm_of(block.ln2) or false
        if not (fc1 and fc2) or plan.ln2 == nil then return nil end
        function plan.mlp(m_in) return mlp_flow(fc1, fc2, m_in) end
    end
    return plan
end

-- model:forward({{id}}, {cache = cache, need_weights = false}) for one token of a model of the
-- 2017 kind (nn.MultiheadAttention blocks, learned, sinusoidal or no positions, no hooks), with
-- the parameters read once, before the first step, and fewer ops a layer (block_plan's attend:
-- no mask, since the one query sees every key and a mask of zeros adds nothing). Each block runs
-- block_flow, as forward does: the same kernels on the same numbers in the same order, so the
-- same logits bit for bit (tests/lua/test_decode.lua). -> a function(id, cache) -> logits
-- (1, 1, vocab), or nil for any other model (forward runs those).
local function step_plan(self)
    local c = rawget(self, "_config")
    if rawget(self, "_llama") or rawget(self, "_hooks") or not self.causal
            or not (c.pos == "learned" or c.pos == "sinusoidal" or c.pos == "none")
            or class_of(self.embed) ~= layers.Embedding
            or (c.pos == "learned" and class_of(self.pos) ~= layers.Embedding)
            or class_of(self.unembed) ~= layers.Linear then
        return nil
    end
    local plans, norm = {}, c.norm
    for i = 1, self.layers do
        plans[i] = block_plan(self:blocks()[i], norm)
        if not plans[i] then return nil end
    end
    local embed_w = self.embed.weight
    local pos_w = c.pos == "learned" and self.pos.weight or rawget(self, "pe")
    local ln_f = norm == "pre" and layer_norm_of(self.ln_f)
    if norm == "pre" and not ln_f then return nil end
    local unembed = linear_of(self.unembed)
    local ctx = {}
    return function(id, cache)
        local offset = cache:length()
        cache:begin("Transformer:forward", self, 1)
        local x = mha.embedding({{id}}, embed_w)   -- (1, 1, E)
        if pos_w then x = x + pos_w:narrow(1, offset + 1, 1) end
        ctx.cache = cache
        for i = 1, #plans do
            ctx.layer = i
            x = block_flow(plans[i], x, ctx)
        end
        ctx.cache = nil
        cache:commit(1, 1)
        rawset(self, "_attention", {})
        if ln_f then x = ln_f(x) end
        return unembed(x)
    end
end

-- model:generate(prompt, {max_new_tokens = 20, temperature = 1, top_k =, top_p =, seed =,
-- cache = true, on_token =, roll = false}) -> prompt and the new tokens, a table of 1-based ids.
-- Each new token is drawn by mha.sample from the logits of the last position; seed seeds mha.seed
-- once, so a seed gives the same tokens with the cache (each step feeds only the new token) and
-- without it (each step runs the whole sequence again). on_token(id) is called with each new
-- token as it is drawn; returning false stops. With roll = true the model reads the last max_len
-- tokens of the prompt, and when the cache holds max_len tokens a fresh cache reads the last half
-- of the text again, so decoding goes on past max_len.
function Transformer:generate(prompt, opts)
    local fname = "Transformer:generate"
    module.check_options(fname, opts, GENERATE_OPTIONS)
    opts = opts or {}
    local tokens = prompt_ids(fname, prompt, self.vocab)
    local n_new = module.opt_count(fname, opts, "max_new_tokens", 20)
    local use_cache = module.opt_boolean(fname, opts, "cache", true)
    local roll = module.opt_boolean(fname, opts, "roll", false)
    local on_token = opts.on_token
    if on_token ~= nil and type(on_token) ~= "function" then
        raise(string.format("%s: option on_token must be a function(id), got %s", fname,
                            type(on_token)))
    end
    if roll and not use_cache then
        raise(fname .. ": roll re-reads the text into the cache; leave cache on")
    end
    local fed = #tokens + n_new - 1   -- the last token drawn is not fed back
    if fed > self.max_len and not roll and not (use_cache and self.window) then
        local hint = self.window and " (the cache lets a window decode on)"
                     or " (roll = true writes on past it, reading the last half of the text again; " ..
                        "a model with a window = W decodes on)"
        -- 3 + 40 is 43 tokens, but the 40th new one is only drawn, never read: 42 positions
        local read = n_new > 1 and string.format("the %d prompt tokens and the first %d new ones are read back in; " ..
                                                 "the last new one never is", #tokens, n_new - 1)
                     or string.format("the %d prompt tokens are read in", #tokens)
        raise(string.format("%s: %d prompt tokens and max_new_tokens %d need %d positions (%s), " ..
                            "past max_len %d%s", fname, #tokens, n_new, fed, read, self.max_len, hint))
    end
    local sample_opts = {temperature = opts.temperature, top_k = opts.top_k, top_p = opts.top_p}
    -- the last position's logits (V) -> a token; sample's errors named as generate's
    local function draw(logits)
        local ok, token = pcall(mha.sample, logits[1][logits:shape()[2]], sample_opts)
        if not ok then raise(fname .. ": " .. tostring(token):gsub("^[^:]*:%d+: ", "")) end
        return token
    end
    if opts.seed ~= nil then mha.seed(opts.seed) end
    local cache = use_cache and self:new_cache() or nil
    local step = cache and step_plan(self)
    local function feed(ids)
        if step and #ids == 1 and cache:length() < self.max_len then return step(ids[1], cache) end
        return self:forward({ids}, {cache = cache, need_weights = false})
    end
    return mha.no_grad(function()
        local logits = feed(roll and last(tokens, self.max_len) or tokens)
        for n = 1, n_new do
            local id = draw(logits)
            tokens[#tokens + 1] = id
            if on_token and on_token(id) == false or n == n_new then break end
            if not cache then
                logits = feed(tokens)
            elseif roll and cache:length() == self.max_len then
                cache:reset()
                logits = feed(last(tokens, self.max_len // 2))
            else
                logits = feed({id})
            end
        end
        return tokens
    end)
end

-- The options that rebuild this model (for checkpoints: mha.load_model reads them back).
function Transformer:config()
    local c = {}
    for k, v in pairs(rawget(self, "_config")) do c[k] = v end
    return c
end

M.step_plan = step_plan   -- for tests/lua/test_decode.lua: step against forward, bit for bit

return M
