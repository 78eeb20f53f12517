-- lua/show/figure.lua - module "mha.plot.figure": the figures of mha.plot and the gnuplot behind
-- each (terminals, quoting user text, running and saving a drawing); lua/show/plot.lua draws charts
-- on them.
--
-- A drawing is a list of gnuplot commands (its "script"), kept by the figure so that plot.save can
-- run it again on a file terminal. Data travels inline as datablocks; user text travels only inside
-- double-quoted gnuplot strings in which every ASCII character but letters, digits and harmless
-- punctuation is an octal escape, so gnuplot sees no quote, backslash, backquote, @ or $ to act on.
-- A file name never reaches gnuplot at all: it writes to a name made here, renamed afterwards.

local mha = require "mha.core"
local gnuplot = require "mha.gnuplot"
local display = require "mha.display"
local term = require "mha.term"
local raise = require "mha.raise"   -- errors at the user's line
local i18n = require "mha.i18n"     -- the words a plot adds itself (room plot)

local plot = {}   -- the module mha.plot: its figure functions here, the charts in lua/show/plot.lua

-- ---------------------------------------------------------------------------------------------
-- Text and numbers for gnuplot
-- ---------------------------------------------------------------------------------------------

-- A gnuplot string holding s as plain text: control characters (a newline would end the command)
-- become spaces; in a double-quoted string gnuplot turns \ooo into that byte, so every ASCII
-- character outside the set below is written that way. What gnuplot acts on before it parses a
-- string - a backquoted command, an @macro - and what ends or escapes a string (" ' \) thus never
-- appears as itself, and every text arrives intact: "'tis", "''", "a\"b" alike. Bytes from 128
-- (UTF-8) stay.
local function quote(s)
    s = tostring(s):gsub("%c", " ")
    return '"' .. s:gsub("[^%w %-_.,:;/()+=<>?!#*%[%]{}|~^&\128-\255]", function(c)
        return string.format("\\%03o", c:byte())
    end) .. '"'
end

-- A tic label is also a printf format to gnuplot ("%s" would print a number): % is doubled too.
local function quote_tic(s)
    return quote((tostring(s):gsub("%%", "%%%%")))
end

-- A number as data: gnuplot reads "NaN" as a missing value, which an image leaves blank. Infinite
-- values (masked scores) are left blank the same way.
local function data_number(v)
    if v ~= v or v == math.huge or v == -math.huge then return "NaN" end
    return string.format("%.9g", v)
end

-- ---------------------------------------------------------------------------------------------
-- Inputs: tensors or Lua tables, as plain Lua arrays
-- ---------------------------------------------------------------------------------------------

local is_tensor = mha.is_tensor

local shape_str = display.shape_str   -- "(2,3)", as the core writes shapes

-- (values as nested Lua arrays, shape) of a tensor or nested table of numbers, checked to have
-- `ndim` dimensions. Booleans count as 1 and 0.
local function array_of(fname, what, v, ndim, hint)
    local data, shape
    if is_tensor(v) then
        shape = v:shape()
        -- an empty tensor is refused below before any element is read: (1e7,0) is 1e7 empty rows
        data = v:numel() > 0 and v:totable() or {}
    elseif type(v) == "table" then
        data, shape = v, {}
        local x = v
        while type(x) == "table" do
            shape[#shape + 1] = #x
            x = x[1]
        end
    else
        raise(string.format("%s: %s must be a tensor or a table of numbers, got %s", fname, what, display.a_type(v)))
    end
    if #shape ~= ndim then
        raise(string.format("%s: %s must have %s, got shape %s%s", fname, what, display.count(ndim, "dimension"),
            shape_str(shape), hint or ""))
    end
    for d = 1, ndim do
        if shape[d] == 0 then raise(string.format("%s: %s is empty, shape %s", fname, what, shape_str(shape))) end
    end
    -- walk it once: rectangular, numbers only
    local function check(x, d, where)
        if d > ndim then
            if type(x) == "boolean" then return x and 1 or 0 end
            if type(x) ~= "number" then
                raise(string.format("%s: %s%s is %s, not a number", fname, what, where, display.a_type(x)))
            end
            return x
        end
        if type(x) ~= "table" or #x ~= shape[d] then
            raise(string.format("%s: %s%s should hold %s (shape %s)", fname, what, where,
                display.count(shape[d], "entry", "entries"), shape_str(shape)))
        end
        local out = {}
        for i = 1, shape[d] do out[i] = check(x[i], d + 1, where .. "[" .. i .. "]") end
        return out
    end
    return check(data, 1, ""), shape
end

-- opts (nil or a table) checked to hold only the named keys; returns opts or {}.
local function options_of(fname, opts, valid, allow_list)
    if opts == nil then return {} end
    if type(opts) ~= "table" then raise(string.format("%s: options must be a table, got %s", fname, type(opts))) end
    display.check_keys(fname, opts, valid, allow_list)
    return opts
end

-- ---------------------------------------------------------------------------------------------
-- Terminals: probed once per process
-- ---------------------------------------------------------------------------------------------

local NOT_FOUND = i18n.t("plot.not_found", "en")   -- the error raised is English, as every error is

-- plot.lang: a function returning "en" or "zh", the language of the words a plot adds itself (panel
-- titles, axis labels). The lesson runner, which holds the language, sets it; else English.
plot.lang = nil
local function words()
    local lang = type(plot.lang) == "function" and plot.lang() or "en"
    return i18n.words(lang).plot
end

local gnuplot_missing = false   -- set once the first spawn finds no gnuplot; said once
local terminals_cache           -- set of terminal names, from the first probe
local chosen_terminal           -- plot.terminal(name); nil means the automatic choice

-- Starts a gnuplot, or returns nil (saying once that it is not installed). $MHA_GNUPLOT names
-- another program to run instead (the tests use it to tell their gnuplot processes from any other).
local function spawn()
    if gnuplot_missing then return nil end
    local proc, err, reason = gnuplot.spawn(os.getenv("MHA_GNUPLOT") or "gnuplot")
    if proc then return proc end
    if reason == "notfound" then
        gnuplot_missing = true
        io.stderr:write(words().not_found, "\n")
        return nil
    end
    raise("plot: " .. err)
end

-- Every line figure.lua has gnuplot print ends in END (gnuplot's "\037"): gnuplot writes a line's
-- newline apart from its text, and another program on its stderr (the Qt window process) may land a
-- line of its own between the two.
local END = "\031"
-- The gnuplot command that prints string expression expr with END after it.
local function print_ended(expr) return 'print sprintf("%s\\037", ' .. expr .. ')\n' end
local sync_count = 0
local function next_marker()
    sync_count = sync_count + 1
    return "mha-sync-" .. sync_count
end

-- The terminals this gnuplot has (GPVAL_TERMINALS), probed once per process; nil without gnuplot.
local function terminals()
    if terminals_cache then return terminals_cache end
    local proc = spawn()
    if not proc then return nil end
    local marker = next_marker()
    local set = {}
    if proc:send(print_ended("GPVAL_TERMINALS") .. print_ended("'" .. marker .. "'")) then
        local _, err, status = proc:sync(marker .. END, 10)
        if status == "ok" then
            for name in err:match("[^" .. END .. "]*"):gmatch("%S+") do set[name] = true end
        end
    end
    proc:close()
    terminals_cache = set
    return set
end
plot.terminals = function()
    local set, list = terminals(), {}
    for name in pairs(set or {}) do list[#list + 1] = name end
    table.sort(list)
    return list
end

local WINDOWED = { "qt", "wxt", "x11" }
local WINDOW_TERMINALS = { qt = true, wxt = true, x11 = true }
local ALIASES = { sixel = "sixelgd", none = "none", window = "window" }
-- The terminals a figure can draw on, beside the pseudo-names "none" (draw nothing) and "window"
-- (the first windowed one there is). gnuplot has more (png, lua, tkcanvas, xterm...), but those
-- write files or code, or take other options: screen_terminal_command could not drive them.
local SCREEN = { dumb = true, qt = true, wxt = true, x11 = true, sixelgd = true }

-- The names plot.terminal and $MHA_PLOT_TERM accept here: the screen terminals this gnuplot has.
local function screen_names(set)
    local names = { "none", "window" }
    for name in pairs(SCREEN) do
        if set[name] or name == "dumb" then names[#names + 1] = name end
    end
    table.sort(names)
    return names
end

-- nil when name (after ALIASES) is a terminal a figure can draw on here, else why not.
local function unusable(name, set)
    if name == "none" or name == "window" or name == "dumb" or (SCREEN[name] and set[name]) then return nil end
    local choices = " (one of: " .. table.concat(screen_names(set), ", ") .. ")"
    if not set[name] then return "gnuplot has no terminal '" .. display.clean_label(name) .. "'" .. choices end
    return "gnuplot's terminal '" .. name .. "' does not draw on screen (files are plot.save's)" .. choices
end

-- The terminal a figure draws on: plot.terminal(name), else $MHA_PLOT_TERM, else a window when
-- DISPLAY is set and gnuplot has a windowed terminal, else text in this terminal (dumb).
-- A $MHA_PLOT_TERM that cannot be used is said once, and the automatic choice is made.
local warned_terminal = {}
local function resolve_terminal(name)
    local set = terminals() or {}
    name = name or chosen_terminal or os.getenv("MHA_PLOT_TERM")
    if name == "" then name = nil end
    if name then
        name = ALIASES[name] or name
        local why = unusable(name, set)
        if not why and name ~= "window" then return name end
        if why and not warned_terminal[name] then
            warned_terminal[name] = true
            io.stderr:write("plot: MHA_PLOT_TERM: ", why, "; choosing one\n")
        end
    end
    if os.getenv("DISPLAY") and os.getenv("DISPLAY") ~= "" then
        for _, w in ipairs(WINDOWED) do
            if set[w] then return w end
        end
    end
    return "dumb"
end

-- plot.terminal([name]) -> the terminal new drawings go to; with a name ("dumb", "qt", "sixelgd",
-- "none", ...) sets it for every figure.
function plot.terminal(name)
    if name ~= nil then
        if type(name) ~= "string" or not name:match("^[%w_]+$") then
            raise("plot.terminal: expected a terminal name such as 'dumb', 'qt', 'sixelgd' or 'none'")
        end
        name = ALIASES[name] or name
        local why = unusable(name, terminals() or SCREEN)   -- without gnuplot: any screen name
        if why then raise("plot.terminal: " .. why) end
        chosen_terminal = name
    end
    return resolve_terminal()
end

-- plot.text_screen: the screen a text drawing lands on, handed over by whoever pages the output
-- (the lesson runner): {rows_left = function() -> the rows left before the prompt, or nil,
-- together = function(fn) -> runs fn, keeping its output on one screen}. nil: the terminal as it
-- is.
plot.text_screen = nil

-- A text chart no shorter than this stays readable: a title, the axes, tics and about 8 rows of
-- data.
local TEXT_MIN_ROWS = 16

-- The rows of a text chart: about 3/10 of the width (24 at 80 columns), as many as the screen has
-- left under what the step printed, but never fewer than TEXT_MIN_ROWS
-- (with fewer left, the chart is drawn on the next screen: see Figure:draw) nor more than the
-- terminal has.
local function text_rows(columns)
    local rows = math.max(TEXT_MIN_ROWS, math.min(40, columns * 3 // 10))
    local left = plot.text_screen and plot.text_screen.rows_left()
    if left and left >= TEXT_MIN_ROWS then rows = math.min(rows, left) end
    if term.isatty(io.stdout) then rows = math.max(TEXT_MIN_ROWS, math.min(rows, term.rows(io.stdout) - 1)) end
    return rows
end

-- The `set terminal` command for drawing on screen. Text terminals get the size of this one.
local function screen_terminal_command(name, fig, size)
    if name == "none" then return "set terminal unknown" end
    if name == "dumb" then
        local columns = term.isatty(io.stdout) and math.min(term.columns(io.stdout), 200) or 80
        return string.format("set terminal dumb size %d,%d nofeed noenhanced %s", columns, text_rows(columns),
            term.colour(io.stdout) and "ansi" or "mono")
    end
    if name == "sixelgd" then
        return string.format("set terminal sixelgd size %d,%d truecolor noenhanced", size[1], size[2])
    end
    return string.format("set terminal %s %d size %d,%d noenhanced title %s", name, fig.number,
        size[1], size[2], quote("mha-repl figure " .. fig.number))
end

-- ---------------------------------------------------------------------------------------------
-- Wide characters on the dumb terminal
-- ---------------------------------------------------------------------------------------------

-- The dumb terminal gives every character one cell, but a wide (CJK) character takes two on screen,
-- so a line holding one comes out too long and the legend's box breaks. So on that terminal each
-- quoted text is padded with one space per extra cell, which makes gnuplot lay it out at its real
-- width, and the padding is taken out of the drawing afterwards.

-- The text a quoted gnuplot string (made by quote) shows: \ooo is that byte; in a tic label, %% is
-- a percent sign.
local function shown_text(body, is_tic)
    body = body:gsub("\\(%d%d%d)", function(o) return string.char(tonumber(o, 8)) end)
    if is_tic then body = body:gsub("%%%%", "%%") end
    return body
end

-- cmd with the texts that hold wide characters padded; appends {text = shown, pad = cells} to
-- fixes. pad < 0 (zero-width marks: fewer cells than characters) leaves cmd alone and adds cells
-- afterwards. Only quote() makes double-quoted strings, and their bodies hold no raw " or \.
local function pad_wide_texts(cmd, fixes)
    local is_tic = cmd:match("^set [xy]tics") ~= nil
    local parts, pos = {}, 1
    while true do
        local open = cmd:find('"', pos, true)
        if not open then break end
        local close = cmd:find('"', open + 1, true)
        if not close then break end
        local body = cmd:sub(open + 1, close - 1)
        local shown = shown_text(body, is_tic)
        local chars = shown:find("[\128-\255]") and utf8.len(shown)
        local pad = chars and term.width(shown) - chars or 0
        if pad ~= 0 then fixes[#fixes + 1] = { text = shown, pad = pad } end
        parts[#parts + 1] = cmd:sub(pos, open) .. body .. string.rep(" ", math.max(pad, 0)) .. '"'
        pos = close + 1
    end
    parts[#parts + 1] = cmd:sub(pos)
    return table.concat(parts)
end

-- A dumb drawing without the rows of nothing gnuplot leaves above and below it (rows of spaces, its
-- form feed, and on the ansi terminal colour escapes alone), but one empty row above, to part it
-- from the text: never more rows than gnuplot was given.
local function trim_blank_rows(out)
    local rows = {}
    for row in out:gsub("\f", ""):gmatch("([^\n]*)\n?") do rows[#rows + 1] = row end
    local function blank(row) return row and row:gsub("\27%[[%d;]*m", ""):match("^ *$") ~= nil end
    local first, last = 1, #rows
    while first <= last and blank(rows[first]) do first = first + 1 end
    while last >= first and blank(rows[last]) do last = last - 1 end
    if first > last then return "" end
    return (first > 1 and "\n" or "") .. table.concat(rows, "\n", first, last) .. "\n"
end

local function literal(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) end

-- gnuplot's drawing with the padding of pad_wide_texts taken out again (or, for pad < 0, put in).
local function unpad_wide_texts(out, fixes)
    for _, fix in ipairs(fixes) do
        local drawn = fix.text .. string.rep(" ", math.max(fix.pad, 0))
        local shown = fix.text .. string.rep(" ", math.max(-fix.pad, 0))
        out = out:gsub(literal(drawn), (shown:gsub("%%", "%%%%")))
    end
    return out
end

-- ---------------------------------------------------------------------------------------------
-- Figures
-- ---------------------------------------------------------------------------------------------

local Figure = {}
Figure.__index = Figure
Figure.__name = "mha.plot.Figure"

local figure_count = 0
local open_figures = setmetatable({}, { __mode = "k" })  -- for plot.closeall; never keeps one alive
-- The figures showing a window, held here so that the collector never closes a window: it stays
-- until fig:close(), plot.close, plot.closeall (the REPL's :close), the window's gnuplot ending, or
-- the REPL.
local windows = {}
local current

-- plot.figure([{current = false}]) -> a new figure (its own gnuplot, started at its first drawing),
-- now the current one; with current = false a figure of its own that plot.heatmap and the others
-- leave alone (mha.train's curves: the next plot.* opens a window of its own instead of drawing
-- over them).
function plot.figure(opts)
    opts = options_of("plot.figure", opts, { "current" })
    if opts.current ~= nil and type(opts.current) ~= "boolean" then
        raise("plot.figure: current must be true or false, got " .. display.a_type(opts.current))
    end
    figure_count = figure_count + 1
    local fig = setmetatable({ number = figure_count }, Figure)
    open_figures[fig] = true
    if opts.current == false then fig.aside = true else current = fig end
    return fig
end

-- plot.current() -> the current figure (made on first use)
function plot.current()
    return current or plot.figure()
end

-- "figure 1 (gnuplot, pid 1234)", or "figure 1 (no gnuplot running)" before its first drawing
function Figure:__tostring()
    local pid = self.proc and self.proc:pid()
    return string.format("figure %d (%s)", self.number, pid and ("gnuplot, pid " .. pid) or "no gnuplot running")
end

-- fig:close(): ends its gnuplot and reaps it. The figure can draw again (with a new gnuplot).
function Figure:close()
    if self.proc then
        self.proc:close()
        self.proc = nil
    end
    windows[self] = nil
    if current == self then current = nil end
end
Figure.__close = Figure.close

-- plot.close([fig]): closes fig, or the current figure. plot.closeall(): every figure.
function plot.close(fig)
    fig = fig or current
    if fig then fig:close() end
end

function plot.closeall()
    for fig in pairs(open_figures) do fig:close() end
end

-- Live gnuplots. A figure nobody holds any more keeps its gnuplot until the collector frees it, so
-- a loop making figures would pile up processes meanwhile. Before a figure starts one: from
-- LIVE_SOFT running, a full collection closes those of figures that are gone; from LIVE_MAX still
-- running, the one drawn on longest ago is closed (said on stderr; that figure draws again with a
-- new gnuplot).
local LIVE_SOFT, LIVE_MAX = 4, 16
local draw_count = 0   -- stamps fig.used, the order figures last drew in

-- How many figures have a gnuplot (a function of its own, so no stack slot of the caller keeps a
-- figure alive through the collection that follows).
local function live_count()
    local n = 0
    for fig in pairs(open_figures) do
        if fig.proc then n = n + 1 end
    end
    return n
end

local function least_recent_live()
    local oldest
    for fig in pairs(open_figures) do
        if fig.proc and (oldest == nil or fig.used < oldest.used) then oldest = fig end
    end
    return oldest
end

local function make_room_for_a_gnuplot()
    if live_count() < LIVE_SOFT then return end
    collectgarbage("collect")
    while live_count() >= LIVE_MAX do
        local fig = least_recent_live()
        io.stderr:write(string.format("plot: closing figure %d's gnuplot: at most %d run at once "
            .. "(plot.close() the figures you are done with)\n", fig.number, LIVE_MAX))
        fig:close()
    end
end

-- Cleans gnuplot's message: its "line 0:" prefix, the caret lines, blank lines.
local function clean_message(text)
    local lines = {}
    for line in text:gmatch("[^\n]+") do
        line = line:gsub("^%s+", ""):gsub("%s+$", ""):gsub("^line %d+: ", "")
        -- gnuplot echoes the failing command and puts a caret under it: the error quotes it anyway
        if line ~= "" and not line:match("^%^$") and not line:match("^gnuplot> ") then
            lines[#lines + 1] = line
        end
    end
    return table.concat(lines, "; ")
end

-- The first line of a command, shortened, to name it in an error.
local function command_title(cmd)
    local first = cmd:match("^[^\n]*")
    if #first > 100 then first = first:sub(1, 97) .. "..." end
    return first
end

-- After each command gnuplot reports on itself: `print` of its error number and message
-- (GPVAL_ERRNO, GPVAL_ERRMSG, then `reset errors`), then `print 'marker-i'`. So a command failed
-- exactly when gnuplot says so, and other text on its stderr - a library it loaded talking
-- (Qt's "QStandardPaths: XDG_RUNTIME_DIR not set", fontconfig) - never fails a drawing that was
-- made.
local STATUS = "mha-status"
local function status_command()
    return print_ended("sprintf('" .. STATUS .. " %d %s', GPVAL_ERRNO, GPVAL_ERRMSG)") .. "reset errors\n"
end

-- Runs commands on the figure's gnuplot and waits until it has done them all. Each command is
-- followed by its status and `print 'marker-i'`, so whatever gnuplot says between two markers is
-- about the command before the second one; errors become one Lua error quoting the command,
-- warnings go to stderr, anything else on stderr is dropped. What gnuplot writes on stdout
-- (a text or sixel drawing) goes to io.write, through fix_output(text) when given. Warnings that
-- contain one of the strings in quiet_warnings are expected and not shown.
-- Returns false when gnuplot is not installed.
function Figure:run(fname, commands, quiet_warnings, discard_output, fix_output)
    local base, ok, err, out, errtext, status
    -- a gnuplot that died since the last drawing (killed, or its window closed) is replaced once
    for attempt = 1, 2 do
        if self.proc and not self.proc:running() then
            self.proc:close()
            self.proc = nil
            windows[self] = nil
        end
        draw_count = draw_count + 1
        self.used = draw_count
        if not self.proc then
            make_room_for_a_gnuplot()
            self.proc = spawn()
            if not self.proc then return false end
        end
        base = next_marker()
        local parts = {}
        for i, cmd in ipairs(commands) do
            parts[#parts + 1] = cmd .. "\n" .. status_command() .. print_ended("'" .. base .. "-" .. i .. "'")
        end
        ok, err = self.proc:send(table.concat(parts), 30)
        out, errtext, status = "", "", "ok"
        if ok then
            out, errtext, status = self.proc:sync(base .. "-" .. #commands .. END, 60)
        end
        local died = (not ok and err:find("exited", 1, true)) or status == "exited"
        if not (died and attempt == 1 and not errtext:find(base, 1, true)) then break end
        self.proc:close()
        self.proc = nil
    end
    if out ~= "" and not discard_output then
        if fix_output then out = fix_output(out) end
        io.write(out, out:sub(-1) == "\n" and "" or "\n")
        io.output():flush()
    end
    if not ok or status ~= "ok" then
        local why = not ok and err or ({
            exited = "gnuplot exited unexpectedly",
            timeout = "gnuplot did not answer within 60 s",
            interrupted = "interrupted",
        })[status]
        self.proc:close()   -- its state is unknown now; the next drawing starts a fresh one
        self.proc = nil
        local said = clean_message((errtext:gsub("mha%-sync%-[%d%-]+" .. END .. "?", ""):gsub(STATUS:gsub("%-", "%%-") .. "[^\n]*", "")))
        raise(string.format("%s: %s%s", fname, why, said ~= "" and (" (gnuplot said: " .. said .. ")") or ""))
    end

    -- split what gnuplot said by command: its status line, and its warnings
    local failed, warned, index = {}, {}, 1
    for line in (errtext .. "\n"):gmatch("([^\n]*)\n") do
        local n = line:match("^" .. base:gsub("%-", "%%-") .. "%-(%d+)" .. END)
        local errno, message = line:match("^" .. STATUS:gsub("%-", "%%-") .. " (%-?%d+) ?([^" .. END .. "]*)" .. END)
        if n then
            index = tonumber(n) + 1
        elseif errno then
            if errno ~= "0" then failed[index] = message ~= "" and message or "error " .. errno end
        elseif line:lower():find("warning:", 1, true) and not line:match("^mha%-sync%-") then
            warned[index] = (warned[index] or "") .. line .. "\n"
        end
    end
    local errors = {}
    for i = 1, #commands do
        local text = warned[i] and clean_message(warned[i]) or ""
        if text ~= "" then
            local hushed = false
            for _, w in ipairs(quiet_warnings) do
                if text:find(w, 1, true) then hushed = true end
            end
            if not hushed then
                io.stderr:write(fname, ": gnuplot ", text, " (in: ", command_title(commands[i]), ")\n")
            end
        end
        if failed[i] then
            errors[#errors + 1] = string.format("gnuplot: %s (in: %s)", failed[i], command_title(commands[i]))
        end
    end
    if #errors > 0 then raise(fname .. ": " .. table.concat(errors, "; ")) end
    return true
end

-- Draws a script on the figure's screen terminal. A script is
--   { commands = {...}, size = {w, h} (pixels), image = true when it draws matrices,
--     fallback = function() ... end (a text rendering: mha.heat or a note),
--     warning = text to hush }
-- On the dumb terminal an image would be blank, so the script is checked on the `unknown` terminal
-- and the text rendering is printed instead. Without gnuplot, only the text rendering is printed.
-- plot.on_drawing(fig), when set, is called as a drawing starts and may return a function to call
-- once it is shown (in a window, or printed as text): the REPL's session recording
-- (mha.notebook.record) keeps the drawing in place of the text it printed.
function Figure:draw(fname, script)
    self.script = script
    if plot.on_draw then plot.on_draw(self) end   -- the Jupyter kernel keeps the figure for the
                                                  -- cell's outputs
    local shown = plot.on_drawing and plot.on_drawing(self)
    local name = resolve_terminal(self.terminal)
    local text_instead = (name == "dumb" and script.image)
    local first = text_instead and "set terminal unknown" or screen_terminal_command(name, self, script.size)
    local commands = { first, "unset multiplot", "reset" }
    local fixes   -- on the dumb terminal: the wide texts to take the padding out of
    if name == "dumb" and not text_instead then
        fixes = {}
        commands[#commands + 1] = "set encoding utf8"   -- one cell per character, not per byte
        for _, c in ipairs(script.commands) do
            -- the dumb terminal cannot turn text, so it leaves a y label out: it goes above the
            -- axis
            local label = c:match('^set ylabel (".+")$')
            if label then
                commands[#commands + 1] = "unset ylabel"
                c = "set label 101 " .. label .. " at graph 0, graph 1 offset 0,1 center"
            end
            commands[#commands + 1] = pad_wide_texts(c, fixes)
        end
    else
        for _, c in ipairs(script.commands) do commands[#commands + 1] = c end
    end
    -- a text drawing loses its blank top and bottom rows, and stays on one screen of a paged step
    local function text_drawing(out) return trim_blank_rows(unpad_wide_texts(out, fixes)) end
    local function draw()
        windows[self] = nil   -- until this drawing is shown in a window
        local drawn = self:run(fname, commands, { "Plotting with an 'unknown' terminal", script.warning }, false,
            fixes and text_drawing)
        windows[self] = (WINDOW_TERMINALS[name] and self.proc) and true or nil
        if (not drawn or text_instead) and script.fallback then script.fallback() end
    end
    if name ~= "sixelgd" and plot.text_screen then plot.text_screen.together(draw) else draw() end
    if shown then shown() end
end

local FILE_TERMINALS = {
    png = function(w, h) return string.format("set terminal pngcairo size %d,%d noenhanced font 'sans,10'", w, h) end,
    svg = function(w, h) return string.format("set terminal svg size %d,%d dynamic noenhanced font 'sans,10'", w, h) end,
    -- pdfcairo halves every font by default (fontscale 0.5): at 1 a PDF reads as the PNG of the
    -- same size
    pdf = function(w, h) return string.format("set terminal pdfcairo size %.2fin,%.2fin noenhanced font 'sans,10' fontscale 1", w / 100, h / 100) end,
}

-- The folder part of a path ("." for a bare name, "/" for a file at the root).
local function folder_of(path)
    local dir = path:match("^(.*)/[^/]*$")
    if dir == nil then return "." end
    return dir ~= "" and dir or "/"
end

-- fig:save(path [, {width=, height=}]) writes the figure's last drawing to a .png, .svg or .pdf
-- file; the file is complete, closed and on disk when it returns, or path keeps its old file and
-- the error says why (a full disk included). Returns path.
-- gnuplot writes to a new file of our naming in the same folder (mha.gnuplot.tempfile), which is
-- then renamed to path: the user's name never reaches `set output`, where a leading '|' would run a
-- command.
function Figure:save(path, opts)
    opts = options_of("plot.save", opts, { "width", "height" })
    if type(path) ~= "string" or path == "" then
        raise("plot.save: expected a file name ending in .png, .svg or .pdf, got " .. type(path))
    end
    -- (so that a name in a message below is shown as it is)
    if path:find("%c") then raise("plot.save: the file name contains a control character") end
    local ext = (path:match("%.(%w+)$") or ""):lower()
    if not FILE_TERMINALS[ext] then
        raise("plot.save: '" .. path .. "': the name must end in .png, .svg or .pdf")
    end
    if not self.script then raise("plot.save: figure " .. self.number .. " is empty: draw something first") end
    if gnuplot_missing then raise(NOT_FOUND) end
    local w = opts.width or self.script.size[1]
    local h = opts.height or self.script.size[2]
    if math.type(w) ~= "integer" or math.type(h) ~= "integer" or w < 50 or h < 50 or w > 10000 or h > 10000 then
        raise("plot.save: width and height must be integers from 50 to 10000 pixels")
    end
    local dir = folder_of(path)
    local temp, why = gnuplot.tempfile(dir, "." .. ext)
    if not temp then
        raise("plot.save: cannot write '" .. path .. "': folder '" .. dir
            .. "': " .. why)
    end
    local ok, err = pcall(function()
        -- first the file alone: if gnuplot cannot open it, nothing is drawn (it would go to stdout)
        if not self:run("plot.save", { FILE_TERMINALS[ext](w, h), "set output " .. quote(temp) }, {}, true) then
            raise(NOT_FOUND)
        end
        local commands = { "unset multiplot", "reset" }
        for _, c in ipairs(self.script.commands) do commands[#commands + 1] = c end
        commands[#commands + 1] = "unset output"   -- closes the file
        self:run("plot.save", commands, { self.script.warning }, true)
        -- only a whole file replaces path: a full disk cuts gnuplot's file short without a word
        local moved, why = gnuplot.commit(temp, path, ext)
        if not moved then
            local old = io.open(path, "rb")
            if old then old:close() end
            raise("plot.save: cannot write '" .. path .. "': " .. why
                .. (old and " (the old file is kept as it was)" or ""))
        end
    end)
    if not ok then
        os.remove(temp)
        error(err, 0)
    end
    return path
end

-- plot.render(script, path): a drawing's script (fig.script, which a notebook export keeps) saved
-- to a .png or .svg file as fig:save saves it, by a gnuplot of its own that ends when the file is
-- written.
function plot.render(script, path)
    local fig <close> = setmetatable({ number = 0, script = script }, Figure)
    return fig:save(path)
end

-- plot.save(path [, opts]): saves the current figure.
function plot.save(path, opts)
    if not current then raise("plot.save: no figure: draw something first") end
    return current:save(path, opts)
end

-- Runs draw(...) with fig as the current figure (fig:heatmap(...) and the other figure methods),
-- the current figure restored afterwards (fig stays current when there was none, unless it was made
-- aside: plot.figure{current = false}); an error passes through as it was raised.
local function drawing_on(fig, draw, ...)
    local saved = current
    current = fig
    local ok, err = pcall(draw, ...)
    current = saved or (not fig.aside and fig or nil)
    if not ok then error(err, 0) end
end

-- What lua/show/plot.lua needs to draw its charts; plot is the module table it completes and
-- returns.
return {
    plot = plot, Figure = Figure, drawing_on = drawing_on, words = words,
    quote = quote, quote_tic = quote_tic, data_number = data_number, array_of = array_of, options_of = options_of,
}
