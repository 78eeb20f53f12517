-- lua/repl.lua - the Lua side of mha-repl's REPL (module "mha.repl"): the ':' commands, how values are
-- printed, `_`, completion candidates, and the session transcript that :save writes.
--
-- lua/repl.c reads the lines and runs the chunks; it calls, from this module:
--   repl.init(carried)             once per Lua state (carried: what repl.carry() returned before a :reset)
--   repl.after(input, how, seconds, ...)  after each Lua input; how is "print", "quiet" (a trailing ';'),
--                                  "stmt" or "error", followed by the values or the error message
--   repl.command(line)             for a line starting with ':' or '?'; may return "quit" or "reset"
--   repl.empty_line()              for Enter on an empty line at the first prompt
--   repl.complete(text, line, start)  Tab: a list of candidates, or "files" for file names
-- and sets repl.colour, repl.interactive and repl.clock (wall-clock seconds).
--
-- Another module adds a command with one line:
--   repl.add_command("next", {args = "", help = "run the next step", run = function(argstring) ... end})
-- run may return "quit" or "reset" to ask the REPL for that; an optional complete(text, line) returns
-- candidates for the arguments (args mentioning FILE complete file names by default).

local repl = {}

repl.commands = {}          -- name -> {args = "FILE", help = "one line", run = function(argstring) end}
repl.on_empty_line = nil    -- function run by Enter on an empty line (the lesson runner sets it)
repl.colour = false
repl.interactive = false
repl.clock = os.clock
repl.show_time = false      -- :time

-- The printer's limits.
local MAX_DEPTH = 4         -- deeper tables print as {...}
local MAX_ITEMS = 100       -- entries shown per table
local WIDTH = 78            -- a table that fits in this many columns prints on one line
local MAX_CAPTURE = 100000  -- bytes of one input's output kept for the transcript

local keywords = {}
for word in ([[and break do else elseif end false for function goto if in local nil not or repeat
               return then true until while]]):gmatch("%a+") do keywords[word] = true end

function repl.add_command(name, spec)
    if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
        error("add_command: name must be a word, got " .. tostring(name), 2)
    end
    if type(spec) ~= "table" or type(spec.run) ~= "function" then
        error("add_command: " .. name .. ": spec.run must be a function", 2)
    end
    repl.commands[name] = spec
end

-- ---------------------------------------------------------------------------------------------
-- Colour: only when lua/repl.c says stdout is a terminal and NO_COLOR is unset.
-- ---------------------------------------------------------------------------------------------

local palette = {number = "\27[36m", error = "\27[31m", dim = "\27[2m", command = "\27[1m"}

local function paint(kind, s)
    if not repl.colour then return s end
    return palette[kind] .. s .. "\27[0m"
end

-- ---------------------------------------------------------------------------------------------
-- Output capture: what each input printed, for the Markdown transcript. print, io.write and
-- io.stdout:write are wrapped; output written by C code straight to the terminal is not seen.
-- ---------------------------------------------------------------------------------------------

local captured, captured_bytes = {}, 0
local real_write = io.stdout.write     -- io.stdout's own write method
local capture_installed = false

local function capture(s)
    if captured_bytes > MAX_CAPTURE then return end
    captured[#captured + 1] = s
    captured_bytes = captured_bytes + #s
    if captured_bytes > MAX_CAPTURE then captured[#captured + 1] = "\n... (the rest is not in the transcript)\n" end
end

local function take_captured()
    local s = table.concat(captured)
    captured, captured_bytes = {}, 0
    return (s:gsub("\27%[[%d;]*m", ""))
end

-- Writes s to stdout and keeps it for the transcript.
local function out(s)
    capture(s)
    real_write(io.stdout, s)
end

local function err_out(s)
    capture(s)
    io.stdout:flush()  -- what was printed before the error comes before it
    io.stderr:write(s)
end

-- Numbers as io.write writes them (integers plainly, floats with %.14g), other values with tostring.
local function write_piece(v)
    if math.type(v) == "float" then return string.format("%.14g", v) end
    return tostring(v)
end

local function install_capture()
    if capture_installed then return end
    capture_installed = true
    local methods = getmetatable(io.stdout).__index
    methods.write = function(f, ...)
        if f == io.stdout then
            for i = 1, select("#", ...) do capture(write_piece((select(i, ...)))) end
        end
        return real_write(f, ...)
    end
    local real_io_write = io.write
    io.write = function(...)
        if io.output() == io.stdout then
            for i = 1, select("#", ...) do capture(write_piece((select(i, ...)))) end
        end
        return real_io_write(...)
    end
    _G.print = function(...)   -- Lua's print, written through out()
        local n = select("#", ...)
        local parts = {}
        for i = 1, n do parts[i] = tostring((select(i, ...))) end
        out(table.concat(parts, "\t") .. "\n")
    end
end

-- ---------------------------------------------------------------------------------------------
-- Printing values: tensors (anything with __tostring) through tostring, tables readably.
-- ---------------------------------------------------------------------------------------------

local function quote(s)
    return (string.format("%q", s):gsub("\\\n", "\\n"):gsub("\r", "\\r"))
end

-- Keys in a fixed order: booleans, then numbers, then strings, then the rest by their tostring.
local type_rank = {boolean = 1, number = 2, string = 3}
local function key_before(a, b)
    local ra, rb = type_rank[type(a)] or 4, type_rank[type(b)] or 4
    if ra ~= rb then return ra < rb end
    if ra == 4 then return tostring(a) < tostring(b) end
    if ra == 1 then return not a and b end
    return a < b
end

local function safe_tostring(v)
    local ok, s = pcall(tostring, v)
    if ok then return s end
    return "<error in __tostring: " .. tostring(s) .. ">"
end

local format_value

local function format_table(t, depth, path, indent)
    if path[t] then return "<cycle>" end
    if depth >= MAX_DEPTH then return "{...}" end
    path[t] = true
    local items, n = {}, 0
    local len = 0
    while rawget(t, len + 1) ~= nil do len = len + 1 end
    local keys = {}
    for k in next, t do
        if not (math.type(k) == "integer" and k >= 1 and k <= len) then keys[#keys + 1] = k end
    end
    table.sort(keys, key_before)
    local total = len + #keys
    local inner = indent .. "  "
    for i = 1, len do
        if n >= MAX_ITEMS then break end
        n = n + 1
        items[n] = format_value(rawget(t, i), depth + 1, path, inner)
    end
    for _, k in ipairs(keys) do
        if n >= MAX_ITEMS then break end
        n = n + 1
        local name
        if type(k) == "string" and k:match("^[%a_][%w_]*$") and not keywords[k] then name = k
        elseif type(k) == "string" then name = "[" .. quote(k) .. "]"
        else name = "[" .. format_value(k, MAX_DEPTH, path, inner) .. "]" end
        items[n] = name .. " = " .. format_value(rawget(t, k), depth + 1, path, inner)
    end
    if total > n then items[n + 1] = string.format("... (%d more)", total - n) end
    path[t] = nil
    if #items == 0 then return "{}" end
    local one_line = "{" .. table.concat(items, ", ") .. "}"
    local visible = one_line:gsub("\27%[[%d;]*m", "")
    if #visible + #indent <= WIDTH and not one_line:find("\n") then return one_line end
    return "{\n" .. inner .. table.concat(items, ",\n" .. inner) .. ",\n" .. indent .. "}"
end

format_value = function(v, depth, path, indent)
    local kind = type(v)
    if kind == "number" then return paint("number", tostring(v)) end
    if kind == "string" then return quote(v) end
    if kind == "table" then
        local mt = getmetatable(v)
        if mt and rawget(mt, "__tostring") then return (safe_tostring(v):gsub("\n", "\n" .. indent)) end
        return format_table(v, depth, path, indent)
    end
    return (safe_tostring(v):gsub("\n", "\n" .. indent))
end

-- The text auto-print shows for one value: strings as they are (as lua.c does), the rest formatted.
function repl.format(v)
    if type(v) == "string" then return v end
    return format_value(v, 0, {}, "")
end

-- Several values share a line, tab-separated as print does, unless one of them spans lines.
local function print_values(...)
    local n = select("#", ...)
    local texts, multiline = {}, false
    for i = 1, n do
        texts[i] = repl.format((select(i, ...)))
        if texts[i]:find("\n") then multiline = true end
    end
    out(table.concat(texts, multiline and "\n" or "\t") .. "\n")
end

local function format_bytes(n)
    if n < 1024 then return string.format("%d B", n) end
    if n < 1024 * 1024 then return string.format("%.1f KiB", n / 1024) end
    if n < 1024 * 1024 * 1024 then return string.format("%.1f MiB", n / (1024 * 1024)) end
    return string.format("%.2f GiB", n / (1024 * 1024 * 1024))
end

-- :time's line: wall time, and the bytes the tensors hold (mha.memory()) when the library says.
local function show_time(seconds)
    local text
    if seconds < 1 then text = string.format("time %.3g ms", seconds * 1000)
    else text = string.format("time %.3g s", seconds) end
    local mha = package.loaded.mha
    if type(mha) == "table" and type(mha.memory) == "function" then
        collectgarbage()  -- count the tensors variables hold, not the garbage not yet collected
        local ok, live = pcall(mha.memory)
        if ok and type(live) == "table" then live = live.live or live[1] end
        if ok and type(live) == "number" then text = text .. ", tensors hold " .. format_bytes(live) end
    end
    io.stdout:write(paint("dim", "[" .. text .. "]"), "\n")  -- not captured: times differ run to run
    captured, captured_bytes = {}, 0
end

-- ---------------------------------------------------------------------------------------------
-- The transcript: every input with what it printed, for :save.
-- ---------------------------------------------------------------------------------------------

local transcript = {}   -- {kind = "lua"|"command"|"enter", input =, how =, output =}

local function record(entry)
    entry.output = take_captured()
    transcript[#transcript + 1] = entry
end

-- Error text: red with colour, on stderr as lua.c does.
local function show_error(msg)
    err_out(paint("error", tostring(msg)) .. "\n")
end

function repl.after(input, how, seconds, ...)
    if how == "error" then
        show_error((...))
    else  -- values: an expression's, or those a chunk of statements returned
        local n = select("#", ...)
        if n > 0 and (...) ~= nil then rawset(_G, "_", (...)) end
        if how ~= "quiet" and n > 0 then print_values(...) end
    end
    record({kind = "lua", input = input, how = how})
    if repl.show_time then show_time(seconds) end
end

-- ---------------------------------------------------------------------------------------------
-- Commands
-- ---------------------------------------------------------------------------------------------

-- The command called name, or the only one name abbreviates; else nil and why.
local function find_command(name)
    if repl.commands[name] then return repl.commands[name], name end
    local found = {}
    for full in pairs(repl.commands) do
        if full:sub(1, #name) == name then found[#found + 1] = full end
    end
    table.sort(found)
    if #found == 1 then return repl.commands[found[1]], found[1] end
    if #found == 0 then return nil, "unknown command :" .. name .. " (? lists the commands)" end
    return nil, ":" .. name .. " could be :" .. table.concat(found, ", :")
end

local function command_names()
    local names = {}
    for name in pairs(repl.commands) do names[#names + 1] = name end
    table.sort(names)
    return names
end

local function list_commands()
    local rows, width = {}, 0
    for _, name in ipairs(command_names()) do
        local spec = repl.commands[name]
        local left = ":" .. name .. ((spec.args and spec.args ~= "") and (" " .. spec.args) or "")
        rows[#rows + 1] = {left, spec.help or ""}
        if #left > width then width = #left end
    end
    out("Commands (a unique prefix is enough, :q for :quit):\n")
    for _, row in ipairs(rows) do
        out("  " .. paint("command", row[1]) .. string.rep(" ", width - #row[1] + 2) .. row[2] .. "\n")
    end
    out([[
Help:   ?name or help(f) explains a function, e.g. ?mha.softmax;  help() lists the topics
Keys:   Tab completes names, fields, methods (x:tra<Tab>), commands and file names in strings;
        Up/Down and Ctrl-R search the history; Ctrl-C stops a running command or clears the line;
        Ctrl-D on an empty line quits
Values: an expression prints its value; a trailing ; hides it; _ holds the last value
]])
end

-- Runs f(arg) and prints its error, if any, with a traceback that leaves out the REPL's own frames.
local function run_protected(f, arg)
    local ok, result = xpcall(f, function(m)
        local text = debug.traceback(tostring(m), 2)
        local lines = {}
        for line in text:gmatch("[^\n]+") do
            if not (line:find("repl.lua:", 1, true) or line:find("[C]: in ?", 1, true)
                    or line:find("in function 'xpcall'", 1, true)) then
                lines[#lines + 1] = line
            end
        end
        if #lines <= 2 then return lines[1] end
        return table.concat(lines, "\n")
    end, arg)
    if not ok then show_error(result) return nil end
    return result
end

function repl.command(line)
    local text = line:match("^%s*(.-)%s*$")
    local action
    if text:sub(1, 1) == "?" then
        local topic = text:sub(2):match("^%s*(.-)$")
        if topic == "" then list_commands()
        else run_protected(function() require("mha.help").help(topic) end) end
    else
        local name, rest = text:match("^:(%S*)%s*(.*)$")
        local spec, why = find_command(name)
        if not spec then show_error(why)
        else action = run_protected(spec.run, rest) end
    end
    record({kind = "command", input = text})
    if action == "quit" or action == "reset" then return action end
end

function repl.empty_line()
    if type(repl.on_empty_line) ~= "function" then return end
    local action = run_protected(repl.on_empty_line)
    record({kind = "enter", input = ""})
    if action == "quit" or action == "reset" then return action end
end

-- ---------------------------------------------------------------------------------------------
-- :save - FILE.lua replays the session's inputs; FILE.md is the transcript with outputs.
-- ---------------------------------------------------------------------------------------------

-- Whether a chunk may return before its end, which in a script would end the script: a return as
-- its last statement (then nothing may follow it, as the parser says), or one inside a block such as
-- `do return end`. A function definition's returns are its own.
local function may_return(input)
    if load(input) ~= nil and load(input .. "\n;_ = nil") == nil then return true end
    return input:find("%f[%w_]return%f[^%w_]") ~= nil
           and not input:match("^%s*local%s+function%s") and not input:match("^%s*function%s")
end

-- The Lua of one entry in the replayable script.
local function as_script(entry)
    local input = entry.input
    if entry.kind == "enter" then return "-- (Enter: the next lesson step)" end
    if entry.kind == "command" then return "-- " .. input end
    if entry.how == "error" then
        return "-- (this input raised an error)\n" .. ("-- " .. input:gsub("\n", "\n-- "))
    end
    if entry.how == "stmt" and may_return(input) then  -- it would end the script: make it a call
        local call = "(function()\n" .. input .. "\nend)()"
        if entry.output ~= "" then return "print(" .. call .. ")" end
        return ";" .. call  -- ';': a line starting with '(' would call the value of the line before
    end
    if entry.how == "print" or entry.how == "quiet" then
        local expr = input:match("^(.-)[%s;]*$")
        local close = expr:find("--", 1, true) and "\n)" or ")"  -- a comment must not swallow the ')'
        if entry.how == "print" then return "print(" .. expr .. close end
        return "_ = (" .. expr .. close
    end
    return input
end

-- A Markdown fence longer than any run of backticks in s.
local function fence_for(s)
    local longest = 2
    for run in s:gmatch("`+") do if #run > longest then longest = #run end end
    return string.rep("`", longest + 1)
end

local function write_file(path, text)
    local f, err = io.open(path, "w")
    if not f then error(":save: " .. err, 0) end
    local ok, werr = f:write(text)
    local closed, cerr = f:close()
    if not ok or not closed then error(":save: " .. path .. ": " .. tostring(werr or cerr), 0) end
end

function repl.save(base)
    base = base:gsub("%.lua$", ""):gsub("%.md$", "")
    local script = {"-- A session of mha-repl, saved by :save. Replay it with: mha-repl " .. base .. ".lua", ""}
    local md = {"# mha-repl session", ""}
    for _, entry in ipairs(transcript) do
        script[#script + 1] = as_script(entry)
        local input = entry.kind == "enter" and "(Enter)" or entry.input
        local fence = fence_for(input)
        md[#md + 1] = fence .. (entry.kind == "lua" and "lua" or "")
        md[#md + 1] = input
        md[#md + 1] = fence
        if entry.output ~= "" then
            local output = entry.output:gsub("\n$", "")
            local ofence = fence_for(output)
            md[#md + 1] = ofence .. "text"
            md[#md + 1] = output
            md[#md + 1] = ofence
        end
        md[#md + 1] = ""
    end
    write_file(base .. ".lua", table.concat(script, "\n") .. "\n")
    write_file(base .. ".md", table.concat(md, "\n"))
    return base .. ".lua", base .. ".md", #transcript
end

-- ---------------------------------------------------------------------------------------------
-- The REPL's own commands
-- ---------------------------------------------------------------------------------------------

repl.add_command("help", {args = "[NAME]", help = "list the commands, or explain NAME (as ?NAME)",
    run = function(arg)
        if arg == "" then list_commands() else require("mha.help").help(arg) end
    end})

repl.add_command("quit", {args = "", help = "leave mha-repl (Ctrl-D does too)",
    run = function() return "quit" end})

repl.add_command("time", {args = "", help = "toggle showing each command's wall time and the memory tensors hold",
    run = function()
        repl.show_time = not repl.show_time
        out("time: " .. (repl.show_time and "on" or "off") .. "\n")
    end})

repl.add_command("reset", {args = "", help = "start afresh: a new Lua state, every variable gone",
    run = function()
        out("fresh state (the history, the transcript for :save and :time are kept)\n")
        return "reset"
    end})

repl.add_command("save", {args = "FILE", help = "write the session as FILE.lua (a script) and FILE.md (inputs and outputs)",
    run = function(arg)
        local name = arg:match("^%s*(.-)%s*$"):gsub("^[\"'](.*)[\"']$", "%1")
        if name == "" then error(":save FILE (writes FILE.lua and FILE.md)", 0) end
        local lua_path, md_path, n = repl.save(name)
        out(string.format("saved %d inputs to %s and %s\n", n, lua_path, md_path))
    end})

-- ---------------------------------------------------------------------------------------------
-- Completion
-- ---------------------------------------------------------------------------------------------

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
-- tables add (as classes do), into names.
local function add_fields(names, t, prefix, only_functions)
    local seen = 0
    while t ~= nil and seen < 8 do
        seen = seen + 1
        if type(t) == "table" then
            for k, v in next, t do
                if type(k) == "string" and k:match("^[%a_][%w_]*$") and k:sub(1, #prefix) == prefix
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

local function complete_command(text, line, start)
    local before = line:sub(1, start)
    if before:match("^%s*$") then
        local prefix = text:match("^:(.*)$") or ""
        local names = {}
        for _, name in ipairs(command_names()) do
            if name:sub(1, #prefix) == prefix then names[#names + 1] = ":" .. name end
        end
        return names
    end
    local name = line:match("^%s*:(%S+)")
    local spec = name and find_command(name)
    if spec and spec.complete then return spec.complete(text, line) end
    if spec and spec.args and spec.args:find("FILE", 1, true) then return "files" end
    return {}
end

function repl.complete(text, line, start)
    if line:match("^%s*:") then return complete_command(text, line, start) end
    local head, chain = text:match("^(.-)([%w_%.:]*)$")
    local base, sep, partial = chain:match("^(.*)([%.:])([%w_]*)$")
    local names = {}
    if not base then
        partial = chain
        for word in pairs(keywords) do if word:sub(1, #partial) == partial then names[#names + 1] = word end end
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
    else  -- a method: through the metatable (__index when a table, else __methods); strings use string
        local mt = getmetatable(value)
        local methods = type(mt) == "table" and (type(mt.__index) == "table" and mt.__index or mt.__methods)
        if type(methods) == "table" then add_fields(names, methods, partial, true) end
    end
    for i, name in ipairs(names) do names[i] = head .. base .. sep .. name end
    return sorted_unique(names)
end

-- ---------------------------------------------------------------------------------------------
-- Life cycle: init in each new Lua state; carry across :reset.
-- ---------------------------------------------------------------------------------------------

-- What the next state keeps after :reset: the transcript and the :time setting, as Lua source.
function repl.carry()
    local parts = {"return {show_time = ", tostring(repl.show_time), ", transcript = {"}
    for _, e in ipairs(transcript) do
        parts[#parts + 1] = string.format("{kind = %q, input = %q, how = %q, output = %q},",
                                          e.kind, e.input, e.how or "", e.output)
    end
    parts[#parts + 1] = "}}"
    return table.concat(parts)
end

function repl.init(carried)
    install_capture()
    if carried then
        local chunk = load(carried, "=carry", "t", {})
        local ok, state = pcall(chunk)
        if ok and type(state) == "table" then
            repl.show_time = state.show_time
            for _, e in ipairs(state.transcript) do
                if e.how == "" then e.how = nil end
                transcript[#transcript + 1] = e
            end
        end
    end
    -- the lesson runner, when it is part of the build, adds :lessons, :open, :next ...
    if package.preload["mha.lesson"] then
        local ok, lesson = pcall(require, "mha.lesson")
        if ok and type(lesson) == "table" and type(lesson.install) == "function" then lesson.install(repl)
        elseif not ok then show_error("mha.lesson: " .. tostring(lesson)) end
    end
    captured, captured_bytes = {}, 0
end

return repl
