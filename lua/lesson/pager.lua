-- lua/lesson/pager.lua - module "mha.lesson.pager": at a terminal, output taller than the screen pauses
-- before its top scrolls away (a safety net: lessons are written to fit 80x40); lesson steps and help() use it.

local term = require "mha.term"
local text = require "mha.text"                       -- the cells a line takes (display width)
local words = require("mha.lesson.words").runner      -- the pause line, in both languages

local pager = {}

local paging   -- during pager.run at a terminal: the screen's state (see pager.write)
local function write(...) io.stdout:write(...) end

-- Whether output is being paged now (the runner's own lines then go through pager.write).
function pager.active() return paging ~= nil end

-- The screen and the keyboard: parameters, so that tests can give a screen and the keys pressed.
pager.terminal = {
    rows = function() return term.rows(1) end,
    read = function() return io.read("l") end,
    at_terminal = function() return term.isatty(0) and term.isatty(1) end,
}

-- Writes text, counting its lines (a long line takes as many rows as it wraps to) and pausing when the
-- screen is full: Enter goes on, q stops pausing for the rest of the run. paging is {room = rows before
-- a pause, used = rows used, partial = the unfinished line, stdout = the file paged, write = its own
-- write method, lang, columns} during pager.run at a terminal.
function pager.write(s)
    if not paging then write(s); return end
    local function emit(...)   -- past the pager: to the file's own write method while paging
        if paging then paging.write(paging.stdout, ...) else write(...) end
    end
    for piece, newline in s:gmatch("([^\n]*)(\n?)") do
        if piece == "" and newline == "" then break end
        -- the screen is full and more is coming: wait for the reader
        if paging and paging.used >= paging.room then
            emit((words[paging.lang] or words.en).more)
            local key = pager.terminal.read()
            if key == nil or key:match("^%s*[qQ]") then paging = nil else paging.used = 0 end
        end
        emit(piece, newline)
        if paging and newline ~= "" then
            paging.used = paging.used + math.max(1, math.ceil(text.width(paging.partial .. piece) / paging.columns))
            paging.partial = ""
        elseif paging then
            paging.partial = paging.partial .. piece
        end
    end
end

-- A value as io.write and file:write write it: a float with %.14g (1.0 as "1"), the rest by tostring.
local function written(v)
    if math.type(v) == "float" then return string.format("%.14g", v) end
    return tostring(v)
end

-- Runs fn with its output going through pager.write: print, io.write, io.stdout:write (the method all
-- files share, wrapped for stdout only) and the runner's own lines. Only at a terminal with 8 rows or
-- more; lang ("en", "zh") says the pause, columns is the width lines wrap at.
function pager.run(fn, lang, columns)
    if not pager.terminal.at_terminal() then return fn() end
    local rows = pager.terminal.rows()
    if not rows or rows < 8 then return fn() end
    local stdout, methods = io.stdout, getmetatable(io.stdout).__index
    -- the last row for the prompt or the pause; the blank line above a step's rule may scroll away
    paging = {room = rows - 1, used = -1, partial = "", stdout = stdout, write = methods.write,
              lang = lang, columns = columns}
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
