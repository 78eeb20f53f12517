-- lua/nn/optim.lua - module "mha.nn.optim" (mha.optim): torch.optim's SGD, Adam and AdamW, and
-- clip_grad_norm (torch.nn.utils.clip_grad_norm_), over the gradients autograd leaves in p:grad().
-- The update rules are core/optim/optim.c's (through mha.optim_kernels); this file holds the
-- classes: options checked as torch does, parameter groups, each parameter's state (opt.state[p]).
--
--   opt = mha.optim.Adam(m:parameters(), {lr = 1e-3})
--   loss:backward(); opt:step(); opt:zero_grad()

local mha = require "mha.core"
local module = require "mha.nn.module"
local K = require "mha.optim_kernels"
local raise = require "mha.raise"   -- errors at the user's line

local optim = {}

-- The options of each class with their defaults (SGD's lr has none: torch 1.13 requires it).
local SPECS = {
    SGD = {order = {"lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize"},
           defaults = {momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false}},
    Adam = {order = {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize"},
            defaults = {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0, amsgrad = false, maximize = false}},
    AdamW = {order = {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize"},
             defaults = {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 1e-2, amsgrad = false,
                         maximize = false}},
}

local function f32(x) return (string.unpack("f", string.pack("f", x))) end

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

-- A list of {name, tensor} from a tensor, a list of tensors, or a name -> tensor table (sorted by
-- name, so the order - and so the result - never depends on the table's iteration order).
local function param_list(fname, params)
    if mha.is_tensor(params) then return {{"1", params}} end
    if module.is_module(params) then   -- torch's habit: optim.Adam(model), for model.parameters()
        raise(string.format("%s: params is a module; give it the module's parameters: %s(m:parameters(), ...)",
                            fname, (fname:gsub("^optim", "mha.optim"))))
    end
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
    if type(v) ~= "number" then raise(string.format("%s: option %s must be a number, got %s", fname, key, type(v))) end
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

-- An option's value as typed in Lua: 0.001, true, {0.9, 0.999}, "x".
local function lua_text(v)
    if type(v) == "string" then return string.format("%q", v) end
    if type(v) ~= "table" then return tostring(v) end
    local items = {}
    for i, item in ipairs(v) do items[i] = lua_text(item) end
    return "{" .. table.concat(items, ", ") .. "}"
end

-- Refuses torch's ways of calling an optimizer with the call mha-repl takes, built from what was
-- given: Adam{params = ..., lr = 1e-3} (torch's one group as one table) and Adam(params, 1e-3)
-- (a positional lr) both read mha.optim.Adam(params, {lr = 0.001}).
local function check_call(fname, kind, params, opts)
    local spec = SPECS[kind]
    local given   -- the options, from the keyword form or the positional lr
    if opts == nil and type(params) == "table" and not mha.is_tensor(params) and rawget(params, "params") ~= nil
       and rawget(params, 1) == nil then
        given = params
    elseif opts ~= nil and type(opts) ~= "table" then
        given = {lr = opts}
    else
        return
    end
    local named = {}
    for _, key in ipairs(spec.order) do
        if given[key] ~= nil then named[#named + 1] = key .. " = " .. lua_text(given[key]) end
    end
    local call = string.format("mha.%s(params%s)", fname, #named > 0 and ", {" .. table.concat(named, ", ") .. "}" or "")
    if given == params then
        raise(string.format("%s: the parameters and the options go in two arguments: %s, where params is " ..
                            "m:parameters() (not one table {params = ..., lr = ...})", fname, call))
    end
    raise(string.format("%s: options must be a table, got %s: write %s", fname, type(opts), call))
end

local function new_optimizer(kind, params, opts)
    local fname = "optim." .. kind
    local spec = SPECS[kind]
    check_call(fname, kind, params, opts)
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
                raise(string.format("%s: parameter %s appears more than once (in groups %d and %d)", fname, g.names[j],
                                    seen[p], i))
            end
            if not p:is_leaf() then
                raise(string.format("%s: parameter %s is not a leaf (it was computed by %s): optimize the tensors the " ..
                                    "computation starts from", fname, g.names[j], tostring(p:grad_fn())))
            end
            seen[p] = i
        end
        opt.param_groups[#opt.param_groups + 1] = g
    end
    local count = 0
    for _, g in ipairs(opt.param_groups) do count = count + #g.params end
    if count == 0 then raise(fname .. ": the optimizer got an empty parameter list") end
    return opt
end

-- mha.optim.SGD(params, {lr =, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false,
--                        maximize = false})
function optim.SGD(params, opts) return new_optimizer("SGD", params, opts) end
-- mha.optim.Adam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
--                         amsgrad = false})
function optim.Adam(params, opts) return new_optimizer("Adam", params, opts) end
-- mha.optim.AdamW(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 1e-2,
--                          amsgrad = false})
function optim.AdamW(params, opts) return new_optimizer("AdamW", params, opts) end

-- opt:step([closure]): one update of every parameter that has a gradient
-- (the others are skipped, as in torch). closure, when given, is called first (with grad on) and
-- its result returned - torch's API for optimizers that re-evaluate the loss; without one, nothing
-- is returned (the prompt prints nothing, as Python prints nothing for torch's None).
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
    if closure ~= nil then return loss end
end

-- opt:zero_grad(): every gradient forgotten (p:grad() is nil), as zero_grad(set_to_none=True)
function Optimizer:zero_grad()
    for _, g in ipairs(self.param_groups) do
        for _, p in ipairs(g.params) do p:zero_grad() end
    end
end

-- opt:add_param_group{params = ..., lr = ...}
function Optimizer:add_param_group(group)
    local fname = "optim." .. self.kind .. ":add_param_group"
    if type(group) ~= "table" or group.params == nil then
        raise(fname .. ": give a table {params = ..., option = value, ...}")
    end
    local overrides = {}
    for k, v in pairs(group) do if k ~= "params" then overrides[k] = v end end
    local g = make_group(fname, self.kind, group.params, overrides, self.defaults)
    for _, other in ipairs(self.param_groups) do
        for _, p in ipairs(other.params) do
            for j, q in ipairs(g.params) do
                if rawequal(p, q) then raise(string.format("%s: parameter %s is already in another group", fname, g.names[j])) end
            end
        end
    end
    self.param_groups[#self.param_groups + 1] = g
end

-- ---- state_dict / load_state_dict ----
-- torch.optim's state_dict is {state = {i: {...}}, param_groups = [{..., params = [i, ...]}]}, the
-- parameters numbered i from 0 in group order. Here it is that dict flattened with dotted keys, as
-- a module's state_dict is, so mha.save writes it to a .npz and mha.load reads it back:
--   state.<i>.step, state.<i>.exp_avg, state.<i>.exp_avg_sq, state.<i>.max_exp_avg_sq (Adam, AdamW)
--   state.<i>.momentum_buffer                                               (SGD with momentum)
--   param_groups.<g>.lr, .betas, .eps, .weight_decay, ..., param_groups.<g>.params = {i, ...}
-- Values: tensors (copies), numbers, booleans, lists; mha.save writes float32 and bool arrays.

local STATE_KEYS = {SGD = {"momentum_buffer"}, Adam = {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
                    AdamW = {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}}

function Optimizer:state_dict()
    local sd, index = {}, 0
    for gi, g in ipairs(self.param_groups) do
        local ids = {}
        for _, p in ipairs(g.params) do
            local st = self.state[p]
            for _, key in ipairs(STATE_KEYS[self.kind]) do
                local v = st and st[key]
                if v ~= nil then sd[string.format("state.%d.%s", index, key)] = mha.is_tensor(v) and v:clone() or v end
            end
            ids[#ids + 1] = index
            index = index + 1
        end
        local prefix = string.format("param_groups.%d.", gi - 1)
        for _, key in ipairs(SPECS[self.kind].order) do
            local v = g[key]
            sd[prefix .. key] = key == "betas" and {v[1], v[2]} or v
        end
        sd[prefix .. "params"] = ids
    end
    return sd
end

-- A value of a loaded state as a list of Lua values: a tensor's elements, a table's, or the value.
local function values_of(v)
    if mha.is_tensor(v) then
        local flat = v:contiguous():view(-1)
        local list = {}
        for i = 1, flat:numel() do list[i] = flat:get(i) end
        return list, true
    end
    if type(v) == "table" then return v, false end
    return {v}, false
end

-- A hyperparameter from a state: a value that went through a .npz (float32) and equals the current
-- one rounded to float32 keeps the current one: a resumed run is bit-identical to an unbroken run.
local function hyper_value(fname, key, v, current)
    local list, stored = values_of(v)
    local function one(x, cur)
        if type(cur) == "boolean" then
            if type(x) ~= "boolean" then raise(string.format("%s: %s must be a boolean, got %s", fname, key, type(x))) end
            return x
        end
        if type(x) ~= "number" then raise(string.format("%s: %s must be a number, got %s", fname, key, type(x))) end
        if stored and type(cur) == "number" and f32(cur) == x then return cur end
        return x
    end
    if type(current) == "table" then -- betas
        if #list ~= 2 then raise(string.format("%s: %s must hold two numbers, got %d", fname, key, #list)) end
        return {one(list[1], current[1]), one(list[2], current[2])}
    end
    if #list ~= 1 then raise(string.format("%s: %s must be one value, got %d", fname, key, #list)) end
    return one(list[1], current)
end

-- opt:load_state_dict(sd): the state of opt:state_dict() (or of mha.load of a .npz it was saved to)
-- into this optimizer, whose parameter groups must hold as many parameters as the state's, of the
-- same shapes (torch's rule). The state's tensors are copied; its hyperparameters replace the
-- groups' own (torch's rule too).
function Optimizer:load_state_dict(sd)
    local fname = "optim." .. self.kind .. ":load_state_dict"
    if type(sd) ~= "table" then raise(string.format("%s: give the table of opt:state_dict(), got %s", fname, type(sd))) end
    local params, names = {}, {}
    for _, g in ipairs(self.param_groups) do
        for j, p in ipairs(g.params) do params[#params + 1] = p; names[#params] = g.names[j] end
    end
    local state, groups = {}, {}
    for _, key in ipairs(sorted_keys(sd)) do -- sorted: the first problem reported is the same on
                                             -- every run
        local v = sd[key]
        local text = type(key) == "string" and key or ""
        local i, name = text:match("^state%.(%d+)%.([%w_]+)$")
        local gi, gkey = text:match("^param_groups%.(%d+)%.([%w_]+)$")
        if i then
            i = tonumber(i) + 1
            local known = false
            for _, k in ipairs(STATE_KEYS[self.kind]) do known = known or k == name end
            if not known or not params[i] then
                raise(string.format("%s: %s: %s", fname, key, not known
                    and string.format("%s keeps no '%s' (it keeps %s)", self.kind, name, table.concat(STATE_KEYS[self.kind], ", "))
                    or string.format("the optimizer has %d parameters (numbered from 0)", #params)))
            end
            state[i] = state[i] or {}
            state[i][name] = v
        elseif gi then
            gi = tonumber(gi) + 1
            groups[gi] = groups[gi] or {}
            groups[gi][gkey] = v
        else
            raise(string.format("%s: unknown key %s (an optimizer's state has state.<i>.<name> and " ..
                                "param_groups.<g>.<option>)", fname, tostring(key)))
        end
    end
    if #groups ~= #self.param_groups then
        raise(string.format("%s: the state has %d parameter groups, the optimizer %d", fname, #groups,
                            #self.param_groups))
    end
    -- the groups: their sizes (as torch checks), then their options
    local new_groups = {}
    for gi, g in ipairs(self.param_groups) do
        local saved = groups[gi]
        local ids = saved.params ~= nil and values_of(saved.params) or {}
        if #ids ~= #g.params then
            raise(string.format("%s: parameter group %d of the state has %d parameters, the optimizer's %d", fname,
                                gi - 1, #ids, #g.params))
        end
        local ng = {names = g.names, params = g.params}
        for _, key in ipairs(SPECS[self.kind].order) do
            ng[key] = saved[key] == nil and g[key] or hyper_value(fname, "param_groups." .. (gi - 1) .. "." .. key,
                                                                 saved[key], g[key])
        end
        for _, key in ipairs(sorted_keys(saved)) do
            local known = key == "params"
            for _, k in ipairs(SPECS[self.kind].order) do known = known or k == key end
            if not known then raise(string.format("%s: param_groups.%d.%s: %s has no option %s", fname, gi - 1, key,
                                                   self.kind, key)) end
        end
        validate(fname, self.kind, ng)
        new_groups[gi] = ng
    end
    -- the per-parameter state: copies of the tensors, of each parameter's shape
    local new_state = {}
    for _, i in ipairs(sorted_keys(state)) do
        local p, st, entries = params[i], {}, state[i]
        for _, name in ipairs(sorted_keys(entries)) do
            local v = entries[name]
            local key = string.format("state.%d.%s", i - 1, name)
            if name == "step" then
                local list = values_of(v)
                local n = #list == 1 and math.tointeger(list[1])
                if not n or n < 0 then raise(string.format("%s: %s must be a whole number of steps", fname, key)) end
                st.step = n
            else
                local function shape(t) return "(" .. table.concat(t:shape(), ",") .. ")" end
                if not mha.is_tensor(v) or v:dtype() ~= "float32" or shape(v) ~= shape(p) then
                    raise(string.format("%s: %s must be a float32 tensor of parameter %s's shape %s, got %s", fname, key,
                                        names[i], shape(p), mha.is_tensor(v) and v:dtype() .. " " .. shape(v) or type(v)))
                end
                st[name] = v:contiguous():clone()
            end
        end
        new_state[p] = st
    end
    self.param_groups, self.state = new_groups, new_state
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

-- mha.clip_grad_norm(params, max_norm): scales every gradient by min(1, max_norm / (total + 1e-6))
-- where total is the 2-norm of all the gradients together (the norm of each gradient's norm), and
-- returns total, as torch.nn.utils.clip_grad_norm_ does. Parameters with no gradient are left out.
function optim.clip_grad_norm(params, max_norm, norm_type)
    local fname = "clip_grad_norm"
    if type(max_norm) ~= "number" or not (max_norm >= 0) then
        raise(string.format("%s: max_norm must be a non-negative number, got %s", fname, tostring(max_norm)))
    end
    if norm_type ~= nil and norm_type ~= 2 then
        raise(string.format("%s: only norm_type 2 (the Euclidean norm) is supported, got %s", fname, tostring(norm_type)))
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

-- opt.step() (Python's habit) says to call it with a colon, at the user's line.
local function is_optimizer(v) return getmetatable(v) == Optimizer end
for key, f in pairs(Optimizer) do
    if type(f) == "function" then Optimizer[key] = module.method(key, f, is_optimizer, "opt") end
end

return optim
