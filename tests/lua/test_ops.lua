-- tests/lua/test_ops.lua - the tensor functions through the Lua bindings, against NumPy answers made by
-- tests/fixtures/gen/gen_lua_fixtures.py: arithmetic metamethods, unary functions, comparisons, reductions with
-- Lua's 1-based dims and indices, softmax, matmul, cat/stack/split/chunk, where, masked_fill, layer_norm.
-- Tolerance: |got - want| <= 1e-6 + 1e-5·|want| unless a check states another.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local function F(name) return mha.load(T.path("tests/fixtures/lua/" .. name .. ".npy")) end

local x, y, z, p = F("x"), F("y"), F("z"), F("p")

T.test("arithmetic", function()
    T.close("x + y broadcasts (3,4,5) with (4,5)", x + y, F("x_add_y"))
    T.close("z - x broadcasts (3,1,5) with (3,4,5)", z - x, F("z_sub_x"))
    T.close("x * z", x * z, F("x_mul_z"))
    T.close("x / p", x / p, F("x_div_p"))
    T.close("p ^ y", p ^ y, F("p_pow_y"), 1e-5, 1e-5)
    T.close("x + 2.5", x + 2.5, F("x_add_2_5"))
    T.close("2 - x (number first)", 2 - x, F("two_sub_x"))
    T.close("3 * x (number first)", 3 * x, F("three_mul_x"))
    T.close("1 / p (number first)", 1 / p, F("one_div_p"))
    T.close("p ^ 2", p ^ 2, F("p_pow_2"))
    T.close("-x", -x, F("neg_x"))
    T.close("x:add(y) method", x:add(y), F("x_add_y"))
    T.close("mha.sub(z, x) function", mha.sub(z, x), F("z_sub_x"))
    T.close("mha.maximum(x, y)", mha.maximum(x, y), F("maximum_x_y"))
    T.close("mha.max(x, z) with a tensor is elementwise", mha.min(x, z), F("minimum_x_z"))
    T.close("table + tensor", { 1, 2, 3, 4, 5 } + y, y + mha.tensor { 1, 2, 3, 4, 5 })
    T.close("mha.tensor{{1,2},{3,4}} * 2", mha.tensor { { 1, 2 }, { 3, 4 } } * 2, { { 2, 4 }, { 6, 8 } }, 0, 0)
end)

T.test("unary", function()
    T.close("exp", mha.exp(x), F("exp_x"))
    T.close("x:exp() method", x:exp(), F("exp_x"))
    T.close("log", p:log(), F("log_p"))
    T.close("sqrt", mha.sqrt(p), F("sqrt_p"))
    T.close("tanh", x:tanh(), F("tanh_x"))
    T.close("relu", mha.relu(x), F("relu_x"))
    T.close("gelu (exact, erf)", x:gelu(), F("gelu_x"))
    T.close("sigmoid", mha.sigmoid(x), F("sigmoid_x"))
    T.close("abs", x:abs(), F("abs_x"))
    T.close("mha.exp(0) of a number is a scalar tensor", mha.exp(0), 1)
end)

T.test("comparisons", function()
    local gt = x:gt(y)
    T.eq("gt gives a bool tensor", gt:dtype(), "bool")
    T.ok("x:gt(y) == numpy's x > y", gt == F("x_gt_y"), "elementwise results differ")
    T.ok("x:le(0) == numpy's x <= 0", x:le(0) == F("x_le_0"))
    T.ok("0 >= x via mha.ge(0, x) swaps the comparison", mha.ge(0, x) == F("x_le_0"))
    T.ok("x:eq(x) all true", x:eq(x) == F("x_eq_x"))
    T.ok("x == x:clone() (torch.equal)", x == x:clone())
    T.ok("x ~= x + 1", x ~= x + 1)
    T.ok("same values, other shape: not ==", not (mha.zeros(2, 3) == mha.zeros(3, 2)))
    T.ok("same values, other dtype: not ==", not (mha.zeros(2) == mha.zeros(2):bool()))
    T.ok("mha.equal", mha.equal(x, x:contiguous()))
    local nan = mha.tensor { 0 / 0 }
    T.ok("NaN == NaN is false, as torch.equal", not (nan == nan:clone()))
end)

T.test("reductions", function()
    T.close("sum()", x:sum(), F("sum_all"), 1e-5, 1e-5)
    T.close("sum(1)", x:sum(1), F("sum_d1"))
    T.close("sum(2, true) keepdim", mha.sum(x, 2, true), F("sum_d2_keep"))
    T.shape("sum(2, true) shape", mha.sum(x, 2, true), { 3, 1, 5 })
    T.close("mean(-1)", x:mean(-1), F("mean_dm1"))
    T.close("var(2) (Bessel)", x:var(2), F("var_d2"), 1e-5, 1e-5)
    T.close("var(3, false, 0) (population)", x:var(3, false, 0), F("var_d3_c0"), 1e-5, 1e-5)
    local values, indices = x:max(3)
    T.close("max(3) values", values, F("max_d3_values"))
    T.close("max(3) indices are 1-based", indices, F("max_d3_indices"), 0, 0)
    values, indices = mha.min(x, 1, true)
    T.close("min(1, true) values", values, F("min_d1_values_keep"))
    T.close("min(1, true) indices", indices, F("min_d1_indices_keep"), 0, 0)
    T.close("argmax(-2) 1-based", x:argmax(-2), F("argmax_dm2"), 0, 0)
    T.close("argmax() over everything, 1-based flat", x:argmax(), F("argmax_all"), 0, 0)
    T.close("max() over everything", x:max(), F("max_all"), 0, 0)
    -- an index max gives is one get() reads back
    local row = x:select(1, 2):select(1, 3)
    local _, i = row:max(1)
    T.eq("row:get(argmax) is the max", row:get(i:item()), row:max():item())
    T.close("bool sum counts", mha.tensor { true, false, true }:sum(), 2, 0, 0)
end)

T.test("softmax", function()
    T.close("softmax(x, 1)", mha.softmax(x, 1), F("softmax_1"))
    T.close("softmax(x, 2)", x:softmax(2), F("softmax_2"))
    T.close("softmax(x, -1)", x:softmax(-1), F("softmax_m1"))
    T.close("softmax(x, 3) == softmax(x, -1)", x:softmax(3), x:softmax(-1), 0, 0)
    T.close("rows sum to 1", x:softmax(-1):sum(-1), mha.ones(3, 4))
end)

T.test("matmul", function()
    local a, b, c, d, v = F("mm_a"), F("mm_b"), F("mm_c"), F("mm_d"), F("mm_v")
    T.close("(2,3,4) @ (4,5)", mha.matmul(a, b), F("mm_a_b"))
    T.close("(2,1,3,4) @ (3,4,2) broadcasts the batch", c:matmul(d), F("mm_c_d"))
    T.close("(2,3,4) @ (4) matrix-vector", a:matmul(v), F("mm_a_v"))
    T.close("transposed view @ a", a:transpose(2, 3):matmul(a), F("mm_aT_a"))
end)

T.test("joining", function()
    local w = F("w")
    T.close("cat({x, w}, 2)", mha.cat({ x, w }, 2), F("cat_x_w_d2"), 0, 0)
    T.close("stack({x, x}) default dim 1", mha.stack { x, x }, F("stack_x_x_d1"), 0, 0)
    T.close("stack({y, y}, -1) a new last dim", mha.stack({ y, y }, -1), F("stack_y_y_dm1"), 0, 0)
    local pieces = { x:split(2, 2) }
    T.eq("split(2, 2) gives 2 pieces", #pieces, 2)
    for i = 1, 2 do T.close("split piece " .. i, pieces[i], F("split_x_2_d2_" .. i), 0, 0) end
    pieces = { mha.chunk(x, 3, -1) }
    T.eq("chunk(3, -1) of size 5 gives 3 pieces", #pieces, 3)
    for i = 1, 3 do T.close("chunk piece " .. i, pieces[i], F("chunk_x_3_dm1_" .. i), 0, 0) end
    T.ok("split pieces are views", pieces[1]:shares_storage(x))
end)

T.test("where and masked_fill", function()
    local mask = F("mask")
    T.eq("mask loads as bool", mask:dtype(), "bool")
    T.close("where(mask, x, y)", mha.where(mask, x, y), F("where_mask_x_y"), 0, 0)
    T.close("where(mask, x, 0) with a number", mha.where(mask, x, 0), F("where_mask_x_0"), 0, 0)
    T.close("masked_fill(mask, -7)", x:masked_fill(mask, -7), F("masked_fill_x_mask_m7"), 0, 0)
    local filled = x:masked_fill(mask, -math.huge):softmax(-1)
    T.ok("masked_fill(-inf) then softmax zeroes the masked weights",
        filled:masked_fill(mask:logical_not(), 0):sum():item() == 0)
end)

T.test("views against numpy", function()
    T.close("permute(3, 1, 2)", x:permute(3, 1, 2), F("permute_x_3_1_2"), 0, 0)
    T.close("permute{3, 1, 2} (a table)", x:permute { 3, 1, 2 }, F("permute_x_3_1_2"), 0, 0)
    T.close("narrow(3, 2, 3)", x:narrow(3, 2, 3), F("narrow_x_d3_2_3"), 0, 0)
    T.close("select(2, -1)", x:select(2, -1), F("select_x_d2_m1"), 0, 0)
    T.close("transpose(1, 3):reshape(5, 12)", x:transpose(1, 3):reshape(5, 12), F("transpose_x_1_3_reshape"), 0, 0)
    T.close("transpose(-1, 1):contiguous():view(5, -1)", x:transpose(-1, 1):contiguous():view(5, -1),
        F("transpose_x_1_3_reshape"), 0, 0)
end)

T.test("layer_norm", function()
    local wt, b = F("ln_weight"), F("ln_bias")
    T.close("layer_norm(x, 5, w, b): normalized_shape 5, as PyTorch", mha.layer_norm(x, 5, wt, b), F("layer_norm_x"), 1e-5, 1e-5)
    T.close("layer_norm(x, {5}, w, b, 1e-5)", x:layer_norm({ 5 }, wt, b, 1e-5), F("layer_norm_x"), 1e-5, 1e-5)
end)

T.test("constructors", function()
    T.close("zeros(2, 3)", mha.zeros(2, 3), { { 0, 0, 0 }, { 0, 0, 0 } }, 0, 0)
    T.close("zeros{2, 3}", mha.zeros { 2, 3 }, { { 0, 0, 0 }, { 0, 0, 0 } }, 0, 0)
    T.close("ones(2)", mha.ones(2), { 1, 1 }, 0, 0)
    T.close("full(2, 2, 7.5)", mha.full(2, 2, 7.5), { { 7.5, 7.5 }, { 7.5, 7.5 } }, 0, 0)
    T.close("full({3}, -1)", mha.full({ 3 }, -1), { -1, -1, -1 }, 0, 0)
    T.close("eye(2, 3)", mha.eye(2, 3), { { 1, 0, 0 }, { 0, 1, 0 } }, 0, 0)
    T.close("eye(2)", mha.eye(2), { { 1, 0 }, { 0, 1 } }, 0, 0)
    T.close("arange(4)", mha.arange(4), { 0, 1, 2, 3 }, 0, 0)
    T.close("arange(1, 2, 0.25)", mha.arange(1, 2, 0.25), { 1, 1.25, 1.5, 1.75 }, 0, 0)
    T.close("arange(5, 0, -2)", mha.arange(5, 0, -2), { 5, 3, 1 }, 0, 0)
    T.shape("tensor(3.5) is a scalar", mha.tensor(3.5), {})
    T.eq("tensor(3.5):item()", mha.tensor(3.5):item(), 3.5)
    T.eq("tensor{true, false} is bool", mha.tensor { true, false }:dtype(), "bool")
    T.eq("tensor({1, 0}, 'bool')", mha.tensor({ 1, 0 }, "bool"):totable(), { true, false })
    T.shape("tensor{} is (0)", mha.tensor {}, { 0 })
    T.shape("tensor{{}, {}} is (2,0)", mha.tensor { {}, {} }, { 2, 0 })
    local t = mha.tensor { { 1, 2 }, { 3, 4 } }
    local copy = mha.tensor(t)
    copy:set(1, 1, 9)
    T.eq("tensor(t) copies", t:get(1, 1), 1.0)
    mha.seed(7)
    local r1 = mha.rand(2, 3)
    mha.seed(7)
    T.ok("seed makes rand reproducible", mha.rand(2, 3) == r1)
    T.ok("rand in [0,1)", r1:ge(0):logical_and(r1:lt(1)):float():sum():item() == 6)
    mha.seed(7)
    local n1 = mha.randn { 1000 }
    T.ok("randn mean near 0 (|mean| < 0.15)", math.abs(n1:mean():item()) < 0.15)
    T.ok("randn var near 1 (0.8..1.2)", math.abs(n1:var():item() - 1) < 0.2)
    local u = mha.zeros(50, 40):uniform_(-2, 3)
    T.ok("uniform_(-2, 3) stays in range", u:ge(-2):logical_and(u:lt(3)):float():sum():item() == 2000)
    local xa = mha.xavier_uniform_(mha.zeros(30, 20))
    local bound = math.sqrt(6 / 50)
    T.ok("xavier_uniform_ within sqrt(6/(fan_in+fan_out))", xa:abs():max():item() <= bound)
    T.ok("xavier_uniform_ fills (max near the bound)", xa:abs():max():item() > 0.9 * bound)
end)

T.test("positional encoding and masks", function()
    local pe = mha.positional_encoding(6, 4)
    T.shape("positional_encoding(6, 4)", pe, { 6, 4 })
    local want = {}
    for pos = 0, 5 do
        local row = {}
        for i = 0, 1 do
            local angle = pos / 10000 ^ (2 * i / 4)
            row[2 * i + 1], row[2 * i + 2] = math.sin(angle), math.cos(angle)
        end
        want[pos + 1] = row
    end
    T.close("PE[p,2i] = sin, PE[p,2i+1] = cos", pe, want)
    T.eq("causal_mask(3)", mha.causal_mask(3):totable(),
        { { false, true, true }, { false, false, true }, { false, false, false } })
    T.eq("causal_mask(2, 3)", mha.causal_mask(2, 3):totable(), { { false, true, true }, { false, false, true } })
end)

T.test("memory accounting", function()
    collectgarbage()
    local live0 = mha.memory()
    local big = mha.zeros(256, 256)
    local live1, peak1 = mha.memory()
    T.ok("a (256,256) tensor adds >= 256 KiB of live bytes", live1 - live0 >= 256 * 256 * 4)
    T.ok("peak >= live", peak1 >= live1)
    big:close()
    local live2 = mha.memory()
    T.ok("close() frees it at once", live2 <= live1 - 256 * 256 * 4)
end)

-- torch.softmax(torch.tensor(3.), 0) and (..., -1) are tensor(1.): a 0-d tensor counts as one of shape
-- (1), whose only dim is 1 or -1 here; NaN and infinities give NaN, as in torch 1.13
T.test("softmax of a 0-d tensor", function()
    T.eq("dim 1", mha.softmax(mha.tensor(3), 1):item(), 1.0)
    T.eq("dim -1", mha.softmax(mha.tensor(-7.5), -1):item(), 1.0)
    T.eq("a 0-d result", mha.softmax(mha.tensor(3), 1):shape(), {})
    for _, v in ipairs({ 0 / 0, math.huge, -math.huge }) do
        local y = mha.softmax(mha.tensor(v), 1):item()
        T.ok("softmax of " .. tostring(v) .. " is NaN", y ~= y, tostring(y))
    end
    T.raises("dim 2 out of range", function() mha.softmax(mha.tensor(3), 2) end,
        "softmax: dim 2 out of range for a tensor of shape () (expected 1..1 or -1..-1)")
end)

-- torch 1.13 wraps a 0-d tensor's dim as if it had one: for s = torch.tensor(3.5), s.sum(0), s.sum(-1),
-- s.mean(0), s.max(0).values and s.min(0).values are tensor(3.5000) (keepdim=True too), s.max(0).indices,
-- s.argmax(0) and s.argmin(0) are tensor(0), s.var(0) is tensor(nan), s.var(0, unbiased=False) tensor(0.),
-- all 0-d; s.sum(1) raises "Dimension out of range (expected to be in range of [-1, 0], but got 1)".
-- Here the dims are 1 and -1 and the indices 1-based. Gradients (torch, x = tensor(2.), (f(x, 0)*3).backward()):
-- 3 for sum, mean, max and min, 0 for var(unbiased=False).
T.test("reductions of a 0-d tensor along dim 1 or -1", function()
    local s = mha.tensor(3.5)
    for _, dim in ipairs({ 1, -1 }) do
        for _, keepdim in ipairs({ false, true }) do
            local at = " (dim " .. dim .. (keepdim and ", keepdim)" or ")")
            for _, f in ipairs({ "sum", "mean", "max", "min" }) do
                local r = s[f](s, dim, keepdim)
                T.eq(f .. at, { r:item(), r:shape() }, { 3.5, {} })
            end
            for _, f in ipairs({ "argmax", "argmin" }) do
                local r = s[f](s, dim, keepdim)
                T.eq(f .. " is the 1st element" .. at, { r:item(), r:shape() }, { 1, {} })
            end
            local values, indices = s:max(dim, keepdim)
            T.eq("max's values and indices" .. at, { values:item(), indices:item(), indices:shape() }, { 3.5, 1, {} })
            local v = s:var(dim, keepdim)
            T.ok("var with correction 1 is NaN" .. at, v:item() ~= v:item(), tostring(v:item()))
            T.eq("var with correction 0" .. at, { s:var(dim, keepdim, 0):item(), v:shape() }, { 0, {} })
        end
    end
    for _, f in ipairs({ "sum", "mean", "max", "min" }) do
        local x = mha.tensor(2.0):requires_grad(true)
        local y = x[f](x, 1)
        ;(y * 3):backward()
        T.eq(f .. "(x, 1) passes the gradient back whole", x:grad():item(), 3)
    end
    local x = mha.tensor(2.0):requires_grad(true)
    ;(x:var(-1, false, 0) * 3):backward()
    T.eq("var(x, -1, false, 0)'s gradient is 0", x:grad():item(), 0)
    T.raises("dim 2 out of range", function() mha.sum(mha.tensor(3), 2) end,
        "sum: dim 2 out of range for a tensor of shape () (expected 1..1 or -1..-1)")
    T.raises("dim -2 out of range", function() mha.tensor(3):argmax(-2) end,
        "argmax: dim -2 out of range for a tensor of shape () (expected 1..1 or -1..-1)")
    T.raises("max with dim 0", function() mha.tensor(3):max(0) end,
        "max: dim 0 out of range for a tensor of shape () (expected 1..1 or -1..-1)")
end)

T.done()
