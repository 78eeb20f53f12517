-- lua/lesson/check.lua - module "mha.lesson.check": an exercise's answer checked against the
-- lesson's own solution, with the hint of the classic mistake it matches
-- (softmax over the wrong axis, NaN, ...).
--
-- Answers and solutions are numbers, booleans, strings, lists (a shape {3,4}), nested tables of
-- numbers, or tensors; they are compared as (shape, flat values) within a tolerance. Every verdict
-- is written in the language the caller names (lua/i18n/ holds the words).

local mha = require "mha"
local display = require "mha.display"      -- shape_str: "(2,3)", as the core writes shapes
local i18n = require "mha.i18n"
local raise = require "mha.raise"   -- errors at the user's line

local check = {}

local is_tensor = mha.is_tensor
local shape_str = display.shape_str

-- Why a value cannot be read: nil, the reason in English (for a lesson author's own solution), and
-- its catalogue key (lua/i18n/, room check) and argument (to say it to the student in the lesson's
-- language).
local function unreadable(key, arg) return nil, string.format(i18n.words("en").check[key], arg), key, arg end

local function flatten_table(t, shape, data, depth)
    if type(t) ~= "table" then
        if type(t) == "boolean" then t = t and 1 or 0 end
        if type(t) ~= "number" then return unreadable("why_contains", type(t)) end
        data[#data + 1] = t
        return true
    end
    if shape[depth] == nil then shape[depth] = #t
    elseif shape[depth] ~= #t then return unreadable("why_ragged") end
    for i = 1, #t do
        local ok, err, key, arg = flatten_table(t[i], shape, data, depth + 1)
        if not ok then return nil, err, key, arg end
    end
    return true
end

-- value -> {shape = {...}, data = {...}} or nil, reason, and the reason's catalogue key
-- (room check) and argument.
function check.flatten(v)
    if is_tensor(v) then
        local shape = v:shape()
        local total = 1
        for _, n in ipairs(shape) do total = total * n end
        local nested = v:totable()
        local flat = {shape = shape, data = {}}
        if type(nested) ~= "table" then flat.data[1] = (type(nested) == "boolean") and (nested and 1 or 0) or nested
        else
            local ok, err, key, arg = flatten_table(nested, {}, flat.data, 1)
            if not ok then return nil, err, key, arg end
        end
        if #flat.data ~= total then return unreadable("why_tensor") end
        return flat
    elseif type(v) == "number" or type(v) == "boolean" then
        return {shape = {}, data = {type(v) == "boolean" and (v and 1 or 0) or v}}
    elseif type(v) == "table" then
        local flat = {shape = {}, data = {}}
        local ok, err, key, arg = flatten_table(v, flat.shape, flat.data, 1)
        if not ok then return nil, err, key, arg end
        return flat
    end
    return unreadable("why_type", type(v))
end

local function index_str(shape, flat_index)
    local idx, rem = {}, flat_index - 1
    for d = #shape, 1, -1 do
        idx[d] = rem % shape[d] + 1
        rem = rem // shape[d]
    end
    return "[" .. table.concat(idx, ",") .. "]"
end

local function close(a, b, tol)
    if a ~= a or b ~= b then return a ~= a and b ~= b end
    if a == b then return true end
    return math.abs(a - b) <= tol.atol + tol.rtol * math.abs(b)
end

local function msg(lang, key, ...)
    return string.format(i18n.words(lang).check[key], ...)
end

local function kind_of(v)
    if is_tensor(v) then return "tensor" end
    if type(v) == "table" then return "table" end
    return type(v)
end

local DEFAULT_TOL = {atol = 1e-4, rtol = 1e-4}

-- Compares an answer with the expected value: true, or false, message (in lang), and the kind of
-- difference ("malformed", "shape" or "value").
function check.compare(expected, got, tol, lang)
    tol = tol or DEFAULT_TOL
    if type(expected) == "string" then
        if got == expected then return true end
        if type(got) ~= "string" then return false, msg(lang, "kind", kind_of(got), "string") end
        return false, msg(lang, "string", got)
    end
    local e, err = check.flatten(expected)
    if not e then raise("the lesson's own solution is not checkable: " .. err) end
    local g, key, arg
    g, err, key, arg = check.flatten(got)
    if not g then return false, msg(lang, "malformed", msg(lang, key, arg)), "malformed" end
    -- a number answers a one-element tensor, a list answers a 1-D tensor: compare counts then
    -- shapes
    local same_shape = #e.shape == #g.shape
    for i = 1, #e.shape do same_shape = same_shape and e.shape[i] == g.shape[i] end
    if not same_shape then
        if #e.data ~= #g.data or (#e.data > 1 and #g.shape > 0 and #e.shape > 0) then
            if #e.shape == 0 or #g.shape == 0 then
                return false, msg(lang, "count", #g.data, #e.data), "malformed"
            end
            return false, msg(lang, "shape", shape_str(g.shape), shape_str(e.shape)), "shape"
        end
    end
    for i = 1, #e.data do
        if not close(g.data[i], e.data[i], tol) then
            if g.data[i] ~= g.data[i] then return false, msg(lang, "nan", index_str(e.shape, i)), "value" end
            -- one number is reported by its value: "you gave 0.25", not "differs at []"
            if #e.data == 1 then return false, msg(lang, "scalar", g.data[i], tol.atol), "value" end
            return false, msg(lang, "value", index_str(e.shape, i), g.data[i], tol.atol), "value"
        end
    end
    return true
end

-- "your answer cannot be read: why", for an answer whose checking itself failed.
function check.malformed(why, lang) return msg(lang, "malformed", why) end

-- Runs a code string (or calls a function) in the global environment and returns its value.
function check.evaluate(code, what)
    if type(code) == "function" then return code(_G) end
    local chunk, err = load("return " .. code, "=" .. what, "t", _G)
    if not chunk then chunk, err = load(code, "=" .. what, "t", _G) end
    if not chunk then error(err, 0) end
    return chunk()
end

-- Whether every slice of a flattened value along dim sums to 1 (within 1e-3): the rows of attention
-- weights do along their last dim. A NaN sum does not count against it, as a NaN is never "> 1e-3".
local function sums_to_one(flat, dim)
    if #flat.shape < 2 then return false end
    local sums = mha.tensor(flat.data):reshape(flat.shape):sum(dim)
    return (sums - 1):abs():gt(1e-3):float():sum():item() == 0
end

-- The built-in hint for the most common mistake of all: softmax over the wrong axis. It applies
-- when the expected answer is a matrix of weights (sums to 1 along its last dim) and the answer
-- sums to 1 along another dim instead. The hint's %LAST and %D name the two dims.
check.softmax_axis = {
    test = function(got, expected)
        local e, g = check.flatten(expected), check.flatten(got)
        if not (e and g) or #g.shape ~= #e.shape or #e.shape < 2 then return false end
        local last = #e.shape
        if not sums_to_one(e, last) or sums_to_one(g, last) then return false end
        for d = 1, last - 1 do
            if sums_to_one(g, d) then return true, d end
        end
        return false
    end,
    hint = i18n.both("check.softmax_axis"),   -- {en = ..., zh = ...}, as a lesson's own hints
}

-- A mistake's test: the answer contains NaN (an overflow, a fully masked row, 0/0).
function check.has_nan(got)
    local g = check.flatten(got)
    if not g then return false end
    for _, v in ipairs(g.data) do if v ~= v then return true end end
    return false
end

-- check.on_verdict(ex, ok), when set (the Jupyter kernel sets it, lua/kernel/kernel.lua), hears
-- every verdict check.check gives, so a classroom's report can list who answered what; what it
-- raises is ignored, so recording can never change a verdict.
check.on_verdict = nil

-- Checks an answer (or the error its evaluation raised) against an exercise.
-- Returns ok, message (the verdict or the hint, in lang).
local function decide(ex, got, eval_error, lang)
    lang = lang or "en"
    if eval_error then
        for _, m in ipairs(ex.mistakes or {}) do
            if m.error and tostring(eval_error):find(m.error) then
                return false, i18n.pick(m.hint, lang)
            end
        end
        return false, msg(lang, "error", tostring(eval_error))
    end
    local expected = check.evaluate(ex.solution, "solution")
    local tol = {atol = ex.atol or ex.tol or 1e-4, rtol = ex.rtol or 1e-4}
    local ok, why, kind = check.compare(expected, got, tol, lang)
    if ok then return true, i18n.words(lang).lesson.correct end
    if kind == "malformed" then return false, why end
    for _, m in ipairs(ex.mistakes or {}) do
        if m.wrong then
            local okw, wrong_value = pcall(check.evaluate, m.wrong, "mistake")
            if okw and check.compare(wrong_value, got, tol, lang) then return false, i18n.pick(m.hint, lang) end
        elseif m.test then
            local hit, d = m.test(got, expected)
            if hit then
                local e = check.flatten(expected)
                local text = i18n.pick(m.hint, lang):gsub("%%LAST", tostring(#e.shape)):gsub("%%D", tostring(d))
                return false, text
            end
        end
    end
    local hint = ex.hint and i18n.pick(ex.hint, lang)
    return false, why .. (hint and ("\n" .. hint) or "")
end

function check.check(ex, got, eval_error, lang)
    local ok, message = decide(ex, got, eval_error, lang)
    if check.on_verdict then pcall(check.on_verdict, ex, ok) end
    return ok, message
end

return check
