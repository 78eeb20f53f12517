-- lua/notebook/record.lua - module "mha.notebook.record": the tables and figures a REPL session
-- shows, kept as it runs so that :export writes them as a notebook's rich outputs (mha.notebook),
-- as a lesson's export has.
--
-- The REPL hands itself over (record.install(repl, runner), from repl.init). A kept output covers a
-- span of what an input printed (repl.output_mark() where the span starts, repl.keep_output at its
-- end); the export shows the output in place of that text. What is kept, and its bound:
--   a tensor shown as a value or by show(): its HTML table (mha.notebook.html: at most 8 slices
--     of 32 rows by 32 columns, read when it is shown), never the tensor;
--   a figure drawn: the gnuplot script of its last drawing in the input (the commands, data
--     inline as text), drawn as a PNG only when :export runs.
-- Past MAX_BYTES (32 MiB) kept in a session, later tables and figures stay text in the export.

local html = require "mha.notebook.html"
local i18n = require "mha.i18n"   -- the headings' words (room notebook)

local M = {}

M.MAX_BYTES = 32 * 1024 * 1024
local kept_bytes = 0
local the_repl, the_runner

local function is_tensor(v)
    local mt = getmetatable(v)
    return type(mt) == "table" and mt.__name == "mha.Tensor"
end

-- Keeps output (with .bytes, its size) over the text printed since from; key: a figure, whose
-- earlier drawing in the same input it replaces.
local function keep(from, output, key)
    if kept_bytes + output.bytes > M.MAX_BYTES then return end
    kept_bytes = kept_bytes + output.bytes
    local replaced = the_repl.keep_output(from, output, key)
    if replaced then kept_bytes = kept_bytes - replaced.bytes end
end

local function tensor_table(kind, t, opts)
    local ok, table_html = pcall(html.tensor, t, opts)
    if ok then return {kind = kind, html = table_html, bytes = #table_html} end
end

-- repl.after's values, printed since from: a single tensor is also an execute_result table.
function M.values(from, ...)
    if select("#", ...) == 1 and is_tensor((...)) then
        local output = tensor_table("execute_result", (...))
        if output then keep(from, output) end
    end
end

-- show(t, opts): its text, and a display_data table with its token labels.
local function wrap_show(original)
    return function(t, opts)
        local from = the_repl.output_mark()
        original(t, opts)
        if is_tensor(t) then
            local output = tensor_table("display_data", t, opts)
            if output then keep(from, output) end
        end
    end
end

-- plot.on_drawing: the drawing's script (without its text fallback, a closure over the data)
-- replaces what the drawing printed, a text plot in a terminal without a window.
local function on_drawing(fig)
    local from, script = the_repl.output_mark(), fig.script
    return function()
        local bytes = 0
        for _, command in ipairs(script.commands) do bytes = bytes + #command end
        keep(from, {kind = "figure", number = fig.number, bytes = bytes,
                    script = {commands = script.commands, size = script.size, warning = script.warning}}, fig)
    end
end

-- The heading and text of a lesson (its title and summary) and of step k, as the notebook shows
-- them.
function M.lesson_heading(session, tr)
    return {title = string.format("%02d %s", session.number, tr(session.lesson.title, session.lang)), level = 1,
            markup = tr(session.lesson.summary, session.lang)}
end

function M.step_heading(session, k, tr)
    local lang, s, n = session.lang, session.lesson.steps[k], #session.lesson.steps
    local said = i18n.words(lang).notebook
    local title = string.format(said.step_heading, k, n, tr(s.title, lang))
    local markup = s.kind == "exercise" and (said.exercise_heading .. tr(s.prompt, lang))
                   or tr(s.text, lang)
    return {title = title, level = 2, markup = markup}
end

-- For repl.record_step (label and before as it takes them): the heading of the lesson or step whose
-- code the open lesson ran, or nil for other code (the seed) and for a script :save wrote. A
-- lesson's heading also has its language and the number it is found by
-- (nil for a file opened by its path), an exercise's its step number as exercise.
function M.step(label, before)
    local session = the_runner and the_runner.current()
    if not session or session.replay then return nil end
    if label == "the lesson" then   -- with what a notebook's first cell opens it by
        local heading = M.lesson_heading(session, the_runner.tr)
        local found = the_runner.find(session.number, session.lang)   -- not a file opened by its
                                                                      -- path
        heading.number = found and found.file == session.lesson.file and session.number or nil
        heading.lang = session.lang
        return heading
    end
    local k = math.tointeger(tonumber(tostring(before or ""):match("at_step%((%d+)%)")))
    if k and session.lesson.steps[k] then
        local heading = M.step_heading(session, k, the_runner.tr)
        -- answer() checks it
        heading.exercise = session.lesson.steps[k].kind == "exercise" and k or nil
        heading.lang = session.lang
        return heading
    end
end

-- Once per Lua state. runner: the lesson runner (mha.lesson) the REPL runs, or nil.
function M.install(repl, runner)
    the_repl, the_runner = repl, runner
    require("mha.notebook.outputs").wrap_show(wrap_show)
    local ok, plot = pcall(require, "mha.plot")
    if ok and type(plot) == "table" then plot.on_drawing = on_drawing end
end

return M
