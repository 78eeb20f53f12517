-- lua/mha.lua - the package "mha": the C core module "mha.core" and the Lua parts assembled into
-- the one table `require "mha"` returns (torch7's init.lua over libtorch). Each name comes from:
--
--   mha.core (lua/bind/, C)  tensor zeros ones full eye arange rand randn is_tensor seed
--                            manual_seed get_seed load save memory reset_peak threads isa clock
--                            where cat stack positional_encoding causal_mask sdpa
--                            scaled_dot_product_attention MultiheadAttention, the tensor functions
--                            (exp, add, sum, softmax, matmul, linear, layer_norm, ...), the
--                            views (view, transpose, ...), autograd (no_grad, embedding, ...),
--                            rope alibi_slopes alibi_bias sliding_window_mask sample
--   mha.display (lua/show/)  format show printoptions heat; show_attention (from mha.attention_map)
--   mha.nn (lua/nn/)         nn, optim, clip_grad_norm
--   mha.interp (lua/interp/) ablate patch logit_lens attribution
--   lua/train/               tasks train heads data tokenizer (modules), load_model
--                            save_model (from mha.models), generate (from mha.writing),
--                            fill_mask (from mha.mlm)
--
-- MultiheadAttention, a C type, takes from mha.nn.module the module methods it lacks (below).

local core = require "mha.core"
local display = require "mha.display"
local nn = require "mha.nn"
local module = require "mha.nn.module"   -- the methods MultiheadAttention shares (not in mha.nn)
local optim = require "mha.nn.optim"
local models = require "mha.models"

local mha = {}
for name, value in pairs(core) do
    if name ~= "add_multihead_methods" then mha[name] = value end
end

mha.format = display.format
mha.show = display.show
mha.printoptions = display.printoptions
mha.heat = display.heat

mha.nn = nn
mha.optim = optim
mha.clip_grad_norm = optim.clip_grad_norm

mha.load_model, mha.save_model = models.load_model, models.save_model

-- Loaded at the first use of their name, as the REPL's plot and help are (lua/repl/lazy.c), so that
-- a start which needs none of them stays fast (tests/sh/test_cli.sh holds it under 15 ms of CPU).
-- pairs(mha), which completion and did-you-mean walk, loads them all first.
local LAZY = {
    tasks = function() return require "mha.tasks" end,
    train = function() return require "mha.train" end,
    heads = function() return require "mha.heads" end,
    interp = function() return require "mha.interp" end,
    data = function() return require "mha.data" end,
    tokenizer = function() return require "mha.tokenizer" end,
    generate = function() return require("mha.writing").generate end,
    fill_mask = function() return require("mha.mlm").fill_mask end,
    show_attention = function() return require("mha.attention_map").show_attention end,
}
setmetatable(mha, {
    __index = function(t, name)
        local load = LAZY[name]
        if load == nil then return nil end
        local value = load()
        rawset(t, name, value)
        return value
    end,
    __pairs = function(t)
        for name in pairs(LAZY) do local _ = t[name] end
        return next, t, nil
    end,
})

-- state_dict, load_state_dict, train, eval, to, named_parameters: so a MultiheadAttention is a
-- child like any other module and a model of its own (handed over here, not kept in mha.nn, where
-- Tab would offer it to students)
core.add_multihead_methods(module.multihead_methods)

return mha
