-- lua/show/plot.lua - module "mha.plot" (the global `plot` in the REPL): attention heat maps, head grids,
-- line and bar charts, drawn by one long-lived gnuplot per figure driven through a pipe (mha.gnuplot).
--
-- A drawing is a list of gnuplot commands (its "script"), kept by the figure so that plot.save can run
-- it again on a file terminal. Data travels inline as datablocks; user text travels only inside
-- double-quoted gnuplot strings in which every ASCII character but letters, digits and harmless
-- punctuation is an octal escape, so gnuplot sees no quote, backslash, backquote, @ or $ to act on.
-- A file name never reaches gnuplot at all: it writes to a name made here, renamed afterwards.

local mha = require "mha"
local gnuplot = require "mha.gnuplot"
local display = require "mha.display"
local term = require "mha.term"

local plot = {}

-- ---------------------------------------------------------------------------------------------
-- Text and numbers for gnuplot
-- ---------------------------------------------------------------------------------------------

-- A gnuplot string holding s as plain text: control characters (a newline would end the command)
-- become spaces; in a double-quoted string gnuplot turns \ooo into that byte, so every ASCII character
-- outside the set below is written that way. What gnuplot acts on before it parses a string - a
-- backquoted command, an @macro - and what ends or escapes a string (" ' \) thus never appears as
-- itself, and every text arrives intact: "'tis", "''", "a\"b" alike. Bytes from 128 (UTF-8) stay.
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
        error(string.format("%s: %s must be a tensor or a table of numbers, got %s", fname, what, display.a_type(v)), 3)
    end
    if #shape ~= ndim then
        error(string.format("%s: %s must have %s, got shape %s%s", fname, what, display.count(ndim, "dimension"),
            shape_str(shape), hint or ""), 3)
    end
    for d = 1, ndim do
        if shape[d] == 0 then error(string.format("%s: %s is empty, shape %s", fname, what, shape_str(shape)), 3) end
    end
    -- walk it once: rectangular, numbers only
    local function check(x, d, where)
        if d > ndim then
            if type(x) == "boolean" then return x and 1 or 0 end
            if type(x) ~= "number" then
                error(string.format("%s: %s%s is %s, not a number", fname, what, where, display.a_type(x)), 0)
            end
            return x
        end
        if type(x) ~= "table" or #x ~= shape[d] then
            error(string.format("%s: %s%s should hold %s (shape %s)", fname, what, where,
                display.count(shape[d], "entry", "entries"), shape_str(shape)), 0)
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
    -- level 3: options_of, then plot.*, then the user's line
    if type(opts) ~= "table" then error(string.format("%s: options must be a table, got %s", fname, type(opts)), 3) end
    display.check_keys(fname, opts, valid, allow_list, 3)
    return opts
end

-- ---------------------------------------------------------------------------------------------
-- Terminals: probed once per process
-- ---------------------------------------------------------------------------------------------

local NOT_FOUND = "plot: gnuplot not found; install the Debian package gnuplot-nox"
local words   -- the words of the lesson's language (defined with the projector settings, below)
local gnuplot_missing = false   -- set once the first spawn finds no gnuplot; said once
local terminals_cache           -- set of terminal names, from the first probe
local chosen_terminal           -- plot.terminal(name); nil means the automatic choice

-- Starts a gnuplot, or returns nil (saying once that it is not installed). $MHA_GNUPLOT names another
-- program to run instead (the tests use it to tell their gnuplot processes from any other).
local function spawn()
    if gnuplot_missing then return nil end
    local proc, err, reason = gnuplot.spawn(os.getenv("MHA_GNUPLOT") or "gnuplot")
    if proc then return proc end
    if reason == "notfound" then
        gnuplot_missing = true
        io.stderr:write(words().not_found, "\n")
        return nil
    end
    error("plot: " .. err, 0)
end

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
    if proc:send("print GPVAL_TERMINALS\nprint '" .. marker .. "'\n") then
        local _, err, status = proc:sync(marker, 10)
        if status == "ok" then
            for name in err:gmatch("%S+") do set[name] = true end
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
local ALIASES = { sixel = "sixelgd", none = "none", window = "window" }
-- The terminals a figure can draw on, beside the pseudo-names "none" (draw nothing) and "window" (the
-- first windowed one there is). gnuplot has more (png, lua, tkcanvas, xterm...), but those write files
-- or code, or take other options: screen_terminal_command could not drive them.
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
            error("plot.terminal: expected a terminal name such as 'dumb', 'qt', 'sixelgd' or 'none'", 2)
        end
        name = ALIASES[name] or name
        local why = unusable(name, terminals() or SCREEN)   -- without gnuplot: any screen name
        if why then error("plot.terminal: " .. why, 2) end
        chosen_terminal = name
    end
    return resolve_terminal()
end

-- The `set terminal` command for drawing on screen. Text terminals get the size of this one.
local function screen_terminal_command(name, fig, size)
    if name == "none" then return "set terminal unknown" end
    if name == "dumb" then
        local columns = term.isatty(io.stdout) and math.min(term.columns(io.stdout), 200) or 80
        local rows = math.max(15, math.min(40, columns * 3 // 10))
        return string.format("set terminal dumb size %d,%d nofeed noenhanced %s", columns, rows,
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

-- The dumb terminal gives every character one cell, but a wide (CJK) character takes two on screen, so
-- a line holding one comes out too long and the legend's box breaks. So on that terminal each quoted
-- text is padded with one space per extra cell, which makes gnuplot lay it out at its real width,
-- and the padding is taken out of the drawing afterwards.

-- The text a quoted gnuplot string (made by quote) shows: \ooo is that byte; in a tic label, %% is a
-- percent sign.
local function shown_text(body, is_tic)
    body = body:gsub("\\(%d%d%d)", function(o) return string.char(tonumber(o, 8)) end)
    if is_tic then body = body:gsub("%%%%", "%%") end
    return body
end

-- cmd with the texts that hold wide characters padded; appends {text = shown, pad = cells} to fixes.
-- pad < 0 (zero-width marks: fewer cells than characters) leaves cmd alone and adds cells afterwards.
-- Only quote() makes double-quoted strings, and their bodies hold no raw " or \.
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
local open_figures = setmetatable({}, { __mode = "k" })   -- for plot.closeall; never keeps one alive
local current

-- plot.figure() -> a new figure (its own gnuplot, started at its first drawing), now the current one.
function plot.figure(opts)
    options_of("plot.figure", opts, {})
    figure_count = figure_count + 1
    local fig = setmetatable({ number = figure_count }, Figure)
    open_figures[fig] = true
    current = fig
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

-- Live gnuplots. A figure nobody holds any more keeps its gnuplot until the collector frees it, so a
-- loop making figures would pile up processes meanwhile. Before a figure starts one: from LIVE_SOFT
-- running, a full collection closes those of figures that are gone; from LIVE_MAX still running, the
-- one drawn on longest ago is closed (said on stderr; that figure draws again with a new gnuplot).
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

-- After each command gnuplot reports on itself: `print` of its error number and message (GPVAL_ERRNO,
-- GPVAL_ERRMSG, then `reset errors`), then `print 'marker-i'`. So a command failed exactly when gnuplot
-- says so, and other text on its stderr - a library it loaded talking (Qt's "QStandardPaths:
-- XDG_RUNTIME_DIR not set", fontconfig) - never fails a drawing that was made.
local STATUS = "mha-status"
local function status_command()
    return "print sprintf('" .. STATUS .. " %d %s', GPVAL_ERRNO, GPVAL_ERRMSG)\nreset errors\n"
end

-- Runs commands on the figure's gnuplot and waits until it has done them all. Each command is
-- followed by its status and `print 'marker-i'`, so whatever gnuplot says between two markers is about
-- the command before the second one; errors become one Lua error quoting the command, warnings go to
-- stderr, anything else on stderr is dropped. What gnuplot writes on stdout (a text or sixel drawing)
-- goes to io.write, through fix_output(text) when given. Warnings that contain one of the strings in
-- quiet_warnings are expected and not shown.
-- Returns false when gnuplot is not installed.
function Figure:run(fname, commands, quiet_warnings, discard_output, fix_output)
    local base, ok, err, out, errtext, status
    -- a gnuplot that died since the last drawing (killed, or its window closed) is replaced once
    for attempt = 1, 2 do
        if self.proc and not self.proc:running() then
            self.proc:close()
            self.proc = nil
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
            parts[#parts + 1] = cmd .. "\n" .. status_command() .. "print '" .. base .. "-" .. i .. "'\n"
        end
        ok, err = self.proc:send(table.concat(parts), 30)
        out, errtext, status = "", "", "ok"
        if ok then
            out, errtext, status = self.proc:sync(base .. "-" .. #commands, 60)
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
        local said = clean_message((errtext:gsub("mha%-sync%-[%d%-]+", ""):gsub(STATUS:gsub("%-", "%%-") .. "[^\n]*", "")))
        error(string.format("%s: %s%s", fname, why, said ~= "" and (" (gnuplot said: " .. said .. ")") or ""), 0)
    end

    -- split what gnuplot said by command: its status line, and its warnings
    local failed, warned, index = {}, {}, 1
    for line in (errtext .. "\n"):gmatch("([^\n]*)\n") do
        local n = line:match("^" .. base:gsub("%-", "%%-") .. "%-(%d+)$")
        local errno, message = line:match("^" .. STATUS:gsub("%-", "%%-") .. " (%-?%d+) ?(.*)$")
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
    if #errors > 0 then error(fname .. ": " .. table.concat(errors, "; "), 0) end
    return true
end

-- Draws a script on the figure's screen terminal. A script is
--   { commands = {...}, size = {w, h} (pixels), image = true when it draws matrices,
--     fallback = function() ... end (a text rendering: mha.heat or a note), warning = text to hush }
-- On the dumb terminal an image would be blank, so the script is checked on the `unknown` terminal and
-- the text rendering is printed instead. Without gnuplot, only the text rendering is printed.
function Figure:draw(fname, script)
    self.script = script
    if plot.on_draw then plot.on_draw(self) end   -- the Jupyter kernel keeps the figure for the cell's outputs
    local name = resolve_terminal(self.terminal)
    local text_instead = (name == "dumb" and script.image)
    local first = text_instead and "set terminal unknown" or screen_terminal_command(name, self, script.size)
    local commands = { first, "unset multiplot", "reset" }
    local fixes   -- on the dumb terminal: the wide texts to take the padding out of
    if name == "dumb" and not text_instead then
        fixes = {}
        commands[#commands + 1] = "set encoding utf8"   -- one cell per character, not per byte
        for _, c in ipairs(script.commands) do commands[#commands + 1] = pad_wide_texts(c, fixes) end
    else
        for _, c in ipairs(script.commands) do commands[#commands + 1] = c end
    end
    local drawn = self:run(fname, commands, { "Plotting with an 'unknown' terminal", script.warning }, false,
        fixes and function(out) return unpad_wide_texts(out, fixes) end)
    if (not drawn or text_instead) and script.fallback then script.fallback() end
end

local FILE_TERMINALS = {
    png = function(w, h) return string.format("set terminal pngcairo size %d,%d noenhanced font 'sans,10'", w, h) end,
    svg = function(w, h) return string.format("set terminal svg size %d,%d dynamic noenhanced font 'sans,10'", w, h) end,
    pdf = function(w, h) return string.format("set terminal pdfcairo size %.2fin,%.2fin noenhanced font 'sans,8'", w / 100, h / 100) end,
}

-- The folder part of a path ("." for a bare name, "/" for a file at the root).
local function folder_of(path)
    local dir = path:match("^(.*)/[^/]*$")
    if dir == nil then return "." end
    return dir ~= "" and dir or "/"
end

-- fig:save(path [, {width=, height=}]) writes the figure's last drawing to a .png, .svg or .pdf
-- file; the file is complete and closed when it returns. Returns path.
-- gnuplot writes to a new file of our naming in the same folder (mha.gnuplot.tempfile), which is then
-- renamed to path: the user's name never reaches `set output`, where a leading '|' would run a command.
function Figure:save(path, opts)
    opts = options_of("plot.save", opts, { "width", "height" })
    if type(path) ~= "string" or path == "" then
        error("plot.save: expected a file name ending in .png, .svg or .pdf, got " .. type(path), 2)
    end
    -- (so that a name in a message below is shown as it is)
    if path:find("%c") then error("plot.save: the file name contains a control character", 2) end
    local ext = (path:match("%.(%w+)$") or ""):lower()
    if not FILE_TERMINALS[ext] then
        error("plot.save: '" .. path .. "': the name must end in .png, .svg or .pdf", 2)
    end
    if not self.script then error("plot.save: figure " .. self.number .. " is empty: draw something first", 2) end
    if gnuplot_missing then error(NOT_FOUND, 2) end
    local w = opts.width or self.script.size[1]
    local h = opts.height or self.script.size[2]
    if math.type(w) ~= "integer" or math.type(h) ~= "integer" or w < 50 or h < 50 or w > 10000 or h > 10000 then
        error("plot.save: width and height must be integers from 50 to 10000 pixels", 2)
    end
    local dir = folder_of(path)
    local temp, why = gnuplot.tempfile(dir, "." .. ext)
    if not temp then
        error("plot.save: cannot write '" .. path .. "': folder '" .. dir
            .. "': " .. why, 2)
    end
    local ok, err = pcall(function()
        -- first the file alone: if gnuplot cannot open it, nothing is drawn (it would go to stdout)
        if not self:run("plot.save", { FILE_TERMINALS[ext](w, h), "set output " .. quote(temp) }, {}, true) then
            error(NOT_FOUND, 0)
        end
        local commands = { "unset multiplot", "reset" }
        for _, c in ipairs(self.script.commands) do commands[#commands + 1] = c end
        commands[#commands + 1] = "unset output"   -- closes the file
        self:run("plot.save", commands, { self.script.warning }, true)
        local f = io.open(temp, "rb")
        local size = f and f:seek("end") or 0
        if f then f:close() end
        if size == 0 then error("plot.save: gnuplot wrote nothing to '" .. path .. "'", 0) end
        local moved, move_err = os.rename(temp, path)
        if not moved then
            -- os.rename's message names the temporary file first
            if move_err:sub(1, #temp + 2) == temp .. ": " then move_err = move_err:sub(#temp + 3) end
            error("plot.save: cannot write '" .. path .. "': " .. move_err, 0)
        end
    end)
    if not ok then
        os.remove(temp)
        error(err, 0)
    end
    return path
end

-- plot.save(path [, opts]): saves the current figure.
function plot.save(path, opts)
    if not current then error("plot.save: no figure: draw something first", 2) end
    return current:save(path, opts)
end

-- ---------------------------------------------------------------------------------------------
-- Plots for a projector: the font, the window's size, the words in the lesson's language
-- ---------------------------------------------------------------------------------------------

-- plot.lang: a function returning "en" or "zh", the language of the words a plot adds itself (panel
-- titles, axis labels). The lesson runner, which holds the language, sets it; else English.
plot.lang = nil
local WORDS = {
    en = { head = "head %d", query = "query", key = "key", dims = { "head", "query", "key" },
           not_found = NOT_FOUND, not_drawn = "plot.line: not drawn without gnuplot: ",
           blank_note = "red marks: cells without a colour (NaN = not a number, inf = infinite)" },
    zh = { head = "头 %d", query = "查询", key = "键", dims = { "头", "查询", "键" },
           not_found = "plot：找不到 gnuplot；请安装 Debian 软件包 gnuplot-qt（有窗口）或 gnuplot-nox（只画文件和文字）",
           not_drawn = "plot.line：没有 gnuplot，未画出：",
           blank_note = "红色标记：没有颜色的格子（NaN = 不是数，inf = 无穷大）" },
}
function words()
    local lang = type(plot.lang) == "function" and plot.lang() or "en"
    return WORDS[lang] or WORDS.en
end

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

-- The font size in points and the largest window, from the plot's options font= and size={w,h}, else
-- $MHA_PLOT_FONT (points) and $MHA_PLOT_SIZE (WxH), else gnuplot's own font and DEFAULT_MAX.
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
    if font ~= nil and parse_font(font) == nil then error(fname .. ": font must be a size in points from 6 to 72", 3) end
    if size ~= nil and (type(size) ~= "table" or parse_size(tostring(size[1]) .. "x" .. tostring(size[2])) == nil) then
        error(fname .. ": size must be {width, height} in pixels, each from 200 to 10000", 3)
    end
    return { font = font or env_setting("MHA_PLOT_FONT", parse_font), size = size,
             max = env_setting("MHA_PLOT_SIZE", parse_size) or DEFAULT_MAX }
end

-- The window's size: the one asked for, else the natural size scaled down (keeping its shape) to fit
-- the largest window. A larger font needs more room around the drawing, so margins grow with it.
local function window_size(setting, natural)
    if setting.size then return { setting.size[1], setting.size[2] } end
    local scale = math.min(1, setting.max[1] / natural[1], setting.max[2] / natural[2])
    return { math.floor(natural[1] * scale + 0.5), math.floor(natural[2] * scale + 0.5) }
end
local function font_scale(setting) return setting.font and math.max(1, setting.font / 10) or 1 end

-- The commands that set every text's font size (titles, tics, axis labels, the key), or none.
local function font_commands(setting)
    if not setting.font then return {} end
    local f = string.format("font ',%g'", setting.font)
    return { "set title " .. f, "set tics " .. f, "set xlabel " .. f, "set ylabel " .. f, "set key " .. f }
end

-- An opaque white page under the drawing (object 1, drawn behind it), so that black text stays
-- readable on a dark SVG viewer. In a multiplot it is unset after the first panel, which it would cover.
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
        error(string.format("%s: unknown palette '%s' (one of: %s)", fname, display.clean_label(name),
            table.concat(names, ", ")), 3)
    end
    return cmd
end

-- "set xtics ('The' 0, 'cat' 1, ...)", tilted when the labels are long or many.
local function tics_command(axis, labels)
    local parts, longest = {}, 0
    for i, l in ipairs(labels) do
        parts[i] = quote_tic(l) .. " " .. i
        longest = math.max(longest, term.width(l))
    end
    local tilt = axis == "x" and (longest > 4 or #labels * longest > 40) and " rotate by 45 right" or ""
    return "set " .. axis .. "tics (" .. table.concat(parts, ", ") .. ")" .. tilt
end

-- The range of the finite values of matrices (for a colour bar shared by every head).
local function finite_range(mats)
    local lo, hi = math.huge, -math.huge
    for _, m in ipairs(mats) do
        for _, row in ipairs(m) do
            for _, v in ipairs(row) do
                if v == v and v ~= math.huge and v ~= -math.huge then
                    lo, hi = math.min(lo, v), math.max(hi, v)
                end
            end
        end
    end
    if lo > hi then return 0, 1 end
    if lo == hi then return lo - 0.5, hi + 0.5 end
    return lo, hi
end

local function zrange_of(fname, opts, mats)
    if opts.zrange == nil then return finite_range(mats) end
    local z = opts.zrange
    if type(z) ~= "table" or type(z[1]) ~= "number" or type(z[2]) ~= "number" or not (z[1] < z[2]) then
        error(fname .. ": zrange must be {lo, hi} with lo < hi", 3)
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

-- The cells of a matrix that have no colour (NaN, and infinite values, which data_number also writes
-- as NaN), as a datablock of "column row text" marks counted from 1, or nil when there are none.
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

-- The commands that draw one matrix (already in a datablock) with token labels, row 1 on top. Rows and
-- columns count from 1, as everywhere in mha. The cells without a colour are marked with their value
-- (NaN, inf, -inf), as mha.heat marks them with ??, and a note under the drawing says what the mark means.
local function matrix_commands(block, m, row_labels, col_labels, lo, hi, values, font)
    local nrows, ncols = #m, #m[1]
    local c = {
        string.format("set xrange [0.5:%d.5]", ncols),
        string.format("set yrange [%d.5:0.5]", nrows),   -- reversed: row 1 at the top
        string.format("set cbrange [%s:%s]", data_number(lo), data_number(hi)),
        col_labels and tics_command("x", col_labels) or "set xtics 1",
        row_labels and tics_command("y", row_labels) or "set ytics 1",
        "set tics scale 0",
    }
    if not col_labels then c[#c + 1] = "set format x '%.0f'" end
    local at = " matrix using ($1+1):($2+1):"
    -- `pixels`: each cell a rectangle of its own, so an SVG stays crisp at any zoom (an embedded image
    -- of 6x6 pixels is blurred by every viewer that scales it)
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
    error(fname .. ": values must be true, false or a number of decimals 0..6", 3)
end

-- Label lists for rows and columns, checked against the matrix; rows/cols default to tokens.
local function labels_for(fname, opts, nrows, ncols)
    local rows = display.label_list(fname, opts.rows and "rows" or "tokens", opts.rows or opts.tokens, nrows, "row")
    local cols = display.label_list(fname, opts.cols and "cols" or "tokens", opts.cols or opts.tokens, ncols, "column")
    return rows, cols
end

-- plot.heatmap(M [, opts]) draws a matrix, typically attention weights (L,S), with token labels. With
-- labels for both axes (tokens=, or rows= and cols=) it is read as attention: the axes say "query" and
-- "key" (in the lesson's language) unless xlabel=/ylabel= say otherwise ("" for none).
local HEATMAP_OPTIONS = { "tokens", "rows", "cols", "title", "xlabel", "ylabel", "zrange", "palette", "values",
                          "font", "size" }

function plot.heatmap(M, opts)
    local fname = "plot.heatmap"
    opts = options_of(fname, opts, HEATMAP_OPTIONS)
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

-- plot.heads(W [, opts]) draws every head of (H,L,S) attention weights in one grid ("head 1" ..., in the
-- lesson's language), on one colour scale; the query axis is named on the first column, the key axis
-- on the last row.
local HEADS_OPTIONS = { "tokens", "rows", "cols", "title", "zrange", "palette", "values", "font", "size" }

function plot.heads(W, opts)
    local fname = "plot.heads"
    opts = options_of(fname, opts, HEADS_OPTIONS)
    local setting = projector(fname, opts)
    local w, shape = array_of(fname, "W", W, 3, " (H,L,S); for batched (B,H,L,S) weights select one: W:select(1,1)")
    local H, L, S = shape[1], shape[2], shape[3]
    local rows, cols = labels_for(fname, opts, L, S)
    local lo, hi = zrange_of(fname, opts, w)
    local grid_cols = math.ceil(math.sqrt(H))
    local grid_rows = math.ceil(H / grid_cols)
    local said = words()
    local commands = add_all({ BACKGROUND }, font_commands(setting))
    add_all(commands, { palette_command(fname, opts.palette), "set size ratio -1", "unset colorbox" })
    for h = 1, H do commands[#commands + 1] = datablock("$mha_head_" .. h, w[h]) end
    -- fixed margins keep every panel the same size; the one colour bar stands in the right margin.
    -- In pixels at a 10-point font (more for a larger one): 70 on top (the title, the first heads'
    -- titles), 80 on the left (tic labels, the query label), below the panels of each row 90, or 115
    -- when the key labels are tilted (tic labels, the key label, the next row's titles).
    local scale = font_scale(setting)
    local cell = math.max(300, math.min(600, 30 * math.max(L, S) + 150))
    local below = cols and tics_command("x", cols):find("rotate", 1, true) and 115 or 90
    local size = window_size(setting, { math.floor((cell * grid_cols + 100) * scale),
                                        math.floor((cell * grid_rows + below) * scale) })
    local width, height = size[1], size[2]
    local px = function(n) return n * scale end
    commands[#commands + 1] = string.format(
        "set multiplot layout %d,%d margins %.4f,%.4f,%.4f,%.4f spacing %.4f,%.4f",
        grid_rows, grid_cols, px(80) / width, 1 - px(90) / width, px(below - 20) / height, 1 - px(70) / height,
        px(80) / width, px(below) / height)
    -- the title is a label of the first panel, drawn over its white page (a multiplot title would be under it)
    commands[#commands + 1] = string.format("set label 1 %s at screen 0.5,%.4f center front%s",
        quote(opts.title or ""), 1 - px(22) / height, setting.font and string.format(" font ',%g'", setting.font) or "")
    local digits = values_digits(fname, opts.values)
    for h = 1, H do
        commands[#commands + 1] = "set title " .. quote(string.format(said.head, h))
        commands[#commands + 1] = (h - 1) % grid_cols == 0 and "set ylabel " .. quote(said.query) or "unset ylabel"
        commands[#commands + 1] = h + grid_cols > H
            and "set xlabel " .. quote(said.key) .. (below > 90 and " offset 0,-1" or "") or "unset xlabel"
        if h == H then
            commands[#commands + 1] = string.format(
                "set colorbox user origin screen %.4f,0.15 size screen %.4f,0.7", 1 - px(70) / width, px(18) / width)
        end
        add_all(commands, matrix_commands("$mha_head_" .. h, w[h], rows, cols, lo, hi, digits, setting.font))
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

-- A tail call, so that array_of's error levels still point at the caller of plot.*.
local function vector_of(fname, what, v, hint)
    return array_of(fname, what, v, 1, hint)
end

-- Each series its own point type and dash type, so series differ without colour: on the dumb
-- terminal point types 7, 5, 9, ... are the letters G, E, I, ... and dash types 1..5 draw with
-- different characters (*, #, $, ...); in a window or file they are shapes and dash patterns.
local POINT_TYPES = { 7, 5, 9, 11, 13, 1, 2 }
local DASH_TYPES = 5

local LINE_OPTIONS = { "title", "xlabel", "ylabel", "logx", "logy", "x", "y", "font", "size" }
local SERIES_OPTIONS = { "x", "y", "title" }
local SERIES_FORM = "plot.line{ {x=xs, y=ys1}, {x=xs, y=ys2} }"

-- plot.line{ {x=, y=, title=}, ..., title=, xlabel=, ylabel=, logx=, logy= } draws one or more
-- series (x defaults to 1..n); a table with y= at the top is one series.
function plot.line(spec)
    local fname = "plot.line"
    if type(spec) ~= "table" then error(fname .. ": expected a table of series, e.g. plot.line{ {x=xs, y=ys, title='a'} }", 2) end
    display.check_keys(fname, spec, LINE_OPTIONS, true, 2)
    local series = {}
    if spec.y ~= nil then
        if #spec > 0 then error(fname .. ": give either y= or a list of series, not both; several series: " .. SERIES_FORM, 0) end
        series[1] = spec
    else
        for i = 1, #spec do series[i] = spec[i] end
    end
    if #series == 0 then error(fname .. ": no series given (each is {x=..., y=..., title=...})", 2) end
    for k, s in ipairs(series) do
        if type(s) == "table" and s ~= spec then display.check_keys(fname .. ": series " .. k, s, SERIES_OPTIONS, false, 2) end
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
    local plots, notes = {}, {}
    for k, s in ipairs(series) do
        if type(s) ~= "table" then
            error(string.format("%s: series %d is %s, not a table {x=, y=, title=}", fname, k, display.a_type(s)), 2)
        end
        if s.y == nil then error(string.format("%s: series %d has no y", fname, k), 2) end
        local y = vector_of(fname, "series " .. k .. " y", s.y,
            "; for several series give one table each: " .. SERIES_FORM)
        local x
        if s.x ~= nil then
            x = vector_of(fname, "series " .. k .. " x", s.x)
            if #x ~= #y then
                error(string.format("%s: series %d has %s and %s", fname, k, display.count(#x, "x value"),
                    display.count(#y, "y value")), 2)
            end
        else
            x = {}
            for i = 1, #y do x[i] = i end
        end
        for i = 1, #y do
            if spec.logx and not (x[i] > 0) then
                error(string.format("%s: logx needs positive x, series %d has x[%d] = %s", fname, k, i, tostring(x[i])), 2)
            end
            if spec.logy and not (y[i] > 0) then
                error(string.format("%s: logy needs positive y, series %d has y[%d] = %s", fname, k, i, tostring(y[i])), 2)
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

-- "set yrange [lo:hi]" from 0 to past the values by a tenth of their span, so that no bar touches the
-- border (gnuplot's autoscale ends the axis at the tallest bar when that falls on a tic).
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
    Figure[name] = function(self, ...)
        local saved = current
        current = self
        local ok, err = pcall(plot[name], ...)
        current = saved or self
        if not ok then error(err, 0) end
    end
end

return plot
