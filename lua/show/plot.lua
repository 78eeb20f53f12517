-- lua/show/plot.lua - module "mha.plot" (the REPL's global `plot`): attention heat maps, head grids
-- and line and bar charts, each on a figure (lua/show/figure.lua: a long-lived gnuplot per figure).

local display = require "mha.display"
local term = require "mha.term"
local figure = require "mha.plot.figure"
local raise = require "mha.raise"   -- errors at the user's line
local is_tensor = require("mha.core").is_tensor

local plot, Figure = figure.plot, figure.Figure
local quote, quote_tic, data_number = figure.quote, figure.quote_tic, figure.data_number
local array_of, options_of, words = figure.array_of, figure.options_of, figure.words

-- ---------------------------------------------------------------------------------------------
-- Plots for a projector: the font and the window's size
-- ---------------------------------------------------------------------------------------------

-- The largest window when nothing says otherwise: it fits a 1024x768 projector with room for the
-- window's frame and a taskbar.
local DEFAULT_MAX = { 960, 680 }

-- "WxH" -> {w, h} (from 200 to 10000 pixels each), else nil.
local function parse_size(text)
    local w, h = tostring(text or ""):match("^%s*(%d+)%s*[xX,]%s*(%d+)%s*$")
    w, h = tonumber(w), tonumber(h)
    if w and h and w >= 200 and h >= 200 and w <= 10000 and h <= 10000 then return { w, h } end
    return nil
end

-- The font size in points and the largest window, from the plot's options font= and size={w,h},
-- else $MHA_PLOT_FONT (points) and $MHA_PLOT_SIZE (WxH), else gnuplot's own font and DEFAULT_MAX.
-- An option that is wrong is an error; an environment value that is wrong is said once and ignored.
local warned_env = {}
local function env_setting(name, parse)
    local text = os.getenv(name)
    if text == nil or text == "" then return nil end
    local value = parse(text)
    if value == nil and not warned_env[name] then
        warned_env[name] = true
        io.stderr:write("plot: ", name, "='", display.clean_label(text), "' is not ",
            name == "MHA_PLOT_FONT" and "a font size in points from 6 to 72" or "a size WxH such as 1280x720", "; ignored\n")
    end
    return value
end
local function parse_font(text)
    local n = tonumber(text)
    if n and n >= 6 and n <= 72 then return n end
    return nil
end
local function projector(fname, opts)
    local font, size = opts.font, opts.size
    if font ~= nil and parse_font(font) == nil then raise(fname .. ": font must be a size in points from 6 to 72") end
    if size ~= nil and (type(size) ~= "table" or parse_size(tostring(size[1]) .. "x" .. tostring(size[2])) == nil) then
        raise(fname .. ": size must be {width, height} in pixels, each from 200 to 10000")
    end
    return { font = font or env_setting("MHA_PLOT_FONT", parse_font), size = size,
             max = env_setting("MHA_PLOT_SIZE", parse_size) or DEFAULT_MAX }
end

-- The window's size: the one asked for, else the natural size scaled down (keeping its shape) to
-- fit the largest window. A larger font needs more room around the drawing: margins grow with it.
local function window_size(setting, natural)
    if setting.size then return { setting.size[1], setting.size[2] } end
    local scale = math.min(1, setting.max[1] / natural[1], setting.max[2] / natural[2])
    return { math.floor(natural[1] * scale + 0.5), math.floor(natural[2] * scale + 0.5) }
end
local function font_scale(setting) return setting.font and math.max(1, setting.font / 10) or 1 end

-- The commands that set every text's font size (titles, tics, axis labels, the key), or none.
-- gnuplot sizes automatic margins, and places an axis label past the tic labels, by the
-- terminal's font, so that is set too (the text terminal has none): a larger axis label is not cut
-- off, nor drawn over the tic labels (plot.heads, whose margins are fixed, had "query" on them).
local function font_commands(setting)
    if not setting.font then return {} end
    local f = string.format("font ',%g'", setting.font)
    return { "if (GPVAL_TERM ne 'dumb' && GPVAL_TERM ne 'unknown') set termoption " .. f,
             "set title " .. f, "set tics " .. f, "set xlabel " .. f, "set ylabel " .. f, "set key " .. f }
end

-- An opaque white page under the drawing (object 1, drawn behind it), so that black text stays
-- readable on a dark SVG viewer. A multiplot unsets it after the first panel, which it would cover.
local BACKGROUND = "set object 1 rectangle from screen 0,0 to screen 1,1 behind fillcolor rgb '#ffffff' fillstyle solid 1.0 noborder"

local function add_all(list, more)
    for _, c in ipairs(more) do list[#list + 1] = c end
    return list
end

-- ---------------------------------------------------------------------------------------------
-- Heat maps
-- ---------------------------------------------------------------------------------------------

-- Palettes by name only: a palette is never gnuplot text from the user.
local PALETTES = {
    viridis = "set palette defined (0 '#440154', 1 '#472c7a', 2 '#3b518b', 3 '#2c718e', 4 '#21908d', "
        .. "5 '#27ad81', 6 '#5cc863', 7 '#aadc32', 8 '#fde725')",
    gray = "set palette gray",
    grey = "set palette gray",
    hot = "set palette rgbformulae 21,22,23",
    blues = "set palette defined (0 '#f7fbff', 1 '#6baed6', 2 '#08306b')",
    redblue = "set palette defined (0 '#2166ac', 1 '#f7f7f7', 2 '#b2182b')",
}

local function palette_command(fname, name)
    name = name or "viridis"
    local cmd = PALETTES[name]
    if not cmd then
        local names = {}
        for k in pairs(PALETTES) do names[#names + 1] = k end
        table.sort(names)
        raise(string.format("%s: unknown palette '%s' (one of: %s)", fname, display.clean_label(name),
            table.concat(names, ", ")))
    end
    return cmd
end

-- The widest of labels in columns (a wide character counts 2).
local function widest(labels)
    local longest = 0
    for _, l in ipairs(labels) do longest = math.max(longest, term.width(l)) end
    return longest
end

-- Whether x tic labels are long or many enough to tilt whatever room they have.
local function long_labels(labels)
    local longest = widest(labels)
    return longest > 4 or #labels * longest > 40
end

-- "set xtics ('The' 0, 'cat' 1, ...)", tilted when tilt says so, or by default when the labels are
-- long or many.
local function tics_command(axis, labels, tilt)
    local parts = {}
    for i, l in ipairs(labels) do parts[i] = quote_tic(l) .. " " .. i end
    if tilt == nil then tilt = axis == "x" and long_labels(labels) end
    return "set " .. axis .. "tics (" .. table.concat(parts, ", ") .. ")" .. (tilt and " rotate by 45 right" or "")
end

-- The range of the finite values of matrices (for a colour bar shared by every head).
local function finite_range(mats)
    local lo, hi = display.finite_range(mats)
    if lo > hi then return 0, 1 end
    if lo == hi then return lo - 0.5, hi + 0.5 end
    return lo, hi
end

local function zrange_of(fname, opts, mats)
    if opts.zrange == nil then return finite_range(mats) end
    local z = opts.zrange
    if type(z) ~= "table" or type(z[1]) ~= "number" or type(z[2]) ~= "number" or not (z[1] < z[2]) then
        raise(fname .. ": zrange must be {lo, hi} with lo < hi")
    end
    return z[1], z[2]
end

local function datablock(name, rows)
    local lines = { name .. " << EOD" }
    for _, row in ipairs(rows) do
        local cells = {}
        for j, v in ipairs(row) do cells[j] = data_number(v) end
        lines[#lines + 1] = table.concat(cells, " ")
    end
    lines[#lines + 1] = "EOD"
    return table.concat(lines, "\n")
end

-- The cells of a matrix that have no colour (NaN, and infinite values, which data_number also
-- writes as NaN), as a datablock of "column row text" marks counted from 1, or nil for none.
local function blank_cells(name, m)
    local lines = { name .. " << EOD" }
    for i, row in ipairs(m) do
        for j, v in ipairs(row) do
            local mark = v ~= v and "NaN" or v == math.huge and "inf" or v == -math.huge and "-inf"
            if mark then lines[#lines + 1] = string.format("%d %d %s", j, i, mark) end
        end
    end
    if #lines == 1 then return nil end
    lines[#lines + 1] = "EOD"
    return table.concat(lines, "\n")
end

-- The commands that draw one matrix (already in a datablock) with token labels, row 1 on top. Rows
-- and columns count from 1, as everywhere in mha. The cells without a colour are marked with their
-- value (NaN, inf, -inf), as mha.heat marks them with ??; a note under the drawing says what the
-- mark means.
local function matrix_commands(block, m, row_labels, col_labels, lo, hi, values, font, tilt)
    local nrows, ncols = #m, #m[1]
    local c = {
        string.format("set xrange [0.5:%d.5]", ncols),
        string.format("set yrange [%d.5:0.5]", nrows),   -- reversed: row 1 at the top
        string.format("set cbrange [%s:%s]", data_number(lo), data_number(hi)),
        "set format cb '%g'",   -- 0.9, where gnuplot's own choice read 0.90000 on some ranges
        col_labels and tics_command("x", col_labels, tilt) or "set xtics 1",
        row_labels and tics_command("y", row_labels) or "set ytics 1",
        "set tics scale 0",
    }
    if not col_labels then c[#c + 1] = "set format x '%.0f'" end
    local at = " matrix using ($1+1):($2+1):"
    -- `pixels`: each cell a rectangle of its own, so an SVG stays crisp at any zoom
    -- (an embedded image of 6x6 pixels is blurred by every viewer that scales it)
    local plotcmd = "plot " .. block .. at .. "3 with image pixels notitle"
    local label_font = font and string.format(" font ',%g'", font) or ""
    if values then
        -- the value in each cell, light on the dark half of the palette and dark on the light half
        local mid = data_number((lo + hi) / 2)
        local fmt = "'%." .. values .. "f'"
        plotcmd = plotcmd
            .. ", " .. block .. at .. "($3 < " .. mid .. " ? sprintf(" .. fmt .. ", $3) : '') with labels tc rgb '#ffffff'" .. label_font .. " notitle"
            .. ", " .. block .. at .. "($3 >= " .. mid .. " ? sprintf(" .. fmt .. ", $3) : '') with labels tc rgb '#000000'" .. label_font .. " notitle"
    end
    local marks = blank_cells(block .. "_blank", m)
    if marks then
        c[#c + 1] = marks
        c[#c + 1] = "set label 2 " .. quote(words().blank_note) .. " at screen 0.005,0.008 left front" .. label_font
        plotcmd = plotcmd .. ", " .. block .. "_blank using 1:2:3 with labels tc rgb '#d62728'" .. label_font .. " notitle"
    else
        c[#c + 1] = "unset label 2"
    end
    c[#c + 1] = plotcmd
    return c
end

local function values_digits(fname, v)
    if v == nil or v == false then return nil end
    if v == true then return 2 end
    if math.type(v) == "integer" and v >= 0 and v <= 6 then return v end
    raise(fname .. ": values must be true, false or a number of decimals 0..6")
end

-- The window option (at=, window=: mha.textmap): M and its labels narrowed to the window of
-- positions.
local function windowed_map(fname, M, opts)
    local narrowed, o = require("mha.textmap").window(fname, M, opts, function(what, given, n, unit)
        return display.label_list(fname, what, given, n, unit)
    end)
    return narrowed, o
end

-- Label lists for rows and columns, checked against the matrix; rows/cols default to tokens.
local function labels_for(fname, opts, nrows, ncols)
    local rows = display.label_list(fname, opts.rows and "rows" or "tokens", opts.rows or opts.tokens, nrows, "row")
    local cols = display.label_list(fname, opts.cols and "cols" or "tokens", opts.cols or opts.tokens, ncols, "column")
    return rows, cols
end

-- plot.heatmap(M [, opts]) draws a matrix, typically attention weights (L,S), with token labels.
-- With labels for both axes (tokens=, or rows= and cols=) it is read as attention: the axes say
-- "query" and "key" (in the lesson's language) unless xlabel=/ylabel= say otherwise ("" for none).
-- at=, window= show the window of window positions ending at position at (mha.textmap).
local HEATMAP_OPTIONS = { "tokens", "rows", "cols", "title", "xlabel", "ylabel", "zrange", "palette", "values",
                          "font", "size", "at", "window" }

function plot.heatmap(M, opts)
    local fname = "plot.heatmap"
    opts = options_of(fname, opts, HEATMAP_OPTIONS)
    M, opts = windowed_map(fname, M, opts)
    local setting = projector(fname, opts)
    local m, shape = array_of(fname, "M", M, 2, " (for (H,L,S) weights use plot.heads)")
    local rows, cols = labels_for(fname, opts, shape[1], shape[2])
    local lo, hi = zrange_of(fname, opts, { m })
    local attention = opts.tokens ~= nil or (opts.rows ~= nil and opts.cols ~= nil)
    local xlabel = opts.xlabel or (attention and words().key) or ""
    local ylabel = opts.ylabel or (attention and words().query) or ""
    local commands = add_all({ BACKGROUND }, font_commands(setting))
    add_all(commands, {
        palette_command(fname, opts.palette),
        "set title " .. quote(opts.title or ""),
        "set size ratio " .. (shape[1] / shape[2] > 0.2 and shape[1] / shape[2] < 5 and "-1" or "0"),
        datablock("$mha_heat", m),
    })
    if xlabel ~= "" then commands[#commands + 1] = "set xlabel " .. quote(xlabel) end
    if ylabel ~= "" then commands[#commands + 1] = "set ylabel " .. quote(ylabel) end
    add_all(commands, matrix_commands("$mha_heat", m, rows, cols, lo, hi,
        values_digits(fname, opts.values), setting.font))
    local side = math.max(480, math.min(1600, 40 * math.max(shape[1], shape[2]) + 200))
    local scale = font_scale(setting)
    plot.current():draw(fname, {
        commands = commands,
        size = window_size(setting, { math.floor((side + 80) * scale), math.floor(side * scale) }),
        image = true,
        warning = "matrix contains missing or undefined values",
        fallback = function()
            display.heat(M, { rows = rows, cols = cols, title = opts.title, zrange = opts.zrange and { lo, hi },
                values = opts.values })
        end,
    })
end

-- plot.heads' layout for H heads of (L,S), rows and cols their labels (or nil): fixed margins keep
-- every panel the same size; the one colour bar stands in the right margin.
local function heads_layout(setting, H, L, S, rows, cols)
    -- The heads share their axes, so only the outer panels carry the tokens: the first column the
    -- queries, the bottom of each column the keys. In pixels at a 10-point font (more for a larger
    -- one): 70 on top (the title, the first heads' titles), LEFT on the left (tic labels, the query
    -- label), 90 on the right (the colour bar), 90 below the last row, or 115 when the key labels
    -- are tilted (tic labels, the key label); between panels 20 across and 40 down (the next row's
    -- titles).
    local px = function(n) return n * font_scale(setting) end
    local GAP_X, GAP_Y = 20, 40
    -- the left margin holds the query label and the row labels, which gnuplot, told the font,
    -- sets that far left of the panel as it reckons them wide: by their bytes (a Chinese token
    -- counts 3 a character), about 12 pixels each at 10 points (at font = 16 a 2-character Chinese
    -- token put the Chinese query label off the page of an 80-pixel margin)
    local longest = #tostring(L)
    for _, l in ipairs(rows or {}) do longest = math.max(longest, #l) end
    local LEFT = math.max(80, 55 + 12 * longest)
    local cell = math.max(250, math.min(600, 30 * math.max(L, S) + 100))
    -- the window and the panels' side for a grid of c columns (r rows)
    local function layout(c, r, below)
        local size = window_size(setting, { math.floor(px(cell * c + LEFT + 90)),
                                            math.floor(px(cell * r + below + 50)) })
        local side = math.min((size[1] - px(LEFT + 90) - (c - 1) * px(GAP_X)) / c,
                              (size[2] - px(below + 50) - (r - 1) * px(GAP_Y)) / r)
        return size, side
    end
    -- the columns that give the largest panels in the largest window (8 heads: 4 by 2 on a
    -- landscape screen), the squarest grid among equals
    local grid_cols, best = math.ceil(math.sqrt(H)), -math.huge
    for c = 1, H do
        local _, side = layout(c, math.ceil(H / c), 90)
        local natural = c == math.ceil(math.sqrt(H))
        if side > best + 0.5 or (natural and side >= best - 0.5) then grid_cols, best = c, side end
    end
    local grid_rows = math.ceil(H / grid_cols)
    -- the key labels tilt where they are wider than a cell (about 7 pixels a column at 10 points),
    -- or where they are long or many (tics_command's own rule)
    local below, tilt = 90, false
    local size, side = layout(grid_cols, grid_rows, below)
    if cols and (widest(cols) * px(7) + px(4) > side / S or long_labels(cols)) then
        below, tilt = 115, true
        size, side = layout(grid_cols, grid_rows, below)
    end
    return { cols = grid_cols, rows = grid_rows, size = size, side = side, below = below, tilt = tilt, left = LEFT,
             gap_x = GAP_X, gap_y = GAP_Y, px = px }
end

-- plot.heads(W [, opts]) draws every head of (H,L,S) attention weights in one grid ("head 1" ...,
-- in the lesson's language), on one colour scale; the query axis is named on the first column, the
-- key axis on the last row.
-- at=, window= as plot.heatmap's.
local HEADS_OPTIONS = { "tokens", "rows", "cols", "title", "zrange", "palette", "values", "font", "size", "at",
                        "window" }

function plot.heads(W, opts)
    local fname = "plot.heads"
    opts = options_of(fname, opts, HEADS_OPTIONS)
    W, opts = windowed_map(fname, W, opts)
    local setting = projector(fname, opts)
    local w, shape = array_of(fname, "W", W, 3, " (H,L,S); for batched (B,H,L,S) weights select one: W:select(1,1)")
    local H, L, S = shape[1], shape[2], shape[3]
    local rows, cols = labels_for(fname, opts, L, S)
    local lo, hi = zrange_of(fname, opts, w)
    local said = words()
    local commands = add_all({ BACKGROUND }, font_commands(setting))
    add_all(commands, { palette_command(fname, opts.palette), "set size ratio -1", "unset colorbox" })
    for h = 1, H do commands[#commands + 1] = datablock("$mha_head_" .. h, w[h]) end
    local z = heads_layout(setting, H, L, S, rows, cols)
    local grid_rows, grid_cols, size, side, below, tilt, px = z.rows, z.cols, z.size, z.side, z.below, z.tilt, z.px
    local width, height = size[1], size[2]
    -- a window scaled down to fit the screen can leave a row less room than a tic label is tall
    -- (13 pixels at 10 points): the axes' labels then take a font that fits (at least 6 points)
    local pitch = side / math.max(L, S)
    if pitch < px(13) then
        local f = math.max(6, math.floor(pitch * 10 / 13))
        commands[#commands + 1] = string.format("set xtics font ',%d'; set ytics font ',%d'", f, f)
    end
    commands[#commands + 1] = string.format(
        "set multiplot layout %d,%d margins %.4f,%.4f,%.4f,%.4f spacing %.4f,%.4f",
        grid_rows, grid_cols, px(z.left) / width, 1 - px(90) / width, px(below - 20) / height, 1 - px(70) / height,
        px(z.gap_x) / width, px(z.gap_y) / height)
    -- the title is a label of the first panel, drawn over its white page
    -- (a multiplot title would be under it)
    commands[#commands + 1] = string.format("set label 1 %s at screen 0.5,%.4f center front%s",
        quote(opts.title or ""), 1 - px(22) / height, setting.font and string.format(" font ',%g'", setting.font) or "")
    local digits = values_digits(fname, opts.values)
    local function blank(labels)   -- the inner panels' tic labels: as many, empty
        if not labels then return nil end
        local none = {}
        for i = 1, #labels do none[i] = "" end
        return none
    end
    local no_rows, no_cols = blank(rows), blank(cols)
    for h = 1, H do
        local first_column, bottom = (h - 1) % grid_cols == 0, h + grid_cols > H
        commands[#commands + 1] = "set title " .. quote(string.format(said.head, h))
        commands[#commands + 1] = first_column and "set ylabel " .. quote(said.query) or "unset ylabel"
        commands[#commands + 1] = bottom
            and "set xlabel " .. quote(said.key) .. (tilt and " offset 0,-1" or "") or "unset xlabel"
        if h == H then
            commands[#commands + 1] = string.format(
                "set colorbox user origin screen %.4f,0.15 size screen %.4f,0.7", 1 - px(70) / width, px(18) / width)
        end
        add_all(commands, matrix_commands("$mha_head_" .. h, w[h], first_column and rows or no_rows,
            bottom and cols or no_cols, lo, hi, digits, setting.font, tilt))
        if h == 1 then commands[#commands + 1] = "unset object 1; unset label 1" end   -- drawn once
    end
    commands[#commands + 1] = "unset multiplot"
    plot.current():draw(fname, {
        commands = commands,
        size = size,
        image = true,
        warning = "matrix contains missing or undefined values",
        fallback = function()
            display.heat(W, { rows = rows, cols = cols, title = opts.title, dims = said.dims,
                zrange = { lo, hi }, values = opts.values })
        end,
    })
end

-- ---------------------------------------------------------------------------------------------
-- Lines and bars
-- ---------------------------------------------------------------------------------------------

local function vector_of(fname, what, v, hint)
    return array_of(fname, what, v, 1, hint)
end

-- Each series its own point type and dash type, so series differ without colour: on the dumb
-- terminal point types 7, 5, 9, ... are the letters G, E, I, ... and dash types 1..5 draw with
-- different characters (*, #, $, ...); in a window or file they are shapes and dash patterns.
local POINT_TYPES = { 7, 5, 9, 11, 13, 1, 2 }
local DASH_TYPES = 5

local LINE_OPTIONS = { "title", "xlabel", "ylabel", "logx", "logy", "xrange", "x", "y", "font", "size" }
local SERIES_OPTIONS = { "x", "y", "title" }
local SERIES_FORM = "plot.line{ {x=xs, y=ys1}, {x=xs, y=ys2} }"

-- plot.line{ {x=, y=, title=}, ..., title=, xlabel=, ylabel=, logx=, logy=, xrange={lo, hi} } draws
-- one or more series (x defaults to 1..n); a table with y= at the top is one series. xrange fixes
-- the x axis (a curve redrawn as it grows keeps its axis).
function plot.line(spec)
    local fname = "plot.line"
    -- the values alone, as matplotlib's plot(ys) takes them: say how they go in
    if is_tensor(spec) or (type(spec) == "table" and type(spec[1]) == "number") then
        raise(fname .. ": give the values as y: plot.line{y = values} (several series: " .. SERIES_FORM .. ")")
    end
    if type(spec) ~= "table" then raise(fname .. ": expected a table of series, e.g. plot.line{ {x=xs, y=ys, title='a'} }") end
    display.check_keys(fname, spec, LINE_OPTIONS, true)
    local series = {}
    if spec.y ~= nil then
        if #spec > 0 then raise(fname .. ": give either y= or a list of series, not both; several series: " .. SERIES_FORM) end
        series[1] = spec
    else
        for i = 1, #spec do series[i] = spec[i] end
    end
    if #series == 0 then raise(fname .. ": no series given (each is {x=..., y=..., title=...})") end
    for k, s in ipairs(series) do
        if type(s) == "table" and s ~= spec then display.check_keys(fname .. ": series " .. k, s, SERIES_OPTIONS, false) end
    end
    local setting = projector(fname, spec)
    local commands = add_all({ BACKGROUND }, font_commands(setting))
    add_all(commands, {
        "set title " .. quote(spec.title or ""),
        "set xlabel " .. quote(spec.xlabel or ""),
        "set ylabel " .. quote(spec.ylabel or ""),
        "set key outside right top",   -- beside the plot: it never covers a line
        "set grid",
    })
    if spec.logx then commands[#commands + 1] = "set logscale x" end
    if spec.logy then commands[#commands + 1] = "set logscale y" end
    local xr = spec.xrange
    if xr ~= nil then
        if type(xr) ~= "table" or type(xr[1]) ~= "number" or type(xr[2]) ~= "number" or not (xr[1] < xr[2]) then
            raise(fname .. ": xrange must be {lo, hi} with lo < hi, e.g. xrange = {0, 100}")
        end
        commands[#commands + 1] = string.format("set xrange [%s:%s]", data_number(xr[1]), data_number(xr[2]))
    end
    local plots, notes = {}, {}
    for k, s in ipairs(series) do
        if type(s) ~= "table" then
            raise(string.format("%s: series %d is %s, not a table {x=, y=, title=}", fname, k, display.a_type(s)))
        end
        if s.y == nil then raise(string.format("%s: series %d has no y", fname, k)) end
        local y = vector_of(fname, "series " .. k .. " y", s.y,
            "; for several series give one table each: " .. SERIES_FORM)
        local x
        if s.x ~= nil then
            x = vector_of(fname, "series " .. k .. " x", s.x)
            if #x ~= #y then
                raise(string.format("%s: series %d has %s and %s", fname, k, display.count(#x, "x value"),
                    display.count(#y, "y value")))
            end
        else
            x = {}
            for i = 1, #y do x[i] = i end
        end
        for i = 1, #y do
            if spec.logx and not (x[i] > 0) then
                raise(string.format("%s: logx needs positive x, series %d has x[%d] = %s", fname, k, i, tostring(x[i])))
            end
            if spec.logy and not (y[i] > 0) then
                raise(string.format("%s: logy needs positive y, series %d has y[%d] = %s", fname, k, i, tostring(y[i])))
            end
        end
        local pairs_ = {}
        for i = 1, #y do pairs_[i] = { x[i], y[i] } end
        commands[#commands + 1] = datablock("$mha_line_" .. k, pairs_)
        local title = s.title or ("series " .. k)
        plots[#plots + 1] = string.format("$mha_line_%d using 1:2 with linespoints dt %d pt %d ps 0.6 lw 2 title %s",
            k, (k - 1) % DASH_TYPES + 1, POINT_TYPES[(k - 1) % #POINT_TYPES + 1], quote(title))
        notes[#notes + 1] = display.clean_label(title) .. " (" .. #y .. " points)"
    end
    commands[#commands + 1] = "plot " .. table.concat(plots, ", ")
    plot.current():draw(fname, {
        commands = commands,
        size = window_size(setting, { math.floor(800 * font_scale(setting)), math.floor(500 * font_scale(setting)) }),
        fallback = function()
            io.write(words().not_drawn, table.concat(notes, ", "), "\n")
        end,
    })
end

-- "set yrange [lo:hi]" from 0 to past the values by a tenth of their span, so that no bar touches
-- the border (gnuplot's autoscale ends the axis at the tallest bar when that falls on a tic).
local function bar_range(lo, hi)
    if lo == hi then return "set yrange [0:1]" end   -- all zero
    local room = 0.1 * (hi - lo)
    return string.format("set yrange [%s:%s]", data_number(lo < 0 and lo - room or 0),
        data_number(hi > 0 and hi + room or 0))
end

-- plot.bar(labels, values [, opts]) draws one bar per label; opts: title=, xlabel=, ylabel=.
function plot.bar(labels, values, opts)
    local fname = "plot.bar"
    opts = options_of(fname, opts, { "title", "xlabel", "ylabel", "font", "size" })
    local setting = projector(fname, opts)
    local v = vector_of(fname, "values", values)
    local names = display.label_list(fname, "labels", labels, #v, "value")
    local lo, hi = 0, 0
    for _, x in ipairs(v) do lo, hi = math.min(lo, x), math.max(hi, x) end
    local rows = {}
    for i, x in ipairs(v) do rows[i] = { i, x } end   -- bar i at x = i, counted from 1 as in mha
    local commands = add_all({ BACKGROUND }, font_commands(setting))
    add_all(commands, {
        "set title " .. quote(opts.title or ""),
        "set xlabel " .. quote(opts.xlabel or ""),
        "set ylabel " .. quote(opts.ylabel or ""),
        "set style fill solid 0.8 border -1",
        "set boxwidth 0.7",
        "set grid ytics",
        string.format("set xrange [0.4:%d.6]", #v),
        bar_range(lo, hi),
        tics_command("x", names),
        "set xtics scale 0",
        datablock("$mha_bar", rows),
        "plot $mha_bar using 1:2 with boxes lc rgb '#3b518b' notitle",
    })
    plot.current():draw(fname, {
        commands = commands,
        size = window_size(setting, { math.floor(math.max(480, 60 * #v + 160) * font_scale(setting)),
                                      math.floor(420 * font_scale(setting)) }),
        fallback = function()
            -- bars of "█" in the terminal, as long as the values are large
            local width = 0
            for _, n in ipairs(names) do width = math.max(width, term.width(n)) end
            local top = math.max(math.abs(lo), math.abs(hi))
            for i, n in ipairs(names) do
                local cells = top > 0 and math.floor(40 * math.abs(v[i]) / top + 0.5) or 0
                io.write(n, string.rep(" ", width - term.width(n)), " ", string.rep("█", cells), " ",
                    string.format("%.4g", v[i]), "\n")
            end
        end,
    })
end

-- Figure methods mirror the module functions, drawing on that figure.
for _, name in ipairs({ "heatmap", "heads", "line", "bar" }) do
    Figure[name] = function(self, ...) return figure.drawing_on(self, plot[name], ...) end
end

return plot
