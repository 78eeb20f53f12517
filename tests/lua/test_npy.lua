-- tests/lua/test_npy.lua - mha.save / mha.load through the bindings: round trips (float, bool, scalar,
-- non-contiguous views), files NumPy wrote (float32, float64, int32, bool, 0-d; made by
-- tests/fixtures/gen/gen_lua_fixtures.py), saves byte-identical to NumPy's, and broken files refused with a message.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local function F(name) return T.path("tests/fixtures/lua/" .. name .. ".npy") end

local function read_bytes(path)
    local f = assert(io.open(path, "rb"))
    local data = f:read("a")
    f:close()
    return data
end

local function write_bytes(path, data)
    local f = assert(io.open(path, "wb"))
    f:write(data)
    f:close()
end

local tmp = os.tmpname()

T.test("round trips", function()
    local x = mha.randn(3, 4, 5)
    mha.save(tmp, x)
    local back = mha.load(tmp)
    T.ok("float (3,4,5) comes back equal", back == x)
    T.eq("and contiguous", back:is_contiguous(), true)

    local view = x:transpose(1, 3):narrow(2, 2, 3)
    mha.save(tmp, view)
    T.ok("a transposed, narrowed view saves its values in C order", mha.load(tmp) == view:contiguous())

    local mask = mha.causal_mask(4)
    mha.save(tmp, mask)
    local mask_back = mha.load(tmp)
    T.eq("bool dtype survives", mask_back:dtype(), "bool")
    T.ok("bool values survive", mask_back == mask)

    mha.save(tmp, mha.tensor(2.5))
    local s = mha.load(tmp)
    T.eq("a scalar stays 0-d", s:shape(), {})
    T.eq("a scalar's value", s:item(), 2.5)

    mha.save(tmp, { { 1, 2 }, { 3, 4 } })
    T.eq("save converts a nested table", mha.load(tmp):totable(), { { 1, 2 }, { 3, 4 } })

    local special = mha.tensor { 0 / 0, math.huge, -math.huge, -0.0, 1e-38 }
    mha.save(tmp, special)
    local sb = mha.load(tmp):totable()
    T.ok("NaN survives", sb[1] ~= sb[1])
    T.eq("infinities survive", { sb[2], sb[3] }, { math.huge, -math.huge })
    T.eq("-0 keeps its sign", 1 / sb[4], -math.huge)

    mha.save(tmp, mha.zeros(0, 3))
    T.eq("an empty (0,3) tensor round-trips", mha.load(tmp):shape(), { 0, 3 })
end)

T.test("files numpy wrote", function()
    T.close("float32 (2,3)", mha.load(F("np_float32_2x3")), { { 0, 0.25, 0.5 }, { 0.75, 1, 1.25 } }, 0, 0)
    local f64 = mha.load(F("np_float64_3"))
    T.eq("float64 converts to float32", f64:dtype(), "float32")
    T.close("float64 values (rounded to float32)", f64, { 1.5, -2.25, 1e-3 }, 1e-7, 0)
    T.close("int32 converts to float32", mha.load(F("np_int32_2x2")), { { 1, -2 }, { 3, 40000 } }, 0, 0)
    local b = mha.load(F("np_bool_3"))
    T.eq("bool reads as bool", b:dtype(), "bool")
    T.eq("bool values", b:totable(), { true, false, true })
    local s = mha.load(F("np_scalar"))
    T.eq("a 0-d array is a scalar", s:shape(), {})
    T.eq("its value", s:item(), 3.25)
end)

T.test("saves byte-identical to numpy", function()
    for _, name in ipairs { "np_float32_2x3", "np_bool_3", "np_scalar", "x", "mask" } do
        mha.save(tmp, mha.load(F(name)))
        T.ok("save(load(" .. name .. ".npy)) has numpy's exact bytes", read_bytes(tmp) == read_bytes(F(name)))
    end
end)

T.test("broken files", function()
    local good = read_bytes(F("x"))
    write_bytes(tmp, good:sub(1, #good - 7))
    T.raises("a truncated file", function() mha.load(tmp) end, { "load", tmp })
    write_bytes(tmp, good:sub(1, 40))
    T.raises("a truncated header", function() mha.load(tmp) end, { "load", tmp })
    write_bytes(tmp, "")
    T.raises("an empty file", function() mha.load(tmp) end, { "load", tmp })
    write_bytes(tmp, good:gsub("'descr': '<f4'", "'descr': '<c8'", 1))
    T.raises("an unsupported dtype (complex64)", function() mha.load(tmp) end, { "load", "c8" })
    write_bytes(tmp, (good:gsub("'shape': %(3, 4, 5%)", "'shape': (3, 4, 9)", 1)))
    T.raises("a shape larger than the data", function() mha.load(tmp) end, { "load", tmp })
    T.raises("a directory", function() mha.load(T.path("tests")) end, "load")
end)

os.remove(tmp)
T.done()
