-- tests/lua/test_plot.lua - mha.plot and mha.gnuplot with the real gnuplot: PNG/SVG/PDF files that are
-- valid and hold their labels, hostile text that must stay text, errors quoted with their command,
-- and 200 figures that leave no process and no file descriptor behind.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha
local plot = require "mha.plot"
local gnuplot = require "mha.gnuplot"
local display = require "mha.display"

-- a private directory for every file this test writes, removed at the end
local tmp = os.tmpname()
os.remove(tmp)
assert(os.execute("mkdir -m 700 '" .. tmp .. "'"))
local function tmpfile(name) return tmp .. "/" .. name end

local function slurp(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local data = f:read("a")
    f:close()
    return data
end

local function exists(path)
    local f = io.open(path, "rb")
    if f then f:close() end
    return f ~= nil
end

-- PNG: the 8-byte signature, then the IHDR chunk with width and height (big-endian).
local function png_size(data)
    if not data or data:sub(1, 8) ~= "\137PNG\r\n\26\n" or data:sub(13, 16) ~= "IHDR" then return nil end
    return string.unpack(">I4I4", data, 17)
end

local function check_png(name, path, w, h)
    local data = slurp(path)
    local pw, ph = png_size(data)
    T.ok(name .. " is a PNG", pw ~= nil, "no PNG signature/IHDR in " .. path)
    if w then T.eq(name .. " PNG size", { pw, ph }, { w, h }) end
    -- the last chunk is IEND: the file was closed, not cut short
    T.ok(name .. " PNG ends with IEND", data ~= nil and data:sub(-8, -5) == "IEND", "no IEND at the end")
end

local function check_pdf(name, path)
    local data = slurp(path) or ""
    T.ok(name .. " PDF header", data:sub(1, 5) == "%PDF-", "starts " .. string.format("%q", data:sub(1, 8)))
    T.ok(name .. " PDF ends with %%EOF", data:match("%%%%EOF%s*$") ~= nil, "no %%EOF at the end")
end

-- SVG: an <svg> document that is complete and holds each of the texts.
local function check_svg(name, path, texts)
    local data = slurp(path) or ""
    T.ok(name .. " SVG document", data:find("<svg", 1, true) ~= nil and data:match("</svg>%s*$") ~= nil,
        "not a complete SVG")
    for _, text in ipairs(texts or {}) do
        T.ok(name .. " SVG has " .. text, data:find(text, 1, true) ~= nil, "text not found in " .. path)
    end
end

-- Runs fn with io.write going to a file; returns what was written.
local function stdout_of(fn)
    local saved = io.output()
    local path = tmpfile("stdout.txt")
    io.output(path)
    local ok, err = pcall(fn)
    io.output():close()
    io.output(saved)
    if not ok then error(err, 0) end
    return slurp(path)
end

-- Runs fn with io.stderr going to a file; returns what was written.
local function stderr_of(fn)
    local saved = io.stderr
    local path = tmpfile("stderr.txt")
    io.stderr = assert(io.open(path, "w"))
    local ok, err = pcall(fn)
    io.stderr:close()
    io.stderr = saved
    if not ok then error(err, 0) end
    return slurp(path)
end

-- Our pid, our children (from /proc), our open descriptors.
local function my_pid()
    return tonumber(slurp("/proc/self/stat"):match("^(%d+)"))
end
local PID = my_pid()
local function children()
    local list = {}
    for pid in (slurp("/proc/" .. PID .. "/task/" .. PID .. "/children") or ""):gmatch("%d+") do
        list[#list + 1] = pid
    end
    return list
end
local function fd_count()
    local n = 0
    -- /proc/self/fd/N for N < 1024 is enough here: the REPL opens few files
    for fd = 0, 1023 do
        local f = io.open("/proc/" .. PID .. "/fdinfo/" .. fd, "r")
        if f then n = n + 1; f:close() end
    end
    return n
end

local function gnuplot_has(name)
    for _, t in ipairs(plot.terminals()) do
        if t == name then return true end
    end
    return false
end

plot.terminal("none")   -- draw only into files here; the dumb terminal is tested on its own

local weights = mha.tensor {
    { 0.7, 0.2, 0.1 },
    { 0.3, 0.4, 0.3 },
    { 0.05, 0.15, 0.8 },
}

T.test("heatmap files", function()
    plot.heatmap(weights, { tokens = { "The", "cat", "sat" }, title = "weights", values = true })
    T.eq("save returns the path", plot.save(tmpfile("h.png")), tmpfile("h.png"))
    -- a 3x3 heat map is 560x480 pixels unless told otherwise
    check_png("heatmap", tmpfile("h.png"), 560, 480)
    plot.save(tmpfile("h2.png"), { width = 300, height = 200 })
    check_png("heatmap sized", tmpfile("h2.png"), 300, 200)
    plot.save(tmpfile("h.svg"))
    check_svg("heatmap", tmpfile("h.svg"), { ">The<", ">cat<", ">sat<", ">weights<", ">0.70<", ">0.80<" })
    plot.save(tmpfile("h.pdf"))
    check_pdf("heatmap", tmpfile("h.pdf"))
    plot.save(tmpfile("UPPER.SVG"))
    check_svg("extension in capitals", tmpfile("UPPER.SVG"))
end)

-- Rows, columns and bars count from 1 as everywhere in mha; a cell without a colour (the NaN row of a
-- softmax over only -inf) is marked and the mark explained, as mha.heat marks it with ??.
T.test("heatmap counts from 1 and marks NaN", function()
    plot.heatmap(mha.softmax(mha.tensor { { 1, 2, -1 / 0 }, { -1 / 0, -1 / 0, -1 / 0 }, { 0, 0, 0 } }, 2), { values = true })
    plot.save(tmpfile("nan.svg"))
    local svg = slurp(tmpfile("nan.svg")) or ""
    local function count(text) local _, n = svg:gsub(">%s*" .. text .. "%s*<", ""); return n end
    -- 1, 2, 3 once on each axis; 0 only on the colour bar
    T.eq("tics 1..3 on both axes, no 0", { count("0"), count("1"), count("2"), count("3") }, { 1, 2, 2, 2 })
    local _, nans = svg:gsub(">NaN<", "")
    T.eq("each NaN cell is marked", nans, 3)
    check_svg("nan note", tmpfile("nan.svg"), { "NaN = not a number" })
    plot.heatmap(weights, { values = true })
    T.ok("no note without NaN", not table.concat(plot.current().script.commands, "\n"):find("red marks", 1, true))
    plot.bar({ "a", "b" }, { 1, 2 })
    local commands = table.concat(plot.current().script.commands, "\n")
    T.ok("bar 1 stands at x = 1", commands:find("\n1 1\n2 2\n", 1, true) ~= nil
        and commands:find('set xtics ("a" 1, "b" 2)', 1, true) ~= nil, commands)
end)

T.test("heatmap options", function()
    plot.heatmap(weights, { rows = "我 喜欢 你", cols = { "a", "b", "c" }, palette = "gray", zrange = { 0, 1 } })
    plot.save(tmpfile("cjk.svg"))
    check_svg("cjk labels", tmpfile("cjk.svg"), { ">我<", ">喜欢<", ">你<", ">a<", ">c<" })
    local masked = mha.tensor { { 1, -math.huge }, { 0.5, 0 / 0 } }
    plot.heatmap(masked)
    plot.save(tmpfile("masked.png"))
    check_png("masked scores", tmpfile("masked.png"))
    T.raises("heatmap wrong rank", function() plot.heatmap(mha.zeros(2, 2, 2)) end,
        "plot.heatmap: M must have 2 dimensions, got shape (2,2,2) (for (H,L,S) weights use plot.heads)")
    T.raises("heatmap label count", function() plot.heatmap(weights, { rows = { "a" } }) end,
        "plot.heatmap: rows has 1 label, for 3 rows")
    T.raises("heatmap palette", function() plot.heatmap(weights, { palette = "rainbow" }) end,
        "plot.heatmap: unknown palette 'rainbow'")
    T.raises("heatmap zrange", function() plot.heatmap(weights, { zrange = { 1, 0 } }) end,
        "plot.heatmap: zrange must be {lo, hi} with lo < hi")
end)

T.test("heads grid", function()
    mha.seed(7)
    local layer = mha.MultiheadAttention { embed_dim = 8, num_heads = 4 }
    local x = mha.randn(1, 5, 8)
    local _, w = layer:forward(x, x, x, { average_attn_weights = false })
    T.shape("weights per head", w, { 1, 4, 5, 5 })
    local fig = plot.figure()
    fig:heads(w:select(1, 1), { tokens = "I like to learn attention", title = "four heads" })
    fig:save(tmpfile("heads.png"))
    check_png("heads", tmpfile("heads.png"))
    fig:save(tmpfile("heads.svg"))
    check_svg("heads", tmpfile("heads.svg"), { ">head 1<", ">head 2<", ">head 3<", ">head 4<", ">attention<", ">four heads<" })
    fig:save(tmpfile("heads.pdf"))
    check_pdf("heads", tmpfile("heads.pdf"))
    T.raises("heads of a batch", function() plot.heads(w) end, "W:select(1,1)")
    fig:close()
end)

T.test("line and bar", function()
    local xs, sq, lin = {}, {}, {}
    for i = 1, 20 do xs[i] = i; sq[i] = i * i; lin[i] = 3 * i end
    plot.line { { x = xs, y = sq, title = "quadratic" }, { x = mha.tensor(xs), y = mha.tensor(lin), title = "linear" },
        xlabel = "sequence length", ylabel = "cost", logy = true, title = "cost" }
    plot.save(tmpfile("line.svg"))
    check_svg("line", tmpfile("line.svg"), { ">quadratic<", ">linear<", ">sequence length<", ">cost<" })
    plot.save(tmpfile("line.png"))
    check_png("line", tmpfile("line.png"), 800, 500)
    plot.save(tmpfile("line.pdf"))
    check_pdf("line", tmpfile("line.pdf"))
    T.raises("line length mismatch", function() plot.line { { x = { 1, 2 }, y = { 1, 2, 3 } } } end,
        "plot.line: series 1 has 2 x values and 3 y values")
    T.raises("line log of zero", function() plot.line { y = { 1, 0 }, logy = true } end,
        "plot.line: logy needs positive y, series 1 has y[2] = 0")
    -- xrange fixes the axis (mha.train's live curve keeps 0 .. steps as it grows); one point draws then too
    plot.line { x = { 20 }, y = { 2.5 }, xrange = { 0, 400 } }
    T.ok("line xrange sets the x axis", table.concat(plot.current().script.commands, "\n"):find("set xrange [0:400]", 1, true))
    T.raises("line xrange reversed", function() plot.line { y = { 1, 2 }, xrange = { 5, 1 } } end,
        "plot.line: xrange must be {lo, hi} with lo < hi, e.g. xrange = {0, 100}")
    T.raises("line xrange not numbers", function() plot.line { y = { 1, 2 }, xrange = "0:5" } end,
        "plot.line: xrange must be {lo, hi} with lo < hi")
    -- two series given as one y matrix: the message shows the form for several series
    T.raises("line y as a matrix points to the series form", function() plot.line { y = { { 1, 2 }, { 3, 4 } } } end,
        { "plot.line: series 1 y must have 1 dimension, got shape (2,2)", "plot.line{ {x=xs, y=ys1}, {x=xs, y=ys2} }" })
    -- the values alone, as matplotlib's plot(ys): the message shows where they go
    T.raises("line of a list of numbers", function() plot.line { 1, 2, 3 } end,
        "plot.line: give the values as y: plot.line{y = values}")
    T.raises("line of a tensor", function() plot.line(mha.arange(5)) end,
        "plot.line: give the values as y: plot.line{y = values}")
    T.raises("line y with a hole", function() plot.line { y = { 1, nil, 3 } } end,
        "plot.line: series 1 y[2] is nil, not a number")
    T.raises("line one x value", function() plot.line { { x = { 1 }, y = { 1, 2 } } } end,
        "plot.line: series 1 has 1 x value and 2 y values")
    T.raises("line series not a table", function() plot.line { { y = { 1 } }, 5 } end,
        "plot.line: series 2 is a number, not a table {x=, y=, title=}")
    T.raises("line y holding a string", function() plot.line { y = { 1, "2" } } end,
        "plot.line: series 1 y[2] is a string, not a number")

    plot.bar("low mid high", mha.tensor { 0.1, 0.5, 0.4 }, { title = "softmax", ylabel = "p" })
    plot.save(tmpfile("bar.svg"))
    check_svg("bar", tmpfile("bar.svg"), { ">low<", ">mid<", ">high<", ">softmax<" })
    plot.save(tmpfile("bar.pdf"))
    check_pdf("bar", tmpfile("bar.pdf"))
    plot.save(tmpfile("bar.png"))
    check_png("bar", tmpfile("bar.png"))
    T.raises("bar label count", function() plot.bar({ "a" }, { 1, 2 }) end, "plot.bar: labels has 1 label, for 2 values")
end)

T.test("unknown options are errors", function()
    local w = mha.tensor { { 0.7, 0.3 }, { 0.2, 0.8 } }
    T.raises("heatmap row (did you mean rows)", function() plot.heatmap(w, { row = "a b" }) end,
        { "plot.heatmap: unknown option 'row' (did you mean 'rows'?)", "valid options: tokens, rows, cols" })
    T.raises("heatmap token (did you mean tokens)", function() plot.heatmap(w, { token = "a b" }) end,
        "plot.heatmap: unknown option 'token' (did you mean 'tokens'?)")
    T.raises("heads unknown option", function() plot.heads(mha.stack { w, w }, { xlabel = "k" }) end,
        { "plot.heads: unknown option 'xlabel'", "valid options: tokens" })
    T.raises("line unknown option", function() plot.line { y = { 1, 2 }, titel = "x" } end,
        "plot.line: unknown option 'titel' (did you mean 'title'?)")
    T.raises("line series unknown option", function() plot.line { { y = { 1, 2 }, label = "a" } } end,
        { "plot.line: series 1: unknown option 'label'", "valid options: x, y, title" })
    T.raises("line y= and a list of series", function() plot.line { { y = { 1 } }, y = { 1, 2 } } end,
        "plot.line: give either y= or a list of series, not both")
    T.raises("bar unknown option", function() plot.bar({ "a" }, { 1 }, { ylable = "p" }) end,
        "plot.bar: unknown option 'ylable' (did you mean 'ylabel'?)")
    T.raises("bar options not a table", function() plot.bar({ "a" }, { 1 }, "p") end,
        "plot.bar: options must be a table, got string")
    plot.terminal("none")
    plot.bar({ "a" }, { 1 })
    T.raises("save unknown option", function() plot.save(tmpfile("opt.png"), { widht = 300 }) end,
        "plot.save: unknown option 'widht' (did you mean 'width'?)")
    T.raises("figure takes current only", function() plot.figure { title = "x" } end,
        "plot.figure: unknown option 'title'; valid options: current")
    T.raises("figure's current checked", function() plot.figure { current = 0 } end,
        "plot.figure: current must be true or false, got a number")
    -- a figure made aside is never the current one, even drawn on when there is none
    plot.closeall()
    local aside = plot.figure { current = false }
    aside:bar({ "a" }, { 1 })
    T.ok("a figure aside stays aside", plot.current() ~= aside, "plot.current() is the figure made aside")
    plot.closeall()
end)

T.test("hostile text stays text", function()
    local owned = { tmpfile("owned"), tmpfile("owned2"), tmpfile("owned3"), tmpfile("owned4") }
    local hostile = {
        'a" ; system "touch ' .. owned[1],
        "`touch " .. owned[2] .. "`",
        "it's '; system('touch " .. owned[3] .. "'); '",
        "x\n!touch " .. owned[4],
        "@GPVAL_TERM %s %d",
    }
    plot.heatmap(mha.eye(5), { rows = hostile, cols = hostile, title = hostile[1], xlabel = hostile[2] })
    plot.save(tmpfile("hostile.svg"))
    plot.line { { y = { 1, 2 }, title = hostile[2] }, { y = { 2, 1 }, title = hostile[3] }, title = hostile[4], ylabel = hostile[5] }
    plot.save(tmpfile("hostile_line.svg"))
    plot.bar(hostile, { 1, 2, 3, 4, 5 }, { title = hostile[3] })
    -- a file name with quotes and a backquoted command (run, it would make "owned5" in the cwd)
    local odd_name = tmpfile("it's `touch owned5` \"q\".svg")
    plot.save(odd_name)
    for i, path in ipairs(owned) do
        T.ok("hostile text ran nothing " .. i, not exists(path), path .. " was created")
    end
    T.ok("file name with quotes and backquotes saved as named", exists(odd_name))
    T.ok("backquotes in a file name ran nothing", not exists("owned5"))
    local svg = slurp(tmpfile("hostile.svg")) or ""
    T.ok("hostile label drawn as text", svg:find("system", 1, true) ~= nil and svg:find("touch " .. owned[2], 1, true) ~= nil,
        "label text missing from the SVG")
    T.ok("%s in a tic label drawn as is", svg:find("@GPVAL_TERM %s %d", 1, true) ~= nil, "%s was not kept")
end)

-- Hostile strings, each of which must arrive in the drawing as written (control characters as spaces):
-- quotes leading, doubled and unbalanced, backslashes and escapes, backquotes, macros, variables,
-- printf and enhanced-text marks, pipes, gnuplot commands, very long and wide text.
local HOSTILE = {
    "'tis", "''", "'", "'''", "''''", "'a''b'", "it's", "a'", "'a", "''a''",
    '"', '""', '"a"', 'a"b', '\\', '\\\\', '\\"', "\\'", "a\\", "\\n\\t\\001",
    "\\101\\102", "`touch OWNED`", "`", "a`b`c", "@GPVAL_TERM", "@", "@@x", "$x", "$$", "$mha_line_1",
    "%s %d %%", "%", "100%", "{/Symbol a}^2_x", "&{ab}~x", "|touch OWNED", "; system 'touch OWNED'",
    "'; system('touch OWNED'); '", '"; system("touch OWNED"); "', "x\n!touch OWNED", "line\r\nbreak\0nul",
    "\t tab", "#comment", "eval 'x'", "EOD", "\239\187\191bom", "注意力 'quoted' \"中\"", "é\\è",
    "))((", "]], [[", string.rep("'\"`", 30),
}

-- The text a drawing shows for s: control characters are spaces; the SVG escapes & < >.
local function svg_text(s)
    return (s:gsub("%c", " "):gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;"))
end

T.test("every hostile string is drawn as written", function()
    T.ok("at least 46 payloads", #HOSTILE >= 46, #HOSTILE .. " payloads")
    local cwd_owned = io.open("OWNED", "r")
    if cwd_owned then cwd_owned:close(); os.remove("OWNED") end
    local failed = {}
    for i, s in ipairs(HOSTILE) do
        local ok, err = pcall(function()
            plot.line { { y = { 1, 2 }, title = s }, title = s, xlabel = s, ylabel = s }
            plot.save(tmpfile("hostile_" .. i .. ".svg"))
        end)
        local svg = slurp(tmpfile("hostile_" .. i .. ".svg")) or ""
        -- <text> or, when spaces must be kept, <text xml:space="preserve">
        local want, times, at = ">" .. svg_text(s) .. "</text>", 0, 1
        while true do
            at = svg:find(want, at, true)
            if not at then break end
            times, at = times + 1, at + 1
        end
        -- the title, both axis labels and the legend entry: four times
        if not ok then
            failed[#failed + 1] = string.format("%d %q: %s", i, s, err)
        elseif times ~= 4 then
            failed[#failed + 1] = string.format("%d %q: drawn %d times, not 4", i, s, times)
        end
    end
    T.ok("all " .. #HOSTILE .. " titles and labels drawn intact", #failed == 0, table.concat(failed, "\n"))
    -- tic labels are also printf formats: every one as written (as labels are: control characters as ?,
    -- long ones shortened with an ellipsis), in one bar chart
    local values = {}
    for i = 1, #HOSTILE do values[i] = i end
    plot.bar(HOSTILE, values)
    plot.save(tmpfile("hostile_bar.svg"))
    local svg = slurp(tmpfile("hostile_bar.svg")) or ""
    local missing = {}
    for i, s in ipairs(HOSTILE) do
        if not svg:find(">" .. svg_text(display.clean_label(s)) .. "</text>", 1, true) then missing[#missing + 1] = string.format("%d %q", i, s) end
    end
    T.ok("all " .. #HOSTILE .. " tic labels drawn intact", #missing == 0, table.concat(missing, ", "))
    T.ok("no hostile string ran a command", not exists("OWNED"), "OWNED was created")
end)

-- gnuplot runs `set output '|cmd'` as a command. The name plot.save gives gnuplot is its own, so no name
-- is ever read as a pipe: a folder that is not there is an error, one that is there gets the file.
T.test("a file name is never a pipe", function()
    plot.line { y = { 1, 2, 3 } }
    -- (names in this folder are tried by tests/sh/test_plot.sh, which runs in a folder of its own)
    local name = "|touch " .. tmpfile("piped") .. "; cat >/dev/null; .png"
    T.raises("save to a pipe-like name in no folder", function() plot.save(name) end,
        "plot.save: cannot write '" .. name .. "': folder '|touch " .. tmp .. "/piped; cat >/dev': No such file or directory")
    T.ok("no pipe ran", not exists(tmpfile("piped")))
    local odd = tmpfile("|touch " .. tmpfile("piped2") .. " ;")
    os.execute("mkdir -p '" .. odd .. "'")
    T.eq("a folder named like a pipe gets the file", plot.save(odd .. "/a.png"), odd .. "/a.png")
    check_png("file under a pipe-like folder", odd .. "/a.png")
    T.ok("and no pipe ran", not exists(tmpfile("piped2")))
    plot.closeall()
end)

T.test("gnuplot errors", function()
    plot.heatmap(weights)
    T.raises("save into a missing directory", function() plot.save(tmp .. "/no/such/dir/x.png") end,
        "plot.save: cannot write '" .. tmp .. "/no/such/dir/x.png': folder '" .. tmp
            .. "/no/such/dir': No such file or directory")
    T.ok("a failed save leaves no temporary file", not io.popen("ls -a '" .. tmp .. "'"):read("a"):find(".mha-plot", 1, true))
    os.execute("mkdir '" .. tmp .. "/taken.png'")
    T.raises("save onto a folder", function() plot.save(tmp .. "/taken.png") end,
        "plot.save: cannot write '" .. tmp .. "/taken.png': Is a directory")
    T.ok("nor does a failed rename", not io.popen("ls -a '" .. tmp .. "'"):read("a"):find(".mha-plot", 1, true))
    local fig = plot.figure()
    T.raises("an error quotes its command", function() fig:run("test", { "set title 'ok'", "plot mha_undefined_xyz" }) end,
        { "test: gnuplot:", "undefined variable: mha_undefined_xyz", "(in: plot mha_undefined_xyz)" })
    -- the figure goes on working after an error
    fig:bar({ "a", "b" }, { 1, 2 })
    fig:save(tmpfile("after_error.png"))
    check_png("figure works after an error", tmpfile("after_error.png"))
    T.raises("save needs a drawing", function() plot.figure():save(tmpfile("x.png")) end, "draw something first")
    T.raises("save extension", function() plot.save(tmpfile("x.jpg")) end, "the name must end in .png, .svg or .pdf")
    T.raises("save control character", function() plot.save(tmpfile("x\n.png")) end, "control character")
    T.raises("unknown terminal", function() plot.terminal("nosuchterm") end,
        "plot.terminal: gnuplot has no terminal 'nosuchterm' (one of: dumb, none, ")
    -- gnuplot has these, but they write files or code: drawing on them failed inside gnuplot
    for _, name in ipairs({ "png", "lua", "xterm", "tkcanvas", "svg" }) do
        if gnuplot_has(name) then
            T.raises("terminal " .. name .. " refused", function() plot.terminal(name) end,
                "plot.terminal: gnuplot's terminal '" .. name .. "' does not draw on screen (files are plot.save's) (one of: dumb, none, ")
        end
    end
    T.eq("still the terminal chosen before", plot.terminal(), "none")
    plot.closeall()
end)

T.test("a dead gnuplot", function()
    local fig = plot.figure()
    fig:bar({ "a", "b" }, { 1, 2 })
    local pid = fig.proc:pid()
    os.execute("kill -9 " .. pid)
    -- the next drawing notices, reaps the dead one and starts another (no SIGPIPE death, no hang)
    fig:bar({ "a", "b" }, { 2, 1 })
    T.ok("a new gnuplot after a kill", fig.proc:pid() ~= pid)
    fig:save(tmpfile("revived.png"))
    check_png("revived figure", tmpfile("revived.png"))
    fig:close()

    local proc = assert(gnuplot.spawn())
    assert(proc:send("exit\n"))
    local _, _, status = proc:sync("never", 5)
    T.eq("sync sees gnuplot exit", status, "exited")
    local big = string.rep("print 1\n", 100000)   -- more than a pipe holds
    local ok, err = proc:send(big, 5)
    T.eq("send to an exited gnuplot fails", { ok, err }, { nil, "gnuplot: the process has exited" })
    T.eq("its exit status", proc:close(), 0)
end)

T.test("pipes: timeouts and stubborn children", function()
    -- cat never prints the marker on stderr: sync must give up at the timeout
    local cat = assert(gnuplot.spawn("cat"))
    assert(cat:send("hello\n"))
    local t0 = os.clock()
    local clock0 = os.time()
    local out, _, status = cat:sync("marker", 0.3)
    T.eq("sync times out", status, "timeout")
    T.eq("stdout read meanwhile", out, "hello\n")
    T.ok("the timeout was kept", os.time() - clock0 <= 2 and os.clock() - t0 < 1)
    T.eq("cat exits at end of input", cat:close(), 0)
    -- yes ignores the end of its input and fills its pipe: close must terminate and reap it
    local yes = assert(gnuplot.spawn("yes"))
    local code, why = yes:close(0.2)
    T.eq("a stubborn child is terminated", { code, why }, { nil, "signal 15" })
    T.eq("closing twice is harmless", { yes:close() }, { nil, "signal 15" })
    T.eq("a missing program", { gnuplot.spawn("mha-no-such-program") },
        { nil, "gnuplot: cannot run 'mha-no-such-program': No such file or directory", "notfound" })
end)

T.test("200 figures leave nothing behind", function()
    collectgarbage()
    local fds, kids = fd_count(), #children()
    for i = 1, 200 do
        local fig = plot.figure()
        fig:line { y = { i, i + 1, i * 2 } }
        if i % 2 == 0 then fig:close() end   -- the other half is left to the garbage collector
    end
    plot.close()
    collectgarbage()
    collectgarbage()
    T.eq("no gnuplot process left", #children(), kids)
    T.eq("no file descriptor left", fd_count(), fds)
end)

-- A loop of figures nobody keeps must not pile up gnuplots until a collection: at most 4 run before a
-- collection closes the dropped ones; 16 figures still held are the most that keep theirs.
T.test("figures dropped in a loop do not pile up gnuplots", function()
    plot.closeall()
    collectgarbage()
    local kids, most = #children(), 0
    for i = 1, 40 do
        plot.figure():bar({ "a", "b" }, { i, 1 })
        most = math.max(most, #children() - kids)
    end
    T.ok("at most 4 gnuplots at once for dropped figures", most <= 4, most .. " at once")
    local held = {}
    local warned = stderr_of(function()
        for i = 1, 20 do
            held[i] = plot.figure()
            held[i]:bar({ "a", "b" }, { i, 1 })
            most = math.max(most, #children() - kids)
        end
    end)
    T.ok("at most 16 gnuplots at once for held figures", most <= 16, most .. " at once")
    T.ok("the oldest figure lost its gnuplot", held[1].proc == nil and held[20].proc ~= nil)
    T.ok("and that was said", warned:find("plot: closing figure " .. held[1].number .. "'s gnuplot: at most 16 run at once", 1, true) ~= nil, warned)
    stderr_of(function() held[1]:bar({ "a", "b" }, { 1, 2 }) end)
    T.ok("a figure that lost its gnuplot draws again", held[1].proc ~= nil)
    plot.closeall()
end)

T.test("dumb terminal draws text", function()
    plot.terminal("dumb")
    local text = stdout_of(function()
        plot.line { { y = { 1, 3, 2 }, title = "wiggle" }, title = "a text plot" }
    end)
    T.ok("dumb output has the title", text:find("a text plot", 1, true) ~= nil, text)
    T.ok("dumb output has the legend", text:find("wiggle", 1, true) ~= nil, text)
    T.ok("dumb output has no colour codes when not a terminal", not text:find("\27", 1, true), text)
    -- the dumb terminal cannot turn text: the y label is above the axis, not left out (in Chinese too)
    for _, label in ipairs({ "weight", "权重" }) do
        text = stdout_of(function() plot.line { { y = { 1, 3, 2 }, title = "wiggle" }, ylabel = label } end)
        T.ok("dumb output has the y label " .. label .. ", above the axis", ("\n" .. text):find("\n *" .. label .. " *\n +3 %+%-") ~= nil,
             text)
    end
    -- a heat map on a text terminal is mha.heat's shading, and still saves as an image
    text = stdout_of(function() plot.heatmap(weights, { tokens = "a b c" }) end)
    T.ok("heatmap on dumb falls back to shades", text:find("scale:", 1, true) ~= nil, text)
    plot.save(tmpfile("after_dumb.png"))
    check_png("saved after a text drawing", tmpfile("after_dumb.png"))
    plot.terminal("none")
    plot.closeall()
end)

T.test("dumb charts fit the rows the screen has left", function()
    plot.terminal("dumb")
    local left, held = nil, 0
    plot.text_screen = { rows_left = function() return left end, together = function(fn) held = held + 1; return fn() end }
    local function rows_of(chart)
        local text = stdout_of(function()
            plot.line { { y = { 1, 3, 2 }, title = "wiggle" }, title = chart, xlabel = "x" }
        end)
        local rows = select(2, text:gsub("\n", ""))
        T.ok(chart .. ": the chart is whole (title, both borders, x label)", text:find(chart, 1, true)
            and select(2, text:gsub("\n +[%d.]* *%+%-%-%-%-", "")) == 2 and text:find("\n +x +\n$"), text)
        T.ok(chart .. ": no form feed and at most one empty row above it", not text:find("\f", 1, true)
            and not text:find("^ *\n *\n"), text)
        return rows
    end
    local rows = rows_of("no pager")   -- rows_left gives nil: nothing is paged
    T.ok("without a pager: 3/10 of 80 columns", rows <= 24 and rows >= 20, rows)
    left = 20
    rows = rows_of("20 rows left")
    T.ok("20 rows left: the chart takes at most 20", rows <= 20 and rows >= 17, rows)
    left = 100
    rows = rows_of("100 rows left")
    T.ok("100 rows left: the chart's own 24 at most", rows <= 24 and rows >= 20, rows)
    left = 6
    rows = rows_of("6 rows left")
    T.ok("6 rows left: a readable chart all the same (the pager pauses before it)", rows >= 16 and rows <= 24, rows)
    T.eq("every text drawing went through the screen's together", held, 4)
    -- a heat map's text fallback is kept together too
    stdout_of(function() plot.heatmap(weights, { tokens = "a b c" }) end)
    T.eq("a heat map's shading went through together", held, 5)
    plot.text_screen = nil
    plot.terminal("none")
    plot.closeall()
end)

T.test("figures print cleanly; drawings return nothing", function()
    local fig = plot.figure()
    T.eq("a figure before its first drawing", tostring(fig), "figure " .. fig.number .. " (no gnuplot running)")
    local results = table.pack(fig:bar({ "a", "b" }, { 1, 2 }))
    T.eq("fig:bar returns nothing (the REPL prints nothing after a drawing)", results.n, 0)
    T.eq("a figure with its gnuplot", tostring(fig), "figure " .. fig.number .. " (gnuplot, pid " .. fig.proc:pid() .. ")")
    T.eq("plot.heatmap returns nothing", select("#", plot.heatmap(weights)), 0)
    T.eq("plot.heads returns nothing", select("#", plot.heads(mha.stack { weights, weights })), 0)
    T.eq("plot.line returns nothing", select("#", plot.line { y = { 1, 2 } }), 0)
    T.eq("plot.bar returns nothing", select("#", plot.bar({ "a" }, { 1 })), 0)
    T.eq("fig:line returns nothing", select("#", fig:line { y = { 1, 2 } }), 0)
    T.ok("plot.current() still returns the figure", getmetatable(plot.current()) == getmetatable(fig))
    fig:close()
    T.eq("a closed figure", tostring(fig), "figure " .. fig.number .. " (no gnuplot running)")
    plot.closeall()
end)

-- The columns a dumb drawing takes: this terminal's, or 80 when stdout is not one (as plot.lua decides).
local term = require "mha.term"
local function dumb_columns()
    return term.isatty(io.stdout) and math.min(term.columns(io.stdout), 200) or 80
end

-- The lines of a dumb drawing, without the colour codes a colour terminal gets.
local function drawn_lines(text)   -- the drawing's rows, without the empty row that parts it from the text
    local lines = {}
    for line in text:gmatch("([^\n]*)\n") do
        if line ~= "" then lines[#lines + 1] = (line:gsub("\27%[[%d;]*m", "")) end
    end
    return lines
end

T.test("a map's colour scale reads 0.9, not 0.90000", function()
    plot.heatmap(mha.tensor{{0.7, 0.3}, {0.1, 0.9}}, {tokens = "a b"})
    local commands = table.concat(plot.current().script.commands, "\n")
    T.ok("the scale's numbers as %g", commands:find("set format cb '%g'", 1, true) ~= nil, commands)
    plot.closeall()
end)

T.test("bars leave room above the tallest", function()
    plot.bar({ "a", "b", "c" }, { 1, 2, 3 })
    local commands = table.concat(plot.current().script.commands, "\n")
    T.ok("the y range runs to max + 10%", commands:find("set yrange [0:3.3]", 1, true) ~= nil, commands)
    plot.bar({ "a", "b" }, { -2, 1 })
    commands = table.concat(plot.current().script.commands, "\n")
    T.ok("and below a negative bar by 10% of the span", commands:find("set yrange [-2.3:1.3]", 1, true) ~= nil, commands)
    -- on the text terminal the top border is the first line of dashes; the tallest bar (3, on a tic, where
    -- gnuplot's autoscale would end the axis) must stay below the line under it
    plot.terminal("dumb")
    local lines = drawn_lines(stdout_of(function() plot.bar({ "a", "b", "c" }, { 1, 2, 3 }) end))
    local top
    for i, line in ipairs(lines) do
        if line:find("+-----", 1, true) then top = i; break end
    end
    T.ok("dumb bar chart has a top border", top ~= nil, table.concat(lines, "\n"))
    local under = top and lines[top + 1] or ""
    local inside = under:match("|(.*)|") or under
    T.ok("no bar touches the top border", not inside:find("*", 1, true), table.concat(lines, "\n"))
    plot.terminal("none")
    plot.closeall()
end)

T.test("wide characters on the dumb terminal", function()
    plot.terminal("dumb")
    local columns = dumb_columns()
    local function check(name, text, must_have)
        local lines = drawn_lines(text)
        local bad = {}
        for i, line in ipairs(lines) do
            if term.width(line) ~= columns then bad[#bad + 1] = string.format("line %d is %d cells: %s", i, term.width(line), line) end
        end
        T.ok(name .. ": every line is " .. columns .. " cells", #lines > 10 and #bad == 0,
            #lines .. " lines; " .. table.concat(bad, "\n"))
        for _, s in ipairs(must_have) do
            T.ok(name .. " shows " .. s, text:find(s, 1, true) ~= nil, text)
        end
    end
    check("CJK legend and title", stdout_of(function()
        plot.line { { y = { 1, 2, 3, 4 }, title = "注意力权重" }, { y = { 4, 3, 2, 1 }, title = "ascii" },
            title = "标题 title", xlabel = "位置 position" }
    end), { "注意力权重", "ascii", "标题 title", "位置 position" })
    check("CJK bar labels", stdout_of(function()
        plot.bar("我 爱 你", { 1, 2, 3 }, { title = "注意 50%" })
    end), { "我", "爱", "你", "注意 50%" })
    local lines = drawn_lines(stdout_of(function()
        plot.line { { y = { 1, 2, 3, 4 }, title = "注意力权重" }, { y = { 4, 3, 2, 1 }, title = "ascii" } }
    end))
    -- the legend stands outside the plot, right of its border (two "|" before each title), so it
    -- never covers a line; each series has its own point letter (G, E) and line character (*, #)
    local first, second
    for _, line in ipairs(lines) do
        first = first or line:match("^[^|]*|[^|]*| +注意力权重 +(%S+)")
        second = second or line:match("^[^|]*|[^|]*| +ascii +(%S+)")
    end
    T.ok("the legend is outside the plot", first ~= nil and second ~= nil, table.concat(lines, "\n"))
    T.eq("each series has its own sample", { first, second }, { "***G***", "###E###" })
    local inside = {}
    for _, line in ipairs(lines) do
        local body = line:match("^[^|]*|([^|]*)|")
        if body then inside[#inside + 1] = body end
    end
    inside = table.concat(inside, "\n")
    T.ok("both series are drawn with their own characters", inside:find("G", 1, true) ~= nil
        and inside:find("E", 1, true) ~= nil and inside:find("*", 1, true) ~= nil and inside:find("#", 1, true) ~= nil,
        table.concat(lines, "\n"))
    plot.terminal("none")
    plot.closeall()
end)

-- 4 heads of 24 positions fit the default window only at a row pitch of 9 pixels: the tic labels
-- take a 6-point font instead of overlapping; 2 positions leave 10 points' room and keep the default.
T.test("heads: tic labels shrink to the rows a scaled-down window leaves", function()
    local many = mha.softmax(mha.randn(4, 24, 24), 3)
    local letters = {}
    for i = 1, 24 do letters[i] = string.char(96 + i) end
    plot.heads(many, { tokens = letters })
    local commands = table.concat(plot.current().script.commands, "\n")
    local f = tonumber(commands:match("set ytics font ',(%d+)'"))
    T.ok("24 rows in a 2x2 grid: tics under 10 points, at least 6", commands:find("layout 2,2", 1, true) ~= nil
        and f ~= nil and f >= 6 and f < 10, commands)
    plot.heads(mha.stack { weights, weights })
    commands = table.concat(plot.current().script.commands, "\n")
    T.ok("a few rows: the default font", commands:find("tics font", 1, true) == nil, commands)
    plot.closeall()
end)

-- The helper who tried plot.heads as a teacher saw 8 heads of "the cat sat on the mat" with their
-- key labels run together (thecatsatonthemat), and at font = 18 the axis names over the tic labels.
T.test("heads: shared axes, a grid for the window, labels that fit", function()
    local eight = mha.softmax(mha.randn(8, 6, 6), 3)
    plot.heads(eight, { tokens = "the cat sat on the mat" })
    local commands = plot.current().script.commands
    local all = table.concat(commands, "\n")
    T.ok("8 heads in a landscape window: 2 rows of 4", all:find("layout 2,4", 1, true) ~= nil, all)
    local named, blank = 0, 0
    for _, c in ipairs(commands) do
        if c:find("^set ytics %(") then
            if c:find('"the" 1', 1, true) then named = named + 1 elseif c:find('"" 1', 1, true) then blank = blank + 1 end
        end
    end
    T.eq("the queries on the first column only", { named, blank }, { 2, 6 })
    local xnamed = 0
    for _, c in ipairs(commands) do if c:find('^set xtics %("the" 1') then xnamed = xnamed + 1 end end
    T.eq("the keys under the bottom row only", xnamed, 4)
    T.ok("short keys in wide cells stay level", all:find("rotate", 1, true) == nil, all)
    -- the same 3-letter keys in cells too narrow for them level: tilted
    plot.heads(eight, { tokens = "the cat sat on the mat", size = { 420, 300 } })
    all = table.concat(plot.current().script.commands, "\n")
    T.ok("keys wider than a cell tilt", all:find("rotate by 45 right", 1, true) ~= nil, all)
    -- a font: gnuplot is told it too, so that it places the axis names past the tic labels
    plot.heads(mha.softmax(mha.randn(2, 4, 4), 3), { tokens = "we like green tea", font = 18 })
    all = table.concat(plot.current().script.commands, "\n")
    T.ok("font = 18: the terminal's font too", all:find("set termoption font ',18'", 1, true) ~= nil, all)
    plot.closeall()
end)

os.execute("rm -rf '" .. tmp .. "'")
T.done()
