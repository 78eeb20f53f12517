-- tests/lua/testlib.lua - the small assertion kit every Lua test in tests/lua/ uses: each check prints
-- one "PASS name" or "FAIL name: why" line, which tests/run.sh counts into "N passed, M failed".
--
-- A test file starts with
--     local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
--     package.path = dir .. "?.lua;" .. package.path
--     local T = require "testlib"
--     local mha = T.mha
-- and ends with `T.done()`, which exits non-zero when a check failed. It runs both as
--     build/mha-repl tests/lua/test_X.lua                      (mha is preloaded there)
--     MHA_BUILD=build lua5.4 tests/lua/test_X.lua              (mha.so found through MHA_BUILD)
-- Fixture paths are relative to the repository root: T.path("tests/fixtures/x.npy") works from any
-- working directory.

local T = {}

T.failures = 0
T.passes = 0

-- The directory of this file, and the repository root two levels up.
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
T.root = here .. "../../"

-- T.path("tests/fixtures/mha/x.npy"): a repository-relative path made usable from any directory.
function T.path(rel)
    return T.root .. rel
end

-- Find the mha module: already loaded (mha-repl), on package.cpath, or in $MHA_BUILD/mha.so.
local function load_mha()
    if package.loaded.mha then return package.loaded.mha end
    local build = os.getenv("MHA_BUILD")
    if build and build ~= "" then
        package.cpath = build .. "/?.so;" .. package.cpath
    end
    local ok, mod = pcall(require, "mha")
    if ok then return mod end
    print("FAIL testlib: cannot load mha (set MHA_BUILD to a build directory): " .. tostring(mod):match("[^\n]*"))
    T.failures = (T.failures or 0) + 1
    return nil
end
T.mha = load_mha()

-- Record one result. why explains a failure.
function T.report(ok, name, why)
    if ok then
        T.passes = T.passes + 1
        print("PASS " .. name)
    else
        T.failures = T.failures + 1
        print("FAIL " .. name .. ": " .. tostring(why or "failed"))
    end
    return ok
end

-- T.ok(name, cond [, why]): passes when cond is truthy.
function T.ok(name, cond, why)
    return T.report(cond and true or false, name, why or "condition was false")
end

-- Printable form of any value, tables deeply (sorted keys, so output is deterministic).
local function show(v, depth)
    depth = depth or 0
    if type(v) == "string" then return string.format("%q", v) end
    if type(v) ~= "table" then return tostring(v) end
    if depth > 3 then return "{...}" end
    local parts, keys = {}, {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
        if type(a) == type(b) and (type(a) == "number" or type(a) == "string") then return a < b end
        return type(a) < type(b)
    end)
    for _, k in ipairs(keys) do
        if math.type(k) == "integer" and k >= 1 and k <= #v then
            parts[#parts + 1] = show(v[k], depth + 1)
        else
            parts[#parts + 1] = tostring(k) .. "=" .. show(v[k], depth + 1)
        end
    end
    return "{" .. table.concat(parts, ",") .. "}"
end
T.show = show

-- Deep equality of plain values and tables (exact; use T.close for floats).
local function deep_equal(a, b)
    if type(a) ~= type(b) then return false end
    if type(a) ~= "table" then
        if a ~= a and b ~= b then return true end -- NaN equals NaN here
        return a == b
    end
    for k, v in pairs(a) do
        if not deep_equal(v, b[k]) then return false end
    end
    for k in pairs(b) do
        if a[k] == nil then return false end
    end
    return true
end
T.deep_equal = deep_equal

-- T.eq(name, got, want): exact (deep) equality.
function T.eq(name, got, want)
    return T.report(deep_equal(got, want), name, "got " .. show(got) .. ", want " .. show(want))
end

local function is_tensor(v)
    return T.mha ~= nil and T.mha.is_tensor ~= nil and T.mha.is_tensor(v)
end

-- Flatten a number, nested table or tensor into (values[], shape[]) in C order.
local function flatten(v)
    if is_tensor(v) then
        local shape = v:shape()
        local data = v:totable()
        if #shape == 0 then data = { data } end
        local values = {}
        local function walk(x)
            if type(x) == "table" then
                for _, y in ipairs(x) do walk(y) end
            else
                values[#values + 1] = x
            end
        end
        walk(data)
        return values, shape
    end
    if type(v) == "number" or type(v) == "boolean" then return { v }, {} end
    if type(v) ~= "table" then error("cannot compare a " .. type(v)) end
    local values, shape = {}, {}
    local function walk(x, d)
        if type(x) == "table" then
            if shape[d] == nil then shape[d] = #x end
            for _, y in ipairs(x) do walk(y, d + 1) end
        else
            values[#values + 1] = x
        end
    end
    walk(v, 1)
    return values, shape
end
T.flatten = flatten

local function shape_str(shape)
    local s = {}
    for i, n in ipairs(shape) do s[i] = tostring(n) end
    return "(" .. table.concat(s, ",") .. ")"
end
T.shape_str = shape_str

-- The 1-based multi-index "(i,j,k)" of flat position k (1-based) in a C-order shape.
local function index_str(shape, k)
    if #shape == 0 then return "()" end
    local idx, rest = {}, k - 1
    for d = #shape, 1, -1 do
        idx[d] = rest % shape[d] + 1
        rest = rest // shape[d]
    end
    return shape_str(idx)
end

-- |got - want| <= atol + rtol*|want|; NaN matches NaN, an infinity matches the same infinity.
local function close_value(got, want, rtol, atol)
    if type(got) == "boolean" then got = got and 1 or 0 end
    if type(want) == "boolean" then want = want and 1 or 0 end
    if want ~= want then return got ~= got end
    if want == math.huge or want == -math.huge then return got == want end
    return math.abs(got - want) <= atol + rtol * math.abs(want)
end
T.close_value = close_value

T.RTOL = 1e-5 -- the project's relative tolerance against references
T.ATOL = 1e-6 -- absolute floor, for elements whose reference is (near) zero

-- T.close(name, got, want [, rtol [, atol]]): got and want are tensors, nested tables or numbers.
-- Shapes must agree exactly; a failure names the first differing element by its 1-based index.
function T.close(name, got, want, rtol, atol)
    rtol = rtol or T.RTOL
    atol = atol or T.ATOL
    local ok, gv, gs = pcall(flatten, got)
    if not ok then return T.report(false, name, "got: " .. tostring(gv)) end
    local wv, ws
    ok, wv, ws = pcall(flatten, want)
    if not ok then return T.report(false, name, "want: " .. tostring(wv)) end
    -- a number compared with a scalar tensor or a one-element table is fine
    if not deep_equal(gs, ws) and not (#gv == 1 and #wv == 1) then
        return T.report(false, name, "shape " .. shape_str(gs) .. ", want " .. shape_str(ws))
    end
    if #gv ~= #wv then
        return T.report(false, name, #gv .. " elements, want " .. #wv)
    end
    for k = 1, #wv do
        if not close_value(gv[k], wv[k], rtol, atol) then
            return T.report(false, name, string.format(
                "element %s: got %.9g, want %.9g (rtol %g, atol %g)", index_str(ws, k),
                tonumber(gv[k]) or (gv[k] and 1 or 0), tonumber(wv[k]) or (wv[k] and 1 or 0), rtol, atol))
        end
    end
    return T.report(true, name)
end

-- Where two tensors' elements differ in bits (NaN equal to NaN), as "element i: a against b"; nil
-- where none does.
function T.bits_differ(a, b)
    local function flat(t)
        local out = {}
        local function walk(x)
            if type(x) == "table" then for _, y in ipairs(x) do walk(y) end
            else out[#out + 1] = x ~= x and "nan" or string.format("%a", x) end
        end
        walk(t:totable())
        return out
    end
    local x, y = flat(a), flat(b)
    for i = 1, math.max(#x, #y) do
        if x[i] ~= y[i] then return string.format("element %d: %s against %s", i, x[i], y[i]) end
    end
end

-- T.shape(name, tensor, {2,3}): the tensor's shape is exactly the given one.
function T.shape(name, t, want)
    if not is_tensor(t) then return T.report(false, name, "not a tensor: " .. show(t)) end
    local got = t:shape()
    return T.report(deep_equal(got, want), name, "shape " .. shape_str(got) .. ", want " .. shape_str(want))
end

-- The message of the error fn(...) raises, or nil when it does not raise.
function T.errmsg(fn, ...)
    local ok, err = pcall(fn, ...)
    if ok then return nil end
    return tostring(err)
end

-- T.raises(name, fn, expected): fn() must raise an error whose message contains `expected` as plain
-- text (a list of strings: must contain each of them).
function T.raises(name, fn, expected)
    local ok, err = pcall(fn)
    if ok then return T.report(false, name, "no error raised") end
    err = tostring(err)
    local wanted = type(expected) == "table" and expected or { expected }
    for _, w in ipairs(wanted) do
        if not err:find(w, 1, true) then
            return T.report(false, name, "message " .. string.format("%q", err) .. " lacks " .. string.format("%q", w))
        end
    end
    return T.report(true, name)
end

-- T.test(name, fn): runs a group of checks; an unexpected error inside is one FAIL line, and the
-- rest of the file goes on.
function T.test(name, fn)
    local ok, err = xpcall(fn, debug.traceback)
    if not ok then T.report(false, name, "raised " .. tostring(err)) end
    return ok
end

-- T.skip(name, why): says a check did not run (neither PASS nor FAIL).
function T.skip(name, why)
    print("SKIP " .. name .. ": " .. tostring(why))
end

-- T.done(): ends the file; a non-zero exit status when a check failed or none ran.
function T.done()
    if T.passes + T.failures == 0 then
        print("FAIL testlib: no checks ran")
        T.failures = 1
    end
    io.stdout:flush()
    if T.failures > 0 then os.exit(1) end
end

return T
