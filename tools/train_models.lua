-- tools/train_models.lua - trains the models mha.load_model ships (`make models`), each from a fixed seed, and
-- writes them to models/NAME.npz; prints what each took (CPU seconds) and how well it does on held-out data.
--
--   build/mha-repl tools/train_models.lua [outdir [name ...]]   (outdir defaults to models; names: induction,
--                                                               reverse, difference, char_en, char_zh,
--                                                               char_en_mlm, char_zh_mlm;
--                                                               default all of them)
--
-- induction: 2 layers, attention only, 2 heads, d_model 32 (TransformerLens's induction anchor), 600 AdamW steps
--            on mha.tasks.induction with repeats of 3..8 tokens; checked on repeats of 10 and 12 it never saw.
-- reverse:   1 layer, attention only, 2 heads, d_model 32, 400 AdamW steps on mha.tasks.reverse (6 symbols).
-- difference: two models of equal cost, 1 layer, d_model 32, d_ff 64, one with 1 head of 32 features and one
--            with 2 heads of 16, 800 AdamW steps each on mha.tasks.difference (8 symbols, 12 tokens): lesson 18.
-- char_en, char_zh: character models of real text (mha.data.text "kjv", "tang300"), 4 layers, 4 heads,
--            pre-norm, GELU MLP, context 64, AdamW on mha.tasks.text of the first 90% of the text; the
--            checkpoint keeps its tokenizer and the weights of the step with the best validation loss
--            (the last 10%), printed beside a unigram and a bigram baseline on the same split.
--            char_zh has rotary positions (pos = "rope"): the distance to the last ， or 。 is a
--            relative position, so a head can find it and the model count a line's characters; two
--            thirds of the clauses it writes have five or seven (a third with learned positions). Its
--            validation loss is best near step 150 and rises after: it learns the 300 poems by heart.
-- char_en_mlm, char_zh_mlm: the same shapes with causal = false and RoPE (with learned positions
--            a masked model stays at the unigram loss for hundreds of steps: finding the neighbours
--            needs relative positions, which RoPE gives at once), trained by masked-character
--            prediction (mha.tasks.masked, BERT's 15% rule) with a tokenizer that has the marker
--            "[MASK]"; kept at the best masked loss on the validation text, then judged on it: the
--            share of masked characters recovered beside the two-sided bigram guess (mha.mlm).
--            char_zh_mlm reads the 300 poems as char_zh does. (The three Chinese corpora one after
--            another, 6,172 characters at d_model 64 to stay under 5 MB, 800 steps, did worse:
--            24.1% recovered against the bigram guess's 23.8% on their own validation text.)

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

-- m trained on task by recipe (steps, batch, lr, val_every, val_batches), its loss on the task val
-- (writing.val_loss: the same batches each time) printed every val_every steps under the words
-- `what`; -> the history and best {loss =, step =}, with m holding the weights of the best check.
local function train_keeping_best(name, m, task, val, what, recipe)
    local writing = require "mha.writing"
    local best = {loss = math.huge, step = 0}
    local function check(step)
        local loss = writing.val_loss(m, val, {batches = recipe.val_batches})
        print(string.format("  %s step %d: %s %.4f", name, step, what, loss))
        if loss < best.loss then
            best.loss, best.step, best.weights = loss, step, {}
            for k, v in pairs(m:state_dict()) do best.weights[k] = v:clone() end
        end
    end
    local h = mha.train{model = m, task = task, steps = recipe.steps, lr = recipe.lr,
                        log_every = recipe.val_every, seed = 1, quiet = true, on_log = check}
    m:load_state_dict(best.weights)
    return h, best
end

-- A character model of corpus: trained, checked every val_every steps on valid, and saved with the
-- weights of its best check; prints its validation loss beside the n-gram baselines.
local function char_model(name, corpus, shape, recipe)
    local writing = require "mha.writing"
    local text = mha.data.text(corpus)
    local train, valid = mha.data.split(text, {val = 0.1})
    local tok = mha.tokenizer.CharTokenizer(text)
    local unigram, bigram = writing.baselines(train, valid, tok)
    mha.seed(0)
    local m = mha.nn.Transformer{vocab = tok.vocab_size, d_model = shape.d_model, heads = 4, layers = 4,
                                 max_len = 64, norm = "pre", pos = shape.pos}
    local h, best = train_keeping_best(name, m, mha.tasks.text{text = train, tokenizer = tok, len = 64,
                                                               batch = recipe.batch},
                                       mha.tasks.text{text = valid, tokenizer = tok, len = 64,
                                                      batch = 32, seed = 0}, "val loss", recipe)
    print(string.format("%s: %d steps in %.1f s CPU; val loss %.3f (step %d), unigram %.3f, bigram %.3f "
                        .. "nats per character", name, h.steps, h.seconds, best.loss, best.step, unigram,
                        bigram))
    mha.save_model(out .. "/" .. name .. ".npz", m, {tokenizer = tok, ["extra.history.loss"] = mha.tensor(h.loss),
                                                    ["extra.history.step"] = mha.tensor(h.step)})
    print(mha.generate(m, tok, recipe.prompt, {max_new_tokens = 120, temperature = 0.8, seed = 1,
                                               stream = false}))
end

function trainers.char_en()
    char_model("char_en", "kjv", {d_model = 128},
               {steps = 1500, batch = 12, lr = 2e-3, val_every = 100, val_batches = 8,
                prompt = "In the beginning"})
end

function trainers.char_zh()
    char_model("char_zh", "tang300", {d_model = 96, pos = "rope"},
               {steps = 400, batch = 16, lr = 2e-3, val_every = 50, val_batches = 4,
                prompt = "《春晓》\n"})
end

-- A masked (bidirectional) character model of corpus: trained on the first 90%, kept at the best
-- masked loss on the last 10%, and judged there against the two-sided bigram guess.
local function masked_model(name, corpora, shape, recipe)
    local mlm = require "mha.mlm"
    local texts = {}   -- the corpora one after another, an empty line between two
    for i, corpus in ipairs(corpora) do texts[i] = mha.data.text(corpus) end
    local text = table.concat(texts, "\n")
    local train, valid = mha.data.split(text, {val = 0.1})
    local tok = mha.tokenizer.CharTokenizer(text, {mask = "[MASK]"})
    mha.seed(0)
    local m = mha.nn.Transformer{vocab = tok.vocab_size, d_model = shape.d_model, heads = 4,
                                 layers = 4, max_len = 64, norm = "pre", causal = false,
                                 pos = "rope"}
    local h, best = train_keeping_best(name, m, mha.tasks.masked{text = train, tokenizer = tok,
                                                                 len = 64, batch = recipe.batch},
                                       mha.tasks.masked{text = valid, tokenizer = tok, len = 64,
                                                        batch = 32, seed = 0},
                                       "masked val loss", recipe)
    local eval = {windows = 2000, len = 64, seed = 7}
    local acc, bigram = mlm.accuracy(m, tok, valid, eval), mlm.bigram_accuracy(train, valid, tok, eval)
    print(string.format("%s: %d steps in %.1f s CPU; masked val loss %.3f (step %d); held-out " ..
                        "masked character recovered %.1f%%, two-sided bigram guess %.1f%%", name,
                        h.steps, h.seconds, best.loss, best.step, 100 * acc, 100 * bigram))
    mha.save_model(out .. "/" .. name .. ".npz", m, {tokenizer = tok,
                                                   ["extra.history.loss"] = mha.tensor(h.loss),
                                                   ["extra.history.step"] = mha.tensor(h.step),
                                                   ["extra.heldout.accuracy"] = mha.tensor({acc}),
                                                   ["extra.heldout.bigram"] = mha.tensor({bigram})})
    print(mha.fill_mask(m, tok, recipe.probe))
end

function trainers.char_en_mlm()
    masked_model("char_en_mlm", {"kjv"}, {d_model = 128},
                 {steps = 800, batch = 16, lr = 3e-3, val_every = 100, val_batches = 4,
                  probe = "In the beginning God created the hea[MASK]en and the earth."})
end

function trainers.char_zh_mlm()
    masked_model("char_zh_mlm", {"tang300"}, {d_model = 96},
                 {steps = 600, batch = 16, lr = 3e-3, val_every = 100, val_batches = 4,
                  probe = "床前明月光，疑是地上[MASK]。"})
end

for _, name in ipairs({"induction", "reverse", "difference", "char_en", "char_zh", "char_en_mlm",
                       "char_zh_mlm"}) do
    if next(wanted) == nil or wanted[name] then trainers[name]() end
end
