-- tests/lua/test_transformer.lua - mha.nn.Transformer against its PyTorch copy (tests/fixtures/transformer/, from
-- tests/fixtures/gen/gen_transformer.py, torch 1.13), the toy tasks' layouts, mha.train's loss and determinism,
-- the head detectors against TransformerLens's formula, and the shipped models.

local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

-- The options of each fixture (as in gen_transformer.py's CONFIGS).
local CONFIGS = {
    pre_mlp_learned = {vocab = 11, d_model = 16, heads = 4, layers = 2, d_ff = 24, max_len = 12, causal = true,
                       norm = "pre", pos = "learned"},
    post_attnonly_sin = {vocab = 7, d_model = 12, heads = 3, layers = 2, d_ff = 0, max_len = 10, causal = true,
                         norm = "post", pos = "sinusoidal"},
    none_bidir = {vocab = 9, d_model = 8, heads = 2, layers = 1, d_ff = 16, max_len = 8, causal = false,
                  norm = "none", pos = "learned"},
}

for _, name in ipairs({"pre_mlp_learned", "post_attnonly_sin", "none_bidir"}) do
    T.test(name, function()
        local c = CONFIGS[name]
        local fx = mha.load(T.path("tests/fixtures/transformer/" .. name .. ".npz"))
        local model = mha.nn.Transformer(c)
        local sd = {}
        for _, k in ipairs(model:parameter_names()) do sd[k] = fx[k] end
        model:load_state_dict(sd)   -- strict: every key of the PyTorch copy is one of ours and the reverse
        local n_fx = 0
        for k in pairs(fx) do
            if not (k:match("^tokens") or k:match("^targets") or k:match("^logits") or k:match("^attn%.")
                    or k:match("^detect%.") or k:match("^loss") or k:match("^grad%.")) then n_fx = n_fx + 1 end
        end
        T.eq(name .. ": same number of state_dict keys as PyTorch", #model:parameter_names(), n_fx)
        local logits = model:forward(fx.tokens)
        T.close(name .. ": logits = torch's", logits, fx.logits, 1e-4, 1e-5)
        for i = 1, c.layers do
            T.close(name .. ": attention layer " .. i .. " = torch's", model:attention()[i], fx["attn." .. i], 1e-4, 1e-5)
        end
        local loss = mha.train.loss(logits, fx.targets)
        T.close(name .. ": masked loss = torch's", loss, fx.loss, 1e-4, 1e-6)
        loss:backward()
        T.close(name .. ": grad embed.weight = torch's", model.embed.weight:grad(), fx["grad.embed.weight"], 1e-3, 1e-5)
        T.close(name .. ": grad layers.0.attn.in_proj_weight = torch's",
                model:parameters()["layers.0.attn.in_proj_weight"]:grad(), fx["grad.layers.0.attn.in_proj_weight"],
                1e-3, 1e-5)
        for _, kind in ipairs({"previous", "duplicate", "induction"}) do
            T.close(name .. ": heads.detect " .. kind .. " = TransformerLens's formula",
                    mha.heads.detect(model, fx.tokens, kind), fx["detect." .. kind], 1e-4, 1e-6)
        end
    end)
end

T.test("transformer fields and errors", function()
    local m = mha.nn.Transformer{vocab = 5, d_model = 8, heads = 2, layers = 3, d_ff = 0, max_len = 6}
    T.eq("fields", {m.vocab, m.max_len, m.layers, m.heads}, {5, 6, 3, 2})
    T.shape("logits of a 1-D table", m:forward({1, 2, 3}), {1, 3, 5})
    T.eq("attention per layer", #m:attention(), 3)
    T.shape("attention shape", m:attention()[1], {1, 2, 3, 3})
    T.raises("too long", function() m:forward({1, 2, 3, 4, 5, 1, 2}) end,
             "Transformer:forward: tokens have length 7, longer than max_len 6")
    T.raises("d_model not divisible", function() mha.nn.Transformer{vocab = 5, d_model = 9, heads = 2, max_len = 4} end,
             "nn.Transformer: d_model 9 must be divisible by heads 2")
    T.raises("norm choice", function() mha.nn.Transformer{vocab = 5, d_model = 8, max_len = 4, norm = "layer"} end,
             'nn.Transformer: option norm must be one of "pre", "post", "none", got layer')
    T.raises("typo", function() mha.nn.Transformer{vocab = 5, d_model = 8, max_len = 4, head = 2} end,
             "nn.Transformer: unknown option 'head'")
    T.raises("attention before forward",
             function() mha.nn.Transformer{vocab = 5, d_model = 8, max_len = 4}:attention() end,
             "Transformer:attention: run model:forward(tokens) first")
    m:forward({{1, 2}}, {need_weights = false})
    T.raises("no weights kept", function() m:attention() end, "Transformer:attention")
end)

T.test("task layouts", function()
    local function rows(t)
        local out = {}
        for i = 1, t:shape()[1] do
            out[i] = {}
            for j = 1, t:shape()[2] do out[i][j] = t[i][j] end
        end
        return out
    end
    for _, kind in ipairs({"copy", "reverse", "sort"}) do
        local task = mha.tasks[kind]{vocab = 9, len = 5, batch = 4, seed = 3}
        local tok, tgt = task:batch()
        T.shape(kind .. " tokens", tok, {4, 10})
        local ok = true
        for _, pair in ipairs({{rows(tok), rows(tgt)}}) do
            for n = 1, 4 do
                local x, y = {}, {}
                for i = 1, 5 do x[i] = pair[1][n][i] end
                ok = ok and pair[1][n][6] == 9   -- SEP
                for i = 1, 5 do
                    ok = ok and pair[2][n][i] == 0
                    y[i] = pair[2][n][5 + i]
                    if i < 5 then ok = ok and pair[1][n][6 + i] == y[i] end   -- teacher forcing: y shifted in
                end
                local want = table.move(x, 1, 5, 1, {})
                if kind == "reverse" then for i = 1, 5 do want[i] = x[6 - i] end end
                if kind == "sort" then table.sort(want) end
                for i = 1, 5 do ok = ok and y[i] == want[i] end
            end
        end
        T.ok(kind .. " layout: x SEP y, targets y on the second half", ok)
    end
    local m = mha.tasks.match{vocab = 9, len = 3, batch = 8, seed = 1}
    local tok, tgt = m:batch()
    local r, g, ok = rows(tok), rows(tgt), true
    for n = 1, 8 do
        local q = r[n][8]
        local v
        for i = 1, 3 do if r[n][2 * i - 1] == q then v = r[n][2 * i] end end
        ok = ok and r[n][7] == 9 and g[n][8] == v and g[n][1] == 0 and g[n][7] == 0
    end
    T.ok("match layout: pairs, SEP, key -> its value", ok)
    local ind = mha.tasks.induction{vocab = 12, len = 20, batch = 50, seed = 2, ["repeat"] = {3, 6}}
    tok, tgt = ind:batch()
    r, g, ok = rows(tok), rows(tgt), true
    local lengths, starts = {}, {}
    for n = 1, 50 do
        local first, last
        for p = 1, 20 do
            if g[n][p] ~= 0 then
                first = first or p
                last = p
                ok = ok and g[n][p] == r[n][p + 1]
            end
        end
        local len = last - first + 2
        lengths[len], starts[first] = true, true
        for i = 0, len - 1 do
            local found = false
            for a = 1, first - len do
                local same = true
                for k = 0, len - 1 do same = same and r[n][a + k] == r[n][first + k] end
                found = found or same
            end
            ok = ok and found
        end
    end
    local nl, ns = 0, 0
    for _ in pairs(lengths) do nl = nl + 1 end
    for _ in pairs(starts) do ns = ns + 1 end
    T.ok("induction: targets are the repeat's next tokens, the repeat is an earlier stretch", ok)
    T.ok("induction: repeat lengths vary (all of 3..6)", nl == 4, nl .. " lengths")
    T.ok("induction: repeat positions vary", ns >= 6, ns .. " starts")
    local dif = mha.tasks.difference{vocab = 8, len = 10, batch = 300, seed = 1}
    tok, tgt = dif:batch()
    r, g, ok = rows(tok), rows(tgt), true
    local seen = {}
    for n = 1, 300 do
        ok = ok and g[n][1] == 0 and g[n][2] == 0
        for p = 1, 10 do
            seen[r[n][p]] = true
            ok = ok and r[n][p] >= 1 and r[n][p] <= 8
            if p >= 3 then   -- x(p-1) - x(p-2) on a clock of 8, 8 for 0
                local d = r[n][p - 1] - r[n][p - 2]
                if d <= 0 then d = d + 8 end
                ok = ok and g[n][p] == d
            end
        end
    end
    T.ok("difference: targets are x(p-1) - x(p-2) in 1..8, the first two not counted", ok)
    T.eq("difference: every symbol 1..8 is drawn", #seen, 8)
    T.eq("difference: seed 1's first sequence", {r[1], g[1]},
         {{4, 6, 3, 2, 7, 1, 8, 1, 8, 5}, {0, 0, 2, 5, 7, 5, 2, 7, 1, 7}})
    T.eq("difference: its shape", {tok:shape(), tostring(dif)},
         {{300, 10}, "mha.tasks.difference{vocab = 8, len = 10, batch = 300} (sequences of 10 tokens)"})
    T.raises("difference: too short", function() mha.tasks.difference{len = 3} end,
             "tasks.difference: option len must be a whole number >= 4, got 3")
    local a1, a2 = mha.tasks.reverse{seed = 5}:batch(), mha.tasks.reverse{seed = 5}:batch()
    T.ok("a seed gives the same batch", mha.equal(a1, a2))
    local shown, old_print = {}, print
    print = function(...) shown[#shown + 1] = table.concat(table.pack(...), "\t") end
    local ok_show, err_show = pcall(function()
        mha.tasks.show(mha.tensor{{3, 10, 0}, {12, 4, 5}}, {title = "tokens"})
        mha.tasks.show({0, 7, 0}, {zero = "-"})
        mha.tasks.show(mha.tensor{100, 2})
    end)
    print = old_print
    assert(ok_show, err_show)
    T.eq("tasks.show: whole numbers, right-aligned, 0 as given", shown,
         {"tokens", " 3 10  0", "12  4  5", " -  7  -", "100   2"})
    T.raises("tasks.show: not whole", function() mha.tasks.show({{1.5}}) end,
             "tasks.show: ids must be whole numbers; ids[1][1] is 1.5")
    T.raises("tasks.show: 3-D", function() mha.tasks.show(mha.zeros(2, 2, 2)) end,
             "tasks.show: ids must be 1-D (L) or 2-D (N, L), got shape (2,2,2)")
    T.raises("tasks.show: a string", function() mha.tasks.show("3 4") end,
             "tasks.show: ids must be a tensor or a table of token ids, got string")
    T.raises("match needs distinct keys", function() mha.tasks.match{vocab = 4, len = 5} end,
             "tasks.match: len 5 pairs need 5 distinct keys but vocab 4 has only 3 symbols")
    T.raises("induction repeat", function() mha.tasks.induction{len = 10, ["repeat"] = {2, 6}} end,
             "tasks.induction: option repeat must be {min, max}")
    T.raises("task typo", function() mha.tasks.copy{lenght = 3} end, "tasks.copy: unknown option 'lenght'")
end)

T.test("train", function()
    local function run()
        mha.seed(4)
        local m = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 2, layers = 1, d_ff = 0, max_len = 8}
        local h = mha.train{model = m, task = mha.tasks.reverse{vocab = 8, len = 4, batch = 32}, steps = 150,
                            lr = 1e-2, log_every = 50, seed = 1, quiet = true}
        return h, m
    end
    local h1, m1 = run()
    local h2, m2 = run()
    T.eq("history rows", #h1.loss, 3)
    T.eq("same seed, same losses (bit for bit)", h1.loss, h2.loss)
    T.ok("same seed, same weights", mha.equal(m1.unembed.weight, m2.unembed.weight))
    T.ok("reverse learned (accuracy >= 0.95 in 150 steps)", h1.acc[3] >= 0.95, tostring(h1.acc[3]))
    T.ok("loss fell", h1.loss[3] < h1.loss[1] / 4, h1.loss[1] .. " -> " .. h1.loss[3])
    T.raises("train: task too long", function()
        mha.train{model = m1, task = mha.tasks.reverse{vocab = 8, len = 6}, steps = 1}
    end, "train: the task's sequences have 12 tokens but the model's max_len is 8")
    T.raises("train: typo", function() mha.train{model = m1, task = {}, step = 1} end,
        "train: unknown option 'step' (did you mean 'steps'?)")
    T.raises("loss: nothing counted", function() mha.train.loss(mha.zeros(1, 2, 3), {{0, 0}}) end,
             "train.loss: no position counts")
end)

-- Ctrl-C between log steps: the history's last row is the step reached, with the mean loss since
-- the last log step (what the progress line showed), as a run that ended there logs it
T.test("train interrupted between log steps", function()
    local function run(steps, stop_at)
        mha.seed(4)
        local m = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 2, layers = 1, d_ff = 0, max_len = 8}
        local task, calls = mha.tasks.reverse{vocab = 8, len = 4, batch = 32}, 0
        local stopping = setmetatable({batch = function(_, n)
            calls = calls + 1
            if calls == stop_at then error("interrupted") end   -- as Ctrl-C raises it
            return task:batch(n)
        end}, {__index = task})
        return mha.train{model = m, task = stopping, steps = steps, lr = 1e-2, log_every = 50, quiet = true}
    end
    -- at the prompt, train returns the history through the REPL's interrupt_later
    local registry = debug.getregistry()
    local saved_later = registry["mha.repl.interrupt_later"]
    registry["mha.repl.interrupt_later"] = function(...) return ... end
    local stopped = run(150, 78)         -- step 78's batch is interrupted: 77 steps done
    local ended = run(77)                -- the same 77 steps, ending there
    T.eq("interrupted", stopped.interrupted, true)
    T.eq("steps done", stopped.steps, 77)
    T.eq("the last row is the step reached", stopped.step, {50, 77})
    T.eq("its loss is the mean since the last log step", stopped.loss, ended.loss)
    T.eq("and its accuracy", stopped.acc, ended.acc)
    local at_log = run(150, 101)         -- stopped right after the log step 100: no row added
    registry["mha.repl.interrupt_later"] = saved_later
    T.eq("stopped at a log step: its row is the last", at_log.step, {50, 100})
end)

T.test("shipped models", function()
    local m = mha.load_model(T.path("models/induction.npz"))
    T.eq("induction model shape", {m.layers, m.heads, m.d_model, m.d_ff}, {2, 2, 32, 0})
    -- repeats of 10 and 11 tokens: the model trained on 3..8 only
    for _, r in ipairs({10, 11}) do
        local probe = mha.tasks.repeated(20, r, 16, 123)
        local prev = mha.heads.detect(m, probe, "previous")
        local ind = mha.heads.detect(m, probe, "induction")
        T.ok("previous-token head in layer 1 (>= 0.4), repeat " .. r, math.max(prev[1][1], prev[1][2]) >= 0.4)
        T.ok("induction head in layer 2 (>= 0.4), repeat " .. r, math.max(ind[2][1], ind[2][2]) >= 0.4)
        T.ok("no induction head in layer 1, repeat " .. r, math.max(ind[1][1], ind[1][2]) < 0.2)
    end
    -- heads.report speaks the printoptions' language (a Chinese lesson sets lang = "zh")
    local function report_text(lang)
        local saved, lines, old_print = mha.printoptions(), {}, print
        mha.printoptions{lang = lang}
        print = function(...) lines[#lines + 1] = table.concat(table.pack(...), "\t") end
        local old_output, heat_file = io.output(), os.tmpname()
        io.output(heat_file)   -- the heat maps go through io.write
        local ok, err = pcall(mha.heads.report, m, mha.tasks.repeated(20, 10, 4, 1))
        io.output():close()
        io.output(old_output)
        local f = assert(io.open(heat_file))
        lines[#lines + 1] = f:read("a")
        f:close()
        os.remove(heat_file)
        print = old_print
        mha.printoptions{lang = saved.lang}
        assert(ok, err)
        return table.concat(lines, "\n")
    end
    local en, zh = report_text("en"), report_text("zh")
    T.ok("report in English: kinds, layers", en:find("^previous    L1: %d") and en:find("\ninduction   L1: "), en)
    T.ok("report in Chinese: kinds and layers in Chinese",
         zh:find("^前一词元    第 1 层：%d") and zh:find("\n归纳        第 1 层：") and zh:find("\n第 2 层 ") and zh:find("\n +头1 头2\n"), zh)
    T.ok("report in Chinese: no English label", not (zh:find("previous") or zh:find("induction") or
         zh:find("layer") or zh:find("h1")), zh)
    -- one forward serves the report's three kinds, and each equals heads.detect's own forward
    local forwards = 0
    local counted = {forward = function(_, t) forwards = forwards + 1; return m:forward(t) end,
                     attention = function() return m:attention() end}
    local probe = mha.tasks.repeated(20, 10, 4, 1)
    local old_print, old_output, heat_file = print, io.output(), os.tmpname()
    print = function() end
    io.output(heat_file)
    local ok, result = pcall(mha.heads.report, counted, probe)
    io.output():close()
    io.output(old_output)
    os.remove(heat_file)
    print = old_print
    T.ok("report: it ran", ok, tostring(result))
    T.eq("report: one forward for the three kinds", forwards, 1)
    for _, kind in ipairs({"previous", "duplicate", "induction"}) do
        T.eq("report: " .. kind .. " as heads.detect gives it", ok and result[kind]:totable(),
             mha.heads.detect(m, probe, kind):totable())
    end
    local rev = mha.load_model(T.path("models/reverse.npz"))
    local tok, tgt = mha.tasks.reverse{vocab = 10, len = 6, batch = 500, seed = 4242}:batch()
    local _, acc = mha.train.loss(mha.no_grad(function() return rev:forward(tok) end), tgt)
    T.ok("reverse model: held-out accuracy >= 0.99", acc >= 0.99, tostring(acc))
    -- lesson 18: at equal cost (same parameters), 2 heads of 16 solve difference and 1 head of 32 does not
    local check_tok, check_tgt = mha.tasks.difference{vocab = 8, len = 12, batch = 1000, seed = 4242}:batch()
    local back1, back2 = mha.zeros(12, 12), mha.zeros(12, 12)
    for i = 3, 12 do back1[i][i - 1], back2[i][i - 2] = 1, 1 end
    local function measured(name)
        local m = mha.load_model(T.path("models/" .. name .. ".npz"))
        local count = 0
        for _, p in pairs(m:parameters()) do count = count + p:numel() end
        local _, a = mha.train.loss(mha.no_grad(function() return m:forward(check_tok) end), check_tgt)
        local w = m:attention()[1]
        local b1 = (w * back1):sum(4):max(2):narrow(2, 3, 10)
        local b2 = (w * back2):sum(4):max(2):narrow(2, 3, 10)
        return {heads = m.heads, params = count, acc = a, both = mha.minimum(b1, b2):mean():item()}
    end
    local one, two = measured("difference_1head"), measured("difference_2heads")
    T.eq("difference models: 1 and 2 heads, equal parameters", {one.heads, two.heads, one.params},
         {1, 2, two.params})
    T.ok("difference: 2 heads >= 99% held out", two.acc >= 0.99, tostring(two.acc))
    T.ok("difference: 1 head <= 70% held out (the gap >= 25 points)", one.acc <= 0.7 and two.acc - one.acc >= 0.25,
         tostring(one.acc))
    T.ok("difference: one head sees both tokens at most half (softmax sums to 1)", one.both <= 0.5, tostring(one.both))
    T.ok("difference: two heads see both tokens (>= 0.8)", two.both >= 0.8, tostring(two.both))
    T.raises("unknown model", function() mha.load_model("sorting") end,
             {"load_model: no model 'sorting' (available:", "make models"})
end)

T.done()
