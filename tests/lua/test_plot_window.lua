-- tests/lua/test_plot_window.lua - plots for a classroom: windows that fit the screen, font and size
-- options, query/key axis labels, panel titles in the lesson's language, crisp SVG on a white page.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha
local plot = require "mha.plot"

local tmp = os.tmpname()
os.remove(tmp)
assert(os.execute("mkdir -m 700 '" .. tmp .. "'"))
local function tmpfile(name) return tmp .. "/" .. name end
local function slurp(path)
    local f = io.open(path, "rb")
    if not f then return "" end
    local data = f:read("a")
    f:close()
    return data
end
local function count(s, pattern) return select(2, s:gsub(pattern, "")) end

plot.terminal("none")
mha.seed(3)
local weights = mha.softmax(mha.randn(6, 6), -1)
local heads8 = mha.softmax(mha.randn(8, 6, 6), -1)
local tokens = "I love to drink green tea"

T.test("windows fit the screen", function()
    local fig = plot.figure()
    fig:heads(heads8, { tokens = tokens })
    local w, h = fig.script.size[1], fig.script.size[2]
    -- 8 heads of 6 tokens: 4x2 panels of 280 pixels (the grid with the largest panels in 960x680),
    -- the margins 115 on the left (5-letter queries), 90 on the right, 115 below (tilted keys) and
    -- 50 more, would be 1325x725; scaled to fit 960x680
    T.ok("8 heads fit 960x680", w <= 960 and h <= 680, string.format("%dx%d", w, h))
    T.close("8 heads keep their shape", w / h, (280 * 4 + 115 + 90) / (280 * 2 + 115 + 50), 0.01)
    fig:heatmap(weights, { tokens = tokens })
    T.eq("a small heat map keeps its size", fig.script.size, { 560, 480 })
    fig:heads(heads8, { tokens = tokens, size = { 1200, 900 } })
    T.eq("size= is the window's size", fig.script.size, { 1200, 900 })
    fig:heatmap(weights, { tokens = tokens, font = 20 })
    -- 560x480 at 20 points is 1120x960, scaled by 680/960 to fit
    T.eq("a larger font gets a larger window, within the largest", fig.script.size, { 793, 680 })
    T.raises("font checked", function() plot.heatmap(weights, { font = 2 }) end,
        "plot.heatmap: font must be a size in points from 6 to 72")
    T.raises("size checked", function() plot.heads(heads8, { size = { 10, "x" } }) end,
        "plot.heads: size must be {width, height} in pixels, each from 200 to 10000")
    T.raises("line size checked", function() plot.line{ y = { 1, 2 }, size = 3 } end,
        "plot.line: size must be {width, height}")
    fig:close()
end)

T.test("svg: vector cells on a white page, axis labels, fonts", function()
    plot.heatmap(weights, { tokens = tokens, title = "w", values = true, font = 16 })
    plot.save(tmpfile("h.svg"))
    local svg = slurp(tmpfile("h.svg"))
    T.eq("no embedded bitmap (it would blur)", count(svg, "<image"), 0)
    T.ok("36 cells drawn as vector rectangles", count(svg, "<polygon fill = 'rgb%(") >= 36,
        count(svg, "<polygon fill = 'rgb%(") .. " filled polygons")
    -- the first filled shape is a white polygon over the whole page (viewBox 0 0 W H): from (0,H) to (~W,0)
    local W, H = svg:match('viewBox="0 0 (%d+) (%d+)"')
    local fill, x0, y0, x1 = svg:match("<polygon fill = '(rgb%([^)]*%))' points = '([%d.]+),([%d.]+) ([%d.]+),")
    T.eq("an opaque white page under the drawing", { fill, tonumber(x0), tonumber(y0), math.floor(tonumber(x1) + 0.5) },
        { "rgb(255, 255, 255)", 0, tonumber(H), tonumber(W) })
    T.ok("query and key label the axes", svg:find(">query<", 1, true) and svg:find(">key<", 1, true), "labels missing")
    T.ok("font= sets the text size", svg:find("font-size=\"16", 1, true) or svg:find("font-size:16", 1, true)
        or svg:find("font-size=\"16.00\"", 1, true), "no 16-point text")
    plot.heatmap(weights, { title = "no labels" })
    plot.save(tmpfile("plain.svg"))
    svg = slurp(tmpfile("plain.svg"))
    T.ok("a matrix without token labels gets no query/key", not svg:find(">query<", 1, true), "query label on a plain matrix")
    plot.heatmap(weights, { tokens = tokens, xlabel = "", ylabel = "target" })
    plot.save(tmpfile("own.svg"))
    svg = slurp(tmpfile("own.svg"))
    T.ok("xlabel='' and ylabel= override", not svg:find(">key<", 1, true) and svg:find(">target<", 1, true), "labels not overridden")
end)

T.test("panel titles and labels in the lesson's language", function()
    plot.lang = function() return "zh" end
    plot.heads(heads8:narrow(1, 1, 2), { tokens = "我 爱 喝 茶 和 水", title = "两个头" })
    plot.save(tmpfile("zh.svg"))
    local svg = slurp(tmpfile("zh.svg"))
    for _, text in ipairs({ ">头 1<", ">头 2<", ">查询<", ">键<", ">两个头<" }) do
        T.ok("zh heads: " .. text, svg:find(text, 1, true) ~= nil, text .. " missing")
    end
    T.ok("zh heads: no English panel title", not svg:find(">head 1<", 1, true), "head 1 in a Chinese plot")
    plot.lang = nil
    plot.heads(heads8:narrow(1, 1, 2), { tokens = tokens })
    plot.save(tmpfile("en.svg"))
    svg = slurp(tmpfile("en.svg"))
    T.ok("en heads: head 1, query, key", svg:find(">head 1<", 1, true) and svg:find(">query<", 1, true)
        and svg:find(">key<", 1, true), "English words missing")
end)

T.test("a lesson hands its language to plot", function()
    local lesson = require "mha.lesson"
    -- the lesson's first step prints (through io.stdout, io.write and print); only its language matters
    local saved_stdout, saved_write, saved_print = io.stdout, io.write, print
    local sink = assert(io.open("/dev/null", "w"))
    io.stdout, io.write, print = sink, function() end, function() end
    local called, ok, err = pcall(lesson.start, 1, { batch = false, lang = "zh" })
    io.stdout, io.write, print = saved_stdout, saved_write, saved_print
    sink:close()
    if not called then ok, err = false, ok end
    T.ok("lesson 1 opens", ok, tostring(err))
    T.eq("plot follows the open lesson's language", plot.lang and plot.lang(), "zh")
    T.eq("lesson.language() is it", lesson.language(), "zh")
end)

plot.closeall()
os.execute("rm -rf '" .. tmp .. "'")
T.done()
