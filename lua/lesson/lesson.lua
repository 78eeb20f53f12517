-- lua/lesson/lesson.lua - module "mha.lesson": the lesson format (lesson, step, exercise, mistake) and the
-- runner that steps through a lesson at the prompt or replays it in batch mode.
-- Answers are checked by mha.lesson.check (lua/lesson/check.lua), the runner's words are in
-- mha.lesson.words (lua/lesson/words.lua), text wrapping and the lesson markup in mha.text (lua/show/text.lua).
--
-- A lesson file (lessons/NN_name.lua) is a Lua chunk that returns one lesson; lesson, step, exercise and
-- mistake are in scope while it loads:
--
--     return lesson{
--         name = "dot_product", seed = 2,
--         title   = {en = "Dot-product attention", zh = "点积注意力"},
--         summary = {en = "scores, softmax, weighted sum", zh = "分数、softmax、加权和"},
--         step{ title = {en = ..., zh = ...}, text = {en = [[...]], zh = [[...]]},
--               code = [[ scores = Q:matmul(K:transpose(1, 2)); show(scores, {rows = tokens}) ]] },
--         exercise{ title = {...}, prompt = {en = ..., zh = ...}, solution = [[ softmax(scores, -1) ]],
--                   mistakes = { mistake.softmax_axis, mistake{wrong = [[softmax(scores, 1)]], hint = {...}} } },
--     }
--
-- Step code runs in the REPL's global environment, so the student keeps Q, K, weights... between steps.
-- :back and :goto replay the earlier steps quietly from the lesson's seed, so state is never stale.
--
-- The REPL hands itself over with M.install(repl): the runner adds its commands, records the steps it runs
-- with repl.record_step (so :save replays them), times with repl.clock, and registers with repl.on_reset
-- what keeps the open lesson open across :reset. Without a REPL (batch mode, tests) none of that happens.

local M = {}

local mha = require "mha"
local term = require "mha.term"
local wrapper = require "mha.text"
local words_of = require "mha.lesson.words"
local check = require "mha.lesson.check"

-- ---------------------------------------------------------------------------------------------
-- Language: --lang (or :lang), then MHA_LANG, then LANG (zh* -> zh), else English.
-- ---------------------------------------------------------------------------------------------

M.languages = {en = true, zh = true}
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

-- The runner's own words, in both languages (lua/lesson/words.lua).
local words = words_of.runner

-- Text wrapping and the lesson markup live in mha.text; the names below keep the lesson API.
M.width, M.render, M.code_lines, M.rule = wrapper.width, wrapper.render, wrapper.code_lines, wrapper.rule
M.inline, M.finish, M.wrap_text, M.wrap_formula = wrapper.inline, wrapper.finish, wrapper.wrap_text, wrapper.wrap_formula
M.wrap = wrapper.wrap

-- ---------------------------------------------------------------------------------------------
-- Output: everything the runner prints goes through say_line, so quiet replays can silence it.
-- ---------------------------------------------------------------------------------------------

local session -- the open lesson; nil when none
local the_repl -- the REPL the runner runs in (M.install); nil in batch mode and in tests

local function write(...) io.stdout:write(...) end
local function say_line(s) write(s, "\n") end

-- The width the runner wraps to: the terminal's at a terminal, else $COLUMNS, else 80; in batch mode
-- never the terminal's, so a transcript depends only on $COLUMNS. At most 100 (long lines read badly),
-- at least 20.
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

-- A batch run writes a transcript, never escapes; otherwise the one colour policy (lua/sys/lterm.c).
local function use_color()
    if session and session.batch then return false end
    return term.colour(io.stdout)
end

local function say_lines(lines)
    for _, l in ipairs(M.finish(lines, use_color())) do say_line(l) end
end

-- Prints prose (the runner's words, hints, messages; lines separated by "\n"), wrapped to the terminal.
local function say_text(s)
    for line in (tostring(s) .. "\n"):gmatch("(.-)\n") do say_lines(M.wrap_text(line, columns())) end
end

-- Picks the session's language out of a {en=, zh=} table (a plain string is taken as it is).
local function tr(t, lang)
    return words_of.pick(t, lang or (session and session.lang))
end
M.tr = tr

-- ---------------------------------------------------------------------------------------------
-- The lesson format: constructors used inside lesson files, and validation.
-- ---------------------------------------------------------------------------------------------

local Step, Exercise, Mistake = {}, {}, {}

function M.step(t) t.kind = "step"; return setmetatable(t, Step) end
function M.exercise(t) t.kind = "exercise"; return setmetatable(t, Exercise) end

-- mistake{wrong = [[expr]], hint = {...}}: the student's answer equals the value of expr (a classic
-- wrong computation). mistake{error = "pattern", hint = {...}}: evaluating the answer raised an error
-- matching pattern. mistake{test = function(got, expected) -> bool}: a property of the answer.
M.mistake = setmetatable({}, {__call = function(_, t) return setmetatable(t, Mistake) end})

function M.lesson(t)
    t.steps = t.steps or {}
    for _, s in ipairs(t) do t.steps[#t.steps + 1] = s end
    for i = #t, 1, -1 do t[i] = nil end
    return t
end

-- Every text of a lesson must exist in every language; returns nil or a message naming what is missing.
function M.validate(lesson, origin)
    local problems = {}
    local function need(t, what)
        for lang in pairs(M.languages) do
            if type(t) ~= "table" or type(t[lang]) ~= "string" or t[lang]:match("^%s*$") then
                problems[#problems + 1] = string.format("%s: %s has no '%s' text", origin, what, lang)
            end
        end
    end
    if type(lesson) ~= "table" or type(lesson.steps) ~= "table" then
        return origin .. ": the file must return lesson{...}"
    end
    if type(lesson.name) ~= "string" then problems[#problems + 1] = origin .. ": lesson has no name" end
    need(lesson.title, "the title")
    need(lesson.summary, "the summary")
    if #lesson.steps == 0 then problems[#problems + 1] = origin .. ": lesson has no steps" end
    for i, s in ipairs(lesson.steps) do
        local where = "step " .. i
        need(s.title, where .. "'s title")
        if s.kind == "exercise" then
            need(s.prompt, where .. "'s prompt")
            if s.solution == nil then problems[#problems + 1] = origin .. ": " .. where .. " has no solution" end
            for j, m in ipairs(s.mistakes or {}) do need(m.hint, where .. "'s mistake " .. j .. " hint") end
        elseif s.kind == "step" then
            need(s.text, where .. "'s text")
        else
            problems[#problems + 1] = origin .. ": " .. where .. " is neither step{} nor exercise{}"
        end
        for _, field in ipairs({"code", "setup"}) do
            if s[field] and not load(s[field], "=" .. where) then
                local _, err = load(s[field], "=" .. where)
                problems[#problems + 1] = origin .. ": " .. err
            end
        end
    end
    if #problems > 0 then return table.concat(problems, "\n") end
    return nil
end

-- ---------------------------------------------------------------------------------------------
-- Finding and loading lesson files.
-- ---------------------------------------------------------------------------------------------

-- A path as a reader wants to see it: "build/qa/../../lessons" -> "lessons" (lexically; for messages only).
local function clean_path(path)
    local parts = {}
    for part in path:gmatch("[^/]+") do
        if part == ".." and #parts > 0 and parts[#parts] ~= ".." then parts[#parts] = nil
        elseif part ~= "." then parts[#parts + 1] = part end
    end
    local cleaned = table.concat(parts, "/")
    if path:sub(1, 1) == "/" then cleaned = "/" .. cleaned end
    return cleaned ~= "" and cleaned or "."
end

-- Where lessons are looked for: $MHA_LESSONS, ./lessons, and lessons/ beside the binary's directory.
function M.dirs()
    local dirs = {}
    local env = os.getenv("MHA_LESSONS")
    if env and env ~= "" then dirs[#dirs + 1] = env end
    dirs[#dirs + 1] = "lessons"
    local exe = rawget(_G, "arg") and arg[0]
    if exe then
        local dir = exe:match("^(.*)/[^/]*$")
        if dir then
            dirs[#dirs + 1] = dir .. "/../lessons"
            dirs[#dirs + 1] = dir .. "/../../lessons"
        end
    end
    return dirs
end

-- The lesson files of the first directory that has any, sorted: {{number=1, name="tour", path=...}}.
function M.files()
    for _, dir in ipairs(M.dirs()) do
        local found = {}
        local p = io.popen('ls -1 "' .. dir:gsub('"', '\\"') .. '" 2>/dev/null')
        if p then
            for f in p:lines() do
                local num, name = f:match("^(%d+)_([%w_]+)%.lua$")
                if num then
                    found[#found + 1] = {number = tonumber(num), name = name, file = f, path = dir .. "/" .. f}
                end
            end
            p:close()
        end
        if #found > 0 then
            table.sort(found, function(a, b) return a.number < b.number end)
            return found, dir
        end
    end
    return {}, nil
end

local function lesson_env()
    return setmetatable({lesson = M.lesson, step = M.step, exercise = M.exercise, mistake = M.mistake},
        {__index = _G})
end

-- Loads and validates one lesson file; returns lesson or nil, message.
function M.load(path)
    local chunk, err = loadfile(path, "t", lesson_env())
    if not chunk then return nil, err end
    local ok, lesson = pcall(chunk)
    if not ok then return nil, path .. ": " .. tostring(lesson) end
    local problem = M.validate(lesson, path)
    if problem then return nil, problem end
    lesson.path = path
    return lesson
end

-- Finds a lesson by number ("2", 2), file-name part ("dot_product"), or file name ("02_dot_product").
-- Returns the file, or nil and a message naming the lessons there are.
function M.find(which)
    local files = M.files()
    if #files == 0 then
        local looked = {}
        for i, dir in ipairs(M.dirs()) do looked[i] = clean_path(dir) end
        return nil, "no lessons found (looked in " .. table.concat(looked, ", ") .. "; set MHA_LESSONS)"
    end
    local key = tostring(which):gsub("%.lua$", "")
    for _, f in ipairs(files) do
        if tostring(f.number) == key:gsub("^0+(%d)", "%1") or f.name == key or f.file == key .. ".lua" then
            return f
        end
    end
    local names = {}
    for _, f in ipairs(files) do names[#names + 1] = string.format("%d %s", f.number, f.name) end
    return nil, string.format("no lesson '%s'; give a number from %d to %d or a name: %s", key,
        files[1].number, files[#files].number, table.concat(names, ", "))
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

local function note(kind, opts, detail)
    local title = opts and opts.title
    say_lines(M.wrap(string.format("[plot: %s%s%s]", kind, title and (" \"" .. title .. "\"") or "",
        detail and (" " .. detail) or ""), columns(), {rest = "  "}))
end

M.batch_plot = {
    heatmap = function(m, opts)
        note("heatmap", opts, shape_of(m))
        if mha.heat then mha.heat(m, {rows = opts and opts.rows, cols = opts and opts.cols}) end
    end,
    heads = function(w, opts)
        note("heads", opts, shape_of(w))
        if not (mha.heat and mha.is_tensor(w)) then return end
        if #w:shape() == 4 then w = w:select(1, 1) end   -- (N,H,L,S): the first batch item
        local tokens = opts and opts.tokens
        for h = 1, w:shape()[1] do
            say_line(string.format("head %d", h))
            mha.heat(w:select(1, h), {rows = tokens, cols = tokens})
        end
    end,
    line = function(spec)
        local names = {}
        for i, series in ipairs(spec) do names[i] = series.title or ("series " .. i) end
        note("line", spec, #spec .. " series: " .. table.concat(names, ", "))
    end,
    bar = function(labels, values, opts) note("bar", opts, #labels .. " bars") end,
    save = function(file) end,
}
local silent_plot = setmetatable({}, {__index = function() return function() end end})

-- ---------------------------------------------------------------------------------------------
-- The session: showing steps, replaying, exercises.
-- ---------------------------------------------------------------------------------------------

local function header(k, n, title)
    local lang = session.lang
    local label
    if lang == "zh" then label = string.format("第 %d/%d 步：%s", k, n, title)
    else label = string.format("step %d/%d: %s", k, n, title) end
    return M.rule(columns(), label)
end

local function print_text(text)
    for _, line in ipairs(M.render(text, columns(), use_color())) do say_line(line) end
end

local function echo_code(code)
    for _, line in ipairs(M.code_lines(code, columns())) do say_line(line) end
end

-- Tells the REPL (when it keeps a transcript) what a step ran, so :save writes a script that works.
local function record_step(code, label, ok)
    if the_repl and the_repl.record_step then the_repl.record_step(code, label, ok) end
end

-- Runs a step's code in the global environment; returns true or false, message.
local function run_code(code, k)
    local label = string.format("lesson %s, step %d", session.lesson.name or "?", k)
    local chunk, err = load(code, "=step " .. k, "t", _G)
    if not chunk then record_step(code, label, false); return false, err end
    local ok, e = xpcall(chunk, function(x) return tostring(x) end)
    record_step(code, label, ok)
    return ok, e
end

-- Runs fn with the runner's and the lesson's output thrown away (print, io.write, io.stdout, plots).
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
    if mha.printoptions then mha.printoptions(session.print_options) end
end

local function exercise_prompt(ex, k)
    local lang = session.lang
    print_text(tr(ex.prompt, lang))
end

-- Shows step k (title, text, code echoed and run); returns true, or false, message on an error.
local function show_step(k)
    local lesson = session.lesson
    local s = lesson.steps[k]
    local lang = session.lang
    say_line("")
    say_lines(header(k, #lesson.steps, tr(s.title, lang)))
    if s.kind == "exercise" then
        say_text(words[lang].exercise .. words[lang].colon)
        exercise_prompt(s, k)
    else
        print_text(tr(s.text, lang))
    end
    local code = s.code or s.setup
    if code then
        say_line("")
        echo_code(code)
        local ok, err = run_code(code, k)
        if not ok then
            say_text(string.format(words[lang].error_in_step, k) .. words[lang].colon_space .. err)
            -- the step stays unrun, so Enter would run it again on the same state: say how to rebuild it
            if not session.batch then say_text(words[lang].recover(k)) end
            return false, err
        end
    end
    session.pos = k
    session.pending = nil
    if s.kind == "exercise" then
        if session.batch then
            local shown = type(s.solution) == "string" and s.solution:gsub("^%s+", ""):gsub("%s+$", "") or "solution"
            say_line("")
            say_text(words[lang].batch_answer)
            say_lines(M.wrap("answer(" .. shown .. ")", columns(), {rest = "  ", mode = "code"}))
            local value = check.evaluate(s.solution, "solution")
            local ok, verdict = M.check(s, value)
            say_text(verdict)
            if not ok then return false, "the lesson's own solution was not accepted: " .. verdict end
        else
            session.pending = s
            say_line("")
            say_text(words[lang].ask)
        end
    end
    return true
end

-- Replays steps 1..k-1 quietly from the seed, so the state is what step k expects.
local function replay_before(k)
    reset_state()
    for i = 1, k - 1 do
        local s = session.lesson.steps[i]
        local code = s.code or s.setup
        if code then
            local ok, err = quietly(function()
                local okc, errc = run_code(code, i)
                if not okc then error(errc, 0) end
            end)
            if not ok then return false, string.format(words[session.lang].error_in_step, i) .. words[session.lang].colon_space .. tostring(err) end
        end
    end
    return true
end

local function need_session()
    if not session then say_text(words[M.choose_lang()].no_lesson); return false end
    return true
end

function M.next()
    if not need_session() then return false end
    if session.pending then say_text(words[session.lang].skipped); session.pending = nil end
    local k = session.pos + 1
    if k > #session.lesson.steps then say_text(words[session.lang].the_end); return true end
    return show_step(k)
end

function M.goto_step(k)
    if not need_session() then return false end
    local n = #session.lesson.steps
    k = math.tointeger(tonumber(k))
    if not k or k < 1 or k > n then
        say_text(string.format(session.lang == "zh" and ":goto：步骤编号应在 1 到 %d 之间" or
            ":goto: the step number must be between 1 and %d", n))
        return false
    end
    if k > 1 then say_text(words[session.lang].replaying(k - 1, session.lesson.seed or 0)) end
    local ok, err = replay_before(k)
    if not ok then say_text(err); return false end
    return show_step(k)
end

function M.back()
    if not need_session() then return false end
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
    if not session.pending then say_text(words[session.lang].the_end) end
    return true
end

-- answer(value) at the prompt, or :answer EXPR (then the expression's error can match a hint).
function M.answer(value, eval_error)
    if not need_session() then return false end
    local ex = session.pending
    if not ex then
        ex = session.lesson.steps[session.pos]
        if not (ex and ex.kind == "exercise") then say_text(words[session.lang].no_exercise); return false end
    end
    local okc, ok, message = pcall(M.check, ex, value, eval_error)
    if not okc then
        say_text(check.malformed(tostring(ok), session.lang))
        return false
    end
    say_text(ok and message or (words[session.lang].not_yet .. words[session.lang].colon_space .. message))
    if ok then
        session.pending = nil
        if session.pos < #session.lesson.steps then say_text(words[session.lang].next_hint) end
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
    if not (ex and ex.kind == "exercise") then say_text(words[session.lang].no_exercise); return false end
    local shown = type(ex.solution) == "string" and ex.solution:gsub("^%s+", ""):gsub("%s+$", "") or "(a function)"
    say_lines(M.wrap(shown, columns(), {first = words[session.lang].solution .. words[session.lang].colon_space, rest = "  ", mode = "code"}))
    return true
end

-- The one-line list of :lessons.
function M.list(lang)
    lang = lang or (session and session.lang) or M.choose_lang()
    local files = M.files()
    local width = columns()
    say_text(words[lang].lessons)
    for _, f in ipairs(files) do
        local lesson, err = M.load(f.path)
        local summary = lesson and tr(lesson.summary, lang) or "(cannot load: " .. err:match("[^\n]*") .. ")"
        -- the summary in a column after the number and name, or under them when the column is too narrow
        local head = string.format("  %2d  %-18s ", f.number, f.name)
        if M.width(head) <= width - 20 then
            say_lines(M.wrap_text(summary, width, head, string.rep(" ", M.width(head))))
        else
            say_line((head:gsub("%s+$", "")))
            say_lines(M.wrap_text(summary, width, "      "))
        end
    end
    return true
end

function M.current() return session end

-- M.start without the REPL's Enter key: opens the session and shows step 1, or runs every step.
local function open_session(which, opts)
    opts = opts or {}
    local f, err = M.find(which)
    if not f then return false, err, "usage" end
    local lesson
    lesson, err = M.load(f.path)
    if not lesson then return false, err, "load" end
    local batch = opts.batch
    if batch == nil then batch = not (term.isatty(0) and term.isatty(1)) end
    session = {lesson = lesson, number = f.number, lang = M.choose_lang(opts.lang), batch = batch, pos = 0,
               width = opts.width, print_options = {precision = 4}}
    -- a transcript's tensors are as wide as its text (at a terminal, mha.show follows the terminal)
    if batch then session.print_options.linewidth = columns() end
    M.install_globals()
    if batch then _G.plot = M.batch_plot end
    local lang = session.lang
    say_lines(M.rule(columns(), string.format("%02d %s", f.number, tr(lesson.title, lang))))
    print_text(tr(lesson.summary, lang))
    -- a script :save writes needs the names step code uses (show, plot, tr, say, LESSON ...)
    record_step('require("mha.lesson").install_globals()', "the lesson's helpers")
    reset_state()
    if batch then
        for k = 1, #lesson.steps do
            local ok, e = show_step(k)
            if not ok then return false, e, "step" end
        end
        say_line("")
        say_text(words[lang].the_end)
        return true
    end
    say_text(words[lang].next_hint)
    local ok, e = show_step(1)
    if not ok then return false, e, "step" end
    return true
end

-- Opens a lesson and shows its first step (interactive), or runs it all (batch); at the REPL's prompt
-- Enter on an empty line then runs the next step. (mha-repl --lesson and :open both come here.)
-- opts: batch (bool), lang (string or nil), width (columns; default: see columns()).
-- Returns true; or false, message, kind: kind "usage" when no lesson has that name or number, "load"
-- when the lesson file is broken (neither is printed: the caller says it once), "step" when a step
-- failed (printed where it happened).
function M.start(which, opts)
    local ok, err, kind = open_session(which, opts)
    if the_repl and session and not session.batch then the_repl.on_empty_line = M.next end
    return ok, err, kind
end

-- A notebook of the lesson (mha.notebook) runs its steps' code cell by cell: this opens the lesson as batch
-- mode does (language, seed, print options, helpers) without running a step; exercise(k) then makes step k
-- the exercise answer() checks. Returns the lesson and its number, or nil and a message.
function M.open_cells(which, lang)
    local f, err = M.find(which)
    if not f then return nil, err end
    local lesson
    lesson, err = M.load(f.path)
    if not lesson then return nil, err end
    session = {lesson = lesson, number = f.number, lang = M.choose_lang(lang), batch = true, pos = 0,
               print_options = {precision = 4}}
    session.print_options.linewidth = columns()
    M.install_globals()
    reset_state()
    _G.exercise = function(k)
        local s = session.lesson.steps[k]
        if not (s and s.kind == "exercise") then error("exercise: step " .. tostring(k) .. " is not an exercise", 2) end
        session.pending, session.pos = s, #session.lesson.steps   -- the last step: no "Enter runs the next"
    end
    return lesson, f.number
end

-- Names a lesson's code can count on: mha, show, plot, answer, say{en=,zh=}, tr{en=,zh=}, LESSON.
function M.install_globals()
    if rawget(_G, "mha") == nil then _G.mha = mha end
    if rawget(_G, "show") == nil and mha.show then _G.show = mha.show end
    if rawget(_G, "plot") == nil then
        local ok, plot = pcall(require, "mha.plot")
        if ok then _G.plot = plot end
    end
    -- answer returns nothing, so the REPL prints only the verdict
    _G.answer = function(value) M.answer(value) end
    _G.say = function(t) say_text(tr(t)) end
    -- tr{en=, zh=}: the string of the lesson's language, for labels and titles printed by lesson code
    _G.tr = function(t) return tr(t) end
    -- LESSON.clock(): seconds on the REPL's monotonic wall clock (CPU seconds outside the REPL), for timings
    local function clock()
        if the_repl and the_repl.clock then return the_repl.clock() end
        return os.clock()
    end
    _G.LESSON = setmetatable({}, {__index = function(_, key)
        if key == "batch" then return session and session.batch end
        if key == "lang" then return session and session.lang end
        if key == "clock" then return clock end
    end})
end

-- ---------------------------------------------------------------------------------------------
-- The REPL hands itself over: install(repl) once per Lua state. The lesson commands are then listed by
-- :help, the steps are recorded for :save, and an open lesson stays open across :reset. install(nil)
-- (or a table without add_command, as tests give) only changes where steps are recorded.
-- ---------------------------------------------------------------------------------------------

function M.install(repl)
    the_repl = repl
    if not (repl and repl.add_command) then return end
    local function cmd(name, args, help, run) repl.add_command(name, {args = args, help = help, run = run}) end
    cmd("lessons", "", "list the lessons with a one-line summary", function() M.list() end)
    cmd("open", "NAME|NUMBER", "open a lesson at its first step", function(a)
        local which = a:match("^%s*(%S+)")
        if not which then say_text(":open NAME|NUMBER (:lessons lists them)"); return end
        local ok, err, kind = M.start(which, {batch = false, lang = M.preferred_lang or (session and session.lang)})
        if not ok and kind ~= "step" then say_text(err) end
    end)
    cmd("next", "", "run the next step of the lesson (Enter on an empty line does too)", function() M.next() end)
    cmd("back", "", "go back one step (replays the steps before it)", function() M.back() end)
    cmd("goto", "K", "go to step K (replays steps 1..K-1 from the seed)", function(a) M.goto_step(a:match("%S+")) end)
    cmd("run", "", "run the rest of the lesson", function() M.run_rest() end)
    cmd("restart", "", "start the lesson again from step 1 and its seed", function() M.restart() end)
    cmd("answer", "EXPR", "answer the exercise with the value of EXPR", function(a) M.answer_expression(a) end)
    cmd("solution", "", "show the exercise's own solution", function() M.show_solution() end)
    cmd("lang", "en|zh", "switch the lesson language", function(a)
        local lang = a:match("%a+")
        lang = lang and lang:lower()
        if not (lang and M.languages[lang]) then
            say_text(words[(session and session.lang) or M.choose_lang()].lang_usage)
            return
        end
        M.preferred_lang = lang
        if session then session.lang = lang end
        say_text(words[lang].lang_set)
    end)
    if repl.on_reset then repl.on_reset("lesson", M.carry, M.resume) end
end

-- :reset starts a new Lua state. The REPL keeps M.carry()'s string across it (repl.on_reset) and gives
-- it to M.resume in the new state, so the open lesson stays open at its step, its variables rebuilt
-- from the seed.
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
    say_text(words[session.lang].resumed(number, session.pos))
    return true
end

return M
