-- lua/nn/nn.lua - module "mha.nn": the neural-network building blocks (mha.nn.Module and its containers,
-- Linear, Embedding, LayerNorm) together, installed into the mha table with mha.optim and mha.clip_grad_norm.

local module = require "mha.nn.module"
local layers = require "mha.nn.layers"
local optim = require "mha.nn.optim"

local nn = {
    Module = module.Module,
    ModuleList = module.ModuleList,
    Sequential = module.Sequential,
    Linear = layers.Linear,
    Embedding = layers.Embedding,
    LayerNorm = layers.LayerNorm,
}

-- The methods MultiheadAttention (a C userdata) shares with the Lua modules: luaopen_mha adds those it
-- lacks to its method table, so it is a child like any other and a model of its own.
nn.multihead_methods = module.multihead_methods

-- Install into the mha table when it is there (mha-repl and mha.so both create it first).
local mha = package.loaded.mha
if type(mha) == "table" then
    mha.nn = nn
    mha.optim = optim
    mha.clip_grad_norm = optim.clip_grad_norm
end

return nn
