-- lua/repl/complete.lua - module "mha.repl.complete": what Tab offers at the REPL's prompt for Lua
-- code: keywords, globals (the lazy ones too), fields of tables, methods of tensors and modules.
--
-- lua/repl/repl.c asks repl.complete(text, line, start), which answers ':' command lines itself and
-- hands the rest to complete.names(text). Candidates come from tables: no __index function is
-- called for them, only for the chain typed before the last name (m.embed:), besides a metatable's
-- __fields function and the bindings' m:parameter_names().

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

-- The value a chain like "mha" or "a.b.c" names, looked up as Lua would (an __index function may
-- run: it is how m.embed reaches a module's child).
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

-- Whether Tab offers name for prefix: a name starting with "_" is private (m._config) and one
-- starting with "__" a metamethod or a class's own (__index, __name), each offered only once the
-- student has typed that much.
local function offered(name, prefix)
    if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then return false end
    if name:sub(1, #prefix) ~= prefix then return false end
    if name:sub(1, 2) == "__" then return prefix:sub(1, 2) == "__" end
    return name:sub(1, 1) ~= "_" or prefix:sub(1, 1) == "_"
end

-- The table an __index lookup of t goes on to: its metatable's __index when a table, else the
-- __methods table a metatable with an __index function names (tensors, MultiheadAttention, the
-- instances of mha.nn's classes). An __index function is never called.
local function next_in_chain(t)
    local mt = getmetatable(t)
    if type(mt) ~= "table" then return nil end
    local index = rawget(mt, "__index")
    if type(index) ~= "table" then index = rawget(mt, "__methods") end
    return type(index) == "table" and index or nil
end

local function callable(v)
    if type(v) == "function" then return true end
    local mt = getmetatable(v)
    return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

-- Names of t and of the tables its __index chain goes through (an instance, its class, the class's
-- parent ...), each table once, so a cycle of __index tables ends. A name is judged by the nearest
-- table holding it, as Lua's lookup finds it: with only_functions, by whether that value can be
-- called.
local function add_fields(names, t, prefix, only_functions)
    local visited, judged = {}, {}
    while t ~= nil and not visited[t] do
        visited[t] = true
        if type(t) == "table" then
            for k, v in next, t do
                if not judged[k] and offered(k, prefix) and (not only_functions or callable(v)) then
                    names[#names + 1] = k
                end
                judged[k] = true
            end
        end
        t = next_in_chain(t)
    end
end

-- The names a value answers to besides its raw fields and methods, through its metatable: its
-- __fields, a list or set of names (the bindings' embed_dim, num_heads ... of a
-- MultiheadAttention) or a function of the value that lists them (mha.nn's parameters and
-- children), and the parameters m:parameter_names() lists (in_proj_weight ...) when __methods
-- holds that method itself. Names with a dot (a child's parameter) are left to the child.
local function add_object_fields(names, value, prefix)
    local mt = getmetatable(value)
    if type(mt) ~= "table" then return end
    local function add(name)
        if offered(name, prefix) then names[#names + 1] = name end
    end
    local fields = rawget(mt, "__fields")
    if type(fields) == "function" then
        local ok, list = pcall(fields, value)
        fields = ok and list or nil
    end
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
            if offered(name, partial) then names[#names + 1] = name end
        end
        for i, name in ipairs(names) do names[i] = head .. name end
        return sorted_unique(names)
    end
    if base == "" or base:find(":", 1, true) then return {} end
    local value = resolve(base)
    if value == nil then return {} end
    if sep == "." then  -- fields and functions: the value's own, its chain's, its metatable's lists
        add_fields(names, value, partial, false)
        add_object_fields(names, value, partial)
    else  -- a method: what the metatable's chain holds that can be called (a string's come from
          -- string)
        add_fields(names, next_in_chain(value), partial, true)
    end
    -- what an instance reaches through its class but is the class's own (mha.nn's extend, new and
    -- super): the instance metatable's __class_only set
    local mt = getmetatable(value)
    local class_only = type(mt) == "table" and rawget(mt, "__class_only")
    local kept = {}
    for _, name in ipairs(names) do
        if not (type(class_only) == "table" and class_only[name]) then kept[#kept + 1] = head .. base .. sep .. name end
    end
    return sorted_unique(kept)
end

return complete
