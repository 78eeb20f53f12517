-- lua/lesson/lesson.lua - module "mha.lesson": the lesson format (lesson, step, exercise, mistake)
-- and the runner that steps through a lesson at the prompt or replays it in batch mode.
-- Answers are checked by mha.lesson.check (lua/lesson/check.lua), the runner's words are in the
-- catalogue mha.i18n (lua/i18n/), text wrapping and the lesson markup in mha.text
-- (lua/show/text.lua).
--
-- A lesson file (lessons/NN_name.lua) is a Lua chunk that returns one lesson; lesson, step,
-- exercise and mistake are in scope while it loads:
--
--     return lesson{
--         name = "dot_product", seed = 2,
--         title   = {en = "Dot-product attention", zh = ...},
--         summary = {en = "scores, softmax, weighted sum", zh = ...},
--         step{ title = {en = ..., zh = ...}, text = {en = [[...]], zh = [[...]]},
--               code = [[ scores = Q:matmul(K:transpose(1, 2)); show(scores, {rows = tokens}) ]] },
--         exercise{ title = {...}, prompt = {en = ..., zh = ...},
--                   solution = [[ softmax(scores, -1) ]],
--                   mistakes = { mistake.softmax_axis,
--                                mistake{wrong = [[softmax(scores, 1)]], hint = {...}} } },
--     }
--
-- Step code runs in the REPL's global environment, so the student keeps Q, K, weights... between
-- steps. :back and :goto replay the earlier steps quietly from the lesson's seed, so state is never
-- stale.
--
-- The REPL hands itself over with M.install(repl): the runner adds its commands, records the steps
-- it runs with repl.record_step (so :save replays them), times with repl.clock, and registers with
-- repl.on_reset what keeps the open lesson open across :reset. Without a REPL (batch mode, tests)
-- none of that happens.

local M = {}

local mha = require "mha"
local term = require "mha.term"
local wrapper = require "mha.text"
local i18n = require "mha.i18n"
local check = require "mha.lesson.check"
local files = require "mha.lesson.files"
local pager = require "mha.lesson.pager"
local raise = require "mha.raise"   -- errors at the user's line

-- ---------------------------------------------------------------------------------------------
-- Language: --lang (or :lang), then MHA_LANG, then LANG (zh* -> zh), else English.
-- ---------------------------------------------------------------------------------------------

M.languages = files.languages
M.preferred_lang = nil   -- set by :lang: the language of the lessons opened after it

-- getenv (default os.getenv) is a parameter so that tests can give the environment.
function M.choose_lang(requested, getenv)
    getenv = getenv or os.getenv
    for _, candidate in ipairs({requested or M.preferred_lang or "", getenv("MHA_LANG") or ""}) do
        local lang = candidate:lower():sub(1, 2)
        if M.languages[lang] then return lang end
    end
    local env = getenv("LANG") or ""
    if env:lower():match("^zh") then return "zh" end
    return "en"
end

-- The runner's own words in lang (lua/i18n/): said(lang).the_end. Without lang, the session's, else
-- the language a new lesson would take (MHA_LANG=zh pages help in Chinese too).
local function said(lang) return i18n.words(lang or M.language()).lesson end

-- Text wrapping and the lesson markup live in mha.text; the names below keep the lesson API.
M.width, M.render, M.code_lines, M.rule = wrapper.width, wrapper.render, wrapper.code_lines, wrapper.rule
M.inline, M.finish, M.wrap_text, M.wrap_formula = wrapper.inline, wrapper.finish, wrapper.wrap_text, wrapper.wrap_formula
M.wrap = wrapper.wrap

-- ---------------------------------------------------------------------------------------------
-- Output: everything the runner prints goes through say_line, so quiet replays can silence it.
-- ---------------------------------------------------------------------------------------------

local session -- the open lesson; nil when none

-- The language of the open lesson, else the one a new lesson would take: what the REPL's help and
-- messages and a plot's own words follow (M.install hands this function to them).
function M.language() return (session and session.lang) or M.choose_lang() end

local the_repl -- the REPL the runner runs in (M.install); nil in batch mode and in tests

local function write(...) io.stdout:write(...) end
local function say_line(s)
    if pager.active() then pager.write(s .. "\n") else write(s, "\n") end
end

-- The width the runner wraps to: the terminal's at a terminal, else $COLUMNS, else 80; in batch
-- mode never the terminal's, so a transcript depends only on $COLUMNS. At most 100
-- (long lines read badly), at least 20.
local function columns()
    local n
    if session and session.width then
        n = session.width
    elseif (session and session.batch) or not term.isatty(1) then
        n = math.tointeger(tonumber(os.getenv("COLUMNS") or "")) or 80
    else
        n = term.columns(1)
    end
    return math.max(20, math.min(n, 100))
end

-- A batch run writes a transcript, never escapes; otherwise the one colour policy
-- (lua/sys/lterm.c).
local function use_color()
    if session and session.batch then return false end
    return term.colour(io.stdout)
end

local function say_lines(lines)
    for _, l in ipairs(M.finish(lines, use_color())) do say_line(l) end
end

-- Prints prose (the runner's words, hints, messages; lines separated by "\n"), wrapped to the
-- terminal.
local function say_text(s)
    for line in (tostring(s) .. "\n"):gmatch("(.-)\n") do say_lines(M.wrap_text(line, columns())) end
end

-- Prints a message whose lines indented by two spaces are laid out already (the lessons in
-- columns, files.find): those as written, the others wrapped as prose.
local function say_message(s)
    for line in (tostring(s) .. "\n"):gmatch("(.-)\n") do
        say_lines(line:find("^  ") and {line} or M.wrap_text(line, columns()))
    end
end

-- Picks the session's language out of a {en=, zh=} table (a plain string is taken as it is).
local function tr(t, lang)
    return i18n.pick(t, lang or (session and session.lang))
end
M.tr = tr

-- ---------------------------------------------------------------------------------------------
-- The lesson format and lesson files (lua/lesson/files.lua); find speaks the session's language.
-- ---------------------------------------------------------------------------------------------

M.step, M.exercise, M.mistake, M.lesson = files.step, files.exercise, files.mistake, files.lesson
M.validate, M.dirs, M.files, M.load = files.validate, files.dirs, files.files, files.load
M.none_found = files.none_found

-- Finds a lesson by number ("2", 2), file-name part ("dot_product"), file name ("02_dot_product")
-- or path. Returns the file, or nil and a message (in lang, default the language chosen) naming the
-- lessons there are.
function M.find(which, lang)
    return files.find(which, lang or (session and session.lang) or M.choose_lang(), columns())
end

-- ---------------------------------------------------------------------------------------------
-- Exercise checking (lua/lesson/check.lua), in the session's language.
-- ---------------------------------------------------------------------------------------------

function M.compare(expected, got, tol) return check.compare(expected, got, tol, session and session.lang) end

M.mistake.softmax_axis = M.mistake(check.softmax_axis)

-- mistake.nan_hint{hint = {...}}: the answer contains NaN (an overflow, a fully masked row, 0/0).
function M.mistake.nan_hint(t)
    t.test = check.has_nan
    return M.mistake(t)
end

-- Checks an answer (or the error its evaluation raised) against an exercise.
-- Returns ok, message (the verdict or the hint, in the session's language).
function M.check(ex, got, eval_error) return check.check(ex, got, eval_error, session and session.lang) end

-- ---------------------------------------------------------------------------------------------
-- Plots in batch mode and during quiet replays: no window, no gnuplot, deterministic output. A plot
-- prints a one-line note, and a heatmap is drawn as text with mha.heat.
-- ---------------------------------------------------------------------------------------------

local function shape_of(t)
    if mha.is_tensor(t) then
        local s = t:shape()
        local parts = {}
        for i, n in ipairs(s) do parts[i] = tostring(n) end
        return table.concat(parts, "×")
    end
    return "?"
end

-- "[plot: heatmap "title" 3×3]", in the lesson's language: what a window would show.
local function note(kind, opts, detail)
    local w, title = said(), opts and opts.title
    local quoted = title and string.format(w.quote, title)
    say_lines(M.wrap(string.format("[%s%s%s%s%s]", w.plot, w.colon_space, w.plot_kinds[kind] or kind,
        quoted and (" " .. quoted) or "", detail and (" " .. detail) or ""), columns(), {rest = "  "}))
end

M.batch_plot = {
    heatmap = function(m, opts)
        note("heatmap", opts, shape_of(m))
        if mha.heat then
            mha.heat(m, {rows = opts and (opts.rows or opts.tokens), cols = opts and (opts.cols or opts.tokens),
                         values = opts and opts.values})
        end
    end,
    heads = function(w, opts)
        note("heads", opts, shape_of(w))
        if not (mha.heat and mha.is_tensor(w)) then return end
        if #w:shape() == 4 then w = w:select(1, 1) end   -- (N,H,L,S): the first batch item
        -- one mha.heat: every head on one shared scale, one scale line and one footer for them all
        local tokens = opts and opts.tokens
        mha.heat(w, {rows = tokens, cols = tokens, dims = said(session and session.lang or "en").heat_dims,
                     values = opts and opts.values})
    end,
    line = function(spec)
        local w, names = said(), {}
        for i, series in ipairs(spec) do names[i] = series.title or string.format(w.series_n, i) end
        note("line", spec, string.format(w.series, #spec) .. w.colon_space .. table.concat(names, w.list_sep))
    end,
    bar = function(labels, values, opts) note("bar", opts, string.format(said().bars, #labels)) end,
    save = function(file) end,
}
local silent_plot = setmetatable({}, {__index = function() return function() end end})

-- ---------------------------------------------------------------------------------------------
-- The session: showing steps, replaying, exercises.
-- ---------------------------------------------------------------------------------------------

local function header(k, n, title)
    return M.rule(columns(), string.format(said(session.lang).header, k, n, title))
end

local function print_text(text)
    for _, line in ipairs(M.render(text, columns(), use_color())) do say_line(line) end
end

local function echo_code(code)
    for _, line in ipairs(M.code_lines(code, columns())) do say_line(line) end
end

-- Tells the REPL (when it keeps a transcript) what a step ran, so :save writes a script that works.
local function record_step(code, label, ok, before)
    if the_repl and the_repl.record_step then the_repl.record_step(code, label, ok, before) end
end

-- Step k's code as it is echoed (tr{} resolved) and as it runs: the same code, with the lesson
-- file's line numbers (leading line breaks to the line it starts on), so an error names the file
-- and line.
local function step_code(k)
    local s = session.lesson.steps[k]
    local code = s.code or s.setup
    if not code then return nil end
    local tools = require "mha.lesson.tools"
    local shown = tools.resolve(code, session.lang)
    local run = string.rep("\n", (s.code_line or 1) - 1) .. tools.resolve(code, session.lang, true)
    return shown, run
end

-- Runs a step's code in the global environment; returns true or false, message. The chunk is named
-- after the lesson file: "06_masks.lua:31: masked_fill: ...". The REPL records the code as shown.
local function step_label(k)
    return string.format("lesson %s, step %d", session.lesson.name or "?", k),
           -- a saved script tells the lesson where it is before each step, so its answer() calls
           -- are checked
           string.format('require("mha.lesson").at_step(%d)', k)
end

-- returns its arguments; see run_code (a no-op stand-in without the REPL's C side)
local input_done = debug.getregistry()["mha.repl.input_done"] or function(...) return ... end

-- The globals as they are (name -> value, raw).
local function globals_now()
    local now = {}
    for k, v in next, _G do now[k] = v end
    return now
end

local function run_code(shown, run, k)
    local label, at = step_label(k)
    local chunk, err = load(run, "=" .. (session.lesson.file or ("step " .. k)), "t", _G)
    if not chunk then record_step(shown, label, false, at); return false, err end
    -- on the xpcall's line: a stop mha.generate or mha.train re-armed for the step's next line goes
    -- before this file runs one (signals.c's input_done)
    local ok, e = input_done(xpcall(chunk, function(x) return tostring(x) end))
    record_step(shown, label, ok, at)
    -- what the lesson left: a global that differs from it later is the student's
    session.made = globals_now()
    return ok, e
end

-- After a replay the student did not ask for (:lang): every global whose value before it (before)
-- was not what the lesson's last step left (session.made as it was then, made) is the student's
-- own, and gets that value back, however the replay set it.
local function keep_students(before, made)
    for k, v in next, before do
        if made[k] ~= v then rawset(_G, k, v) end
    end
    for k in next, made do
        if before[k] == nil then rawset(_G, k, nil) end
    end
end

-- Runs fn with the runner's and the lesson's output thrown away
-- (print, io.write, io.stdout, plots).
local function quietly(fn)
    local null = assert(io.open("/dev/null", "w"))
    local saved_print, saved_stdout, saved_output, saved_plot = print, io.stdout, io.output(), rawget(_G, "plot")
    _G.print = function() end
    io.output(null)
    io.stdout = null
    _G.plot = silent_plot
    local ok, err = pcall(fn)
    _G.print, io.stdout, _G.plot = saved_print, saved_stdout, saved_plot
    io.output(saved_output)
    null:close()
    return ok, err
end

-- Fresh state: the lesson's seed and the fixed print options every transcript relies on.
local function reset_state()
    mha.seed(session.lesson.seed or 0)
    record_step(string.format("mha.seed(%d)", session.lesson.seed or 0), "the lesson's seed")
    session.print_options.lang = session.lang   -- a Chinese lesson's tensors say "columns", "scale"
                                                -- in Chinese
    if mha.printoptions then mha.printoptions(session.print_options) end
end

-- ---------------------------------------------------------------------------------------------
-- Paging (lua/lesson/pager.lua): at a terminal, never in batch mode, a step taller than the screen
-- pauses.
-- ---------------------------------------------------------------------------------------------

M.pager = pager.terminal   -- rows, read, at_terminal: tests give a screen and the keys pressed

local function with_pager(fn)
    local counted = session and session.screen_rows   -- a batch replay sized for a screen
    if session and session.batch and not counted then return fn() end
    return pager.run(fn, M.language(), columns(), counted)
end

-- M.paged(fn): runs fn paged as a step is (at a terminal, never in batch mode).
M.paged = with_pager

-- The header, text (or exercise prompt) and echoed code of step k, without running anything.
local function draw_step(k)
    local lesson = session.lesson
    local s = lesson.steps[k]
    local lang = session.lang
    say_line("")
    say_lines(header(k, #lesson.steps, tr(s.title, lang)))
    if s.kind == "exercise" then
        say_text(said(lang).exercise .. said(lang).colon)
        print_text(tr(s.prompt, lang))
    else
        print_text(tr(s.text, lang))
    end
    local shown = step_code(k)
    if shown then
        say_line("")
        echo_code(shown)
    end
end

-- An exercise in batch mode: answered from the --answers file while it has lines
-- (each line one attempt: a wrong one gets its hint and the next line tries again), else with the
-- lesson's own solution.
local function answer_in_batch(s)
    local lang = session.lang
    local answers = session.answers
    say_line("")
    if answers and answers.next <= #answers.lines then
        say_text(string.format(said(lang).answers_from, answers.name))
        while answers.next <= #answers.lines do
            local expr = answers.lines[answers.next]
            answers.next = answers.next + 1
            say_lines(M.wrap(":answer " .. expr, columns(), {rest = "  ", mode = "code"}))
            if M.answer_expression(expr) then return true end
        end
        return true
    end
    if answers then say_text(string.format(said(lang).answers_none, answers.name))
    else say_text(said(lang).batch_answer) end
    local shown = type(s.solution) == "string" and s.solution:gsub("^%s+", ""):gsub("%s+$", "") or "solution"
    say_lines(M.wrap("answer(" .. shown .. ")", columns(), {rest = "  ", mode = "code"}))
    local value = check.evaluate(s.solution, "solution")
    local ok, verdict = M.check(s, value)
    say_text(verdict)
    if not ok then return false, "the lesson's own solution was not accepted: " .. verdict end
    return true
end

-- Was err Ctrl-C's ("interrupted", "17_residual_norm_training.lua:64: interrupted", as the REPL
-- tells it)?
local function is_interrupt(err)
    local first = tostring(err):match("^[^\n]*")
    return first == "interrupted" or first:find(": interrupted$") ~= nil
end

-- What the end of the open lesson says: the lesson after it (its number and title) to go on to,
-- when there is one, and how to start this one again.
local function end_text()
    local lang = session.lang
    for _, f in ipairs(M.files()) do
        if f.number > (session.number or math.huge) then
            local lesson = M.load(f.path)
            if lesson then return string.format(said(lang).the_end_next, f.number, tr(lesson.title, lang)) end
            break
        end
    end
    return said(lang).the_end
end

-- Shows step k (title, text, code echoed and run); returns true, or false, message on an error.
local function show_step(k)
    return with_pager(function()
        local s = session.lesson.steps[k]
        local lang = session.lang
        session.finished = false
        draw_step(k)
        local shown, run = step_code(k)
        if shown then
            local ok, err = run_code(shown, run, k)
            if not ok and is_interrupt(err) then   -- Ctrl-C: the step stops once, and stays unrun
                say_text(string.format(said(lang).interrupted_step, k))
                return false, err
            end
            if not ok then
                say_text(string.format(said(lang).error_in_step, k) .. said(lang).colon_space .. err)
                -- the step stays unrun, so Enter would run it again on the same state: say how to
                -- rebuild it
                if not session.batch then say_text(said(lang).recover(k)) end
                return false, err
            end
        else
            -- a step without code still moves a saved script's replay to it
            -- (an answer() there is checked against this step, as in the session, not against some
            -- exercise further on)
            local label, at = step_label(k)
            record_step("", label, true, at)
        end
        session.pos = k
        session.pending = nil
        if s.kind == "exercise" then
            if session.batch then return answer_in_batch(s) end
            session.pending = s
            say_line("")
            say_text(said(lang).ask)
        end
        return true
    end)
end

-- :text - the current step again (title, text, code), nothing rerun; after :lang, in the new
-- language. An exercise ends with how to answer it, as show_step shows it: answered or skipped
-- already, answer() still takes it.
function M.reprint()
    if not session then say_text(said(M.choose_lang()).no_lesson); return false end
    if session.pos < 1 then return false end
    draw_step(session.pos)
    if session.lesson.steps[session.pos].kind == "exercise" and not session.batch then
        say_line("")
        say_text(said(session.lang).ask)
    end
    return true
end

-- Replays steps 1..k-1 quietly from the seed, so the state is what step k expects.
local function replay_before(k)
    reset_state()
    for i = 1, k - 1 do
        local shown, run = step_code(i)
        if shown then
            local ok, err = quietly(function()
                local okc, errc = run_code(shown, run, i)
                if not okc then error(errc, 0) end
            end)
            if not ok then return false, string.format(said(session.lang).error_in_step, i) .. said(session.lang).colon_space .. tostring(err) end
        end
    end
    return true
end

local function need_session()
    if not session then say_text(said(M.choose_lang()).no_lesson); return false end
    return true
end

function M.next()
    if not need_session() then return false end
    if session.pending then say_text(said(session.lang).skipped); session.pending = nil end
    local k = session.pos + 1
    if k > #session.lesson.steps then
        say_text(end_text())
        session.finished = true
        return true
    end
    return show_step(k)
end

function M.goto_step(k)
    if not need_session() then return false end
    local n = #session.lesson.steps
    local given = k
    k = math.tointeger(tonumber(k))
    if not k then   -- :goto abc, :goto 2.5, :goto alone: not a step number at all
        say_text(string.format(said(session.lang).goto_number, tostring(given or ""), n))
        return false
    elseif k < 1 or k > n then
        say_text(string.format(said(session.lang).goto_range, n))
        return false
    end
    if k > 1 then say_text(said(session.lang).replaying(k - 1, session.lesson.seed or 0)) end
    local ok, err = replay_before(k)
    if not ok then say_text(err); return false end
    -- the state is now that before step k: if step k stops (Ctrl-C, an error), Enter runs it again
    session.pos, session.pending = k - 1, nil
    return show_step(k)
end

-- :back goes one step back; from the end of the lesson, back to its last step (the exercise).
function M.back()
    if not need_session() then return false end
    if session.finished then return M.goto_step(#session.lesson.steps) end
    return M.goto_step(math.max(1, session.pos - 1))
end

function M.restart()
    if not need_session() then return false end
    return M.goto_step(1)
end

-- Runs every remaining step; stops at the first error.
function M.run_rest()
    if not need_session() then return false end
    while session.pos < #session.lesson.steps do
        local ok, err = M.next()
        if not ok then return false, err end
    end
    -- a last exercise waits for its answer: the end is said once, after it
    if not session.pending then
        say_text(end_text())
        session.finished = true
    end
    return true
end

-- answer(value) at the prompt, or :answer EXPR (then the expression's error can match a hint);
-- empty: answer() with nothing in it, which says what goes there.
function M.answer(value, eval_error, empty)
    if not need_session() then return false end
    local ex = session.pending
    if not ex then
        ex = session.lesson.steps[session.pos]
        if not (ex and ex.kind == "exercise") then say_text(said(session.lang).no_exercise); return false end
    end
    if empty then say_text(said(session.lang).answer_empty); return false end
    local okc, ok, message = pcall(M.check, ex, value, eval_error)
    if not okc then
        say_text(check.malformed(tostring(ok), session.lang))
        return false
    end
    say_text(ok and message or (said(session.lang).not_yet .. said(session.lang).colon_space .. message))
    if ok then
        session.pending = nil
        if session.pos < #session.lesson.steps then say_text(said(session.lang).next_hint) end
    end
    return ok
end

function M.answer_expression(expr)
    local chunk, err = load("return " .. expr, "=answer", "t", _G)
    if not chunk then chunk, err = load(expr, "=answer", "t", _G) end
    if not chunk then return M.answer(nil, err) end
    local ok, value = pcall(chunk)
    if not ok then return M.answer(nil, value) end
    return M.answer(value)
end

function M.show_solution()
    if not need_session() then return false end
    local ex = session.lesson.steps[session.pos]
    if not (ex and ex.kind == "exercise") then say_text(said(session.lang).no_exercise); return false end
    local shown = type(ex.solution) == "string" and ex.solution:gsub("^%s+", ""):gsub("%s+$", "") or "(a function)"
    say_lines(M.wrap(shown, columns(), {first = said(session.lang).solution .. said(session.lang).colon_space, rest = "  ", mode = "code"}))
    return true
end

local NAME_COLUMN = 22   -- :lessons' name column at most: 30 columns before the summaries

-- The list of :lessons: number, name and summary, the summary in a column after the names (its
-- lines wrapped under that column, after a name too long for it as well), or under the name when
-- the column leaves too little room. A summary's last line is never one word (or one Chinese
-- character) alone.
function M.list(lang)
    lang = lang or (session and session.lang) or M.choose_lang()
    local files = M.files()
    local width = columns()
    if #files == 0 then say_text(M.none_found(lang)); return false end
    say_text(said(lang).lessons)
    local name_width = 0   -- the longest name up to NAME_COLUMN; a longer one pushes its summary on
    for _, f in ipairs(files) do name_width = math.max(name_width, math.min(#f.name, NAME_COLUMN)) end
    local column = string.rep(" ", 2 + 2 + 2 + name_width + 2)
    for _, f in ipairs(files) do
        local lesson, err = M.load(f.path)
        local summary = lesson and tr(lesson.summary, lang) or string.format(said(lang).cannot_load, err:match("[^\n]*"))
        local head = string.format("  %2d  %-" .. name_width .. "s  ", f.number, f.name)
        local first, rest = head, column
        if M.width(head) > width - 20 then
            say_line((head:gsub("%s+$", "")))
            first, rest = "      ", "      "
        end
        say_lines(M.wrap(M.inline(summary), width, {first = first, rest = rest, no_lone_last = true}))
    end
    return true
end

function M.current() return session end

-- M.start without the REPL's Enter key: opens the session and shows step 1, or runs every step.
-- A student's answers for --answers FILE: one Lua expression a line, each an attempt at the
-- exercise at hand (blank lines and "--" comments skipped). Returns {name =, lines =, next = 1} or
-- nil, message.
local function read_answers(path)
    local f, err = io.open(path, "r")
    if not f then return nil, "--answers: " .. tostring(err) end
    local lines = {}
    for line in f:lines() do
        line = line:match("^%s*(.-)%s*$")
        if line ~= "" and not line:match("^%-%-") then lines[#lines + 1] = line end
    end
    f:close()
    return {name = path:match("([^/]+)$"), lines = lines, next = 1}
end

-- The print options every lesson transcript relies on: 4 decimals, and whole numbers judged by what
-- shows, so a row of softmax sums prints alike on every kernel variant (exactly 1, or 0.99999994).
function M.print_options() return {precision = 4, whole = "shown"} end

local function open_session(which, opts)
    opts = opts or {}
    local f, err = M.find(which, M.choose_lang(opts.lang))
    if not f then return false, err, "usage" end
    local lesson
    lesson, err = M.load(f.path)
    if not lesson then return false, err, "load" end
    local answers
    if opts.answers then
        answers, err = read_answers(opts.answers)
        if not answers then return false, err, "usage" end
    end
    local batch = opts.batch
    if batch == nil then batch = not (term.isatty(0) and term.isatty(1)) end
    session = {lesson = lesson, number = f.number, lang = M.choose_lang(opts.lang), batch = batch, pos = 0,
               width = opts.width, print_options = M.print_options(), answers = answers,
               screen_rows = batch and opts.screen_rows or nil}
    -- a transcript's tensors are as wide as its text (at a terminal, mha.show follows the terminal)
    if batch then session.print_options.linewidth = columns() end
    M.install_globals()
    if batch and not session.screen_rows then _G.plot = M.batch_plot end
    local lang = session.lang
    say_lines(M.rule(columns(), string.format("%02d %s", f.number, tr(lesson.title, lang))))
    -- the summary is the title's second line: a header, never ending on one word alone
    say_lines(M.wrap_text(tr(lesson.summary, lang), columns(), nil, nil, true))
    -- a script :save writes opens the lesson quietly (the names step code uses: show, plot, tr,
    -- LESSON ...; and a lesson for its answer() calls to be checked against)
    local path = f.path
    if path:sub(1, 1) ~= "/" and os.getenv("PWD") then path = os.getenv("PWD") .. "/" .. path end
    record_step(string.format('require("mha.lesson").replaying(%q, %q)', files.clean_path(path), lang), "the lesson")
    reset_state()
    if batch then
        for k = 1, #lesson.steps do
            local ok, e = show_step(k)
            if not ok then return false, e, "step" end
        end
        say_line("")
        say_text(end_text())
        session.finished = true
        return true
    end
    say_text(said(lang).next_hint)
    local ok, e = show_step(1)
    if not ok then return false, e, "step" end
    return true
end

-- Opens a lesson and shows its first step (interactive), or runs it all (batch); at the REPL's
-- prompt Enter on an empty line then runs the next step. (mha-repl --lesson and :open both come
-- here.) opts: batch (bool), lang (string or nil), width (columns; default: see columns());
-- screen_rows (batch only): draw the plots for real, their text charts sized for a screen of that
-- many rows and a pause line where the pager would pause before one
-- (tests/golden.sh checks every step fits 80x40 so). Returns true; or false, message, kind: kind
-- "usage" when no lesson has that name or number, "load" when the lesson file is broken
-- (neither is printed: the caller says it once), "step" when a step failed
-- (printed where it happened).
function M.start(which, opts)
    local ok, err, kind = open_session(which, opts)
    if the_repl and session and not session.batch then the_repl.on_empty_line = M.next end
    return ok, err, kind
end

-- Both a script written by :save and a notebook run a lesson's code themselves, cell by cell: the
-- lesson is open as batch mode opens it (language, print options, helpers), at no step yet. Returns
-- the session.
local function open_for_code(lesson, number, lang)
    session = {lesson = lesson, number = number, lang = M.choose_lang(lang), batch = true, pos = 0,
               print_options = M.print_options()}
    M.install_globals()
    return session
end

-- Step k of the open lesson when it is an exercise (the one answer() then checks), else nil.
local function exercise_at(k)
    local s = session.lesson.steps[k]
    return (s and s.kind == "exercise") and s or nil
end

-- What a script written by :save during a lesson calls first: the lesson, open without printing
-- anything, so that the steps it replays find their helpers and its answer() calls their exercise.
function M.replaying(path, lang)
    local lesson, err = M.load(path)
    if not lesson then   -- run from another folder: the lesson of that file name where lessons are
                         -- found
        local f = M.find((tostring(path):match("([^/]+)$")))
        if f then lesson, err = M.load(f.path) end
    end
    if not lesson then raise("replaying a lesson: " .. tostring(err)) end
    open_for_code(lesson, tonumber(lesson.file:match("^(%d+)")) or 0, lang).replay = true
    return true
end

-- The saved script's mark before step k's code: the lesson is at step k
-- (its exercise waits for answer()).
function M.at_step(k)
    if not session then return end
    session.pos = k
    session.pending = exercise_at(k)
end

-- A notebook of the lesson (mha.notebook) runs its steps' code cell by cell: this opens the lesson
-- as batch mode does (language, seed, print options, helpers) without running a step; exercise(k)
-- then makes step k the exercise answer() checks. Returns the lesson and its number, or nil and a
-- message.
function M.open_cells(which, lang)
    local f, err = M.find(which)
    if not f then return nil, err end
    local lesson
    lesson, err = M.load(f.path)
    if not lesson then return nil, err end
    open_for_code(lesson, f.number, lang).print_options.linewidth = columns()
    reset_state()
    _G.exercise = function(k)
        local s = exercise_at(k)
        if not s then raise("exercise: step " .. tostring(k) .. " is not an exercise") end
        session.pending, session.pos = s, #session.lesson.steps   -- the last step: no
                                                                  -- "Enter runs the next"
    end
    return lesson, f.number
end

-- Names a lesson's code can count on: mha, show, plot, answer, say{en=,zh=}, tr{en=,zh=}, LESSON.
function M.install_globals()
    if rawget(_G, "mha") == nil then _G.mha = mha end
    if rawget(_G, "show") == nil and mha.show then _G.show = mha.show end
    local has_plot, plot_module = pcall(require, "mha.plot")
    if has_plot then
        plot_module.lang = M.language  -- "head 1", "query" in Chinese in a Chinese lesson's windows
        -- a text chart fits the rows a step leaves, or starts the next screen
        -- (lua/lesson/pager.lua)
        plot_module.text_screen = {rows_left = pager.rows_left, together = pager.together}
    end
    if rawget(_G, "plot") == nil then
        local ok, plot = pcall(require, "mha.plot")
        if ok then _G.plot = plot end
    end
    -- answer(value) prints the verdict and returns whether it was right - to a script, a batch run
    -- or lesson code. At the interactive prompt it returns nothing, as :answer does: the verdict
    -- line is what the student reads, and a bare "true" under it would only repeat it.
    _G.answer = function(...)
        local right = M.answer((...), nil, select("#", ...) == 0)
        if the_repl and the_repl.interactive and session and not session.batch then return end
        return right
    end
    _G.say = function(t) say_text(tr(t)) end
    -- tr{en=, zh=}: the string of the lesson's language, for labels and titles printed by lesson
    -- code
    _G.tr = function(t) return tr(t) end
    -- LESSON.clock(): seconds on the REPL's monotonic wall clock (CPU seconds outside the REPL),
    -- for timings
    local function clock()
        if the_repl and the_repl.clock then return the_repl.clock() end
        return os.clock()
    end
    -- LESSON.table, LESSON.versus, LESSON.median_ms: formatting and timing kept out of the steps'
    -- code
    local tools = require "mha.lesson.tools"
    tools.use{lang = function() return (session and session.lang) or "en" end, width = M.width, clock = clock}
    _G.LESSON = setmetatable({}, {__index = function(_, key)
        if key == "batch" then return session and session.batch end
        if key == "lang" then return session and session.lang end
        if key == "clock" then return clock end
        return tools[key] ~= tools.use and tools[key] or nil
    end})
end

-- ---------------------------------------------------------------------------------------------
-- The REPL hands itself over: install(repl) once per Lua state. The lesson commands are then listed
-- by :help, the steps are recorded for :save, and an open lesson stays open across :reset.
-- install(nil) (or a table without add_command, as tests give) only changes where steps are
-- recorded.
-- ---------------------------------------------------------------------------------------------

function M.install(repl)
    the_repl = repl
    if not (repl and repl.add_command) then return end
    repl.lang = M.language   -- the REPL's help and messages follow the lessons' language
    pager.terminal.show = repl.write_unrecorded   -- the pager's pause is kept out of :save's .md
    mha.printoptions{lang = M.language()}   -- and so do the words printed at the prompt
                                            -- (mha.train's "done")
    -- and a plot's axes at the prompt, as in a lesson
    local has_plot, plot_module = pcall(require, "mha.plot")
    if has_plot then plot_module.lang = M.language end
    local function cmd(name, args, help, run) repl.add_command(name, {args = args, help = help, run = run}) end
    cmd("lessons", "", "list the lessons with a one-line summary", function() with_pager(M.list) end)
    cmd("open", "NAME|NUMBER", "open a lesson at its first step", function(a)
        local which = a:match("^%s*(%S+)")
        if not which then say_text(said((session and session.lang) or M.choose_lang()).open_usage); return end
        local ok, err, kind = M.start(which, {batch = false, lang = M.preferred_lang or (session and session.lang)})
        if not ok and kind ~= "step" then say_message(err) end
    end)
    cmd("next", "", "run the next step of the lesson (Enter on an empty line does too)", function() M.next() end)
    cmd("back", "", "go back one step (replays the steps before it)", function() M.back() end)
    cmd("goto", "K", "go to step K (replays steps 1..K-1 from the seed)", function(a) M.goto_step(a:match("%S+")) end)
    cmd("run", "", "run the rest of the lesson", function() M.run_rest() end)
    cmd("restart", "", "start the lesson again from step 1 and its seed", function() M.restart() end)
    cmd("answer", "EXPR", "answer the exercise with the value of EXPR", function(a) M.answer_expression(a) end)
    cmd("solution", "", "show the exercise's own solution", function() M.show_solution() end)
    cmd("text", "", "show the current step's text and code again (nothing is run)", function() M.reprint() end)
    cmd("lang", "en|zh", "switch the lesson language (the current step is shown again in it; your own variables stay)",
        function(a)
        local lang = a:match("%a+")
        lang = lang and lang:lower()
        if not (lang and M.languages[lang]) then
            say_text(said((session and session.lang) or M.choose_lang()).lang_usage)
            return
        end
        M.preferred_lang = lang
        say_text(said(lang).lang_set)
        mha.printoptions{lang = lang}
        if session then
            session.lang = lang
            session.print_options.lang = lang
            if session.pos >= 1 then
                -- the words a step resolved when it ran (token labels, titles) are the old
                -- language's: steps 1..pos run again quietly in the new one, then the step is shown
                -- again; what the student made or changed since stays as it is
                local upto, pending = math.min(session.pos, #session.lesson.steps), session.pending
                say_text(said(lang).replaying(upto, session.lesson.seed or 0))
                local before, made = globals_now(), session.made or {}
                local ok, err = replay_before(upto + 1)
                keep_students(before, made)
                if not ok then say_text(err) end
                session.pending = pending
                M.reprint()
            end
        end
    end)
    if repl.on_reset then repl.on_reset("lesson", M.carry, M.resume) end
end

-- :reset starts a new Lua state. The REPL keeps M.carry()'s string across it (repl.on_reset) and
-- gives it to M.resume in the new state, so the open lesson stays open at its step, its variables
-- rebuilt from the seed.
function M.carry()
    if not session or session.batch then return nil end
    return string.format("%d %d %s %d", session.number, session.pos, session.lang, session.pending and 1 or 0)
end

function M.resume(carried)
    local number, pos, lang, pending = tostring(carried or ""):match("^(%d+) (%d+) (%a+) ([01])$")
    if not number then return false end
    number, pos = tonumber(number), tonumber(pos)
    local ok = quietly(function() assert(M.start(number, {lang = lang, batch = false})) end)
    if not ok or not session then return false end
    M.install_globals()   -- quietly put back the plot it found, nil in a new state
    if pos >= 1 and pos <= #session.lesson.steps then
        local replayed = quietly(function() assert(replay_before(pos + 1)) end)
        if not replayed then return false end
        session.pos = pos
        local s = session.lesson.steps[pos]
        session.pending = (pending == "1" and s.kind == "exercise") and s or nil
    end
    say_text(said(session.lang).resumed(number, session.pos))
    return true
end

return M
