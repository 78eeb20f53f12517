-- tests/lua/test_mlm.lua - masked (bidirectional) character models: Transformer:forward's
-- key_padding_mask against torch (tests/fixtures/mlm/, from tests/fixtures/gen/gen_mlm.py), the
-- tokenizer's mask marker in a checkpoint, mha.tasks.masked's 80/10/10 rule, mha.fill_mask.

local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha
local mlm = require "mha.mlm"

-- The options of each fixture (as in gen_mlm.py's CONFIGS).
local CONFIGS = {
    mlm_pre_learned = {vocab = 12, d_model = 16, heads = 4, layers = 2, d_ff = 32, max_len = 10,
                       causal = false, norm = "pre", pos = "learned"},
    mlm_rope = {vocab = 12, d_model = 16, heads = 2, layers = 2, d_ff = 24, max_len = 10,
                causal = false, norm = "pre", pos = "rope", rope_layout = "half"},
}

for _, name in ipairs({"mlm_pre_learned", "mlm_rope"}) do
    T.test(name, function()
        local c = CONFIGS[name]
        local fx = mha.load(T.path("tests/fixtures/mlm/" .. name .. ".npz"))
        local model = mha.nn.Transformer(c)
        local sd = {}
        for _, k in ipairs(model:parameter_names()) do sd[k] = fx[k] end
        model:load_state_dict(sd)
        local logits = model:forward(fx.tokens, {key_padding_mask = fx.padding})
        T.close(name .. ": logits with key_padding_mask = torch's", logits, fx.logits, 1e-4, 1e-5)
        for i = 1, c.layers do
            T.close(name .. ": attention layer " .. i .. " = torch's", model:attention()[i],
                    fx["attn." .. i], 1e-4, 1e-6)
        end
        T.close(name .. ": masked loss = torch's", mha.train.loss(logits, fx.targets), fx.loss,
                1e-4, 1e-6)
        -- the fused path (no weights) gives the same logits
        T.close(name .. ": need_weights = false", model:forward(fx.tokens,
                {key_padding_mask = fx.padding, need_weights = false}), fx.logits, 1e-4, 1e-5)
        -- a padded line's real positions equal the line run alone (line 2 has 5 characters)
        local alone = model:forward(fx.tokens[2]:narrow(1, 1, 5))
        T.close(name .. ": padded line = the line alone", logits[2]:narrow(1, 1, 5), alone[1],
                1e-4, 1e-5)
    end)
end

T.test("key_padding_mask errors", function()
    local m = mha.nn.Transformer{vocab = 5, d_model = 8, heads = 2, layers = 1, max_len = 6,
                                 causal = false}
    local x = mha.tensor({{1, 2, 3}, {2, 3, 1}})
    T.raises("float mask", function() m:forward(x, {key_padding_mask = mha.zeros(2, 3)}) end,
             "Transformer:forward: option key_padding_mask must be a bool tensor (N, L), true at " ..
             "padding, got float32")
    T.raises("wrong shape", function() m:forward(x, {key_padding_mask = mha.zeros(2, 4):bool()}) end,
             "Transformer:forward: key_padding_mask has shape (2,4); tokens (N, L) = (2, 3) need (2, 3)")
end)

T.test("tokenizer mask marker", function()
    local tok = mha.tokenizer.CharTokenizer("abc de\n", {mask = "[MASK]"})
    T.eq("mask id is the last id", {tok.mask_id, tok.vocab_size, tok.mask_token}, {8, 8, "[MASK]"})
    T.eq("characters keep their ids", tok.ids.a, 3)
    local ids = tok:encode("ab[MASK]c[MASK]")
    T.eq("the marker is one token", ids:totable(), {3, 4, 8, 5, 8})
    T.eq("decode writes the marker", tok:decode(ids), "ab[MASK]c[MASK]")
    T.eq("a marker at the start", tok:encode("[MASK]a"):totable(), {8, 3})
    T.eq("codepoints leave the marker out", tok:codepoints():size(1), 7)
    local zh = mha.tokenizer.CharTokenizer("\229\186\138\229\137\141", {mask = "[MASK]"})
    T.eq("Chinese around a marker", zh:encode("\229\186\138[MASK]\229\137\141"):totable(), {2, 3, 1})
    T.raises("marker is a character", function() mha.tokenizer.CharTokenizer("ab", {mask = "a"}) end,
             'CharTokenizer: option mask "a" is one of the text\'s characters')
    T.raises("marker empty", function() mha.tokenizer.CharTokenizer("ab", {mask = ""}) end,
             "CharTokenizer: option mask must be a non-empty UTF-8 string")
    T.eq("no marker by default", mha.tokenizer.CharTokenizer("ab").mask_id, nil)
end)

T.test("marker kept in a checkpoint", function()
    local base = os.tmpname()   -- the name reserved (an empty file), removed with the .npz
    local path = base .. ".npz"
    local tok = mha.tokenizer.CharTokenizer("abc de\n", {mask = "<?>"})
    local m = mha.nn.Transformer{vocab = tok.vocab_size, d_model = 8, heads = 2, layers = 1,
                                 max_len = 8, causal = false}
    mha.save_model(path, m, {tokenizer = tok})
    local _, extra = mha.load_model(path)
    T.eq("marker survives a load", {extra.tokenizer.mask_token, extra.tokenizer.mask_id,
                                    extra.tokenizer.vocab_size}, {"<?>", 8, 8})
    local plain = mha.tokenizer.CharTokenizer("abc de\n")
    local m2 = mha.nn.Transformer{vocab = plain.vocab_size, d_model = 8, heads = 2, layers = 1,
                                  max_len = 8}
    mha.save_model(path, m2, {tokenizer = plain})
    local _, extra2 = mha.load_model(path)
    T.eq("no marker: loads as before", {extra2.tokenizer.mask_id, extra2.tokenizer.vocab_size},
         {nil, 7})
    os.remove(path)
    os.remove(base)
end)

T.test("masked task: BERT's 80/10/10", function()
    local text = string.rep("abcdefghij\n", 200)
    local tok = mha.tokenizer.CharTokenizer(text, {mask = "[MASK]"})
    local task = mha.tasks.masked{text = text, tokenizer = tok, len = 40, batch = 50, seed = 5}
    local ids = tok:encode(text)
    local chosen, masked, kept, random, wrong_target, bad_rows = 0, 0, 0, 0, 0, 0
    for _ = 1, 40 do
        local tokens, targets = task:batch()
        local tk, tg = tokens:totable(), targets:totable()
        for n = 1, #tk do
            local row = 0
            for p = 1, 40 do
                if tg[n][p] ~= 0 then
                    chosen, row = chosen + 1, row + 1
                    if tk[n][p] == tok.mask_id then masked = masked + 1
                    elseif tk[n][p] == tg[n][p] then kept = kept + 1
                    else random = random + 1 end
                elseif tk[n][p] == tok.mask_id then
                    wrong_target = wrong_target + 1   -- a marker where nothing counts
                end
            end
            if row ~= 6 then bad_rows = bad_rows + 1 end
        end
    end
    -- 12000 chosen positions: a share's standard deviation is below 0.004, so 0.02 is 5 sigma
    T.eq("6 positions chosen per window (round(0.15 * 40))", bad_rows, 0)
    T.eq("chosen in all", chosen, 2000 * 6)
    T.close("80% masked", masked / chosen, 0.8, 0, 0.02)
    T.close("10% random", random / chosen, 0.1, 0, 0.02)   -- a random draw of the same id is 'kept'
    T.close("10% kept", kept / chosen, 0.1, 0, 0.02)
    T.eq("no marker outside the chosen positions", wrong_target, 0)
    -- deterministic from the seed
    local a = mha.tasks.masked{text = text, tokenizer = tok, len = 40, seed = 9}
    local b = mha.tasks.masked{text = text, tokenizer = tok, len = 40, seed = 9}
    local ta, ga = a:batch()
    local tb, gb = b:batch()
    T.eq("same seed, same batch", {ta:totable(), ga:totable()}, {tb:totable(), gb:totable()})
    T.ok("the text is the ids", ids:size(1) == #text)
    T.raises("no marker", function()
        mha.tasks.masked{text = text, tokenizer = mha.tokenizer.CharTokenizer(text)}
    end, "tasks.masked: the tokenizer has no mask marker")
    T.raises("bad p", function() mha.tasks.masked{text = text, p = 0} end,
             "tasks.masked: option p (the share of positions chosen) must be a number in (0, 1], got 0")
end)

-- A tiny bidirectional model trained in the test on a text where a character follows from both
-- neighbours (the alphabet, again and again).
local function tiny()
    local text = string.rep("abcdefghij\n", 300)
    local tok = mha.tokenizer.CharTokenizer(text, {mask = "[MASK]"})
    mha.manual_seed(1)
    local m = mha.nn.Transformer{vocab = tok.vocab_size, d_model = 32, heads = 2, layers = 1,
                                 max_len = 16, causal = false}
    local val = mha.tasks.masked{text = text:sub(1, 400), tokenizer = tok, len = 16, batch = 16}
    local h = mha.train{model = m, task = mha.tasks.masked{text = text, tokenizer = tok, len = 16,
                                                             batch = 16, p = 0.25},
                        steps = 150, lr = 1e-2, seed = 1, quiet = true, val = val, val_every = 75}
    return m, tok, text, h
end

T.test("fill_mask", function()
    local m, tok, text, h = tiny()
    T.eq("mha.train takes a masked task as val", h.val_step, {75, 150})
    T.ok("the validation loss falls", h.val_loss[2] < h.val_loss[1] and h.val_loss[2] < 0.5,
         table.concat(h.val_loss, " "))
    local r = mha.fill_mask(m, tok, "abc[MASK]efg")
    T.eq("one list for one marker", #r, 1)
    T.eq("d between c and e", r[1][1].token, "d")
    T.ok("d is likely", r[1][1].prob > 0.5, tostring(r[1][1].prob))
    T.eq("top_k 5 by default", #r[1], 5)
    local r2 = mha.fill_mask(m, tok, "[MASK]bcdef[MASK]h", {top_k = 2})
    T.eq("two markers, in order", {#r2, r2[1][1].token, r2[2][1].token, #r2[2]}, {2, "a", "g", 2})
    T.ok("probabilities fall", r2[1][1].prob >= r2[1][2].prob)
    T.ok("the table prints", tostring(r2):find("mask 2 of 2 (character 7)", 1, true) ~= nil,
         tostring(r2))
    local valid = text:sub(1, 200)
    T.close("accuracy on the alphabet", mlm.accuracy(m, tok, valid, {windows = 50, len = 16}), 1, 0,
            0.05)
    T.close("the bigram guess recovers it too", mlm.bigram_accuracy(text, valid, tok,
                                                                    {windows = 50, len = 16}), 1, 0, 0)
    -- errors
    T.raises("no marker", function() mha.fill_mask(m, tok, "abc") end,
             "fill_mask: the text has no mask marker; write [MASK] where a character is missing")
    T.raises("unknown character", function() mha.fill_mask(m, tok, "ab[MASK]z") end,
             'fill_mask: text character 4, "z" (U+007A), is not one of the tokenizer\'s 11 characters')
    T.raises("too long", function() mha.fill_mask(m, tok, string.rep("a", 20) .. "[MASK]") end,
             "fill_mask: the text is 21 characters long, longer than the model's max_len 16")
    local causal = mha.nn.Transformer{vocab = tok.vocab_size, d_model = 8, heads = 2, layers = 1,
                                      max_len = 16}
    T.raises("causal model", function() mha.fill_mask(causal, tok, "a[MASK]") end,
             "fill_mask: the model is causal (each position sees only the left)")
    T.raises("tokenizer without marker", function()
        mha.fill_mask(m, mha.tokenizer.CharTokenizer("abc"), "a")
    end, "fill_mask: tokenizer must be a CharTokenizer with a mask marker")
    T.raises("bad top_k", function() mha.fill_mask(m, tok, "a[MASK]", {top_k = 0}) end,
             "fill_mask: option top_k must be a whole number >= 1, got 0")
end)

-- A shipped masked model on held-out windows of its corpus's validation text, beside the two-sided
-- bigram guess on the same positions (ahead by at least margin); the same fill_mask on 1 and 2
-- threads. char_zh_mlm, of 26,611 training characters for 2,578 distinct ones, is only a little
-- ahead (docs/training.md).
local function check_shipped(name, corpus, probe, margin)
    local ok, model, extra = pcall(mha.load_model, name)
    if not ok then return T.skip(name, "not shipped: " .. tostring(model)) end
    local tok = extra.tokenizer
    T.eq(name .. ": bidirectional, with the marker", {model.causal, tok.mask_token, tok.mask_id},
         {false, "[MASK]", tok.vocab_size})
    local text = mha.data.text(corpus)
    local train, valid = mha.data.split(text, {val = 0.1})
    local opts = {windows = 200, len = 64, seed = 11}
    local acc = mlm.accuracy(model, tok, valid, opts)
    local bigram = mlm.bigram_accuracy(train, valid, tok, opts)
    T.ok(string.format("%s: recovers %.1f%% of held-out masked characters, bigram guess %.1f%%",
                       name, 100 * acc, 100 * bigram), acc > bigram + margin)
    local before = mha.threads(1)
    local one = tostring(mha.fill_mask(model, tok, probe))
    mha.threads(2)
    T.eq(name .. ": the same candidates on 1 and 2 threads", tostring(mha.fill_mask(model, tok, probe)),
         one)
    mha.threads(before)
end

T.test("the shipped masked models beat the two-sided bigram guess", function()
    local probe = "\229\186\138\229\137\141\230\152\142[MASK]\229\133\137"
    check_shipped("char_zh_mlm", "tang300", probe, 0.01)
    check_shipped("char_en_mlm", "kjv", "And God said, Let there be l[MASK]ght", 0.05)
end)

T.done()
