-- tests/lua/test_interp.lua - the hook points (lua/nn/hooks.lua) and mha.interp (lua/interp/) against their
-- PyTorch copy (tests/fixtures/interp/, from tests/fixtures/gen/gen_interp.py, torch 1.13), and the exact
-- identities of issue 23: identity hooks, ablation through hook_z, whole-layer patching, the logit lens's last
-- layer, attributions summing to the logit; errors that leave the model as it was.

local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

-- The options of each fixture (as in gen_interp.py's CONFIGS).
local CONFIGS = {
    pre_mlp = {vocab = 11, d_model = 16, heads = 4, layers = 2, d_ff = 24, max_len = 12, norm = "pre",
               pos = "learned"},
    none_attnonly = {vocab = 9, d_model = 12, heads = 3, layers = 2, d_ff = 0, max_len = 10, norm = "none",
                     pos = "learned"},
    post_mlp_sin = {vocab = 7, d_model = 12, heads = 2, layers = 2, d_ff = 16, max_len = 10, norm = "post",
                    pos = "sinusoidal"},
    rope_gqa = {vocab = 11, d_model = 16, heads = 4, kv_heads = 2, layers = 2, d_ff = 24, max_len = 12,
                norm = "pre", pos = "rope", rope_layout = "half"},
}
local ORDER = {"pre_mlp", "none_attnonly", "post_mlp_sin", "rope_gqa"}

-- The fixture's model with torch's weights, and the fixture.
local function fixture_model(name)
    local fx = mha.load(T.path("tests/fixtures/interp/" .. name .. ".npz"))
    local model = mha.nn.Transformer(CONFIGS[name])
    local sd = {}
    for _, k in ipairs(model:parameter_names()) do sd[k] = fx[k] end
    model:load_state_dict(sd)
    return model, fx
end

local function max_diff(a, b) return (a - b):abs():max():item() end

for _, name in ipairs(ORDER) do
    T.test(name, function()
        local model, fx = fixture_model(name)
        local logits, cache = model:run_with_cache(fx.tokens)
        T.close(name .. ": logits = torch's", logits, fx.logits, 1e-4, 1e-5)
        local names, n_fx = model:hook_names(), 0
        for k in pairs(fx) do if k:match("^act%.") then n_fx = n_fx + 1 end end
        T.eq(name .. ": hook_names() are the names of the PyTorch copy", #names, n_fx)
        for _, n in ipairs(names) do
            T.close(name .. ": " .. n .. " = torch's", cache[n], fx["act." .. n], 1e-4, 1e-5)
        end
        for l = 1, model.layers do
            T.ok(name .. ": hook_pattern of layer " .. l .. " is model:attention()",
                 mha.equal(cache["blocks." .. (l - 1) .. ".attn.hook_pattern"], model:attention()[l]))
        end
        local lens = mha.interp.logit_lens(model, fx.tokens)
        T.close(name .. ": logit lens = torch's", lens, fx.lens, 1e-4, 1e-5)
        T.ok(name .. ": the logit lens's last layer is the logits, bit for bit",
             mha.equal(lens[model.layers + 1], model:forward(fx.tokens)))
        if fx["attr.heads"] then
            local a = mha.interp.attribution(model, fx.tokens, fx.target)
            for _, k in ipairs({"heads", "mlp", "embed", "pos", "bias"}) do
                if fx["attr." .. k] then
                    T.close(name .. ": attribution " .. k .. " = torch's", a[k], fx["attr." .. k], 1e-4, 1e-5)
                end
            end
            local total = a.heads:sum(1):sum(1) + a.embed + a.bias
            if a.mlp then total = total + a.mlp:sum(1) end
            if a.pos then total = total + a.pos end
            T.close(name .. ": Σ attributions + bias terms = the target's logit", total, a.logit, 1e-4, 1e-4)
            local row = mha.interp.attribution(model, fx.tokens[1], fx.target[1])
            T.close(name .. ": one sequence's targets as (L)", row.logit, a.logit:narrow(1, 1, 1), 1e-5, 1e-5)
        end
    end)
end

-- The opened attention on the other attentions of tests/fixtures/transformer/ (gen_transformer.py): ALiBi,
-- a window with a sink over RoPE's streamed keys, MQA, a bidirectional model.
local MORE = {
    alibi_gqa = {vocab = 10, d_model = 12, heads = 6, kv_heads = 3, layers = 2, d_ff = 16, max_len = 12,
                 norm = "pre", pos = "alibi"},
    rope_mqa_window = {vocab = 9, d_model = 16, heads = 4, kv_heads = 1, layers = 2, d_ff = 0, max_len = 12,
                       norm = "post", pos = "rope", rope_layout = "interleaved", window = 3, sinks = 1},
    none_bidir = {vocab = 9, d_model = 8, heads = 2, layers = 1, d_ff = 16, max_len = 8, causal = false,
                  norm = "none", pos = "learned"},
}
for _, name in ipairs({"alibi_gqa", "rope_mqa_window", "none_bidir"}) do
    T.test("opened attention: " .. name, function()
        local fx = mha.load(T.path("tests/fixtures/transformer/" .. name .. ".npz"))
        local model = mha.nn.Transformer(MORE[name])
        local sd = {}
        for _, k in ipairs(model:parameter_names()) do sd[k] = fx[k] end
        model:load_state_dict(sd)
        local logits, cache = model:run_with_cache(fx.tokens)
        T.close(name .. ": logits with every layer opened = torch's", logits, fx.logits, 1e-4, 1e-5)
        for l = 1, MORE[name].layers do
            T.close(name .. ": hook_pattern of layer " .. l .. " = torch's",
                    cache["blocks." .. (l - 1) .. ".attn.hook_pattern"], fx["attn." .. l], 1e-4, 1e-5)
        end
    end)
end

-- nn.MultiheadAttention's key_padding_mask in a block's context: the opened attention hides those keys as the
-- module's own forward does.
T.test("opened attention with a key_padding_mask", function()
    local model, fx = fixture_model("pre_mlp")
    local block = model:blocks()[1]
    local x = mha.randn(2, 5, 16)
    local padding = mha.tensor {{false, false, false, true, true}, {false, false, false, false, false}}
    local opts = {attn_mask = mha.causal_mask(5), key_padding_mask = padding, need_weights = true,
                  average_attn_weights = false}
    local want_out, want_w = block.attn:forward(x, x, x, opts)
    local run = require("mha.nn.hooks").new_run(model, "test", nil, {})
    local out, w = run:attention(block, x, {attn_opts = opts}, "blocks.0.")
    T.close("output with padding = the module's", out, want_out, 1e-5, 1e-6)
    T.close("pattern with padding = the module's", w, want_w, 1e-5, 1e-6)
end)

-- hooks on every name that hand back their input: the logits of the plain forward, bit for bit
T.test("identity hooks", function()
    for _, name in ipairs(ORDER) do
        local model, fx = fixture_model(name)
        local plain = model:forward(fx.tokens)
        local outside, all = {}, {}
        for _, n in ipairs(model:hook_names()) do
            local id = function(t) return t end
            all[n] = id
            if not n:match("%.attn%.hook_") then outside[n] = id end
        end
        T.ok(name .. ": identity hooks outside the attention: the same bits",
             mha.equal(model:run_with_hooks(fx.tokens, outside), plain))
        T.ok(name .. ": a cache of every name: the same logits bits",
             mha.equal(model:run_with_cache(fx.tokens, {names = {"blocks.0.hook_resid_pre"}}), plain))
        -- every layer opened: q, k, v ... computed with mha ops; the fused kernel's to rounding
        local opened = model:run_with_hooks(fx.tokens, all)
        local d = max_diff(opened, plain)
        print(string.format("# %s: opened attention vs fused: max |logits diff| = %.3g", name, d))
        T.ok(name .. ": opened attention = fused to 1e-5", d <= 1e-5, "max diff " .. d)
    end
end)

T.test("ablation through hook_z = zeroed columns of W_O", function()
    local model, fx = fixture_model("pre_mlp")
    local D = model.d_model // model.heads
    for layer = 1, model.layers do
        for head = 1, model.heads do
            local got = mha.interp.ablate(model, fx.tokens, {layer = layer, head = head})
            local ref = fixture_model("pre_mlp")
            local wo = ref:blocks()[layer].attn.out_proj_weight
            mha.no_grad(function() wo:narrow(2, (head - 1) * D + 1, D):zero_() end)
            T.close(string.format("zero-ablate layer %d head %d = W_O columns zeroed", layer, head),
                    got, ref:forward(fx.tokens), 0, 1e-6)
        end
    end
    -- mean ablation over the tokens themselves with one sequence: z of the head replaced by itself
    local one = fx.tokens:narrow(1, 1, 1)
    T.ok("mean-ablating over the batch of one sequence changes nothing",
         mha.equal(mha.interp.ablate(model, one, {layer = 1, head = 2, kind = "mean"}),
                   model:run_with_hooks(one, {["blocks.0.attn.hook_z"] = function(z) return z end})))
    local all = mha.interp.ablate(model, fx.tokens, {layer = 2})
    local z_ablated = model:run_with_hooks(fx.tokens, {["blocks.1.attn.hook_z"] = function(z) return z * 0 end})
    T.ok("head = nil ablates every head of the layer", mha.equal(all, z_ablated))
end)

T.test("patching", function()
    local model, fx = fixture_model("pre_mlp")
    local clean, corrupt = fx.tokens:narrow(1, 1, 1), fx.tokens:narrow(1, 2, 1)
    local _, cache = model:run_with_cache(clean)
    local plain_clean = model:forward(clean)
    for l = 0, model.layers - 1 do
        for _, inner in ipairs({"hook_resid_pre", "hook_resid_mid"}) do
            local n = "blocks." .. l .. "." .. inner
            local got = model:run_with_hooks(corrupt, {[n] = function() return cache[n] end})
            T.ok("patching all of " .. n .. " gives the clean logits exactly", mha.equal(got, plain_clean))
        end
    end
    local L = clean:shape()[2]
    local function metric(logits) return logits[1][L][3] - logits[1][L][5] end
    local per_layer = mha.interp.patch(model, clean, corrupt, "hook_resid_pre", metric)
    T.close("patch resid_pre of a whole layer scores 1", per_layer, {1, 1}, 0, 1e-6)
    local per_pos = mha.interp.patch(model, clean, corrupt, "blocks.{l}.hook_resid_pre", metric, {positions = true})
    T.shape("patch per position", per_pos, {2, L})
    for p = 1, L do
        if clean[1][p] == corrupt[1][p] then
            T.eq("patching layer 1's resid_pre where the tokens agree (position " .. p .. ") scores 0",
                 per_pos[1][p], 0)
        end
    end
    local per_head = mha.interp.patch(model, clean, corrupt, "attn.hook_z", metric, {heads = true})
    T.shape("patch per head", per_head, {2, 4})
    local both = mha.interp.patch(model, clean, corrupt, "attn.hook_z", metric, {heads = true, positions = true})
    T.shape("patch per position and head", both, {2, L, 4})
    T.raises("patch heads of a name without heads", function()
        mha.interp.patch(model, clean, corrupt, "hook_resid_pre", metric, {heads = true})
    end, "mha.interp.patch: option heads needs a name with a head axis")
    T.raises("patch an unknown name", function()
        mha.interp.patch(model, clean, corrupt, "hook_resid_pr", metric)
    end, "did you mean 'blocks.0.hook_resid_pre'?")
    T.raises("patch tokens of two shapes", function()
        mha.interp.patch(model, clean, clean:narrow(2, 1, 3), "hook_resid_pre", metric)
    end, string.format("mha.interp.patch: clean and corrupt tokens must have the same shape, got " ..
                       "(%d,%d) and (%d,3)", clean:size(1), clean:size(2), clean:size(1)))
end)

T.test("gradients through a replacement", function()
    local model, fx = fixture_model("pre_mlp")
    model:forward(fx.tokens):sum():backward()
    local plain = model.unembed.weight:grad():clone()
    model:zero_grad()
    local logits = model:run_with_hooks(fx.tokens, {["ln_final.hook_normalized"] = function(t) return t * 2 end})
    logits:sum():backward()
    T.ok("doubling ln_final's output doubles unembed's gradient", mha.equal(model.unembed.weight:grad(), plain * 2))
    model:zero_grad()
    model:run_with_hooks(fx.tokens, {["blocks.0.attn.hook_z"] = function(z) return z * 1 end}):sum():backward()
    local inner
    local outer = model:run_with_hooks(fx.tokens, {["blocks.0.hook_resid_pre"] = function()
        inner = model:forward(fx.tokens, {need_weights = false})
    end})
    T.ok("a forward inside a hook runs plain (no hook points of its own)",
         mha.equal(inner, outer) and rawget(model, "_hooks") == nil)
    T.ok("a gradient reaches in_proj through an opened attention",
         model:parameters()["layers.0.attn.in_proj_weight"]:grad():abs():sum():item() > 0)
end)

T.test("errors leave the model unchanged", function()
    local model, fx = fixture_model("pre_mlp")
    local before = model:forward(fx.tokens)
    local maps = model:attention()[1]:clone()
    local sd = {}
    for k, v in pairs(model:state_dict()) do sd[k] = v:clone() end
    T.raises("unknown name", function()
        model:run_with_hooks(fx.tokens, {["blocks.0.attn.hook_patern"] = print})
    end, "Transformer:run_with_hooks: no activation named 'blocks.0.attn.hook_patern'; " ..
         "did you mean 'blocks.0.attn.hook_pattern'?")
    T.raises("a name without its block", function()
        model:run_with_cache(fx.tokens, {names = {"hook_z"}})
    end, "did you mean 'blocks.0.attn.hook_z'?")
    local _, kept = model:run_with_cache(fx.tokens, {names = {"hook_embed"}})
    T.raises("a cache read at a misspelt name", function() return kept["blocks.1.hook_mlp_ot"] end,
             "cache: no activation named 'blocks.1.hook_mlp_ot'; did you mean 'blocks.1.hook_mlp_out'?")
    T.raises("a cache read at a name not kept", function() return kept["blocks.1.hook_mlp_out"] end,
             "cache: 'blocks.1.hook_mlp_out' was not kept")
    T.raises("wrong shape", function()
        model:run_with_hooks(fx.tokens, {["blocks.1.attn.hook_z"] = function(z) return z:narrow(3, 1, 2) end})
    end, "Transformer:run_with_hooks: the hook of 'blocks.1.attn.hook_z' returned shape (2,11,2,4); " ..
         "the activation is (2,11,4,4)")
    T.raises("a hook that fails", function()
        model:run_with_hooks(fx.tokens, {["blocks.1.hook_mlp_out"] = function() error("boom") end})
    end, {"Transformer:run_with_hooks: the hook of 'blocks.1.hook_mlp_out' failed:", "boom"})
    T.raises("a hook that returns a number", function()
        model:run_with_hooks(fx.tokens, {["hook_embed"] = function() return 1 end})
    end, "the hook of 'hook_embed' must return nil or a tensor, got number")
    T.raises("not a function", function() model:run_with_hooks(fx.tokens, {hook_embed = 3}) end,
             "the hook of 'hook_embed' must be a function(t, name), got number")
    T.raises("tokens too long", function() model:run_with_cache(mha.ones(1, 20)) end,
             "Transformer:run_with_cache: Transformer:forward: tokens have length 20, longer than max_len 12")
    T.raises("ablate layer out of range", function() mha.interp.ablate(model, fx.tokens, {layer = 3}) end,
             "mha.interp.ablate: option layer must be a whole number from 1 to 2, got 3")
    T.raises("ablate kind", function() mha.interp.ablate(model, fx.tokens, {layer = 1, kind = "max"}) end,
             'mha.interp.ablate: option kind must be "zero" or "mean", got max')
    T.raises("attribution of a post-norm model", function()
        mha.interp.attribution(fixture_model("post_mlp_sin"), {{1, 2}}, 3)
    end, 'mha.interp.attribution: a model with norm = "post"')
    T.ok("the attention maps are those of the last forward that succeeded", mha.equal(model:attention()[1], maps))
    local same = true
    for k, v in pairs(model:state_dict()) do same = same and mha.equal(v, sd[k]) end
    T.ok("the parameters are unchanged", same)
    T.ok("the forward is unchanged, bit for bit", mha.equal(model:forward(fx.tokens), before))
    T.ok("the model keeps no hooks", rawget(model, "_hooks") == nil)
end)

-- The shipped induction model: knocking out layer 2's heads takes its accuracy on repeated halves to chance.
T.test("induction model", function()
    local m = mha.load_model("induction")
    mha.seed(23)
    local half = 8
    local draws, rows = mha.rand(16, half), {}
    for n = 1, 16 do
        local r = {}
        for i = 1, half do r[i] = math.floor(draws[n][i] * m.vocab) + 1 end
        for i = 1, half do r[half + i] = r[i] end
        rows[n] = r
    end
    local tokens = mha.tensor(rows)
    local function accuracy(logits)   -- predicting token i+1 from position i in the second half
        local hit, total = 0, 0
        local pred = logits:argmax(3)
        for n = 1, #rows do
            for i = half + 1, 2 * half - 1 do
                total = total + 1
                if pred[n][i] == rows[n][i + 1] then hit = hit + 1 end
            end
        end
        return hit / total
    end
    local plain = accuracy(m:forward(tokens))
    local knocked = accuracy(mha.interp.ablate(m, tokens, {layer = 2}))
    print(string.format("# induction: accuracy %.2f, layer 2 ablated %.2f", plain, knocked))
    T.ok("the induction model copies the repeated half", plain > 0.8, "accuracy " .. plain)
    T.ok("ablating layer 2's heads takes it near chance", knocked < 0.3, "accuracy " .. knocked)
end)


-- TransformerLens's keyword form {fwd_hooks = {{name, fn}, ...}} and run_with_cache's hooks option.
T.test("run_with_hooks in TransformerLens's form", function()
    local model, fx = fixture_model("pre_mlp")
    local zero = function(z) return z * 0 end
    local plain = model:run_with_hooks(fx.tokens, {["blocks.0.attn.hook_z"] = zero})
    T.ok("fwd_hooks = {{name, fn}} = {[name] = fn}", mha.equal(plain,
         model:run_with_hooks(fx.tokens, {fwd_hooks = {{"blocks.0.attn.hook_z", zero}}})))
    T.ok("hooks = {[name] = fn} = {[name] = fn}", mha.equal(plain,
         model:run_with_hooks(fx.tokens, {hooks = {["blocks.0.attn.hook_z"] = zero}})))
    local seen = {}
    local filtered = model:run_with_hooks(fx.tokens, {fwd_hooks = {
        {function(n) return n:match("hook_z$") ~= nil end, function(_, n) seen[#seen + 1] = n end},
        {"blocks.0.attn.hook_z", zero}}})
    T.ok("a filter hooks every name it accepts; a second hook on a name runs after the first",
         mha.equal(filtered, plain) and #seen == 2, table.concat(seen, " "))
    T.raises("fwd_hooks entry without a function", function()
        model:run_with_hooks(fx.tokens, {fwd_hooks = {{"blocks.0.attn.hook_z"}}})
    end, "Transformer:run_with_hooks: fwd_hooks[1] must be {name, function(t, name) ... end}")
    T.raises("fwd_hooks mixed with names", function()
        model:run_with_hooks(fx.tokens, {fwd_hooks = {}, hook_embed = zero})
    end, "not a mix (found 'hook_embed')")
end)

-- patch runs its name at every layer: one block's name is refused, not read as every layer's.
T.test("patch given one block's name", function()
    local model, fx = fixture_model("pre_mlp")
    local clean, corrupt = fx.tokens:narrow(1, 1, 1), fx.tokens:narrow(1, 2, 1)
    T.raises("patch given blocks.0.hook_resid_post", function()
        mha.interp.patch(model, clean, corrupt, "blocks.0.hook_resid_post", function(lg) return lg[1][1][3] end)
    end, 'mha.interp.patch: name "blocks.0.hook_resid_post" names one block, but patch patches each ' ..
         'layer in turn; give the name without "blocks.0.": "hook_resid_post"')
end)

-- An argument too many, which Lua would drop, is refused by every function of mha.interp.
T.test("mha.interp refuses extra arguments", function()
    local model, fx = fixture_model("pre_mlp")
    local clean, corrupt = fx.tokens:narrow(1, 1, 1), fx.tokens:narrow(1, 2, 1)
    T.raises("logit_lens with an argument too many", function() mha.interp.logit_lens(model, clean, 3) end,
             "mha.interp.logit_lens: 3 arguments given; it takes at most 2 (model, tokens)")
    T.raises("ablate with an argument too many", function()
        mha.interp.ablate(model, clean, {layer = 1}, 2)
    end, "mha.interp.ablate: 4 arguments given; it takes at most 3 (model, tokens, opts)")
    T.raises("attribution with an argument too many", function()
        mha.interp.attribution(model, clean, 3, 4)
    end, "mha.interp.attribution: 4 arguments given; it takes at most 3 (model, tokens, target)")
    T.raises("patch with an argument too many", function()
        mha.interp.patch(model, clean, corrupt, "hook_resid_pre", function() return 1 end, nil, 1)
    end, "mha.interp.patch: 7 arguments given; it takes at most 6 (model, clean, corrupt, name, metric, opts)")
end)

-- test_errors.lua's rule for the Lua-written entry points: any wrong argument gets a message at the caller's
-- line, never a position inside lua/ nor "attempt to ...".
T.test("wrong arguments: checked, at the caller's line", function()
    local model = fixture_model("pre_mlp")
    local tokens = {{1, 2, 3}}
    local values = {n = 13, nil, 0, -1, 2.5, 0 / 0, true, "a", {}, {1, 2}, {layer = 9}, mha.zeros(2, 3),
                    mha.tensor {{true, false}}, function() end}
    local entries = {
        {"run_with_cache", function(a, b) return model:run_with_cache(a, b) end},
        {"run_with_cache names", function(a, b) return model:run_with_cache(tokens, {names = a, hooks = b}) end},
        {"run_with_hooks", function(a, b) return model:run_with_hooks(a, b) end},
        {"run_with_hooks fn", function(a) return model:run_with_hooks(tokens, {hook_embed = a}) end},
        {"ablate", function(a, b) return mha.interp.ablate(a, tokens, b) end},
        {"ablate opts", function(a, b) return mha.interp.ablate(model, a, b) end},
        {"ablate fields", function(a, b) return mha.interp.ablate(model, tokens, {layer = a, head = b}) end},
        {"ablate kind", function(a, b) return mha.interp.ablate(model, tokens, {layer = 1, kind = a, reference = b}) end},
        {"patch", function(a, b) return mha.interp.patch(a, tokens, tokens, b, function() return 1 end) end},
        {"patch names", function(a, b) return mha.interp.patch(model, a, tokens, b, function() return 1 end) end},
        {"patch metric", function(a, b) return mha.interp.patch(model, tokens, {{1, 2, 4}}, "hook_resid_pre", a, b) end},
        {"logit_lens", function(a, b) return mha.interp.logit_lens(a, b) end},
        {"logit_lens tokens", function(a) return mha.interp.logit_lens(model, a) end},
        {"attribution", function(a, b) return mha.interp.attribution(a, tokens, b) end},
        {"attribution target", function(a, b) return mha.interp.attribution(model, a, b) end},
    }
    local here = debug.getinfo(1, "S").short_src:gsub("%p", "%%%0") .. ":%d+: "
    local calls, bad = 0, {}
    for _, e in ipairs(entries) do
        for i = 1, values.n do
            for j = 1, values.n do
                calls = calls + 1
                local ok, err = pcall(e[2], values[i], values[j])
                if not ok and (type(err) ~= "string" or not err:find("^" .. here) or err:find("attempt to ")) then
                    bad[#bad + 1] = e[1] .. "(#" .. i .. ", #" .. j .. "): " .. tostring(err)
                end
            end
        end
    end
    T.ok(string.format("%d calls through %d entry points, every error at the caller's line", calls, #entries),
         #bad == 0, table.concat(bad, "\n", 1, math.min(#bad, 8)))
end)

T.done()
