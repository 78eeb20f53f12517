-- lua/notebook/notebook.lua - module "mha.notebook": a lesson or a REPL session written as a
-- Jupyter notebook (.ipynb, nbformat 4.4, kernel "mha-repl") or as one self-contained HTML page
-- (no network, prints well).
--
-- A lesson's cells are run by mha.kernel, as the Jupyter kernel runs them, so a notebook
-- re-executed in Jupyter gives the same outputs. JSON goes through mha.json (jansson); every user
-- string in the HTML is escaped (mha.notebook.html). Files are written to a temporary name beside
-- the target, then renamed over it.

local json = require "mha.json"
local proc = require "mha.proc"   -- the second mha-repl of :export lesson, run without a shell
local html = require "mha.notebook.html"
local outputs = require "mha.notebook.outputs"   -- figures as PNG (and SVG for the page)
local record = require "mha.notebook.record"     -- a lesson's and a step's heading

local M = {}

local KERNELSPEC = {name = "mha-repl", display_name = "mha-repl (Lua 5.4)", language = "lua"}
local LANGUAGE_INFO = {name = "lua", version = "5.4", mimetype = "text/x-lua", file_extension = ".lua"}

-- ---------------------------------------------------------------------------------------------
-- Lesson markup (mha.text: "# heading", "- item", blank lines, lines indented by 2+ spaces are
-- formulas, `code`, *emphasis*) to Markdown and to HTML.
-- ---------------------------------------------------------------------------------------------

-- Blocks of the markup: {kind = "para"|"item"|"heading"|"formula", lines = {...}}
local function blocks_of(markup)
    local blocks, current = {}, nil
    for line in (tostring(markup or "") .. "\n"):gmatch("(.-)\n") do
        local kind
        if line:match("^%s*$") then kind = nil
        elseif line:match("^  ") then kind = "formula"
        elseif line:match("^#+%s") then kind = "heading"
        elseif line:match("^%- ") then kind = "item"
        else kind = "para" end
        if kind == nil then current = nil
        elseif current and current.kind == kind and kind ~= "heading" and kind ~= "item" then
            current.lines[#current.lines + 1] = line
        elseif current and current.kind == "item" and kind == "para" then
            current.lines[#current.lines + 1] = line   -- an item's continuation line
        else
            current = {kind = kind, lines = {line}}
            blocks[#blocks + 1] = current
        end
    end
    return blocks
end

-- The lines of a paragraph as one: a space between them, none where CJK text meets
-- (as mha.text joins).
local function wide(cp) return cp and cp >= 0x2E80 and cp <= 0xFFEF end
local function join_lines(lines)
    local out = lines[1] or ""
    for i = 2, #lines do
        local last = utf8.codepoint(out, utf8.offset(out, -1) or 1)
        local ok, next_cp = pcall(utf8.codepoint, lines[i], 1)
        out = out .. ((wide(last) or (ok and wide(next_cp))) and "" or " ") .. lines[i]
    end
    return out
end

-- Prose for Markdown: '<', '>' and '&' as entities outside `code` spans, so that they show as
-- written and no HTML passes through; a backtick that opens no closed span is prose too. Control
-- characters show as their pictures (html.escape's).
local function markdown_prose(s)
    local out, inside = {}, false
    local _, ticks = s:gsub("`", "")
    local pieces = {}
    for piece in (s .. "`"):gmatch("(.-)`") do pieces[#pieces + 1] = piece end
    for i, piece in ipairs(pieces) do
        -- the last of an odd count: unclosed
        local code = inside and not (ticks % 2 == 1 and i == #pieces)
        out[#out + 1] = code and piece or piece:gsub("[&<>]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;"})
        inside = not inside
    end
    return (table.concat(out, "`"):gsub("[%c\127]", html.escape))   -- (a line feed stays one)
end

-- A Markdown fence longer than any run of backticks in s, so that s cannot close it.
local function fence_for(s)
    local longest = 2
    for run in s:gmatch("`+") do longest = math.max(longest, #run) end
    return string.rep("`", longest + 1)
end

local function dedent(lines)
    local indent = math.huge
    for _, l in ipairs(lines) do indent = math.min(indent, #l:match("^ *")) end
    local out = {}
    for i, l in ipairs(lines) do out[i] = l:sub(indent + 1) end
    return out
end

function M.markdown(markup, heading_level)
    local out = {}
    for _, b in ipairs(blocks_of(markup)) do
        if b.kind == "formula" then
            local formula = table.concat(dedent(b.lines), "\n"):gsub("[%c\127]", html.escape)
            local fence = fence_for(formula)
            out[#out + 1] = fence .. "text\n" .. formula .. "\n" .. fence
        elseif b.kind == "heading" then
            out[#out + 1] = string.rep("#", heading_level or 3) .. " " .. markdown_prose(b.lines[1]:gsub("^#+%s+", ""))
        else
            out[#out + 1] = markdown_prose(join_lines(b.lines))
        end
    end
    return table.concat(out, "\n\n")
end

-- Inline markup to HTML: escaped first, then `code`, **strong**, *emphasis*.
local function inline_html(s)
    local out, inside = {}, false
    for piece in (s .. "`"):gmatch("(.-)`") do
        if inside then out[#out + 1] = "<code>" .. html.escape(piece) .. "</code>"
        else
            local text = html.escape(piece)
            text = text:gsub("%*%*(.-)%*%*", "<strong>%1</strong>"):gsub("%*([^%s*][^*]-)%*", "<em>%1</em>")
            out[#out + 1] = text
        end
        inside = not inside
    end
    return table.concat(out)
end

function M.html_text(markup)
    local out, in_list = {}, false
    for _, b in ipairs(blocks_of(markup)) do
        if b.kind ~= "item" and in_list then out[#out + 1] = "</ul>" in_list = false end
        if b.kind == "formula" then
            out[#out + 1] = '<pre class="formula">' .. html.escape(table.concat(dedent(b.lines), "\n")) .. "</pre>"
        elseif b.kind == "heading" then
            out[#out + 1] = "<h3>" .. inline_html(b.lines[1]:gsub("^#+%s+", "")) .. "</h3>"
        elseif b.kind == "item" then
            if not in_list then out[#out + 1] = "<ul>" in_list = true end
            out[#out + 1] = "<li>" .. inline_html((join_lines(b.lines):gsub("^%- ", ""))) .. "</li>"
        else
            out[#out + 1] = "<p>" .. inline_html(join_lines(b.lines)) .. "</p>"
        end
    end
    if in_list then out[#out + 1] = "</ul>" end
    return table.concat(out, "\n")
end

-- ---------------------------------------------------------------------------------------------
-- Cells: {kind = "markdown", markup = lesson markup, title = heading} or
--        {kind = "code", source = code, outputs = {nbformat outputs}, count = n}
-- ---------------------------------------------------------------------------------------------

-- Runs code as a notebook cell (mha.kernel) and returns the code cell with its outputs.
local function run_cell(code, count)
    local outputs = {}
    require("mha.kernel").execute(code, function(output)
        local last = outputs[#outputs]   -- streams in a row are one output, as Jupyter keeps them
        if output.output_type == "stream" and last and last.output_type == "stream" and last.name == output.name then
            last.text = last.text .. output.text
        else
            outputs[#outputs + 1] = output
        end
    end)
    return {kind = "code", source = code, outputs = outputs, count = count}
end

-- What an export says (the first cell's comment; why it cannot write), in the language the caller
-- names (English by default).
local i18n = require "mha.i18n"
local function words(lang) return i18n.words(lang).notebook end

-- A notebook's cell that opens lesson which (a number or a path) for code in lang, as --batch opens
-- it.
local function opening(which, lang)
    return string.format('-- %s\nrequire("mha.lesson").open_cells(%s, %q);', words(lang).setup,
                         math.tointeger(tonumber(which)) or string.format("%q", which), lang)
end

local function trim(s)
    return (s:gsub("^%s*\n", ""):gsub("%s+$", ""))
end

-- The cells of a whole lesson, run from its seed: its text as Markdown, each step's code and each
-- exercise's answer (the lesson's own solution) as code cells with their outputs.
function M.lesson_cells(which, lang)
    local lessons = require "mha.lesson"
    local found, not_found = lessons.find(which, lang)
    if not found then return nil, not_found end
    local chosen = lessons.choose_lang(lang)
    local count = 1
    local first = run_cell(opening(which, chosen), count)
    local session = lessons.current()
    if not session then
        local err = first.outputs[#first.outputs]
        return nil, err and err.evalue or words(lang).not_opened
    end
    local lesson = session.lesson
    lang = session.lang
    local heading = record.lesson_heading(session, lessons.tr)
    local cells = {{kind = "markdown", title = heading.title, level = heading.level, markup = heading.markup}, first}
    for k, s in ipairs(lesson.steps) do
        heading = record.step_heading(session, k, lessons.tr)
        cells[#cells + 1] = {kind = "markdown", title = heading.title, level = heading.level, markup = heading.markup}
        local code = s.code or s.setup
        if type(code) == "string" then
            count = count + 1   -- the code as the runner echoes it: tr{} of literals in the
                                -- lesson's language
            cells[#cells + 1] = run_cell(trim(require("mha.lesson.tools").resolve(code, lang)), count)
        end
        if s.kind == "exercise" and type(s.solution) == "string" then
            count = count + 1
            local answer = string.format("exercise(%d)   -- %s\nanswer(%s);", k, words(lang).your_answer,
                trim(s.solution))
            cells[#cells + 1] = run_cell(answer, count)
        end
    end
    return cells, session
end

-- ---------------------------------------------------------------------------------------------
-- A REPL session (its transcript, lua/repl/repl.lua) as cells: what the student typed and saw
-- ---------------------------------------------------------------------------------------------

-- The commands that run lesson steps: what they print after a step
-- (the exercise's question, an error) joins that step's code cell.
local STEPPING = {next = true, open = true, ["goto"] = true, back = true, restart = true, run = true}

-- How much of what a shown step printed comes before its code's output: the header and text, up to
-- the end of the lines the runner echoes the code with ("  │ code"). 0 when there are none.
local function echo_length(text)
    local first = text:sub(1, #"  │") == "  │" and 1 or text:find("\n  │", 1, true)
    if not first then return 0 end
    local at = text:sub(first, first) == "\n" and first + 1 or first
    while text:sub(at, at + #"  │" - 1) == "  │" do
        local line_end = text:find("\n", at, true)
        if not line_end then return #text end
        at = line_end + 1
    end
    return at - 1
end

-- A kept table or figure (mha.notebook.record) as an nbformat output; text: what it printed. nil
-- when a figure cannot be drawn (then its text stays).
local function kept_output(kept, text)
    if kept.kind == "figure" then return outputs.figure(kept.script, kept.number) end
    return {output_type = kept.kind, metadata = json.object(),
            data = {["text/plain"] = (text:gsub("\n$", "")), ["text/html"] = kept.html}}
end

-- The outputs of what an entry printed after its first skip bytes: the text as stdout, its kept
-- tables and figures in their places.
local function entry_outputs(entry, skip)
    local outs = {}
    for _, part in ipairs(entry.parts or {{text = entry.output}}) do
        local text = part.text
        if skip > 0 then
            text, skip = text:sub(skip + 1), math.max(0, skip - #text)
        end
        local rich = part.output and kept_output(part.output, text)
        local last = outs[#outs]
        if rich then outs[#outs + 1] = rich
        elseif text ~= "" and last and last.output_type == "stream" then last.text = last.text .. text
        elseif text ~= "" then outs[#outs + 1] = {output_type = "stream", name = "stdout", text = text} end
    end
    return outs
end

-- An input that raised an error: what it printed, ending in the message, as one error output.
local function error_output(entry)
    local lines = {}
    for line in entry.output:gsub("\n$", ""):gmatch("[^\n]*") do lines[#lines + 1] = line end
    return {output_type = "error", ename = entry.how == "interrupted" and "Interrupted" or "Error",
            evalue = lines[#lines] or "", traceback = lines}
end

-- The cells of a session's transcript: each lesson step as shown
-- (its heading and text as Markdown, its code with what it printed), each input and command with
-- what it printed - tensors as tables, figures as pictures - the answers to exercises, right and
-- wrong, among them. Steps replayed quietly (:goto, :back) were not shown and are left out. The
-- notebook re-runs: a lesson's heading is followed by the cell that opens it for code
-- (as :export lesson's first cell), an exercise's by at_step(k), which makes it the exercise the
-- answers after it are checked against. A command that steps the lesson (Enter, :next ...) is no
-- cell of its own: the step it showed is its Markdown and code cells, and the rest of what it
-- printed (how to go on at the prompt, or why it could not step) is the REPL's, not the code's.
function M.session_cells(entries)
    local cells, count = {{kind = "markdown", title = "mha-repl session", level = 1, markup = ""}}, 0
    local function code_cell(source, outs)
        count = count + 1
        cells[#cells + 1] = {kind = "code", source = source, outputs = outs, count = count}
        return cells[#cells]
    end
    local stepped, step_cell = false, nil   -- steps since the last input; the code cell of the last
    local exercise_marked = false   -- a cell made an exercise pending; no step has been shown since
    local function at_step(k, comment)      -- the lesson at step k, as :save's script marks it
        code_cell(string.format('require("mha.lesson").at_step(%d)   -- %s', k, comment), {})
    end
    for _, entry in ipairs(entries) do
        local heading = entry.heading
        if entry.kind == "step" then
            local echo = echo_length(entry.output)
            stepped = true
            if heading and (heading.level == 1 or (entry.output ~= "" and (echo > 0 or entry.input == ""))) then
                cells[#cells + 1] = {kind = "markdown", title = heading.title, level = heading.level + 1,
                                     markup = heading.markup}
                step_cell = nil
                local step = tonumber(tostring(entry.before or ""):match("at_step%((%d+)%)"))
                if heading.level == 1 then   -- by its number, else as :save's script opens it (by
                                             -- its path)
                    code_cell(heading.number and opening(heading.number, heading.lang) or entry.input .. ";", {})
                elseif heading.exercise then   -- pending at its step, as in the session
                    at_step(heading.exercise, words(heading.lang).exercise)
                else
                    if exercise_marked and step then   -- showing a step ended the exercise in the
                                                       -- session
                        at_step(step, words(heading.lang).past)
                    end
                    if entry.input ~= "" then step_cell = code_cell(entry.input, entry_outputs(entry, echo)) end
                end
                exercise_marked = heading.exercise ~= nil
            elseif not heading and entry.input ~= "" then   -- the lesson's seed
                step_cell = code_cell(entry.input, entry_outputs(entry, 0))
            end
        elseif entry.kind == "enter" or STEPPING[entry.command] then
            if stepped and entry.output ~= "" and step_cell then   -- an error or the exercise's
                                                                   -- question
                local outs = step_cell.outputs
                local last = outs[#outs]
                if last and last.output_type == "stream" then last.text = last.text .. entry.output
                else outs[#outs + 1] = {output_type = "stream", name = "stdout", text = entry.output} end
            end
            stepped, step_cell = false, nil
        else
            stepped, step_cell = false, nil
            local errs = entry.kind == "lua" and (entry.how == "error" or entry.how == "interrupted")
            code_cell(entry.input, errs and {error_output(entry)} or entry_outputs(entry, 0))
        end
    end
    return cells
end

-- ---------------------------------------------------------------------------------------------
-- Writers
-- ---------------------------------------------------------------------------------------------

-- "a\nb\n" -> {"a\n", "b\n"}: nbformat's multi-line strings, one line an element.
local function lines_of(s)
    local out = {}
    for line in s:gmatch("[^\n]*\n?") do if line ~= "" then out[#out + 1] = line end end
    return out
end

local function ipynb_output(o, count)
    if o.output_type == "stream" then return {output_type = "stream", name = o.name, text = lines_of(o.text)} end
    if o.output_type == "error" then
        return {output_type = "error", ename = o.ename, evalue = o.evalue, traceback = o.traceback}
    end
    local data = {}
    for mime, value in pairs(o.data) do data[mime] = mime == "image/png" and value or lines_of(value) end
    local out = {output_type = o.output_type, data = data, metadata = json.object()}
    if o.output_type == "execute_result" then out.execution_count = count end
    return out
end

function M.ipynb(cells, title)
    local nb_cells = {}
    for _, c in ipairs(cells) do
        if c.kind == "markdown" then
            local md = string.rep("#", c.level or 2) .. " " .. markdown_prose(c.title)
            local body = M.markdown(c.markup)
            if body ~= "" then md = md .. "\n\n" .. body end
            nb_cells[#nb_cells + 1] = {cell_type = "markdown", metadata = json.object(), source = lines_of(md)}
        else
            local outputs = {}
            for i, o in ipairs(c.outputs) do outputs[i] = ipynb_output(o, c.count) end
            nb_cells[#nb_cells + 1] = {cell_type = "code", execution_count = c.count, metadata = json.object(),
                                       outputs = outputs, source = lines_of(c.source)}
        end
    end
    local nb = {nbformat = 4, nbformat_minor = 4, cells = nb_cells,
                metadata = {kernelspec = KERNELSPEC, language_info = LANGUAGE_INFO, title = title}}
    -- json.encode makes every string UTF-8 (each bad sequence U+FFFD, as ipykernel does), so a text
    -- from anywhere cannot stop the notebook being written
    return json.encode(nb, 1) .. "\n"
end

local PAGE_CSS = [[
:root { --ink: #1b1b1b; --muted: #5b6470; --rule: #d8dde3; --code-bg: #f6f8fa; }
body { margin: 0; color: var(--ink); background: #fff;
  font-family: "Noto Sans", "Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", sans-serif;
  line-height: 1.55; }
main { max-width: 62rem; margin: 0 auto; padding: 1.5rem 1.5rem 4rem; }
h1 { font-size: 1.7rem; border-bottom: 2px solid var(--rule); padding-bottom: 0.3rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid var(--rule); padding-bottom: 0.2rem; }
h3 { font-size: 1.05rem; }
pre, code { font-family: "DejaVu Sans Mono", "Noto Sans Mono CJK SC", monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
pre.formula { background: #fbfbf4; border-left: 3px solid #c9b458; padding: 0.5rem 0.8rem; margin: 0.6rem 0; }
.cell { margin: 0.9rem 0; }
.input { display: flex; gap: 0.6rem; }
.prompt { color: #2a5db0; font-family: monospace; min-width: 3.2rem; text-align: right; padding-top: 0.45rem; }
.output .prompt { color: #b04a2a; }
.source { flex: 1; background: var(--code-bg); border: 1px solid var(--rule); border-radius: 4px; padding: 0.45rem 0.7rem; }
.outputs { margin-left: 3.8rem; }
.out { padding: 0.35rem 0.7rem; }
.out.stderr, .out.error { background: #fff2f0; color: #9b1c1c; border-left: 3px solid #d64545; }
.figure svg { max-width: 100%; height: auto; }
@media print {
  main { max-width: none; padding: 0; }
  .cell, .figure, table { break-inside: avoid; }
  .source { border-color: #999; }
  a { color: inherit; }
}
]]

-- A stream's text as a terminal leaves it: a line rewritten after a carriage return
-- (a progress line) shows its last state.
local function as_shown(text)
    return (text:gsub("\r\n", "\n"):gsub("[^\n]*\r", ""))
end

local function html_output(o)
    if o.output_type == "stream" then
        return '<pre class="out ' .. html.escape(o.name) .. '">' .. html.escape(as_shown(o.text)) .. "</pre>"
    end
    if o.output_type == "error" then
        return '<pre class="out error">' .. html.escape(table.concat(o.traceback or {o.evalue}, "\n")) .. "</pre>"
    end
    local d = o.data or {}
    local svg = d["image/png"] and outputs.svg(o)
    if svg then return '<div class="figure">' .. svg .. "</div>" end
    if d["image/png"] then
        return '<div class="figure"><img alt="' .. html.escape(d["text/plain"] or "") .. '" src="data:image/png;base64,'
            .. d["image/png"] .. '"></div>'
    end
    if d["text/html"] then return '<div class="out">' .. d["text/html"] .. "</div>" end
    return '<pre class="out">' .. html.escape(d["text/plain"] or "") .. "</pre>"
end

function M.html_page(cells, title, lang)
    local out = {"<!DOCTYPE html>", '<html lang="' .. (lang == "zh" and "zh-CN" or "en") .. '">', "<head>",
                 '<meta charset="utf-8">', '<meta name="viewport" content="width=device-width, initial-scale=1">',
                 "<title>" .. html.escape(title) .. "</title>",
                 "<style>" .. PAGE_CSS .. html.TENSOR_CSS .. "</style>", "</head>", "<body><main>"}
    for _, c in ipairs(cells) do
        if c.kind == "markdown" then
            local level = c.level or 2
            out[#out + 1] = string.format("<h%d>%s</h%d>", level, html.escape(c.title), level)
            out[#out + 1] = M.html_text(c.markup)
        else
            out[#out + 1] = '<div class="cell"><div class="input"><div class="prompt">In [' .. c.count
                .. ']:</div><pre class="source">' .. html.escape(c.source) .. "</pre></div>"
            if #c.outputs > 0 then
                out[#out + 1] = '<div class="outputs">'
                for _, o in ipairs(c.outputs) do out[#out + 1] = html_output(o) end
                out[#out + 1] = "</div>"
            end
            out[#out + 1] = "</div>"
        end
    end
    out[#out + 1] = "</main></body></html>"
    return json.utf8_clean(table.concat(out, "\n") .. "\n")
end

-- Writes text to path through a temporary file beside it, renamed over it: never half a file.
-- A failure names path, never the temporary file: "PATH: No such file or directory".
function M.write_atomic(path, text)
    local tmp = string.format("%s.%d%d.tmp", path, os.time(), math.random(100000, 999999))
    local function named(err) return path .. ": " .. (tostring(err):match("^.-%.tmp: (.*)$") or tostring(err)) end
    local f, err = io.open(tmp, "wb")
    if not f then return nil, named(err) end
    local ok, werr = f:write(text)
    local closed, cerr = f:close()
    if not ok or not closed then
        os.remove(tmp)
        return nil, path .. ": " .. tostring(werr or cerr)
    end
    local renamed, rerr = os.rename(tmp, path)
    if not renamed then os.remove(tmp) return nil, named(rerr) end
    return true
end

local function format_of(path, lang)
    if type(path) ~= "string" or path == "" then return nil, words(lang).no_name end
    local ext = (path:match("%.(%w+)$") or ""):lower()
    if ext == "ipynb" then return "ipynb" end
    if ext == "html" or ext == "htm" then return "html" end
    return nil, string.format(words(lang).bad_name, path)
end

local function write(cells, path, title, lang)
    local format, err = format_of(path, lang)
    if not format then return nil, err end
    local text = format == "ipynb" and M.ipynb(cells, title) or M.html_page(cells, title, lang)
    return M.write_atomic(path, text)
end

-- mha-repl --lesson N --batch --export FILE: the whole lesson. Returns true and the lesson's
-- number, or nil and a message.
function M.export_lesson(which, lang, path)
    local format, err = format_of(path, lang)
    if not format then return nil, "--export: " .. err end
    local cells, session = M.lesson_cells(which, lang)
    if not cells then return nil, "--export: " .. tostring(session) end
    local ok, werr = write(cells, path, cells[1].title, session.lang)
    if not ok then return nil, werr end
    return true, session.number
end

-- :export lesson FILE in the REPL: the open lesson, whole, run from its seed by a second mha-repl
-- (so the student's variables and place in the lesson stay as they are). runner: the lesson runner
-- (mha.lesson) the REPL runs, which says whether a lesson is open; lang: the language of the
-- messages ("en" or "zh", the REPL's). Returns true and the lesson's number, or nil and a message.
function M.export_open_lesson(path, runner, lang)
    local format, err = format_of(path, lang)
    if not format then return nil, err end
    local open = type(runner) == "table" and runner.current() or nil
    if not (open and math.type(open.number) == "integer" and runner.languages[open.lang]) then
        return nil, words(lang).no_lesson
    end
    -- the same binary by its real path (so the child finds the lessons beside it), its arguments as
    -- a list: no shell ever reads the file name
    local self, why = proc.self()
    if not self then return nil, why end
    local ok, said = proc.run({ self, "--lesson", tostring(open.number), "--batch", "--lang", open.lang,
                                "--export", path })
    said = said:gsub("%s+$", "")
    if not ok then return nil, said ~= "" and said or words(lang).failed end
    return true, open.number
end

-- :export FILE in the REPL: the session so far (entries: its transcript, repl.transcript()), as
-- M.session_cells makes it. Returns true, or nil and a message.
function M.export_session(path, entries, lang)
    local format, err = format_of(path, lang)
    if not format then return nil, err end
    local cells = M.session_cells(entries or {})
    cells[1].title = words(lang).session
    return write(cells, path, cells[1].title, lang)
end

return M
