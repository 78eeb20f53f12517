-- lua/lesson/tools.lua - module "mha.lesson.tools": helpers lesson code calls as LESSON.table,
-- LESSON.versus, LESSON.describe, LESSON.median_ms, LESSON.fails, LESSON.scratch, so a step's echo
-- shows what a student would type, not formatting plumbing; and tr{} resolved in a step's source
-- before it is echoed and run.
--
-- Each helper takes what it needs (the language, the width function, a clock) from the runner
-- through M.use: this module never reaches into the runner.

local raise = require "mha.raise"   -- errors at the user's line
local i18n = require "mha.i18n"     -- versus's and describe's labels, in the lesson's language

local M = {}

local ctx = {lang = function() return "en" end, width = utf8.len, clock = os.clock}

-- The runner hands its language (a function), display-width function and wall clock once.
function M.use(t)
    for k, v in pairs(t) do ctx[k] = v end
end

local function cell(v, float_format)
    if math.type(v) == "float" then return string.format(float_format or "%.4f", v) end
    return tostring(v)
end

-- LESSON.table(rows [, header [, float_format]]): prints rows of cells in right-aligned columns two
-- spaces apart, under an optional header row; integers as they are, floats with float_format
-- (default "%.4f").
function M.table(rows, header, float_format)
    local all = {}
    if header then all[1] = header end
    for _, r in ipairs(rows) do all[#all + 1] = r end
    local widths = {}
    for _, r in ipairs(all) do
        for i, v in ipairs(r) do widths[i] = math.max(widths[i] or 0, ctx.width(cell(v, float_format))) end
    end
    for _, r in ipairs(all) do
        local out = {}
        for i, v in ipairs(r) do
            local s = cell(v, float_format)
            out[i] = string.rep(" ", widths[i] - ctx.width(s)) .. s
        end
        print(table.concat(out, "  "))
    end
end

-- LESSON.versus(name, printed, value): one line setting what a tutorial printed
-- (a string, or nil when it printed nothing) beside the true value
-- (a number or a tensor, 4 decimals); the true value goes on a second line when both do not fit 80
-- columns. LESSON.checked[name] keeps the value.
M.checked = {}   -- name -> the true value, for tests to compare with an independent computation
function M.versus(name, printed, value)
    M.checked[name] = value
    local w = i18n.words(ctx.lang()).tools
    local numbers = type(value) == "number" and {value} or value:reshape(-1):totable()
    for i, v in ipairs(numbers) do numbers[i] = string.format("%.4f", v) end
    -- name in 10 columns, then "tutorial: " and what it printed in 26 columns, then the truth
    local printed_text = printed or w.unprinted
    local says = string.format("%-10s %s%s", name, w.says, printed_text)
    says = says .. string.rep(" ", math.max(0, 26 - ctx.width(printed_text)))
    local truth = w.truth .. table.concat(numbers, ", ")
    if ctx.width(says) + ctx.width(truth) > 80 then
        print((says:gsub("%s+$", "")))
        says = string.rep(" ", 11)
    end
    print(says .. truth)
end

-- LESSON.describe(name, t): a tensor's name, then its shape, strides, storage offset and contiguity
-- - the four things that say how its storage is read.
function M.describe(name, t)
    local w = i18n.words(ctx.lang()).tools
    print(name)
    print(string.format(w.describe, table.concat(t:shape(), ","), table.concat(t:strides(), ","), t:offset(),
        t:is_contiguous() and w.yes or w.no))
end

-- LESSON.fails(input): runs input as a student would type it at the prompt (an expression or a
-- statement, chunk "stdin") and prints the error it raises as the REPL shows it:
-- "stdin:1: matmul: ...", with the hint line the REPL puts under it in the lesson's language (a
-- Chinese lesson's only English sentence was the core's message). An input that does not fail is a
-- mistake in the lesson, and says so.
function M.fails(input)
    local chunk = load("return " .. input, "=stdin", "t", _G) or assert(load(input, "=stdin", "t", _G))
    local ok, err = pcall(chunk)
    if ok then raise("LESSON.fails: " .. input .. " did not fail") end
    -- both wrapped to the screen, the hint as the REPL wraps it
    local text = require "mha.text"
    print(table.concat(text.wrap(tostring(err), math.max(30, require("mha.term").columns() or 80)), "\n"))
    local hint = require("mha.repl.habits").core_line(tostring(err), ctx.lang())
    if hint then print(table.concat(text.hint_lines(hint), "\n")) end
end

-- LESSON.scratch(suffix) -> a path of its own in the system's temporary directory, ending in suffix
-- (".npz"), for a file a step writes and reads back. os.tmpname reserves the name (it creates an
-- empty file); the reservation and the file are removed when the Lua state closes (the REPL's exit,
-- a notebook kernel's shutdown), so a lesson leaves nothing behind in /tmp.
local scratch_paths = setmetatable({}, {__gc = function(paths)
    for _, path in ipairs(paths) do os.remove(path) end
end})
function M.scratch(suffix)
    if type(suffix) ~= "string" or suffix:find("[/%z]") then
        raise("LESSON.scratch: suffix must be a string without '/', as \".npz\"")
    end
    local base = os.tmpname()
    scratch_paths[#scratch_paths + 1] = base
    scratch_paths[#scratch_paths + 1] = base .. suffix
    return base .. suffix
end

-- LESSON.median_ms(run [, n]): runs run() once untimed (cold caches, first-touch memory), then n
-- times (default 5); returns the median in milliseconds and the sorted times.
function M.median_ms(run, n)
    n = n or 5
    run()
    local ms = {}
    for r = 1, n do
        local start = ctx.clock()
        run()
        ms[r] = (ctx.clock() - start) * 1000
    end
    table.sort(ms)
    return ms[(n + 1) // 2], ms
end

-- ---------------------------------------------------------------------------------------------
-- tr{en = ..., zh = ...} resolved in the source: a step's code is echoed and run with each tr{} of
-- literals replaced by the literal of the lesson's language, so a student reads (and :save keeps)
-- the code in one language, as they would type it.
-- ---------------------------------------------------------------------------------------------

-- The end (index after) of the string or comment starting at i, or nil when none starts there.
local function skip_literal(code, i)
    local c = code:sub(i, i)
    if c == '"' or c == "'" then
        local j = i + 1
        while j <= #code do
            local d = code:sub(j, j)
            if d == "\\" then j = j + 2
            elseif d == c then return j + 1
            else j = j + 1 end
        end
        return #code + 1
    end
    local long = code:match("^%[(=*)%[", i)
    if long then
        local _, close = code:find("]" .. long .. "]", i, true)
        return (close or #code) + 1
    end
    if code:sub(i, i + 1) == "--" then
        long = code:match("^%-%-%[(=*)%[", i)
        if long then
            local _, close = code:find("]" .. long .. "]", i, true)
            return (close or #code) + 1
        end
        local nl = code:find("\n", i, true)
        return nl or #code + 1
    end
    return nil
end

-- The index of the "}" closing the "{" at open, skipping strings and comments; nil when unbalanced.
local function closing_brace(code, open)
    local depth, i = 0, open
    while i <= #code do
        local after = skip_literal(code, i)
        if after then i = after
        else
            local c = code:sub(i, i)
            if c == "{" then depth = depth + 1
            elseif c == "}" then
                depth = depth - 1
                if depth == 0 then return i end
            end
            i = i + 1
        end
    end
    return nil
end

-- true when v is a string or a list of strings: what a tr{} of literals holds.
local function literal(v)
    if type(v) == "string" then return true end
    if type(v) ~= "table" then return false end
    for _, item in ipairs(v) do
        if type(item) ~= "string" then return false end
    end
    return #v > 0
end

-- The top-level fields `name = expr` of the table constructor between open and close ("{" and "}"):
-- name -> first, last (the expression's source span, spaces trimmed).
local function named_fields(code, open, close)
    local spans, start, depth, i = {}, open + 1, 0, open + 1
    while i < close do
        local after = skip_literal(code, i)
        if after then i = after
        else
            local c = code:sub(i, i)
            if c == "{" or c == "(" or c == "[" then depth = depth + 1
            elseif c == "}" or c == ")" or c == "]" then depth = depth - 1
            elseif c == "," and depth == 0 then spans[#spans + 1] = {start, i - 1}; start = i + 1 end
            i = i + 1
        end
    end
    spans[#spans + 1] = {start, close - 1}
    local fields = {}
    for _, span in ipairs(spans) do
        local name, value_at = code:sub(span[1], span[2]):match("^%s*([%a_][%w_]*)%s*=%s*()")
        if name then
            local last = span[2]
            while last > span[1] and code:sub(last, last):match("%s") do last = last - 1 end
            fields[name] = {span[1] + value_at - 1, last}
        end
    end
    return fields
end

local function column(code, pos)
    local line_start = 1
    for i = pos - 1, 1, -1 do
        if code:sub(i, i) == "\n" then line_start = i + 1; break end
    end
    return pos - line_start
end

-- A comment "-- tr{en = "...", zh = "..."}" on one line, starting at i: the comment in lang
-- (English when lang has none), "-- " and the text, and the index after it; nil when there is none
-- at i.
local function tr_comment(code, i, lang)
    local body, after = code:match("^%-%-[ \t]*(tr%s*%b{})[ \t]*()", i)
    if not body or (code:sub(after, after) ~= "\n" and after <= #code) then return nil end
    local constant = load("return " .. body:gsub("^tr%s*", ""), "=tr", "t", {})
    local ok, t = false, nil
    if constant then ok, t = pcall(constant) end
    local text = ok and type(t) == "table" and (t[lang] or t.en)
    if type(text) ~= "string" or text:find("\n") then return nil end
    return "-- " .. text, after
end

-- resolve(code, lang): code with every tr{en = ..., zh = ...} whose values are literals
-- (strings, lists of strings, concatenations) replaced by lang's expression as written
-- (English when lang has none); the lines of a value written over several lines keep their
-- alignment. A tr{} that computes something is left as it is: it still runs through tr(). A comment
-- that is a tr{} of one-line strings becomes the comment in lang. With keep_lines, each replacement
-- is followed by the line breaks it removed, so the code keeps its line numbers
-- (for running: an error then names the lesson file's line); without, it reads as typed (the echo).
function M.resolve(code, lang, keep_lines)
    local out, i, from = {}, 1, 1
    while i <= #code do
        local comment, comment_end = tr_comment(code, i, lang)
        local after = not comment and skip_literal(code, i)
        if comment then
            out[#out + 1] = code:sub(from, i - 1)
            out[#out + 1] = comment
            from, i = comment_end, comment_end
        elseif after then i = after
        elseif code:find("^tr%s*{", i) and not code:sub(i - 1, i - 1):match("[%w_.:]") then
            local open = code:find("{", i, true)
            local close = closing_brace(code, open)
            local constant = close and load("return " .. code:sub(open, close), "=tr", "t", {})
            local ok, t = false, nil
            if constant then ok, t = pcall(constant) end
            local span = ok and literal(t[lang] or t.en) and named_fields(code, open, close)
            span = span and (span[lang] or span.en)
            if span then
                local shift = column(code, span[1]) - column(code, i)
                local text = code:sub(span[1], span[2]):gsub("\n" .. string.rep(" ?", shift), "\n")
                out[#out + 1] = code:sub(from, i - 1)
                out[#out + 1] = text
                if keep_lines then
                    local _, before = code:sub(i, close):gsub("\n", "")
                    local _, after = text:gsub("\n", "")
                    out[#out + 1] = string.rep("\n", before - after)
                end
                from = close + 1
                i = close + 1
            else
                i = i + 2
            end
        else
            i = i + 1
        end
    end
    out[#out + 1] = code:sub(from)
    return table.concat(out)
end

return M
