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
-- MultiheadAttention, a C type, takes from mha.nn the module methods it lacks (below).

local core = require "mha.core"
local display = require "mha.display"
local nn = require "mha.nn"
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
mha.show_attention = require("mha.attention_map").show_attention

mha.nn = nn
mha.optim = optim
mha.clip_grad_norm = optim.clip_grad_norm

mha.tasks = require "mha.tasks"
mha.train = require "mha.train"
mha.heads = require "mha.heads"
mha.interp = require "mha.interp"
mha.data = require "mha.data"
mha.tokenizer = require "mha.tokenizer"
mha.load_model, mha.save_model = models.load_model, models.save_model
mha.generate = require("mha.writing").generate
mha.fill_mask = require("mha.mlm").fill_mask

-- state_dict, load_state_dict, train, eval, to, named_parameters: so a MultiheadAttention is a
-- child like any other module and a model of its own
core.add_multihead_methods(nn.multihead_methods)

return mha
