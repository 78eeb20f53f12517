-- tests/lua/test_autograd.lua - gradients through the Lua API: every case of tests/fixtures/grad (torch 1.13 autograd,
-- tests/fixtures/gen/gen_grad_fixtures.py) compared at rtol 1e-4, atol 1e-5; finite differences on small shapes;
-- the plain backward functions against autograd; the fully masked row's NaN policy; the fused sdpa backward
-- against the plain one; in-place refusals; no_grad; graph freeing; MultiheadAttention's parameters as leaves.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local RTOL, ATOL = 1e-4, 1e-5

local function exists(path)
    local f = io.open(path, "rb")
    if f then f:close() end
    return f ~= nil
end

-- ---- the Lua side of every fixture case: inputs x (1-based, as in1.npy ...) -> outputs ----

local function sdpa(x, opts)
    opts = opts or {}
    opts.attn_mask = x[4]
    return mha.sdpa(x[1], x[2], x[3], opts)
end

local OPS = {
    add_bcast = function(x) return x[1] + x[2] end,
    sub_bcast = function(x) return x[1] - x[2] end,
    mul_bcast = function(x) return x[1] * x[2] end,
    div_bcast = function(x) return x[1] / x[2] end,
    pow_tensor = function(x) return x[1] ^ x[2] end,
    scalar_mix = function(x) local a = x[1]; return ((2 - a) * 3 / (a * a + 1) + a / 2 - 1) ^ 2 end,
    scalar_rdiv_rpow = function(x) local a = x[1]; return 1 / a + 2 ^ a + a ^ 3 end,
    neg = function(x) return -x[1] end,
    unary_exp = function(x) return x[1]:exp() end,
    unary_tanh = function(x) return x[1]:tanh() end,
    unary_relu = function(x) return x[1]:relu() end,
    unary_gelu = function(x) return x[1]:gelu() end,
    unary_sigmoid = function(x) return x[1]:sigmoid() end,
    unary_abs = function(x) return x[1]:abs() end,
    unary_log = function(x) return x[1]:log() end,
    unary_sqrt = function(x) return x[1]:sqrt() end,
    maximum_ties = function(x) return mha.maximum(x[1], x[2]) end,
    minimum_ties = function(x) return mha.minimum(x[1], x[2]) end,
    where_bcast = function(x) return mha.where(x[1], x[2], x[3]) end,
    masked_fill = function(x) return x[1]:masked_fill(x[2], -2.5) end,
    sum_all = function(x) return x[1]:sum() end,
    sum_dim = function(x) return x[1]:sum(2) end,
    sum_keepdim = function(x) return x[1]:sum(3, true) end,
    mean_all = function(x) return x[1]:mean() end,
    mean_dim = function(x) return x[1]:mean(1) end,
    max_all_tie = function(x) return x[1]:max() end,
    max_dim = function(x) return (x[1]:max(2)) end,
    min_dim_keepdim = function(x) return (x[1]:min(1, true)) end,
    var_all = function(x) return x[1]:var() end,
    var_dim = function(x) return x[1]:var(2) end,
    var_dim_c0 = function(x) return x[1]:var(2, true, 0) end,
    view = function(x) return x[1]:view(3, 4) * 1.5 end,
    reshape_copy = function(x) return x[1]:T():reshape(12) end,
    transpose = function(x) return x[1]:transpose(1, 3) end,
    T = function(x) return x[1]:T():matmul(x[1]) end,
    permute = function(x) return x[1]:permute(3, 1, 2) end,
    narrow = function(x) return x[1]:narrow(2, 2, 2) end,
    select = function(x) return x[1]:select(2, 3) end,
    index = function(x) return x[1][2] end,
    unsqueeze = function(x) return x[1]:unsqueeze(2) end,
    squeeze = function(x) return x[1]:squeeze() end,
    expand = function(x) return x[1]:expand(2, 4, 3) end,
    contiguous = function(x) return x[1]:T():contiguous() end,
    split = function(x) return x[1]:split(2, 2) end,
    chunk = function(x) return x[1]:chunk(2, 1) end,
    cat = function(x) return mha.cat({x[1], x[2], x[3]}, 2) end,
    stack = function(x) return mha.stack({x[1], x[2]}, 2) end,
    view_chain = function(x) return x[1]:view(2, 3, 2):transpose(2, 3):narrow(3, 2, 2)[2] * x[1]:sum() end,
    softmax_last = function(x) return x[1]:softmax(-1) end,
    softmax_mid = function(x) return x[1]:softmax(2) end,
    log_softmax_last = function(x) return mha.log_softmax(x[1], -1) end,
    log_softmax_first = function(x) return x[1]:log_softmax(1) end,
    cross_entropy_2d = function(x) return mha.cross_entropy(x[1], x[2]) end,
    cross_entropy_3d = function(x) return mha.cross_entropy(x[1], x[2]) end,
    cross_entropy_1d = function(x) return mha.cross_entropy(x[1], x[2]) end,
    linear_bias = function(x) return mha.linear(x[1], x[2], x[3]) end,
    linear_nobias = function(x) return mha.linear(x[1], x[2]) end,
    layer_norm_affine = function(x) return mha.layer_norm(x[1], 6, x[2], x[3]) end,
    layer_norm_2d = function(x) return mha.layer_norm(x[1], {3, 4}) end,
    embedding = function(x) return mha.embedding(x[1], x[2]) end,
}

-- sdpa cases: the options by case; "_fused" cases ask for no weights (the fused forward and backward)
local SDPA = {nomask = {}, bool = {}, float = {}, causal = {is_causal = true}, scale = {scale = 0.3},
              bool_causal = {is_causal = true}, bcast = {}, fully_masked = {}, fully_masked_float = {},
              tiles_causal = {is_causal = true}, float_maskgrad = {}, bcast_maskgrad = {is_causal = true}}
for variant, opts in pairs(SDPA) do
    OPS["sdpa_" .. variant] = function(x) return sdpa(x, {is_causal = opts.is_causal, scale = opts.scale}) end
    OPS["sdpa_" .. variant .. "_fused"] = function(x)
        return sdpa(x, {is_causal = opts.is_causal, scale = opts.scale, need_weights = false})
    end
end

for _, shape in ipairs{"mm", "bmm", "bcast", "vec_mat", "mat_vec", "vec_vec", "batch_vec", "vec_batch"} do
    OPS["matmul_" .. shape] = function(x) return x[1]:matmul(x[2]) end
end

-- MultiheadAttention cases: module options, forward options, which inputs are q/k/v and masks
local MHA = {
    unbatched_self_noweights = {self = true, fwd = {need_weights = false}},
    self_weights = {self = true},
    cross_weights_per_head = {fwd = {average_attn_weights = false}},
    kpm_bool = {kpm = true},
    kpm_float = {kpm = true, fwd = {need_weights = false}},
    attn_bool2d = {am = true, fwd = {need_weights = false}},
    attn_float3d = {am = true},
    both_masks = {am = true, kpm = true, fwd = {need_weights = false}},
    causal_self = {self = true, fwd = {is_causal = true, need_weights = false}},
    kdim_vdim = {mod = {kdim = 3, vdim = 5}},
    nobias = {mod = {bias = false}, fwd = {need_weights = false}},
    bias_kv = {mod = {add_bias_kv = true}},
    zero_attn = {mod = {add_zero_attn = true}, fwd = {need_weights = false}},
    bias_kv_zero_attn_kpm = {mod = {add_bias_kv = true, add_zero_attn = true}, kpm = true, fwd = {need_weights = false}},
    bias_kv_causal = {mod = {add_bias_kv = true}, self = true, fwd = {is_causal = true}},
    unbatched_cross_kpm = {kpm = true},
    kpm_fully_masked = {kpm = true, fwd = {need_weights = false}},
    unbatched_attn_float3d = {am = true, fwd = {average_attn_weights = false}},
    attn_float2d_maskgrad = {am = true, fwd = {need_weights = false}},
    attn_float3d_maskgrad_kpm = {am = true, kpm = true},
    attn_float2d_maskgrad_appended = {mod = {add_bias_kv = true, add_zero_attn = true}, am = true,
                                      fwd = {need_weights = false}},
}

-- The module of a case (made once, its parameters from the fixture; m when given), forward on the inputs x.
local function mha_case(spec, x, F, m)
    if not m then
        local opts = {embed_dim = 8, num_heads = 2}
        for k, v in pairs(spec.mod or {}) do opts[k] = v end
        m = mha.MultiheadAttention(opts)
        for _, name in ipairs(m:parameter_names()) do m[name] = F("p_" .. name) end
    end
    local fwd = {}
    for k, v in pairs(spec.fwd or {}) do fwd[k] = v end
    local i = spec.self and 2 or 4
    if spec.am then fwd.attn_mask = x[i]; i = i + 1 end
    if spec.kpm then fwd.key_padding_mask = x[i] end
    local q = x[1]
    local k, v = q, q
    if not spec.self then k, v = x[2], x[3] end
    local out, w = m:forward(q, k, v, fwd)
    return m, out, w
end

local function cases()
    local names = {}
    for line in io.lines(T.path("tests/fixtures/grad/cases.txt")) do
        if not line:match("^#") and line:match("%S") then names[#names + 1] = line end
    end
    return names
end

-- One fixture case set up: its inputs (those with a reference gradient require grad), and forward(), which runs
-- the op and returns its outputs and the module (MultiheadAttention cases).
local function setup(name)
    local base = "tests/fixtures/grad/" .. name .. "/"
    local function F(file)
        local path = T.path(base .. file .. ".npy")
        return exists(path) and mha.load(path) or nil
    end
    local x, wants = {}, {}
    for i = 1, 8 do
        local t = F("in" .. i)
        if not t then break end
        x[i] = t
        if F("grad" .. i) then t:requires_grad(true); wants[#wants + 1] = i end
    end
    local spec = MHA[name:match("^mha_(.*)") or ""]
    local m
    local function forward()
        if spec then
            local mod, out, w = mha_case(spec, x, F, m)
            m = mod
            return {out, w}
        end
        local outs = table.pack(OPS[name](x))
        outs.n = nil
        return outs
    end
    local gouts = {}
    for i = 1, 4 do gouts[i] = F("gout" .. i) end
    -- Σ_i sum(out_i · gout_i): the scalar whose gradient torch's fixtures hold
    local function loss_of(outs)
        local loss
        for i = 1, #outs do
            if gouts[i] then
                local term = (outs[i] * gouts[i]):sum()
                loss = loss and loss + term or term
            end
        end
        return loss
    end
    return {x = x, wants = wants, F = F, forward = forward, loss_of = loss_of, known = spec or OPS[name],
            module = function() return m end}
end

T.test("gradients equal torch 1.13 autograd (tests/fixtures/grad)", function()
    local names = cases()
    T.ok("grad/cases.txt lists the cases", #names >= 80, #names .. " cases")
    for _, name in ipairs(names) do
        local c = setup(name)
        if not c.known then
            T.ok(name .. " has a Lua case", false, "no function for fixture case " .. name)
        else
            local outs = c.forward()
            for i = 1, #outs do
                local want = c.F("out" .. i)
                if want then T.close(name .. " out" .. i, outs[i], want, RTOL, ATOL) end
            end
            c.loss_of(outs):backward()
            for _, i in ipairs(c.wants) do
                T.close(name .. " grad in" .. i, c.x[i]:grad(), c.F("grad" .. i), RTOL, ATOL)
            end
            local m = c.module()
            if m then
                for _, pname in ipairs(m:parameter_names()) do
                    T.close(name .. " grad " .. pname, m[pname]:grad(), c.F("pgrad_" .. pname), RTOL, ATOL)
                end
            end
        end
    end
end)

-- retain_graph (torch's): h = tanh(x·w) feeds two losses; l1:backward{retain_graph = true},
-- l2:backward(nil, {retain_graph = true}), l1:backward() accumulate torch's three gradients
-- (tests/fixtures/grad_retain, from gen_grad_fixtures.py); a fourth backward is refused as torch refuses it.
T.test("backward{retain_graph = true} keeps the graph for another backward (torch 1.13 values)", function()
    local function F(name) return mha.load(T.path("tests/fixtures/grad_retain/" .. name .. ".npy")) end
    local x, w = F("x"):requires_grad(true), F("w"):requires_grad(true)
    local h = x:matmul(w):tanh()
    local l1, l2 = (h * h):sum(), (h * 3):mean()
    l1:backward{retain_graph = true}
    T.close("x:grad() after the first backward", x:grad(), F("x_grad1"), RTOL, ATOL)
    l2:backward(nil, {retain_graph = true})
    l1:backward()
    T.close("x:grad() after three backwards through one graph", x:grad(), F("x_grad3"), RTOL, ATOL)
    T.close("w:grad() after three backwards through one graph", w:grad(), F("w_grad3"), RTOL, ATOL)
    T.raises("a backward after the last one freed the graph", function() l1:backward() end,
             {"already used by an earlier backward and freed", "retain_graph"})
    -- the options table may carry the gradient: y:backward{gradient = g, retain_graph = true}
    local y = x * 2
    x:zero_grad()
    y:backward{gradient = mha.ones(3, 4), retain_graph = true}
    y:backward(mha.ones(3, 4))
    T.close("y:backward{gradient = g, retain_graph = true} then y:backward(g)", x:grad(), mha.full({3, 4}, 4))
end)

-- Finite differences: d loss / d x_e ≈ (loss(x_e + eps) - loss(x_e - eps)) / (2 eps), in float32 as the ops run.
-- eps = 1e-2: the truncation error is eps²/6·|f⁽³⁾| ≈ 2e-5 for these O(1) inputs, the rounding error about
-- |loss|·6e-8/(2 eps) ≈ 3e-5 for |loss| ≈ 10; a smaller eps drowns in rounding, a larger one in curvature. So
-- |fd - autograd| <= 2e-3 + 2e-2·|autograd| holds for a correct gradient and fails for a wrong one (a factor, a
-- sign, a missing term are all far larger). Up to 6 elements of every input and parameter, spread over it.
-- Skipped: the tie cases (a kink exactly at the input: the fixtures hold torch's choice) and the fully masked
-- rows (NaN). relu and abs perturb only elements farther than 0.05 from their kink at 0.
local FD_EPS, FD_ATOL, FD_RTOL = 1e-2, 2e-3, 2e-2
local FD_SKIP = {maximum_ties = true, minimum_ties = true, max_all_tie = true}

local function fd_check(name, c, t, label, kink_at_zero)
    local g = t:grad()
    local flat = t:detach():view(-1)
    local n = flat:numel()
    local step = math.max(1, n // 6)
    local worst
    for e = 1, n, step do
        local x0 = flat:get(e)
        if not (kink_at_zero and math.abs(x0) < 0.05) then
            local lp, lm = mha.no_grad(function()
                flat:set(e, x0 + FD_EPS)
                local up = c.loss_of(c.forward()):item()
                flat:set(e, x0 - FD_EPS)
                local down = c.loss_of(c.forward()):item()
                flat:set(e, x0)
                return up, down
            end)
            local fd, ag = (lp - lm) / (2 * FD_EPS), g:view(-1):get(e)
            if not (math.abs(fd - ag) <= FD_ATOL + FD_RTOL * math.abs(ag)) then
                worst = worst or string.format("element %d: finite difference %.6g, autograd %.6g", e, fd, ag)
            end
        end
    end
    T.ok(name .. " finite differences " .. label, worst == nil, worst)
end

T.test("gradients equal central finite differences (every fixture op)", function()
    for _, name in ipairs(cases()) do
        local c = setup(name)
        if c.known and not FD_SKIP[name] and not name:match("fully_masked") then
            c.loss_of(c.forward()):backward()
            local kink = name == "unary_relu" or name == "unary_abs"
            for _, i in ipairs(c.wants) do fd_check(name, c, c.x[i], "in" .. i, kink) end
            local m = c.module()
            if m then
                for _, pname in ipairs(m:parameter_names()) do fd_check(name, c, m[pname], pname, false) end
            end
        end
    end
end)

T.test("the user's model: requires_grad, grad accumulation, zero_grad, detach, no_grad", function()
    local x = mha.tensor{1, 2, 3}
    T.eq("a new tensor does not require grad", x:requires_grad(), false)
    T.eq("requires_grad(true) returns the tensor", x:requires_grad(true), x)
    T.eq("the flag reads back", x:requires_grad(), true)
    T.eq("no gradient before backward", x:grad(), nil)
    local y = (x * x):sum()
    T.eq("an op's result requires grad", y:requires_grad(), true)
    T.eq("its grad_fn names the op", y:grad_fn(), "sum")
    T.eq("x is a leaf, y is not", {x:is_leaf(), y:is_leaf()}, {true, false})
    y:backward()
    T.close("d sum(x²)/dx = 2x", x:grad(), {2, 4, 6})
    local y2 = (x * 3):sum()
    y2:backward()
    T.close("gradients accumulate over backward calls", x:grad(), {5, 7, 9})
    x:zero_grad()
    T.eq("zero_grad forgets the gradient", x:grad(), nil)
    x:set_grad(mha.ones(3))
    T.close("set_grad sets a copy", x:grad(), {1, 1, 1})
    x:set_grad(nil)
    local d = x:detach()
    T.eq("detach: outside the graph", d:requires_grad(), false)
    T.ok("detach: the same storage", d:shares_storage(x))
    local z = (d * x):sum()
    z:backward()
    T.close("a detached factor is a constant", x:grad(), {1, 2, 3})
    local inside = mha.no_grad(function(a) return a * 2 end, x)
    T.eq("no_grad: nothing recorded", inside:requires_grad(), false)
    T.eq("no_grad passes the results through", mha.no_grad(function() return 1, 2, 3 end), 1)
    T.eq("is_grad_enabled inside no_grad", mha.no_grad(mha.is_grad_enabled), false)
    local ok = pcall(mha.no_grad, function() error("boom") end)
    T.ok("an error inside no_grad propagates", not ok)
    T.eq("... and grad mode is back on", mha.is_grad_enabled(), true)
    T.eq("nested no_grad restores the outer mode", mha.no_grad(function()
        mha.no_grad(function() end)
        return mha.is_grad_enabled()
    end), false)
    local v = mha.randn(2, 3):requires_grad(true)
    local parts = {v:split(1, 1)}
    local sum = parts[1]:sum() * 2 + parts[2]:sum()
    sum:backward()
    T.close("split pieces carry their gradient to their rows", v:grad(), {{2, 2, 2}, {1, 1, 1}})
    -- torch 1.13: chunk's pieces' gradients go side by side (cat), keeping a -0; narrows' gradients
    -- are summed, zeros and all, and -0 + 0 is +0. Either piece may arrive first.
    local signs = {}
    for _, how in ipairs({"chunk", "narrow", "chunk, second first"}) do
        local x = mha.tensor({1, 2, 3, 4}):requires_grad(true)
        local a, b
        if how == "narrow" then a, b = x:narrow(1, 1, 2), x:narrow(1, 3, 2) else a, b = x:chunk(2, 1) end
        local la, lb = (a * mha.tensor({-0.0, -0.0})):sum(), (b * 2):sum()
        local loss = how == "chunk, second first" and lb + la or la + lb
        loss:backward()
        local gr = x:grad()
        local g = {gr:get(1), gr:get(2), gr:get(3), gr:get(4)}
        signs[#signs + 1] = string.format("%s: %g %g %g %g", how, 1 / g[1], 1 / g[2], g[3], g[4])
    end
    T.eq("chunk keeps a -0 gradient, narrow sums it to +0 (as torch)", table.concat(signs, "; "),
         "chunk: -inf -inf 2 2; narrow: inf inf 2 2; chunk, second first: -inf -inf 2 2")
end)

T.test("errors name the function, the argument and the shapes", function()
    local x = mha.randn(2, 3)
    T.raises("backward of a tensor outside the graph", function() x:backward() end,
             "backward: this (2,3) tensor does not require grad")
    x:requires_grad(true)
    local y = x * 2
    T.raises("backward of (2,3) without a gradient", function() y:backward() end,
             {"backward: the tensor has shape (2,3)", "y:backward(grad)"})
    T.raises("backward with a gradient of the wrong shape", function() y:backward(mha.ones(3)) end,
             "backward: the gradient (3) must be a float tensor of the output's shape (2,3)")
    T.raises("requires_grad on an op's result", function() y:requires_grad(false) end, "made by mul")
    T.raises("requires_grad on a bool tensor", function() mha.tensor{true}:requires_grad(true) end, "only float tensors")
    T.raises("requires_grad with a number", function() x:requires_grad(1) end, "requires_grad: the flag must be true or false")
    for _, write in ipairs{
        {"set", function() x:set(1, 1, 0) end}, {"copy_", function() x:copy_(mha.zeros(2, 3)) end},
        {"fill_", function() x:fill_(0) end}, {"newindex", function() x[1] = 0 end},
        {"uniform_", function() x:uniform_(0, 1) end}, {"normal_", function() x:normal_() end}} do
        T.raises(write[1] .. " into a leaf that requires grad", write[2], {write[1] .. ": this (2,3) tensor requires grad", "no_grad"})
    end
    T.raises("a write into an op's result", function() y:fill_(0) end, "fill_: this (2,3) tensor was made by mul")
    mha.no_grad(function() x:fill_(1) end)
    T.close("the same write inside no_grad", x, mha.ones(2, 3))
    -- a tensor the graph saved, written through another handle: backward refuses, naming the op
    local w = mha.randn(2, 3)
    local p = (x * w):sum()
    w:fill_(0)
    T.raises("backward after a saved tensor changed in place", function() p:backward() end,
             "backward: a (2,3) tensor that mul saved for its gradient was changed in place")
    -- an op keeps only what its gradient reads, as torch's: a scaled copy, a sum's terms and a
    -- shifted copy are freed in the forward (256 KiB each), and the gradient is still right
    local big = mha.randn(256, 256):requires_grad(true)
    collectgarbage("collect")
    local before = mha.memory()
    local s = ((big * 2) + (big / 4) - 1):sum()
    collectgarbage("collect")
    T.ok("a + b, a - s, a·s and a / s keep none of their operands", mha.memory() - before < 65536,
         string.format("%d bytes held", mha.memory() - before))
    s:backward()
    T.close("... and the gradient is 2 + 1/4", big:grad(), mha.full({256, 256}, 2.25))
    local q = (x * 3):sum()
    q:backward()
    T.raises("a second backward", function() q:backward() end,
             {"backward: the graph through sum was already used by an earlier backward and freed",
              "pass retain_graph to the first: loss:backward{retain_graph = true}"})
    T.raises("backward: an unknown option", function() (x * 2):sum():backward{retain_grap = true} end,
             "backward: unknown option 'retain_grap'")
    local logits = mha.randn(3, 4)
    T.raises("cross_entropy: a class out of range", function() mha.cross_entropy(logits, {1, 5, 2}) end,
             "cross_entropy: targets (3): entry 2 is 5; expected a whole number from 1 to 4 (1-based)")
    T.raises("cross_entropy: targets of the wrong shape", function() mha.cross_entropy(logits, {1, 2}) end,
             "cross_entropy: targets (2) must have logits (3,4)'s shape without the class dim 2")
    T.raises("embedding: an index of 0", function() mha.embedding({0, 1}, mha.randn(3, 2)) end,
             "embedding: indices (2): entry 1 is 0")
    T.raises("sdpa_backward without weights or out", function()
        mha.sdpa_backward(mha.ones(2, 2), mha.ones(2, 2), mha.ones(2, 2), mha.ones(2, 2)) end,
             "sdpa_backward: give the forward's weights")
    T.raises("softmax_backward: shapes that differ", function()
        mha.softmax_backward(mha.ones(2, 3), mha.ones(3, 2), 1) end,
             "softmax_backward: dy (2,3) and y (3,2) differ in shape")
    T.raises("linear_backward: shapes that do not fit", function()
        mha.linear_backward(mha.ones(4, 3), mha.ones(4, 2), mha.ones(2, 2)) end,
             "linear_backward: dy (4,3), x (4,2), W (2,2)")
end)

T.test("the backward functions equal autograd", function()
    local x = mha.randn(3, 5):requires_grad(true)
    local dy = mha.randn(3, 5)
    local y = x:softmax(2)
    y:backward(dy)
    T.close("softmax_backward", mha.softmax_backward(dy, y:detach(), 2), x:grad(), 1e-5, 1e-6)
    x:zero_grad()
    local ly = x:log_softmax(1)
    ly:backward(dy)
    T.close("log_softmax_backward", mha.log_softmax_backward(dy, ly:detach(), 1), x:grad(), 1e-5, 1e-6)
    local a, W, b = mha.randn(2, 3, 4):requires_grad(true), mha.randn(5, 4):requires_grad(true), mha.randn(5):requires_grad(true)
    local g = mha.randn(2, 3, 5)
    mha.linear(a, W, b):backward(g)
    local dx, dW, db = mha.linear_backward(g, a:detach(), W:detach())
    T.close("linear_backward dx", dx, a:grad(), 1e-5, 1e-6)
    T.close("linear_backward dW", dW, W:grad(), 1e-5, 1e-6)
    T.close("linear_backward db", db, b:grad(), 1e-5, 1e-6)
    local h, lw, lb = mha.randn(4, 6):requires_grad(true), mha.randn(6):requires_grad(true), mha.randn(6):requires_grad(true)
    local gh = mha.randn(4, 6)
    mha.layer_norm(h, 6, lw, lb):backward(gh)
    local ldx, ldw, ldb = mha.layer_norm_backward(gh, h:detach(), 1, lw:detach())
    T.close("layer_norm_backward dx", ldx, h:grad(), 1e-5, 1e-6)
    T.close("layer_norm_backward dweight", ldw, lw:grad(), 1e-5, 1e-6)
    T.close("layer_norm_backward dbias", ldb, lb:grad(), 1e-5, 1e-6)
    local E = mha.randn(5, 3):requires_grad(true)
    local ge = mha.randn(2, 2, 3)
    mha.embedding({{1, 5}, {5, 2}}, E):backward(ge)
    T.close("embedding_backward", mha.embedding_backward(ge, {{1, 5}, {5, 2}}, 5), E:grad(), 1e-6, 1e-7)
    local logits = mha.randn(4, 3):requires_grad(true)
    mha.cross_entropy(logits, {3, 1, 2, 2}):backward()
    T.close("cross_entropy_backward", mha.cross_entropy_backward(logits:detach(), {3, 1, 2, 2}), logits:grad(), 1e-5, 1e-7)
    local q, k, v = mha.randn(2, 4, 3):requires_grad(true), mha.randn(2, 6, 3):requires_grad(true), mha.randn(2, 6, 2):requires_grad(true)
    local mask = mha.causal_mask(4, 6)
    local out, w = mha.sdpa(q, k, v, {attn_mask = mask})
    local gout = mha.randn(2, 4, 2)
    out:backward(gout)
    for _, opts in ipairs{{weights = w:detach(), label = "plain"}, {out = out:detach(), label = "fused"}} do
        local dq, dk, dv = mha.sdpa_backward(gout, q:detach(), k:detach(), v:detach(),
                                             {attn_mask = mask, weights = opts.weights, out = opts.out})
        T.close("sdpa_backward (" .. opts.label .. ") dq", dq, q:grad(), 1e-4, 1e-6)
        T.close("sdpa_backward (" .. opts.label .. ") dk", dk, k:grad(), 1e-4, 1e-6)
        T.close("sdpa_backward (" .. opts.label .. ") dv", dv, v:grad(), 1e-4, 1e-6)
    end
end)

local bits_differ = T.bits_differ

T.test("MultiheadAttention: a bool causal mask trains as is_causal, with the bits of the same mask in floats", function()
    -- 40 queries: ragged against every register tile (12 or 6 rows); inf in x makes v (and q, k)
    -- non-finite, where the causal products may not skip a 0·inf
    for _, poisoned in ipairs{false, true} do
        mha.seed(11)
        local m = mha.MultiheadAttention{embed_dim = 16, num_heads = 2}
        local L = 40
        local x0, g = mha.randn(3, L, 16), mha.randn(3, L, 16)
        if poisoned then x0 = x0:masked_fill(mha.rand(3, L, 16):gt(0.995), math.huge) end
        local causal = mha.causal_mask(L)
        local function run(mask)
            m:zero_grad()
            local x = x0:clone():requires_grad(true)
            local out = m:forward(x, x, x, {attn_mask = mask, need_weights = false})
            out:backward(g)
            return {out:detach(), x:grad(), m.in_proj_weight:grad(), m.out_proj_weight:grad()}
        end
        local as_float_mask = mha.zeros(L, L):masked_fill(causal, -math.huge)
        local as_bool, as_float = run(causal), run(as_float_mask)
        local label = poisoned and " (inf in x)" or ""
        for i, what in ipairs{"output", "x:grad()", "in_proj_weight:grad()", "out_proj_weight:grad()"} do
            local why = bits_differ(as_bool[i], as_float[i])
            T.ok(what .. label .. ": the bits of the float mask", why == nil, why)
        end
        -- the weights too: with an inf key past the diagonal the mask's sum is NaN there, as
        -- torch's, which the causal rule alone would have set to -inf
        local x = x0:clone():requires_grad(true)
        local _, wb = m:forward(x, x, x, {attn_mask = causal, average_attn_weights = false})
        local _, wf = m:forward(x, x, x, {attn_mask = as_float_mask, average_attn_weights = false})
        local why = bits_differ(wb, wf)
        T.ok("weights" .. label .. ": the bits of the float mask", why == nil, why)
    end
end)

T.test("MultiheadAttention: the issue's example; parameters are the leaves; graph memory freed", function()
    mha.seed(3)
    local m = mha.MultiheadAttention{embed_dim = 8, num_heads = 2}
    local x = mha.randn(5, 8):requires_grad(true)
    local out = m:forward(x, x, x, {need_weights = false})
    local loss = (out * out):mean()
    loss:backward()
    T.shape("x:grad() is (5,8)", x:grad(), {5, 8})
    T.shape("m.in_proj_weight:grad() is (24,8)", m.in_proj_weight:grad(), {24, 8})
    local params = m:parameters()
    T.eq("parameters() has PyTorch's dotted names",
         (function() local k = {} for name in pairs(params) do k[#k + 1] = name end table.sort(k) return k end)(),
         {"in_proj_bias", "in_proj_weight", "out_proj.bias", "out_proj.weight"})
    T.ok("parameters() hold the same gradients", params["out_proj.weight"]:grad() == m.out_proj_weight:grad())
    T.eq("each parameter requires grad", params.in_proj_bias:requires_grad(), true)
    m:zero_grad()
    T.eq("m:zero_grad() forgets them", m.in_proj_weight:grad(), nil)
    T.raises("writing into a parameter outside no_grad", function() m.in_proj_bias:fill_(0) end,
             "fill_: this (24) tensor requires grad")
    m.out_proj_bias = mha.ones(8)
    T.eq("an assigned parameter is a leaf that requires grad", m.out_proj_bias:requires_grad(), true)
    m:requires_grad(false)
    local frozen = m:forward(x, x, x)
    T.eq("a frozen module records only for its inputs", frozen:requires_grad(), true)
    T.eq("... and its parameters take no gradient", m.in_proj_weight:requires_grad(), false)
    m:requires_grad(true)
    -- the graph of a forward and backward leaves nothing behind once its tensors are gone
    collectgarbage("collect")
    local live = mha.memory()
    local x2 = mha.randn(2, 16, 8):requires_grad(true)
    local o2, w2 = m:forward(x2, x2, x2)
    local l2 = (o2 * o2):sum() + w2:sum()
    l2:backward()
    x2:zero_grad(); m:zero_grad()
    x2, o2, w2, l2 = nil, nil, nil, nil
    collectgarbage("collect")
    T.eq("memory after forward, backward and collection is as before", mha.memory(), live)
end)

T.test("a chain of 100000 ops: backward and freeing need no deep C stack", function()
    collectgarbage("collect")
    local live = mha.memory()
    local x = mha.tensor{1}:requires_grad(true)
    local y = x
    for _ = 1, 100000 do y = y * 1.5 - 0.5 * y end -- y' = y each step: the gradient stays 1
    y:backward()
    T.close("d y / d x through 200000 nodes", x:grad(), {1}, 1e-4)
    local z = x
    for _ = 1, 100000 do z = z + 1 end
    y, z, x = nil, nil, nil
    collectgarbage("collect")
    T.eq("both graphs freed (one after backward, one never used)", mha.memory(), live)
end)

T.done()
