-- lua/help/help.lua - help() and ?name in mha-repl (module "mha.help"): the signature, a paragraph,
-- the formula and an example of every public function, read from the docs modules.
--
-- Docs are data. Every embedded module named mha.docs_* returns a table
--   { ["mha.softmax"] = {sig = "mha.softmax(x, dim)", doc = "...", formula = "...",
--                        example = "...", group = "attention" (optional),
--                        see = {"mha.scaled_dot_product_attention"} (optional)} }
-- Keys are written as a student types them: "mha.softmax", "Tensor:view" for a method of tensors,
-- "MultiheadAttention:forward" for a method of the module, "plot.heatmap". help.lua merges them
-- all, lazily, the first time help is asked for. The REPL hands help its command table
-- (help.set_commands), so help() lists the ':' commands too; help requires nothing of the REPL.

local help = {}

local docs        -- name -> entry, merged from every mha.docs_* module
local commands = {}  -- the REPL's commands (name -> {args =, help =, run =}); none outside the REPL
local make_commands  -- a function making that table, for help() outside the interactive REPL
local mha = require "mha"
local text = require "mha.text"   -- the wrapper the lessons use too
local term = require "mha.term"
local display = require "mha.display"   -- its did-you-mean (display.closest)

-- The REPL hands over its command table (repl.commands), which help() then lists and explains;
-- or, where no REPL runs, a function making that table, called when help() first lists them.
function help.set_commands(repl_commands)
    if type(repl_commands) == "function" then make_commands = repl_commands
    else commands = type(repl_commands) == "table" and repl_commands or {} end
end

-- The language help speaks: a function returning "en" or "zh", which the REPL hands over (its own
-- follows the lessons'). In Chinese the words around the entries, the commands' lines and the
-- explanations that mha.help.zh has are Chinese.
local language = function() return "en" end
function help.set_lang(f)
    if type(f) == "function" then language = f end
end
local function chinese()
    if language() ~= "zh" then return nil end
    local ok, zh = pcall(require, "mha.help.zh")
    return ok and type(zh) == "table" and zh or nil
end
-- A message of help's own: mha.help.zh's words[key] in Chinese (formatted with ...), else english.
local function said(key, english, ...)
    local zh = chinese()
    return string.format(zh and zh.words[key] or english, ...)
end

-- mha.plot, whose functions help names as plot.NAME; nil in a build without it.
local function plot_module()
    local ok, plot = pcall(require, "mha.plot")
    return ok and type(plot) == "table" and plot or nil
end

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

-- The width help is laid out for: the terminal's columns, $COLUMNS when stdout is not a terminal,
-- else 80 (mha.term.columns), and never less than 30.
local function width()
    return math.max(30, term.columns())
end

-- Prose wrapped to the width, each line starting with indent. Blank lines separate paragraphs.
local function wrap(prose, indent, columns)
    local paragraphs = {}
    for paragraph in (prose .. "\n\n"):gmatch("(.-)\n%s*\n") do
        if paragraph:match("%S") then
            paragraphs[#paragraphs + 1] = table.concat(text.wrap(paragraph, columns, {first = indent}), "\n")
        end
    end
    return table.concat(paragraphs, "\n\n")
end

-- A signature, which is code: never broken inside a word or a string; a line too wide breaks after
-- a comma, the continuation lines hanging under the first argument of the call it starts with
-- (its first "(", with no "," or "{" before it), else indented 4: a list of names
-- ("LESSON.batch, LESSON.clock(), ..."), a table argument, or a call whose "(" is too far right.
local function signature(sig, columns)
    if text.width(sig) <= columns then return sig end
    local open = sig:match("^[^,{(]*()%(")
    local hang = open and open <= columns - 20 and string.rep(" ", text.width(sig:sub(1, open))) or "    "
    local lines, line = {}, ""
    for piece in sig:gmatch("[^,]+,?") do   -- the pieces end with their comma
        if line ~= "" and text.width(line .. piece) > columns then
            lines[#lines + 1] = line:gsub("%s+$", "")
            line = hang .. piece:gsub("^%s+", "")
        else
            line = line .. piece
        end
    end
    lines[#lines + 1] = line
    -- a piece wider than a line on its own breaks at its spaces
    local out = {}
    for i, l in ipairs(lines) do
        if text.width(l) <= columns then out[#out + 1] = l
        else
            local own = i == 1 and "" or hang
            for _, w in ipairs(text.wrap(l:sub(#own + 1), columns, {first = own, rest = hang, mode = "verbatim"})) do
                out[#out + 1] = w
            end
        end
    end
    return table.concat(out, "\n")
end

-- A labelled block: "  Formula:  first line" and further lines aligned under the first
-- (code too wide for that goes under the label). Lines are kept as written (code, formulas) while
-- they fit; a wider one breaks at a space (outside strings, for code), its continuation indented
-- two more than the line.
local function labelled(label, body, columns, mode)
    local pad = string.rep(" ", 12)
    local head = "  " .. label .. (label:find("：$") and "" or ":")
    head = head .. string.rep(" ", math.max(1, 12 - text.width(head)))
    local out = {}
    if mode == "code" then
        -- code beside the label only when every line fits there; else under it, indented 4, so that
        -- an example of up to 76 columns pastes whole at 80 (a line split mid-expression cannot be
        -- pasted)
        local beside = true
        for line in (body .. "\n"):gmatch("(.-)\n") do beside = beside and text.width(pad .. line) <= columns end
        if not beside then
            out[1] = (head:gsub("%s+$", ""))
            head, pad = "    ", "    "
        end
    end
    for line in (body .. "\n"):gmatch("(.-)\n") do
        local first = #out == 0 and head or pad
        local own = line:match("^ *")
        if text.width(first .. line) <= columns then
            out[#out + 1] = first .. line
        else
            local rest = pad .. own .. "  "
            if text.width(rest) > columns - 20 then rest = pad end
            for _, l in ipairs(text.wrap(line:sub(#own + 1), columns, {first = first .. own, rest = rest, mode = mode})) do
                out[#out + 1] = l
            end
        end
    end
    return table.concat(out, "\n")
end

local function format_entry(name, entry)
    local columns = width()
    local zh = chinese()
    local sig = zh and zh.signatures[name] or entry.sig or name
    -- the word " or " between alternatives is said in Chinese (no signature holds Lua's operator)
    if zh and not zh.signatures[name] then sig = sig:gsub("(%s)or(%s)", "%1" .. zh.words.signature_or .. "%2") end
    local parts = {signature(sig, columns), ""}
    local doc = entry.doc
    if zh and doc then doc = zh.docs[name] or (zh.words.english .. "\n\n" .. doc) end
    if doc then parts[#parts + 1] = wrap(doc, "  ", columns) end
    if entry.formula then
        parts[#parts + 1] = ""
        parts[#parts + 1] = labelled(zh and zh.words.formula or "Formula", entry.formula, columns, "verbatim")
    end
    if entry.example then
        parts[#parts + 1] = ""
        parts[#parts + 1] = labelled(zh and zh.words.example or "Example", entry.example, columns, "code")
    end
    if type(entry.see) == "table" and #entry.see > 0 then
        parts[#parts + 1] = ""
        local see = zh and ("  " .. zh.words.see_also) or "  See also: "
        parts[#parts + 1] = table.concat(text.wrap(table.concat(entry.see, ", "), columns,
                                                   {first = see .. string.rep(" ", math.max(0, 12 - text.width(see))),
                                                    rest = string.rep(" ", 12)}), "\n")
    end
    return table.concat(parts, "\n")
end

-- Names laid out in columns under a heading.
local function columns(heading, names)
    local widest = 0
    for _, n in ipairs(names) do if #n > widest then widest = #n end end
    local per_line = math.max(1, (width() - 2) // (widest + 2))
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

-- The value at a dotted path from the globals ("mha.interp"), or nil.
local function resolve_path(path)
    local v = _G
    for part in path:gmatch("[^.]+") do
        if type(v) ~= "table" then return nil end
        v = rawget(v, part)
    end
    return v
end

-- The names of mha's own tables of functions ("mha.interp", "mha.nn", ...), sorted: a table
-- without a metatable, held under a name of mha.
function help.libraries()
    local names = {}
    if type(mha) ~= "table" then return names end
    for k, v in pairs(mha) do
        if type(k) == "string" and type(v) == "table" and getmetatable(v) == nil then
            names[#names + 1] = "mha." .. k
        end
    end
    table.sort(names)
    return names
end

-- Where help looks for a function's name, in order: the library first, so a function that is also a
-- method (mha.softmax, t:softmax) is found under its library name.
local function places()
    local list = {}
    list[#list + 1] = {"mha.", mha}
    local plot = plot_module()
    if plot then list[#list + 1] = {"plot.", plot} end
    local tensor_methods = methods_of("mha.Tensor")
    if tensor_methods then list[#list + 1] = {"Tensor:", tensor_methods} end
    local module_methods = methods_of("mha.MultiheadAttention")
    if module_methods then list[#list + 1] = {"MultiheadAttention:", module_methods} end
    if type(mha) == "table" and type(mha.nn) == "table" then
        list[#list + 1] = {"mha.nn.", mha.nn}
        list[#list + 1] = {"Module:", mha.nn.Module}
        if type(mha.nn.Transformer) == "table" then   -- its own methods: help(m.generate)
            list[#list + 1] = {"Transformer:", mha.nn.Transformer}
        end
        list[#list + 1] = {"mha.optim.", mha.optim}
    end
    for _, name in ipairs(help.libraries()) do   -- the rest of mha's tables: mha.interp, ...
        if name ~= "mha.nn" and name ~= "mha.optim" then list[#list + 1] = {name .. ".", resolve_path(name)} end
    end
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
    if value == mha then return "mha" end
    if type(value) == "table" and value == plot_module() then return "plot" end
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

-- Outside the interactive REPL (mha-repl -e 'help()', a script) no repl.init hands the commands
-- over: the function the REPL handed instead makes the table as repl.init makes it (the REPL's
-- own and the lesson runner's), so that help() lists every command all the same.
local function command_table()
    if next(commands) == nil and make_commands then
        local made = make_commands()
        if type(made) == "table" then commands = made end
    end
    return commands
end

-- A command's one line of help in help's language (mha.help.zh's, else the command's own English).
function help.command_help(name)
    local zh, spec = chinese(), command_table()[name]
    return zh and zh.commands[name] or spec and spec.help or ""
end

-- What ? prints: the commands, one a row with its help wrapped under its own column (in Chinese
-- where mha.help.zh has a line, else in English), then the keys; laid out for the terminal's width.
-- paint(kind, s) colours a command's name (the REPL's colours).
function help.commands_text(paint)
    local zh, columns, cmds = chinese(), width(), command_table()
    local names, rows, left_width = {}, {}, 0
    for name in pairs(cmds) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
        local spec = cmds[name]
        local left = ":" .. name .. ((spec.args and spec.args ~= "") and (" " .. spec.args) or "")
        rows[#rows + 1] = {left, help.command_help(name)}
        if #left > left_width then left_width = #left end
    end
    -- the help column, unless that leaves too little room: then the help goes under the name
    local hang = 2 + left_width + 2
    if hang > columns - 24 then hang = 6 end
    local out = {table.concat(text.wrap(said("commands_heading", "Commands (a unique prefix is enough, :q for :quit):"),
                                        columns), "\n")}
    for _, row in ipairs(rows) do
        local head, lines = "  " .. row[1] .. "  ", nil
        if #head <= hang then
            lines = text.wrap(row[2], columns, {first = head .. string.rep(" ", hang - #head), rest = string.rep(" ", hang)})
        else
            lines = {"  " .. row[1]}
            for _, l in ipairs(text.wrap(row[2], columns, {first = string.rep(" ", hang)})) do lines[#lines + 1] = l end
        end
        lines[1] = "  " .. paint("command", row[1]) .. lines[1]:sub(3 + #row[1])
        out[#out + 1] = table.concat(lines, "\n")
    end
    for _, key in ipairs(require("mha.i18n").words(zh and "zh" or "en").repl.keys) do
        local first = key[1] .. string.rep(" ", 8 - text.width(key[1]))
        out[#out + 1] = table.concat(text.wrap(key[2], columns, {first = first, rest = string.rep(" ", 8)}), "\n")
    end
    return table.concat(out, "\n") .. "\n"
end

-- Every documented name and command in its group, the overviews first: a list of
-- {title =, names =}, titles in help's language. help() lists them; tools/api_docs.lua writes
-- docs/api.md from them.
function help.groups()
    local groups, order, seen = {}, {}, {}
    local function add(g, name)
        if seen[name] then return end
        seen[name] = true
        if not groups[g] then groups[g] = {} order[#order + 1] = g end
        table.insert(groups[g], name)
    end
    for name, entry in pairs(help.docs()) do add(group_of(name, entry), name) end
    for name in pairs(command_table()) do add("REPL commands", ":" .. name) end
    table.sort(order, function(a, b)  -- the overviews first
        if (a == "topics") ~= (b == "topics") then return a == "topics" end
        return a < b
    end)
    local zh = chinese()
    local list = {}
    for _, g in ipairs(order) do
        table.sort(groups[g])
        list[#list + 1] = {title = zh and zh.groups[g] or g, names = groups[g]}
    end
    return list
end

local function topics()
    local zh = chinese()
    local parts = {wrap(zh and zh.words.intro or "help(f) or ?name explains a function: its signature, what it does, the formula and an "
                        .. "example (e.g. ?mha.softmax, help(mha.matmul), ?x:view). ? alone lists the REPL's commands.",
                        "", width()), ""}
    local groups = help.groups()
    for _, g in ipairs(groups) do parts[#parts + 1] = columns(g.title .. (zh and "：" or ":"), g.names) end
    if #groups == 0 then parts[#parts + 1] = said("no_docs", "(no docs modules in this build)") end
    return table.concat(parts, "\n")
end

-- Entries named by a word: the exact key, else those whose last part is the word ("softmax" names
-- mha.softmax). The second result lists the names that only contain it (for "did you mean").
local function search(word)
    local d = help.docs()
    if d[word] then return {word}, {} end
    local exact, partial = {}, {}
    local lower = word:lower()
    for name in pairs(d) do
        local last = name:match("[.:]([^.:]+)$") or name
        -- a command needs its ':'
        if last == word and not name:match("^:") then exact[#exact + 1] = name

        elseif #word >= 3 and name:lower():find(lower, 1, true) then partial[#partial + 1] = name end
    end
    table.sort(exact)
    table.sort(partial)
    return exact, partial
end

-- Lua's own names, which the Lua 5.4 manual explains: its base functions and its libraries.
local lua_base = {}
for name in ([[assert collectgarbage dofile error getmetatable ipairs load loadfile next pairs pcall print
               rawequal rawget rawlen rawset require select setmetatable tonumber tostring type warn xpcall
               _G _VERSION]]):gmatch("%S+") do lua_base[name] = true end
local lua_libraries = {coroutine = "6.2", package = "6.3", string = "6.4", utf8 = "6.5", table = "6.6",
                       math = "6.7", io = "6.8", os = "6.9", debug = "6.10"}
local MANUAL = "https://www.lua.org/manual/5.4/manual.html"

-- A short pointer to the manual for a name of Lua's own ("print", "string.format", "string"), else
-- nil.
local function lua_manual(name)
    if lua_libraries[name] then
        return said("lua_library", "%s is Lua's %s library (no entry here); Lua's manual explains it:", name, name)
            .. "\n  " .. MANUAL .. "#" .. lua_libraries[name]
    end
    local lib, field = name:match("^(%a+)%.([%a_][%w_]*)$")
    if lua_base[name] or (lua_libraries[lib] and type(rawget(_G, lib)) == "table" and rawget(_G, lib)[field] ~= nil) then
        return said("lua_own", "%s is part of Lua (no entry here); Lua's manual explains it:", name) .. "\n  " .. MANUAL .. "#pdf-" .. name
    end
end

-- The docs entry that explains command :name: its own (":open"), or one whose signature names it
-- (":back" explains :goto, :restart and :run too).
local function command_entry(name)
    local d = help.docs()
    if d[":" .. name] then return ":" .. name end
    local keys = {}
    for k, e in pairs(d) do
        if k:match("^:") and type(e.sig) == "string" and e.sig:find(":" .. name .. "%f[^%w_]") then keys[#keys + 1] = k end
    end
    table.sort(keys)
    return keys[1]
end

-- Help for a ':' command: its arguments and line from the REPL's table, and the docs entry that
-- explains it further. name (without the ':') may be a unique prefix, as at the prompt.
local function command_text(name)
    local d = help.docs()
    if not commands[name] and not command_entry(name) then
        local found = {}
        for full in pairs(commands) do if full:sub(1, #name) == name then found[#found + 1] = full end end
        table.sort(found)
        if #found == 0 then return said("no_command", "No command :%s. ? lists the commands.", name) end
        if #found > 1 then return said("could_be", ":%s could be :%s", name, table.concat(found, ", :")) end
        name = found[1]
    end
    local parts = {}
    local spec = commands[name]
    if spec then
        local args = type(spec.args) == "string" and spec.args ~= "" and (" " .. spec.args) or ""
        parts[1] = ":" .. name .. args
        parts[2] = ""
        local zh = chinese()
        parts[3] = wrap(tostring(zh and zh.commands[name] or spec.help or ""), "  ", width())
    end
    local key = command_entry(name)
    if key then
        if #parts > 0 then parts[#parts + 1] = "" end
        parts[#parts + 1] = format_entry(key, d[key])
    end
    return table.concat(parts, "\n")
end

-- Help for a value without an entry: a pointer to Lua's manual for Lua's own names, where a
-- function of the user's was defined, or the names that contain the word ("did you mean").
local function no_entry(name, value, partial)
    local manual = lua_manual(name)
    if manual then return manual end
    if type(value) == "function" then
        local info = debug.getinfo(value, "S")
        if info.what == "Lua" and not info.source:match("^[@=]?lua/") then
            return said("defined_at", "%s is a function defined at %s:%d (no help entry: it is not mha's).",
                        name, info.short_src, info.linedefined)
        end
    end
    local zh = chinese()
    -- a module's name (help("mha.interp")): its functions, each of them an entry
    local inside = partial and #partial > 0
    for _, p in ipairs(partial or {}) do
        if p:sub(1, #name + 1) ~= name .. "." then inside = false end
    end
    if inside then return columns(said("module_holds", "%s holds:", name), partial) end
    if partial and #partial > 0 then
        return columns(zh and string.format(zh.words.no_help_near, name) or ("No help for '" .. name .. "'. Did you mean:"), partial)
    end
    -- a slip of the keyboard: the topic nearest to what was typed (mha.sofmax -> mha.softmax)
    local keys = {}
    for key in pairs(help.docs()) do keys[#keys + 1] = key end
    table.sort(keys)
    local near = display.closest(name, keys)
    if near then
        return wrap(zh and string.format(zh.words.no_help_close, name, near)
                    or ("No help for '" .. name .. "'. Did you mean " .. near .. "?"), "", width())
    end
    return wrap(zh and string.format(zh.words.no_help, name) or ("No help for '" .. name .. "'. help() lists the topics."), "", width())
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
        -- mha.Tensor -> Tensor:view, mha.nn.Transformer -> Transformer:generate, an optimizer (its
        -- metatable's name is its module's, mha.optim) -> Optimizer:step
        if key == "mha.optim" then key = "Optimizer" end
        if key then return nil, (key:gsub("^mha%.nn%.", ""):gsub("^mha%.", "")) .. ":" .. method end
        return nil
    end
    return value
end

-- "See also: ?mha.select" when docs keys end in the name (for a name that is first something else).
local function see_also(text, exact)
    if #exact == 0 then return text end
    return text .. "\n  " .. said("see_also", "See also: ") .. "?" .. table.concat(exact, ", ?")
end

-- The help of the Module: method a class's method inherits (Transformer:forward, m:parameters of an
-- nn class -> Module:forward, Module:parameters), or nil; a Tensor's methods inherit none.
local function inherited_entry(d, key)
    local method = key:match("^[%w_]+:(.*)$")
    local inherited = method and "Module:" .. method
    if not inherited or inherited == key or key:match("^Tensor:") or not d[inherited] then return nil end
    return format_entry(inherited, d[inherited])
end

-- The entry a name without one is a part of, when that entry's text names it: mha.tasks.reverse
-- -> mha.tasks, mha.train.loss -> mha.train, Transformer:x -> mha.nn.Transformer. nil, or its name.
local function described_in(d, name)
    local parent, last = name:match("^(.*)[.:]([%a_][%w_]*)$")
    if not parent then return nil end
    for _, p in ipairs {parent, "mha." .. parent, "mha.nn." .. parent} do
        local e = d[p]
        local text = e and table.concat({e.sig or "", e.doc or "", e.example or ""}, " ")
        if text and text:find("%f[%w_]" .. last .. "%f[^%w_]") then return p end
    end
    return nil
end

-- Text of help for a name typed after '?' (or given as a string to help). Exact names win: a docs
-- key, a ':' command, what the name refers to at the prompt (its entry, or Lua's manual for Lua's
-- own), the last part of a docs key ("softmax" for mha.softmax); names that only contain the word
-- are offered as "did you mean".
local function help_name(name)
    local d = help.docs()
    if d[name] then return format_entry(name, d[name]) end
    if name:match("^:") then return command_text(name:sub(2)) end
    local value, key = resolve(name)
    if key then  -- x:view: the method's entry, or the library function it also is (mha.view)
        local fallback = "mha." .. key:match(":(.*)$")
        if d[key] then return format_entry(key, d[key]) end
        local inherited = inherited_entry(d, key)
        if inherited then return inherited end
        if d[fallback] then return format_entry(fallback, d[fallback]) end
    end
    local exact, partial = search(name)
    local within = #exact == 0 and described_in(d, key or name)
    if within then
        return wrap(said("described_in", "%s is described under ?%s:", name, within), "", width()) .. "\n\n"
            .. format_entry(within, d[within])
    end
    if value ~= nil then
        local k = key_of(value)
        if k and d[k] then return format_entry(k, d[k]) end
        local manual = lua_manual(type(value) == "function" and help.name_of(value) or name)
        if manual then return see_also(manual, exact) end
        if type(value) == "function" and #exact == 0 then return no_entry(name, value) end
    end
    if #exact == 1 then return format_entry(exact[1], d[exact[1]]) end
    if #exact > 1 then return columns(said("name_of", "'%s' is the name of:", name), exact) end
    return no_entry(name, value, partial)
end

-- The text help(...) prints.
function help.text(...)
    if select("#", ...) == 0 then return topics() end
    local value = ...
    if value == nil then
        return said("no_help_nil", "help(nil): that value is nil (a misspelt name?); help() lists the topics.")
    end
    if type(value) == "string" then return help_name(value) end
    local key = key_of(value)
    local d = help.docs()
    if key and d[key] then return format_entry(key, d[key]) end
    if type(value) == "function" and key then
        if lua_manual(key) then return lua_manual(key) end
        local exact = search(key)
        if #exact == 1 then return format_entry(exact[1], d[exact[1]]) end
        local inherited = inherited_entry(d, key)
        if inherited then return inherited end
        return help_name(key)
    end
    if type(value) == "function" then return no_entry(said("this_function", "this function"), value) end
    if type(value) == "table" then   -- help(mha.interp) as help("mha.interp")
        for _, name in ipairs(help.libraries()) do
            if resolve_path(name) == value then return help_name(name) end
        end
    end
    return said("no_help_type", "No help for this %s. help() lists the topics.", type(value))
end

-- At a terminal, a text taller than the screen pauses as a lesson step does (mha.lesson.pager).
function help.help(...)
    local text = help.text(...)
    local ok, pager = pcall(require, "mha.lesson.pager")
    if ok and type(pager) == "table" then return pager.run(function() print(text) end, language(), width()) end
    print(text)
end

-- The text :help NAME prints for a command (NAME without its ':').
help.command_text = command_text

return help
