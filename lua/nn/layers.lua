-- lua/nn/layers.lua - module "mha.nn.layers": Linear, Embedding and LayerNorm beside
-- MultiheadAttention, with PyTorch 1.13's parameter names, shapes and initialisation (drawn from
-- mha.seed's generator). The math is the core's: mha.linear, mha.embedding, mha.layer_norm.

local mha = require "mha.core"
local module = require "mha.nn.module"
local raise = require "mha.raise"   -- errors at the user's line

local Module = module.Module
local L = {}

local function py_bool(b) return b and "True" or "False" end

-- ---- Linear: y = x·Wᵀ + b ----

local Linear = Module:extend("Linear")
L.Linear = Linear

-- mha.nn.Linear{in_features = 4, out_features = 2, bias = true}
-- weight (out,in) ~ kaiming_uniform_(a = √5): U(-bound, bound), bound = √3 · gain / √fan_in with
-- gain = √(2 / (1 + a²)), which is 1/√in_features; bias (out) ~ U(-1/√fan_in, 1/√fan_in). Weight
-- first, then bias, as nn.Linear.reset_parameters draws them.
function Linear:init(opts)
    local fname = "nn.Linear"
    module.check_options(fname, opts, {"in_features", "out_features", "bias"})
    opts = opts or {}
    local example = "mha.nn.Linear{in_features = 4, out_features = 2}"
    self.in_features = module.opt_size(fname, opts, "in_features", nil, example)
    self.out_features = module.opt_size(fname, opts, "out_features", nil, example)
    local bias = module.opt_boolean(fname, opts, "bias", true)
    local a = math.sqrt(5)
    local gain = math.sqrt(2.0 / (1 + a * a))
    local bound = math.sqrt(3.0) * gain / math.sqrt(self.in_features)
    self:register_parameter("weight", mha.zeros(self.out_features, self.in_features):uniform_(-bound, bound))
    if bias then
        local b = 1 / math.sqrt(self.in_features)
        self:register_parameter("bias", mha.zeros(self.out_features):uniform_(-b, b))
    end
end

-- x (..., in_features) -> (..., out_features)
function Linear:forward(x)
    return mha.linear(x, self.weight, self.bias)
end

function Linear:extra_repr()
    return string.format("in_features=%d, out_features=%d, bias=%s", self.in_features, self.out_features,
                         py_bool(self.bias ~= nil))
end

-- ---- Embedding: row i of the weight for index i ----

local Embedding = Module:extend("Embedding")
L.Embedding = Embedding

-- mha.nn.Embedding{num_embeddings = 10, embedding_dim = 4}: weight (num_embeddings, embedding_dim),
-- drawn from N(0, 1).
function Embedding:init(opts)
    local fname = "nn.Embedding"
    module.check_options(fname, opts, {"num_embeddings", "embedding_dim"})
    opts = opts or {}
    local example = "mha.nn.Embedding{num_embeddings = 10, embedding_dim = 4}"
    self.num_embeddings = module.opt_size(fname, opts, "num_embeddings", nil, example)
    self.embedding_dim = module.opt_size(fname, opts, "embedding_dim", nil, example)
    self:register_parameter("weight", mha.randn(self.num_embeddings, self.embedding_dim))
end

-- indices: 1-based, a table (nested like the shape) or a tensor of whole numbers, shape (...) ->
-- (..., embedding_dim)
function Embedding:forward(indices)
    return mha.embedding(indices, self.weight)
end

function Embedding:extra_repr()
    return string.format("%d, %d", self.num_embeddings, self.embedding_dim)
end

-- ---- LayerNorm: (x - mean) / √(var + eps) · weight + bias over the last dims ----

local LayerNorm = Module:extend("LayerNorm")
L.LayerNorm = LayerNorm

-- mha.nn.LayerNorm{normalized_shape = 8, eps = 1e-5, elementwise_affine = true}: weight ones, bias
-- zeros, of shape normalized_shape (a number n for (n), or a table of the last dims' sizes).
function LayerNorm:init(opts)
    local fname = "nn.LayerNorm"
    module.check_options(fname, opts, {"normalized_shape", "eps", "elementwise_affine"})
    opts = opts or {}
    local shape = opts.normalized_shape
    if type(shape) == "number" then shape = {shape} end
    local valid = type(shape) == "table" and #shape > 0
    for _, n in ipairs(valid and shape or {}) do valid = valid and math.type(n) == "integer" and n >= 1 end
    if not valid then
        raise("nn.LayerNorm: option normalized_shape is required: a positive integer (the last dim's size) or a " ..
              "table of the last dims' sizes, e.g. mha.nn.LayerNorm{normalized_shape = 8}")
    end
    self.normalized_shape = shape
    local eps = opts.eps == nil and 1e-5 or opts.eps
    if type(eps) ~= "number" or not (eps >= 0) then
        raise("nn.LayerNorm: option eps must be a non-negative number, got " .. tostring(eps))
    end
    self.eps = eps
    self.elementwise_affine = module.opt_boolean(fname, opts, "elementwise_affine", true)
    if self.elementwise_affine then
        self:register_parameter("weight", mha.ones(shape))
        self:register_parameter("bias", mha.zeros(shape))
    end
end

function LayerNorm:forward(x)
    return mha.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
end

function LayerNorm:extra_repr()
    local dims = {}
    for i, n in ipairs(self.normalized_shape) do dims[i] = tostring(n) end
    local shape = #dims == 1 and "(" .. dims[1] .. ",)" or "(" .. table.concat(dims, ", ") .. ")"
    return string.format("%s, eps=%g, elementwise_affine=%s", shape, self.eps, py_bool(self.elementwise_affine))
end

return L
