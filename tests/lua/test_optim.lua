-- tests/lua/test_optim.lua - mha.optim.SGD, Adam, AdamW and mha.clip_grad_norm against torch 1.13's torch.optim:
-- the 20-step cases of tests/fixtures/optim/cases.txt (gradients recorded from torch, given to the parameters
-- with p:set_grad, so the classes are checked apart from autograd) end at torch's parameters (rtol 1e-5);
-- an end-to-end regression (autograd, then optimizer) follows torch's losses step by step (rtol 1e-4);
-- options are checked as torch checks them, with messages that name the option.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

-- ---- the fixture cases ----

local function numbers(text)
    local list = {}
    for word in text:gmatch("%S+") do list[#list + 1] = tonumber(word) end
    return list
end

-- {name=, kind=, opts=, init={W=,b=}, grads={[step]={W=,b=}}, final={W=,b=}} and the clip lines
local function read_cases()
    local cases, clips, current = {}, {}, nil
    for line in io.lines(T.path("tests/fixtures/optim/cases.txt")) do
        local name, kind, rest = line:match("^case (%S+) (%S+) (.*)$")
        if name then
            local opts = {}
            for key, value in rest:gmatch("(%S+)=(%S+)") do opts[key] = tonumber(value) end
            current = {name = name, kind = kind, opts = opts, init = {}, grads = {}, final = {}}
            cases[#cases + 1] = current
        end
        local what, pname, values = line:match("^(%a+) ([Wb]) %d+ (.*)$")
        if what == "init" or what == "final" then current[what][pname] = numbers(values) end
        local step, gname, gvalues = line:match("^grad (%d+) ([Wb]) %d+ (.*)$")
        if step then
            step = tonumber(step)
            current.grads[step] = current.grads[step] or {}
            current.grads[step][gname] = numbers(gvalues)
        end
        if line:match("^clip ") then clips[#clips + 1] = numbers(line:sub(6)) end
        local dname, dvalues = line:match("^data ([XY]) %d+ (.*)$")
        if dname then cases[dname] = numbers(dvalues) end
    end
    return cases, clips
end

local function make_options(case)
    local o = case.opts
    local opts = {lr = o.lr, weight_decay = o.weight_decay, maximize = o.maximize == 1}
    if case.kind == "sgd" then
        opts.momentum, opts.dampening, opts.nesterov = o.momentum, o.dampening, o.nesterov == 1
    else
        opts.betas, opts.eps, opts.amsgrad = {o.beta1, o.beta2}, o.eps, o.amsgrad == 1
    end
    return opts
end

local CLASSES = {sgd = "SGD", adam = "Adam", adamw = "AdamW"}

T.test("20 steps of each torch.optim case", function()
    local cases, clips = read_cases()
    T.ok("cases read", #cases >= 12 and #clips >= 3, #cases .. " cases, " .. #clips .. " clips")
    for _, case in ipairs(cases) do
        local W = mha.tensor(case.init.W):view(3, 4)
        local b = mha.tensor(case.init.b)
        local opt = mha.optim[CLASSES[case.kind]]({W = W, b = b}, make_options(case))
        for step = 1, 20 do
            W:set_grad(mha.tensor(case.grads[step].W):view(3, 4))
            b:set_grad(mha.tensor(case.grads[step].b))
            opt:step()
        end
        T.close(case.name .. ": W after 20 steps", W:view(12), case.final.W, 1e-5, 1e-7)
        T.close(case.name .. ": b after 20 steps", b, case.final.b, 1e-5, 1e-7)
        local st = opt.state[W]
        T.ok(case.name .. ": state counts the steps", st and st.step == 20, st and st.step)
    end
    for i, c in ipairs(clips) do
        local max_norm, total = c[1], c[2]
        local grads = {table.unpack(c, 4, 18)}
        local want = {table.unpack(c, 20, 34)}
        local W, b = mha.zeros(3, 4):requires_grad(true), mha.zeros(3):requires_grad(true)
        W:set_grad(mha.tensor({table.unpack(grads, 1, 12)}):view(3, 4))
        b:set_grad(mha.tensor({table.unpack(grads, 13, 15)}))
        local got = mha.clip_grad_norm({W, b}, max_norm)
        T.close("clip " .. i .. ": total norm as torch", got, total, 1e-6, 0)
        T.close("clip " .. i .. ": clipped gradients as torch", mha.cat({W:grad():view(12), b:grad()}, 1), want, 1e-6, 1e-9)
    end
end)

T.test("the same 20 steps with autograd giving the gradients", function()
    local cases = read_cases()
    local X, Y = mha.tensor(cases.X):view(6, 4), mha.tensor(cases.Y):view(6, 3)
    for _, case in ipairs(cases) do
        local W = mha.tensor(case.init.W):view(3, 4):requires_grad(true)
        local b = mha.tensor(case.init.b):requires_grad(true)
        local opt = mha.optim[CLASSES[case.kind]]({W = W, b = b}, make_options(case))
        for _ = 1, 20 do
            opt:zero_grad()
            local loss = ((X:matmul(W:T()) + b - Y) ^ 2):mean() + (W ^ 3):sum() * 0.1
            loss:backward()
            opt:step()
        end
        -- our gradients may differ from torch's in the last bits; after 20 steps still within rtol 1e-5
        T.close(case.name .. " end to end: W", W:view(12), case.final.W, 1e-5, 1e-7)
        T.close(case.name .. " end to end: b", b, case.final.b, 1e-5, 1e-7)
    end
end)

T.test("parameters without a gradient, zero_grad, groups", function()
    local p, q = mha.ones(2):requires_grad(true), mha.ones(2):requires_grad(true)
    local opt = mha.optim.SGD({p, q}, {lr = 0.5, momentum = 0.9})
    p:set_grad(mha.tensor{1, 2})
    opt:step()
    T.close("a parameter with a gradient moves", p, {0.5, 0})
    T.ok("one without is skipped and keeps no state", q == mha.ones(2) and opt.state[q] == nil)
    opt:zero_grad()
    T.ok("zero_grad forgets the gradients", p:grad() == nil)
    opt:step()
    T.close("a step without gradients changes nothing", p, {0.5, 0})
    local a, c = mha.zeros(1):requires_grad(true), mha.zeros(1):requires_grad(true)
    local groups = mha.optim.SGD({{params = {a}}, {params = {c}, lr = 2}}, {lr = 1})
    a:set_grad(mha.tensor{1}); c:set_grad(mha.tensor{1})
    groups:step()
    T.ok("each group uses its own lr", a == mha.tensor{-1} and c == mha.tensor{-2}, tostring(a) .. tostring(c))
    T.eq("groups inherit the defaults", groups.param_groups[2].momentum, 0)
    T.ok("repr as torch's", tostring(groups):find("SGD (\nParameter Group 0\n    dampening: 0\n", 1, true) ~= nil, tostring(groups))
    local d = mha.zeros(1):requires_grad(true)
    groups:add_param_group{params = {d}, lr = 3}
    d:set_grad(mha.tensor{1})
    groups:step()
    T.ok("add_param_group", d == mha.tensor{-3}, tostring(d))
    local e = mha.zeros(1):requires_grad(true) -- equal in value to a, yet another parameter
    groups:add_param_group{params = {e}}
    T.eq("a parameter equal in value to another is still its own", #groups.param_groups, 4)
    T.raises("the same parameter twice", function() groups:add_param_group{params = {a}} end,
             "optim.SGD:add_param_group: parameter 1 is already in another group")
end)

T.test("options are checked as torch checks them", function()
    local p = mha.zeros(2):requires_grad(true)
    T.raises("negative lr", function() mha.optim.Adam({p}, {lr = -0.1}) end,
             "optim.Adam: invalid learning rate: -0.1 (as torch.optim refuses it)")
    T.raises("SGD needs lr", function() mha.optim.SGD({p}) end, "optim.SGD: option lr is required")
    T.raises("did you mean", function() mha.optim.SGD({p}, {lr = 0.1, momentun = 0.9}) end,
             "optim.SGD: unknown option 'momentun' - did you mean 'momentum'? (the options are lr, momentum,")
    T.raises("nesterov needs momentum", function() mha.optim.SGD({p}, {lr = 0.1, nesterov = true}) end,
             "optim.SGD: Nesterov momentum requires a momentum and zero dampening")
    T.raises("beta out of range", function() mha.optim.AdamW({p}, {betas = {0.9, 1.0}}) end,
             "optim.AdamW: invalid beta parameter at index 2: 1.0")
    T.raises("negative eps", function() mha.optim.Adam({p}, {eps = -1}) end, "invalid epsilon value: -1")
    T.raises("negative weight_decay", function() mha.optim.SGD({p}, {lr = 1, weight_decay = -1}) end,
             "invalid weight_decay value: -1")
    T.raises("a number where a boolean goes", function() mha.optim.Adam({p}, {amsgrad = 1}) end,
             "optim.Adam: option amsgrad must be a boolean, got number")
    T.raises("empty list", function() mha.optim.Adam({}) end, "optim.Adam: the optimizer got an empty parameter list")
    T.raises("not a tensor", function() mha.optim.Adam({w = 3}) end, 'optim.Adam: params["w"] is number')
    T.raises("twice", function() mha.optim.Adam({p, p}) end, "optim.Adam: parameter 2 appears more than once")
    T.raises("non-leaf", function() mha.optim.Adam({p * 2}) end, "optim.Adam: parameter 1 is not a leaf")
    T.raises("clip max_norm", function() mha.clip_grad_norm({p}, -1) end, "clip_grad_norm: max_norm must be a non-negative")
    T.raises("clip norm_type", function() mha.clip_grad_norm({p}, 1, 1) end, "only norm_type 2")
    T.eq("clip without gradients is 0", mha.clip_grad_norm({mha.zeros(2)}, 1), 0.0)
end)

-- ---- end to end: autograd gives the gradients, the optimizer follows torch's trajectory ----

local e2e = mha.load(T.path("tests/fixtures/optim/e2e.npz"))

-- 20 steps of Linear(4, 2) on e2e.x -> e2e.y, forward given as f(x, W, b); the losses before each step.
local function train(kind, forward)
    local W = mha.tensor(e2e.weight):requires_grad(true)
    local b = mha.tensor(e2e.bias):requires_grad(true)
    local opt = kind == "adam" and mha.optim.Adam({weight = W, bias = b}, {lr = 0.05})
                or mha.optim.SGD({weight = W, bias = b}, {lr = 0.1, momentum = 0.9})
    local losses = {}
    for step = 1, 20 do
        opt:zero_grad()
        local loss = ((forward(e2e.x, W, b) - e2e.y) ^ 2):mean()
        loss:backward()
        opt:step()
        losses[step] = loss:item()
    end
    return losses, W, b
end

T.test("end to end with autograd (matmul)", function()
    for _, kind in ipairs{"adam", "sgd"} do
        local losses, W, b = train(kind, function(x, W, b) return x:matmul(W:T()) + b end)
        T.close(kind .. ": losses step by step equal torch's", losses, e2e[kind .. ".losses"], 1e-4, 1e-7)
        T.close(kind .. ": weight after 20 steps", W, e2e[kind .. ".weight"], 1e-4, 1e-6)
        T.close(kind .. ": bias after 20 steps", b, e2e[kind .. ".bias"], 1e-4, 1e-6)
    end
end)

T.done()
