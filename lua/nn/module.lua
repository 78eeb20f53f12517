-- lua/nn/module.lua - module "mha.nn.module": the Module base of mha.nn, as Torch7's nn.Module and
-- torch.nn.Module: named parameters and children, PyTorch's dotted state_dict keys, containers.
--
--   local Block = mha.nn.Module:extend("Block")
--   function Block:init(opts)                        -- runs when Block{...} is called
--       self.attn = mha.MultiheadAttention{embed_dim = opts.E, num_heads = 2}  -- a child, assigned
--       self.norm = mha.nn.LayerNorm{normalized_shape = opts.E}
--   end
--   function Block:forward(x) return self.norm(x + self.attn(x, x, x, {need_weights = false})) end
--   b = Block{E = 8};  b:state_dict()   -- attn.in_proj_weight, ..., attn.out_proj.bias,
--                                       -- norm.weight, norm.bias
--
-- An instance keeps its parameters and children apart from its plain fields (m._parameters,
-- m._modules, each {names = {...in order...}, values = {name = value}}), as PyTorch does, so that
-- assigning a module registers it as a child and state_dict lists everything in registration order.
-- mha.MultiheadAttention (a C userdata) is a child like any other: its parameters are read by their
-- state_dict names (out_proj.weight for its out_proj_weight field).
-- Parameters are leaves with requires_grad on, so backward fills their :grad().

local mha = require "mha.core"
local display = require "mha.display"
local raise = require "mha.raise"   -- errors at the user's line
local options = require "mha.options"

local M = {}

-- ---------------------------------------------------------------------------------------------
-- Option tables, checked as the C bindings check theirs, with a did-you-mean for a misspelt name
-- ---------------------------------------------------------------------------------------------

-- The name in names closest to word when it is close enough to be a likely typo, else nil
-- (looser than mha.options.closest, for state_dict keys such as "layers.0.attn.out_proj.bias").
function M.closest(word, names)
    local best, best_d
    for _, name in ipairs(names) do
        local d = options.edit_distance(word:lower(), name:lower())
        if (not best_d or d < best_d) and d <= math.max(2, #name // 3) then best, best_d = name, d end
    end
    return best
end

-- Refuses a key of opts that is not in names (a list), through the library's one options check.
function M.check_options(fname, opts, names)
    if opts == nil then return {} end
    if type(opts) ~= "table" then
        -- mha.nn.Linear(3, 2) or optim.Adam(params, 0.01), positional as in PyTorch: show the
        -- named form
        local named = {}
        for i, name in ipairs(names) do named[i] = name .. " = ..." end
        raise(string.format("%s: options must be a table, got %s; name them: {%s}", fname, type(opts),
                            table.concat(named, ", ")))
    end
    options.check(fname, opts, names)
    return opts
end

-- A positive integer option; required when def is nil.
function M.opt_size(fname, opts, key, def, example)
    local v = opts[key]
    if v == nil then
        if def == nil then
            raise(string.format("%s: option %s is required, e.g. %s", fname, key, example))
        end
        return def
    end
    if math.type(v) ~= "integer" and not (type(v) == "number" and v == math.floor(v)) or v < 1 then
        raise(string.format("%s: option %s must be a positive integer, got %s", fname, key, tostring(v)))
    end
    return math.tointeger(v)
end

-- opts[key] as a whole number >= 0, or def when absent; note follows the rule in the message
-- (" (0 = attention-only)").
function M.opt_count(fname, opts, key, def, note)
    local v = opts[key]
    if v == nil then return def end
    if math.type(v) ~= "integer" and not (type(v) == "number" and v == math.floor(v)) or v < 0 then
        raise(string.format("%s: option %s must be a whole number >= 0%s, got %s", fname, key, note or "",
                            tostring(v)))
    end
    return math.tointeger(v)
end

function M.opt_boolean(fname, opts, key, def)
    local v = opts[key]
    if v == nil then return def end
    if type(v) ~= "boolean" then
        raise(string.format("%s: option %s must be a boolean, got %s", fname, key, type(v)))
    end
    return v
end

-- ---------------------------------------------------------------------------------------------
-- Methods called with a dot (lin.forward(x), opt.step()), Python's habit
-- ---------------------------------------------------------------------------------------------

-- The method f behind a check that self is_instance: otherwise lin.forward(x) would fail deep
-- inside ("attempt to index a nil value (local 'self')"); it reads, at the user's line, as a C
-- method's does (lua/bind/lauxmha.c): "forward is a method: call it with a colon: m:forward(...)".
-- var names the instance in the hint (m, opt).
function M.method(name, f, is_instance, var)
    return function(self, ...)
        if not is_instance(self) then
            local args = (self ~= nil or select("#", ...) > 0) and "..." or ""
            raise(string.format("%s is a method: call it with a colon: %s:%s(%s)", name, var, name, args))
        end
        return f(self, ...)
    end
end

-- ---------------------------------------------------------------------------------------------
-- What is a module, a parameter
-- ---------------------------------------------------------------------------------------------

local MULTIHEAD = "mha.MultiheadAttention"

local function is_multihead(v)
    local mt = type(v) == "userdata" and getmetatable(v)
    return type(mt) == "table" and mt.__name == MULTIHEAD
end

local function is_lua_module(v)
    local mt = type(v) == "table" and getmetatable(v)
    return type(mt) == "table" and mt.__module_class ~= nil
end

-- A Lua module or a MultiheadAttention.
function M.is_module(v)
    return is_lua_module(v) or is_multihead(v)
end

-- The PyTorch name of a MultiheadAttention parameter: its fields write '.' as '_' (out_proj_weight)
local function multihead_key(field)
    return (field:gsub("^out_proj_", "out_proj."))
end

-- name, tensor of every parameter of a MultiheadAttention, in PyTorch's state_dict order.
local function multihead_parameters(m)
    local list = {}
    for _, field in ipairs(m:parameter_names()) do
        list[#list + 1] = {multihead_key(field), m[field], field}
    end
    return list
end

-- ---------------------------------------------------------------------------------------------
-- Classes and instances
-- ---------------------------------------------------------------------------------------------

local Module = {}
Module.__name = "Module"
M.Module = Module

-- Field lookup of an instance: plain fields (rawget) first, then the class's methods, then
-- parameters, then children - PyTorch's order (instance dict, class, _parameters, _modules).
local function instance_index(m, key)
    local class = getmetatable(m).__module_class
    local method = class[key]
    if method ~= nil then return method end
    local params = rawget(m, "_parameters")
    local p = params and params.values[key]
    if p ~= nil then return p end
    local mods = rawget(m, "_modules")
    return mods and mods.values[key]
end

-- The names instance_index finds past the class: the parameters, then the children, for the REPL's
-- completion (the instance metatable's __fields). Read with rawget, so listing them runs no method.
local function instance_fields(m)
    local names = {}
    for _, registry in ipairs({rawget(m, "_parameters"), rawget(m, "_modules")}) do
        for _, name in ipairs(type(registry) == "table" and registry.names or {}) do
            names[#names + 1] = name
        end
    end
    return names
end

local function add_name(registry, name)
    if registry.values[name] == nil then registry.names[#registry.names + 1] = name end
end

local function remove_name(registry, name)
    for i, n in ipairs(registry.names) do
        if n == name then table.remove(registry.names, i) return end
    end
end

-- m.key = value: a module becomes (or replaces) a child; a tensor assigned to a parameter's name
-- replaces that parameter (a new leaf); anything else is a plain field.
local function instance_newindex(m, key, value)
    local params, mods = rawget(m, "_parameters"), rawget(m, "_modules")
    if params.values[key] ~= nil then
        if value == nil then
            remove_name(params, key)
            params.values[key] = nil
        else
            m:register_parameter(key, value)
        end
    elseif M.is_module(value) or mods.values[key] ~= nil then
        m:add_module(key, value)
    else
        rawset(m, key, value)
    end
end

-- Whether m is an instance of class or of a class extending it.
local function instance_of(m, class)
    local c = is_lua_module(m) and getmetatable(m).__module_class
    while c and c ~= class do c = rawget(c, "super") end
    return c == class
end

-- What every class holds for itself, not for its instances to call.
local CLASS_ONLY = {extend = true, new = true, super = true}

-- A new class: Base:extend("Name"). Calling the class makes an instance and runs its init.
function Module:extend(name)
    if type(name) ~= "string" then raise("Module:extend: give the class a name, e.g. mha.nn.Module:extend(\"Block\")") end
    local class = setmetatable({}, {__index = self, __call = function(cls, ...) return cls:new(...) end,
                                    -- function Linear:forward(x) ...
                                    __newindex = function(cls, key, v)
                                        local method = type(v) == "function" and debug.getlocal(v, 1) == "self"
                                        local function is_instance(m) return instance_of(m, cls) end
                                        rawset(cls, key, method and M.method(key, v, is_instance, "m") or v)
                                    end,
                                    __tostring = function() return "mha.nn." .. name end,
                                    -- help(mha.nn.Linear) finds its entry
                                    __name = "mha.nn." .. name})
    class.__name = name
    class.super = self
    local parent_mt = rawget(self, "__instance_mt")
    class.__instance_mt = {
        __module_class = class,
        __name = "mha.nn." .. name,
        __methods = class,          -- where __index looks first, named for completion as the C
        __fields = instance_fields, -- types name theirs (lua/repl/complete.lua), which leaves out
        __class_only = CLASS_ONLY,  -- the class's own: lin:extend is no method of lin's
        __index = parent_mt and parent_mt.__index or instance_index, -- a container's subclass
                                                                     -- indexes as it does
        __newindex = instance_newindex,
        __call = function(m, ...) return m:forward(...) end,
        __tostring = function(m) return m:repr() end,
        __len = function(m) return #rawget(m, "_modules").names end,
    }
    return class
end

-- An instance of the class, initialised by class.init(m, ...).
function Module:new(...)
    if rawget(self, "__instance_mt") == nil then
        raise("Module: make a class first: MyModule = mha.nn.Module:extend(\"MyModule\")")
    end
    local m = setmetatable({_parameters = {names = {}, values = {}}, _modules = {names = {}, values = {}},
                            training = true}, self.__instance_mt)
    local init = self.init
    if init then init(m, ...) end
    return m
end

-- m:register_parameter(name, t): t becomes the parameter `name`, a leaf with requires_grad on; -> t
function Module:register_parameter(name, t)
    local fname = self.__name .. ":register_parameter"
    if type(name) ~= "string" or name == "" or name:find(".", 1, true) then
        raise(string.format("%s: the name must be a non-empty string without '.', got %s", fname, tostring(name)))
    end
    if not mha.is_tensor(t) then
        raise(string.format("%s: %s must be a mha.Tensor, got %s", fname, name, type(t)))
    end
    if not t:is_leaf() then t = t:detach() end   -- a parameter is a leaf, as nn.Parameter(t) is
    t:requires_grad(true)
    local params = rawget(self, "_parameters")
    add_name(params, name)
    params.values[name] = t
    return t
end

-- m:add_module(name, child): child (a module, or nil to remove it) under name; returns child.
function Module:add_module(name, child)
    local fname = self.__name .. ":add_module"
    if type(name) ~= "string" or name == "" or name:find(".", 1, true) then
        raise(string.format("%s: the name must be a non-empty string without '.', got %s", fname, tostring(name)))
    end
    if child ~= nil and not M.is_module(child) then
        raise(string.format("%s: %s must be a module (mha.nn.*, mha.MultiheadAttention), got %s", fname, name,
                            type(child)))
    end
    local mods = rawget(self, "_modules")
    if child == nil then remove_name(mods, name) else add_name(mods, name) end
    mods.values[name] = child
    return child
end

function Module:forward()
    raise(self.__name .. ":forward is not defined: write function " .. self.__name .. ":forward(x) ... end")
end

-- name, child pairs in registration order.
function Module:named_children()
    local list, mods = {}, rawget(self, "_modules")
    for _, name in ipairs(mods.names) do list[#list + 1] = {name, mods.values[name]} end
    return list
end

-- visit(dotted name, tensor) for every parameter of m and its children, in PyTorch's state_dict
-- order: own parameters in registration order, then each child's under "child.".
local function walk_parameters(m, prefix, visit)
    if is_multihead(m) then
        for _, item in ipairs(multihead_parameters(m)) do visit(prefix .. item[1], item[2]) end
        return
    end
    local params = rawget(m, "_parameters")
    for _, name in ipairs(params.names) do visit(prefix .. name, params.values[name]) end
    for _, item in ipairs(m:named_children()) do walk_parameters(item[2], prefix .. item[1] .. ".", visit) end
end

-- Every parameter as {dotted name, tensor}; a tensor reached twice (a shared parameter) is listed
-- once, as in PyTorch's named_parameters(). The list is also an iterator, as torch's:
-- for name, p in m:named_parameters() do ... end.
function M.named_parameters(m)
    local list, seen = {}, {}
    walk_parameters(m, "", function(name, p)
        if not seen[p] then
            seen[p] = true
            list[#list + 1] = {name, p}
        end
    end)
    local i = 0
    return setmetatable(list, {__call = function()
        i = i + 1
        local item = list[i]
        if item then return item[1], item[2] end
    end})
end
Module.named_parameters = M.named_parameters

-- m:parameters(): dotted name -> tensor (the parameters themselves: their :grad() is the gradient).
function Module:parameters()
    local t = {}
    for _, item in ipairs(self:named_parameters()) do t[item[1]] = item[2] end
    return t
end

-- m:parameter_names(): the dotted names in PyTorch's order.
function Module:parameter_names()
    local names = {}
    for _, item in ipairs(self:named_parameters()) do names[#names + 1] = item[1] end
    return names
end

-- ---------------------------------------------------------------------------------------------
-- state_dict / load_state_dict / zero_grad: shared by Lua modules and MultiheadAttention
-- ---------------------------------------------------------------------------------------------

-- {key, tensor} for every entry of the state dict, in order (a shared parameter under each key).
local function state_entries(m)
    local list = {}
    walk_parameters(m, "", function(key, p) list[#list + 1] = {key, p} end)
    return list
end

local function class_name(m)
    return is_multihead(m) and "MultiheadAttention" or m.__name
end

-- m:state_dict(): dotted key -> tensor (detached: sharing the data, outside the graph);
-- m:parameter_names() gives the keys in order. mha.save("m.npz", m:state_dict()) writes a
-- checkpoint PyTorch can load.
function M.state_dict(m)
    local sd = {}
    for _, item in ipairs(state_entries(m)) do sd[item[1]] = item[2]:detach() end
    return sd
end

local function quoted_list(keys)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = '"' .. k .. '"' end
    return table.concat(parts, ", ")
end

-- m:load_state_dict(sd [, strict = true]): copies every entry of sd into the parameter of the same
-- key, in place (so an optimizer holding the parameters keeps them). As PyTorch: with strict,
-- missing and unexpected keys are errors; a shape mismatch always is; every problem is listed in
-- one message, before anything is copied. Returns the missing and the unexpected keys (lists).
function M.load_state_dict(m, sd, strict)
    local name = class_name(m)
    local fname = name .. ":load_state_dict"
    if type(sd) ~= "table" then raise(string.format("%s: the state dict must be a table key -> tensor, got %s", fname, type(sd))) end
    if strict == nil then strict = true end
    if type(strict) ~= "boolean" then
        raise(string.format("%s: strict must be true or false, got %s", fname, type(strict)))
    end
    local entries = state_entries(m)
    local wanted, missing, unexpected, problems, values = {}, {}, {}, {}, {}
    for _, item in ipairs(entries) do
        local key, p = item[1], item[2]
        wanted[key] = true
        local v = sd[key]
        if v == nil then
            missing[#missing + 1] = key
        else
            if not mha.is_tensor(v) then
                local ok, t = pcall(mha.tensor, v)
                if not ok then
                    problems[#problems + 1] = string.format("%s: the value is not a tensor (%s)", key, tostring(t))
                end
                v = ok and t or nil
            end
            if v and display.shape_str(v:shape()) ~= display.shape_str(p:shape()) then
                problems[#problems + 1] = string.format("size mismatch for %s: copying a param with shape %s from " ..
                    "checkpoint, the shape in current model is %s", key, display.shape_str(v:shape()),
                    display.shape_str(p:shape()))
            end
            values[#values + 1] = {p, v}
        end
    end
    local extra = {}
    for key in pairs(sd) do
        if not wanted[key] then extra[#extra + 1] = tostring(key) end
    end
    table.sort(extra)
    for _, key in ipairs(extra) do unexpected[#unexpected + 1] = key end
    if strict and #missing > 0 then
        problems[#problems + 1] = "missing key(s) in state_dict: " .. quoted_list(missing)
    end
    if strict and #unexpected > 0 then
        local hints = {}
        for _, key in ipairs(unexpected) do
            local guess = M.closest(key, missing)
            if guess then hints[#hints + 1] = string.format('"%s" for "%s"?', guess, key) end
        end
        problems[#problems + 1] = "unexpected key(s) in state_dict: " .. quoted_list(unexpected) ..
            (#hints > 0 and (" (did you mean " .. table.concat(hints, ", ") .. ")") or "")
    end
    if #problems > 0 then
        raise(string.format("%s: error(s) in loading state_dict for %s:\n  %s", fname, name,
                            table.concat(problems, "\n  ")))
    end
    mha.no_grad(function()
        for _, pv in ipairs(values) do pv[1]:copy_(pv[2]) end
    end)
    return missing, unexpected
end

-- m:zero_grad(): every gradient forgotten (p:grad() is nil), as zero_grad(set_to_none=True)
function M.zero_grad(m)
    for _, item in ipairs(state_entries(m)) do item[2]:zero_grad() end
end

-- m:train([mode = true]): torch's training flag, m.training = mode for m and every child; -> m.
-- No module here has dropout or batch norm, so the flag changes no result; your own module may
-- read it.
function M.train(m, mode)
    if mode == nil then mode = true end
    if type(mode) ~= "boolean" then
        raise(string.format("%s:train: mode must be true or false, got %s", class_name(m), type(mode)))
    end
    m.training = mode
    if not is_multihead(m) then
        for _, item in ipairs(m:named_children()) do M.train(item[2], mode) end
    end
    return m
end

-- m:eval(): m:train(false), as torch.
function M.eval(m)
    return M.train(m, false)
end

-- m:to(device): the CPU is the only device; m:to("cpu") returns m, another device is refused.
function M.to(m, device)
    if device == "cpu" then return m end
    local given = type(device) == "string" and string.format('"%s"', device) or tostring(device)
    raise(string.format('%s:to: device %s is not available: mha-repl computes on the CPU only; ' ..
                        'm:to("cpu") or no call at all', class_name(m), given))
end

Module.state_dict = M.state_dict
Module.load_state_dict = M.load_state_dict
Module.zero_grad = M.zero_grad
Module.train = M.train
Module.eval = M.eval
Module.to = M.to

-- The methods MultiheadAttention shares with the Lua modules (lua/mha.lua has mha.core add them;
-- its zero_grad is its own, in C).
M.multihead_methods = {state_dict = M.state_dict, load_state_dict = M.load_state_dict, train = M.train,
                       eval = M.eval, to = M.to, named_parameters = M.named_parameters}
-- m.eval() says to call it with a colon, as the C methods do
for key, f in pairs(M.multihead_methods) do
    M.multihead_methods[key] = M.method(key, f, is_multihead, "m")
end

-- ---------------------------------------------------------------------------------------------
-- Printing, as PyTorch's repr
-- ---------------------------------------------------------------------------------------------

-- The part inside the parentheses, "in_features=4, out_features=2, bias=True"; classes override it
function Module:extra_repr()
    return ""
end

-- A module with children puts its extra_repr on a line of its own, as PyTorch's does:
-- "Transformer(\n  vocab=20, ...\n  (embed): ...\n)".
function Module:repr()
    local children = self:named_children()
    local extra = self:extra_repr()
    if #children == 0 then return self.__name .. "(" .. extra .. ")" end
    local lines = {self.__name .. "("}
    if extra ~= "" then lines[2] = "  " .. extra:gsub("\n", "\n  ") end
    for _, item in ipairs(children) do
        local text = tostring(item[2]):gsub("\n", "\n  ")
        lines[#lines + 1] = "  (" .. item[1] .. "): " .. text
    end
    return table.concat(lines, "\n") .. "\n)"
end

-- Every method of Module checks its self (extend and new take the class itself).
for key, f in pairs(Module) do
    if type(f) == "function" and key ~= "extend" and key ~= "new" then Module[key] = M.method(key, f, is_lua_module, "m") end
end

-- ---------------------------------------------------------------------------------------------
-- Containers: children named 0, 1, 2, ... as in PyTorch (keys read "layers.0.attn.out_proj.bias");
-- from Lua, c[1] is the first child and #c counts them
-- ---------------------------------------------------------------------------------------------

local function container_index(class)
    local mt = class.__instance_mt
    mt.__index = function(m, key)
        if math.type(key) == "integer" then
            local mods = rawget(m, "_modules")
            local name = mods.names[key]
            return name and mods.values[name]
        end
        return instance_index(m, key)
    end
end

local ModuleList = Module:extend("ModuleList")
container_index(ModuleList)
M.ModuleList = ModuleList

-- mha.nn.ModuleList{a, b, c}
function ModuleList:init(list)
    if list ~= nil and type(list) ~= "table" then
        raise(string.format("ModuleList: takes a list of modules, e.g. mha.nn.ModuleList{a, b}, got %s", type(list)))
    end
    for i, child in ipairs(list or {}) do
        if not M.is_module(child) then
            raise(string.format("ModuleList: item %d is not a module (got %s)", i, type(child)))
        end
        self:append(child)
    end
end

-- l:append(m): m becomes the next child (named by its 0-based position); returns l.
function ModuleList:append(child)
    self:add_module(tostring(#self), child)
    return self
end

function ModuleList:forward()
    raise("ModuleList:forward: a ModuleList holds modules; call them in your own forward, e.g. " ..
          "for _, layer in ipairs(self.layers) do x = layer(x) end")
end

local Sequential = Module:extend("Sequential")
container_index(Sequential)
M.Sequential = Sequential

-- mha.nn.Sequential(a, b, c) or mha.nn.Sequential{a, b, c}
function Sequential:init(...)
    local list = {...}
    if #list == 1 and not M.is_module(list[1]) and type(list[1]) == "table" then list = list[1] end
    for i, child in ipairs(list) do
        if not M.is_module(child) then
            raise(string.format("Sequential: item %d is not a module (got %s)", i, type(child)))
        end
        self:add_module(tostring(i - 1), child)
    end
end

-- Each child applied to the result of the one before.
function Sequential:forward(x)
    for _, item in ipairs(self:named_children()) do x = item[2](x) end
    return x
end

return M
