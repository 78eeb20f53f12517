-- tests/lua/test_tensor.lua - the mha.Tensor userdata: what a tensor reports (shape, strides, offset, dtype),
-- element access with 1-based and negative indices, views sharing memory with their base, view on a
-- non-contiguous tensor failing with its explanation, and every metamethod.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

-- a (2,3,4) tensor holding 0..23 in C order: element (i,j,k) (1-based) is 12(i-1) + 4(j-1) + (k-1)
local function counting() return mha.arange(24):view(2, 3, 4) end

T.test("what a tensor reports", function()
    local t = counting()
    T.eq("shape()", t:shape(), { 2, 3, 4 })
    T.eq("size()", t:size(), { 2, 3, 4 })
    T.eq("size(2)", t:size(2), 3)
    T.eq("size(-1)", t:size(-1), 4)
    T.eq("strides()", t:strides(), { 12, 4, 1 })
    T.eq("offset()", t:offset(), 0)
    T.eq("dim()", t:dim(), 3)
    T.eq("numel()", t:numel(), 24)
    T.eq("dtype()", t:dtype(), "float32")
    T.eq("is_contiguous()", t:is_contiguous(), true)
    T.eq("a scalar's shape is {}", mha.tensor(2):shape(), {})
    T.eq("mha.is_tensor(t)", mha.is_tensor(t), true)
    T.eq("mha.is_tensor(3)", mha.is_tensor(3), false)
    T.eq("mha.is_tensor({})", mha.is_tensor({}), false)
    T.ok("__name is mha.Tensor", getmetatable(t).__name == "mha.Tensor")
    local methods = getmetatable(t).__methods
    T.ok("__methods lists view, softmax, matmul", type(methods) == "table" and methods.view and methods.softmax
        and methods.matmul)
end)

-- print and string.format("%s") show a shape as the REPL does, not as "table: 0x..."
T.test("a shape's list prints as the REPL shows it", function()
    local t = counting()
    T.eq("tostring(t:shape())", tostring(t:shape()), "{2, 3, 4}")
    T.eq("string.format %s", string.format("shape %s", t:shape()), "shape {2, 3, 4}")
    T.eq("t:size()", tostring(t:size()), "{2, 3, 4}")
    T.eq("t:strides()", tostring(t:strides()), "{12, 4, 1}")
    T.eq("a scalar's shape", tostring(mha.tensor(2):shape()), "{}")
    T.eq("still a plain list", {table.unpack(t:shape())}, {2, 3, 4})
    T.eq("a shape passed for a size is still a table", select(2, pcall(mha.zeros, 2, t:shape())),
         "zeros: size 2 of the shape is not an integer (table)")
    local printer = require "mha.repl.printer"
    T.eq("the REPL's printer shows it as a table", printer.format({s = t:shape()}), "{s = {2, 3, 4}}")
end)

T.test("element access", function()
    local t = counting()
    T.eq("get(1,1,1)", t:get(1, 1, 1), 0.0)
    T.eq("get(2,3,4)", t:get(2, 3, 4), 23.0)
    T.eq("get(-1,-1,-1) is the last", t:get(-1, -1, -1), 23.0)
    T.eq("get(1,-3,2)", t:get(1, -3, 2), 1.0)
    t:set(2, 1, 3, 100)
    T.eq("set then get", t:get(2, 1, 3), 100.0)
    T.eq("set returns the tensor (chains)", t:set(1, 1, 1, 5):get(1, 1, 1), 5.0)
    T.eq("totable", mha.arange(6):view(2, 3):totable(), { { 0, 1, 2 }, { 3, 4, 5 } })
    T.eq("totable of a scalar is a number", mha.tensor(1.5):totable(), 1.5)
    T.eq("totable of a transposed view follows the view", mha.arange(6):view(2, 3):T():totable(),
        { { 0, 3 }, { 1, 4 }, { 2, 5 } })
    T.eq("bool totable", mha.tensor { true, false }:totable(), { true, false })
    local b = mha.zeros(2):bool()
    b:set(2, true)
    T.eq("bool set/get", { b:get(1), b:get(2) }, { false, true })
    T.eq("item()", mha.tensor { { 4 } }:item(), 4.0)
    T.eq("float() of bool", mha.tensor { true, false }:float():totable(), { 1, 0 })
    T.eq("bool() of float", mha.tensor { 0, 2, -1 }:bool():totable(), { false, true, true })
end)

T.test("views share memory", function()
    local base = counting()
    local tr = base:transpose(1, 3)
    T.eq("transpose(1, 3) shape", tr:shape(), { 4, 3, 2 })
    T.eq("transpose swaps strides", tr:strides(), { 1, 4, 12 })
    T.eq("transpose is not contiguous", tr:is_contiguous(), false)
    T.ok("transpose shares storage", tr:shares_storage(base))
    tr:set(4, 3, 2, -1)
    T.eq("set through a transpose, read through the base", base:get(2, 3, 4), -1.0)

    local sel = base:select(2, 2) -- (2,4): rows j=2
    T.eq("select offset", sel:offset(), 4)
    sel:set(1, 1, 42)
    T.eq("set through select, read through base", base:get(1, 2, 1), 42.0)

    local nar = base:narrow(3, 2, 2) -- (2,3,2)
    T.eq("narrow shape", nar:shape(), { 2, 3, 2 })
    T.eq("narrow offset", nar:offset(), 1)
    nar:set(2, 3, 2, 7)
    T.eq("set through narrow, read through base", base:get(2, 3, 3), 7.0)

    local v = base:view(6, 4)
    v:set(6, 1, 9)
    T.eq("set through view, read through base", base:get(2, 3, 1), 9.0)
    T.ok("view shares", v:shares_storage(base))
    T.ok("view(-1) infers", base:view(-1):size(1) == 24)

    local p = base:permute(3, 1, 2)
    T.eq("permute shape", p:shape(), { 4, 2, 3 })
    p:set(1, 2, 1, 55)
    T.eq("set through permute, read through base", base:get(2, 1, 1), 55.0)

    local u = base:unsqueeze(1)
    T.eq("unsqueeze(1)", u:shape(), { 1, 2, 3, 4 })
    T.eq("unsqueeze(-1) appends", base:unsqueeze(-1):shape(), { 2, 3, 4, 1 })
    T.eq("unsqueeze(4) appends too", base:unsqueeze(4):shape(), { 2, 3, 4, 1 })
    T.eq("squeeze()", u:squeeze():shape(), { 2, 3, 4 })
    T.eq("squeeze(1)", u:squeeze(1):shape(), { 2, 3, 4 })
    T.ok("squeeze shares", u:squeeze():shares_storage(base))

    local row = mha.tensor { { 1, 2, 3 } }
    local e = row:expand(4, -1)
    T.eq("expand(4, -1)", e:shape(), { 4, 3 })
    T.eq("expand has stride 0", e:strides(), { 0, 1 })
    row:set(1, 2, 20)
    T.eq("expand sees writes to its base", e:get(4, 2), 20.0)

    local c = tr:contiguous()
    T.ok("contiguous() of a transpose copies", not c:shares_storage(base) and c:is_contiguous())
    T.ok("contiguous() of a contiguous tensor shares", base:contiguous():shares_storage(base))
    T.ok("clone() copies", not base:clone():shares_storage(base))
    T.ok("reshape of a contiguous tensor is a view", base:reshape(4, 6):shares_storage(base))
    T.ok("reshape of a transpose copies", not tr:reshape(24):shares_storage(base))
    T.eq("reshape of a transpose keeps the transposed order", counting():transpose(1, 3):reshape(24):get(2), 12.0)

    local m = mha.arange(6):view(2, 3)
    T.eq("T() of a 2-D tensor", m:T():shape(), { 3, 2 })
    local row2 = m[2]
    T.eq("t[2] is row 2 (a view)", row2:totable(), { 3, 4, 5 })
    row2:set(1, 30)
    T.eq("writing through t[2] changes t", m:get(2, 1), 30.0)
    T.eq("t[-1][-1] is a number for 1-D", m[-1][-1], 5.0)
    m[1] = 8
    T.eq("t[1] = 8 fills row 1", m:totable()[1], { 8, 8, 8 })
    m[2] = mha.tensor { 1, 2, 3 }
    T.eq("t[2] = tensor copies into row 2", m:totable()[2], { 1, 2, 3 })
    m:fill_(0)
    T.eq("fill_(0)", m:totable(), { { 0, 0, 0 }, { 0, 0, 0 } })
    m:T():copy_(mha.tensor { { 1, 2 }, { 3, 4 }, { 5, 6 } })
    T.eq("copy_ through a transposed view", m:totable(), { { 1, 3, 5 }, { 2, 4, 6 } })
end)

-- PyTorch 1.13 refuses copy_ and the random fills into a tensor whose elements share memory (expand's
-- stride 0), and allows fill_, one-element writes and t[i] = number there (checked with torch 1.13:
-- torch.ones(1,4).expand(3,4).copy_(...) raises, .fill_(2) and x[0] = 5 do not).
T.test("writes into expanded views", function()
    local base = mha.ones(1, 4)
    local wide = base:expand(3, 4) -- strides (0,1): the three rows are one row
    T.raises("copy_ into an expanded view is refused", function() wide:copy_(mha.arange(12):view(3, 4)) end,
        { "copy_: unsupported operation: more than one element of the written-to tensor (shape (3,4), strides (0,1)) "
            .. "refers to a single memory location", "clone()" })
    T.eq("the refused copy_ wrote nothing", base:totable(), { { 1, 1, 1, 1 } })
    for _, fill in ipairs { "uniform_", "normal_", "xavier_uniform_", "xavier_normal_" } do
        T.raises(fill .. " into an expanded view is refused", function() wide[fill](wide) end,
            { fill .. ": unsupported operation", "(shape (3,4), strides (0,1))" })
    end
    T.eq("the refused fills wrote nothing", base:totable(), { { 1, 1, 1, 1 } })
    local cube = mha.zeros(1, 1, 4):expand(2, 3, 4)
    T.raises("t[i] = tensor into a row that is expanded is refused", function() cube[1] = mha.ones(3, 4) end,
        "newindex: unsupported operation: more than one element of the written-to tensor (shape (3,4), strides (0,1))")
    T.raises("t[i] = table likewise", function() cube[2] = { { 1, 2, 3, 4 }, { 1, 2, 3, 4 }, { 1, 2, 3, 4 } } end,
        "newindex: unsupported operation")
    -- what PyTorch allows: one value everywhere, one element
    wide:fill_(2)
    T.eq("fill_ of an expanded view fills its base", base:totable(), { { 2, 2, 2, 2 } })
    wide:set(3, 2, 7)
    T.eq("set through an expanded view writes its one element", base:totable(), { { 2, 7, 2, 2 } })
    cube[2] = 5
    T.eq("t[i] = number into an expanded row fills it", cube:get(1, 3, 4), 5.0)
    wide[1] = mha.tensor { 1, 2, 3, 4 } -- a row of wide is (4) with stride 1: no overlap inside it
    T.eq("t[i] = tensor where the row itself has no overlap", base:totable(), { { 1, 2, 3, 4 } })
    -- clone() first, as the message says
    local copy = wide:clone():copy_(mha.arange(12):view(3, 4))
    T.eq("clone():copy_ writes every row", copy:totable(), { { 0, 1, 2, 3 }, { 4, 5, 6, 7 }, { 8, 9, 10, 11 } })
    -- a stride 0 along a dim of size 1 shares nothing
    local one = mha.zeros(4):expand(1, 4)
    T.eq("expand(1, 4) has a stride 0 along its size-1 dim", one:strides()[1], 0)
    one:copy_(mha.tensor { { 1, 2, 3, 4 } })
    T.eq("copy_ into it is allowed", one:totable(), { { 1, 2, 3, 4 } })
end)

T.test("view of a non-contiguous tensor", function()
    local t = counting():transpose(1, 2) -- (3,2,4), strides (4,12,1)
    T.raises("view after transpose explains and points to contiguous()/reshape()", function() t:view(6, 4) end,
        { "view: cannot view a tensor of shape (3,2,4)", "contiguous()", "reshape()" })
    T.eq("view of a transposed tensor works where strides allow (merging only the last dim)",
        t:view(3, 2, 2, 2):shape(), { 3, 2, 2, 2 })
    T.eq("contiguous():view works", t:contiguous():view(6, 4):shape(), { 6, 4 })
    -- the head-split lesson: (L,E) -> (L,H,D) -> (H,L,D) -> back needs reshape
    local x = mha.arange(12):view(3, 4)
    local heads = x:view(3, 2, 2):transpose(1, 2):contiguous() -- (H,L,D) in C order, as a matmul gives it
    T.raises("merging heads (L,H,D) with view fails", function() return heads:transpose(1, 2):view(3, 4) end,
        "view: cannot view a tensor of shape (3,2,2)")
    T.ok("merging heads with reshape gives x back", heads:transpose(1, 2):reshape(3, 4) == x)
    T.ok("merging heads with contiguous():view gives x back", heads:transpose(1, 2):contiguous():view(3, 4) == x)
end)

T.test("dims: 1-based and negative", function()
    local t = counting()
    T.eq("transpose(1, 2) == transpose(-3, -2)", t:transpose(1, 2) == t:transpose(-3, -2), true)
    T.eq("sum(3) == sum(-1)", t:sum(3) == t:sum(-1), true)
    T.eq("select(1, -1) is the last along dim 1", t:select(1, -1):get(1, 1), 12.0)
    T.eq("narrow(-1, -2, 2) takes the last two", t:narrow(-1, -2, 2):get(1, 1, 1), 2.0)
    T.eq("split default dim is 1", select("#", t:split(1)), 2)
end)

T.test("metamethods", function()
    local a = mha.tensor { { 1, 2 }, { 3, 4 } }
    local b = mha.tensor { { 10, 20 }, { 30, 40 } }
    T.eq("__add", (a + b):totable(), { { 11, 22 }, { 33, 44 } })
    T.eq("__sub", (b - a):totable(), { { 9, 18 }, { 27, 36 } })
    T.eq("__mul", (a * b):totable(), { { 10, 40 }, { 90, 160 } })
    T.eq("__div", (b / a):totable(), { { 10, 10 }, { 10, 10 } })
    T.eq("__pow", (a ^ 2):totable(), { { 1, 4 }, { 9, 16 } })
    T.eq("__unm", (-a):totable(), { { -1, -2 }, { -3, -4 } })
    T.eq("number + tensor", (1 + a):totable(), { { 2, 3 }, { 4, 5 } })
    T.eq("tensor - number", (a - 1):totable(), { { 0, 1 }, { 2, 3 } })
    T.eq("number - tensor", (10 - a):totable(), { { 9, 8 }, { 7, 6 } })
    T.eq("number / tensor", (12 / a):totable(), { { 12, 6 }, { 4, 3 } })
    T.eq("number * tensor", (2 * a):totable(), { { 2, 4 }, { 6, 8 } })
    T.eq("2 ^ tensor", (2 ^ a):totable(), { { 2, 4 }, { 8, 16 } })
    T.eq("broadcast row + column", (mha.tensor { 1, 2 } + mha.tensor { { 10 }, { 20 } }):totable(),
        { { 11, 12 }, { 21, 22 } })
    T.eq("__eq true for equal values", a == mha.tensor { { 1, 2 }, { 3, 4 } }, true)
    T.eq("__eq false for one differing value", a == mha.tensor { { 1, 2 }, { 3, 5 } }, false)
    T.eq("__eq of a view and a copy", a:T() == a:T():contiguous(), true)
    T.eq("tensor == number is false (Lua compares types first)", a == 1, false)
    T.eq("__len is the size of dim 1", #mha.zeros(5, 2), 5)
    T.eq("__index integer gives a row view", a[2]:totable(), { 3, 4 })
    T.eq("__index with an integral float t[2.0]", a[2.0]:totable(), { 3, 4 })
    T.raises("__index with a fraction", function() return a[1.5] end, "index: t[1.5]: an index must be an integer")
    T.raises("__newindex with a name", function() a.foo = 1 end, "only integer indices can be assigned")
    -- < and <= cannot give a bool tensor (Lua makes their answer a boolean): they point to lt/le/gt/ge
    local lt_msg = "compare tensors elementwise with a:lt(b), a:le(b), a:gt(b), a:ge(b); < and > cannot return a tensor in Lua"
    local le_msg = "compare tensors elementwise with a:lt(b), a:le(b), a:gt(b), a:ge(b); <= and >= cannot return a tensor in Lua"
    T.raises("__lt: a < b", function() return a < b end, lt_msg)
    T.raises("__lt: a > 0", function() return a > 0 end, lt_msg)
    T.raises("__lt: 0 < a", function() return 0 < a end, lt_msg)
    T.raises("__le: a <= b", function() return a <= b end, le_msg)
    T.raises("__le: a >= 1", function() return a >= 1 end, le_msg)
    T.eq("a:gt(2) is the elementwise form", a:gt(2):totable(), { { false, false }, { true, true } })
    local fields = getmetatable(a).__fields
    T.ok("__fields is a table, for completion", type(fields) == "table", type(fields))
    T.eq("a tensor has no plain fields, only methods", fields and #fields, 0)
    T.eq("__index method lookup", type(a.softmax), "function")
    T.eq("__index unknown name is nil", a.nonexistent, nil)
    local s = tostring(a)
    T.ok("__tostring shows the values", s:find("1", 1, true) and s:find("4", 1, true), s)
    T.ok("__tostring says float32 and the shape", s:find("float32", 1, true) and s:find("(2,2)", 1, true), s)
    T.ok("__tostring of a bool tensor says bool", tostring(mha.tensor { true }):find("bool", 1, true))
    -- __gc / __close: closing frees at once and leaves a tensor that refuses use
    collectgarbage()
    local live0 = mha.memory()
    do
        local big <close> = mha.zeros(128, 128)
        T.ok("a to-be-closed tensor is usable in scope", big:numel() == 16384)
    end
    T.ok("__close freed the (128,128) storage", mha.memory() <= live0)
    local t = mha.zeros(3)
    t:close()
    T.raises("a closed tensor refuses use", function() return t:sum() end, "closed")
    T.eq("a closed tensor prints as closed", tostring(t), "mha.Tensor (closed)")
    -- a view keeps its storage alive after the base is gone
    local base = mha.arange(4)
    local view = base:narrow(1, 2, 2)
    base:close()
    base = nil
    collectgarbage()
    T.eq("a view outlives its closed base", view:totable(), { 1, 2 })
    -- the collector must learn of tensor memory it cannot see: 40 temporaries of 16 MiB each
    -- would hold 640 MiB if only Lua's own (tiny) heap drove collection
    collectgarbage()
    local before = mha.memory()
    local peak = 0
    for _ = 1, 40 do
        local x = mha.zeros(2048, 2048)
        x = nil
        peak = math.max(peak, mha.memory() - before)
    end
    T.ok("a loop of 16 MiB temporaries stays under 160 MiB of tensors", peak < 160 * 2 ^ 20,
        string.format("peak %.0f MiB", peak / 2 ^ 20))
end)

T.done()
