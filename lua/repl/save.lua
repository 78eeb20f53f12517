-- lua/repl/save.lua - module "mha.repl.save": what :save writes, FILE.lua (a script replaying the
-- session's inputs as the REPL ran them) and FILE.md (the transcript with outputs), and the replay
-- table such a script asks repl.replayer() for.
--
-- The REPL hands it what it needs: repl (mha.repl: split_input, split_last, return_last,
-- transcript) and, for the replay, shown: how the REPL shows values and errors {show_values =,
-- keep_values =, show_error =, err_out =, msghandler =, interrupted =}.

local M = {}


-- Whether a chunk may return before its end, which in a script would end the script: a return as
-- its last statement (then nothing may follow it, as the parser says), or one inside a block such
-- as `do return end`. A function definition's returns are its own.
local function may_return(input)
    if load(input) ~= nil and load(input .. "\n;_ = nil") == nil then return true end
    return input:find("%f[%w_]return%f[^%w_]") ~= nil
           and not input:match("^%s*local%s+function%s") and not input:match("^%s*function%s")
end

local function has_local(input)
    return input:find("%f[%w_]local%f[^%w_]") ~= nil
end

-- s as a long string literal: [[s]], with as many '=' as it takes for s not to close it.
local function long_string(s)
    local level = ""
    while (s .. "]"):find("]" .. level .. "]", 1, true) do level = level .. "=" end
    local lead = s:sub(1, 1) == "\n" and "\n" or ""  -- a first newline is dropped by the parser
    return "[" .. level .. "[" .. lead .. s .. "]" .. level .. "]"
end

-- The Lua of one entry in the replayable script; r names the replay table. Each input runs as the
-- REPL ran it, as a chunk of its own: its values printed (r.show) or kept (r.keep) as the REPL did,
-- an input with a local a block of its own (do ... end; a function when it may return), :reset a
-- real one.
local function as_script(repl, entry, r)
    local input = entry.input
    if entry.kind == "enter" then return "-- (Enter: the next lesson step)" end
    if entry.kind == "step" then
        local head = "-- lesson step: " .. entry.label:gsub("\n", " ") .. "\n" .. (entry.before and entry.before .. "\n" or "")
        if entry.how == "error" then return head .. r .. ".fails " .. long_string(input) end
        if input == "" then return (head:gsub("\n$", "")) end  -- a step without code: only its mark
        if may_return(input) then return head .. ";(function(...)\n" .. input .. "\nend)()" end
        return head .. "do\n" .. input .. "\nend"
    end
    if entry.kind == "command" then
        if entry.command == "reset" then return r .. ".reset()  -- " .. input end
        -- :answer EXPR is checked as in the session (an error of EXPR can match a hint)
        local expr = entry.command == "answer" and input:match("^%s*:%S+%s+(.-)%s*$")
        if expr and expr ~= "" then
            return string.format("require(\"mha.lesson\").answer_expression(%q)  -- %s", expr, input:gsub("\n", " "))
        end
        return "-- " .. input
    end
    if entry.how == "interrupted" then
        local seconds = entry.seconds or 0
        return string.format("-- stopped by Ctrl-C after %.2f s: replayed for as long, then stopped\n"
                             .. "%s.interrupted(%.3f, %s)", seconds, r, seconds, long_string(input))
    end
    if entry.how == "error" then return r .. ".fails " .. long_string(input) end
    if entry.how == "print" or entry.how == "quiet" then
        local expr, _, tail = repl.split_input(input)
        tail = tail:match("^%s*(.-)%s*$")
        tail = tail ~= "" and " " .. tail or ""
        -- no value (answer(x) at the prompt returns none) replays with none shown, whatever the
        -- call returns in a script; bare help is called as the REPL called it
        local show = r .. (entry.values == 0 and ".none(" or entry.called and ".call("
                           or entry.how == "print" and ".show(" or ".keep(")
        -- statements, then the value shown (repl.return_last): in a block of their own, for their
        -- locals
        local head, last = nil, expr
        if not load("return " .. expr .. ";") then head, last = repl.split_last(expr) end
        local close = last:find("--", 1, true) and "\n)" or ")"  -- a comment must not swallow the
                                                                 -- ')'
        if head then return "do\n" .. head .. " " .. show .. last .. close .. "\nend" .. tail end
        return show .. last .. close .. tail
    end
    if may_return(input) then return r .. ".show((function(...)\n" .. input .. "\nend)())" end
    if has_local(input) then return "do\n" .. input .. "\nend" end
    -- ';': a line starting with '(' would call the value of the line before
    if input:match("^%s*%(") then return ";" .. input end
    return input
end

-- An input compiled as lua/repl/repl.c compiles it: "return <code>;", else
-- "<statements> return <last>;" (repl.return_last), else the statements. Returns the chunk and
-- where the error of a function it tail-calls is placed ("stdin:1"), or nil and the syntax error.
local function compile_input(repl, input)
    local chunk = load("return " .. repl.split_input(input) .. ";", "=stdin")
    if chunk then return chunk, not input:find("\n") and "stdin:1" or nil end
    local code, _, line = repl.return_last(input)
    chunk = code and load(code, "=stdin")
    if chunk then return chunk, line and "stdin:" .. line or nil end
    return load(input, "=stdin")
end

-- What a script saved by :save calls: show(...) and keep(...) do with values what the REPL did
-- (none(...) for an input that gave none, call(f) for bare help, which the REPL called), reset()
-- brings the globals back to those the script started with, fails(input) runs an input that raised
-- an error in the session and prints its message (the REPL printed it with a traceback).
function M.replayer(repl, shown)
    local show_values, keep_values = shown.show_values, shown.keep_values
    local show_error = shown.show_error
    local err_out, msghandler, interrupted = shown.err_out, shown.msghandler, shown.interrupted
    local start = {}
    for k, v in next, _G do start[k] = v end
    local replay = {show = show_values, keep = keep_values, none = function() end}
    function replay.call(f)
        local ok, err = pcall(f)
        if not ok then show_error(err) end
    end
    function replay.reset()
        for k in next, _G do
            if start[k] == nil then rawset(_G, k, nil) end
        end
        for k, v in next, start do rawset(_G, k, v) end
    end
    function replay.fails(input)
        local chunk, tailcall = compile_input(repl, input)
        if not chunk then err_out(tailcall .. "\n") return end
        -- in a coroutine, so the traceback holds the input's frames only, as in the REPL
        local handler = function(m) return msghandler(m, tailcall) end
        local results = coroutine.wrap(function() return table.pack(xpcall(chunk, handler)) end)()
        if results[1] then show_values(table.unpack(results, 2, results.n)) return end
        local message = tostring(results[2]):gsub("\nstack traceback:.*$", "")
        show_error(message)
    end
    -- interrupted(seconds, input) runs an input that Ctrl-C stopped after `seconds` in the session
    -- for as long, then stops it as Ctrl-C did: what it did up to there is done
    -- (t0 = mha.clock() before a long matmul is set), and "interrupted" is printed as the session
    -- printed it. It runs in a coroutine, which lua/repl/repl.c's timer stops as Ctrl-C would,
    -- kernels and inner coroutines too.
    function replay.interrupted(seconds, input)
        local chunk, tailcall = compile_input(repl, input)
        if not chunk then err_out(tailcall .. "\n") return end
        local stop_after = debug.getregistry()["mha.repl.stop_resumed_after"]
        if not stop_after then err_out("replay.interrupted: needs mha-repl to run the script\n") return end
        local co = coroutine.create(function()
            return table.pack(xpcall(chunk, function(m) return msghandler(m, tailcall) end))
        end)
        stop_after(math.max(seconds, 1e-6))
        local resumed, results = coroutine.resume(co)
        stop_after(0)
        if not resumed then results = {false, results} end
        if results[1] then show_values(table.unpack(results, 2, results.n)) return end
        local message = tostring(results[2]):gsub("\nstack traceback:.*$", "")
        show_error(interrupted(message) and "interrupted" or message)   -- as the REPL showed Ctrl-C
    end
    return replay
end

-- A name for the replay table that no input of the session uses.
local function replay_name(transcript)
    local name = "replay"
    for _, entry in ipairs(transcript) do
        while entry.input:find("%f[%w_]" .. name .. "%f[^%w_]") do name = name .. "_" end
    end
    return name
end

-- A Markdown fence longer than any run of backticks in s.
local function fence_for(s)
    local longest = 2
    for run in s:gmatch("`+") do if #run > longest then longest = #run end end
    return string.rep("`", longest + 1)
end

-- Writes text to path; nil and a message on failure.
local function write_file(path, text)
    local f, err = io.open(path, "w")
    if not f then return nil, err end
    local ok, werr = f:write(text)
    local closed, cerr = f:close()
    if not ok or not closed then return nil, path .. ": " .. tostring(werr or cerr) end
    return true
end

-- path as a shell reads it back: as it is when it holds only safe characters, else in single quotes
-- (a quote inside as '\'').
local function shell_word(path)
    if path:match("^[%w%._/%-+=:,@]+$") then return path end
    return "'" .. path:gsub("'", "'\\''") .. "'"
end

-- Writes base.lua and base.md from the session's transcript (repl.transcript()); returns their
-- names and the number of inputs, or nil and a message.
function M.save(repl, base)
    local transcript = repl.transcript()
    base = base:gsub("%.lua$", ""):gsub("%.md$", "")
    local r = replay_name(transcript)
    local script = {
        "-- A session of mha-repl, saved by :save. Replay it with: mha-repl " .. shell_word(base .. ".lua"),
        "-- Each input runs as in the session: " .. r .. ".show prints values as the REPL did and keeps the",
        "-- first in _ (" .. r .. ".keep: a trailing ;; " .. r .. ".none: no value), "
            .. r .. ".reset() is :reset, " .. r
            .. ".fails runs an input that raised an error,",
        "-- " .. r .. ".interrupted one Ctrl-C stopped (for as long as it ran, then stopped there).",
        "local " .. r .. " = require(\"mha.repl\").replayer()",
        "",
    }
    local md = {"# mha-repl session", ""}
    for _, entry in ipairs(transcript) do
        script[#script + 1] = as_script(repl, entry, r)
        local input = entry.kind == "enter" and "(Enter)" or entry.input
        local fence = fence_for(input)
        if entry.kind == "step" then md[#md + 1] = "Lesson step: " .. entry.label:gsub("\n", " ") md[#md + 1] = "" end
        if not (entry.kind == "step" and input == "") then
            md[#md + 1] = fence .. ((entry.kind == "lua" or entry.kind == "step") and "lua" or "")
            md[#md + 1] = input
            md[#md + 1] = fence
        end
        if entry.output ~= "" then
            local output = entry.output:gsub("\n$", "")
            local ofence = fence_for(output)
            md[#md + 1] = ofence .. "text"
            md[#md + 1] = output
            md[#md + 1] = ofence
        end
        md[#md + 1] = ""
    end
    local ok, err = write_file(base .. ".lua", table.concat(script, "\n") .. "\n")
    if ok then ok, err = write_file(base .. ".md", table.concat(md, "\n")) end
    if not ok then return nil, err end
    return base .. ".lua", base .. ".md", #transcript
end

return M
