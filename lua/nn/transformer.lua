-- lua/nn/transformer.lua - module "mha.nn.transformer": mha.nn.Transformer, a small decoder-only
-- transformer of the core's parts (Embedding, MultiheadAttention, LayerNorm, Linear) for toy tasks.
--
--   model = mha.nn.Transformer{vocab = 10, d_model = 32, heads = 2, layers = 2, d_ff = 0,
--                              max_len = 32}
--   logits = model:forward({{1, 2, 3}})      -- (N, L, vocab) for tokens (N, L), 1-based ids
--   model:attention()                        -- {(N, H, L, L), ...}: each layer's per-head weights
--
-- The structure and the state_dict keys are those of the PyTorch copy in
-- tests/fixtures/gen/gen_transformer.py:
--   embed.weight (vocab, d_model), pos.weight (max_len, d_model) when pos = "learned",
--   layers.i.ln1.{weight,bias},
--   layers.i.attn.{in_proj_weight,in_proj_bias,out_proj.weight,out_proj.bias},
--   layers.i.ln2.*, layers.i.mlp.fc1.*, layers.i.mlp.fc2.* (when d_ff > 0), ln_f.* (norm = "pre"),
--   unembed.weight (vocab, d_model), no bias.
-- Per layer, x of shape (N, L, E):
--   pre:  x = x + attn(ln1(x));  x = x + mlp(ln2(x))   and ln_f before the unembedding
--   post: x = ln1(x + attn(x));  x = ln2(x + mlp(x))
--   none: x = x + attn(x);       x = x + mlp(x)
-- mlp(x) = fc2(gelu(fc1(x))). Attention is causal (query i sees keys 1..i) unless causal = false.

local mha = require "mha.core"
local module = require "mha.nn.module"
local layers = require "mha.nn.layers"
local raise = require "mha.raise"   -- errors at the user's line

local Module = module.Module
local M = {}

local MLP = Module:extend("MLP")

function MLP:init(d_model, d_ff)
    self.fc1 = layers.Linear{in_features = d_model, out_features = d_ff}
    self.fc2 = layers.Linear{in_features = d_ff, out_features = d_model}
end

function MLP:forward(x)
    return self.fc2(mha.gelu(self.fc1(x)))
end

local Block = Module:extend("Block")

-- Children in the order of the PyTorch copy, so state_dict lists the same keys in the same order.
function Block:init(o)
    if o.norm ~= "none" then self.ln1 = layers.LayerNorm{normalized_shape = o.d_model} end
    self.attn = mha.MultiheadAttention{embed_dim = o.d_model, num_heads = o.heads, batch_first = true}
    if o.d_ff > 0 then
        if o.norm ~= "none" then self.ln2 = layers.LayerNorm{normalized_shape = o.d_model} end
        self.mlp = MLP(o.d_model, o.d_ff)
    end
    rawset(self, "norm", o.norm)
end

-- x (N, L, E) -> (N, L, E), and the per-head weights (N, H, L, L) when need_weights.
function Block:forward(x, attn_opts)
    local norm = rawget(self, "norm")
    local a_in = norm == "pre" and self.ln1(x) or x
    local a, w = self.attn:forward(a_in, a_in, a_in, attn_opts)
    x = x + a
    if norm == "post" then x = self.ln1(x) end
    if self.mlp then
        local m_in = norm == "pre" and self.ln2(x) or x
        x = x + self.mlp(m_in)
        if norm == "post" then x = self.ln2(x) end
    end
    return x, w
end

local Transformer = Module:extend("Transformer")
M.Transformer = Transformer

local OPTIONS = {"vocab", "d_model", "heads", "layers", "d_ff", "max_len", "causal", "norm", "pos"}
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
    local d_ff = opts.d_ff == nil and 4 * o.d_model or opts.d_ff
    if math.type(d_ff) ~= "integer" and not (type(d_ff) == "number" and d_ff == math.floor(d_ff)) or d_ff < 0 then
        raise(string.format("%s: option d_ff must be a whole number >= 0 (0 = attention-only), got %s", fname,
                            tostring(d_ff)))
    end
    o.d_ff = math.tointeger(d_ff)
    if o.d_model % o.heads ~= 0 then
        raise(string.format("%s: d_model %d must be divisible by heads %d", fname, o.d_model, o.heads))
    end
    o.causal = module.opt_boolean(fname, opts, "causal", true)
    o.norm = opt_choice(fname, opts, "norm", {"pre", "post", "none"}, "pre")
    o.pos = opt_choice(fname, opts, "pos", {"learned", "sinusoidal"}, "learned")
    rawset(self, "_config", o)
    for _, k in ipairs({"vocab", "d_model", "heads", "max_len", "d_ff", "causal"}) do rawset(self, k, o[k]) end
    self.embed = layers.Embedding{num_embeddings = o.vocab, embedding_dim = o.d_model}
    if o.pos == "learned" then
        self.pos = layers.Embedding{num_embeddings = o.max_len, embedding_dim = o.d_model}
    else
        rawset(self, "pe", mha.positional_encoding(o.max_len, o.d_model))
    end
    local list = module.ModuleList()
    for _ = 1, o.layers do list:append(Block(o)) end
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

-- model:forward(tokens [, {need_weights = true}]) -> logits (N, L, vocab). need_weights = false
-- skips forming the attention weights (the fused path training takes); model:attention() is then
-- empty.
function Transformer:forward(tokens, opts)
    local need = not (opts and opts.need_weights == false)
    local t, _, L = token_tensor(self, tokens)
    local x = self.embed(t)   -- (N, L, E); Embedding checks the ids' range and names it
    if self.pos then
        x = x + self.pos.weight:narrow(1, 1, L)
    else
        x = x + rawget(self, "pe"):narrow(1, 1, L)
    end
    local attn_opts = {need_weights = need, average_attn_weights = false}
    if self.causal then attn_opts.attn_mask = mha.causal_mask(L) end
    local maps = {}
    for i = 1, self.layers do
        local w
        x, w = self:blocks()[i]:forward(x, attn_opts)
        maps[i] = w and w:detach() or nil
    end
    rawset(self, "_attention", maps)
    if self.ln_f then x = self.ln_f(x) end
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

function Transformer:extra_repr()
    return string.format("vocab=%d, d_model=%d, heads=%d, layers=%d, d_ff=%d, max_len=%d, causal=%s, norm=%s, pos=%s",
                         self.vocab, self.d_model, self.heads, self.layers, self.d_ff, self.max_len,
                         tostring(self.causal), rawget(self, "_config").norm, rawget(self, "_config").pos)
end

-- The options that rebuild this model (for checkpoints: mha.load_model reads them back).
function Transformer:config()
    local c = {}
    for k, v in pairs(rawget(self, "_config")) do c[k] = v end
    return c
end

return M
