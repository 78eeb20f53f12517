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
              tiles_causal = {is_causal = true}}
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

T.done()
