-- tests/lua/test_nn.lua - mha.nn: Linear, Embedding and LayerNorm (PyTorch's names, shapes, initialisation
-- statistics, forward equal to the core functions), composites with PyTorch's dotted state_dict keys
-- (ModuleList's 0-based keys, MultiheadAttention as a child), state_dict/load_state_dict through .npz and
-- their errors, parameters as leaves that backward fills, and an end-to-end Linear + Adam regression against
-- torch 1.13's losses (tests/fixtures/optim/e2e.npz).
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha
local nn = mha.nn

local function sorted(list)
    local copy = {table.unpack(list)}
    table.sort(copy)
    return copy
end

local function sorted_keys(t)
    local keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    table.sort(keys)
    return keys
end

local function stats(t)
    local n = t:numel()
    local mean = t:sum():item() / n
    local var = ((t - mean) ^ 2):sum():item() / n
    return mean, var, t:max():item(), t:min():item()
end

T.test("Linear", function()
    mha.seed(1)
    local lin = nn.Linear{in_features = 100, out_features = 300}
    T.shape("weight is (out, in)", lin.weight, {300, 100})
    T.shape("bias is (out)", lin.bias, {300})
    -- kaiming_uniform_(a=√5) on (300,100): U(-0.1, 0.1); mean 0, variance 0.01/3
    local mean, var, hi, lo = stats(lin.weight)
    T.ok("weight within ±1/√in_features", hi <= 0.1 and lo >= -0.1 and hi > 0.099 and lo < -0.099, hi .. " " .. lo)
    T.close("weight variance bound²/3", var, 0.01 / 3, 0.03)
    T.close("weight mean 0", mean, 0, 0, 2e-3)
    local _, _, bhi, blo = stats(lin.bias)
    T.ok("bias within ±1/√in_features", bhi <= 0.1 and blo >= -0.1, bhi .. " " .. blo)
    T.ok("parameters are leaves that require grad", lin.weight:requires_grad() and lin.weight:is_leaf())
    local x = mha.randn(5, 100)
    T.ok("forward is mha.linear", lin:forward(x) == mha.linear(x, lin.weight, lin.bias))
    T.ok("a module is callable", lin(x) == lin:forward(x))
    local nobias = nn.Linear{in_features = 3, out_features = 2, bias = false}
    T.ok("bias=false has no bias", nobias.bias == nil and #nobias:parameter_names() == 1)
    T.eq("repr as PyTorch's", tostring(nobias), "Linear(in_features=3, out_features=2, bias=False)")
    mha.seed(9)
    local a = nn.Linear{in_features = 3, out_features = 2}
    mha.seed(9)
    local b = nn.Linear{in_features = 3, out_features = 2}
    T.ok("the same seed gives the same parameters", a.weight == b.weight and a.bias == b.bias)
end)

T.test("Embedding and LayerNorm", function()
    mha.seed(2)
    local emb = nn.Embedding{num_embeddings = 200, embedding_dim = 50}
    T.shape("embedding weight (num, dim)", emb.weight, {200, 50})
    local mean, var = stats(emb.weight)
    T.close("N(0,1): mean", mean, 0, 0, 0.02)
    T.close("N(0,1): variance", var, 1, 0.03)
    T.eq("Embedding repr", tostring(emb), "Embedding(200, 50)")
    T.ok("forward picks rows (1-based)", emb({{3, 1}}) == mha.stack({emb.weight[3], emb.weight[1]}):unsqueeze(1))
    local ln = nn.LayerNorm{normalized_shape = 4}
    T.ok("LayerNorm weight ones, bias zeros", ln.weight == mha.ones(4) and ln.bias == mha.zeros(4))
    local x = mha.randn(3, 4)
    T.ok("forward is mha.layer_norm", ln(x) == mha.layer_norm(x, 4, ln.weight, ln.bias, 1e-5))
    T.eq("LayerNorm repr", tostring(ln), "LayerNorm((4,), eps=1e-05, elementwise_affine=True)")
    local ln2 = nn.LayerNorm{normalized_shape = {2, 3}, eps = 1e-3, elementwise_affine = false}
    T.ok("no affine: no parameters", next(ln2:parameters()) == nil)
    T.eq("LayerNorm repr of two dims", tostring(ln2), "LayerNorm((2, 3), eps=0.001, elementwise_affine=False)")
end)

-- A transformer-ish block: what a student writes after the MultiheadAttention lessons.
local Block = nn.Module:extend("Block")
function Block:init(E)
    self.attn = mha.MultiheadAttention{embed_dim = E, num_heads = 2}
    self.norm = nn.LayerNorm{normalized_shape = E}
    self.layers = nn.ModuleList{nn.Linear{in_features = E, out_features = E}, nn.Linear{in_features = E, out_features = E}}
end
function Block:forward(x)
    local y = self.norm(x + self.attn(x, x, x, {need_weights = false}))
    for _, layer in ipairs(self.layers) do y = layer(y):relu() end
    return y
end

local BLOCK_KEYS = {"attn.in_proj_weight", "attn.in_proj_bias", "attn.out_proj.weight", "attn.out_proj.bias",
                    "norm.weight", "norm.bias", "layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"}

T.test("composites: PyTorch's keys", function()
    mha.seed(3)
    local b = Block(4)
    T.eq("parameter_names: PyTorch's keys in PyTorch's order", b:parameter_names(), BLOCK_KEYS)
    T.eq("state_dict has those keys", sorted_keys(b:state_dict()), sorted(BLOCK_KEYS))
    T.ok("ModuleList: 1-based from Lua, #", b.layers[1] ~= nil and b.layers[2] ~= nil and b.layers[3] == nil and #b.layers == 2)
    T.ok("layers.1.bias is the second Linear's", b:parameters()["layers.1.bias"] == b.layers[2].bias)
    local m = b.attn
    T.eq("MultiheadAttention's own state_dict", sorted_keys(m:state_dict()),
         {"in_proj_bias", "in_proj_weight", "out_proj.bias", "out_proj.weight"})
    T.ok("repr nests children", tostring(b):find("(layers): ModuleList(\n    (0): Linear(in_features=4", 1, true) ~= nil, tostring(b))
    -- children and an extra_repr: the extra on a line of its own, the parenthesis closed at the end
    local lm = mha.nn.Transformer { vocab = 5, d_model = 8, heads = 2, layers = 1, max_len = 4 }
    local text = tostring(lm)
    T.eq("a module with children and extra_repr: its first lines", text:match("^[^\n]*\n[^\n]*"),
         "Transformer(\n  " .. lm:extra_repr():match("^[^\n]*"))
    local long = mha.nn.Transformer { vocab = 65, d_model = 128, heads = 4, kv_heads = 2, layers = 4,
                                      max_len = 64, norm = "pre", pos = "rope", window = 16 }
    local extra = long:extra_repr()
    local widest = 0
    for l in extra:gmatch("[^\n]+") do widest = math.max(widest, #l) end
    T.ok("a long extra_repr keeps to 76 columns, for an 80-column screen", widest <= 76, extra)
    T.eq("and says every option", (extra:gsub(",?\n", ", ")),
         "vocab=65, d_model=128, heads=4, layers=4, d_ff=512, max_len=64, causal=true, norm=pre, "
             .. "pos=rope, kv_heads=2, rope_layout=" .. tostring(long._config.rope_layout) .. ", rope_base=10000, window=16, sinks=0")
    T.eq("and its last", text:sub(-2), "\n)")
    T.eq("MultiheadAttention (C) prints its options as a Lua module its extra_repr",
         tostring(mha.MultiheadAttention{embed_dim = 8, num_heads = 2}),
         "MultiheadAttention(\n  embed_dim=8, num_heads=2, head_dim=4\n"
             .. "  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n)")
    local seq = nn.Sequential(nn.Linear{in_features = 4, out_features = 3}, nn.LayerNorm{normalized_shape = 3})
    T.eq("Sequential keys", seq:parameter_names(), {"0.weight", "0.bias", "1.weight", "1.bias"})
    local x = mha.randn(2, 4)
    T.ok("Sequential chains", seq(x) == seq[2](seq[1](x)))
    local Stack = nn.Sequential:extend("Stack")
    local st = Stack(nn.Linear{in_features = 2, out_features = 2})
    T.ok("a subclass of Sequential still indexes from 1", st[1] ~= nil and #st == 1 and tostring(st):find("^Stack%(") ~= nil,
         tostring(st))
    local shared = nn.Module:extend("Shared")
    function shared:init() self.a = nn.Linear{in_features = 2, out_features = 2}; self.b = self.a end
    local s = shared()
    T.eq("a shared child: parameters once, state_dict under both keys", {#s:parameter_names(), #sorted_keys(s:state_dict())}, {2, 4})
end)

T.test("state_dict and load_state_dict", function()
    mha.seed(4)
    local a = Block(4)
    mha.seed(5)
    local b = Block(4)
    local base = os.tmpname()   -- the name reserved (an empty file), removed with the .npz
    local tmp = base .. ".npz"
    mha.save(tmp, a:state_dict())
    local w_before = b.layers[1].weight
    local missing, unexpected = b:load_state_dict(mha.load(tmp))
    os.remove(tmp)
    os.remove(base)
    T.ok("nothing missing or unexpected", #missing == 0 and #unexpected == 0)
    local same = true
    local sa, sb = a:state_dict(), b:state_dict()
    for _, k in ipairs(BLOCK_KEYS) do same = same and sa[k] == sb[k] end
    T.ok("every entry equal after the .npz round trip", same)
    T.ok("loaded in place: the parameter is the same tensor", rawequal(b.layers[1].weight, w_before) and w_before == a.layers[1].weight)
    local x = mha.randn(3, 4)
    T.ok("the same outputs", a(x) == b(x))
    T.ok("state_dict entries are detached", not sa["norm.weight"]:requires_grad())
    local sd = a:state_dict()
    sd["norm.bias"] = nil
    sd["norm.bais"] = mha.zeros(4)
    T.raises("missing and unexpected keys, with a guess", function() b:load_state_dict(sd) end,
             {"Block:load_state_dict: error(s) in loading state_dict for Block:", 'missing key(s) in state_dict: "norm.bias"',
              'unexpected key(s) in state_dict: "norm.bais" (did you mean "norm.bias" for "norm.bais"?)'})
    local m2, u2 = b:load_state_dict(sd, false)
    T.eq("strict=false returns them", {m2, u2}, {{"norm.bias"}, {"norm.bais"}})
    sd = a:state_dict()
    sd["layers.0.weight"] = mha.zeros(3, 4)
    T.raises("a shape mismatch names key and shapes", function() b:load_state_dict(sd, false) end,
             "size mismatch for layers.0.weight: copying a param with shape (3,4) from checkpoint, the shape in current model is (4,4)")
    T.ok("a refused load copies nothing", b.layers[2].weight == a.layers[2].weight)
    T.raises("MultiheadAttention checks too", function() a.attn:load_state_dict({in_proj_weight = mha.zeros(4, 4)}) end,
             {"MultiheadAttention:load_state_dict: error(s) in loading state_dict for MultiheadAttention:",
              "size mismatch for in_proj_weight: copying a param with shape (4,4) from checkpoint, the shape in current model is (12,4)",
              'missing key(s) in state_dict: "in_proj_bias", "out_proj.weight", "out_proj.bias"'})
    local lin = nn.Linear{in_features = 2, out_features = 1}
    lin:load_state_dict({weight = {{1, 2}}, bias = {3}})
    T.ok("nested tables load too", lin.weight == mha.tensor{{1, 2}} and lin.bias == mha.tensor{3})
end)

T.test("module errors", function()
    T.raises("positional sizes as in PyTorch: the named form is shown", function() nn.Linear(3, 2) end,
             "nn.Linear: options must be a table, got number; name them: {in_features = ..., out_features = ..., bias = ...}")
    T.raises("an optimizer's positional lr: the named form is shown", function() mha.optim.Adam({mha.ones(2)}, 0.01) end,
             "optim.Adam: options must be a table, got number: write mha.optim.Adam(params, {lr = 0.01})")
    T.raises("unknown option, did you mean", function() nn.Linear{in_features = 2, out_feature = 3} end,
             "nn.Linear: unknown option 'out_feature' (did you mean 'out_features'?); valid options: in_features")
    T.raises("required option", function() nn.Linear{in_features = 2} end,
             "nn.Linear: option out_features is required, e.g. mha.nn.Linear{in_features = 4, out_features = 2}")
    T.raises("positive sizes", function() nn.Embedding{num_embeddings = 0, embedding_dim = 2} end,
             "nn.Embedding: option num_embeddings must be a positive integer, got 0")
    T.raises("LayerNorm shape", function() nn.LayerNorm{} end, "nn.LayerNorm: option normalized_shape is required")
    local Empty = nn.Module:extend("Empty")
    T.raises("forward not written", function() Empty():forward() end, "Empty:forward is not defined")
    T.raises("ModuleList items", function() nn.ModuleList{3} end, "ModuleList: item 1 is not a module (got number)")
    T.raises("add_module names", function() Empty():add_module("a.b", nn.Linear{in_features = 1, out_features = 1}) end,
             "Empty:add_module: the name must be a non-empty string without '.'")
end)

T.test("backward fills the parameters' gradients; zero_grad clears them", function()
    mha.seed(6)
    local lin = nn.Linear{in_features = 3, out_features = 2}
    local x = mha.randn(4, 3)
    local out = lin(x)
    out:sum():backward()
    T.close("d sum / d W = column sums of x", lin.weight:grad(), mha.ones(2, 1) * x:sum(1, true), 1e-5, 1e-6)
    T.close("d sum / d b = rows", lin.bias:grad(), {4, 4})
    lin:zero_grad()
    T.ok("zero_grad", lin.weight:grad() == nil and lin.bias:grad() == nil)
    local emb = nn.Embedding{num_embeddings = 5, embedding_dim = 2}
    emb({2, 4, 2}):sum():backward()
    T.close("an embedding row used twice gets twice the gradient", emb.weight:grad(),
            {{0, 0}, {2, 2}, {0, 0}, {1, 1}, {0, 0}})
    local ln = nn.LayerNorm{normalized_shape = 3}
    local y = mha.tensor{{1, 2, 4}}
    ln(y):mul(mha.tensor{1, 2, 3}):sum():backward()
    T.close("LayerNorm's bias gradient is the upstream gradient", ln.bias:grad(), {1, 2, 3})
    local b = Block(4)
    local z = mha.randn(3, 4)
    b(z):sum():backward()
    local missing = {}
    for _, name in ipairs(b:parameter_names()) do
        if b:parameters()[name]:grad() == nil then missing[#missing + 1] = name end
    end
    T.ok("backward through a composite reaches every parameter, MultiheadAttention's too", #missing == 0,
         "no gradient: " .. table.concat(missing, ", "))
    b:zero_grad()
    T.ok("a composite's zero_grad reaches its MultiheadAttention", b.attn.in_proj_weight:grad() == nil)
end)

-- m.in_proj_weight is one object (as torch's Parameter): the same userdata on every access until the parameter is
-- assigned anew, so a module used twice lists its parameters once and an optimizer steps each once.
T.test("MultiheadAttention parameters: the same object on every access", function()
    local m = mha.MultiheadAttention{embed_dim = 8, num_heads = 2}
    T.ok("m.in_proj_weight == m.in_proj_weight", rawequal(m.in_proj_weight, m.in_proj_weight))
    T.ok("m:parameters() holds that object", rawequal(m:parameters().in_proj_weight, m.in_proj_weight)
         and rawequal(m:parameters()["out_proj.bias"], m.out_proj_bias))
    local twice = mha.nn.ModuleList{m, m}
    T.eq("a module used twice lists its parameters once", twice:parameter_names(),
         {"0.in_proj_weight", "0.in_proj_bias", "0.out_proj.weight", "0.out_proj.bias"})
    -- an optimizer over both uses steps each parameter once: one SGD step of lr 1 on a gradient of ones
    local before = m.in_proj_weight:clone()
    local opt = mha.optim.SGD(twice:parameters(), {lr = 1})
    m.in_proj_weight:set_grad(mha.ones(24, 8))
    opt:step()
    T.close("one step, not two, for the shared parameter", m.in_proj_weight, before - 1, 0, 0)
    local old = m.in_proj_weight
    m.in_proj_weight = mha.zeros(24, 8)
    T.ok("after an assignment: a new leaf, itself again on every access", not rawequal(old, m.in_proj_weight)
         and rawequal(m.in_proj_weight, m.in_proj_weight) and m.in_proj_weight:requires_grad())
    T.close("... holding the assigned value", m.in_proj_weight:sum(), 0)
end)

T.test("end to end: Linear + Adam learn a regression as torch does", function()
    local e2e = mha.load(T.path("tests/fixtures/optim/e2e.npz"))
    local lin = nn.Linear{in_features = 4, out_features = 2}
    lin:load_state_dict({weight = e2e.weight, bias = e2e.bias})
    local opt = mha.optim.Adam(lin:parameters(), {lr = 0.05})
    local losses = {}
    for step = 1, 20 do
        opt:zero_grad()
        local loss = ((lin(e2e.x) - e2e.y) ^ 2):mean()
        loss:backward()
        opt:step()
        losses[step] = loss:item()
    end
    T.close("losses step by step equal torch's", losses, e2e["adam.losses"], 1e-4, 1e-7)
    T.close("weight after 20 steps", lin.weight, e2e["adam.weight"], 1e-4, 1e-6)
end)

T.test("the issue's session: MultiheadAttention trained by Adam as torch trains it", function()
    local e2e = mha.load(T.path("tests/fixtures/optim/e2e.npz"))
    local function prefixed(prefix)
        local sd = {}
        for k, v in pairs(e2e) do
            if k:sub(1, #prefix) == prefix then sd[k:sub(#prefix + 1)] = v end
        end
        return sd
    end
    local m = mha.MultiheadAttention{embed_dim = 8, num_heads = 2}
    m:load_state_dict(prefixed("mha.init."))
    local x = e2e["mha.x"]
    local opt = mha.optim.Adam(m:parameters(), {lr = 1e-2})
    local losses = {}
    for step = 1, 20 do
        opt:zero_grad()
        local out = m:forward(x, x, x, {need_weights = false})
        local loss = (out * out):mean()
        loss:backward()
        opt:step()
        losses[step] = loss:item()
    end
    T.close("losses step by step equal torch's", losses, e2e["mha.losses"], 1e-4, 1e-7)
    local final = prefixed("mha.final.")
    for key, p in pairs(m:state_dict()) do
        if key == "in_proj_bias" then
            -- The key bias adds q·b_k to every score of a query, which softmax ignores: its gradient is
            -- rounding noise (~1e-10, on both sides), which Adam divides by √v + eps, so it drifts by
            -- ~lr·|g|/eps ≈ 1e-4 a step in a direction no two implementations share (the kernels' summation
            -- order decides it): after 20 steps each side is within 20·1e-4 of the start, so the two differ
            -- by at most 4e-3. Its slice gets atol 5e-3 - what it checks is that the bias learned nothing.
            T.close("after 20 steps: in_proj_bias (q)", p:narrow(1, 1, 8), final[key]:narrow(1, 1, 8), 1e-4, 1e-6)
            T.close("after 20 steps: in_proj_bias (k, noise)", p:narrow(1, 9, 8), final[key]:narrow(1, 9, 8), 0, 5e-3)
            T.close("after 20 steps: in_proj_bias (v)", p:narrow(1, 17, 8), final[key]:narrow(1, 17, 8), 1e-4, 1e-6)
        else
            T.close("after 20 steps: " .. key, p, final[key], 1e-4, 1e-6)
        end
    end
end)

T.done()
