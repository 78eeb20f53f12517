-- tests/lua/test_dotcall.lua - a method called with a dot (loss.item(), opt.step(), lin.forward(x)), the
-- PyTorch habit: every kind (C tensor and module methods, Lua-written classes) says "call it with a colon".
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local x = mha.randn(2, 3)
local m = mha.MultiheadAttention { embed_dim = 4, num_heads = 2 }
local lin = mha.nn.Linear { in_features = 3, out_features = 2 }
local opt = mha.optim.Adam(lin:parameters())

-- The message of call, which must start with the position of the line that made the call (the user's line).
local function at_caller(name, call, expected)
    local info = debug.getinfo(call, "S")
    local err = T.errmsg(call) or "no error"
    local position = info.short_src .. ":" .. info.linedefined .. ": "
    T.ok(name .. ": at the caller's line", err:sub(1, #position) == position, err)
    T.eq(name .. ": the message", err:sub(#position + 1), expected)
end

T.test("C methods called with a dot", function()
    at_caller("loss.item()", function() local _ = x.item() end, "item is a method: call it with a colon: x:item()")
    at_caller("loss.backward()", function() local _ = x.backward() end,
        "backward is a method: call it with a colon: x:backward()")
    at_caller("S.shape()", function() local _ = x.shape() end, "shape is a method: call it with a colon: x:shape()")
    at_caller("m.forward(x)", function() local _ = m.forward(x) end,
        "forward is a method: call it with a colon: m:forward(...)")
    -- x.matmul is mha.matmul: Lua's message stays, the hint follows
    at_caller("x.softmax()", function() local _ = x.softmax() end,
        "bad argument #1 to 'softmax' (mha.Tensor expected, got no value); as a method, call it with a colon: x:softmax()")
    -- a reduction with a dot and a dim got the dim alone, which it summed as a tensor (x.sum(2) was 2)
    at_caller("x.sum(2)", function() local _ = x.sum(2) end,
        "bad argument #1 to 'sum' (mha.Tensor expected, got number); as a method, call it with a colon: x:sum(...)")
    for _, f in ipairs {"mean", "max", "min", "argmax", "argmin", "var"} do
        T.raises("x." .. f .. "(1)", function() return x[f](1) end, "(mha.Tensor expected, got number)")
    end
    T.raises("mha.sum(2): a number is no tensor, as torch.sum(2) refuses", function() return mha.sum(2) end,
        "(mha.Tensor expected, got number)")
    T.eq("mha.sum of a table of numbers", mha.sum({1, 2, 3}):item(), 6)
    -- with a colon, or as mha's function with a wrong argument, Lua's message as before: no hint
    -- where the call is plainly mha's (a tensor among the other arguments, a string first)
    at_caller("mha.matmul(1, x)", function() mha.matmul(1, x) end,
        "bad argument #1 to 'matmul' (mha.Tensor expected, got number)")
    at_caller("mha.softmax(\"x\", 1)", function() mha.softmax("x", 1) end,
        "bad argument #1 to 'softmax' (mha.Tensor, number or table expected, got string)")
    T.eq("x:item() of a 1-element tensor", mha.tensor { 2 }:item(), 2)
end)

T.test("Lua-written classes' methods called with a dot", function()
    at_caller("opt.step()", function() local _ = opt.step() end, "step is a method: call it with a colon: opt:step()")
    at_caller("opt.zero_grad()", function() local _ = opt.zero_grad() end,
        "zero_grad is a method: call it with a colon: opt:zero_grad()")
    at_caller("lin.parameters()", function() local _ = lin.parameters() end,
        "parameters is a method: call it with a colon: m:parameters()")
    at_caller("lin.forward(x)", function() local _ = lin.forward(x) end,
        "forward is a method: call it with a colon: m:forward(...)")
    local emb = mha.nn.Embedding { num_embeddings = 5, embedding_dim = 2 }
    at_caller("emb.forward(ids)", function() local _ = emb.forward(mha.tensor { 1, 2 }) end,
        "forward is a method: call it with a colon: m:forward(...)")
    local list = mha.nn.ModuleList { lin }
    at_caller("list.append(lin)", function() local _ = list.append(lin) end,
        "append is a method: call it with a colon: m:append(...)")
    -- a user's class gets the same check for the methods it writes, and keeps its plain functions
    local Block = mha.nn.Module:extend("Block")
    function Block:forward(v) return v * 2 end
    function Block.helper(v) return v + 1 end
    at_caller("Block.forward(x)", function() local _ = Block().forward(x) end,
        "forward is a method: call it with a colon: m:forward(...)")
    T.eq("a plain function of a class", Block.helper(1), 2)
    T.close("the method with a colon", Block():forward(mha.tensor { 1 }), mha.tensor { 2 }, 0, 0)
end)

T.test("every method called with a dot and no self: a hint, never 'attempt to'", function()
    local bad, calls = {}, 0
    local function sweep(label, obj, names)
        for _, name in ipairs(names) do
            calls = calls + 1
            local err = T.errmsg(function() return obj[name]() end)
            if err and err:find("attempt to ", 1, true) then bad[#bad + 1] = label .. "." .. name .. ": " .. err end
        end
    end
    local function keys(t)
        local list = {}
        for k, v in pairs(t) do if type(v) == "function" and not k:find("^__") then list[#list + 1] = k end end
        table.sort(list)
        return list
    end
    sweep("opt", opt, keys(getmetatable(opt)))
    sweep("lin", lin, { "forward", "parameters", "named_parameters", "state_dict", "load_state_dict", "zero_grad",
                        "extra_repr", "repr", "named_children", "parameter_names", "add_module", "register_parameter" })
    sweep("x", x, keys(getmetatable(x).__methods))
    T.ok(string.format("%d dotted calls, none 'attempt to'", calls), #bad == 0, table.concat(bad, "\n"))
end)

T.done()
