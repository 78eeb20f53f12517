-- lua/repl/complete.lua - module "mha.repl.complete": what Tab offers at the REPL's prompt for Lua
-- code: keywords, globals (the lazy ones too), fields of tables, methods of tensors and modules.
--
-- lua/repl/repl.c asks repl.complete(text, line, start), which answers ':' command lines itself and
-- hands the rest to complete.names(text). Nothing is called but __index, so Tab never runs user
-- code.

local complete = {}

complete.keywords = {}
for word in ([[and break do else elseif end false for function goto if in local nil not or repeat
               return then true until while]]):gmatch("%a+") do complete.keywords[word] = true end

local function sorted_unique(list)
    table.sort(list)
    local result = {}
    for i, v in ipairs(list) do if v ~= list[i - 1] then result[#result + 1] = v end end
    return result
end

-- The value a chain like "mha" or "a.b.c" names, looked up without calling anything but __index.
local function resolve(chain)
    local value = _G
    for name in (chain .. "."):gmatch("([^.]*)%.") do
        if not name:match("^[%a_][%w_]*$") or value == nil then return nil end
        local ok, v = pcall(function() return value[name] end)
        if not ok then return nil end
        value = v
    end
    return value
end

-- String keys of t that are identifiers starting with prefix, and those its metatables' __index
-- tables add (as classes do), into names. A class that is its instances' metatable (mha.optim's)
-- holds __index, __tostring ...: those are offered only to a prefix that starts with "__".
local function add_fields(names, t, prefix, only_functions)
    local meta_ok = prefix:sub(1, 2) == "__"
    local seen = 0
    while t ~= nil and seen < 8 do
        seen = seen + 1
        if type(t) == "table" then
            for k, v in next, t do
                if type(k) == "string" and k:match("^[%a_][%w_]*$") and k:sub(1, #prefix) == prefix
                   and (meta_ok or k:sub(1, 2) ~= "__")
                   and (not only_functions or type(v) == "function" or (getmetatable(v) or {}).__call) then
                    names[#names + 1] = k
                end
            end
        end
        local mt = getmetatable(t)
        if type(mt) ~= "table" then break end
        local index = rawget(mt, "__index")
        if type(index) ~= "table" then index = rawget(mt, "__methods") end
        if type(index) ~= "table" then break end
        t = index
    end
end

-- The names a value answers to besides its methods, through its metatable: the __fields list the
-- bindings give (embed_dim, num_heads ... of a MultiheadAttention) and the parameters
-- m:parameter_names() lists (in_proj_weight ...). Nothing when the metatable has neither.
local function add_object_fields(names, value, prefix)
    local mt = getmetatable(value)
    if type(mt) ~= "table" then return end
    local function add(name)
        if type(name) == "string" and name:sub(1, #prefix) == prefix then names[#names + 1] = name end
    end
    local fields = rawget(mt, "__fields")
    if type(fields) == "table" then  -- a list of names, or a set name -> anything
        for k, v in pairs(fields) do add(math.type(k) == "integer" and v or k) end
    end
    local methods = rawget(mt, "__methods")
    local parameter_names = type(methods) == "table" and rawget(methods, "parameter_names")
    if type(parameter_names) == "function" then
        local ok, list = pcall(parameter_names, value)
        if ok and type(list) == "table" then for _, name in ipairs(list) do add(name) end end
    end
end

-- The candidates for text, the end of the line before the cursor: "mha.sof" -> {"mha.softmax"},
-- "x:vi" -> {"x:view"}; any text before the name ("print(mha.so") is kept in front of each.
function complete.names(text)
    local head, chain = text:match("^(.-)([%w_%.:]*)$")
    local base, sep, partial = chain:match("^(.*)([%.:])([%w_]*)$")
    local names = {}
    if not base then
        partial = chain
        for word in pairs(complete.keywords) do
            if word:sub(1, #partial) == partial then names[#names + 1] = word end
        end
        add_fields(names, _G, partial)
        local mt = getmetatable(_G)
        for name in pairs(type(mt) == "table" and rawget(mt, "__lazy") or {}) do
            if name:sub(1, #partial) == partial then names[#names + 1] = name end
        end
        for i, name in ipairs(names) do names[i] = head .. name end
        return sorted_unique(names)
    end
    if base == "" or base:find(":", 1, true) then return {} end
    local value = resolve(base)
    if value == nil then return {} end
    if sep == "." then
        add_fields(names, value, partial, false)
        add_object_fields(names, value, partial)
    else  -- a method: through the metatable (__index when a table, else __methods); strings use
          -- string
        local mt = getmetatable(value)
        local methods = type(mt) == "table" and (type(mt.__index) == "table" and mt.__index or mt.__methods)
        if type(methods) == "table" then add_fields(names, methods, partial, true) end
    end
    for i, name in ipairs(names) do names[i] = head .. base .. sep .. name end
    return sorted_unique(names)
end

return complete
