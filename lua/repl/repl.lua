-- lua/repl/repl.lua - the Lua side of mha-repl's REPL (module "mha.repl"): the ':' commands, how
-- values are printed, `_`, completion candidates, and the session transcript that :save writes.
--
-- lua/repl/repl.c reads the lines and runs the chunks; it calls, from this module:
--   repl.init(carried)             once per Lua state (carried: what repl.carry() returned
--                                  before a :reset)
--   repl.after(input, how, seconds, ...)
--                                  after each Lua input; how is "print", "quiet" (a trailing ';'),
--                                  "stmt" or "error", followed by the values or the error message
--   repl.command(line)             for a line starting with ':' or '?'; may return "quit" or
--                                  "reset"
--   repl.empty_line()              for Enter on an empty line at the first prompt
--   repl.complete(text, line, start)
--                                  Tab: a list of candidates, or "files" for file names
--   repl.split_input(input)        the input's code without a trailing ';' and comments, whether
--                                  it had the ';'
--   repl.return_last(input)        "<statements> return <last>;" when the input ends in an
--                                  expression
-- and sets repl.colour, repl.interactive and repl.clock (wall-clock seconds).
-- lua/repl/lazy.c takes the global `help` from repl.help. Its message handler (the
-- traceback without the embedded Lua code's frames) is in the registry as "mha.repl.msghandler".
-- A script :save wrote calls repl.replayer() for the functions that replay the session.
--
-- repl.init also hands the REPL to the notebook's recorder and cell runner
-- (record.install(repl, runner), kernel.install(repl)).
--
-- The REPL hands itself to the lesson runner (lesson.install(repl), from repl.init), which then
-- calls
--   repl.record_step(code, label, ok)  when it runs a step's code, so :save replays it too
--   repl.clock()                       for timings on the wall clock
--   repl.on_reset(name, keep, resume)  keep() -> a string or nil, carried across :reset and
--                                      handed to resume(string) in the new state (the open lesson
--                                      stays open)
-- and sets repl.on_empty_line (Enter runs the next step).
--
-- Another module adds a command with one line:
--   repl.add_command("next", {args = "", help = "run the next step",
--                             run = function(argstring) ... end})
-- run may return "quit" or "reset" to ask the REPL for that; an optional complete(text, line)
-- returns candidates for the arguments (args mentioning FILE complete file names by default). args
-- also says what the REPL accepts before calling run: "" nothing, one placeholder
-- ("K", "[NAME]", "en|zh", FILE) at most one word, EXPR or "TEXT..." anything; otherwise it prints
-- "usage: :name args".

local repl = {}

local complete = require "mha.repl.complete"   -- the names Tab offers at a Lua prompt
local printer = require "mha.repl.printer"     -- how a value prints
local save = require "mha.repl.save"           -- what :save writes, and the replay of its script
local i18n = require "mha.i18n"                -- the words of the REPL's messages
local raise = require "mha.raise"             -- errors at the user's line
local term_loaded, term = pcall(require, "mha.term")  -- the terminal's width, the cells text takes
if not term_loaded then term = nil end

repl.commands = {}      -- name -> {args = "FILE", help = "one line", run = function(argstring) end}
repl.on_empty_line = nil    -- function run by Enter on an empty line (the lesson runner sets it)
-- The language of the REPL's help and messages, "en" or "zh": the lesson runner, which holds the
-- language (--lang, :lang, MHA_LANG, LANG), replaces this with its own (lesson.install).
repl.lang = function() return "en" end
repl.colour = false
repl.interactive = false
repl.clock = os.clock
repl.show_time = false      -- :time

local MAX_CAPTURE = 100000  -- bytes of one input's output kept for the transcript

function repl.add_command(name, spec)
    if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
        raise("add_command: name must be a word, got " .. tostring(name))
    end
    if type(spec) ~= "table" or type(spec.run) ~= "function" then
        raise("add_command: " .. name .. ": spec.run must be a function")
    end
    repl.commands[name] = spec
end

-- ---------------------------------------------------------------------------------------------
-- Colour: only when lua/repl/repl.c says so (the one policy of lua/sys/lterm.c, for stdout).
-- ---------------------------------------------------------------------------------------------

local palette = {number = "\27[36m", error = "\27[31m", dim = "\27[2m", command = "\27[1m", hint = "\27[33m"}

local function paint(kind, s)
    if not repl.colour then return s end
    return palette[kind] .. s .. "\27[0m"
end

-- ---------------------------------------------------------------------------------------------
-- Output capture: what each input printed, for the Markdown transcript. print, io.write and
-- io.stdout:write are wrapped; output written by C code straight to the terminal is not seen.
-- ---------------------------------------------------------------------------------------------

local captured, captured_bytes = {}, 0
-- :export's tables and figures (mha.notebook.record): {from =, upto = the span of captured they
-- show, output =}; by_key: the one a key (a figure) has in this input
local kept, kept_by_key = {}, {}
local recorder   -- mha.notebook.record, which keeps them, when the build has it (repl.init)
local real_write = io.stdout.write     -- io.stdout's own write method
local capture_installed = false

local function capture(s)
    if captured_bytes > MAX_CAPTURE then return end
    captured[#captured + 1] = s
    captured_bytes = captured_bytes + #s
    if captured_bytes > MAX_CAPTURE then captured[#captured + 1] = "\n... (the rest is not in the transcript)\n" end
end

local function without_colour(s) return (s:gsub("\27%[[%d;]*m", "")) end

-- What was printed since the last call, and (when something was kept) its parts in order: {text =}
-- and {text =, output =} for a kept output and the text it stands for.
local function take_captured()
    local text, parts = without_colour(table.concat(captured)), nil
    if #kept > 0 then
        table.sort(kept, function(a, b) return a.from < b.from end)
        parts = {}
        local at = 1  -- the first piece not yet in a part; a span inside an earlier one is left out
        for _, k in ipairs(kept) do
            if k.from >= at then
                if k.from > at then parts[#parts + 1] = {text = without_colour(table.concat(captured, "", at, k.from - 1))} end
                if k.output then   -- (false: a drawing redrawn later, its text left out)
                    parts[#parts + 1] = {text = without_colour(table.concat(captured, "", k.from, k.upto)), output = k.output}
                end
                at = math.max(at, k.upto + 1)
            end
        end
        if at <= #captured then parts[#parts + 1] = {text = without_colour(table.concat(captured, "", at))} end
    end
    captured, captured_bytes, kept, kept_by_key = {}, 0, {}, {}
    return text, parts
end

-- For mha.notebook.record: where what is printed next starts, and an output kept over what was
-- printed since from. A key's earlier output in this input is dropped with its text
-- (a figure redrawn in a loop is one figure); keep_output returns that output.
function repl.output_mark() return #captured + 1 end
function repl.keep_output(from, output, key)
    local span = {from = from, upto = #captured, output = output}
    local earlier = key ~= nil and kept_by_key[key] or nil
    local replaced = earlier and earlier.output or nil
    if earlier then earlier.output = false end
    if key ~= nil then kept_by_key[key] = span end
    kept[#kept + 1] = span
    return replaced
end

-- Writes s to stdout and keeps it for the transcript.
local function out(s)
    capture(s)
    real_write(io.stdout, s)
end

-- Writes to stdout what the transcript leaves out: the pager's pause line and its erasing.
function repl.write_unrecorded(...) real_write(io.stdout, ...) end

local function err_out(s)
    capture(s)
    io.stdout:flush()  -- what was printed before the error comes before it
    io.stderr:write(s)
end

-- Numbers as io.write writes them (integers plainly, floats with %.14g), other values with
-- tostring.
local function write_piece(v)
    if math.type(v) == "float" then return string.format("%.14g", v) end
    return tostring(v)
end

local function install_capture()
    if capture_installed then return end
    capture_installed = true
    local methods = getmetatable(io.stdout).__index
    methods.write = function(f, ...)
        if f == io.stdout then
            for i = 1, select("#", ...) do capture(write_piece((select(i, ...)))) end
        end
        return real_write(f, ...)
    end
    local real_io_write = io.write
    io.write = function(...)
        if io.output() == io.stdout then
            for i = 1, select("#", ...) do capture(write_piece((select(i, ...)))) end
        end
        return real_io_write(...)
    end
    _G.print = function(...)   -- Lua's print, written through out()
        local n = select("#", ...)
        local parts = {}
        for i = 1, n do parts[i] = tostring((select(i, ...))) end
        out(table.concat(parts, "\t") .. "\n")
    end
end

-- ---------------------------------------------------------------------------------------------
-- Printing values: lua/repl/printer.lua, coloured as the REPL colours.
-- ---------------------------------------------------------------------------------------------

function repl.format(v) return printer.format(v, paint) end

-- ---------------------------------------------------------------------------------------------
-- Where an input's code ends. The one reading of "does this input end in ';'" that both
-- lua/repl/repl.c (which tries "return <code>;") and :save use: comments after the code are not
-- code, and a ';' or "--" inside a string literal is not one either.
-- ---------------------------------------------------------------------------------------------

-- The end of the long bracket ([[, [==[ ...) that opens at i, or nil when none opens there. Returns
-- the position after its closing bracket, or #s + 1 when it is never closed.
local function skip_long_bracket(s, i)
    local level = s:match("^%[(=*)%[", i)
    if not level then return nil end
    local _, close = s:find("]" .. level .. "]", i + #level + 2, true)
    return close and close + 1 or #s + 1
end

-- The position after the short string that opens at i (its quote), or #s + 1 when it is not closed.
local function skip_short_string(s, i)
    local quote, j = s:sub(i, i), i + 1
    while j <= #s do
        local c = s:sub(j, j)
        if c == "\\" then j = j + 2
        elseif c == quote or c == "\n" then return j + 1
        else j = j + 1 end
    end
    return #s + 1
end

-- Splits an input into its code, whether it ended in ';' (quiet: the REPL keeps the values but does
-- not print them), and what followed the code (blanks and comments). "x = f(); -- c" is "x = f()",
-- true, " -- c"; '"a--b";' is '"a--b"', true, "". Any ';' ending the code are taken off.
function repl.split_input(input)
    local i, n = 1, #input
    local last, last_code = 0, 0   -- the last character of code, the last that is not ';'
    while i <= n do
        local c = input:sub(i, i)
        if c:match("%s") then
            i = i + 1
        elseif c == "-" and input:sub(i + 1, i + 1) == "-" then   -- a comment, long or to the
                                                                  -- line's end
            i = skip_long_bracket(input, i + 2) or (input:find("\n", i + 2, true) or n) + 1
        else
            local after
            if c == '"' or c == "'" then after = skip_short_string(input, i)
            elseif c == "[" then after = skip_long_bracket(input, i) end
            after = after or i + 1
            last = after - 1
            if c ~= ";" then last_code = after - 1 end
            i = after
        end
    end
    return input:sub(1, last_code), last > last_code, input:sub(last + 1)
end

-- The positions of the ';' and line breaks of code outside strings and comments: where one
-- statement may end and the next begin.
local function statement_breaks(code)
    local breaks, i, n = {}, 1, #code
    while i <= n do
        local c = code:sub(i, i)
        if c == ";" or c == "\n" then
            breaks[#breaks + 1] = i
            i = i + 1
        elseif c == "-" and code:sub(i + 1, i + 1) == "-" then   -- a comment; its line break is a
                                                                 -- break
            i = skip_long_bracket(code, i + 2) or code:find("\n", i + 2, true) or n + 1
        elseif c == '"' or c == "'" then i = skip_short_string(code, i)
        else i = c == "[" and skip_long_bracket(code, i) or i + 1 end
    end
    return breaks
end

-- Statements, then an expression: "sd = m:state_dict(); sd:shape()" -> "sd = m:state_dict();",
-- " sd:shape()". The split is at the last ';' or line break after which the rest is one expression
-- and before which the statements compile alone; when code compiles as it is, a ';' after that
-- break (past a comment) must compile to the same function ("x = f\n(g)()" is one statement, not
-- two). nil when the last statement is not an expression (an assignment, a loop).
function repl.split_last(code)
    local whole = load(code, "=split", "t", {})
    local breaks = statement_breaks(code)
    for k = #breaks, math.max(1, #breaks - 200), -1 do   -- a long paste: its last 200 breaks, not
                                                         -- all
        local at = breaks[k]
        local head, last = code:sub(1, at), code:sub(at + 1)
        if last:match("%S") and load(head, "=split", "t", {}) then
            if not load("return " .. last .. "\n;", "=split", "t", {}) then return nil end
            if whole and code:sub(at, at) == "\n" then
                local parted = load(code:sub(1, at) .. ";" .. last, "=split", "t", {})
                if not parted or string.dump(parted, true) ~= string.dump(whole, true) then return nil end
            end
            return head, last
        end
    end
    return nil
end

-- lua/repl/repl.c's second try, when "return <input>;" does not compile:
-- "<statements> return <last>;" (repl.split_last), so a value typed after statements is shown as a
-- value alone is. Returns that code, whether the input ended in ';' (quiet), the line the return
-- is on when the value is on one line (where a tail call's error is placed), and the value's code;
-- nil when the last statement is not an expression.
function repl.return_last(input)
    local code, quiet = repl.split_input(input)
    local head, last = repl.split_last(code)
    if not head then return nil end
    local _, breaks = head:gsub("\n", "")
    return head .. " return " .. last .. "\n;", quiet, not last:find("\n") and breaks + 1 or nil, last
end

-- Several values share a line, tab-separated as print does, unless one of them spans lines.
local function print_values(...)
    local n = select("#", ...)
    local texts, multiline = {}, false
    for i = 1, n do
        texts[i] = repl.format((select(i, ...)))
        if texts[i]:find("\n") then multiline = true end
    end
    out(table.concat(texts, multiline and "\n" or "\t") .. "\n")
end

local function format_bytes(n)
    if n < 1024 then return string.format("%d B", n) end
    if n < 1024 * 1024 then return string.format("%.1f KiB", n / 1024) end
    if n < 1024 * 1024 * 1024 then return string.format("%.1f MiB", n / (1024 * 1024)) end
    return string.format("%.2f GiB", n / (1024 * 1024 * 1024))
end

-- :time's line: wall time, and the bytes the tensors hold (mha.memory()) when the library says.
local function show_time(seconds)
    local took = seconds < 1 and string.format("%.3g ms", seconds * 1000)
        or string.format("%.3g s", seconds)
    local text = string.format(repl.said("took"), took)
    local mha_loaded, mha = pcall(require, "mha")
    if mha_loaded and type(mha) == "table" and type(mha.memory) == "function" then
        collectgarbage()  -- count the tensors variables hold, not the garbage not yet collected
        local ok, live = pcall(mha.memory)
        if ok and type(live) == "table" then live = live.live or live[1] end
        if ok and type(live) == "number" then
            text = text .. string.format(repl.said("hold"), format_bytes(live))
        end
    end
    io.stdout:write(paint("dim", "[" .. text .. "]"), "\n")  -- not captured: times differ run to
                                                             -- run
    captured, captured_bytes = {}, 0
end

-- ---------------------------------------------------------------------------------------------
-- The transcript: every input with what it printed, for :save.
-- ---------------------------------------------------------------------------------------------

-- {kind = "lua"|"command"|"enter"|"step", input =, how =, command = (its full name), output =, and
-- for :export: parts = (take_captured's), heading = (a lesson step's, mha.notebook.record.step)}
local transcript = {}

local function record(entry)
    entry.output, entry.parts = take_captured()
    transcript[#transcript + 1] = entry
end

-- For the Jupyter kernel and the notebook export (lua/kernel/kernel.lua): what the inputs printed
-- since the last call, the transcript, and a cell recorded with the text of its outputs.
repl.take_output = take_captured
function repl.transcript() return transcript end
function repl.record_cell(code, how, output)
    transcript[#transcript + 1] = {kind = "lua", input = code, how = how, output = output or ""}
end

-- A lesson step's code, run by the lesson runner (lua/lesson/lesson.lua) rather than typed:
-- recorded so that :save replays it inline (the variables it makes exist for the inputs after it)
-- and the Markdown shows it under the step's label. ok = false marks code that raised an error
-- (replayed with fails). before is a line the script runs first
-- (the runner's mark of where the lesson is, so answer() checks the right exercise).
function repl.record_step(code, label, ok, before)
    if type(code) ~= "string" then raise("record_step: code must be a string, got " .. type(code)) end
    record({kind = "step", input = code, label = label ~= nil and tostring(label) or "a lesson step",
            how = ok == false and "error" or nil, before = before ~= nil and tostring(before) or nil,
            heading = recorder and recorder.step(label, before)})   -- the step's text, for :export
end

-- An error's lines as a terminal shows them: a line wider than the terminal wrapped between words
-- (spaces kept), so the terminal does not cut a word in two. Piped or batch output stays as it was.
local function at_terminal_width(msg)
    local ok, text = pcall(require, "mha.text")
    if not (repl.interactive and term and ok) then return msg end
    local columns = math.max(30, term.columns())
    local lines = {}
    for line in (msg .. "\n"):gmatch("(.-)\n") do
        if text.width(line) <= columns then lines[#lines + 1] = line
        else
            local wrapped = text.wrap(line, columns, {mode = "verbatim"})
            table.move(wrapped, 1, #wrapped, #lines + 1, lines)
        end
    end
    return table.concat(lines, "\n")
end

-- Error text: red with colour, on stderr as lua.c does; the transcript keeps it unwrapped.
local function show_error(msg)
    msg = tostring(msg)
    capture(msg .. "\n")
    io.stdout:flush()  -- what was printed before the error comes before it
    io.stderr:write(paint("error", at_terminal_width(msg)) .. "\n")
end

-- What the REPL does with an input's values: the first, unless nil, becomes `_`; they are printed
-- unless the input ended in ';' (quiet). replay.show and replay.keep of a saved script do the same.
local function keep_values(...)
    if select("#", ...) > 0 and (...) ~= nil then rawset(_G, "_", (...)) end
end

-- Whether s, with print's line break, ends what this input printed: a value the input has already
-- shown as text (a bare mha.generate(...) streams the text it returns), not echoed again.
local function already_shown(s)
    local want, tail, have = s .. "\n", {}, 0
    for i = #captured, 1, -1 do
        if have >= #want then break end
        table.insert(tail, 1, captured[i])
        have = have + #captured[i]
    end
    return have >= #want and table.concat(tail):sub(-#want) == want
end

-- Shows the values; false when there was nothing to show (none, or a string just printed).
local function show_values(...)
    keep_values(...)
    local n = select("#", ...)
    if n == 0 or n == 1 and type((...)) == "string" and (...) ~= "" and already_shown((...)) then
        return false
    end
    print_values(...)
    return true
end

-- Was this error Ctrl-C ("interrupted", "stdin:1: interrupted",
-- "sgemm: (2,3) @ (3,4): interrupted")?
local function interrupted(msg)
    local first = tostring(msg):match("^[^\n]*")
    return first == "interrupted" or first:find(": interrupted$") ~= nil
end

-- A Python habit or a slip at the prompt gets a one-line hint (mha.repl.habits), under the error or
-- the value it explains.
local function habit_hint(f, ...)
    local ok, habits = pcall(require, "mha.repl.habits")
    if not ok then return nil end
    local got, hint = pcall(habits[f], ...)
    return got and hint or nil
end

-- repl.never_completes(input): whether an unfinished input is a Python habit the REPL gives back at
-- once, with its error and hint, instead of reading on at `>>` (mha.repl.habits.never_completes).
function repl.never_completes(input) return habit_hint("never_completes", input) == true end

-- "A = m:attention() #A": a value after statements with no ';' or line break before it is a syntax
-- error. The input with the ';' that makes the REPL print the value (repl.return_last), or nil.
local function with_break(input, msg)
    if not tostring(msg):match("^[^\n]* near [^\n]*$") or input:find("\n") then return nil end
    local tries = 0
    for at = #input, 2, -1 do
        if input:sub(at, at) == " " and input:sub(at - 1, at - 1) ~= " " then
            local fixed = input:sub(1, at - 1) .. ";" .. input:sub(at)
            local chunk = repl.return_last(fixed)
            if chunk and load(chunk, "=stdin") then return fixed end
            tries = tries + 1
            if tries == 20 then return nil end
        end
    end
end

-- repl.hint(input, how, ...) -> the hint for an input's outcome, in the REPL's language, or nil:
-- how is "error" (then the message), "print" (then the values shown) or "stmt" (none). The REPL
-- prints it under the error or the values; the Jupyter kernel (mha.kernel) shows the same line
-- under a cell's.
function repl.hint(input, how, ...)
    if how == "error" then
        local fixed = with_break(input, (...))
        if fixed then return string.format(repl.said("value_after"), fixed) end
        local hint = habit_hint("after_error", input, (...), repl.lang())
        -- an English message of the core gets its line: in Chinese each, in English those the
        -- message does not say already (matmul's inner sizes: transpose one)
        if not hint then hint = habit_hint("core_line", (...), repl.lang()) end
        return hint
    end
    if how == "print" then return habit_hint("after_value", input, repl.lang(), ...) end
    if how == "stmt" then return habit_hint("after_statement", input, repl.lang()) end
    return nil
end

-- A hint as printed: wrapped to the terminal at word boundaries, continuation lines indented.
local function hint_text(hint)
    local ok, text = pcall(require, "mha.text")
    local lines = ok and text.hint_lines(hint) or {hint}
    return paint("hint", table.concat(lines, "\n")) .. "\n"
end

-- Bare `help` at the prompt: the value is the help function itself, which is then called
-- (help() lists the topics) instead of printing "function: 0x…".
local function bare_help(input, ...)
    return select("#", ...) == 1 and type((...)) == "function" and (...) == rawget(_G, "help")
        and input:match("^%s*help%s*$") ~= nil
end

-- whether the input returned through interrupt_later (lua/repl/signals.c), having caught a Ctrl-C
local caught = debug.getregistry()["mha.repl.caught"]

function repl.after(input, how, seconds, ...)
    if how == "error" then
        show_error((...))
        local hint = repl.hint(input, how, ...)
        if hint then err_out(hint_text(hint)) end
        if interrupted((...)) then how = "interrupted" end  -- :save must not replay it: it may
                                                            -- never end
    elseif how == "quiet" then keep_values(...)
    elseif how == "print" and bare_help(input, ...) then
        local ok, err = pcall((...))
        if not ok then show_error(err) end
    else  -- an expression's values, or those a chunk of statements returned
        local from, hint = repl.output_mark(), repl.hint(input, how, ...)
        if habit_hint("replaces_value", hint, ...) then keep_values(...)   -- x.shape: hint alone
        elseif show_values(...) and recorder then recorder.values(from, ...) end
        if hint then out(hint_text(hint)) end
    end
    -- an input Ctrl-C stopped keeps how long it ran: its replay runs as long; so does one that
    -- caught the Ctrl-C and returned what it had (s = mha.generate(...)); :save replays values as
    -- the REPL showed them (values: how many, none for answer(x) at the prompt; called: bare help)
    local values = (how == "print" or how == "quiet") and select("#", ...) or nil
    if how ~= "error" and caught and caught() then how = "interrupted" end
    -- what a stopped input made and dropped (a tensor of gigabytes, say) is freed now, not at some
    -- later collection: a full one costs about what the Lua heap holds, a fraction of a ms
    if how == "interrupted" then collectgarbage() end
    record({kind = "lua", input = input, how = how, values = values,
            seconds = how == "interrupted" and seconds or nil,
            called = how == "print" and bare_help(input, ...) or nil})
    -- an input that did not compile ran for no time (seconds is then exactly 0): no time line
    if repl.show_time and not (how == "error" and seconds == 0) then show_time(seconds) end
end

-- ---------------------------------------------------------------------------------------------
-- Commands
-- ---------------------------------------------------------------------------------------------

local function command_names()
    local names = {}
    for name in pairs(repl.commands) do names[#names + 1] = name end
    table.sort(names)
    return names
end

-- The command called name, or the only one name abbreviates; else nil and why.
local function find_command(name)
    if repl.commands[name] then return repl.commands[name], name end
    local found = {}
    for full in pairs(repl.commands) do
        if full:sub(1, #name) == name then found[#found + 1] = full end
    end
    table.sort(found)
    if #found == 1 then return repl.commands[found[1]], found[1] end
    if #found == 0 then
        return nil, habit_hint("unknown_command", name, command_names(), repl.lang())
            or string.format(repl.said("unknown"), name)
    end
    return nil, string.format(repl.said("could_be"), name, table.concat(found, ", :"))
end

-- ? : mha.help's listing of the commands (help.commands_text), their names painted.
local function list_commands() out(require("mha.help").commands_text(paint)) end

-- Whether rest suits a command's args: "" takes nothing, FILE a word or a quoted name, EXPR or a
-- name ending in "..." (TEXT...) anything, one placeholder ("[NAME]", "K", "en|zh") at most one
-- word (the command itself asks for a missing one).
local function arguments_fit(spec, rest)
    local args = spec.args or ""
    local words = select(2, rest:gsub("%S+", ""))
    if args == "" then return words == 0 end
    if args == "FILE" then   -- one word, or one quoted name (which may hold the other quote)
        return words <= 1 or rest:match('^"[^"]*"%s*$') ~= nil or rest:match("^'[^']*'%s*$") ~= nil
    end
    if args:match("^%[?[%a|]+%]?$") and args ~= "EXPR" then return words <= 1 end
    return true
end

-- A FILE argument as typed, its surrounding quotes (if any) taken off: :save "my session".
local function file_argument(arg)
    local name = arg:match("^%s*(.-)%s*$")
    return name:match('^"(.*)"$') or name:match("^'(.*)'$") or name
end

-- The message handler of lua/repl/repl.c (its traceback leaves out the frames of the embedded Lua
-- code), which it keeps in the registry; a plainer one when this module runs without it
-- (under lua with mha.so).
local function msghandler(m, tailcall)
    local handler = debug.getregistry()["mha.repl.msghandler"]
    if handler then return handler(m, tailcall) end
    if type(m) ~= "string" then return tostring(m) end
    return (m:gsub("^lua/[%w_]+%.lua:%d+: ", ""))
end

-- Runs f(arg) and prints its error, if any, as the REPL prints the error of an input.
local function run_protected(f, arg)
    local ok, result = xpcall(f, msghandler, arg)
    if not ok then show_error(result) return nil end
    return result
end

function repl.command(line)
    local text = line:match("^%s*(.-)%s*$")
    local action, command
    if text:sub(1, 1) == "?" then
        local topic = text:sub(2):match("^%s*(.-)$")
        if topic == "" then list_commands()
        else run_protected(function() require("mha.help").help(topic) end) end
    else
        local name, rest = text:match("^:(%S*)%s*(.*)$")
        local spec, full = find_command(name)
        if not spec then show_error(full) full = nil
        elseif not arguments_fit(spec, rest) then
            show_error(string.format(repl.said("usage"), ":" .. full .. ((spec.args or "") ~= "" and " " .. spec.args or ""),
                                     require("mha.help").command_help(full)))
        else action = run_protected(spec.run, rest) end
        command = full
    end
    record({kind = "command", input = text, command = command})
    if action == "quit" or action == "reset" then return action end
end

function repl.empty_line()
    if type(repl.on_empty_line) ~= "function" then return end
    local action = run_protected(repl.on_empty_line)
    record({kind = "enter", input = ""})
    if action == "quit" or action == "reset" then return action end
end

-- ---------------------------------------------------------------------------------------------
-- :save - FILE.lua replays the session's inputs; FILE.md is the transcript with outputs
-- (lua/repl/save.lua).
-- ---------------------------------------------------------------------------------------------

-- What a script saved by :save calls: show(...), keep(...), none(...), call(f), reset(),
-- fails(input), interrupted(seconds, input) (lua/repl/save.lua says what each does).
function repl.replayer()
    return save.replayer(repl, {show_values = show_values, keep_values = keep_values, show_error = show_error,
                                err_out = err_out, msghandler = msghandler, interrupted = interrupted})
end

-- Writes base.lua and base.md; returns their names and the number of inputs, or nil and a message.
function repl.save(base) return save.save(repl, base) end

-- ---------------------------------------------------------------------------------------------
-- The REPL's own commands
-- ---------------------------------------------------------------------------------------------

-- What the REPL's commands say, in the REPL's language (repl.lang()): the catalogue's room repl.
function repl.said(word) return i18n.words(repl.lang()).repl[word] end

-- The start-up line in the REPL's language (lua/repl/repl.c prints it at a terminal).
function repl.banner(program, version, lua_release)
    return string.format(repl.said("banner"), program, version, lua_release)
end

repl.add_command("help", {args = "[NAME]", help = "list the commands, or explain NAME: a command (:help goto) or a function (as ?NAME)",
    run = function(arg)
        local name = arg:match("^%s*(.-)%s*$")
        if name == "" then list_commands()
        elseif repl.commands[name] then require("mha.help").help(":" .. name)  -- :help save
        else require("mha.help").help(name) end  -- :help mha.softmax, :help :save
    end})

-- help() lists and explains the REPL's commands: repl.init hands mha.help the table; until then
-- help holds a function making it as repl.init does (the REPL's own commands and the lesson
-- runner's), for help() outside the interactive REPL (mha-repl -e 'help()', a script,
-- tools/api_docs.lua). repl.help is mha.help's help(), the global `help` (lua/repl/lazy.c loads it
-- from here on first use).
if package.preload["mha.help"] then
    local ok, help = pcall(require, "mha.help")
    if ok and type(help) == "table" then
        local runner_installed = false   -- the runner's commands, and its language (MHA_LANG...)
        local function install_runner()
            if runner_installed then return end
            runner_installed = true
            local lok, lesson = pcall(require, "mha.lesson")
            if lok and type(lesson) == "table" and lesson.install then lesson.install(repl) end
        end
        help.set_commands(function() install_runner(); return repl.commands end)
        help.set_lang(function() install_runner(); return repl.lang() end)
        repl.help = help.help
    end
end

repl.add_command("quit", {args = "", help = "leave mha-repl (Ctrl-D does too)",
    run = function() return "quit" end})

repl.add_command("time", {args = "", help = "toggle showing each command's wall time and the memory tensors hold",
    run = function()
        repl.show_time = not repl.show_time
        out(repl.said("time") .. (repl.show_time and repl.said("on") or repl.said("off")) .. "\n")
    end})

repl.add_command("reset", {args = "", help = "start afresh: a new Lua state, every variable gone",
    run = function()
        out(repl.said("fresh") .. "\n")
        return "reset"
    end})

repl.add_command("save", {args = "FILE", help = "write the session as FILE.lua (a script) and FILE.md (inputs and outputs)",
    run = function(arg)
        local name = file_argument(arg)
        if name == "" then show_error(repl.said("save_name")) return end
        local lua_path, md_path, n = repl.save(name)
        if not lua_path then show_error(":save: " .. md_path) return end
        out(string.format(repl.said("saved"), n, lua_path, md_path) .. "\n")
    end})

repl.add_command("close", {args = "",
    help = "close every plot window (a window stays until you close it, :close it or leave the REPL)",
    run = function() require("mha.plot").closeall() end})

local runner   -- the lesson runner (mha.lesson) repl.init handed itself to, when the build has one
repl.add_command("export", {args = "[lesson] FILE",
    help = "write the session so far as FILE.ipynb (Jupyter) or FILE.html (one page); :export lesson FILE: the open lesson alone, run afresh from its seed",
    run = function(arg)
        local lesson_path = arg:match("^%s*lesson%s+(%S.*)$")
        local path = file_argument(lesson_path or arg)
        local notebook = require "mha.notebook"
        local ok, lesson_number
        if lesson_path then ok, lesson_number = notebook.export_open_lesson(path, runner, repl.lang())
        else ok, lesson_number = notebook.export_session(path, transcript, repl.lang()) end
        if not ok then show_error(":export: " .. tostring(lesson_number)) return end
        out(repl.exported(lesson_path and lesson_number, path) .. "\n")
        local open = not lesson_path and runner and runner.current()
        if open and not open.replay and math.type(open.number) == "integer" then
            out(paint("dim", string.format(repl.said("export_lesson_too"), open.number)) .. "\n")
        end
    end})

-- "wrote lesson 8 to l8.ipynb" ("the session" when lesson_number is nil), in the REPL's language:
-- what :export and mha-repl --lesson N --batch --export FILE say.
function repl.exported(lesson_number, path)
    local what = lesson_number and string.format(repl.said("exported_lesson"), lesson_number) or repl.said("exported_session")
    return string.format(repl.said("exported"), what, path)
end

-- ---------------------------------------------------------------------------------------------
-- Completion
-- ---------------------------------------------------------------------------------------------

local function complete_command(text, line, start)
    local before = line:sub(1, start)
    if before:match("^%s*$") then
        local prefix = text:match("^:(.*)$") or ""
        local names = {}
        for _, name in ipairs(command_names()) do
            if name:sub(1, #prefix) == prefix then names[#names + 1] = ":" .. name end
        end
        return names
    end
    local name = line:match("^%s*:(%S+)")
    local spec = name and find_command(name)
    if spec and spec.complete then return spec.complete(text, line) end
    if spec and spec.args and spec.args:find("FILE", 1, true) then return "files" end
    return {}
end

function repl.complete(text, line, start)
    if line:match("^%s*:") then return complete_command(text, line, start) end
    return complete.names(text)
end

-- ---------------------------------------------------------------------------------------------
-- Life cycle: init in each new Lua state; carry across :reset.
-- ---------------------------------------------------------------------------------------------

local reset_hooks = {}      -- name -> {keep = function() -> string|nil, resume = function(string)}
local carried_hooks = {}  -- name -> the string keep() gave before the :reset, until its resume runs

-- A module registers what it keeps across :reset: keep() before the old state closes, resume(kept)
-- in the new one, at once when the module registers there (it registers again in every state).
function repl.on_reset(name, keep, resume)
    if type(name) ~= "string" or type(keep) ~= "function" or type(resume) ~= "function" then
        raise("on_reset: expected a name, a keep function and a resume function")
    end
    reset_hooks[name] = {keep = keep, resume = resume}
    local kept = carried_hooks[name]
    carried_hooks[name] = nil
    if kept ~= nil then resume(kept) end
end

-- What the next state keeps after :reset: the transcript, the :time setting and what each on_reset
-- hook keeps, as Lua source.
function repl.carry()
    local parts = {"return {show_time = ", tostring(repl.show_time), ", transcript = {"}
    local json_loaded, json = pcall(require, "mha.json")
    for _, e in ipairs(transcript) do
        -- :export's headings, tables and figures as JSON (left out when a text is not UTF-8); an
        -- input Ctrl-C stopped keeps how long it ran
        local ok, rich = false, nil
        if json_loaded then ok, rich = pcall(json.encode, {heading = e.heading, parts = e.parts}) end
        parts[#parts + 1] = string.format("{kind = %q, input = %q, how = %q, command = %q, label = %q, before = %q, output = %q, rich = %q, seconds = %q},",
                                          e.kind, e.input, e.how or "", e.command or "", e.label or "", e.before or "", e.output,
                                          ok and rich or "", e.seconds or 0)
    end
    parts[#parts + 1] = "}, hooks = {"
    local names = {}
    for name in pairs(reset_hooks) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
        local kept = reset_hooks[name].keep()
        if kept ~= nil then parts[#parts + 1] = string.format("[%q] = %q,", name, tostring(kept)) end
    end
    parts[#parts + 1] = "}}"
    return table.concat(parts)
end

function repl.init(carried)
    install_capture()
    if carried then
        local chunk = load(carried, "=carry", "t", {})
        local ok, state = pcall(chunk)
        if ok and type(state) == "table" then
            carried_hooks = type(state.hooks) == "table" and state.hooks or {}
            repl.show_time = state.show_time
            for _, e in ipairs(state.transcript) do
                if e.how == "" then e.how = nil end
                if e.command == "" then e.command = nil end
                if e.label == "" then e.label = nil end
                if e.before == "" then e.before = nil end
                local rich = e.rich ~= "" and require("mha.json").decode(e.rich)
                e.rich, e.heading, e.parts = nil, rich and rich.heading, rich and rich.parts
                if e.seconds == 0 then e.seconds = nil end
                transcript[#transcript + 1] = e
            end
        end
    end
    -- help() lists and explains the REPL's commands
    if package.preload["mha.help"] then
        local ok, help = pcall(require, "mha.help")
        if ok and type(help) == "table" then
            help.set_commands(repl.commands)
            if help.set_lang then help.set_lang(function() return repl.lang() end) end
        else show_error("mha.help: " .. tostring(help)) end
    end
    -- the lesson runner, when it is part of the build, is handed the REPL: it adds :lessons, :open,
    -- :next ... and resumes a lesson kept across :reset; :export asks it whether a lesson is open
    runner = nil
    if package.preload["mha.lesson"] then
        local ok, lesson = pcall(require, "mha.lesson")
        if ok and type(lesson) == "table" and type(lesson.install) == "function" then
            runner = lesson
            lesson.install(repl)
        elseif not ok then show_error("mha.lesson: " .. tostring(lesson)) end
    end
    -- tables and figures kept as they are shown, for :export
    recorder = nil
    if package.preload["mha.notebook.record"] then
        local ok, record = pcall(require, "mha.notebook.record")
        if ok then
            recorder = record
            record.install(repl, runner)
        else show_error("mha.notebook.record: " .. tostring(record)) end
    end
    -- a notebook's cells (the Jupyter kernel, :export lesson) run as the REPL's inputs run
    if package.preload["mha.kernel"] then
        local ok, kernel = pcall(require, "mha.kernel")
        if ok then kernel.install(repl)
        else show_error("mha.kernel: " .. tostring(kernel)) end
    end
    captured, captured_bytes, kept, kept_by_key = {}, 0, {}, {}
end

return repl
