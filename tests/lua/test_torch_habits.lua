-- tests/lua/test_torch_habits.lua - what a PyTorch user types, working as torch's: m:train()/m:eval() and
-- m.training (recursive, returning m), m:to("cpu"), m:named_parameters() as a (name, tensor) iterator,
-- x:grad():zero_(), mha.manual_seed; and the refusals (m:to("cuda")) naming function, argument and value.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local function model()
    return mha.nn.Sequential(mha.nn.Linear{in_features = 4, out_features = 4},
                             mha.nn.Sequential(mha.MultiheadAttention{embed_dim = 4, num_heads = 2},
                                               mha.nn.LayerNorm{normalized_shape = 4}))
end

T.test("m:train() and m:eval(): the training flag, recursive, returning the module", function()
    local m = model()
    local inner, attn, norm = m[2], m[2][1], m[2][2]
    T.eq("a new module trains", {m.training, m[1].training, inner.training, attn.training, norm.training},
         {true, true, true, true, true})
    T.ok("m:eval() returns m", m:eval() == m)
    T.eq("eval reaches every child, MultiheadAttention too",
         {m.training, m[1].training, inner.training, attn.training, norm.training}, {false, false, false, false, false})
    T.ok("m:train() returns m", m:train() == m)
    T.eq("train() sets it back", {m.training, attn.training, norm.training}, {true, true, true})
    m:train(false)
    T.eq("train(false) is eval()", {m.training, attn.training}, {false, false})
    inner:train(true)
    T.eq("a child alone", {m.training, m[1].training, inner.training, attn.training}, {false, false, true, true})
    T.eq("a MultiheadAttention alone", mha.MultiheadAttention{embed_dim = 4, num_heads = 1}:eval().training, false)
    local x = mha.randn(2, 3, 4)
    local before = m(x)
    T.close("no dropout here: eval gives the same output", m:eval()(x), before, 0, 0)
    T.raises("a mode that is not a boolean", function() m:train(1) end, "Sequential:train: mode must be true or false, got number")
    local attn = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}
    T.raises("MultiheadAttention's eval called with a dot", function() attn.eval() end,
             "eval is a method: call it with a colon: m:eval()")
end)

T.test("m:to(device): the CPU only", function()
    local m = model()
    T.ok("m:to(\"cpu\") returns m", m:to("cpu") == m)
    T.ok("MultiheadAttention:to(\"cpu\")", m[2][1]:to("cpu") == m[2][1])
    T.raises("cuda", function() m:to("cuda") end,
             'Sequential:to: device "cuda" is not available: mha-repl computes on the CPU only; m:to("cpu") or no call at all')
    T.raises("mps on MultiheadAttention", function() m[2][1]:to("mps") end, 'MultiheadAttention:to: device "mps" is not available')
    T.raises("no device", function() m:to() end, "Sequential:to: device nil is not available")
end)

T.test("for name, p in m:named_parameters(): torch's (name, tensor) pairs in torch's order", function()
    local m = model()
    local names, seen = {}, {}
    for name, p in m:named_parameters() do
        names[#names + 1] = name
        seen[#seen + 1] = mha.is_tensor(p) and p:requires_grad()
    end
    T.eq("the names in torch's order", names, {"0.weight", "0.bias", "1.0.in_proj_weight", "1.0.in_proj_bias",
                                               "1.0.out_proj.weight", "1.0.out_proj.bias", "1.1.weight", "1.1.bias"})
    T.eq("each value the parameter itself", seen, {true, true, true, true, true, true, true, true})
    local list = m:named_parameters()
    T.eq("still a list of {name, tensor}", {#list, list[3][1]}, {8, "1.0.in_proj_weight"})
    T.ok("the same tensors as m:parameters()", list[1][2] == m:parameters()["0.weight"])
    local attn = {}
    for name in mha.MultiheadAttention{embed_dim = 4, num_heads = 2, bias = false}:named_parameters() do
        attn[#attn + 1] = name
    end
    T.eq("MultiheadAttention's own", attn, {"in_proj_weight", "out_proj.weight"})
end)

T.test("x:grad():zero_() clears the gradient in place, as torch's x.grad.zero_()", function()
    local x = mha.tensor{1, -2, 3}
    x:requires_grad(true)
    ;(x * x):sum():backward()
    T.close("the gradient 2x", x:grad(), {2, -4, 6}, 0, 0)
    local g = x:grad():zero_()
    T.close("zero_ returns the zeroed tensor", g, {0, 0, 0}, 0, 0)
    T.close("x:grad() is zero now", x:grad(), {0, 0, 0}, 0, 0)
    ;(x * x):sum():backward()
    T.close("the next backward accumulates from zero", x:grad(), {2, -4, 6}, 0, 0)
    T.close("zero_ on any tensor", mha.ones(2, 2):zero_(), {{0, 0}, {0, 0}}, 0, 0)
end)

T.test("mha.manual_seed(n) is mha.seed(n)", function()
    mha.manual_seed(19)
    local a = mha.randn(5)
    mha.seed(19)
    T.close("the same numbers", mha.randn(5), a, 0, 0)
    T.eq("the same seed", mha.get_seed(), 19)
    T.raises("a negative seed", function() mha.manual_seed(-1) end, "manual_seed: the seed must not be negative, got -1")
end)

T.done()
