-- tests/lua/test_decode.lua - the Transformer as language models run it: kv_heads, RoPE, ALiBi, windows
-- against their PyTorch copy (tests/fixtures/gen/gen_transformer.py), the KV cache against the full forward,
-- generation with and without the cache, and the errors.

local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

-- The options of each fixture (as in gen_transformer.py's CONFIGS).
local CONFIGS = {
    rope_gqa = {vocab = 11, d_model = 16, heads = 4, kv_heads = 2, layers = 2, d_ff = 24, max_len = 12,
                causal = true, norm = "pre", pos = "rope", rope_layout = "half"},
    rope_mqa_window = {vocab = 9, d_model = 16, heads = 4, kv_heads = 1, layers = 2, d_ff = 0, max_len = 12,
                       causal = true, norm = "post", pos = "rope", rope_layout = "interleaved", window = 3, sinks = 1},
    alibi_gqa = {vocab = 10, d_model = 12, heads = 6, kv_heads = 3, layers = 2, d_ff = 16, max_len = 12,
                 causal = true, norm = "pre", pos = "alibi"},
}

for _, name in ipairs({"rope_gqa", "rope_mqa_window", "alibi_gqa"}) do
    T.test(name, function()
        local c = CONFIGS[name]
        local fx = mha.load(T.path("tests/fixtures/transformer/" .. name .. ".npz"))
        local model = mha.nn.Transformer(c)
        local sd = {}
        for _, k in ipairs(model:parameter_names()) do sd[k] = fx[k] end
        model:load_state_dict(sd)   -- strict: LLaMA's names, as the PyTorch copy has them
        local n_fx = 0
        for k in pairs(fx) do
            if not (k:match("^tokens") or k:match("^targets") or k:match("^logits") or k:match("^attn%.")
                    or k:match("^loss") or k:match("^grad%.")) then n_fx = n_fx + 1 end
        end
        T.eq(name .. ": same number of state_dict keys as PyTorch", #model:parameter_names(), n_fx)
        T.shape(name .. ": k_proj (H_kv·D, E)", model:parameters()["layers.0.attn.k_proj.weight"],
                {c.kv_heads * c.d_model // c.heads, c.d_model})
        local logits = model:forward(fx.tokens)
        T.close(name .. ": logits = torch's", logits, fx.logits, 1e-4, 1e-5)
        for i = 1, c.layers do
            T.close(name .. ": attention layer " .. i .. " = torch's", model:attention()[i], fx["attn." .. i],
                    1e-4, 1e-5)
        end
        local loss = mha.train.loss(logits, fx.targets)
        T.close(name .. ": masked loss = torch's", loss, fx.loss, 1e-4, 1e-6)
        loss:backward()
        T.close(name .. ": grad embed.weight = torch's", model.embed.weight:grad(), fx["grad.embed.weight"],
                1e-4, 1e-5)
        for _, p in ipairs({"q_proj", "k_proj"}) do
            local key = "layers.0.attn." .. p .. ".weight"
            T.close(name .. ": grad " .. key .. " = torch's", model:parameters()[key]:grad(), fx["grad." .. key],
                    1e-4, 1e-5)
        end
    end)
end

-- Tokens (N, L) as a table, the same for every model: 1-based ids below vocab.
local function tokens(N, L, vocab, seed)
    local t = {}
    for n = 1, N do
        t[n] = {}
        for i = 1, L do t[n][i] = (seed * 7 + n * 5 + i * i * 3) % vocab + 1 end
    end
    return t
end

-- The columns from..to of each row of t (N, L).
local function columns(t, from, to)
    local out = {}
    for n, row in ipairs(t) do out[n] = table.move(row, from, to, 1, {}) end
    return out
end

-- Feeds toks (N, L) in chunks (sizes in order) through a fresh cache; returns the logits (N, L, vocab).
local function cached_logits(model, toks, chunks)
    local cache, parts, at = model:new_cache(), {}, 1
    for _, size in ipairs(chunks) do
        parts[#parts + 1] = model:forward(columns(toks, at, at + size - 1), {cache = cache})
        at = at + size
    end
    return mha.cat(parts, 2), cache
end

T.test("cached decoding = the full forward", function()
    local L = 9
    for _, pos in ipairs({"learned", "sinusoidal", "rope", "rope_interleaved", "alibi", "none"}) do
        for _, kv in ipairs({4, 2, 1}) do
            for _, window in ipairs({false, true}) do
                mha.seed(11)
                local o = {vocab = 13, d_model = 16, heads = 4, kv_heads = kv, layers = 2, d_ff = 8, max_len = 16,
                           pos = pos == "rope_interleaved" and "rope" or pos}
                if pos:match("^rope") then o.rope_layout = pos == "rope" and "half" or "interleaved" end
                -- the cache holds sinks + W = 8 tokens, so nothing is dropped before position 9
                if window then o.window, o.sinks = 6, 2 end
                local model = mha.nn.Transformer(o)
                local toks = tokens(2, L, 13, kv)
                local full = model:forward(toks)
                local what = string.format("%s, kv_heads %d%s", pos, kv, window and ", window 6, sinks 2" or "")
                T.close(what .. ": one token a step", cached_logits(model, toks, {1, 1, 1, 1, 1, 1, 1, 1, 1}), full,
                        0, 1e-5)
                local chunked, cache = cached_logits(model, toks, {4, 1, 3, 1})
                T.close(what .. ": a prompt of 4, then 1, 3, 1", chunked, full, 0, 1e-5)
                T.eq(what .. ": length, bytes", {cache:length(), cache:bytes()},
                     {window and 8 or L, 4 * 2 * 2 * 2 * kv * 4 * (window and 8 or L)})
            end
        end
    end
end)

T.test("the cache written in place (no graph): the same logits, views of its first rows", function()
    for _, pos in ipairs({"learned", "rope"}) do
        mha.seed(12)
        local model = mha.nn.Transformer{vocab = 13, d_model = 16, heads = 4, kv_heads = 2, layers = 2,
                                         d_ff = 8, max_len = 40, pos = pos}
        local toks = tokens(2, 40, 13, 3)
        local steps = {}
        for i = 1, 40 do steps[i] = 1 end
        -- one token a step fills storage of max_len 40 rows
        for _, chunks in ipairs({steps, {20, 1, 19}}) do
            local recorded = cached_logits(model, toks, chunks)   -- joined by mha.cat
            local in_place, cache = mha.no_grad(cached_logits, model, toks, chunks)
            T.close(pos .. ": written in place = joined, bit for bit", in_place, recorded, 0, 0)
            T.eq(pos .. ": keys (N, H_kv, S, D), bytes of the 40 held", {cache:keys(2):shape(), cache:bytes()},
                 {{2, 2, 40, 4}, 4 * 2 * 2 * 2 * 2 * 4 * 40})
        end
        -- past the first 256 rows of storage: it grows to 512, then to max_len 600, keeping its rows
        local long = mha.nn.Transformer{vocab = 13, d_model = 8, heads = 2, layers = 1, d_ff = 0,
                                        max_len = 600, pos = pos}
        local lt = tokens(1, 590, 13, 5)
        local grown = {250}
        for i = 2, 12 do grown[i] = 1 end
        grown[13] = 329
        local joined = cached_logits(long, lt, grown)
        local written, lc = mha.no_grad(cached_logits, long, lt, grown)
        T.close(pos .. ": grown twice = joined, bit for bit", written, joined, 0, 0)
        T.eq(pos .. ": 590 held", lc:length(), 590)
        -- a step stopped in layer 2 leaves layer 1's held rows and the next step as they were
        local cache = model:new_cache()
        mha.no_grad(function() model:forward(columns(toks, 1, 5), {cache = cache}) end)
        local keys = cache:keys(1)
        local before = keys:clone()
        local block = model:blocks()[2]
        rawset(block, "forward", function() error("stopped") end)
        T.ok(pos .. ": the step fails", not pcall(mha.no_grad, model.forward, model, columns(toks, 6, 6),
                                                  {cache = cache}))
        rawset(block, "forward", nil)
        T.eq(pos .. ": it leaves the length", cache:length(), 5)
        local next_step = mha.no_grad(model.forward, model, columns(toks, 6, 7), {cache = cache})
        local full = model:forward(columns(toks, 1, 7))
        T.close(pos .. ": the next step = the full forward", next_step, full:narrow(2, 6, 2), 0, 1e-5)
        T.close(pos .. ": keys taken before are unchanged", keys, before, 0, 0)
    end
end)

T.test("cached attention weights and a windowed mask that bites", function()
    mha.seed(3)
    local model = mha.nn.Transformer{vocab = 7, d_model = 8, heads = 2, kv_heads = 1, layers = 1, d_ff = 0,
                                     max_len = 12, pos = "alibi", window = 2, sinks = 1}
    local toks = tokens(1, 6, 7, 1)
    model:forward(toks)
    local full = model:attention()[1]
    T.eq("query 6 does not see keys 2..4 (window 2, sink 1)", full[1][1][6]:totable(),
         {full[1][1][6][1], 0, 0, 0, full[1][1][6][5], full[1][1][6][6]})
    local cache = model:new_cache()
    model:forward(columns(toks, 1, 5), {cache = cache})
    T.eq("after 5 tokens the cache keeps the sink and the last 2", cache:length(), 3)
    T.eq("it has seen 5", cache:seen_tokens(), 5)
end)

T.test("a window decodes past max_len, positions inside the cache", function()
    mha.seed(5)
    local o = {vocab = 11, d_model = 16, heads = 4, kv_heads = 2, layers = 2, d_ff = 0, max_len = 8, window = 4,
               sinks = 1, pos = "none"}
    local model = mha.nn.Transformer(o)
    local toks = tokens(1, 20, 11, 2)
    -- without positions the window sees the same keys in the cache as in the full forward, for ever
    local full = mha.no_grad(function()
        local big = mha.nn.Transformer{vocab = 11, d_model = 16, heads = 4, kv_heads = 2, layers = 2, d_ff = 0,
                                       max_len = 20, window = 4, sinks = 1, pos = "none"}
        local sd = {}
        for _, k in ipairs(model:parameter_names()) do sd[k] = model:parameters()[k] end
        big:load_state_dict(sd)
        return big:forward(toks)
    end)
    local steps = {}
    for i = 1, 20 do steps[i] = 1 end
    local logits, cache = cached_logits(model, toks, steps)
    T.close("pos none: 20 tokens through a cache of max_len 8 = the full windowed forward", logits, full, 0, 1e-5)
    T.eq("the cache holds the sink and the last 4", {cache:length(), cache:seen_tokens()}, {5, 20})
    T.eq("and its bytes stay", cache:bytes(), 4 * 2 * 2 * 2 * 4 * 5)
    for _, pos in ipairs({"learned", "rope", "alibi"}) do
        o.pos = pos
        local m = mha.nn.Transformer(o)
        local out = m:generate({1, 2, 3}, {max_new_tokens = 30, seed = 2})
        T.eq(pos .. ": 33 tokens from a model of max_len 8", #out, 33)
    end
    T.ok("tostring names the window", tostring(cache):find("window 4, sinks 1", 1, true), tostring(cache))
end)

T.test("generate: the same tokens with and without the cache", function()
    local configs = {
        {vocab = 12, d_model = 16, heads = 2, layers = 2, max_len = 24},
        {vocab = 12, d_model = 16, heads = 4, kv_heads = 2, layers = 2, max_len = 24, pos = "rope"},
        {vocab = 12, d_model = 16, heads = 4, kv_heads = 1, layers = 1, max_len = 24, pos = "alibi"},
        {vocab = 12, d_model = 16, heads = 4, layers = 2, max_len = 24, pos = "sinusoidal", window = 30, sinks = 2},
    }
    for i, c in ipairs(configs) do
        mha.seed(i)
        local m = mha.nn.Transformer(c)
        for _, s in ipairs({{temperature = 0.8, top_k = 5}, {top_p = 0.9}, {temperature = 0}}) do
            local with = {max_new_tokens = 12, seed = 7, cache = true}
            local without = {max_new_tokens = 12, seed = 7, cache = false}
            for k, v in pairs(s) do with[k], without[k] = v, v end
            local a, b = m:generate({3, 1, 4}, with), m:generate({3, 1, 4}, without)
            T.eq(string.format("config %d, %s: with = without the cache", i, next(s)), a, b)
            T.eq(string.format("config %d: prompt kept, 12 new", i), {a[1], a[2], a[3], #a}, {3, 1, 4, 15})
        end
    end
    -- past the cache's first storage (256 rows): the one-token step grows it as append does
    mha.seed(3)
    local long = mha.nn.Transformer{vocab = 12, d_model = 16, heads = 2, layers = 2, max_len = 600}
    T.eq("400 tokens, past the first 256 rows of storage: with = without the cache",
         long:generate({1, 2}, {max_new_tokens = 400, seed = 5}),
         long:generate({1, 2}, {max_new_tokens = 400, seed = 5, cache = false}))
    mha.seed(1)
    local m = mha.nn.Transformer{vocab = 40, d_model = 64, heads = 4, kv_heads = 2, layers = 2, max_len = 128,
                                 pos = "rope"}
    local out = m:generate({1, 2, 3}, {max_new_tokens = 20, temperature = 0.8, top_k = 10, seed = 1})
    local ok = #out == 23
    for _, t in ipairs(out) do ok = ok and math.type(t) == "integer" and t >= 1 and t <= 40 end
    T.ok("issue 21's example: 3 + 20 ids in 1..40", ok, table.concat(out, " "))
    T.eq("a seed gives the same tokens", m:generate({1, 2, 3}, {max_new_tokens = 20, temperature = 0.8, top_k = 10,
                                                                seed = 1}), out)
    T.eq("a 1-D tensor prompt", #m:generate(mha.tensor{1, 2}, {max_new_tokens = 3}), 5)
    T.eq("max_new_tokens 0", m:generate({5}, {max_new_tokens = 0}), {5})
end)

T.test("generate: on_token sees each new token, false stops, roll decodes past max_len", function()
    mha.seed(3)
    local m = mha.nn.Transformer{vocab = 9, d_model = 16, heads = 2, layers = 2, max_len = 6}
    local seen = {}
    local out = m:generate({1, 2}, {max_new_tokens = 4, seed = 5,
                                    on_token = function(id) seen[#seen + 1] = id end})
    T.eq("on_token: the 4 new tokens in order", seen, {out[3], out[4], out[5], out[6]})
    T.eq("on_token changes no draw", m:generate({1, 2}, {max_new_tokens = 4, seed = 5}), out)
    local n = 0
    local short = m:generate({1, 2}, {max_new_tokens = 4, seed = 5,
                                      on_token = function() n = n + 1 return n < 2 end})
    T.eq("on_token returning false stops after that token", short, {1, 2, out[3], out[4]})
    -- roll against the same steps without a cache: the context since the last roll, which starts
    -- again at the last max_len // 2 = 3 tokens whenever the cache holds max_len = 6
    local rolled = m:generate({1, 2, 3, 4, 5, 6, 7, 8},
                              {max_new_tokens = 20, seed = 9, temperature = 0.9, roll = true})
    T.eq("roll: the prompt kept and 20 new tokens past max_len 6", {rolled[1], rolled[8], #rolled},
         {1, 8, 28})
    mha.seed(9)
    local toks, start = {1, 2, 3, 4, 5, 6, 7, 8}, 3
    mha.no_grad(function()
        for _ = 1, 20 do
            local ctx = {table.unpack(toks, start)}
            local logits = m:forward({ctx}, {need_weights = false})
            toks[#toks + 1] = mha.sample(logits[1][#ctx], {temperature = 0.9})
            if #ctx == 6 then start = #toks - 3 + 1 end
        end
    end)
    T.eq("roll: the same tokens as the full forward of each context", rolled, toks)
    T.raises("on_token not a function", function() m:generate({1}, {on_token = 3}) end,
             "Transformer:generate: option on_token must be a function(id), got number")
    T.raises("roll without the cache", function() m:generate({1}, {roll = true, cache = false}) end,
             "Transformer:generate: roll re-reads the text into the cache; leave cache on")
end)

T.test("cache:keys and cache:values: each layer's keys and values as attention reads them",
       function()
    mha.seed(4)
    local m = mha.nn.Transformer{vocab = 9, d_model = 16, heads = 4, kv_heads = 2, layers = 2,
                                 max_len = 8, pos = "rope"}
    local c = m:new_cache()
    T.raises("keys of an empty cache", function() c:keys(1) end,
             "KVCache:keys: the cache is empty; run model:forward(tokens, {cache = cache}) first")
    m:forward({{1, 2, 3}}, {cache = c})
    m:forward({{4}}, {cache = c})
    T.eq("keys (N, H_kv, S, D)", c:keys(2):shape(), {1, 2, 4, 4})
    T.eq("values (N, H_kv, S, D)", c:values(1):shape(), {1, 2, 4, 4})
    -- the keys of a fresh forward of the 4 tokens: layer 1's k_proj of the embeddings, turned by
    -- RoPE (layout "half", base 10000: the defaults)
    local x = m.embed(mha.tensor({{1, 2, 3, 4}}))
    local block = m:blocks()[1]
    local k = mha.rope(block.attn.k_proj(block.ln1(x)):view(1, 4, 2, 4):transpose(2, 3):contiguous())
    T.close("layer 1's keys = RoPE(k_proj(ln1(x))) of the 4 tokens", c:keys(1), k, 1e-5, 1e-6)
    T.raises("a layer past layers", function() c:values(3) end,
             "KVCache:values: layer must be a whole number from 1 to 2, got 3")
    T.raises("a layer that is not a number", function() c:keys("1") end,
             "KVCache:keys: layer must be a whole number from 1 to 2, got 1")
end)

T.test("training the modern options", function()
    for _, c in ipairs({{pos = "rope", kv_heads = 1}, {pos = "alibi", kv_heads = 2}, {window = 5, sinks = 1}}) do
        mha.seed(4)
        local o = {vocab = 8, d_model = 16, heads = 2, layers = 1, d_ff = 0, max_len = 8}
        for k, v in pairs(c) do o[k] = v end
        local m = mha.nn.Transformer(o)
        local h = mha.train{model = m, task = mha.tasks.copy{vocab = 8, len = 4, batch = 16}, steps = 40,
                            lr = 1e-2, log_every = 20, seed = 1, quiet = true}
        T.ok(string.format("%s: loss fell", o.pos or "window"), h.loss[2] < h.loss[1], h.loss[1] .. " -> " .. h.loss[2])
    end
end)

T.test("options and errors", function()
    local m = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 4, kv_heads = 2, max_len = 6, pos = "rope"}
    T.eq("fields", {m.kv_heads, m.heads, m.window}, {2, 4, nil})
    T.eq("config rebuilds it", m:config().kv_heads, 2)
    T.ok("the 2017 model keeps its config", mha.nn.Transformer{vocab = 8, d_model = 16, max_len = 6}:config()
         .kv_heads == nil)
    local fname = "nn.Transformer"
    local function new(extra)
        local o = {vocab = 8, d_model = 16, heads = 4, max_len = 6}
        for k, v in pairs(extra) do o[k] = v end
        return function() mha.nn.Transformer(o) end
    end
    T.raises("kv_heads divides heads", new{kv_heads = 3}, fname .. ": heads 4 must be a multiple of kv_heads 3")
    T.raises("RoPE needs an even head dim", new{d_model = 12, pos = "rope"},
             fname .. ': pos = "rope" needs an even head dim, got d_model 12 / heads 4 = 3')
    T.raises("rope_layout without rope", new{rope_layout = "half"}, fname .. ': option rope_layout needs pos = "rope"')
    T.raises("a bad layout", new{pos = "rope", rope_layout = "split"},
             fname .. ': option rope_layout must be one of "half", "interleaved", got split')
    T.raises("pos choice", new{pos = "rotary"},
             fname .. ': option pos must be one of "learned", "sinusoidal", "rope", "alibi", "none", got rotary')
    T.raises("a window < 1", new{window = 0}, fname .. ": option window must be a positive integer, got 0")
    T.raises("sinks without a window", new{sinks = 1}, fname .. ": option sinks needs a window")
    T.raises("negative sinks", new{window = 2, sinks = -1}, fname .. ": option sinks must be a whole number >= 0")
    T.raises("a window looks back", new{window = 2, causal = false}, fname .. ": a window needs causal = true")
    T.raises("no cache for a bidirectional model",
             function() mha.nn.Transformer{vocab = 8, d_model = 16, max_len = 6, causal = false}:new_cache() end,
             "Transformer:new_cache: a cache needs a causal model")
    local other = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 4, kv_heads = 2, max_len = 6, pos = "rope"}
    local cache = other:new_cache()
    T.raises("a cache fed to another model", function() m:forward({{1}}, {cache = cache}) end,
             "Transformer:forward: this cache belongs to another model; make one with model:new_cache()")
    T.raises("not a cache", function() m:forward({{1}}, {cache = {}}) end,
             "Transformer:forward: option cache must be a KV cache from model:new_cache(), got table")
    T.raises("forward option typo", function() m:forward({{1}}, {cahce = cache}) end,
             "Transformer:forward: unknown option 'cahce' (did you mean 'cache'?)")
    cache = m:new_cache()
    m:forward({{1, 2, 3, 4}}, {cache = cache})
    T.raises("decoding past max_len without a window", function() m:forward({{1, 2, 3}}, {cache = cache}) end,
             "Transformer:forward: the cache holds 4 tokens and 3 more would reach position 7, past max_len 6 " ..
             "(a model with a window = W keeps only the last W tokens and decodes on)")
    T.eq("a failed step leaves the cache as it was", cache:length(), 4)
    T.raises("another batch size", function() m:forward({{1}, {2}}, {cache = cache}) end,
             "Transformer:forward: the cache holds 1 sequence but the tokens have 2 rows")
    cache:reset()
    T.eq("reset empties it", {cache:length(), cache:bytes()}, {0, 0})
    T.raises("generate past max_len", function() m:generate({1, 2}, {max_new_tokens = 6}) end,
             "Transformer:generate: 2 prompt tokens and max_new_tokens 6 need 7 positions (the 2 prompt tokens " ..
             "and the first 5 new ones are read back in; the last new one never is), past max_len 6 " ..
             "(roll = true writes on past it, reading the last half of the text again; a model with a window = W decodes on)")
    -- 3 + 40 = 43 tokens, 42 positions: the message says why one less
    local m24 = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 4, max_len = 24}
    local msg = T.errmsg(function() m24:generate({1, 2, 3}, {max_new_tokens = 40}) end)
    T.ok("3 prompt tokens and 40 new ones need 42 positions: " .. msg, msg:find("3 prompt tokens and max_new_tokens 40 " ..
         "need 42 positions (the 3 prompt tokens and the first 39 new ones are read back in; the last new one never " ..
         "is), past max_len 24", 1, true) ~= nil)
    T.eq("in Chinese, a line under it", require("mha.repl.habits").zh_line(msg),
         "提示：3 个提示词元加 max_new_tokens 40 需要 42 个位置：提示词元和前 39 个新词元都要再读入模型，" ..
         "最后一个新词元只生成、不读入；超过了 max_len 24")
    T.raises("generate: empty prompt", function() m:generate({}) end,
             "Transformer:generate: prompt must be a non-empty table of 1-based token ids, e.g. {1, 2, 3}, " ..
             "got an empty table")
    T.raises("generate: id out of range", function() m:generate({9}) end,
             "Transformer:generate: prompt[1] is 9; token ids run from 1 to vocab 8")
    T.raises("generate: sample's check", function() m:generate({1}, {max_new_tokens = 2, top_p = 2}) end,
             "Transformer:generate: sample: top_p must be in (0, 1], got 2")
    T.raises("generate: typo", function() m:generate({1}, {max_tokens = 2}) end,
             "Transformer:generate: unknown option 'max_tokens'")
end)

-- A checkpoint keeps every option of a model of today (mha.save_model / load_model): the same config and,
-- from the same weights, the same logits bit for bit.
T.test("save_model keeps kv_heads, positions, windows", function()
    local base = os.tmpname()
    local path = base .. ".npz"
    for _, o in ipairs({
        {vocab = 11, d_model = 16, heads = 4, kv_heads = 2, layers = 2, max_len = 32, pos = "rope",
         rope_layout = "interleaved", rope_base = 500},
        {vocab = 11, d_model = 16, heads = 4, kv_heads = 1, layers = 1, max_len = 16, pos = "alibi",
         window = 4, sinks = 1},
        {vocab = 11, d_model = 16, heads = 2, layers = 1, max_len = 16, pos = "none"},
    }) do
        mha.seed(3)
        local m = mha.nn.Transformer(o)
        mha.save_model(path, m)
        local m2 = mha.load_model(path)
        T.eq(o.pos .. ": the loaded config", m2:config(), m:config())
        local t = {{1, 2, 3, 4, 5, 6}}
        T.eq(o.pos .. ": the same logits", m2:forward(t):totable(), m:forward(t):totable())
    end
    os.remove(path)
    os.remove(base)
end)

-- generate's one-token step (step_plan in lua/nn/transformer.lua, fewer ops, no module calls) gives
-- forward's logits bit for bit on every model of the 2017 kind, and declines the others.
T.test("generate's step = forward with a cache, bit for bit", function()
    local step_plan = require("mha.nn.transformer").step_plan
    local function bits(t)
        local out = {}
        for i, x in ipairs(t:reshape(-1):totable()) do out[i] = string.pack("<f", x) end
        return table.concat(out)
    end
    for _, o in ipairs({
        {norm = "pre", pos = "learned", d_ff = 24, heads = 4},
        {norm = "post", pos = "sinusoidal", d_ff = 24, heads = 2},
        {norm = "none", pos = "none", d_ff = 0, heads = 1},
        {norm = "pre", pos = "none", d_ff = 0, heads = 8},
        -- 250 prompt tokens: the steps pass the first 256 rows of the cache's storage, which grows
        {norm = "pre", pos = "learned", d_ff = 8, heads = 2, max_len = 300, prompt = 250},
    }) do
        mha.seed(21)
        local m = mha.nn.Transformer{vocab = 13, d_model = 16, heads = o.heads, layers = 2, d_ff = o.d_ff,
                                     max_len = o.max_len or 40, norm = o.norm, pos = o.pos}
        local what = string.format("norm %s, pos %s, d_ff %d, heads %d", o.norm, o.pos, o.d_ff, o.heads)
        mha.no_grad(function()
            local step = step_plan(m)
            T.ok(what .. ": a step plan", step ~= nil)
            local c1, c2 = m:new_cache(), m:new_cache()
            local prompt = {}
            for n = 1, o.prompt or 3 do prompt[n] = n % 13 + 1 end
            m:forward({prompt}, {cache = c1, need_weights = false})
            m:forward({prompt}, {cache = c2, need_weights = false})
            local same = true
            for n = 1, 30 do
                local id = (n * 5) % 13 + 1
                local a = step(id, c1)
                local b = m:forward({{id}}, {cache = c2, need_weights = false})
                same = same and bits(a) == bits(b) and T.deep_equal(a:shape(), b:shape())
            end
            T.ok(what .. ": 30 steps, the same logits bit for bit", same)
            T.eq(what .. ": the same cache", {c1:length(), c1:bytes(), bits(c1:keys(2)), bits(c1:values(1))},
                 {c2:length(), c2:bytes(), bits(c2:keys(2)), bits(c2:values(1))})
        end)
    end
    mha.seed(22)
    local llama = mha.nn.Transformer{vocab = 13, d_model = 16, heads = 4, kv_heads = 2, layers = 1, max_len = 8}
    T.ok("a LLaMA-style model runs forward", step_plan(llama) == nil)
    local m = mha.nn.Transformer{vocab = 13, d_model = 16, heads = 4, layers = 2, max_len = 8}
    local Mine = mha.nn.Linear:extend("Mine")
    function Mine:forward(x) return mha.linear(x, self.weight, self.bias) * 2 end
    m:blocks()[2].mlp.fc2 = Mine{in_features = 64, out_features = 16}
    T.ok("a block with a module of another class runs forward", step_plan(m) == nil)
    local out = m:generate({1, 2}, {max_new_tokens = 5, seed = 3})
    T.eq("and generates as without the cache", m:generate({1, 2}, {max_new_tokens = 5, seed = 3, cache = false}),
         out)
end)

-- copy_ between views whose rows are contiguous (the cache's writes) goes a row at a time: the same
-- elements as one at a time, broadcasting, and a source overlapping its destination read first.
T.test("copy_ row by row", function()
    local src = mha.arange(0, 2 * 3 * 5):view(2, 3, 5)
    local buf = mha.zeros(2, 4, 6, 5)
    buf:narrow(2, 2, 3):narrow(3, 4, 1):copy_(src:view(2, 3, 1, 5))
    T.eq("into rows of a 4-D buffer", buf:narrow(2, 2, 3):narrow(3, 4, 1):reshape(2, 3, 5):totable(), src:totable())
    T.eq("nothing else written", buf:sum():item(), src:sum():item())
    local wide = mha.zeros(3, 7)
    wide:narrow(2, 2, 5):copy_(src[1])
    T.eq("from a view into a narrowed one", wide:narrow(2, 2, 5):totable(), src[1]:totable())
    wide:narrow(2, 2, 5):copy_(mha.tensor({1, 2, 3, 4, 5}))
    T.eq("a broadcast row", wide[3]:totable(), {0, 1, 2, 3, 4, 5, 0})
    local t = mha.arange(0, 12):view(3, 4)
    t:narrow(1, 2, 2):copy_(t:narrow(1, 1, 2):clone())
    T.eq("rows shifted down", t:totable(), {{0, 1, 2, 3}, {0, 1, 2, 3}, {4, 5, 6, 7}})
    local u = mha.zeros(4, 3)
    u:copy_(mha.arange(0, 12):view(3, 4):transpose(1, 2))
    T.eq("a transposed source (column by column)", u:totable(), {{0, 4, 8}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}})
end)

T.done()
