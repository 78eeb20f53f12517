-- classroom/report.lua - `make classroom-report`: every student's answers to every lesson exercise,
-- as the kernel recorded them (~/.mha-repl/answers.jsonl), in a CSV file and a terminal table.
--
-- usage: mha-repl classroom/report.lua ROSTER [CSV]   (as root, who may read the students' homes)
-- A student's exercise is "right" when one of their answers was right, "wrong" when answers were
-- given and none was right, "not yet" when none was given. The table speaks the teacher's language
-- (MHA_LANG, else the roster's teacher's); the CSV's columns and verdicts are English words, for
-- a spreadsheet: student,lesson,exercise,title,verdict,answers,last_answer.
local i18n = require "mha.i18n"
local json = require "mha.json"
local lesson = require "mha.lesson"

local roster_path, csv_path = arg[1] or "classroom/roster.txt", arg[2] or "classroom-report.csv"

-- The roster's people, in its order: {name =, lang =, teacher =}.
local function read_roster(path)
    local f, err = io.open(path)
    if not f then error("classroom-report: " .. err, 0) end
    local people = {}
    for line in f:lines() do
        local words = {}
        for w in line:gsub("#.*", ""):gmatch("%S+") do words[#words + 1] = w end
        if #words > 0 then
            local person = {name = words[1], lang = "en", teacher = false}
            for i = 2, #words do
                if words[i] == "zh" then person.lang = "zh" end
                if words[i] == "teacher" then person.teacher = true end
            end
            people[#people + 1] = person
        end
    end
    f:close()
    return people
end

-- Each account's home, from /etc/passwd (field 6).
local function homes()
    local out, f = {}, io.open("/etc/passwd")
    if not f then return out end
    for line in f:lines() do
        local name, home = line:match("^([^:]*):[^:]*:[^:]*:[^:]*:[^:]*:([^:]*):")
        if name then out[name] = home end
    end
    f:close()
    return out
end

-- Every lesson's exercises, in order: {lesson = N, index = k, title = {en =, zh =}}.
local function exercises()
    local list = {}
    for _, f in ipairs(lesson.files()) do
        local l = lesson.load(f.path)
        local index = 0
        for _, s in ipairs(l and l.steps or {}) do
            if s.kind == "exercise" then
                index = index + 1
                list[#list + 1] = {lesson = f.number, index = index, title = s.title}
            end
        end
    end
    return list
end

-- A student's verdicts: ["lesson:exercise"] = {verdict =, answers =, last =}.
local function verdicts(home)
    local out = {}
    local f = home and io.open(home .. "/.mha-repl/answers.jsonl")
    if not f then return out end
    for line in f:lines() do
        local ok, r = pcall(json.decode, line)
        if ok and type(r) == "table" and r.lesson and r.exercise then
            local key = r.lesson .. ":" .. r.exercise
            local v = out[key] or {verdict = "wrong", answers = 0, last = ""}
            v.answers = v.answers + 1
            if r.verdict == "right" then v.verdict = "right" end
            if type(r.time) == "string" and r.time > v.last then v.last = r.time end
            out[key] = v
        end
    end
    f:close()
    return out
end

local function csv_field(s)
    s = tostring(s)
    if s:find('[,"\n]') then s = '"' .. s:gsub('"', '""') .. '"' end
    return s
end

local people = read_roster(roster_path)
local lang = os.getenv("MHA_LANG")
if lang ~= "en" and lang ~= "zh" then
    lang = "en"
    for _, p in ipairs(people) do if p.teacher then lang = p.lang; break end end
end
local said = i18n.words(lang).classroom
local students = {}
for _, p in ipairs(people) do if not p.teacher then students[#students + 1] = p end end
if #students == 0 then
    print(string.format(said.no_students, roster_path))
    os.exit(1)
end

local home_of, all = homes(), exercises()
local rows = {"student,lesson,exercise,title,verdict,answers,last_answer"}
local table_lines = {}
local mark = {right = "✓", wrong = "✗", ["not yet"] = "·"}
local name_width = lesson.width(said.student)
for _, s in ipairs(students) do name_width = math.max(name_width, lesson.width(s.name)) end
local function pad(s, n) return s .. string.rep(" ", n - lesson.width(s)) end
local function pad_left(s, n) return string.rep(" ", n - lesson.width(tostring(s))) .. s end
-- the three counts, right-aligned under their words
local widths = {math.max(5, lesson.width(said.right)), math.max(5, lesson.width(said.wrong)),
                math.max(7, lesson.width(said.not_yet))}
local function cells(a, b, c)
    return pad_left(a, widths[1]) .. " " .. pad_left(b, widths[2]) .. " " .. pad_left(c, widths[3]) .. "  "
end

for _, s in ipairs(students) do
    local got = verdicts(home_of[s.name])
    local counts, marks = {right = 0, wrong = 0, ["not yet"] = 0}, {}
    for n, ex in ipairs(all) do
        local v = got[ex.lesson .. ":" .. ex.index]
        local verdict = v and v.verdict or "not yet"
        counts[verdict] = counts[verdict] + 1
        if n > 1 and n % 5 == 1 then marks[#marks + 1] = " " end   -- groups of five exercises
        marks[#marks + 1] = mark[verdict]
        rows[#rows + 1] = table.concat({csv_field(s.name), ex.lesson, ex.index, csv_field(i18n.pick(ex.title, "en")),
            verdict, v and v.answers or 0, v and v.last or ""}, ",")
    end
    table_lines[#table_lines + 1] = pad(s.name, name_width) .. "  "
        .. cells(counts.right, counts.wrong, counts["not yet"]) .. table.concat(marks)
end

print(string.format(said.report_title, #students, #all, os.date("!%Y-%m-%d %H:%M UTC")))
print(pad(said.student, name_width) .. "  " .. cells(said.right, said.wrong, said.not_yet))
for _, line in ipairs(table_lines) do print(line) end
print(string.format("%s %s  %s %s  %s %s", mark.right, said.right, mark.wrong, said.wrong, mark["not yet"], said.not_yet))

local tmp = csv_path .. ".tmp"
local f = assert(io.open(tmp, "w"))
f:write(table.concat(rows, "\n"), "\n")
f:close()
assert(os.rename(tmp, csv_path))
print(string.format(said.wrote_csv, csv_path))
