-- tests/lua/test_threads.lua - mha.threads, mha.isa and mha.clock: the count reads and sets (returning the one
-- before), bad counts are refused naming the function, results are the very same bits on 1 and 2 threads.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local function nproc()
    local p = io.popen("nproc 2>/dev/null")
    local n = p and tonumber(p:read("l"))
    if p then p:close() end
    return n
end

T.test("threads", function()
    local env = tonumber(os.getenv("MHA_THREADS") or "")
    local want = env or nproc()
    local start = mha.threads()
    T.ok("threads() is every core by default (or MHA_THREADS)", want == nil or start == math.min(want, 64),
        string.format("threads() %s, nproc/MHA_THREADS %s", start, want))
    T.eq("threads(3) returns the count before", mha.threads(3), start)
    T.eq("threads() then reads 3", mha.threads(), 3)
    T.eq("threads(1.0) takes a whole float, returns 3", mha.threads(1.0), 3)
    T.raises("threads(0)", function() mha.threads(0) end, "threads: n must be a whole number from 1 to 64, got 0")
    T.raises("threads(65)", function() mha.threads(65) end, "threads: n must be a whole number from 1 to 64, got 65")
    T.raises("threads(1.5)", function() mha.threads(1.5) end, "threads: n must be a whole number from 1 to 64, got 1.5")
    T.raises("threads('2')", function() mha.threads("2") end, "threads: n must be a whole number from 1 to 64, got string")
    T.eq("a refused count leaves the setting", mha.threads(), 1)
    mha.threads(start)
end)

T.test("threads_identical", function()
    -- large enough to be split (over 64 MFLOP): 2·320·900·500 = 288 MFLOP
    mha.seed(7)
    local a, b = mha.randn(320, 500), mha.randn(500, 900)
    local m = mha.MultiheadAttention { embed_dim = 64, num_heads = 4 }
    local x = mha.randn(2, 600, 64)
    local before = mha.threads(1)
    local c1, o1, w1 = mha.matmul(a, b), m:forward(x, x, x)
    mha.threads(2)
    local c2 = mha.matmul(a, b)
    local o2, w2 = m:forward(x, x, x)
    mha.threads(before)
    T.ok("matmul (320,500)@(500,900): 2 threads give the bits of 1", mha.equal(c1, c2), "differs")
    T.ok("MultiheadAttention forward (2,600,64): 2 threads give the bits of 1", mha.equal(o1, o2) and mha.equal(w1, w2),
        "differs")
end)

T.test("clock", function()
    local t0 = mha.clock()
    local c = mha.matmul(mha.randn(200, 200), mha.randn(200, 200))
    local t1 = mha.clock()
    T.ok("clock() is seconds that only go forward", type(t0) == "number" and t1 >= t0 and t1 - t0 < 60 and c ~= nil,
        string.format("%s -> %s", t0, t1))
end)

T.test("isa", function()
    local start, runnable = mha.isa()
    T.eq("the list ends in portable, which every CPU runs", runnable[#runnable], "portable")
    T.eq("the default is the fastest (or MHA_ISA)", start, os.getenv("MHA_ISA") ~= nil and os.getenv("MHA_ISA") ~= ""
        and start or runnable[1])
    local x = mha.randn(67, 131)
    local want = x:matmul(x:transpose(1, 2))
    for _, isa in ipairs(runnable) do
        T.eq("isa('" .. isa .. "') returns the variant before", mha.isa(isa), start)
        T.eq("isa() then reads " .. isa, (mha.isa()), isa)
        T.close("a product on " .. isa .. " equals the first variant's within rounding", x:matmul(x:transpose(1, 2)), want, 1e-5, 1e-4)
        mha.isa(start)
    end
    T.raises("isa('sse9')", function() mha.isa("sse9") end,
        "isa: 'sse9' is not a kernel variant this CPU runs (it runs " .. table.concat(runnable, ", ") .. ")")
    T.raises("isa({})", function() mha.isa({}) end, "bad argument #1 to 'isa' (string expected, got table)")
    T.eq("a refused name leaves the variant", (mha.isa()), start)
end)

T.done()
