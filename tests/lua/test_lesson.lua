-- tests/lua/test_lesson.lua - the lesson runner: every lesson loads in both languages, the language is
-- chosen --lang, MHA_LANG, LANG in that order, every text wraps by display width at 40-120 columns without
-- splitting a word, exercises accept right answers and name each classic mistake, malformed answers get
-- a clear message and the lesson goes on, :goto rebuilds state (and a failing step says so), :lang
-- confirms, lesson 9 warms up before timing, and lesson 12's numbers match NumPy's.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha
local L = require "mha.lesson"

-- Runs fn with everything it prints captured; returns the captured text and fn's results.
local function captured(fn, ...)
    local path = os.tmpname()
    local file = assert(io.open(path, "w"))
    local saved_stdout, saved_output, saved_print = io.stdout, io.output(), print
    io.stdout = file
    io.output(file)
    print = function(...)
        local parts = table.pack(...)
        for i = 1, parts.n do parts[i] = tostring(parts[i]) end
        file:write(table.concat(parts, "\t"), "\n")
    end
    local results = table.pack(pcall(fn, ...))
    print = saved_print
    io.stdout = saved_stdout
    io.output(saved_output)
    file:close()
    local f = assert(io.open(path))
    local text = f:read("a")
    f:close()
    os.remove(path)
    if not results[1] then error(results[2], 0) end
    return text, table.unpack(results, 2, results.n)
end

-- ---- every lesson file loads, validates (both languages complete) and is numbered -----------------
local files = L.files()
T.ok("twelve lessons at least", #files >= 12, #files .. " lessons found")
for _, f in ipairs(files) do
    local lesson, err = L.load(f.path)
    T.ok("loads " .. f.file, lesson ~= nil, err)
end
local missing = L.validate(L.lesson{name = "x", title = {en = "t"}, summary = {en = "s", zh = "s"},
    L.step{title = {en = "a", zh = "a"}, text = {en = "b"}}}, "probe")
T.ok("validate names a missing language", missing and missing:find("title has no 'zh' text")
    and missing:find("step 1's text has no 'zh' text"), missing)
T.eq("find by number", (L.find("7")).name, "heads")
T.eq("find by name", (L.find("masks")).number, 6)
local miss = select(2, L.find("nonesuch"))
T.ok("find names the lessons on a miss, by number and name", miss:find("from 1 to 12", 1, true)
    and miss:find("1 tour", 1, true) and miss:find("12 textbook_check", 1, true), miss)
T.ok("find shows no '..' path on a miss", not miss:find("..", 1, true), miss)

-- ---- language choice: --lang, then MHA_LANG, then LANG, else English -----------------------------
local function env(t) return function(name) return t[name] end end
T.eq("lang zh requested", L.choose_lang("zh", env{}), "zh")
T.eq("lang en requested", L.choose_lang("en", env{}), "en")
T.eq("lang zh_CN.UTF-8 requested", L.choose_lang("zh_CN.UTF-8", env{}), "zh")
T.eq("MHA_LANG alone is used", L.choose_lang(nil, env{MHA_LANG = "zh"}), "zh")
T.eq("--lang beats MHA_LANG", L.choose_lang("en", env{MHA_LANG = "zh", LANG = "zh_CN.UTF-8"}), "en")
T.eq("MHA_LANG beats LANG", L.choose_lang(nil, env{MHA_LANG = "en", LANG = "zh_CN.UTF-8"}), "en")
T.eq("LANG zh* alone gives Chinese", L.choose_lang(nil, env{LANG = "zh_TW.UTF-8"}), "zh")
T.eq("an unknown MHA_LANG falls to LANG", L.choose_lang(nil, env{MHA_LANG = "fr", LANG = "zh_CN"}), "zh")
T.eq("nothing set: English", L.choose_lang(nil, env{}), "en")

-- the same through the binary: the first line of lesson 1 is its title in the chosen language
local repl_bin = os.getenv("MHA_REPL") or arg[-1]
local function first_line(envs, args)
    local p = io.popen(string.format("env -u MHA_LANG -u LANG -u LC_ALL %s '%s' --lesson 1 --batch %s 2>&1 </dev/null",
        envs, repl_bin, args or ""))
    local line = p:read("l")
    p:close()
    return line or ""
end
T.ok("binary: MHA_LANG=zh without --lang is Chinese", first_line("MHA_LANG=zh"):find("注意力速览"), first_line("MHA_LANG=zh"))
T.ok("binary: --lang en beats MHA_LANG=zh", first_line("MHA_LANG=zh", "--lang en"):find("A tour of attention"))
T.ok("binary: LANG=zh_CN.UTF-8 alone is Chinese", first_line("LANG=zh_CN.UTF-8"):find("注意力速览"))
T.ok("binary: MHA_LANG=en beats LANG=zh_CN.UTF-8", first_line("MHA_LANG=en LANG=zh_CN.UTF-8"):find("A tour of attention"))

-- --lesson with no such lesson: one message, on stderr, naming the lessons; nothing on stdout
do
    local err_path = os.tmpname()
    local p = io.popen(string.format("'%s' --lesson 99 --batch 2>'%s' </dev/null", repl_bin, err_path))
    local out = p:read("a")
    local _, _, status = p:close()
    local f = assert(io.open(err_path))
    local err = f:read("a")
    f:close()
    os.remove(err_path)
    T.eq("--lesson 99 prints nothing on stdout", out, "")
    local _, lines = err:gsub("\n", "")
    T.ok("--lesson 99 prints one line on stderr", lines == 1 and err:find("no lesson '99'", 1, true), err)
    T.ok("--lesson 99 lists the lessons, with no '..' path", err:find("1 tour", 1, true) and not err:find("..", 1, true), err)
    T.eq("--lesson 99 is a usage error: exit status 2", status, 2)
end

-- ---- text: display width and wrapping ----------------------------------------------------------
T.eq("width of ASCII", L.width("softmax"), 7)
T.eq("width of CJK counts 2", L.width("注意力"), 6)
T.eq("width of mixed", L.width("Q·Kᵀ/√d_k 分数"), 14)
local zh = "在计算注意力分数时，Transformer采用了缩放点积注意力，其公式为 softmax(Q·Kᵀ/√d_k)·V。引入缩放的目的是让方差保持为一。"
local widest, bad_start, split_word = 0, nil, false
for _, line in ipairs(L.wrap(zh, 30)) do
    widest = math.max(widest, L.width(line))
    if line:find("^，") or line:find("^。") then bad_start = line end
    if line:find("Transfor$") then split_word = true end
end
T.ok("Chinese wraps within 30 columns", widest <= 30, "widest line " .. widest)
T.ok("no line starts with closing punctuation", bad_start == nil, bad_start)
T.ok("an English word inside Chinese is not split", not split_word)
local en_lines = L.wrap("the scores are divided by the square root of the head size", 20)
T.eq("English wraps at spaces", en_lines, {"the scores are", "divided by the", "square root of the", "head size"})
local rendered = L.render("# 标题\n\n第一行\n第二行\n\n    formula = kept\n- item one", 40)
T.eq("render: heading, CJK lines joined without a space, formula kept, bullet", rendered,
    {"标题", "────", "", "第一行第二行", "", "    formula = kept", "• item one"})

T.eq("render: a line break next to a Latin word stays a space, next to CJK punctuation it goes",
    L.render("与 PyTorch 的\nnn.Linear 相同，回到 1\n的因子（d_k\n= D）。\nNaN 会传染", 80),
    {"与 PyTorch 的 nn.Linear 相同，回到 1 的因子（d_k = D）。NaN 会传染"})

-- emphasis is rendered before wrapping: bold on a colour terminal (even across a line break), plain
-- elsewhere; never literal asterisks, never a closing mark or punctuation at the start of a line
T.eq("emphasis plain", L.render("the *embedding dimension* here", 80), {"the embedding dimension here"})
T.eq("emphasis bold", L.render("the *embedding dimension* here", 80, true),
    {"the \27[1membedding dimension\27[22m here"})
T.eq("emphasis bold across a line break", L.render("aaaa *bbbb cccc* dddd", 10, true),
    {"aaaa \27[1mbbbb\27[22m", "\27[1mcccc\27[22m dddd"})
T.eq("a lone star and a product stay as written", L.render("a * b and 2 * 3", 80), {"a * b and 2 * 3"})
T.eq("no emphasis inside `code`", L.render("use `a*b*c` here", 80), {"use `a*b*c` here"})
for width = 20, 40 do
    for _, line in ipairs(L.render("所以每个输出行都是值向量的*加权平均*，权重取决于查询与各个键的匹配程度。", width)) do
        T.ok(string.format("zh emphasis at %d columns: no asterisk, no line starts with '，'", width),
            not line:find("*", 1, true) and not line:find("^，"), line)
    end
end

-- formulas: kept while they fit; wider, wrapped under their last column (or their indent), never to column 0
T.eq("a formula that fits is kept", L.render("    a   = b       (c)", 40), {"    a   = b       (c)"})
T.eq("a wide formula hangs under its comment column",
    L.render("    out = weights·V      (each row a weighted mix of the rows of V)", 50),
    {"    out = weights·V      (each row a weighted mix", "                         of the rows of V)"})
T.eq("a wide formula without a comment column keeps its indent",
    L.render("    LayerNorm(y) = (y − mean(y)) / √(var(y) + ε) · γ + β", 30),
    {"    LayerNorm(y) = (y −", "      mean(y)) / √(var(y) + ε)", "      · γ + β"})
-- code: the gutter on every line; a continuation marked "  │   " under the line's own indent
T.eq("code wraps with the gutter repeated",
    L.code_lines("x = 1\nif x then\n    show(weights, {rows = tokens, cols = tokens})\nend", 36),
    {"  │ x = 1", "  │ if x then", "  │     show(weights, {rows =", "  │       tokens, cols = tokens})", "  │ end"})
T.eq("a long title rule wraps under itself", L.rule(24, "step 1/5: a rather long step title"),
    {"── step 1/5: a rather", "   long step title ─────"})

-- Every text the runner prints, for every lesson, language and width: no line wider than the width (a
-- line may overflow only with one unbreakable run), and no word split (the lines joined back give the
-- source text, up to white space).
local term = require "mha.term"
local function wide(cp) return term.width(utf8.char(cp)) == 2 end
local function ends_wide(s)
    local last
    for _, cp in utf8.codes(s) do last = cp end
    return last and wide(last)
end
local function starts_wide(s) return #s > 0 and wide(utf8.codepoint(s, 1)) end
-- lines joined the way a reader joins them: no space where a CJK character meets the break
local function joined(lines)
    local text = ""
    for _, l in ipairs(lines) do
        if text == "" or ends_wide(text) or starts_wide(l) then text = text .. l else text = text .. " " .. l end
    end
    return text
end
-- white space collapsed, and dropped next to CJK characters (where a wrap may add or remove it)
local function normalized(s)
    s = s:gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")
    local out, chars = {}, {}
    for _, cp in utf8.codes(s) do chars[#chars + 1] = cp end
    for i, cp in ipairs(chars) do
        local space_next_to_wide = cp == 32 and ((chars[i - 1] and wide(chars[i - 1])) or (chars[i + 1] and wide(chars[i + 1])))
        if not space_next_to_wide then out[#out + 1] = utf8.char(cp) end
    end
    return table.concat(out)
end
local function check_lines(name, lines, width, prefix_pattern)
    for _, line in ipairs(lines) do
        local w = L.width(line)
        if w > width then
            local content = line:gsub(prefix_pattern or "^[%s•│─]*", "")
            local breakable = content:find("%s") ~= nil
            for _, cp in utf8.codes(content) do if wide(cp) then breakable = true end end
            if not T.ok(name .. ": lines fit", not breakable, string.format("%d > %d: %q", w, width, line)) then return end
        end
    end
end
local function plain_source(text)
    local lines = {}
    for line in (text .. "\n"):gmatch("(.-)\n") do
        line = line:gsub("^%s?[-•]%s+", ""):gsub("^#+%s+", "")
        if not line:match("^%s*$") then lines[#lines + 1] = line end
    end
    return normalized(joined(lines):gsub("%*", ""))
end
local function plain_output(lines)
    local kept = {}
    for _, l in ipairs(lines) do
        l = l:gsub("^• ", "")
        if not l:match("^─+$") and not l:match("^%s*$") then kept[#kept + 1] = l end
    end
    return normalized(joined(kept):gsub("%*", ""))
end
local overflow_checked, words_checked = 0, 0
for _, f in ipairs(files) do
    local lesson = L.load(f.path)
    for _, width in ipairs({40, 60, 80, 120}) do
        for _, lang in ipairs({"en", "zh"}) do
            local where = string.format("lesson %d %s at %d", f.number, lang, width)
            local texts = {L.tr(lesson.summary, lang)}
            local rules = {L.rule(width, L.tr(lesson.title, lang))}
            for k, s in ipairs(lesson.steps) do
                texts[#texts + 1] = L.tr(s.text or s.prompt, lang)
                rules[#rules + 1] = L.rule(width, string.format("step %d/%d: %s", k, #lesson.steps, L.tr(s.title, lang)))
                for _, m in ipairs(s.mistakes or {}) do texts[#texts + 1] = L.tr(m.hint, lang) end
                local code = s.code or s.setup
                if code then
                    local echoed = L.code_lines(code, width)
                    if width >= 80 then
                        -- the lessons' code is written to fit 80 columns: nothing is wrapped at all
                        local widest = 0
                        for _, l in ipairs(echoed) do widest = math.max(widest, L.width(l)) end
                        local _, breaks = code:gsub("^%s*\n", ""):gsub("%s+$", ""):gsub("\n", "")
                        T.ok(where .. " step " .. k .. " code fits unwrapped", widest <= width and #echoed == breaks + 1,
                            table.concat(echoed, "\n"))
                    end
                    if width < 80 then
                        -- narrower, a line may wrap, but never inside a string (each echoed line's quotes pair up)
                        for _, l in ipairs(echoed) do
                            local body = l:gsub("^  │ ", ""):gsub("%-%-.*$", ""):gsub("\\.", "")
                            local _, dq = body:gsub('"', "")
                            if not T.ok(where .. " step " .. k .. " code: no string broken", dq % 2 == 0, l) then break end
                        end
                    end
                    local body = code:gsub("^%s*\n", ""):gsub("%s+$", "")
                    local stripped = {}
                    for _, l in ipairs(echoed) do stripped[#stripped + 1] = l:gsub("^  │ ", "") end
                    local ok = normalized(joined(stripped)) == normalized(body:gsub("\n", " "))
                    if not ok then
                        -- a CJK-only line break in the source code joins without a space: compare without any space
                        ok = normalized(joined(stripped)):gsub(" ", "") == normalized(body):gsub(" ", "")
                            and #echoed >= select(2, body:gsub("\n", "")) + 1
                    end
                    T.ok(where .. " step " .. k .. " code: every line kept, no token split", ok,
                        table.concat(echoed, "\n"))
                end
            end
            for _, r in ipairs(rules) do check_lines(where .. " rule", r, width) end
            for i, text in ipairs(texts) do
                local lines = L.render(text, width)
                check_lines(where .. " text " .. i, lines, width)
                overflow_checked = overflow_checked + #lines
                local same = plain_output(lines) == plain_source(text)
                words_checked = words_checked + 1
                if not same then T.ok(where .. " text " .. i .. ": no word split", false, table.concat(lines, "\n")) end
            end
        end
    end
end
T.ok("every lesson text checked for width and split words", overflow_checked > 1000 and words_checked > 500,
    overflow_checked .. " lines, " .. words_checked .. " texts")

-- ---- mha.text: the wrapper other modules use ------------------------------------------------------
local text = require "mha.text"
T.eq("text.width", text.width("注意力 heads"), 12)
T.eq("text.wrap prose with prefixes", text.wrap("one two three four five six", 12, {first = "- ", rest = "  "}),
    {"- one two", "  three four", "  five six"})
T.eq("text.wrap with no options", text.wrap("aa bb cc", 5), {"aa bb", "cc"})
T.eq("text.wrap code keeps a long string whole", text.wrap('print("a long string literal", x)', 16, {mode = "code"}),
    {'print("a long string literal",', "x)"})
T.eq("code echo keeps a comment whole", text.code_lines("x = 1   -- a comment longer than the line", 24),
    {"  │ x = 1", "  │   -- a comment longer than the line"})

-- ---- answers are compared as (shape, values) --------------------------------------------------
local ok, why = L.compare(mha.tensor{{1, 2}, {3, 4}}, {{1, 2}, {3, 4.00001}})
T.ok("a nested table answers a tensor", ok, why)
ok, why = L.compare(mha.tensor{{1, 2}, {3, 4}}, mha.zeros{4})
T.ok("a wrong shape is named, written as the core writes shapes", not ok and why:find("shape (4);", 1, true)
    and why:find("(2,2)", 1, true), why)
ok, why = L.compare(0.125, 0.13)
T.ok("a wrong number names the difference", not ok and why:find("0.13"), why)
ok, why = L.compare(mha.tensor{1, 2}, {{1, 2}, {3}})
T.ok("a ragged table is malformed", not ok and why:find("cannot be read"), why)
ok, why = L.compare({4, 7, 12}, {4, 7, 12})
T.ok("a shape answered as a list", ok, why)

-- ---- the lessons' own exercises: right answers, classic mistakes, malformed answers ---------------
-- Runs a lesson in batch mode (quietly) so its variables exist, and returns the lesson table.
local function replayed(which)
    local text, done, err = captured(L.start, which, {batch = true, lang = "en"})
    T.ok("lesson " .. which .. " replays in batch mode", done, err or text:sub(-300))
    return L.current().lesson, text
end
local function exercise_of(lesson)
    for _, s in ipairs(lesson.steps) do if s.kind == "exercise" then return s end end
end
local function expect_hint(name, ex, answer, pattern, eval_error)
    local okc, right, message = pcall(L.check, ex, answer, eval_error)
    T.ok(name, okc and not right and message:find(pattern), okc and message or right)
end

local lesson = replayed(2)
local ex = exercise_of(lesson)
T.ok("lesson 2: the solution is correct", (L.check(ex, mha.softmax(Q:matmul(K:transpose(1, 2)) / 2, 2))))
expect_hint("lesson 2: softmax over the wrong axis", ex, mha.softmax(Q:matmul(K:transpose(1, 2)) / 2, 1),
    "don't sum to 1 along dim 2.*along dim 1")
expect_hint("lesson 2: unscaled", ex, mha.softmax(Q:matmul(K:transpose(1, 2)), 2), "unscaled")
expect_hint("lesson 2: a string is malformed", ex, "0.5", "cannot be read: a string")
expect_hint("lesson 2: nothing is malformed", ex, nil, "cannot be read")
expect_hint("lesson 2: a wrong shape", ex, mha.zeros{3}, "shape")

lesson = replayed(4)
ex = exercise_of(lesson)
T.ok("lesson 4: 1/sqrt(64) is correct", (L.check(ex, 0.125)))
expect_hint("lesson 4: scaling by d_model instead of d_k", ex, 1 / math.sqrt(768), "√d_model")
-- the measured variances agree with the theory checked by tests/check_seeds.py: var(q·k) = d_k
for i, d_k in ipairs(dims) do
    T.ok("lesson 4: var(q·k) ≈ d_k for d_k = " .. d_k, math.abs(raw_var[i] / d_k - 1) < 0.1, raw_var[i])
    T.ok("lesson 4: var(q·k/√d_k) ≈ 1 for d_k = " .. d_k, math.abs(scaled_var[i] - 1) < 0.1, scaled_var[i])
end

lesson = replayed(5)
ex = exercise_of(lesson)
expect_hint("lesson 5: the naive softmax overflows to NaN", ex, z:exp() / z:exp():sum(), "subtract z:max%(%)")

lesson = replayed(6)
ex = exercise_of(lesson)
expect_hint("lesson 6: masking after softmax", ex, mha.softmax(scores, 2):masked_fill(mask, 0), "AFTER the softmax")
expect_hint("lesson 6: the inverted mask", ex, mha.softmax(scores:masked_fill(mha.logical_not(mask), -math.huge), 2),
    "NOT allowed")

lesson = replayed(7)
ex = exercise_of(lesson)
T.ok("lesson 7: the solution is correct", (L.check(ex, outs:transpose(1, 2):reshape(3, 6))))
local view_ok, view_err = pcall(function() return outs:transpose(1, 2):view(3, 6) end)
T.ok("lesson 7: view without contiguous raises", not view_ok)
expect_hint("lesson 7: view without contiguous", ex, nil, "contiguous%(%)", view_err)
expect_hint("lesson 7: concatenating in the wrong order", ex, outs:contiguous():view(3, 6), "wrong order")
expect_hint("lesson 7: heads swapped", ex, mha.cat({outs:select(1, 2), outs:select(1, 1)}, 2), "wrong order")

lesson = replayed(8)
ex = exercise_of(lesson)
expect_hint("lesson 8: scaling by d_model instead of d_k", ex, Qh:matmul(Kh:transpose(2, 3)) / math.sqrt(E), "√d_model")
expect_hint("lesson 8: softmax-free raw scores", ex, Qh:matmul(Kh:transpose(2, 3)), "raw scores")
expect_hint("lesson 8: the weights where the scaled scores are asked", ex, weights, "after the softmax")

-- ---- the lesson goes on after a malformed answer; :goto rebuilds the state ----------------------
local text = captured(L.start, 8, {batch = false, lang = "en"})
T.ok("interactive start shows step 1", text:find("step 1/6"), text:sub(1, 200))
captured(L.goto_step, 6)
local saved_by_hand = by_hand:clone()
T.eq("goto 6 lands on step 6", L.current().pos, 6)
text = captured(L.answer, "not a tensor")
T.ok("a malformed answer gets a clear message", text:find("not yet: your answer cannot be read: a string", 1, true), text)
T.eq("the lesson stays on the exercise", L.current().pos, 6)
text = captured(L.answer_expression, "Qh:matmul(Kh:transpose(2, 3)) / math.sqrt(D)")
T.ok(":answer EXPR accepts the right answer", text:find("correct"), text)
text = captured(L.answer_expression, "Qh:nonesuch()")
T.ok(":answer reports an error in the expression", text:find("evaluating your answer failed"), text)
X = mha.zeros{4, 4}                         -- the student changes a variable ...
captured(L.goto_step, 5)                    -- ... and :goto replays steps 1-4 from the seed
T.close("goto rebuilds by_hand from the seed, not from the changed X", by_hand, saved_by_hand, 0, 0)
text = captured(L.next)
T.ok("next after goto 5 shows step 6", text:find("step 6/6"), text:sub(1, 200))
text = captured(L.next)
T.ok("next after an unanswered exercise at the end says the lesson is over", text:find("End of the lesson"), text)

-- ---- :run from mid-lesson: a last exercise is asked once, the end said once ----------------------
local function count(s, pattern) return select(2, s:gsub(pattern, "")) end
captured(L.start, 8, {batch = false, lang = "en"})
captured(L.goto_step, 3)
text = captured(L.run_rest)
T.eq(":run asks the last exercise once", count(text, "step 6/6"), 1)
T.eq(":run leaves the end for after the exercise", count(text, "End of the lesson"), 0)
text = captured(L.next)
T.eq("Enter after :run skips the exercise and ends once", count(text, "End of the lesson"), 1)
captured(L.start, 1, {batch = false, lang = "en"})
text = captured(L.run_rest)
T.eq(":run of a lesson ending in an exercise asks it", count(text, "Exercise"), 1)

-- ---- :reset: the REPL carries the open lesson into the new state, which resumes it ---------------
captured(L.start, 8, {batch = false, lang = "en"})
captured(L.goto_step, 4)
local carried = L.carry()
T.eq("carry names the lesson, step, language", carried, "8 4 en 0")
local kept_concat = concat:clone()
concat, by_hand = nil, nil                  -- a new Lua state has none of the lesson's variables
text = captured(L.resume, carried)
T.ok("resume says the lesson is still open", text:find("lesson 8 is still open at step 4", 1, true), text)
T.eq("resume lands on the carried step", L.current().pos, 4)
T.close("resume rebuilds the state from the seed", concat, kept_concat, 0, 0)
text = captured(L.next)
T.ok("the lesson goes on after resume", text:find("step 5/6", 1, true), text:sub(1, 200))
T.eq("nothing to carry in batch mode", (function() captured(L.start, 1, {batch = true, lang = "en"}); return L.carry() end)(), nil)

-- ---- :save: every step's code is recorded for the transcript ------------------------------------
do
    local recorded = {}
    -- the runner is handed the REPL it runs in; here one that only records
    L.install({record_step = function(code, label, ok) recorded[#recorded + 1] = {code, label, ok} end})
    captured(L.start, 8, {batch = false, lang = "en"})
    captured(L.next)
    captured(L.goto_step, 2)
    L.install(nil)
    local codes = {}
    for i, r in ipairs(recorded) do codes[i] = r[1]:match("^[^\n]*") end
    T.eq("start records the helpers, the seed and step 1; next step 2; goto 2 the seed, steps 1 and 2",
        #recorded, 7, table.concat(codes, " | "))
    T.eq("the helpers come first", recorded[1][1], 'require("mha.lesson").install_globals()')
    T.eq("then the seed", recorded[2][1], "mha.seed(8)")
    T.ok("a step is recorded with its code and label", recorded[3][1] == L.current().lesson.steps[1].code
        and recorded[3][2] == "lesson multihead, step 1" and recorded[3][3] == true, tostring(recorded[3][2]))
end

-- ---- a failing step says how to get out; :goto K rebuilds the state and runs it -------------------
captured(L.start, "masks", {batch = false, lang = "en"})
captured(L.goto_step, 3)
mask = nil                                  -- the student breaks what step 4 needs
for attempt = 1, 2 do
    text = captured(L.next)
    T.ok("a failing step names itself (attempt " .. attempt .. ")", text:find("error in step 4", 1, true), text)
    T.ok("a failing step offers :goto 4 and :restart (attempt " .. attempt .. ")",
        text:find(":goto 4 rebuilds", 1, true) and text:find(":restart", 1, true), text)
    T.eq("the lesson stays before the failing step", L.current().pos, 3)
end
text = captured(L.goto_step, 4)
T.ok(":goto 4 recovers: step 4 runs without an error", text:find("step 4/6", 1, true) and not text:find("error"), text)
T.eq(":goto 4 lands on step 4", L.current().pos, 4)
captured(L.start, "masks", {batch = false, lang = "zh"})
captured(L.goto_step, 3)
mask = nil
text = captured(L.next)
T.ok("the way out is said in Chinese too", text:find(":goto 4 从本课的种子重建", 1, true), text)

-- ---- answer() returns nothing, so the REPL prints only the verdict ---------------------------------
captured(L.start, "tour", {batch = false, lang = "en"})
captured(L.goto_step, 5)
local results
text = captured(function() results = table.pack(answer(weights:select(1, 2):matmul(V))) end)
T.ok("answer() says correct", text:find("correct", 1, true), text)
T.eq("answer() returns no value", results.n, 0)
text = captured(function() results = table.pack(answer(V:select(1, 2))) end)
T.ok("a wrong answer() says not yet", text:find("not yet", 1, true), text)
T.eq("a wrong answer() returns no value", results.n, 0)

-- ---- :lang switches the language and says so in the new one ---------------------------------------
local commands = {}
L.install({add_command = function(name, spec) commands[name] = spec end})
T.ok(":lang is a command", commands.lang ~= nil)
text = captured(commands.lang.run, "zh")
T.eq(":lang zh confirms in Chinese", text, "课程现在使用中文。\n")
T.eq(":lang zh switches the open lesson", L.current().lang, "zh")
text = captured(commands.lang.run, "en")
T.eq(":lang en confirms in English", text, "Lessons are now in English.\n")
text = captured(commands.lang.run, "fr")
T.ok(":lang fr says what is accepted", text:find(":lang en|zh", 1, true), text)
T.eq(":lang fr changes nothing", L.current().lang, "en")
text = captured(commands.open.run, "99")
T.ok(":open 99 names the lessons", text:find("no lesson '99'", 1, true) and text:find("1 tour", 1, true), text)
L.preferred_lang = nil

-- ---- lesson 9 times at the prompt: a warm-up run, then the median of 5 -----------------------------
do
    local real_layer = mha.MultiheadAttention
    local forwards = 0
    mha.MultiheadAttention = function(opts)
        local layer = real_layer(opts)
        return setmetatable({}, {__index = function(_, key)
            if key == "forward" then
                return function(_, ...) forwards = forwards + 1; return layer:forward(...) end
            end
            return layer[key]
        end})
    end
    local saved_plot = rawget(_G, "plot")
    _G.plot = L.batch_plot                  -- no gnuplot window from a test
    local ok_run, out9 = pcall(function()
        captured(L.start, "cost", {batch = false, lang = "en"})
        return captured(L.goto_step, 4)
    end)
    mha.MultiheadAttention = real_layer
    _G.plot = saved_plot
    T.ok("lesson 9 step 4 runs at the prompt", ok_run and out9:find("(median of 5)", 1, true), out9)
    T.eq("lesson 9 step 4: 1 warm-up + 5 timed forward passes for each of 2 heads × 4 lengths", forwards, 2 * 4 * 6)
    local medians_ok = true
    for _, h in ipairs({1, 8}) do
        for i = 1, 4 do
            local sorted = {table.unpack(runs[h][i])}
            table.sort(sorted)
            medians_ok = medians_ok and #sorted == 5 and times[h][i] == sorted[3] and sorted[1] >= 0
        end
    end
    T.ok("lesson 9 step 4 prints the median of the 5 timed runs", medians_ok)
end

-- ---- lesson 12 agrees with NumPy (tests/check_seeds.py -> tests/fixtures/seeds_truth.txt) ---------
replayed(12)
local truth = {}
for line in io.lines(T.path("tests/fixtures/seeds_truth.txt")) do
    if not line:find("^#") then
        local name, rest = line:match("^(%S+)%s+(.*)$")
        local values = {}
        for v in rest:gmatch("%S+") do values[#values + 1] = tonumber(v) end
        truth[name] = values
    end
end
local pairs_checked = {
    q_dot_k = "s41_qk", score = "s41_score", alpha = "s41_alpha", output = "s41_output",
    Q1 = "s42_Q1", K1 = "s42_K1", V1 = "s42_V1", Q2 = "s42_Q2", K2 = "s42_K2", V2 = "s42_V2",
    score1 = "s42_score1", score2 = "s42_score2", weight1 = "s42_weight1", weight2 = "s42_weight2",
    head1 = "s42_head1", head2 = "s42_head2", concat = "s42_concat", multihead = "s42_multihead",
    from_seed = "s42_multihead_from_printed_heads",
}
local names = {}
for k in pairs(pairs_checked) do names[#names + 1] = k end
table.sort(names)
for _, name in ipairs(names) do
    local value = checked[name]
    local flat = mha.is_tensor(value) and value:reshape(-1):totable() or {value}
    T.close("lesson 12 " .. name .. " = NumPy's " .. pairs_checked[name], flat, truth[pairs_checked[name]], 1e-5, 1e-4)
end

-- lesson 9's counts are the ones check_seeds.py makes
replayed(9)
for _, len in ipairs({10, 128, 1024}) do
    for _, h in ipairs({1, 8}) do
        local c = macs(len, 512, h)
        T.eq(string.format("lesson 9 total multiply-adds L=%d h=%d", len, h),
            c.projections + c.scores + c.weighted_sum + c.output, math.tointeger(truth[string.format("s002_macs_L%d_h%d", len, h)][1]))
    end
end

T.done()
