-- lua/repl/printer.lua - module "mha.repl.printer": how the REPL prints a value - tensors
-- (anything with __tostring) through tostring, tables readably as Lua source, in a fixed key order,
-- within limits.

local complete = require "mha.repl.complete"   -- its keywords: a key that is one is written ["end"]
local term_loaded, term = pcall(require, "mha.term")  -- the terminal's width, the cells text takes
if not term_loaded then term = nil end

local printer = {}

-- The printer's limits.
local MAX_DEPTH = 4         -- deeper tables print as {...}
local MAX_ITEMS = 100       -- entries shown per table
local MAX_LINES = 50        -- lines one printed table takes at most
local WIDTH = 78            -- a table that fits in this many columns prints on one line

local keywords = complete.keywords
local function plain(_, s) return s end
local paint = plain         -- the colouring of the printer.format call under way


local function quote(s)
    return (string.format("%q", s):gsub("\\\n", "\\n"):gsub("\r", "\\r"))
end

-- Strings in natural order: a run of digits compares as the number it writes, so k2 comes before
-- k10; strings equal that way (k01, k1) keep the plain order.
local function natural_before(a, b)
    local i, j = 1, 1
    while i <= #a and j <= #b do
        local da, db = a:match("^%d+", i), b:match("^%d+", j)
        if da and db then
            local na, nb = da:match("^0*(.-)$"), db:match("^0*(.-)$")
            if #na ~= #nb then return #na < #nb end
            if na ~= nb then return na < nb end
            i, j = i + #da, j + #db
        else
            local ca, cb = a:sub(i, i), b:sub(j, j)
            if ca ~= cb then return ca < cb end
            i, j = i + 1, j + 1
        end
    end
    if (i > #a) ~= (j > #b) then return i > #a end  -- a prefix first
    return a < b
end

-- Keys in a fixed order: booleans, then numbers (by value), then strings (natural order), then the
-- rest by their tostring.
local type_rank = {boolean = 1, number = 2, string = 3}
local function key_before(a, b)
    local ra, rb = type_rank[type(a)] or 4, type_rank[type(b)] or 4
    if ra ~= rb then return ra < rb end
    if ra == 4 then return tostring(a) < tostring(b) end
    if ra == 1 then return not a and b end
    if ra == 3 then return natural_before(a, b) end
    return a < b
end

local function safe_tostring(v)
    local ok, s = pcall(tostring, v)
    if ok then return s end
    return "<error in __tostring: " .. tostring(s) .. ">"
end

local format_value

-- Cells s takes on the terminal: colour escapes take none, a CJK character two.
local function cells(s)
    s = s:gsub("\27%[[%d;]*m", "")
    if term then return term.width(s) end
    return utf8.len(s) or #s
end

-- The columns a printed table may use: the terminal's (less a margin), or WIDTH when stdout is not
-- one.
local function line_width()
    if term and term.isatty(io.stdout) then return math.max(20, term.columns(io.stdout) - 2) end
    return WIDTH
end

local function count_lines(s)
    return select(2, s:gsub("\n", "")) + 1
end

local scalar_types = {number = true, boolean = true, string = true}

-- The lines of a flat array of scalars packed across the width, in aligned columns (numbers to the
-- right), each line a group of items: {{text = "1, 2, 3,", items = 3}, ...}.
local function packed_rows(texts, values, inner, width)
    local cell = 0
    for i = 1, #texts do cell = math.max(cell, cells(texts[i]) + 1) end
    local per_row = math.max(1, (width - #inner + 1) // (cell + 1))
    local rows = {}
    for first = 1, #texts, per_row do
        local parts = {}
        local last = math.min(first + per_row - 1, #texts)
        for i = first, last do
            local pad = string.rep(" ", cell - cells(texts[i]) - 1)
            if type(values[i]) == "number" then parts[#parts + 1] = pad .. texts[i] .. ","
            else parts[#parts + 1] = texts[i] .. "," .. pad end
        end
        rows[#rows + 1] = {text = (table.concat(parts, " "):gsub("%s+$", "")), items = last - first + 1}
    end
    return rows
end

-- A table as Lua source would write it: on one line when it fits in the width, else one entry a
-- line (a flat array of scalars packed several a line), in at most `budget` lines, the entries that
-- do not fit counted in a last "... (N more entries)" line.
local function format_table(t, depth, path, indent, budget)
    if path[t] then return "<cycle>" end
    if depth >= MAX_DEPTH then return "{...}" end
    path[t] = true
    local len = 0
    while rawget(t, len + 1) ~= nil do len = len + 1 end
    local keys = {}
    for k in next, t do
        if not (math.type(k) == "integer" and k >= 1 and k <= len) then keys[#keys + 1] = k end
    end
    table.sort(keys, key_before)
    local total = len + #keys
    local inner = indent .. "  "
    local texts, values, n = {}, {}, 0
    local packable = #keys == 0
    for i = 1, len do
        if n >= MAX_ITEMS then break end
        n = n + 1
        values[n] = rawget(t, i)
        texts[n] = format_value(values[n], depth + 1, path, inner, budget - 2, inner)
        if not scalar_types[type(values[n])] or texts[n]:find("\n") then packable = false end
    end
    for _, k in ipairs(keys) do
        if n >= MAX_ITEMS then break end
        n = n + 1
        local name
        if type(k) == "string" and k:match("^[%a_][%w_]*$") and not keywords[k] then name = k
        elseif type(k) == "string" then name = "[" .. quote(k) .. "]"
        else name = "[" .. format_value(k, MAX_DEPTH, path, inner, 1, inner) .. "]" end
        name = name .. " = "
        -- a value of several lines (a tensor) continues under its first line, not under the name
        local hang = inner .. string.rep(" ", cells(name))
        texts[n] = name .. format_value(rawget(t, k), depth + 1, path, inner, budget - 2, hang)
    end
    path[t] = nil
    if total == 0 then return "{}" end
    local width = line_width()
    if n == total then
        local one_line = "{" .. table.concat(texts, ", ") .. "}"
        if cells(one_line) + #indent <= width and not one_line:find("\n") then return one_line end
    end
    if budget < 3 then return "{...}" end
    local groups
    if packable then groups = packed_rows(texts, values, inner, width)
    else
        groups = {}
        for i = 1, n do groups[i] = {text = texts[i] .. ",", items = 1} end
    end
    local lines, used, shown = {"{"}, 2, 0  -- "{" and "}"
    for _, group in ipairs(groups) do
        local more_after = shown + group.items < total
        local size = count_lines(group.text)
        if used + size + (more_after and 1 or 0) > budget then break end
        lines[#lines + 1] = inner .. group.text
        used, shown = used + size, shown + group.items
    end
    if shown < total then lines[#lines + 1] = string.format("%s... (%d more entries)", inner, total - shown) end
    lines[#lines + 1] = indent .. "}"
    return table.concat(lines, "\n")
end

-- The text of v inside a table: tables readably (indent: the column of their closing brace), the
-- rest through tostring, further lines starting at hang.
format_value = function(v, depth, path, indent, budget, hang)
    local kind = type(v)
    if kind == "number" then return paint("number", tostring(v)) end
    if kind == "string" then return quote(v) end
    if kind == "table" then
        local mt = getmetatable(v)
        -- a shape's list ({3, 4}) has a __tostring for print; here it is shown as a table
        if not (mt and rawget(mt, "__tostring")) or rawget(mt, "__sizes") then
            return format_table(v, depth, path, indent, budget)
        end
    end
    return (safe_tostring(v):gsub("\n", "\n" .. hang))
end

-- The text auto-print shows for one value: strings as they are (as lua.c does), the rest formatted.
-- paint(kind, s) colours a piece ("number"); without it nothing is coloured.
function printer.format(v, paint_with)
    if type(v) == "string" then return v end
    paint = paint_with or plain
    return format_value(v, 0, {}, "", MAX_LINES, "")
end

return printer
