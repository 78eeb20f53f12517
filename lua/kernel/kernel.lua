-- lua/kernel/kernel.lua - module "mha.kernel": what a notebook cell does, for the Jupyter kernel
-- (lua/kernel/kernel.c) and the notebook export (lua/notebook/notebook.lua) alike, with the REPL's
-- own machinery (mha.repl, which hands itself over: kernel.install(repl), from repl.init).
--
-- kernel.execute(code, sink) runs a cell as the REPL runs an input: ':' and '?' lines are commands,
-- other code is tried as "return <code>" first; it hands sink the cell's outputs in order, as
-- nbformat outputs:
--   what print, io.write and commands wrote:
--     {output_type = "stream", name = "stdout", text = ...}
--   show(t), a tensor table:
--     {output_type = "display_data", data = {["text/plain"] =, ["text/html"] =}}
--   a plot:
--     {output_type = "display_data", data = {["image/png"] = (base64), ["text/plain"] =}}
--   the values:
--     {output_type = "execute_result", data = {["text/plain"] =, ["text/html"] = (tensors)}}
--   an error, with the REPL's traceback:
--     {output_type = "error", ename =, evalue =, traceback = {lines}}
-- and returns "ok" or "error", the error output, and the action a command asked for
-- ("reset", "quit"). kernel.complete/inspect/is_complete take a request's content and return the
-- reply's content.

local check = require "mha.lesson.check"
local habits = require "mha.repl.habits"
local i18n = require "mha.i18n"
local json = require "mha.json"
local html = require "mha.notebook.html"
local outputs = require "mha.notebook.outputs"

local kernel = {}

local repl                 -- mha.repl, handed over by kernel.install

local sink                 -- the running cell's sink
local holding = false      -- show is running: what it writes is its table's text, not a stream
local figures_drawn = {}   -- figures drawn during the running cell, in order
local set_up = false
-- returns its arguments, and the stop mha.generate re-armed for a cell's next line goes (the REPL's
-- C side registers it; a no-op stand-in when this file runs without it)
local input_done = debug.getregistry()["mha.repl.input_done"] or function(...) return ... end

local function msghandler(m)
    local handler = debug.getregistry()["mha.repl.msghandler"]
    if handler then return handler(m) end
    return tostring(m)
end

local held = ""         -- the first bytes of a UTF-8 character whose last bytes are not written yet

-- The bytes a UTF-8 sequence starting with lead byte b has (0 for a byte that starts none).
local function sequence_length(b)
    if b >= 0xC2 and b <= 0xDF then return 2 end
    if b >= 0xE0 and b <= 0xEF then return 3 end
    if b >= 0xF0 and b <= 0xF4 then return 4 end
    return 0
end

-- What the cell printed so far, as a stream output. A character cut between two writes waits for
-- its last bytes (until the cell ends: final), so it is not sent as two U+FFFD.
local function flush(final)
    local text = held .. repl.take_output()
    held = ""
    local cut = not final and text:match("[\xC2-\xF4][\x80-\xBF]*$")
    if cut and #cut < sequence_length(cut:byte(1)) then
        held, text = cut, text:sub(1, #text - #cut)
    end
    if text ~= "" and sink then sink({output_type = "stream", name = "stdout", text = text}) end
end

local function is_tensor(v)
    local mt = getmetatable(v)
    return type(mt) == "table" and mt.__name == "mha.Tensor"
end

-- A figure drawn in the cell, as a PNG (mha.notebook.outputs says why not as an SVG too).
local function figure_output(fig)
    return fig.script and outputs.figure(fig.script, fig.number)
end

local function flush_figures()
    local drawn = figures_drawn
    figures_drawn = {}
    local seen = {}
    for _, fig in ipairs(drawn) do
        if not seen[fig] then
            seen[fig] = true
            local output = figure_output(fig)
            if output and sink then sink(output) end
        end
    end
end

-- show(t, opts) in a cell: its text, and the tensor as an HTML table with its token labels.
local function wrap_show(original)
    return function(t, opts)
        if not sink then return original(t, opts) end
        flush()
        holding = true
        local ok, err = pcall(original, t, opts)
        holding = false
        local text = repl.take_output()
        if not ok then
            if text ~= "" then sink({output_type = "stream", name = "stdout", text = text}) end
            error(err, 0)
        end
        local ok, table_html = pcall(html.tensor, t, opts)
        sink({output_type = "display_data", metadata = json.object(),
              data = {["text/plain"] = text:gsub("\n$", ""), ["text/html"] = ok and table_html or nil}})
    end
end

-- The REPL hands itself over in each Lua state (repl.init): a cell runs as its inputs run.
function kernel.install(the_repl)
    repl = the_repl
end

-- What answer() decided, appended to the student's answers file (kernel.append_answer, from
-- lua/kernel/kernel.c) for the teacher's report (classroom/report.lua): one JSON line naming the
-- lesson, the exercise (its place among the lesson's exercises) and "right" or "wrong".
local function record_verdict(ex, ok)
    local session = require("mha.lesson").current()
    if not (session and kernel.append_answer) then return end
    local index = 0
    for _, s in ipairs(session.lesson.steps) do
        if s.kind == "exercise" then index = index + 1 end
        if s == ex then break end
    end
    kernel.append_answer(json.encode({time = os.date("!%Y-%m-%dT%H:%M:%SZ"), lesson = session.number,
        name = session.lesson.name, exercise = index, title = i18n.pick(ex.title, "en"),
        verdict = ok and "right" or "wrong"}) .. "\n")
end

-- Once per Lua state: show gives tables, plots draw nowhere but are kept for the cell's outputs.
function kernel.setup()
    if not repl then error("mha.kernel: no REPL handed over (repl.init calls kernel.install)", 2) end
    if set_up then return end
    set_up = true
    outputs.wrap_show(wrap_show)
    -- what a cell prints reaches the notebook as it is printed (a long loop shows its progress),
    -- after the REPL's capture has kept it
    local function live(write)
        return function(...)
            local results = table.pack(write(...))
            if sink and not holding then flush() end
            return table.unpack(results, 1, results.n)
        end
    end
    _G.print, io.write = live(_G.print), live(io.write)
    -- what is written reaches the notebook as it is written: mha.generate streams as at a terminal
    debug.getregistry()["mha.output_live"] = true
    local methods = getmetatable(io.stdout).__index
    local method_write = methods.write
    methods.write = function(f, ...)
        if f ~= io.stdout then return method_write(f, ...) end
        return live(method_write)(f, ...)
    end
    check.on_verdict = record_verdict
    local ok, plot = pcall(require, "mha.plot")
    if ok and type(plot) == "table" then
        pcall(plot.terminal, "none")
        plot.on_draw = function(fig) figures_drawn[#figures_drawn + 1] = fig end
    end
end

-- The values as the REPL prints them (text/plain), a tensor also as a table (text/html).
local function result_output(values)
    local texts, multiline = {}, false
    for i = 1, values.n do
        texts[i] = repl.format(values[i])
        if texts[i]:find("\n") then multiline = true end
    end
    local data = {["text/plain"] = table.concat(texts, multiline and "\n" or "\t")}
    if values.n == 1 and is_tensor(values[1]) then
        local ok, table_html = pcall(html.tensor, values[1])
        if ok then data["text/html"] = table_html end
    end
    return {output_type = "execute_result", data = data, metadata = json.object()}
end

-- The REPL's hint, except that quit and exit() point to how a notebook ends, not to :quit and
-- Ctrl-D, an interrupt to the notebook's Interrupt, not to Ctrl-C, and clear to its menu.
local function notebook_hint(hint)
    local words = i18n.words(repl.lang())
    local w = words.hint
    if hint == w.hint .. w.quit or hint == w.hint .. w.exit then
        return w.hint .. w.quit_notebook
    end
    for name in pairs(habits.clear_words) do
        if hint == w.hint .. string.format(w.clear, name) then return w.hint .. string.format(w.clear_notebook, name) end
    end
    -- the notebook's Interrupt button (■) stopped the cell, not a Ctrl-C
    if hint == words.core.interrupted then return words.core.interrupted_notebook end
    return hint
end

-- The error output of a cell (code) that raised message: its lines, then the REPL's hint
-- (repl.hint).
local function error_output(code, message)
    message = tostring(message)
    local lines = {}
    for line in (message .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
    local first = lines[1] or ""
    local ename = (first == "interrupted" or first:find(": interrupted$")) and "Interrupted" or "Error"
    -- stopped by the classroom's CPU limit, not by a person: say which limit, and that the kernel
    -- and its variables are still there
    local seconds = ename == "Interrupted" and kernel.cpu_limit_hit and kernel.cpu_limit_hit()
    if seconds then
        first = string.format(i18n.words(repl.lang()).classroom.cpu_limit, seconds)
        lines = {first}
    end
    local hint = notebook_hint(repl.hint(code, "error", message))
    if hint then lines[#lines + 1] = hint end
    return {output_type = "error", ename = ename, evalue = first, traceback = lines}
end

-- Is the cell `help` alone, whose value is the help function itself (the REPL calls it)?
local function bare_help(typed, values)
    return values.n == 1 and type(values[1]) == "function" and values[1] == rawget(_G, "help")
        and typed ~= nil and typed:match("^%s*help%s*$") ~= nil
end

-- Is the cell made of commands (every line that is not blank starts with ':' or '?')?
local function command_lines(code)
    local lines = {}
    for line in (code .. "\n"):gmatch("(.-)\n") do
        if line:match("%S") then
            local p = line:match("^%s*(.*)$")
            if not ((p:sub(1, 1) == ":" and p:sub(2, 2) ~= ":") or p:sub(1, 1) == "?") then return nil end
            lines[#lines + 1] = line
        end
    end
    return #lines > 0 and lines or nil
end

-- Compiles a cell as the REPL does: "return <code>;" first (its values shown unless it ends in
-- ';'), then statements followed by a value (repl.return_last: the value after the last ';' or line
-- break, "x = f(); x" as "x = f()\nx"), else as statements. Returns the chunk, whether it ends in
-- an expression, whether it is quiet, and the input a hint reads (the whole cell, or its value);
-- or nil and the syntax error.
local function compile(code, name)
    local expr, quiet = repl.split_input(code)
    local chunk = load("return " .. expr .. ";", name, "t")
    if chunk then return chunk, true, quiet, code end
    local joined, last_quiet, _, value = repl.return_last(code)
    chunk = joined and load(joined, name, "t")
    if chunk then return chunk, true, last_quiet, value end
    local err
    chunk, err = load(code, name, "t")
    if chunk then return chunk, false, false, code:match("([^\n]*%S[^\n]*)%s*$") end
    return nil, err
end

function kernel.execute(code, cell_sink, name)
    kernel.setup()
    local printed = {}   -- the cell's outputs as text, for the REPL's transcript (:save, :export)
    sink = function(output)
        local data = output.data or {}
        printed[#printed + 1] = output.text or data["text/plain"] or (output.traceback and table.concat(output.traceback, "\n"))
        cell_sink(output)
    end
    figures_drawn = {}
    repl.take_output()   -- what came before the cell is not its output
    held = ""
    local status, err, action = "ok", nil, nil
    local commands = command_lines(code)
    if commands then
        for _, line in ipairs(commands) do
            flush()
            action = repl.command(line)
            -- the command's transcript entry took what it printed (after the last show's table)
            local entries = repl.transcript()
            local printed = entries[#entries] and entries[#entries].output or ""
            if printed ~= "" then sink({output_type = "stream", name = "stdout", text = printed}) end
            if action then break end
        end
    elseif code:match("%S") then
        local chunk, expr, quiet, typed = compile(code, name or "=cell")
        if not chunk then
            err = error_output(code, expr)
        else
            -- on the xpcall's line: a stop mha.generate re-armed for the cell's next line goes
            -- before this file runs one (signals.c's input_done)
            local results = table.pack(input_done(xpcall(chunk, msghandler)))
            flush()
            if not results[1] then
                err = error_output(code, results[2])
            else
                local values = table.pack(table.unpack(results, 2, results.n))
                if values.n > 0 and values[1] ~= nil then rawset(_G, "_", values[1]) end
                if not quiet and bare_help(typed, values) then
                    -- `help` alone shows the help, as at the prompt, not "function: 0x..."
                    local ok, help_err = xpcall(values[1], msghandler)
                    flush()
                    if not ok then err = error_output(code, help_err) end
                elseif not quiet then
                    -- x.shape shows a function, x = [[1, 2]] makes a string: the REPL's hint says
                    -- why, as under its value there (a lone function it explains shows as the
                    -- hint alone)
                    local said = repl.hint(typed, values.n > 0 and "print" or "stmt", table.unpack(values, 1, values.n))
                    if values.n > 0 and not habits.replaces_value(said, table.unpack(values, 1, values.n)) then
                        sink(result_output(values))
                    end
                    local hint = notebook_hint(said)
                    if hint then sink({output_type = "stream", name = "stdout", text = hint .. "\n"}) end
                end
            end
        end
    end
    flush(true)
    flush_figures()
    if err then
        status = "error"
        sink(err)
    end
    if not commands then repl.record_cell(code, status, table.concat(printed, "\n")) end
    sink = nil
    return status, err, action
end

-- The position (bytes, 1-based: the byte after the cursor) of code point cursor_pos, as the
-- protocol counts.
local function byte_offset(code, cursor_pos)
    return utf8.offset(code, (cursor_pos or utf8.len(code) or #code) + 1) or #code + 1
end

local function code_points(s, bytes)
    return utf8.len(s:sub(1, bytes)) or bytes
end

-- complete_request: the REPL's completer on the word before the cursor.
function kernel.complete(content)
    local code = content.code or ""
    local stop = byte_offset(code, content.cursor_pos)
    local before = code:sub(1, stop - 1)
    local line_start = before:match(".*()\n") or 1
    local line = before:sub(line_start)
    local word_start = line:find("[%w_%.:]*$")
    if line:match("^%s*:") then word_start = line:find("%S*$") end
    local text = line:sub(word_start)
    local ok, candidates = pcall(repl.complete, text, line, word_start - 1)
    local matches = {}
    if ok and type(candidates) == "table" then
        for i, c in ipairs(candidates) do matches[i] = c end
    end
    local start_bytes = line_start - 1 + word_start - 1
    return {status = "ok", matches = matches, cursor_start = code_points(code, start_bytes),
            cursor_end = code_points(code, stop - 1), metadata = json.object()}
end

-- inspect_request (Shift-Tab): help's text for the name under the cursor, as ?NAME gives it.
function kernel.inspect(content)
    local code = content.code or ""
    local at = byte_offset(code, content.cursor_pos)
    local head = code:sub(1, at - 1):match("[%w_%.:]*$") or ""
    local tail = code:sub(at):match("^[%w_]*") or ""
    local name = (head .. tail):gsub(":", ".")
    if name == "" then return {status = "ok", found = false, data = json.object(), metadata = json.object()} end
    local ok, text = pcall(function() return require("mha.help").text(name) end)
    if not ok or type(text) ~= "string" or text == "" or text:find("^No help for") then
        return {status = "ok", found = false, data = json.object(), metadata = json.object()}
    end
    return {status = "ok", found = true, data = {["text/plain"] = text}, metadata = json.object()}
end

-- is_complete_request: the REPL's <eof> rule (a statement or an expression that stops at the end).
function kernel.is_complete(content)
    local code = content.code or ""
    if command_lines(code) or not code:match("%S") then return {status = "complete"} end
    local chunk, err = compile(code, "=cell")
    if chunk then return {status = "complete"} end
    local _, expr_err = load("return " .. code, "=cell")
    if tostring(err):find("<eof>$") or tostring(expr_err):find("<eof>$") then
        return {status = "incomplete", indent = ""}
    end
    return {status = "invalid"}
end

return kernel
