-- tools/train_models.lua - trains the models mha.load_model ships (`make models`), each from a fixed seed, and
-- writes them to models/NAME.npz; prints what each took (CPU seconds) and how well it does on held-out data.
--
--   build/mha-repl tools/train_models.lua [outdir [name ...]]   (outdir defaults to models; names: induction,
--                                                               reverse, difference; default all of them)
--
-- induction: 2 layers, attention only, 2 heads, d_model 32 (TransformerLens's induction anchor), 600 AdamW steps
--            on mha.tasks.induction with repeats of 3..8 tokens; checked on repeats of 10 and 12 it never saw.
-- reverse:   1 layer, attention only, 2 heads, d_model 32, 400 AdamW steps on mha.tasks.reverse (6 symbols).
-- difference: two models of equal cost, 1 layer, d_model 32, d_ff 64, one with 1 head of 32 features and one
--            with 2 heads of 16, 800 AdamW steps each on mha.tasks.difference (8 symbols, 12 tokens): lesson 18.

local out = arg and arg[1] or "models"
local wanted = {}
for i = 2, arg and #arg or 0 do wanted[arg[i]] = true end
local trainers = {}   -- name -> function that trains and writes models/NAME.npz

local function held_out_accuracy(model, task)
    local tokens, targets = task:batch()
    local logits = mha.no_grad(function() return model:forward(tokens, {need_weights = false}) end)
    local _, acc = mha.train.loss(logits, targets)
    return acc
end

local function extra_of(h)
    return {["extra.history.loss"] = mha.tensor(h.loss), ["extra.history.acc"] = mha.tensor(h.acc),
            ["extra.history.step"] = mha.tensor(h.step)}
end

-- induction
function trainers.induction()
    mha.seed(0)
    local ind = mha.nn.Transformer{vocab = 20, d_model = 32, heads = 2, layers = 2, d_ff = 0, max_len = 24}
    -- the heads as they form: the best previous-token score in layer 1 and induction score in layer 2 every 25 steps,
    -- on a probe of repeats of 11 (never trained), kept in the checkpoint for lesson 16
    local probe11 = mha.tasks.repeated(20, 11, 16, 99)
    local formed = {step = {}, previous = {}, induction = {}}
    local function measure(step)
        local prev = mha.heads.detect(ind, probe11, "previous")
        local induc = mha.heads.detect(ind, probe11, "induction")
        local n = #formed.step + 1
        formed.step[n] = step
        formed.previous[n] = math.max(prev[1][1], prev[1][2])
        formed.induction[n] = math.max(induc[2][1], induc[2][2])
    end
    measure(0)
    local h = mha.train{model = ind, task = mha.tasks.induction{vocab = 20, len = 24, batch = 32, ["repeat"] = {3, 8}},
                        steps = 600, lr = 1e-2, log_every = 25, seed = 1, on_log = measure}
    print(string.format("induction: %d steps in %.1f s CPU, loss %.3f", h.steps, h.seconds, h.loss[#h.loss]))
    for _, r in ipairs({10, 12}) do
        local probe = mha.tasks.repeated(20, r, 16, 99)
        local prev = mha.heads.detect(ind, probe, "previous")
        local induc = mha.heads.detect(ind, probe, "induction")
        print(string.format("  repeat %d: previous-token layer 1 best %.2f, induction layer 2 best %.2f", r,
                            math.max(prev[1][1], prev[1][2]), math.max(induc[2][1], induc[2][2])))
    end
    local extra = extra_of(h)
    extra["extra.formed.step"] = mha.tensor(formed.step)
    extra["extra.formed.previous"] = mha.tensor(formed.previous)
    extra["extra.formed.induction"] = mha.tensor(formed.induction)
    mha.save_model(out .. "/induction.npz", ind, extra)
end

-- reverse
function trainers.reverse()
    mha.seed(0)
    local rev = mha.nn.Transformer{vocab = 10, d_model = 32, heads = 2, layers = 1, d_ff = 0, max_len = 12}
    local h = mha.train{model = rev, task = mha.tasks.reverse{vocab = 10, len = 6, batch = 64}, steps = 400,
                        lr = 3e-3, log_every = 100, seed = 1}
    print(string.format("reverse: %d steps in %.1f s CPU, held-out accuracy %.2f%%", h.steps, h.seconds,
                        100 * held_out_accuracy(rev, mha.tasks.reverse{vocab = 10, len = 6, batch = 1000, seed = 777})))
    mha.save_model(out .. "/reverse.npz", rev, extra_of(h))
end

-- difference: each answer needs the tokens one and two back at once; 1 head against 2 at the same cost
function trainers.difference()
    for _, heads in ipairs({1, 2}) do
        mha.seed(0)
        local m = mha.nn.Transformer{vocab = 8, d_model = 32, heads = heads, layers = 1, d_ff = 64, max_len = 12}
        local h = mha.train{model = m, task = mha.tasks.difference{vocab = 8, len = 12, batch = 64}, steps = 800,
                            lr = 1e-2, log_every = 50, seed = 1}
        local name = heads == 1 and "difference_1head" or "difference_2heads"
        print(string.format("%s: %d steps in %.1f s CPU, held-out accuracy %.2f%%", name, h.steps, h.seconds,
                            100 * held_out_accuracy(m, mha.tasks.difference{vocab = 8, len = 12, batch = 1000,
                                                                              seed = 777})))
        mha.save_model(out .. "/" .. name .. ".npz", m, extra_of(h))
    end
end

for _, name in ipairs({"induction", "reverse", "difference"}) do
    if next(wanted) == nil or wanted[name] then trainers[name]() end
end
