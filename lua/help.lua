-- lua/help.lua - help() and ?name in mha-repl (module "mha.help"): the signature, a paragraph, the
-- formula and an example of every public function, read from the docs modules.
--
-- Docs are data. Every embedded module named mha.docs_* returns a table
--   { ["mha.softmax"] = {sig = "mha.softmax(x, dim)", doc = "...", formula = "...", example = "...",
--                        group = "attention" (optional), see = {"mha.scaled_dot_product_attention"} (optional)} }
-- Keys are written as a student types them: "mha.softmax", "Tensor:view" for a method of tensors,
-- "MultiheadAttention:forward" for a method of the module, "plot.heatmap". help.lua merges them all,
-- lazily, the first time help is asked for.

local help = {}

local docs        -- name -> entry, merged from every mha.docs_* module
local WIDTH = 78

-- Loads and merges the docs modules once. A broken docs module is reported, not fatal.
function help.docs()
    if docs then return docs end
    docs = {}
    local modules = {}
    for name in pairs(package.preload) do
        if type(name) == "string" and name:match("^mha%.docs_") then modules[#modules + 1] = name end
    end
    table.sort(modules)
    for _, module in ipairs(modules) do
        local ok, entries = pcall(require, module)
        if ok and type(entries) == "table" then
            for key, entry in pairs(entries) do docs[key] = entry end
        else
            io.stderr:write("help: the docs module ", module, " failed: ", tostring(entries), "\n")
        end
    end
    return docs
end

-- ---------------------------------------------------------------------------------------------
-- Text layout
-- ---------------------------------------------------------------------------------------------

local function display_width(s)
    return utf8.len(s) or #s
end

-- Words of text wrapped to width, each line starting with indent. Blank lines separate paragraphs.
local function wrap(text, indent, width)
    local lines = {}
    for paragraph in (text .. "\n\n"):gmatch("(.-)\n%s*\n") do
        local line = indent
        for word in paragraph:gmatch("%S+") do
            if line ~= indent and display_width(line) + 1 + display_width(word) > width then
                lines[#lines + 1] = line
                line = indent .. word
            elseif line == indent then
                line = line .. word
            else
                line = line .. " " .. word
            end
        end
        if line ~= indent then lines[#lines + 1] = line end
        lines[#lines + 1] = ""
    end
    while lines[#lines] == "" do lines[#lines] = nil end
    return table.concat(lines, "\n")
end

-- A labelled block: "  Formula:  first line" and further lines aligned under the first.
local function labelled(label, text)
    local pad = string.rep(" ", 12)
    local head = ("  " .. label .. ":"):sub(1, 12)
    head = head .. string.rep(" ", 12 - #head)
    return head .. text:gsub("\n", "\n" .. pad)
end

local function format_entry(name, entry)
    local parts = {entry.sig or name, ""}
    if entry.doc then parts[#parts + 1] = wrap(entry.doc, "  ", WIDTH) end
    if entry.formula then parts[#parts + 1] = "" parts[#parts + 1] = labelled("Formula", entry.formula) end
    if entry.example then parts[#parts + 1] = "" parts[#parts + 1] = labelled("Example", entry.example) end
    if type(entry.see) == "table" and #entry.see > 0 then
        parts[#parts + 1] = ""
        parts[#parts + 1] = labelled("See also", table.concat(entry.see, ", "))
    end
    return table.concat(parts, "\n")
end

-- Names laid out in columns under a heading.
local function columns(heading, names)
    local widest = 0
    for _, n in ipairs(names) do if #n > widest then widest = #n end end
    local per_line = math.max(1, (WIDTH - 2) // (widest + 2))
    local lines = {heading}
    for i = 1, #names, per_line do
        local row = {}
        for j = i, math.min(i + per_line - 1, #names) do
            row[#row + 1] = names[j] .. string.rep(" ", widest - #names[j])
        end
        lines[#lines + 1] = ("  " .. table.concat(row, "  ")):gsub("%s+$", "")
    end
    return table.concat(lines, "\n")
end

-- ---------------------------------------------------------------------------------------------
-- Finding the name of a value
-- ---------------------------------------------------------------------------------------------

local function methods_of(type_name)
    local mt = debug.getregistry()[type_name]
    if type(mt) ~= "table" then return nil end
    if type(rawget(mt, "__methods")) == "table" then return rawget(mt, "__methods") end
    if type(rawget(mt, "__index")) == "table" then return rawget(mt, "__index") end
end

-- Where help looks for a function's name, in order: the library first, so a function that is also a
-- method (mha.softmax, t:softmax) is found under its library name.
local function places()
    local list = {}
    local mha = package.loaded.mha
    if type(mha) == "table" then list[#list + 1] = {"mha.", mha} end
    if type(package.loaded["mha.plot"]) == "table" then list[#list + 1] = {"plot.", package.loaded["mha.plot"]} end
    local tensor_methods = methods_of("mha.Tensor")
    if tensor_methods then list[#list + 1] = {"Tensor:", tensor_methods} end
    local module_methods = methods_of("mha.MultiheadAttention")
    if module_methods then list[#list + 1] = {"MultiheadAttention:", module_methods} end
    return list
end

local standard = {"string", "table", "math", "io", "os", "utf8", "coroutine", "debug"}

-- The name of a function: "mha.softmax", "Tensor:view", "string.format", "print"; or nil.
function help.name_of(f)
    for _, place in ipairs(places()) do
        local names = {}
        for k, v in pairs(place[2]) do
            if v == f and type(k) == "string" then names[#names + 1] = k end
        end
        table.sort(names)
        -- prefer a name that has docs (mha.scaled_dot_product_attention over its alias mha.sdpa)
        for _, k in ipairs(names) do if help.docs()[place[1] .. k] then return place[1] .. k end end
        if names[1] then return place[1] .. names[1] end
    end
    for _, lib in ipairs(standard) do
        for k, v in pairs(_G[lib] or {}) do
            if v == f then return lib .. "." .. k end
        end
    end
    for k, v in pairs(_G) do
        if v == f and type(k) == "string" then return k end
    end
end

-- The docs key for a value: a name for functions; the type's topic for tensors and modules.
local function key_of(value)
    if type(value) == "function" then return help.name_of(value) end
    if value == package.loaded.mha then return "mha" end
    if type(value) == "table" and value == package.loaded["mha.plot"] then return "plot" end
    local mt = getmetatable(value)
    if type(mt) == "table" and type(rawget(mt, "__name")) == "string" then return rawget(mt, "__name") end
end

-- ---------------------------------------------------------------------------------------------
-- help()
-- ---------------------------------------------------------------------------------------------

local function group_of(name, entry)
    if entry.group then return entry.group end
    if name:match("^:") then return "REPL commands" end
    return name:match("^(.*)[.:]") or "topics"
end

local function topics()
    local groups, order = {}, {}
    for name, entry in pairs(help.docs()) do
        local g = group_of(name, entry)
        if not groups[g] then groups[g] = {} order[#order + 1] = g end
        table.insert(groups[g], name)
    end
    table.sort(order, function(a, b)  -- the overviews first
        if (a == "topics") ~= (b == "topics") then return a == "topics" end
        return a < b
    end)
    local parts = {"help(f) or ?name explains a function: its signature, what it does, the formula and an",
                   "example (e.g. ?mha.softmax, help(mha.matmul), ?x:view). ? alone lists the REPL's commands.", ""}
    for _, g in ipairs(order) do
        table.sort(groups[g])
        parts[#parts + 1] = columns(g .. ":", groups[g])
    end
    if #order == 0 then parts[#parts + 1] = "(no docs modules in this build)" end
    return table.concat(parts, "\n")
end

-- Entries matching a word: the exact name, names ending in .word or :word, then names containing it.
local function search(word)
    local d = help.docs()
    if d[word] then return {word} end
    local exact, partial = {}, {}
    local lower = word:lower()
    for name in pairs(d) do
        local last = name:match("[.:]([^.:]+)$") or name
        if last == word then exact[#exact + 1] = name
        elseif #word >= 3 and name:lower():find(lower, 1, true) then partial[#partial + 1] = name end
    end
    table.sort(exact)
    table.sort(partial)
    if #exact > 0 then return exact end
    return partial
end

-- The value a name like "x", "mha.softmax" or "x:view" refers to at the prompt, or nil.
local function resolve(name)
    local chain, method = name:match("^([%w_.]+):([%w_]+)$")
    local value = _G
    for part in ((chain or name) .. "."):gmatch("([^.]*)%.") do
        if not part:match("^[%a_][%w_]*$") then return nil end
        local ok, v = pcall(function() return value[part] end)
        if not ok or v == nil then return nil end
        value = v
    end
    if method then
        local key = key_of(value)
        if key then return nil, (key:gsub("^mha%.", "")) .. ":" .. method end
        return nil
    end
    return value
end

-- Text of help for a name typed after '?' (or given as a string to help).
local function help_name(name)
    local d = help.docs()
    if d[name] then return format_entry(name, d[name]) end
    local value, key = resolve(name)
    if key then  -- x:view: the method's entry, or the library function it also is (mha.view)
        local fallback = "mha." .. key:match(":(.*)$")
        if d[key] then return format_entry(key, d[key]) end
        if d[fallback] then return format_entry(fallback, d[fallback]) end
    end
    if value ~= nil then
        local k = key_of(value)
        if k and d[k] then return format_entry(k, d[k]) end
    end
    local found = search(name)
    if #found == 1 then return format_entry(found[1], d[found[1]]) end
    if #found > 1 then return columns("No entry '" .. name .. "'; these match:", found) end
    if type(value) == "function" then
        local n = help.name_of(value)
        if n then
            return n .. " is a Lua function without an entry here; Lua's manual explains it:\n"
                .. "  https://www.lua.org/manual/5.4/manual.html#pdf-" .. n
        end
    end
    return "No help for '" .. name .. "'. help() lists the topics."
end

-- The text help(...) prints.
function help.text(...)
    if select("#", ...) == 0 then return topics() end
    local value = ...
    if value == nil then
        return "help(nil): the value you asked about is nil (a misspelt name?). help() lists the topics."
    end
    if type(value) == "string" then return help_name(value) end
    local key = key_of(value)
    local d = help.docs()
    if key and d[key] then return format_entry(key, d[key]) end
    if type(value) == "function" and key then
        local found = search(key)
        if #found == 1 then return format_entry(found[1], d[found[1]]) end
        return help_name(key)
    end
    return "No help for this " .. type(value) .. ". help() lists the topics."
end

function help.help(...)
    print(help.text(...))
end

return help
