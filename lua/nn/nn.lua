-- lua/nn/nn.lua - module "mha.nn": the neural-network building blocks
-- (mha.nn.Module and its containers, Linear, Embedding, LayerNorm, Transformer) together;
-- lua/mha.lua makes it mha.nn.

local module = require "mha.nn.module"
local layers = require "mha.nn.layers"
local transformer = require "mha.nn.transformer"

local nn = {
    Module = module.Module,
    ModuleList = module.ModuleList,
    Sequential = module.Sequential,
    Linear = layers.Linear,
    Embedding = layers.Embedding,
    LayerNorm = layers.LayerNorm,
    Transformer = transformer.Transformer,
}

return nn
