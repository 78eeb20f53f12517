-- lua/lesson/files.lua - module "mha.lesson.files": the lesson format
-- (lesson{}, step{}, exercise{}, mistake{} and their validation) and finding and loading lesson
-- files; lua/lesson/lesson.lua runs them.

local dir_names = require "mha.dir"
local proc = require "mha.proc"                    -- where the program's own lessons/ is
local i18n = require "mha.i18n"   -- the messages of find, in both languages

local files = {}

-- The languages every text of a lesson exists in.
files.languages = {en = true, zh = true}

-- ---------------------------------------------------------------------------------------------
-- The lesson format: constructors used inside lesson files, and validation.
-- ---------------------------------------------------------------------------------------------

local Step, Exercise, Mistake = {}, {}, {}

function files.step(t) t.kind = "step"; return setmetatable(t, Step) end
function files.exercise(t) t.kind = "exercise"; return setmetatable(t, Exercise) end

-- mistake{wrong = [[expr]], hint = {...}}: the student's answer equals the value of expr (a classic
-- wrong computation). mistake{error = "pattern", hint = {...}}: evaluating the answer raised an
-- error matching pattern. mistake{test = function(got, expected) -> bool}: a property of the
-- answer.
files.mistake = setmetatable({}, {__call = function(_, t) return setmetatable(t, Mistake) end})

function files.lesson(t)
    t.steps = t.steps or {}
    for _, s in ipairs(t) do t.steps[#t.steps + 1] = s end
    for i = #t, 1, -1 do t[i] = nil end
    return t
end

-- Every text of a lesson must exist in every language; returns nil or a message naming what is
-- missing.
function files.validate(lesson, origin)
    local problems = {}
    local function need(t, what)
        for lang in pairs(files.languages) do
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

-- A path as a reader wants to see it: "build/qa/../../lessons" -> "lessons"
-- (lexically; for messages only).
function files.clean_path(path)
    local parts = {}
    for part in path:gmatch("[^/]+") do
        if part == ".." and #parts > 0 and parts[#parts] ~= ".." then parts[#parts] = nil
        elseif part ~= "." then parts[#parts + 1] = part end
    end
    local cleaned = table.concat(parts, "/")
    if path:sub(1, 1) == "/" then cleaned = "/" .. cleaned end
    return cleaned ~= "" and cleaned or "."
end

-- Where lessons are looked for: every folder of $MHA_LESSONS (a ':'-separated list), then ./lessons
-- and lessons/ beside the real program (mha.proc.shipped, which resolves a symbolic link to it).
-- Returns the folders, and how many of them came from $MHA_LESSONS.
function files.dirs()
    local dirs = {}
    for dir in (os.getenv("MHA_LESSONS") or ""):gmatch("[^:]+") do dirs[#dirs + 1] = dir end
    local given = #dirs
    for _, dir in ipairs(proc.shipped("lessons")) do dirs[#dirs + 1] = dir end
    return dirs, given
end

-- The lesson files (NN_name.lua) of one folder, read with readdir (mha.dir): no shell, so nothing
-- in a folder's name (from $MHA_LESSONS, or where the program is installed) is ever run.
local function files_in(dir)
    local found = {}
    for _, f in ipairs(dir_names.list(dir) or {}) do
        local num, name = f:match("^(%d+)_([%w_]+)%.lua$")
        if num then found[#found + 1] = {number = tonumber(num), name = name, file = f, path = dir .. "/" .. f} end
    end
    return found
end

-- The lesson files, sorted by number: those of every $MHA_LESSONS folder, then those of the first
-- built-in place that has any; a file name met earlier wins (a teacher's 01_tour.lua replaces the
-- built-in one). {{number=1, name="tour", file="01_tour.lua", path=...}}.
function files.files()
    local dirs, given = files.dirs()
    local all, seen = {}, {}
    for i, dir in ipairs(dirs) do
        local found = files_in(dir)
        for _, f in ipairs(found) do
            if not seen[f.file] then seen[f.file] = true; all[#all + 1] = f end
        end
        if i > given and #found > 0 then break end
    end
    table.sort(all, function(a, b)
        if a.number ~= b.number then return a.number < b.number end
        return a.file < b.file
    end)
    return all
end

local function lesson_env()
    return setmetatable({lesson = files.lesson, step = files.step, exercise = files.exercise, mistake = files.mistake},
        {__index = _G})
end

-- The line of the lesson file each step's code (or setup) starts on, so an error names the file and
-- line.
local function find_code_lines(lesson, path)
    local f = io.open(path, "r")
    if not f then return end
    local source = f:read("a")
    f:close()
    local from = 1
    for _, s in ipairs(lesson.steps) do
        local code = s.code or s.setup
        local at = type(code) == "string" and code ~= "" and source:find(code, from, true)
        if at then
            local _, newlines = source:sub(1, at - 1):gsub("\n", "")
            s.code_line = newlines + 1
            from = at + #code
        end
    end
end

-- Loads and validates one lesson file; returns lesson or nil, message.
function files.load(path)
    local chunk, err = loadfile(path, "t", lesson_env())
    if not chunk then return nil, err end
    local ok, lesson = pcall(chunk)
    if not ok then return nil, path .. ": " .. tostring(lesson) end
    local problem = files.validate(lesson, path)
    if problem then return nil, problem end
    lesson.path = path
    lesson.file = path:match("([^/]+)$")
    find_code_lines(lesson, path)
    return lesson
end

-- A lesson file given by its path (--lesson PATH, :open PATH): anything with a "/" or ending in
-- ".lua" that is a readable file.
local function file_at(which)
    which = tostring(which)
    if not (which:find("/", 1, true) or which:match("%.lua$")) then return nil end
    local f = io.open(which, "r")
    if not f then return nil end
    f:close()
    local file = which:match("([^/]+)$")
    local num, name = file:match("^(%d+)_([%w_]+)%.lua$")
    return {number = tonumber(num) or 0, name = name or file:gsub("%.lua$", ""), file = file, path = which}
end

-- "no lessons found (looked in lessons, /home/me/mha-repl/lessons, ...)", in lang ("en" or "zh").
function files.none_found(lang)
    local w = i18n.words(lang).lesson
    local looked = {}
    for i, dir in ipairs(files.dirs()) do looked[i] = files.clean_path(dir) end
    return string.format(w.no_lessons, table.concat(looked, w.list_sep))
end

-- Lessons as "NN name" entries in columns, as ls lays out names: down each column, then across,
-- each column as wide as its widest entry, two spaces before each; as many columns as fit width
-- (at least one). An entry is never broken across lines (names are ASCII: a byte a cell). Returns
-- the lines joined by "\n".
local function in_columns(found, width)
    local entries, digits = {}, #tostring(found[#found].number)
    for i, f in ipairs(found) do entries[i] = string.format("%" .. digits .. "d %s", f.number, f.name) end
    local function layout(ncols)
        local rows = math.ceil(#entries / ncols)
        local widths, total = {}, 0
        for c = 1, ncols do
            widths[c] = 0
            for r = 1, rows do
                local e = entries[(c - 1) * rows + r]
                if e then widths[c] = math.max(widths[c], #e) end
            end
            total = total + 2 + widths[c]
        end
        return rows, widths, total
    end
    local ncols = #entries
    while ncols > 1 and select(3, layout(ncols)) > width do ncols = ncols - 1 end
    local rows, widths = layout(ncols)
    local lines = {}
    for r = 1, rows do
        local cells = {}
        for c = 1, ncols do
            local e = entries[(c - 1) * rows + r]
            if e then cells[#cells + 1] = e .. string.rep(" ", widths[c] - #e) end
        end
        lines[r] = ("  " .. table.concat(cells, "  ")):gsub("%s+$", "")
    end
    return table.concat(lines, "\n")
end

-- Finds a lesson by number ("2", 2), file-name part ("dot_product"), the start of one lesson's
-- name part ("flash" for flash_attention), file name ("02_dot_product") or path. Returns the file,
-- or nil and a message (in lang, "en" or "zh") naming the lessons there are, or the lessons whose
-- names it begins: in columns of width (default 80), under the message's first line.
function files.find(which, lang, width)
    local w = i18n.words(lang).lesson
    local given = file_at(which)
    if given then return given end
    local found = files.files()
    if #found == 0 then return nil, files.none_found(lang) end
    local key = tostring(which):gsub("%.lua$", "")
    for _, f in ipairs(found) do
        if tostring(f.number) == key:gsub("^0+(%d)", "%1") or f.name == key or f.file == key .. ".lua" then
            return f
        end
    end
    local begun = {}
    for _, f in ipairs(found) do
        if key ~= "" and f.name:sub(1, #key) == key then begun[#begun + 1] = f end
    end
    if #begun == 1 then return begun[1] end
    local names = in_columns(#begun > 1 and begun or found, width or 80)
    if #begun > 1 then return nil, string.format(w.lesson_prefix, key, names) end
    return nil, string.format(w.no_such_lesson, key, found[1].number, found[#found].number, names)
end

return files
