-- lua/repl/habits.lua - module "mha.repl.habits": one-line hints for a student's Python habits
-- (x.shape, x @ y, x * y:T(), help, quit, exit(), import, range loops, def, [1, 2] lists, x[0], +=,
-- !=, # comments, if x:, print x, keyword arguments, dim 0, None) and did-you-mean for misspelt
-- names, commands and help topics.

local display = require "mha.display"
local complete = require "mha.repl.complete"
local mha_is_tensor = require("mha").is_tensor
local i18n = require "mha.i18n"   -- the hints' words (rooms hint and core)
local option_tables = require "mha.options"   -- edit_distance

local habits = {}

-- The hints' words, in the language the REPL is in ("en" or "zh"). A hint that is false in a
-- language (to_device, train_mode, ce_option in English) is not given: the refusal says it already.
function habits.words(lang) return i18n.words(lang).hint end

habits.closest = display.closest

-- The name in candidates nearest a nil global's name, when close for the name's length: one edit
-- for every 4 letters (mhaa -> mha, sofmax -> softmax; loss is not load, nor opt out). Only names
-- that hold a value in where (_G, mha), never a keyword (lin is not in) but the one it is
-- spelt as in Python (True), and for a call (used is "call") only what can be called.
local function near_global(name, candidates, where, used)
    local names = {}
    for _, c in ipairs(candidates) do
        local ok, v = pcall(function() return where[c] end)
        local mt = ok and getmetatable(v)
        local callable = type(v) == "function" or type(mt) == "table" and rawget(mt, "__call") ~= nil
        local keyword = complete.keywords[c]
        if keyword and name:lower() == c   -- Python's True and False are Lua's true and false
           or ok and v ~= nil and not keyword and (used ~= "call" or callable) then
            names[#names + 1] = c
        end
    end
    local best = habits.closest(name, names)
    if best and 4 * option_tables.edit_distance(name:lower(), best:lower()) <= #name then return best end
    return nil
end

-- "mha.sofmax" -> "mha.softmax": the name Tab would offer (mha.repl.complete) nearest to a name
-- missing from a table, from an object's methods, or from the globals (used: "call" or "index").
local function suggest(kind, name, input, used)
    if kind == "global" then   -- a global, else a function of mha's typed without "mha." (sofmax)
        local best = near_global(name, complete.names(""), _G, used)
        if best then return best end
        local fields = {}
        for i, full in ipairs(complete.names("mha.")) do fields[i] = full:sub(5) end
        best = near_global(name, fields, rawget(_G, "mha") or {}, used)
        return best and "mha." .. best
    end
    local sep = kind == "method" and ":" or "."
    -- the expression before the missing name, as typed: mha.sofmax, x:tranpose, m.nn.Linaer
    local base = input:match("([%a_][%w_%.]*)%s*" .. (sep == ":" and ":" or "%.") .. "%s*" .. name .. "%f[^%w_]")
    if not base then return nil end
    local names = {}
    for i, full in ipairs(complete.names(base .. sep)) do names[i] = full:sub(#base + 2) end
    local best = habits.closest(name, names)
    return best and (base .. sep .. best)
end

-- The last value of an input, as typed: "score" in "score = K:matmul(q); score".
local function trailing_value(input)
    local last = input:gsub("%s+$", ""):match("([%a_][%w_%.%[%]\"']*)$")
    if last and #last <= 40 then return last end
    return nil
end

-- The two operands around an operator, as typed: "x", "y" in "x @ y"; nil when they are not plain
-- names or calls.
local function operands(input, op)
    local a, b = input:match("([%a_][%w_%.:]*%b())%s*" .. op .. "%s*([%a_][%w_%.:]*%b())")
    if not a then a, b = input:match("([%a_][%w_%.]*)%s*" .. op .. "%s*([%a_][%w_%.:]*%b())") end
    if not a then a, b = input:match("([%a_][%w_%.]*)%s*" .. op .. "%s*([%a_][%w_%.]*)") end
    return a, b
end

-- "1, 2, 3" or "1, 2, ..., n": the values from first (0 or 1) to last ("3", "n - 1"); count is
-- how many there are when known.
local function value_list(first, last, count)
    if count and count <= 4 then
        local values = {}
        for k = 0, count - 1 do values[#values + 1] = tostring(first + k) end
        return table.concat(values, ", ")
    end
    return string.format("%d, %d, ..., %s", first, first + 1, last)
end

-- Python's `for i in range(a, b, s): body` as Lua's `for i = a, b - 1, s do body end`, or nil.
-- For range(n) and range(0, n) the loop counts from 1, as Lua's indices do: `for i = 1, n do body
-- end`; the second result then holds what the hint says of it (var, n, args, the lists).
local function range_loop(input)
    local var, args, rest = input:match("^%s*for%s+([%a_][%w_]*)%s+in%s+range%s*%(([^()]*)%)%s*:?([^\n]*)")
    if not var then return nil end
    local parts = {}
    for part in (args .. ","):gmatch("%s*([^,]-)%s*,") do parts[#parts + 1] = part end
    if #parts == 1 then table.insert(parts, 1, "0") end
    if #parts < 2 or #parts > 3 or parts[1] == "" or parts[2] == "" then return nil end
    local body = rest:match("^%s*(.-)%s*$"):gsub("%s*%f[%w]end$", "")   -- an `end` typed after it
    body = body ~= "" and body or "..."
    local n = parts[2]
    local count = math.tointeger(tonumber(n))
    if parts[1] == "0" and (parts[3] == nil or parts[3] == "1") and (count == nil or count > 0) then
        local zero_last = count and tostring(count - 1) or n .. " - 1"
        return string.format("for %s = 1, %s do %s end", var, n, body), {
            var = var, args = args:match("^%s*(.-)%s*$"),
            one_based = value_list(1, n, count), zero_based = value_list(0, zero_last, count)}
    end
    local step = tonumber(parts[3] or "1")
    local down = step and step < 0
    local stop = tonumber(n)   -- the last value range reaches: one before its stop
    stop = stop and tostring(math.tointeger(stop + (down and 1 or -1)) or n)
           or n .. (down and " + 1" or " - 1")
    return string.format("for %s = %s, %s%s do %s end", var, parts[1], stop,
                         parts[3] and ", " .. parts[3] or "", body)
end

-- A Python list typed in brackets, as Lua's table in braces: "[1, 2, 3]" -> "{1, 2, 3}" (the first
-- bracketed value after '=', '(' or ','), or nil.
-- Python's brackets as Lua's braces: "[1, [2]]" -> "{1, {2}}".
local function braces(text) return (text:gsub("%[", "{"):gsub("%]", "}")) end

local function list_literal(input)
    local list = input:match("[=(,]%s*(%b[])")
    if not list or list:find("^%[=*%[") then return nil end   -- [[...]] is a long string
    return braces(list)
end

-- Python's `def f(x): body` as Lua's `function f(x) body end`, or nil.
local function python_def(input)
    local name, params, body = input:match("^%s*def%s+([%a_][%w_%.:]*)%s*(%b())%s*:?%s*(.-)%s*$")
    if not name then return nil end
    return string.format("function %s%s %s end", name, params:gsub("%s*:%s*[%a_][%w_%.%[%]]*", ""),
                         body ~= "" and body or "...")
end

-- Whether an unfinished input is Python's range loop, its colon typed and no `do` (for i in
-- range(3):): no line a student types next completes it, so the REPL gives its error and hint at
-- once instead of a `>>`. (`for i in range(3) do`, Lua's loop over a function range, reads on.)
-- Python's f-string f"text {x} {y:.3f}" (the first in input) as
-- string.format("text %s %.3f", x, y), or nil.
local function fstring_call(input)
    local quote, body = input:match("%f[%w_]f([\"'])(.-)%1")
    if not body or not body:find("{", 1, true) then return nil end
    local args = {}
    local fmt = body:gsub("%%", "%%%%"):gsub("{(.-)}", function(expr)
        local value, spec = expr:match("^(.-):(%.?%d*[dfegs])$")   -- a format, not a method's colon
        args[#args + 1] = (value or expr):match("^%s*(.-)%s*$")
        return "%" .. (spec or "s"):gsub("^%%", "")
    end)
    return string.format("string.format(%s%s%s, %s)", quote, fmt, quote, table.concat(args, ", "))
end

function habits.never_completes(input)
    return input:match("^%s*for%s+[%a_][%w_]*%s+in%s+range%s*%([^()]*%)%s*:") ~= nil
        and not input:find("%f[%w_]do%f[^%w_]") and range_loop(input) ~= nil
end

-- "item is a method: call it with a colon: x:item()": the hint with the call as the user typed it
-- (loss.item()); false when the message shows that call already (a second hint, the missing
-- argument's, would mislead); nil for a message of another kind.
-- The value the dotted name (x, model.x) holds among the globals; nil when it cannot be read.
local function named_value(path)
    local ok, v = pcall(function()
        local v = _G
        for part in path:gmatch("[^%.]+") do v = v[part] end
        return v
    end)
    return ok and v or nil
end

-- Whether base (as typed before ".method(") names a library table (mha, mha.nn, plot): its
-- functions take the tensor as an argument, so mha.exp() lacks one, it is not x.exp().
local function library_named(base)
    local v = named_value(base)
    if type(v) ~= "table" then return false end
    for _, loaded in pairs(package.loaded) do   -- mha is "mha" there, plot "mha.plot"
        if rawequal(loaded, v) then return true end
    end
    return false
end

local function colon_hint(input, first, w)
    local method = first:match("([%w_]+) is a method: call it with a colon: ")
                   or first:match("as a method, call it with a colon: [%w_]+:([%w_]+)")
    if not method then return nil end
    local base, args = input:match("([%a_][%w_%.]*)%." .. method .. "%s*(%b())")
    if base and library_named(base) then return nil end
    local call = base and base .. ":" .. method .. args
    if call and not first:find(call, 1, true) then return w.hint .. string.format(w.colon, call) end
    return false
end

-- x.matmul(y), Python's habit, leaves matmul without its argument #2: Lua passed y alone. The
-- call with a colon when the input calls fname with a dot on a value that has it as a method (a
-- tensor, a module), else nil.
local function dot_call(input, fname)
    for base, args in input:gmatch("([%a_][%w_%.]*)%." .. fname .. "%s*(%b())") do
        local v = not library_named(base) and named_value(base)
        local ok, method = pcall(function() return v and v[fname] end)
        if ok and type(method) == "function" then return base .. ":" .. fname .. args end
    end
    return nil
end

-- Python's x.shape[1] (a method indexed): the hint with Lua's x:shape()[2], x:size(-1) for a
-- negative index.
local function shape_index(input, base, w)
    local index = input:match("%.shape%s*%[%s*([^%]]-)%s*%]") or "0"
    local n = math.tointeger(tonumber(index))
    local lua_form
    if n and n < 0 then lua_form = string.format("%s:size(%d)", base, n)
    elseif n then lua_form = string.format("%s:shape()[%d]", base, n + 1)
    else lua_form = string.format("%s:shape()[%s + 1]", base, index) end
    return string.format(w.shape_index, base, base, index, lua_form, base)
end

-- The parts of a table's or a call's inside at its top-level commas, trimmed:
-- "params = f(a, b), lr = 1" -> {"params = f(a, b)", "lr = 1"}.
local function top_level_parts(inside)
    local parts, depth, start = {}, 0, 1
    for at = 1, #inside + 1 do
        local c = inside:sub(at, at)
        if c == "(" or c == "{" or c == "[" then depth = depth + 1
        elseif c == ")" or c == "}" or c == "]" then depth = depth - 1
        elseif (c == "," and depth == 0) or at > #inside then
            parts[#parts + 1] = inside:sub(start, at - 1):match("^%s*(.-)%s*$")
            start = at + 1
        end
    end
    return parts
end

-- torch's optimizer calls as typed, in the form mha.optim takes (its error shows it with
-- "params"): mha.optim.Adam{params = lin:parameters(), lr = 1e-3} and
-- mha.optim.Adam(lin:parameters(), 1e-3) -> mha.optim.Adam(lin:parameters(), {lr = 1e-3}); or nil.
local function optimizer_call(input)
    local name, braced = input:match("(mha%.optim%.%a+)%s*(%b{})")
    if braced then
        local params, options = nil, {}
        for _, part in ipairs(top_level_parts(braced:sub(2, -2))) do
            local value = part:match("^params%s*=%s*(.+)$")
            if value then params = value elseif part ~= "" then options[#options + 1] = part end
        end
        if not params then return nil end
        return string.format("%s(%s%s)", name, params, #options > 0 and ", {" .. table.concat(options, ", ") .. "}" or "")
    end
    local args
    name, args = input:match("(mha%.optim%.%a+)%s*(%b())")
    local parts = args and top_level_parts(args:sub(2, -2)) or {}
    if #parts ~= 2 or parts[2]:find("^{") then return nil end
    return string.format("%s(%s, {lr = %s})", name, parts[1], parts[2])
end

-- "(3,4)" -> {3, 4}
local function sizes(text)
    local out = {}
    for n in text:gmatch("%d+") do out[#out + 1] = tonumber(n) end
    return out
end

-- The hint for A * B whose shapes (shape_a, shape_b: "(3,4)") do not broadcast: the matrix
-- product that fits the shapes (A's last size must equal B's second-to-last), A:matmul(B), else
-- with one operand transposed, else B:matmul(A), else that none fits; nil for a vector.
local function star_hint(input, shape_a, shape_b, w)
    local a, b = operands(input, "%*")
    a, b = a or "A", b or "B"
    local sa, sb = sizes(shape_a), sizes(shape_b)
    if #sa < 2 or #sb < 2 then return nil end
    local ra, ca, rb, cb = sa[#sa - 1], sa[#sa], sb[#sb - 1], sb[#sb]
    if ca == rb then return w.hint .. string.format(w.matmul_star, a, b) end
    local function T(s, n) return s .. (n == 2 and ":transpose(1, 2)" or ":transpose(-2, -1)") end
    local call, left, right
    if ca == cb then
        call, left, right = a .. ":matmul(" .. T(b, #sb) .. ")", {ra, ca}, {cb, rb}
    elseif ra == rb then
        call, left, right = T(a, #sa) .. ":matmul(" .. b .. ")", {ca, ra}, {rb, cb}
    elseif cb == ra then   -- the other order: B's rows combine A's
        call, left, right = b .. ":matmul(" .. a .. ")", {rb, cb}, {ra, ca}
    end
    if not call then return w.hint .. string.format(w.matmul_none, shape_a, shape_b) end
    return w.hint .. string.format(w.matmul_star_t, shape_a, shape_b, call, left[1], left[2],
                                   right[1], right[2], left[1], right[2])
end

-- Python's syntax in a Lua syntax error: x += 1, !=, # comments, if x > 0:, print x,
-- f(x, dim=-1); the hint, or nil.
local function syntax_hint(input, first, w)
    local target, op, value = input:match("^%s*([%a_][%w_%.%[%]]*)%s*([%+%-%*/%%])=%s*(.-)%s*$")
    if target and first:find("near '" .. op .. "'", 1, true) then
        return w.hint .. string.format(w.compound, op, target, target, op, value)
    end
    if input:find("!=", 1, true) and first:find("near '!'", 1, true) then
        return w.hint .. string.format(w.not_equal, (input:gsub("!=", "~="):match("^%s*(.-)%s*$")))
    end
    if input:match("^%s*#") and first:find("near '#'", 1, true) then
        return w.hint .. string.format(w.comment, (input:gsub("^%s*#%s*", "-- ")))
    end
    local kind, cond = input:match("^%s*(%a+)%s+(.-)%s*:%s*$")
    if (kind == "if" or kind == "while") and (first:find("'then' expected near ':'", 1, true)
                                              or first:find("'do' expected near ':'", 1, true)) then
        return w.hint .. string.format(w.colon_block, kind .. " " .. cond .. (kind == "if" and " then" or " do") .. " ... end")
    end
    local printed = input:match("^%s*print%s+([^%s(=][^=]-)%s*$")
    if printed and first:find("syntax error near", 1, true) then
        return w.hint .. string.format(w.print_call, printed)
    end
    if first:find("expected near '='", 1, true) and input:find("[(,]%s*[%a_][%w_]*%s*=[^=]") then
        local call = input:gsub("([(,]%s*)[%a_][%w_]*%s*=%s*([^=])", "%1%2"):match("^%s*(.-)%s*$")
        return w.hint .. string.format(w.keyword, call)
    end
    return nil
end

-- A hint for an input whose evaluation raised msg (a syntax or a run-time error), or nil.
function habits.after_error(input, msg, lang)
    local w = habits.words(lang)
    msg = tostring(msg)
    local first = msg:match("^[^\n]*")
    -- Python's import, its range loop and its 0-based index
    local missing = first:match("attempt to index a nil value %(global '(%a+)'%)")
    if input:match("^%s*import%s+[%a_]") or input:match("^%s*from%s+[%a_][%w_%.]*%s+import%f[^%w_]")
       or missing == "torch" or missing == "np" or missing == "numpy" then
        return w.hint .. w.import
    end
    local loop, counted = range_loop(input)
    if counted then
        return w.hint .. string.format(w.range_from_one, loop, counted.var, counted.one_based, counted.var,
                                       counted.args, counted.zero_based, counted.var)
    end
    if loop then return w.hint .. string.format(w.range, loop) end
    local def = python_def(input)
    if def then return w.hint .. string.format(w.def, def) end
    local syntax = syntax_hint(input, first, w)   -- x += 1, !=, #, if x > 0:, print x, f(dim=1)
    if syntax then return syntax end
    if first:find("dim 0 out of range for a tensor of shape", 1, true) then return w.hint .. w.dim_zero end
    if first:find("unexpected symbol near '['", 1, true) then
        local list = list_literal(input)
        if list then return w.hint .. string.format(w.list, list) end
    end
    if first:find("index 0 out of range for dim", 1, true) then
        local base = input:match("([%a_][%w_%.%[%]%-]*)%s*%[%s*0%s*%]") or "x"
        return w.hint .. string.format(w.index_zero, base, base)
    end
    if first:find("near '@'", 1, true) then
        local a, b = operands(input, "@")
        a, b = a or "A", b or "B"
        return w.hint .. string.format(w.matmul_at, a, b, a, b)
    end
    if first:find("syntax error near <eof>$") then
        local value = trailing_value(input)
        if value then return w.hint .. string.format(w.dangling, value, value, value) end
        return w.hint .. w.dangling_any
    end
    local global = first:match("attempt to call a nil value %(global '([%w_]+)'%)")
    if global == "exit" or global == "quit" then return w.hint .. w.exit end
    local fstring = global == "f" and fstring_call(input)   -- Python's print(f"loss {x}")
    if fstring then return w.hint .. string.format(w.fstring, fstring) end
    if global == "len" then   -- Python's len(x)
        local arg = input:match("len%s*%(%s*([%a_][%w_%.]*)%s*%)") or "x"
        return w.hint .. string.format(w.len, arg, arg, arg)
    end
    if first:find("attempt to %a+ a nil value %(field 'data'%)") then   -- torch's x.data
        local base = input:match("([%a_][%w_%.]*)%.data%f[^%w_]")
        if base then return w.hint .. string.format(w.data, base, base) end
    end
    -- the module methods' refusals (lua/nn/module.lua) say it in English; in Chinese a hint says it
    -- again
    if w.to_device and first:find("^[^:]*:?%d*:? ?[%w_]+:to: device .* is not available") then return w.hint .. w.to_device end
    if w.train_mode and first:find("[%w_]+:train: mode must be true or false") then return w.hint .. w.train_mode end
    -- torch's habit of padding targets with 0 (or -1): cross_entropy's ignore_index skips them
    local bad = first:match("cross_entropy: targets %S+: entry %d+ is (%-?%d+); expected a whole number from 1")
    if bad and tonumber(bad) <= 0 then return w.hint .. string.format(w.ce_target, bad, bad) end
    if w.ce_option and first:find("cross_entropy[%w_]*: option [%w_]+ must be") then return w.hint .. w.ce_option end
    local shape_a, shape_b = first:match("mul: shapes (%b()) and (%b()) cannot broadcast")
    if shape_a and input:find("*", 1, true) then return star_hint(input, shape_a, shape_b, w) end
    local shape_of = first:find("attempt to index a function value (field 'shape')", 1, true)
                     and input:match("([%a_][%w_%.]*)%.shape%s*%[")
    if shape_of then return w.hint .. shape_index(input, shape_of, w) end
    if first:find("optim%.%a+: the parameters and the options go in two arguments")
       or first:find("optim%.%a+: options must be a table, got %a+: write") then
        local call = optimizer_call(input)
        if call then return w.hint .. string.format(w.colon, call) end
    end
    local colon = colon_hint(input, first, w)
    if colon ~= nil then return colon or nil end
    -- a function called without an argument it needs: where its signature is
    local n, fname = first:match("bad argument #(%d+) to '([%w_]+)' %(.- expected, got no value%)")
    local call = n and n ~= "1" and dot_call(input, fname)
    if call then return w.hint .. string.format(w.colon, call) end
    if n then return w.hint .. string.format(w.missing_arg, fname, n, fname) end
    local used, kind, name = first:match("attempt to (%a+) a nil value %((%a+) '([%w_]+)'%)")
    if kind == "global" or kind == "field" or kind == "method" then
        local best = suggest(kind, name, input, used)
        if best and kind == "global" then return w.hint .. string.format(w.nil_name, name, best) end
        if best then return w.hint .. string.format(w.did_you_mean, best) end
        -- a name never assigned (or lost to :reset): loss.item(), lin.forward(x)
        if kind == "global" then return w.hint .. string.format(w.nil_global, name) end
    end
    return nil
end

-- Whether the dotted name (x, model.x) is a tensor among the globals.
local function is_tensor_named(path) return mha_is_tensor(named_value(path)) end

-- Python's constants, as Lua writes them
local LUA_CONSTANT = {None = "nil", True = "true", False = "false"}

-- A hint for a statement that ran and showed nothing, or nil: x = [[1, 2], [3, 4]], Python's nested
-- list, which Lua reads as a long string; x = None (or True, False), an unset name, so nil.
function habits.after_statement(input, lang)
    local w = habits.words(lang)
    local code = input:match("^%s*(.-)%s*;?%s*$"):gsub("^local%s+", "")
    local name, constant = code:match("^([%a_][%w_%.]*)%s*=%s*(%u%l+)$")
    if name and LUA_CONSTANT[constant] and rawget(_G, constant) == nil then
        return w.hint .. string.format(w.constant, constant, LUA_CONSTANT[constant], constant, name)
    end
    local target, text = code:match("^([%a_][%w_%.]*)%s*=%s*%[%[(.*)%]%]$")
    if target and text:find("%d") and text:find("^[%d%s,%.%-+eE%[%]]*$") then
        return w.hint .. string.format(w.long_string, target, "{{" .. braces(text) .. "}}")
    end
    return nil
end

-- The words a shell clears its screen with, which a student types at the prompt out of habit.
habits.clear_words = {clear = true, cls = true}

-- A hint for an input that printed values, or nil: x.shape (a method, not called), help, quit,
-- exit.
function habits.after_value(input, lang, ...)
    local w = habits.words(lang)
    local code = input:match("^%s*(.-)%s*;?%s*$")
    if code == "help" and type((...)) == "function" then return w.hint .. w.help end
    if (code == "quit" or code == "exit") and select("#", ...) <= 1 and (...) == nil then return w.hint .. w.quit end
    -- a shell's clear (cls), typed to clear the screen
    if habits.clear_words[code] and select("#", ...) <= 1 and (...) == nil then
        return w.hint .. string.format(w.clear, code)
    end
    local base, name = code:match("^([%a_][%w_%.]*)%.([%a_][%w_]*)$")
    local value = ...
    if base and name == "data" and value == nil and select("#", ...) <= 1 and is_tensor_named(base) then
        return w.hint .. string.format(w.data, base, base)
    end
    -- Python's 0-based index into a table (x:shape()[0]): nil, with no error to say why
    local indexed = code:match("^(.-)%[%s*0%s*%]$")
    if indexed and indexed ~= "" and value == nil and select("#", ...) <= 1 then
        return w.hint .. string.format(w.index_zero_nil, indexed, indexed)
    end
    -- a misspelt name typed alone (mha.sofmax, sofmax) is nil: the name Tab would offer
    local bare = code:match("^[%a_][%w_]*$")
    if value == nil and select("#", ...) <= 1 and (base or bare) then
        local best
        if base then best = suggest("field", name, code) else best = suggest("global", bare, code) end
        if best then return w.hint .. string.format(w.nil_name, code, best) end
    end
    -- a tensor method reached with '.' after a call: mha.randn(3, 4).T
    local expr, method = code:match("^(.-[%)%]])%.([%a_][%w_]*)$")
    local tensor_mt = debug.getregistry()["mha.Tensor"]
    local methods = type(tensor_mt) == "table" and rawget(tensor_mt, "__methods")
    if expr and type(value) == "function" and select("#", ...) == 1 and type(methods) == "table"
       and rawget(methods, method) == value then
        return w.hint .. string.format(w.method, code, expr, method)
    end
    if base and type(value) == "function" and select("#", ...) == 1 then
        -- a method reached with '.' (a tensor's, a module's): the name Tab offers after base:
        for _, full in ipairs(complete.names(base .. ":" .. name)) do
            if full == base .. ":" .. name then return w.hint .. string.format(w.method, code, base, name) end
        end
    end
    return nil
end

-- Whether hint (or nil) replaces the values it is about, printed alone by the REPL and the kernel:
-- a lone function, which after_value's hints explain (x.shape, the method itself), where the value
-- would only show "function: 0x55...".
function habits.replaces_value(hint, ...)
    return hint ~= nil and select("#", ...) == 1 and type((...)) == "function"
end

-- ":opne" -> the message for an unknown command, with the nearest command when one is near.
function habits.unknown_command(name, commands, lang)
    local best = habits.closest(name, commands)
    if best then return string.format(habits.words(lang).command, name, best) end
    return nil
end

-- Hint lines for the messages the C core and the helpers raise in English: the REPL prints the
-- line under such a message (in English only where the message does not say it already: a key
-- that is false in en.core gives none). Each entry is a pattern of the message's first line and
-- the hint's key in the catalogue (room core), a format for the pattern's captures.
local CORE_LINES = {
    {"^interrupted$", "interrupted"},
    {": interrupted$", "interrupted"},
    {"unknown option '([^']*)' %(did you mean '([^']*)'%?%)", "option_did_you_mean"},
    {"unknown option '([^']*)'", "option_unknown"},
    {"([%w_]+) is a method: call it with a colon: (.-)$", "method_colon"},
    {"view: cannot view a tensor", "view"},
    {"inner sizes (%d+) and (%d+) differ", "inner_sizes"},
    {"embed_dim (%d+) is not divisible by num_heads (%d+)", "divisible"},
    {"x's last size (%d+) is not W's in_features (%d+)", "linear_in"},
    {"to '([%w_]+)' %(.-%); as a method, call it with a colon: (.-)$", "method_colon"}, -- x.sum()
    {"bad argument #(%d+) to '([%w_]+)' %((.-) expected, got (.-)%)", "bad_argument"},
    -- the core's file and size errors
    {"which float32 cannot hold exactly", "float32_exact"},
    {"beyond float32's range", "float32_range"},
    {"too small for float32", "float32_small"},
    {"No space left on device", "disk_full"},
    {"the largest size a dim may have", "dim_largest"},
    {"tensor: takes one table of values, not %d+ numbers: (.-)$", "tensor_values"},
    {"(%d+) prompt tokens and max_new_tokens (%d+) need (%d+) positions %(the %d+ prompt tokens and the first " ..
     "(%d+) new ones are read back in.-%), past max_len (%d+)", "generate_positions"},
}

-- The hint line in lang ("en", "zh") for an English message of the core (its first line), or nil.
function habits.core_line(msg, lang)
    local first = tostring(msg):match("^[^\n]*")
    for _, entry in ipairs(CORE_LINES) do
        local found = table.pack(first:match(entry[1]))
        local line = i18n.words(lang).core[entry[2]]
        if found[1] then return line and string.format(line, table.unpack(found, 1, found.n)) or nil end
    end
    return nil
end

-- The Chinese hint line for an English message (its first line), or nil.
function habits.zh_line(msg) return habits.core_line(msg, "zh") end

return habits
