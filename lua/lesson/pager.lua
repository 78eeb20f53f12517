-- lua/lesson/pager.lua - module "mha.lesson.pager": at a terminal, output taller than the screen
-- pauses before its top scrolls away (a safety net: lessons are written to fit 80x40), with the
-- keys of more and less: Space a page, Enter a line, q quits. Lesson steps, :lessons and help()
-- use it.

local term = require "mha.term"
local text = require "mha.text"                       -- the cells a line takes (display width)
local i18n = require "mha.i18n"      -- the pause line, in both languages

local pager = {}

local paging   -- during pager.run at a terminal: the screen's state (see pager.write)
local function write(...) io.stdout:write(...) end

-- Whether output is being paged now (the runner's own lines then go through pager.write).
function pager.active() return paging ~= nil end

-- The rows left on the screen before the prompt's row (or a pause), or nil when nothing is paged.
function pager.rows_left()
    if not paging then return nil end
    return math.max(0, paging.room - paging.used)
end

-- The cells a line takes on screen: colour and other CSI escape sequences take none.
local function cells(line) return text.width((line:gsub("\27%[[%d;:?]*[@-~]", ""))) end

-- The screen's rows a text takes: each line as many as it wraps to (a line of nothing takes one).
local function rows_of(s)
    local rows = 0
    for line in s:gmatch("([^\n]*)\n") do
        rows = rows + math.max(1, math.ceil(cells(line) / paging.columns))
    end
    return rows
end

-- The pause between two screens: at a terminal it waits for a key, taken as it is pressed
-- (mha.term's key): Space shows the next screen, Enter the next line, q, Ctrl-C or Ctrl-D quits
-- (the rest is not shown; the code that writes it still runs). The pause line is then erased, so
-- the next line or the prompt takes its row. On a screen that is only counted (a replay at a given
-- size) it writes the pause line and goes on. Lines typed or pasted ahead are inputs for the
-- prompt, never the pause's keys: while any wait unread, the output goes on without a pause, and
-- the REPL runs them after it.
local quit_keys = {q = true, Q = true, ["\3"] = true, ["\4"] = true}
local function pause()
    -- the pause line and its erasing are no output: past a recorder of what is printed, when there
    -- is one (the REPL's transcript for :save)
    local show = pager.terminal.show
    local function emit(...)
        if show then show(...) else paging.write(paging.stdout, ...) end
    end
    if not paging.counted_only and pager.terminal.typed_ahead() then
        paging.used = 0
        return
    end
    local words = i18n.words(paging.lang).lesson.more
    if paging.counted_only then
        emit(words, "\n")
        paging.used = 0
        return
    end
    local key = pager.terminal.key(words, emit)
    -- any other key (an arrow's bytes among them) waits for one of these
    while key ~= nil and key ~= " " and key ~= "\r" and key ~= "\n" and not quit_keys[key] do
        key = pager.terminal.key("", emit)
    end
    emit("\r", string.rep(" ", cells(words)), "\r")
    if key == " " then paging.used = 0
    elseif key == "\r" or key == "\n" then paging.used = paging.room - 1
    else paging.quit = true end
end

-- The screen and the keyboard: parameters, so that tests can give a screen and the keys pressed.
-- key(prompt, show): shows prompt and returns one key as it is pressed, nil at end of input (at a
-- terminal, mha.term's key writes the prompt itself once a key would not be echoed; show(prompt)
-- writes it past the pager). typed_ahead: whether input waits unread at the terminal. show(...),
-- when set, writes the pause line and its erasing to stdout past any recorder: the REPL hands its
-- own (lesson.install), so :save's transcript holds only what was printed.
pager.terminal = {
    rows = function() return term.rows(1) end,
    key = function(prompt) return term.key(prompt) end,
    at_terminal = function() return term.isatty(0) and term.isatty(1) end,
    typed_ahead = function() return term.isatty(0) and term.input_waiting(0) end,
}

-- Writes text, counting its lines (a long line takes as many rows as it wraps to) and pausing when
-- the screen is full. paging is {room = rows before a pause, used = rows used, partial = the
-- unfinished line, stdout = the file paged, write = its own write method, lang, columns, quit = the
-- reader quit: nothing more is shown} during pager.run at a terminal. A blank first line is not
-- counted: it may scroll away (a step starts with one above its rule), and nothing is lost.
function pager.write(s)
    if not paging then write(s); return end
    for piece, newline in s:gmatch("([^\n]*)(\n?)") do
        if piece == "" and newline == "" then break end
        -- the screen is full and more is coming: wait for the reader
        -- (a counted screen only counts on)
        local full = paging.used >= paging.room
        if full and not paging.counted_only and not paging.quit then pause() end
        if paging.quit then return end
        if paging.held then
            paging.held[#paging.held + 1] = piece .. newline
            goto continue
        end
        paging.write(paging.stdout, piece, newline)
        if newline ~= "" then
            local line = paging.partial .. piece
            if not (paging.at_top and line == "") then
                paging.used = paging.used + math.max(1, math.ceil(cells(line) / paging.columns))
            end
            paging.partial, paging.at_top = "", false
        else
            paging.partial = paging.partial .. piece
        end
        ::continue::
    end
end

-- Runs fn, whose output (a drawing) is kept on one screen: when it would not fit in the rows left
-- but fits a screen, the pause comes before it, never inside it. Returns what fn returns.
function pager.together(fn)
    if not paging or paging.held then return fn() end
    paging.held = {}
    local results = table.pack(pcall(fn))
    local held = table.concat(paging.held)
    paging.held = nil
    local rows = rows_of(held)
    if rows > paging.room - paging.used and rows <= paging.room and paging.used > 0 and not paging.quit then
        pause()
        -- Space or Enter: the drawing comes whole (Enter scrolls it in, over lines already read)
        paging.used = math.min(paging.used, paging.room - rows)
    end
    pager.write(held)
    if not results[1] then error(results[2], 0) end
    return table.unpack(results, 2, results.n)
end

-- A value as io.write and file:write write it: a float with %.14g (1.0 as "1"), the rest by
-- tostring.
local function written(v)
    if math.type(v) == "float" then return string.format("%.14g", v) end
    return tostring(v)
end

-- Runs fn with its output going through pager.write: print, io.write, io.stdout:write
-- (the method all files share, wrapped for stdout only) and the runner's own lines. Only at a
-- terminal with 8 rows or more; lang ("en", "zh") says the pause, columns is the width lines wrap
-- at. counted_rows (a replay in batch mode) gives a screen of that many rows that is only counted:
-- drawings are sized to it and the pause line marks where pager.together pauses, but nothing waits
-- and nothing else pauses.
function pager.run(fn, lang, columns, counted_rows)
    local rows = counted_rows
    if not rows then
        if not pager.terminal.at_terminal() then return fn() end
        rows = pager.terminal.rows()
    end
    if not rows or rows < 8 then return fn() end
    local stdout, methods = io.stdout, getmetatable(io.stdout).__index
    -- the last row for the prompt or the pause
    paging = {room = rows - 1, used = 0, at_top = true, partial = "", stdout = stdout,
              write = methods.write, lang = lang, columns = columns, counted_only = counted_rows ~= nil}
    local saved_print, saved_write, saved_method = print, io.write, methods.write
    _G.print = function(...)
        local parts = table.pack(...)
        for i = 1, parts.n do parts[i] = tostring(parts[i]) end
        pager.write(table.concat(parts, "\t", 1, parts.n) .. "\n")
    end
    io.write = function(...)
        for i = 1, select("#", ...) do pager.write(written((select(i, ...)))) end
        return io.stdout
    end
    methods.write = function(file, ...)
        if not (paging and file == stdout) then return saved_method(file, ...) end
        for i = 1, select("#", ...) do pager.write(written((select(i, ...)))) end
        return file
    end
    local results = table.pack(pcall(fn))
    _G.print, io.write, methods.write = saved_print, saved_write, saved_method
    paging = nil
    if not results[1] then error(results[2], 0) end
    return table.unpack(results, 2, results.n)
end

return pager
