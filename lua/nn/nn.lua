-- lua/nn/nn.lua - module "mha.nn": the neural-network building blocks (mha.nn.Module and its containers,
-- Linear, Embedding, LayerNorm) together, installed into the mha table with mha.optim and mha.clip_grad_norm.

local module = require "mha.nn.module"
local layers = require "mha.nn.layers"
local optim = require "mha.nn.optim"
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

-- The methods MultiheadAttention (a C userdata) shares with the Lua modules: luaopen_mha adds those it
-- lacks to its method table, so it is a child like any other and a model of its own.
nn.multihead_methods = module.multihead_methods

-- Install into the mha table: luaopen_mha (mha-repl and mha.so alike) sets package.loaded.mha before it
-- requires this module, as mha.display does for its functions, so require "mha" is that table.
local mha = require "mha"
mha.nn = nn
mha.optim = optim
mha.clip_grad_norm = optim.clip_grad_norm
-- training on toy tasks, head detectors, shipped models (lua/train/)
mha.tasks = require "mha.tasks"
mha.train = require "mha.train"
mha.heads = require "mha.heads"
local models = require "mha.models"
mha.load_model, mha.save_model = models.load_model, models.save_model

return nn
