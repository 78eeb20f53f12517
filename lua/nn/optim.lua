-- lua/nn/optim.lua - module "mha.nn.optim" (mha.optim): torch.optim's SGD, Adam and AdamW, and clip_grad_norm
-- (torch.nn.utils.clip_grad_norm_), over the gradients autograd leaves in p:grad(). The update rules are
-- core/optim.c's (through mha.optim_kernels); this file holds the classes: options checked as torch checks
-- them, parameter groups, and the per-parameter state (opt.state[p].exp_avg, ...).
--
--   opt = mha.optim.Adam(m:parameters(), {lr = 1e-3})
--   loss:backward(); opt:step(); opt:zero_grad()

local mha = require "mha"
local module = require "mha.nn.module"
local K = require "mha.optim_kernels"
local raise = require "mha.raise"   -- errors at the user's line

local optim = {}

-- The options of each class with their defaults (lr of SGD has none: it must be given, as in torch 1.13).
local SPECS = {
    SGD = {order = {"lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize"},
           defaults = {momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false}},
    Adam = {order = {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize"},
            defaults = {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0, amsgrad = false, maximize = false}},
    AdamW = {order = {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize"},
             defaults = {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 1e-2, amsgrad = false,
                         maximize = false}},
}

-- ---- parameters ----

local function sorted_keys(t)
    local keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
        if type(a) == type(b) and (type(a) == "string" or type(a) == "number") then return a < b end
        return type(a) == "number"
    end)
    return keys
end

-- A list of {name, tensor} from a tensor, a list of tensors, or a name -> tensor table (sorted by name, so
-- the order - and so the result - never depends on the table's iteration order).
local function param_list(fname, params)
    if mha.is_tensor(params) then return {{"1", params}} end
    if type(params) ~= "table" then
        raise(string.format("%s: params must be a list of tensors or a table name -> tensor (m:parameters()), got %s",
                            fname, type(params)))
    end
    local list = {}
    for _, key in ipairs(sorted_keys(params)) do
        local p = params[key]
        if not mha.is_tensor(p) then
            raise(string.format("%s: params[%s] is %s; an optimizer optimizes tensors", fname,
                                type(key) == "string" and string.format("%q", key) or tostring(key), type(p)))
        end
        list[#list + 1] = {tostring(key), p}
    end
    return list
end

-- ---- options, checked as torch.optim checks them ----

local function check_number(fname, key, v)
    if type(v) ~= "number" then error(string.format("%s: option %s must be a number, got %s", fname, key, type(v)), 0) end
end

local function validate(fname, kind, g)
    local function bad(what, value)
        raise(string.format("%s: invalid %s: %s (as torch.optim refuses it)", fname, what, tostring(value)))
    end
    if g.lr == nil then
        raise(string.format("%s: option lr is required, e.g. mha.optim.SGD(params, {lr = 0.1})", fname))
    end
    for _, key in ipairs{"lr", "weight_decay", "momentum", "dampening", "eps"} do
        if g[key] ~= nil then check_number(fname, key, g[key]) end
    end
    for _, key in ipairs{"nesterov", "amsgrad", "maximize"} do
        if g[key] ~= nil and type(g[key]) ~= "boolean" then
            raise(string.format("%s: option %s must be a boolean, got %s", fname, key, type(g[key])))
        end
    end
    if not (g.lr >= 0) then bad("learning rate", g.lr) end
    if not (g.weight_decay >= 0) then bad("weight_decay value", g.weight_decay) end
    if kind == "SGD" then
        if not (g.momentum >= 0) then bad("momentum value", g.momentum) end
        if g.nesterov and (g.momentum <= 0 or g.dampening ~= 0) then
            raise(string.format("%s: Nesterov momentum requires a momentum and zero dampening (got momentum %s, " ..
                                "dampening %s)", fname, tostring(g.momentum), tostring(g.dampening)))
        end
    else
        if not (g.eps >= 0) then bad("epsilon value", g.eps) end
        local betas = g.betas
        if type(betas) ~= "table" or type(betas[1]) ~= "number" or type(betas[2]) ~= "number" or #betas ~= 2 then
            raise(string.format("%s: option betas must be a table of two numbers, e.g. {0.9, 0.999}", fname))
        end
        for i = 1, 2 do
            if not (betas[i] >= 0 and betas[i] < 1) then bad("beta parameter at index " .. i, betas[i]) end
        end
    end
end

-- A parameter group: the options given, the class defaults for the rest, and the parameters.
local function make_group(fname, kind, params, opts, base)
    local spec = SPECS[kind]
    module.check_options(fname, opts, spec.order)
    local g = {}
    for _, key in ipairs(spec.order) do
        local v = opts and opts[key]
        if v == nil then v = base[key] end
        if key == "betas" and type(v) == "table" then v = {v[1], v[2]} end -- the group's own copy
        g[key] = v
    end
    validate(fname, kind, g)
    g.names, g.params = {}, {}
    for _, item in ipairs(param_list(fname, params)) do
        g.names[#g.names + 1] = item[1]
        g.params[#g.params + 1] = item[2]
    end
    return g
end

-- ---- the optimizer classes ----

local Optimizer = {}
Optimizer.__index = Optimizer
Optimizer.__name = "mha.optim"   -- help(opt) shows the mha.optim topic

local function new_optimizer(kind, params, opts)
    local fname = "optim." .. kind
    local spec = SPECS[kind]
    local opt = setmetatable({kind = kind, state = {}, param_groups = {}}, Optimizer)
    module.check_options(fname, opts, spec.order)
    opt.defaults = {}
    for _, key in ipairs(spec.order) do
        local v = opts and opts[key]
        if v == nil then v = spec.defaults[key] end
        opt.defaults[key] = v
    end
    -- a list of groups {params = ..., lr = ...}, as torch accepts, or the parameters themselves
    local is_groups = type(params) == "table" and not mha.is_tensor(params) and type(params[1]) == "table"
                      and not mha.is_tensor(params[1]) and params[1].params ~= nil
    local groups = is_groups and params or {{params = params}}
    local seen = {}
    for i, group in ipairs(groups) do
        local overrides = {}
        for k, v in pairs(group) do if k ~= "params" then overrides[k] = v end end
        local g = make_group(fname, kind, group.params, overrides, opt.defaults)
        for j, p in ipairs(g.params) do
            if seen[p] then
                error(string.format("%s: parameter %s appears more than once (in groups %d and %d)", fname, g.names[j],
                                    seen[p], i), 2)
            end
            if not p:is_leaf() then
                error(string.format("%s: parameter %s is not a leaf (it was computed by %s): optimize the tensors the " ..
                                    "computation starts from", fname, g.names[j], tostring(p:grad_fn())), 2)
            end
            seen[p] = i
        end
        opt.param_groups[#opt.param_groups + 1] = g
    end
    local count = 0
    for _, g in ipairs(opt.param_groups) do count = count + #g.params end
    if count == 0 then error(fname .. ": the optimizer got an empty parameter list", 2) end
    return opt
end

-- mha.optim.SGD(params, {lr =, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false})
function optim.SGD(params, opts) return new_optimizer("SGD", params, opts) end
-- mha.optim.Adam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0, amsgrad = false})
function optim.Adam(params, opts) return new_optimizer("Adam", params, opts) end
-- mha.optim.AdamW(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 1e-2, amsgrad = false})
function optim.AdamW(params, opts) return new_optimizer("AdamW", params, opts) end

-- opt:step([closure]): one update of every parameter that has a gradient (the others are skipped, as in
-- torch). closure, when given, is called first (with grad on) and its result returned - torch's API for
-- optimizers that re-evaluate the loss.
function Optimizer:step(closure)
    local loss
    if closure ~= nil then loss = closure() end
    mha.no_grad(function()
        for _, g in ipairs(self.param_groups) do
            for i, p in ipairs(g.params) do
                local state = self.state[p] or {}
                local stepped
                if self.kind == "SGD" then stepped = K.sgd_step(p, state, g, g.names[i])
                else stepped = K.adam_step(p, state, g, g.names[i], self.kind == "AdamW") end
                if stepped then self.state[p] = state end
            end
        end
    end)
    return loss
end

-- opt:zero_grad(): every parameter's gradient forgotten (p:grad() is nil), as zero_grad(set_to_none=True).
function Optimizer:zero_grad()
    for _, g in ipairs(self.param_groups) do
        for _, p in ipairs(g.params) do p:zero_grad() end
    end
end

-- opt:add_param_group{params = ..., lr = ...}
function Optimizer:add_param_group(group)
    local fname = "optim." .. self.kind .. ":add_param_group"
    if type(group) ~= "table" or group.params == nil then
        error(fname .. ": give a table {params = ..., option = value, ...}", 2)
    end
    local overrides = {}
    for k, v in pairs(group) do if k ~= "params" then overrides[k] = v end end
    local g = make_group(fname, self.kind, group.params, overrides, self.defaults)
    for _, other in ipairs(self.param_groups) do
        for _, p in ipairs(other.params) do
            for j, q in ipairs(g.params) do
                if rawequal(p, q) then error(string.format("%s: parameter %s is already in another group", fname, g.names[j]), 2) end
            end
        end
    end
    self.param_groups[#self.param_groups + 1] = g
end

-- As torch's repr: the class, then each group's options in alphabetical order.
local function py_value(v)
    if type(v) == "boolean" then return v and "True" or "False" end
    if type(v) == "table" then return "(" .. tostring(v[1]) .. ", " .. tostring(v[2]) .. ")" end
    return tostring(v)
end

function Optimizer:__tostring()
    local lines = {self.kind .. " ("}
    for i, g in ipairs(self.param_groups) do
        lines[#lines + 1] = "Parameter Group " .. (i - 1)
        local keys = {}
        for _, key in ipairs(SPECS[self.kind].order) do keys[#keys + 1] = key end
        table.sort(keys)
        for _, key in ipairs(keys) do lines[#lines + 1] = "    " .. key .. ": " .. py_value(g[key]) end
    end
    lines[#lines + 1] = ")"
    return table.concat(lines, "\n")
end

-- ---- clip_grad_norm ----

local function f32(x) return (string.unpack("f", string.pack("f", x))) end

-- mha.clip_grad_norm(params, max_norm): scales every gradient by min(1, max_norm / (total + 1e-6)) where
-- total is the 2-norm of all the gradients together (the norm of each gradient's norm), and returns total,
-- as torch.nn.utils.clip_grad_norm_ does. Parameters without a gradient are left out.
function optim.clip_grad_norm(params, max_norm, norm_type)
    local fname = "clip_grad_norm"
    if type(max_norm) ~= "number" or not (max_norm >= 0) then
        error(string.format("%s: max_norm must be a non-negative number, got %s", fname, tostring(max_norm)), 2)
    end
    if norm_type ~= nil and norm_type ~= 2 then
        error(string.format("%s: only norm_type 2 (the Euclidean norm) is supported, got %s", fname, tostring(norm_type)), 2)
    end
    local with_grad, sum = {}, 0
    for _, item in ipairs(param_list(fname, params)) do
        local norm = K.grad_norm(item[2])
        if norm then
            with_grad[#with_grad + 1] = item[2]
            sum = sum + norm * norm
        end
    end
    if #with_grad == 0 then return 0.0 end
    local total = f32(math.sqrt(sum))
    local coef = K.clip_coef(total, max_norm)
    for _, p in ipairs(with_grad) do K.scale_grad(p, coef) end
    return total
end

return optim
