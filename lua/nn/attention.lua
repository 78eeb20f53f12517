-- lua/nn/attention.lua - module "mha.nn.attention": attention as a Transformer block runs it,
-- LLaMA-style (q/k/v/o projections, fewer K/V heads, RoPE, ALiBi, windows) and from a KV cache.
--
-- Attention{d_model = E, heads = H, kv_heads = H_kv} holds LLaMA's four projections, no biases:
--   q_proj.weight (H·D, E), k_proj.weight (H_kv·D, E), v_proj.weight (H_kv·D, E),
--   o_proj.weight (E, H·D)
-- with D = E / H. Query head h (0-based) reads K/V head h // (H / H_kv), torch's repeat_interleave
-- order. M.multihead(attn, x, ctx) runs the same computation with an nn.MultiheadAttention's
-- weights (in_proj split into q, k, v rows), so a default model decodes from a cache too.
--
-- ctx, built once per forward by the Transformer and shared by its layers:
--   offset   the position of the first new token (0-based; the cache's length)
--   rope     {layout =, base =} when pos = "rope"; stream = true turns the keys at their places
--            in the cache (StreamingLLM), else each key once at its own position
--   mask     bool (L, S) (true = not allowed) or float (H, L, S) added to the scores (ALiBi)
--   cache    the KV cache or nil;  layer  this block's index in it
--   need_weights  false skips forming the (N, H, L, S) weights

local mha = require "mha.core"
local module = require "mha.nn.module"
local layers = require "mha.nn.layers"

local Module = module.Module
local M = {}

-- q (N, H, L, D), k and v (N, H_kv, S, D), mask as in ctx -> out (N, H, L, D), weights
-- (N, H, L, S). Query head h reads K/V head h // (H / H_kv) (torch's enable_gqa), found by index in
-- the core: K and V are never copied per query head.
local function attend(q, k, v, mask, need_weights)
    local opts = {attn_mask = mask, need_weights = need_weights,
                  enable_gqa = k:size(2) ~= q:size(2)}
    return mha.scaled_dot_product_attention(q, k, v, opts)
end

-- y (N, L, heads·D) -> (N, heads, L, D)
local function split_heads(y, heads)
    local N, L, HD = table.unpack(y:shape())
    return y:view(N, L, heads, HD // heads):transpose(2, 3)
end

-- q (N, H, L, D), k and v (N, H_kv, L, D) of the new tokens -> concat (N, L, H·D), weights.
-- RoPE turns q at offset..; the cache appends k and v to what it holds for this layer.
local function heads_attention(q, k, v, ctx)
    local rope = ctx.rope
    if rope then
        local turn = {layout = rope.layout, base = rope.base, offset = ctx.offset}
        q = mha.rope(q, turn)
        if not rope.stream then k = mha.rope(k, turn) end
    end
    if ctx.cache then k, v = ctx.cache:append(ctx.layer, k, v) end
    if rope and rope.stream then   -- keys kept before RoPE, turned at their places 0..S-1
        k = mha.rope(k, {layout = rope.layout, base = rope.base})
    end
    local out, weights = attend(q, k, v, ctx.mask, ctx.need_weights)
    local N, H, L, D = table.unpack(out:shape())
    return out:transpose(2, 3):reshape(N, L, H * D), weights
end

local Attention = Module:extend("Attention")
M.Attention = Attention

-- Attention{d_model =, heads =, kv_heads =}: the four projections in LLaMA's order (q, k, v, o).
function Attention:init(o)
    local E, D = o.d_model, o.d_model // o.heads
    self.q_proj = layers.Linear{in_features = E, out_features = o.heads * D, bias = false}
    self.k_proj = layers.Linear{in_features = E, out_features = o.kv_heads * D, bias = false}
    self.v_proj = layers.Linear{in_features = E, out_features = o.kv_heads * D, bias = false}
    self.o_proj = layers.Linear{in_features = o.heads * D, out_features = E, bias = false}
    rawset(self, "heads", o.heads)
    rawset(self, "kv_heads", o.kv_heads)
end

-- x (N, L, E) -> (N, L, E), weights (N, H, L, S) when ctx.need_weights.
function Attention:forward(x, ctx)
    local q = split_heads(self.q_proj(x), rawget(self, "heads"))
    local k = split_heads(self.k_proj(x), rawget(self, "kv_heads"))
    local v = split_heads(self.v_proj(x), rawget(self, "kv_heads"))
    local concat, weights = heads_attention(q, k, v, ctx)
    return self.o_proj(concat), weights
end

function Attention:extra_repr()
    return string.format("heads=%d, kv_heads=%d", rawget(self, "heads"), rawget(self, "kv_heads"))
end

-- An nn.MultiheadAttention (batch_first, E = kdim = vdim) on x (N, L, E) with ctx: the numbers of
-- its forward with the mask, computed here so the K and V of each head reach the cache.
function M.multihead(attn, x, ctx)
    local E, H = attn.embed_dim, attn.num_heads
    -- one product with all of in_proj (W_q, W_k, W_v by rows): (N, L, 3E), each E columns a view
    local qkv = mha.linear(x, attn.in_proj_weight, attn.in_proj_bias)
    local function proj(i) return split_heads(qkv:narrow(3, i * E + 1, E), H) end
    local concat, weights = heads_attention(proj(0), proj(1), proj(2), ctx)
    return mha.linear(concat, attn.out_proj_weight, attn.out_proj_bias), weights
end

return M
