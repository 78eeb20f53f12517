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
    -- torch's habit: the model where its parameters go
    T.raises("a module given for its parameters", function()
        mha.optim.Adam(mha.nn.Linear{in_features = 2, out_features = 2}, {lr = 1e-3})
    end, "optim.Adam: params is a module; give it the module's parameters: mha.optim.Adam(m:parameters(), ...)")
    T.raises("a MultiheadAttention too", function()
        mha.optim.SGD(mha.MultiheadAttention{embed_dim = 4, num_heads = 2}, {lr = 0.1})
    end, "optim.SGD: params is a module")
    T.raises("did you mean", function() mha.optim.SGD({p}, {lr = 0.1, momentun = 0.9}) end,
             "optim.SGD: unknown option 'momentun' (did you mean 'momentum'?); valid options: lr, momentum,")
    T.raises("nesterov needs momentum", function() mha.optim.SGD({p}, {lr = 0.1, nesterov = true}) end,
             "optim.SGD: Nesterov momentum requires a momentum and zero dampening")
    T.raises("beta out of range", function() mha.optim.AdamW({p}, {betas = {0.9, 1.0}}) end,
             "optim.AdamW: invalid beta parameter at index 2: 1.0")
    T.raises("negative eps", function() mha.optim.Adam({p}, {eps = -1}) end, "invalid epsilon value: -1")
    T.raises("negative weight_decay", function() mha.optim.SGD({p}, {lr = 1, weight_decay = -1}) end,
             "invalid weight_decay value: -1")
    T.raises("a number where a boolean goes", function() mha.optim.Adam({p}, {amsgrad = 1}) end,
             "optim.Adam: option amsgrad must be a boolean, got number")
    -- torch's calls, answered with the one mha-repl takes (SGD, Adam and AdamW share the check)
    T.raises("torch's keyword form", function() mha.optim.Adam{params = {p}, lr = 1e-3} end,
             "optim.Adam: the parameters and the options go in two arguments: mha.optim.Adam(params, {lr = 0.001}), " ..
             "where params is m:parameters() (not one table {params = ..., lr = ...})")
    T.raises("the keyword form with betas", function() mha.optim.AdamW{params = {p}, lr = 0.01, betas = {0.9, 0.95}} end,
             "mha.optim.AdamW(params, {lr = 0.01, betas = {0.9, 0.95}})")
    T.raises("a positional lr", function() mha.optim.Adam({p}, 1e-3) end,
             "optim.Adam: options must be a table, got number: write mha.optim.Adam(params, {lr = 0.001})")
    T.raises("SGD's positional lr", function() mha.optim.SGD({p}, 0.1) end,
             "optim.SGD: options must be a table, got number: write mha.optim.SGD(params, {lr = 0.1})")
    T.eq("a list of groups is still torch's", #mha.optim.SGD({{params = {p}, lr = 0.1}}).param_groups, 1)
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

-- state_dict / load_state_dict: 10 steps, the optimizer's state and the parameters saved to .npz files, loaded
-- into fresh parameters and a fresh optimizer, 10 more steps: the same bits as 20 steps straight, and torch's
-- parameters after 20 steps (rtol 1e-5). The keys are torch.optim's, flattened (tests/fixtures/optim/state_keys.txt).
T.test("state_dict saved to .npz and loaded: a resumed run equals one that never stopped", function()
    local cases = read_cases()
    local dir = os.tmpname()
    os.remove(dir)
    local opt_file, param_file = dir .. "-opt.npz", dir .. "-params.npz"
    local torch_keys = {}
    for line in io.lines(T.path("tests/fixtures/optim/state_keys.txt")) do
        local name, part, keys = line:match("^(%S+) (%a+) (.*)$")
        if name then
            torch_keys[name] = torch_keys[name] or {}
            torch_keys[name][part] = {}
            for key in keys:gmatch("%S+") do torch_keys[name][part][key] = true end
        end
    end
    local function run(case, steps, W, b, opt)
        for step = steps[1], steps[2] do
            W:set_grad(mha.tensor(case.grads[step].W):view(3, 4))
            b:set_grad(mha.tensor(case.grads[step].b))
            opt:step()
        end
    end
    for _, case in ipairs(cases) do
        local class = mha.optim[CLASSES[case.kind]]
        local W, b = mha.tensor(case.init.W):view(3, 4), mha.tensor(case.init.b)
        run(case, {1, 20}, W, b, class({W = W, b = b}, make_options(case)))
        local W1, b1 = mha.tensor(case.init.W):view(3, 4), mha.tensor(case.init.b)
        local first = class({W = W1, b = b1}, make_options(case))
        run(case, {1, 10}, W1, b1, first)
        local sd = first:state_dict()
        mha.save(opt_file, sd)
        mha.save(param_file, {W = W1, b = b1})
        local params = mha.load(param_file)
        local W2, b2 = params.W, params.b
        local resumed = class({W = W2, b = b2}, make_options(case))
        resumed:load_state_dict(mha.load(opt_file))
        run(case, {11, 20}, W2, b2, resumed)
        T.ok(case.name .. ": 10 steps, save, load, 10 steps: W bit-identical to 20 steps", W2 == W, tostring(W2 - W))
        T.ok(case.name .. ": ... b bit-identical", b2 == b, tostring(b2 - b))
        T.close(case.name .. ": resumed W equals torch's after 20 steps", W2:view(12), case.final.W, 1e-5, 1e-7)
        T.close(case.name .. ": resumed b equals torch's", b2, case.final.b, 1e-5, 1e-7)
        local want = torch_keys[case.name]
        if want then
            local state_same, groups_within = true, true
            local seen = 0
            for key in pairs(sd) do
                if key:match("^state%.") then
                    state_same = state_same and want.state[key] == true
                    seen = seen + 1
                else
                    groups_within = groups_within and want.groups[key] == true
                end
            end
            for _ in pairs(want.state) do seen = seen - 1 end
            T.ok(case.name .. ": state keys are torch.optim's", state_same and seen == 0)
            T.ok(case.name .. ": param_groups keys are among torch.optim's", groups_within)
        end
    end
    os.remove(opt_file)
    os.remove(param_file)
    -- what does not fit is refused, naming the key and the shapes
    local p, q = mha.zeros(2, 2):requires_grad(true), mha.zeros(3):requires_grad(true)
    local adam = mha.optim.Adam({p, q}, {lr = 0.1})
    p:set_grad(mha.ones(2, 2)); q:set_grad(mha.ones(3))
    adam:step()
    local sd = adam:state_dict()
    T.eq("step is kept per parameter", sd["state.1.step"], 1)
    T.eq("params are numbered from 0, as torch's", sd["param_groups.0.params"], {0, 1})
    T.raises("a state for fewer parameters", function() mha.optim.Adam({p}, {lr = 0.1}):load_state_dict(sd) end,
             "optim.Adam:load_state_dict: state.1.exp_avg: the optimizer has 1 parameters (numbered from 0)")
    T.raises("a buffer of another shape", function() mha.optim.Adam({q, p}, {lr = 0.1}):load_state_dict(sd) end,
             "optim.Adam:load_state_dict: state.0.exp_avg must be a float32 tensor of parameter 1's shape (3), got float32 (2,2)")
    T.raises("another optimizer's state", function() mha.optim.SGD({p, q}, {lr = 0.1}):load_state_dict(sd) end,
             "optim.SGD:load_state_dict: state.0.exp_avg: SGD keeps no 'exp_avg' (it keeps momentum_buffer)")
    sd["param_groups.0.lr"] = -1
    T.raises("an invalid option in the state", function() mha.optim.Adam({p, q}):load_state_dict(sd) end,
             "optim.Adam:load_state_dict: invalid learning rate: -1")
    T.raises("not a table", function() adam:load_state_dict(3) end,
             "optim.Adam:load_state_dict: give the table of opt:state_dict(), got number")
    local fresh = mha.optim.Adam({p, q}, {lr = 0.1})
    sd["param_groups.0.lr"] = 0.5
    fresh:load_state_dict(sd)
    T.eq("the state's options replace the group's, as torch", fresh.param_groups[1].lr, 0.5)
    T.ok("the loaded buffers are copies", fresh.state[p].exp_avg ~= nil and not rawequal(fresh.state[p].exp_avg, sd["state.0.exp_avg"]))
end)

-- load_state_dict on anything: every refusal a message naming load_state_dict, never a library position
T.test("load_state_dict: odd states refused with messages", function()
    local p, q = mha.zeros(2, 2):requires_grad(true), mha.zeros(3):requires_grad(true)
    local values = {n = 10, nil, 0, -1.5, 0 / 0, true, "a", {}, {1, 2}, mha.zeros(2, 2), mha.tensor{true}}
    local bad, calls = {}, 0
    for _, kind in ipairs{"SGD", "Adam"} do
        local opt = mha.optim[kind]({p, q}, {lr = 0.1, momentum = kind == "SGD" and 0.9 or nil})
        p:set_grad(mha.ones(2, 2)); q:set_grad(mha.ones(3))
        opt:step()
        local good = opt:state_dict()
        for key in pairs(good) do
            for i = 1, values.n do
                local sd = {}
                for k, v in pairs(good) do sd[k] = v end
                sd[key] = values[i]
                calls = calls + 1
                local ok, err = pcall(opt.load_state_dict, opt, sd)
                if not ok and (type(err) ~= "string" or err:find("^lua/") or err:find("attempt to ")
                               or not err:find("load_state_dict: ", 1, true)) then
                    bad[#bad + 1] = kind .. " " .. key .. " = #" .. i .. ": " .. tostring(err)
                end
            end
        end
        for i = 1, values.n do
            local ok, err = pcall(opt.load_state_dict, opt, values[i])
            if not ok and (err:find("^lua/") or err:find("attempt to ")) then bad[#bad + 1] = tostring(err) end
        end
    end
    T.ok(calls .. " odd states, every refusal a message", #bad == 0, table.concat(bad, "\n", 1, math.min(#bad, 5)))
end)

T.done()
