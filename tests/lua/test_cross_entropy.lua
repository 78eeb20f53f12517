-- tests/lua/test_cross_entropy.lua - mha.cross_entropy's torch options (ignore_index, reduction, label_smoothing):
-- every case of tests/fixtures/cross_entropy (torch 1.13, gen_cross_entropy_fixtures.py), values and gradients
-- through autograd and through cross_entropy_backward, at |got - want| <= 1e-5 + 1e-4·|want|; the refusals.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local RTOL, ATOL = 1e-4, 1e-5

-- Each case line as a table: {name =, shape =, ignore_index =, reduction =, label_smoothing =}
local function cases()
    local list = {}
    for line in io.lines(T.path("tests/fixtures/cross_entropy/cases.txt")) do
        if not line:match("^#") and line:match("%S") then
            local case = {}
            for key, value in line:gmatch("(%S-)=(%S+)") do case[key] = value end
            list[#list + 1] = case
        end
    end
    return list
end

-- The options as the user writes them (ignore_index=none: not given, torch's default -100).
local function options_of(case)
    local opts = {reduction = case.reduction, label_smoothing = tonumber(case.label_smoothing)}
    if case.ignore_index ~= "none" then opts.ignore_index = math.tointeger(tonumber(case.ignore_index)) end
    return opts
end

T.test("cross_entropy equals torch 1.13 for every option (tests/fixtures/cross_entropy)", function()
    local list = cases()
    T.ok("the fixtures hold 46 cases", #list == 46, #list .. " cases")
    for _, case in ipairs(list) do
        local function F(file) return mha.load(T.path("tests/fixtures/cross_entropy/" .. case.name .. "/" .. file .. ".npy")) end
        local logits, targets, gout = F("logits"), F("targets"), F("gout")
        local opts = options_of(case)
        logits:requires_grad(true)
        local out = mha.cross_entropy(logits, targets, opts)
        T.close(case.name .. ": loss", out, F("out"), RTOL, ATOL)
        T.shape(case.name .. ": loss shape", out, F("out"):shape())
        ;(out * gout):sum():backward()
        T.close(case.name .. ": gradient (autograd)", logits:grad(), F("grad"), RTOL, ATOL)
        T.close(case.name .. ": gradient (cross_entropy_backward)",
                mha.cross_entropy_backward(logits:detach(), targets, gout, opts), F("grad"), RTOL, ATOL)
    end
end)

T.test("the issue's reproduction: padding targets 0 skipped with ignore_index = 0", function()
    local logits = mha.tensor{{2, 0, -1}, {0, 3, 0}, {1, 1, 1}}
    -- -log softmax of rows 1 and 2 at classes 1 and 2, averaged over the 2 counted rows
    local function nll(row, t)
        local s = 0
        for _, v in ipairs(row) do s = s + math.exp(v) end
        return math.log(s) - row[t]
    end
    local want = (nll({2, 0, -1}, 1) + nll({0, 3, 0}, 2)) / 2
    T.close("mean over the rows not ignored", mha.cross_entropy(logits, {1, 2, 0}, {ignore_index = 0}), want, 1e-6, 1e-7)
    T.close("sum", mha.cross_entropy(logits, {1, 2, 0}, {ignore_index = 0, reduction = "sum"}), want * 2, 1e-6, 1e-7)
    T.close("none: 0 for the ignored row",
            mha.cross_entropy(logits, {1, 2, 0}, {ignore_index = 0, reduction = "none"}),
            {nll({2, 0, -1}, 1), nll({0, 3, 0}, 2), 0}, 1e-6, 1e-7)
    T.ok("all ignored, mean: nan as torch", mha.cross_entropy(logits, {0, 0, 0}, {ignore_index = 0}):item() ~= 
         mha.cross_entropy(logits, {0, 0, 0}, {ignore_index = 0}):item())
    T.close("torch's default ignore_index -100", mha.cross_entropy(logits, {1, 2, -100}), want, 1e-6, 1e-7)
    T.raises("0 without ignore_index is still refused", function() mha.cross_entropy(logits, {1, 2, 0}) end,
             "cross_entropy: targets (3): entry 3 is 0; expected a whole number from 1 to 3 (1-based)")
end)

T.test("cross_entropy's options refused with the function, the option and the value", function()
    local logits = mha.randn(3, 4)
    T.raises("reduction", function() mha.cross_entropy(logits, {1, 2, 3}, {reduction = "avg"}) end,
             'cross_entropy: option reduction must be "mean", "sum" or "none", got avg')
    T.raises("label_smoothing", function() mha.cross_entropy(logits, {1, 2, 3}, {label_smoothing = 1.5}) end,
             "cross_entropy: option label_smoothing must be a number from 0 to 1, got 1.5")
    T.raises("ignore_index", function() mha.cross_entropy(logits, {1, 2, 3}, {ignore_index = 0.5}) end,
             "cross_entropy: option ignore_index must be a whole number (a target value to skip), got 0.5")
    T.raises("a misspelt option", function() mha.cross_entropy(logits, {1, 2, 3}, {ignore = 0}) end,
             "cross_entropy: unknown option 'ignore'")
    T.raises("dloss of the wrong shape for 'none'",
             function() mha.cross_entropy_backward(logits, {1, 2, 3}, mha.ones(2), {reduction = "none"}) end,
             "cross_entropy_backward: dloss (2) must be (3) (the loss's shape with reduction 'none')")
    T.raises("dloss not a scalar for 'mean'", function() mha.cross_entropy_backward(logits, {1, 2, 3}, mha.ones(3)) end,
             "cross_entropy_backward: dloss (3) must be () (the loss's shape with reduction 'mean' or 'sum')")
end)

T.done()
