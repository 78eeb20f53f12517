-- tools/lint.lua - the architecture's rules over the tracked files of core/ and lua/: no cycle in
-- the include graph (units, rooms) or the require graph, core includes no Lua, sizes, comments.
-- usage: mha-repl tools/lint.lua [--graph] [ROOT]   (make lint; tests/sh/test_lint.sh)
-- Prints "file:line: rule: detail" per violation, then a summary; exits 1 on any violation.
-- --graph prints the core room graph and the require graph instead (for docs/architecture.md).

local MAX_FILE, MAX_FUNCTION, MAX_COLUMNS = 900, 100, 100

local graph_only, root = false, "."
for _, a in ipairs(arg) do
    if a == "--graph" then graph_only = true
    elseif a:sub(1, 1) == "-" then
        io.stderr:write("usage: mha-repl tools/lint.lua [--graph] [ROOT]\n"); os.exit(2)
    else root = a end
end

-- files -------------------------------------------------------------------------------------------

local function read(path)
    local f = io.open(root .. "/" .. path, "rb")
    if not f then return nil end
    local text = f:read("a"); f:close()
    return text
end

local function lines_of(command)
    local out = {}
    local p = io.popen(command)
    if not p then return out end
    for line in p:lines() do out[#out + 1] = line end
    p:close()
    return out
end

-- the tracked files of core/ and lua/ (git ls-files), or every file there outside a git checkout
local function source_files()
    local q = "'" .. root:gsub("'", "'\\''") .. "'"
    local files = lines_of("cd " .. q .. " && git ls-files core lua 2>/dev/null")
    if #files == 0 then
        files = lines_of("cd " .. q .. " && find core lua -type f 2>/dev/null | sort")
    end
    local exists = {}
    for _, f in ipairs(files) do exists[f] = true end
    return files, exists
end

local function ext(path) return path:match("%.(%w+)$") or "" end
local function dir(path) return path:match("^(.*)/[^/]*$") or "." end
local function unit(path) return (path:gsub("%.[ch]$", "")) end

-- "a/b/../c" -> "a/c", "./x" -> "x"
local function normalize(path)
    local parts = {}
    for p in path:gmatch("[^/]+") do
        if p == ".." and #parts > 0 and parts[#parts] ~= ".." then parts[#parts] = nil
        elseif p ~= "." then parts[#parts + 1] = p end
    end
    return table.concat(parts, "/")
end

-- violations --------------------------------------------------------------------------------------

local violations, counts, warnings = {}, {}, {}

local function report(file, line, rule, detail)
    violations[#violations + 1] = {file = file, line = line,
                                   text = string.format("%s:%d: %s: %s", file, line, rule, detail)}
    counts[rule] = (counts[rule] or 0) + 1
end

local function report_function(file, f)
    report(file, f.line, "function-length",
           string.format("function %s is %d lines (at most %d)", f.name, f.length, MAX_FUNCTION))
end

-- a line longer than MAX_COLUMNS: a comment violation when everything past the limit is comment,
-- a warning when code or a string reaches past it
local function check_width(file, line, over)
    if over == "comment" then
        report(file, line, "comment-width", "comment past column " .. MAX_COLUMNS)
    elseif over == "code" then
        warnings[#warnings + 1] = string.format("%s:%d: long-line: code or string past column %d",
                                                file, line, MAX_COLUMNS)
    end
end

-- marks[line] records what lies past column MAX_COLUMNS: "code" wins over "comment"
local function mark(marks, line, col, kind, byte)
    if col > MAX_COLUMNS and byte ~= 32 and byte ~= 9 and marks[line] ~= "code" then
        marks[line] = kind
    end
end

-- C: comments, strings, braces --------------------------------------------------------------------

-- scans C source once: what lies past the width limit on each line, and the top-level function
-- bodies (from the line of the brace opening the body to the line of its matching brace)
local function scan_c(text)
    local marks, functions = {}, {}
    local line, col, i, n = 1, 0, 1, #text
    local state = "code"          -- code, line, block, string, char
    local pp, at_line_start = false, true
    local depth, head, body_start, body_name = 0, {}, nil, nil
    while i <= n do
        local b = text:byte(i)
        local c = string.char(b)
        if b < 0x80 or b >= 0xC0 then col = col + 1 end     -- a column per UTF-8 character
        if c == "\n" then
            if state == "line" then state = "code" end
            if pp and text:byte(i - 1) ~= 92 then pp = false end
            line, col, at_line_start = line + 1, 0, true
            if depth == 0 and not pp then head[#head + 1] = " " end
            i = i + 1
        else
            local kind = (state == "line" or state == "block") and "comment" or "code"
            local nxt = text:sub(i + 1, i + 1)
            if state == "code" then
                if c == "/" and nxt == "/" then state, kind = "line", "comment"
                elseif c == "/" and nxt == "*" then state, kind = "block", "comment"
                elseif c == '"' then state = "string"
                elseif c == "'" then state = "char"
                elseif c == "#" and at_line_start then pp = true
                elseif not pp and c == "{" then
                    if depth == 0 then
                        local sig = table.concat(head)
                        if sig:match("%)%s*$") and not sig:match("=%s*$") then
                            body_start = line
                            body_name = sig:match("([%a_][%w_]*)%s*%(") or "?"
                        else body_start = nil end
                    end
                    depth = depth + 1
                elseif not pp and c == "}" then
                    depth = depth - 1
                    if depth == 0 then
                        if body_start and line - body_start + 1 > MAX_FUNCTION then
                            functions[#functions + 1] = {line = body_start, name = body_name,
                                                         length = line - body_start + 1}
                        end
                        body_start, head = nil, {}
                    end
                    if depth < 0 then depth = 0 end
                elseif not pp and c == ";" and depth == 0 then head = {}
                elseif depth == 0 and not pp then head[#head + 1] = c end
                mark(marks, line, col, kind, b)
                if state == "line" or state == "block" then
                    mark(marks, line, col + 1, "comment", nxt:byte()); i, col = i + 1, col + 1
                end
            elseif state == "block" then
                mark(marks, line, col, "comment", b)
                if c == "*" and nxt == "/" then
                    state = "code"; mark(marks, line, col + 1, "comment", 47)
                    i, col = i + 1, col + 1
                end
            elseif state == "line" then
                mark(marks, line, col, "comment", b)
            else                                                  -- string or char literal
                mark(marks, line, col, "code", b)
                if c == "\\" then
                    i, col = i + 1, col + 1
                    if nxt == "\n" then line, col = line + 1, 0 end
                elseif (state == "string" and c == '"') or (state == "char" and c == "'") then
                    state = "code"
                end
            end
            if b ~= 32 and b ~= 9 then at_line_start = false end
            i = i + 1
        end
    end
    return marks, functions
end

-- Lua: a small tokenizer that skips strings and comments ------------------------------------------

-- the level of a long bracket opening at i ("[[" is 0, "[==[" is 2), or nil
local function long_bracket(text, i)
    local eq = text:match("^%[(=*)%[", i)
    return eq and #eq or nil
end

-- tokens of Lua source: {kind = "name"|"string"|"op", value, line}; marks as for C
local function scan_lua(text)
    local marks, tokens = {}, {}
    local line, i, n = 1, 1, #text
    local line_start = 1
    -- marks every character of text[from..to] (which may span lines) as kind
    local function span(from, to, kind)
        for j = from, to do
            local b = text:byte(j)
            if b == 10 then line, line_start = line + 1, j + 1
            elseif b < 0x80 or b >= 0xC0 then
                local col = utf8.len(text, line_start, j) or (j - line_start + 1)
                mark(marks, line, col, kind, b)
            end
        end
    end
    if text:sub(1, 2) == "#!" then i = (text:find("\n", 1, true) or n) end
    while i <= n do
        local c = text:sub(i, i)
        if c == "\n" then line, line_start, i = line + 1, i + 1, i + 1
        elseif c:match("%s") then i = i + 1
        elseif text:sub(i, i + 1) == "--" then
            local level = long_bracket(text, i + 2)
            local stop
            if level then
                local close = "]" .. string.rep("=", level) .. "]"
                stop = select(2, text:find(close, i + 2, true)) or n
            else
                stop = (text:find("\n", i, true) or n + 1) - 1
            end
            span(i, stop, "comment"); i = stop + 1
        elseif c == '"' or c == "'" then
            local j, value = i + 1, {}
            while j <= n do
                local d = text:sub(j, j)
                if d == "\\" then value[#value + 1] = text:sub(j, j + 1); j = j + 2
                elseif d == c or d == "\n" then break
                else value[#value + 1] = d; j = j + 1 end
            end
            tokens[#tokens + 1] = {kind = "string", value = table.concat(value), line = line}
            span(i, j, "code"); i = j + 1
        elseif c == "[" and long_bracket(text, i) then
            local level = long_bracket(text, i)
            local close = "]" .. string.rep("=", level) .. "]"
            local a, stop = text:find(close, i, true)
            stop = stop or n
            local value = text:sub(i + level + 2, (a or n + 1) - 1)
            tokens[#tokens + 1] = {kind = "string", value = value, line = line}
            span(i, stop, "code"); i = stop + 1
        elseif c:match("[%a_]") then
            local name = text:match("^[%a_][%w_]*", i)
            tokens[#tokens + 1] = {kind = "name", value = name, line = line}
            span(i, i + #name - 1, "code"); i = i + #name
        else
            tokens[#tokens + 1] = {kind = "op", value = c, line = line}
            span(i, i, "code"); i = i + 1
        end
    end
    return marks, tokens
end

-- Lua functions longer than MAX_FUNCTION lines: function/if/do/repeat open a block, end/until
-- close one
local function lua_functions(tokens)
    local long, stack = {}, {}
    for k, t in ipairs(tokens) do
        if t.kind == "name" then
            local v = t.value
            if v == "function" then
                local name
                local nx = tokens[k + 1]
                if nx and nx.kind == "name" then
                    local parts, j = {nx.value}, k + 2
                    while tokens[j] and (tokens[j].value == "." or tokens[j].value == ":")
                          and tokens[j + 1] and tokens[j + 1].kind == "name" do
                        parts[#parts + 1] = tokens[j].value .. tokens[j + 1].value; j = j + 2
                    end
                    name = table.concat(parts)
                elseif k > 2 and tokens[k - 1].value == "=" and tokens[k - 2].kind == "name" then
                    name = tokens[k - 2].value
                end
                stack[#stack + 1] = {fn = true, line = t.line, name = name or "(anonymous)"}
            elseif v == "if" or v == "do" or v == "repeat" then
                stack[#stack + 1] = {fn = false}
            elseif v == "end" or v == "until" then
                local top = table.remove(stack)
                if top and top.fn and t.line - top.line + 1 > MAX_FUNCTION then
                    long[#long + 1] = {line = top.line, name = top.name,
                                       length = t.line - top.line + 1}
                end
            end
        end
    end
    return long
end

-- the modules a Lua file requires: require "m", require("m"), pcall(require, "m")
local function lua_requires(tokens)
    local found = {}
    for k, t in ipairs(tokens) do
        if t.kind == "name" and t.value == "require" then
            local a, b = tokens[k + 1], tokens[k + 2]
            local target
            if a and a.kind == "string" then target = a
            elseif a and a.value == "(" and b and b.kind == "string" then target = b
            elseif a and a.value == "," and b and b.kind == "string" and k > 2
                   and tokens[k - 1].value == "(" and tokens[k - 2].value == "pcall" then
                target = b
            end
            if target then found[#found + 1] = {module = target.value, line = t.line} end
        end
    end
    return found
end

-- graphs ------------------------------------------------------------------------------------------

-- the strongly connected components of a graph with more than one node (Tarjan), each sorted
local function cycles_of(nodes, edges)
    local index, low, on, stack, out, next_index = {}, {}, {}, {}, {}, 0
    local function connect(v)
        index[v], low[v] = next_index, next_index; next_index = next_index + 1
        stack[#stack + 1] = v; on[v] = true
        local targets = {}
        for w in pairs(edges[v] or {}) do targets[#targets + 1] = w end
        table.sort(targets)
        for _, w in ipairs(targets) do
            if not index[w] then connect(w); low[v] = math.min(low[v], low[w])
            elseif on[w] then low[v] = math.min(low[v], index[w]) end
        end
        if low[v] == index[v] then
            local comp = {}
            repeat local w = table.remove(stack); on[w] = false; comp[#comp + 1] = w until w == v
            if #comp > 1 then table.sort(comp); out[#out + 1] = comp end
        end
    end
    for _, v in ipairs(nodes) do if not index[v] then connect(v) end end
    table.sort(out, function(a, b) return a[1] < b[1] end)
    return out
end

-- one shortest cycle through the first node of a component, as "a -> b -> a"
local function cycle_path(comp, edges)
    local inside = {}
    for _, v in ipairs(comp) do inside[v] = true end
    local start = comp[1]
    local prev, queue, head = {[start] = false}, {start}, 1
    while head <= #queue do
        local v = queue[head]; head = head + 1
        local targets = {}
        for w in pairs(edges[v] or {}) do if inside[w] then targets[#targets + 1] = w end end
        table.sort(targets)
        for _, w in ipairs(targets) do
            if w == start then
                local path, u = {start}, v
                while u do table.insert(path, 2, u); u = prev[u] end
                table.remove(path, 2)           -- start sits at both ends once
                path[#path + 1] = start
                return table.concat(path, " -> ")
            end
            if prev[w] == nil then prev[w] = v; queue[#queue + 1] = w end
        end
    end
    return table.concat(comp, " <-> ")
end

local function add_edge(edges, from, to, where)
    edges[from] = edges[from] or {}
    if not edges[from][to] then edges[from][to] = where end
end

local function sorted_keys(t)
    local keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    table.sort(keys)
    return keys
end

-- the Makefile: -I folders of ALL_CFLAGS, module = file pairs of EMBED
local makefile = read("Makefile") or ""
local include_dirs = {}
for flags in ("\n" .. makefile):gmatch("\nALL_CFLAGS%s*=([^\n]*)") do
    for d in flags:gmatch("%-I(%S+)") do
        include_dirs[#include_dirs + 1] = (d:gsub("%$%(BUILD%)", "build"))
    end
end
local module_file = {}
for name, file in makefile:gmatch("(mha[%w_.]*)=(lua/[%w_/.]+%.lua)") do
    module_file[name] = file
end

-- the checks --------------------------------------------------------------------------------------

local files, exists = source_files()
local unit_edges, room_edges, require_edges, units, rooms = {}, {}, {}, {}, {}
local includes = {}   -- file -> {{target =, where =}}: its quoted includes, resolved
local file_module = {}
for name, file in pairs(module_file) do file_module[file] = name end

for _, path in ipairs(files) do
    local e = ext(path)
    local text = (e == "c" or e == "h" or e == "lua") and read(path)
    if text then
        local nlines = select(2, text:gsub("\n", ""))
        if text ~= "" and text:sub(-1) ~= "\n" then nlines = nlines + 1 end
        if nlines > MAX_FILE then
            report(path, 1, "file-length", string.format("%d lines (at most %d)", nlines, MAX_FILE))
        end
        local marks
        if e == "lua" then
            local tokens
            marks, tokens = scan_lua(text)
            for _, f in ipairs(lua_functions(tokens)) do
                report_function(path, f)
            end
            local from = file_module[path] or path
            require_edges[from] = require_edges[from] or {}
            for _, r in ipairs(lua_requires(tokens)) do
                if r.module:match("^mha") then
                    add_edge(require_edges, from, r.module, path .. ":" .. r.line)
                end
            end
        else
            local functions
            marks, functions = scan_c(text)
            for _, f in ipairs(functions) do
                report_function(path, f)
            end
            local u = unit(path)
            if exists[u .. ".c"] and e == "c" then units[#units + 1] = u end
            local room = path:match("^core/([^/]+)/")
            if room then rooms[room] = true end
            local ln = 0
            for l in (text .. "\n"):gmatch("([^\n]*)\n") do
                ln = ln + 1
                local quoted = l:match('^%s*#%s*include%s*"([^"]+)"')
                local angled = l:match("^%s*#%s*include%s*<([^>]+)>")
                if room and angled and angled:match("^lua") or room and angled == "lauxlib.h" then
                    report(path, ln, "core-includes-lua", "core includes <" .. angled .. ">")
                end
                if quoted then
                    local target
                    for _, d in ipairs({dir(path), table.unpack(include_dirs)}) do
                        local candidate = normalize(d .. "/" .. quoted)
                        if exists[candidate] then target = candidate; break end
                    end
                    if target then
                        if room and target:match("^lua/") then
                            report(path, ln, "core-includes-lua", "core includes " .. target)
                        end
                        includes[path] = includes[path] or {}
                        table.insert(includes[path], {target = target, where = path .. ":" .. ln})
                        local to_room = target:match("^core/([^/]+)/")
                        if room and to_room and to_room ~= room then
                            add_edge(room_edges, room, to_room, path .. ":" .. ln)
                        end
                    end
                end
            end
        end
        for ln, over in pairs(marks) do check_width(path, ln, over) end
    end
end

-- the graph's cycles, each reported at the first edge of its path
local function report_cycles(rule, nodes, edges)
    for _, comp in ipairs(cycles_of(nodes, edges)) do
        local path = cycle_path(comp, edges)
        local a, b = path:match("^(%S+) %-> (%S+)")
        local where = (a and edges[a] and edges[a][b]) or "?:0"
        local file, line = where:match("^(.*):(%d+)$")
        local detail = path
        if #comp > 2 then
            detail = detail .. " (in one cycle: " .. table.concat(comp, " ") .. ")"
        end
        report(file or where, tonumber(line) or 0, rule, detail)
    end
end

-- A unit is a .c with its .h. A header with no .c of its own (an umbrella, a room's _internal.h, a
-- _testing.h) is no unit: what it includes counts for the file that includes it.
local function unit_targets(file, seen, out, where)
    for _, inc in ipairs(includes[file] or {}) do
        local t = inc.target
        if not seen[t] then
            seen[t] = true
            if exists[unit(t) .. ".c"] then out[#out + 1] = {unit = unit(t), where = where or inc.where}
            else unit_targets(t, seen, out, where or inc.where) end
        end
    end
end
for _, path in ipairs(files) do
    local u = unit(path)
    if (ext(path) == "c" or ext(path) == "h") and exists[u .. ".c"] then
        local out = {}
        unit_targets(path, {}, out)
        for _, t in ipairs(out) do
            if t.unit ~= u then add_edge(unit_edges, u, t.unit, t.where) end
        end
    end
end
table.sort(units)
report_cycles("include-cycle", units, unit_edges)
report_cycles("room-cycle", sorted_keys(rooms), room_edges)
report_cycles("require-cycle", sorted_keys(require_edges), require_edges)

-- output ------------------------------------------------------------------------------------------

local function print_graph(title, edges, nodes)
    print(title)
    for _, v in ipairs(nodes) do
        local targets = sorted_keys(edges[v] or {})
        local list = #targets > 0 and table.concat(targets, " ") or "(nothing)"
        print(string.format("  %-22s -> %s", v, list))
    end
end

if graph_only then
    print_graph("core rooms (a room -> the rooms whose headers it includes):", room_edges,
                sorted_keys(rooms))
    print()
    print_graph("Lua modules (a module -> the mha modules it requires; C modules require nothing):",
                require_edges, sorted_keys(require_edges))
    os.exit(0)
end

table.sort(violations, function(a, b)
    if a.file ~= b.file then return a.file < b.file end
    if a.line ~= b.line then return a.line < b.line end
    return a.text < b.text
end)
for _, v in ipairs(violations) do print(v.text) end
local parts = {}
for _, rule in ipairs(sorted_keys(counts)) do parts[#parts + 1] = rule .. " " .. counts[rule] end
local by_rule = #parts > 0 and " (" .. table.concat(parts, ", ") .. ")" or ""
print(string.format("lint: %d files checked, %d violations%s; code or strings past column %d on "
                    .. "%d lines (a warning; LINT_WARNINGS=1 lists them)", #files, #violations,
                    by_rule, MAX_COLUMNS, #warnings))
if os.getenv("LINT_WARNINGS") then
    table.sort(warnings)
    for _, w in ipairs(warnings) do print(w) end
end
os.exit(#violations > 0 and 1 or 0)
