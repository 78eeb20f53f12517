-- tests/lua/test_display.lua - mha.format/show/printoptions/heat and mha.term against the printouts
-- written by tests/fixtures/gen/gen_display.py (numbers by NumPy's printer, layout rebuilt there).
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha
local term = require "mha.term"

local FIXTURES = "tests/fixtures/display/"

local function read_file(path)
    local f = assert(io.open(T.path(path), "rb"))
    local text = f:read("a")
    f:close()
    return text
end

-- Compares two texts line by line; on a difference says which line and shows both.
local function same_text(name, got, want)
    if got == want then return T.report(true, name) end
    local g, w = {}, {}
    for line in (got .. "\n"):gmatch("([^\n]*)\n") do g[#g + 1] = line end
    for line in (want .. "\n"):gmatch("([^\n]*)\n") do w[#w + 1] = line end
    for i = 1, math.max(#g, #w) do
        if g[i] ~= w[i] then
            return T.report(false, name, string.format("line %d: got %q, want %q\n--- got:\n%s\n--- want:\n%s",
                i, tostring(g[i]), tostring(w[i]), got, want))
        end
    end
    return T.report(false, name, "texts differ")
end

-- Runs fn with io.write captured; returns what it wrote.
local function captured(fn)
    local parts, saved = {}, io.write
    io.write = function(...)
        for _, s in ipairs({ ... }) do parts[#parts + 1] = tostring(s) end
        return io.stdout
    end
    local ok, err = pcall(fn)
    io.write = saved
    if not ok then error(err, 0) end
    return table.concat(parts)
end

mha.printoptions("reset")

-- every printout case: the tensor from its .npy, the text NumPy's printer and the rules give
local cases = dofile(T.path(FIXTURES .. "cases.lua"))
for _, case in ipairs(cases) do
    T.test("format " .. case.name, function()
        local t = mha.load(T.path(FIXTURES .. "case_" .. case.name .. ".npy"))
        local want = read_file(FIXTURES .. "case_" .. case.name .. ".txt"):gsub("\n$", "")
        same_text("format " .. case.name, mha.format(t, case.opts), want)
    end)
end

T.test("tostring and show", function()
    local t = mha.load(T.path(FIXTURES .. "case_small.npy"))
    local want = read_file(FIXTURES .. "case_small.txt")
    same_text("tostring is mha.format", tostring(t) .. "\n", want)
    same_text("show prints format", captured(function() mha.show(t) end), want)
    local labelled = mha.load(T.path(FIXTURES .. "case_labelled.npy"))
    local opts = { rows = "The cat sat on the mat", cols = "The cat sat on the mat", title = "attention weights" }
    same_text("show with labels", captured(function() mha.show(labelled, opts) end),
        read_file(FIXTURES .. "case_labelled.txt"))
end)

T.test("printoptions lang: the words of a print in Chinese", function()
    local wide = mha.arange(0, 18):view(2, 9)
    mha.printoptions { lang = "zh" }
    local text = mha.format(wide, { linewidth = 40 })
    local heat = captured(function() mha.heat(mha.arange(0, 4):view(2, 2)) end)
    mha.printoptions("reset")
    T.ok("column chunks are named in Chinese", text:find("第 1-", 1, true) and not text:find("columns", 1, true), text)
    T.ok("the heat map's scale is named in Chinese", heat:find("刻度：", 1, true) and not heat:find("scale", 1, true), heat)
    T.ok("English by default", mha.format(wide, { linewidth = 40 }):find("columns 1-", 1, true))
    T.raises("printoptions lang checks its value", function() mha.printoptions { lang = "fr" } end, "lang")
end)

T.test("printoptions", function()
    local defaults = mha.printoptions()
    T.eq("printoptions defaults", defaults, { precision = 4, threshold = 1000, edgeitems = 3, lang = "en",
        whole = "exact" })
    local t = mha.load(T.path(FIXTURES .. "case_precision2.npy"))
    mha.printoptions { precision = 2 }
    T.eq("printoptions returns the options", mha.printoptions().precision, 2)
    same_text("printoptions precision applies", mha.format(t, { linewidth = 80 }),
        (read_file(FIXTURES .. "case_precision2.txt"):gsub("\n$", "")))
    mha.printoptions { threshold = 5, edgeitems = 1 }
    local summary = mha.format(mha.tensor { { 1.5, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } })
    T.eq("printoptions threshold/edgeitems summarise",
        summary, "1.50  ...  3.00\n...\n7.00  ...  9.00\n[float32 (3,3)]")
    mha.printoptions("reset")
    T.eq("printoptions reset", mha.printoptions(), defaults)
    T.raises("printoptions unknown option", function() mha.printoptions { precison = 3 } end,
        "printoptions: unknown option 'precison'")
    T.raises("printoptions bad value", function() mha.printoptions { precision = -1 } end,
        "printoptions: option precision must be an integer 0..16, got -1")
    T.raises("format bad option", function() mha.format(mha.tensor { 1 }, { linewidth = 3 }) end,
        "format: option linewidth must be an integer >= 10")
    T.eq("printoptions untouched by a failed call", mha.printoptions(), defaults)
end)

T.test("printoptions whole: exact as NumPy, or judged by what shows", function()
    local sums = mha.tensor { 0.99999994, 1, 2 }   -- a softmax row's sum on one kernel variant
    T.eq("exact: a sum a bit under 1 prints its decimals (NumPy, torch)", mha.format(sums),
        "1.0000  1.0000  2.0000\n[float32 (3)]")
    T.eq("shown: every value shows as whole at 4 decimals", mha.format(sums, { whole = "shown" }),
        "1.  1.  2.\n[float32 (3)]")
    T.eq("shown: the same for exact ones", mha.format(mha.tensor { 1, 1, 2 }, { whole = "shown" }),
        "1.  1.  2.\n[float32 (3)]")
    T.eq("shown: a value with a shown decimal keeps them all", mha.format(mha.tensor { 0.99999994, 1.25 }, { whole = "shown" }),
        "1.0000  1.2500\n[float32 (2)]")
    T.eq("shown at 2 decimals: 2.004 shows as 2.00", mha.format(mha.tensor { 2.004, -3 }, { whole = "shown", precision = 2 }),
        " 2.  -3.\n[float32 (2)]")
    T.raises("whole checks its value", function() mha.format(sums, { whole = "round" }) end,
        "format: option whole must be \"exact\" or \"shown\", got round")
end)

T.test("label errors", function()
    local t = mha.tensor { { 1, 2 }, { 3, 4 }, { 5, 6 } }
    T.raises("show rows count", function() mha.show(t, { rows = { "a", "b" } }) end,
        "show: rows has 2 labels, for 3 rows")
    T.raises("format cols count", function() mha.format(t, { cols = "x y z" }) end,
        "format: cols has 3 labels, for 2 columns")
    T.raises("show labels type", function() mha.show(t, { rows = 5 }) end,
        "show: rows must be a list of labels or a string, got a number")
    T.raises("format not a tensor", function() mha.format(print) end,
        "format: expected a tensor, a number or a table, got a function")
    -- plurals and articles: one label, one row, one entry; nil is not "a nil"
    T.raises("one label for one row too few", function() mha.show(t, { rows = { "a" } }) end,
        "show: rows has 1 label, for 3 rows")
    T.raises("labels for one row", function() mha.show(mha.tensor { { 1, 2 } }, { rows = "a b" }) end,
        "show: rows has 2 labels, for 1 row")
    T.raises("labels for one column", function() mha.heat(mha.tensor { { 1 }, { 2 } }, { cols = "a b" }) end,
        "heat: cols has 2 labels, for 1 column")
    T.raises("show nil", function() mha.show(nil) end, "show: expected a tensor, a number or a table, got nil")
    T.raises("format a table holding a string", function() mha.format { 1, "x" } end,
        "format: t[2] is a string, not a number or boolean")
end)

T.test("unknown options are errors", function()
    local t = mha.tensor { { 1, 2 }, { 3, 4 } }
    T.raises("show row (did you mean rows)", function() mha.show(t, { row = "a b" }) end,
        { "show: unknown option 'row' (did you mean 'rows'?)", "valid options: rows, cols, title, dims, precision" })
    T.raises("format unknown option", function() mha.format(t, { colour = true }) end,
        { "format: unknown option 'colour'", "valid options: rows, cols" })
    T.raises("heat col (did you mean cols)", function() mha.heat(t, { col = "a b" }) end,
        { "heat: unknown option 'col' (did you mean 'cols'?)", "zrange", "color" })
    T.raises("heat colour (did you mean color)", function() mha.heat(t, { colour = false }) end,
        "heat: unknown option 'colour' (did you mean 'color'?)")
    T.raises("printoptions near miss", function() mha.printoptions { precison = 3 } end,
        { "printoptions: unknown option 'precison' (did you mean 'precision'?)",
          "valid options: precision, threshold, edgeitems, linewidth, sci_mode" })
    T.raises("no did-you-mean when nothing is near", function() mha.show(t, { zzzzzz = 1 }) end,
        "show: unknown option 'zzzzzz'; valid options:")
    T.ok("no did-you-mean when nothing is near: none offered",
        not T.errmsg(function() mha.show(t, { zzzzzz = 1 }) end):find("did you mean", 1, true))
    T.raises("options not a table", function() mha.show(t, "rows") end, "show: options must be a table, got string")
    -- heat honours the printing options it accepts: precision 1 on its scale
    local text = captured(function() mha.heat(t, { color = false, precision = 1, linewidth = 40 }) end)
    T.ok("heat takes precision for its scale", text:find("scale: 1.0 ▁▂▃▄▅▆▇█ 4.0", 1, true) ~= nil, text)
end)

T.test("labels are made safe", function()
    -- an escape sequence in a label must not reach the terminal; a long label is cut
    local text = mha.format(mha.tensor { { 1.5 } }, { rows = { "a\27[31mb" }, cols = { string.rep("x", 40) } })
    T.ok("no control characters in output", not text:find("\27", 1, true), text)
    T.ok("control character replaced", text:find("a?[31mb", 1, true) ~= nil, text)
    T.ok("long label cut to 24 cells", text:find(string.rep("x", 23) .. "…", 1, true) ~= nil and
        not text:find(string.rep("x", 24), 1, true), text)
end)

T.test("plain Lua tables", function()
    T.eq("format nested table", mha.format { { 1.5, -2 }, { 0, 4 } },
        " 1.5000  -2.0000\n 0.0000   4.0000\n[table (2,2)]")
    -- a Lua number prints as the 0-d float32 tensor mha.tensor(n) makes (np.float32(1/3) is 0.33333334)
    T.eq("format a number", mha.format(3), "3.\n[float32 ()]")
    T.eq("format a number as float32", mha.format(1 / 3, { precision = 8 }), "0.33333334\n[float32 ()]")
    T.eq("a number prints as its tensor does", mha.format(0.1), mha.format(mha.tensor(0.1)))
    T.eq("a number past float32's range is inf", mha.format(-1e39), "-inf\n[float32 ()]")
    T.eq("format a boolean", mha.format(true), "true\n[bool ()]")
    T.raises("format ragged table", function() mha.format { { 1, 2 }, { 3 } } end,
        "format: ragged table: t[2] has 1 entry where 2 were expected")
end)

T.test("heat", function()
    -- a tensor without cells says so, not a scale with nothing above it (and (2,0) does not fail)
    T.raises("heat of (0,0)", function() mha.heat(mha.zeros(0, 0)) end,
        "heat: the tensor is empty, shape (0,0): nothing to shade")
    T.raises("heat of (2,0)", function() mha.heat(mha.zeros(2, 0)) end,
        "heat: the tensor is empty, shape (2,0): nothing to shade")
    -- level k (1..8) covers x = (v - lo)/(hi - lo) in [(k-1)/8, k/8); the top value takes the last
    local m = mha.tensor { { 0, 0.2, 0.4 }, { 0.6, 0.8, 1 } }
    local text = captured(function() mha.heat(m, { rows = { "q1", "q2" }, cols = { "k1", "k2", "k3" }, color = false }) end)
    T.eq("heat shades", text, table.concat({
        "   k1 k2 k3",
        "q1 ▁▁ ▂▂ ▄▄",
        "q2 ▅▅ ▇▇ ██",
        "scale: 0.0000 ▁▂▃▄▅▆▇█ 1.0000",
        "[float32 (2,3)]", "" }, "\n"))
    -- more than 5 levels without colour: 0.14 and 0.20 of a 0..0.5 range differ (levels 3 and 4)
    text = captured(function() mha.heat(mha.tensor { { 0, 0.14, 0.20, 0.5 } }, { color = false }) end)
    T.eq("heat: eight levels tell 0.14 from 0.20", text:match("^[^\n]*"), "▁▁ ▃▃ ▄▄ ██")
    local masked = mha.tensor { { 1, -math.huge }, { 0 / 0, 3 } }
    text = captured(function() mha.heat(masked, { color = false }) end)
    T.eq("heat -inf lowest, NaN marked, range from finite values", text, table.concat({
        "▁▁ ▁▁",
        "?? ██",
        "scale: 1.0000 ▁▂▃▄▅▆▇█ 3.0000  ? = nan",
        "[float32 (2,2)]", "" }, "\n"))
    text = captured(function() mha.heat(m, { color = false }) end)
    T.ok("heat without NaN has no NaN note", not text:find("nan", 1, true), text)
    -- colour: a ramp none of whose steps is near black or near white, so the lowest cell stays visible on
    -- a dark terminal and the highest on a light one
    text = captured(function() mha.heat(m, { color = true }) end)
    T.ok("heat colour: lowest is purple 53", text:find("\27[48;5;53m  \27[0m", 1, true) ~= nil, text)
    T.ok("heat colour: highest is yellow-green 185", text:find("\27[48;5;185m  \27[0m", 1, true) ~= nil, text)
    -- 0.4 is level floor(0.4 * 12) + 1 = 5 of 12: colour 31
    T.ok("heat colour: 0.4 is step 5, colour 31", text:find("\27[48;5;31m  \27[0m", 1, true) ~= nil, text)
    T.ok("heat colour: no gray ramp (232-255)", not text:find("\27%[48;5;2[3-5]%dm"), text)
    text = captured(function() mha.heat(m, {}) end)
    T.ok("heat without a terminal has no colour", not text:find("\27", 1, true), text)
    -- values=true: each cell shows its value, after its bar (without colour) or on its colour
    text = captured(function() mha.heat(m, { color = false, values = true, cols = "a b c" }) end)
    T.eq("heat values without colour", text:match("^[^\n]*\n[^\n]*\n[^\n]*\n"),
        "a     b     c\n▁0.00 ▂0.20 ▄0.40\n▅0.60 ▇0.80 █1.00\n")
    text = captured(function() mha.heat(m, { color = true, values = 1 }) end)
    T.ok("heat values with colour: white on the dark half", text:find("\27[48;5;53m\27[97m0.0\27[0m", 1, true) ~= nil, text)
    T.ok("heat values with colour: black on the light half", text:find("\27[48;5;185m\27[30m1.0\27[0m", 1, true) ~= nil, text)
    T.raises("heat values checked", function() mha.heat(m, { values = "yes" }) end,
        "heat: values must be true, false or a number of decimals 0..6")
    -- 3-D: every slice on one scale, one scale line and one footer
    local heads = mha.stack({ mha.tensor { { 0, 1 } }, mha.tensor { { 2, 4 } } }, 1)
    text = captured(function() mha.heat(heads, { color = false, dims = { "head", "query", "key" } }) end)
    T.eq("heat of heads: one shared scale, one footer", text, table.concat({
        "[head 1]", "▁▁ ▃▃", "", "[head 2]", "▅▅ ██", "scale: 0.0000 ▁▂▃▄▅▆▇█ 4.0000", "[float32 (2,1,2)]", "" }, "\n"))
    text = captured(function() mha.heat(mha.tensor { { 1, 2 }, { 3, 4 } }, { rows = "我爱", cols = "我爱", color = false }) end)
    T.eq("heat CJK labels", text:match("^[^\n]*\n[^\n]*\n[^\n]*\n"), "   我 爱\n我 ▁▁ ▃▃\n爱 ▆▆ ██\n")
    T.raises("heat scalar", function() mha.heat(mha.tensor(1)) end, "heat: expected a tensor with at least one dimension")
end)

-- The help examples of printing, plotting, the library and lessons, as a student uses them: pasted
-- into the REPL one line at a time. So no line may start with `local` (its variable would be gone at
-- the next line), each line fits 76 columns, and pasting them runs: a line that leaves a statement
-- open (`<eof>`, as the REPL sees it) waits for the next, as the REPL's continuation prompt does.
T.test("help examples paste line by line", function()
    local real_plot = require "mha.plot"
    real_plot.terminal("none")
    -- drawings go nowhere; plot.save and plot.terminal are stubbed so no file is written and no
    -- terminal changed
    local quiet_plot = setmetatable({ save = function() end, terminal = function() return "none" end },
        { __index = real_plot })
    local function paste(example, env)
        local buffer
        for line in (example .. "\n"):gmatch("([^\n]*)\n") do
            buffer = buffer and (buffer .. "\n" .. line) or line
            local chunk, err = load("return " .. buffer, "=paste", "t", env)
            if not chunk then chunk, err = load(buffer, "=paste", "t", env) end
            if chunk then
                buffer = nil
                local ok, why = pcall(chunk)
                if not ok then return false, line .. ": " .. tostring(why) end
            elseif not err:find("<eof>$") then
                return false, line .. ": " .. err
            end
        end
        if buffer then return false, "the last statement is not complete" end
        return true
    end
    for _, module in ipairs({ "mha.docs_mha", "mha.docs_display", "mha.docs_lesson", "mha.docs_nn", "mha.docs_train" }) do
        local docs = require(module)
        local names = {}
        for name, e in pairs(docs) do
            if type(e) == "table" and type(e.example) == "string" then names[#names + 1] = name end
        end
        table.sort(names)
        local with_local, too_long, failed = {}, {}, {}
        for _, name in ipairs(names) do
            local example = docs[name].example
            for line in (example .. "\n"):gmatch("([^\n]*)\n") do
                if line:match("^%s*local%s") then with_local[#with_local + 1] = name .. ": " .. line end
                if utf8.len(line) > 76 then too_long[#too_long + 1] = name .. ": " .. line end
            end
            -- in the global table, as the REPL runs them (an exercise's solution reads globals);
            -- the globals an example makes are removed after it
            local before, saved_print, saved_plot = {}, print, rawget(_G, "plot")
            for k in pairs(_G) do before[k] = true end
            print, plot = function() end, quiet_plot
            local ok, why
            -- and what they write goes to a scratch file (the lesson module writes to io.stdout)
            local saved_output, saved_stdout, scratch = io.output(), io.stdout, io.tmpfile()
            io.output(scratch)
            io.stdout = scratch
            captured(function() ok, why = paste(example, _G) end)
            io.stdout = saved_stdout
            io.output(saved_output)
            scratch:close()
            print, plot = saved_print, saved_plot
            for k in pairs(_G) do if not before[k] then _G[k] = nil end end
            if not ok then failed[#failed + 1] = name .. ": " .. why end
        end
        T.ok(module .. ": no example line starts with local", #names > 0 and #with_local == 0,
            table.concat(with_local, "\n"))
        T.ok(module .. ": example lines fit 76 columns", #too_long == 0, table.concat(too_long, "\n"))
        T.ok(module .. ": " .. #names .. " examples run pasted line by line", #failed == 0,
            table.concat(failed, "\n"))
    end
    mha.printoptions("reset")
end)

T.test("term", function()
    T.eq("width ascii", term.width("hello"), 5)
    T.eq("width CJK", term.width("注意力"), 6)
    T.eq("width combining", term.width("cafe\u{301}"), 4)
    T.eq("width invalid byte is one cell", term.width("a\xffb"), 3)
    T.eq("width emoji", term.width("\u{1F600}"), 2)
    T.eq("width control", term.width("a\tb"), 2)
    local s, w = term.truncate("注意力机制", 5)
    T.eq("truncate never splits a wide character", { s, w }, { "注意", 4 })
    T.eq("truncate keeps a combining mark", { term.truncate("e\u{301}x", 1) }, { "e\u{301}", 1 })
    T.eq("isatty of a file is false", term.isatty(io.tmpfile()), false)
    T.ok("columns is positive", term.columns() > 0)
    T.eq("rows of a file that is no terminal: $LINES or 24", term.rows(io.tmpfile()),
        math.tointeger(tonumber(os.getenv("LINES") or "")) or 24)
    -- the width of a sample of assigned code points, as Python's unicodedata sees them
    local bad, n = {}, 0
    for line in io.lines(T.path(FIXTURES .. "widths.txt")) do
        local hex, cells = line:match("^(%x+) (%d+)$")
        local cp = tonumber(hex, 16)
        n = n + 1
        if term.width(utf8.char(cp)) ~= tonumber(cells) then
            bad[#bad + 1] = string.format("U+%s: %d, want %s", hex, term.width(utf8.char(cp)), cells)
        end
    end
    T.ok("width of " .. n .. " code points matches unicodedata", #bad == 0,
        #bad .. " differ: " .. table.concat(bad, "; ", 1, math.min(#bad, 10)))
end)

T.done()
