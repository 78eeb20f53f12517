-- tests/lua/test_lesson.lua - the lesson runner: every lesson loads in both languages, text wraps by
-- display width, exercises accept right answers and name each classic mistake, malformed answers get a
-- clear message and the lesson goes on, :goto rebuilds state, and lesson 12's numbers match NumPy's.
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
T.ok("find names the lessons on a miss", select(2, L.find("nonesuch")):find("01_tour"), select(2, L.find("nonesuch")))

-- ---- language choice: the requested language wins ---------------------------------------------
T.eq("lang zh requested", L.choose_lang("zh"), "zh")
T.eq("lang en requested", L.choose_lang("en"), "en")
T.eq("lang zh_CN.UTF-8 requested", L.choose_lang("zh_CN.UTF-8"), "zh")

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

-- ---- answers are compared as (shape, values) --------------------------------------------------
local ok, why = L.compare(mha.tensor{{1, 2}, {3, 4}}, {{1, 2}, {3, 4.00001}})
T.ok("a nested table answers a tensor", ok, why)
ok, why = L.compare(mha.tensor{{1, 2}, {3, 4}}, mha.zeros{4})
T.ok("a wrong shape is named", not ok and why:find("shape %(4,%)") and why:find("%(2,2%)"), why)
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
