-- tests/lua/test_errors.lua - bad calls through the Lua bindings: each kind raises a Lua error whose text
-- names the function, the argument and the shapes (asserted here), and none crashes: a sweep calls every
-- library function and method with a pool of wrong arguments and only accepts a result or a string error.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local x = mha.zeros(2, 3)
local q = mha.zeros(3, 4)
local function module() return mha.MultiheadAttention { embed_dim = 4, num_heads = 2 } end

T.test("wrong types", function()
    T.raises("a number where a tensor is needed", function() mha.matmul(1, x) end,
        "bad argument #1 to 'matmul' (mha.Tensor expected, got number)")
    T.raises("a string element", function() mha.tensor { { 1, "a" } } end,
        "tensor: t[1][2] is a string, but t[1][1] is a number")
    T.raises("numbers mixed with booleans", function() mha.tensor { { 1, true } } end, "not both")
    T.raises("a string in a list to cat", function() mha.cat { x, "a" } end,
        "cat: element 2 of the list is a string, expected a tensor")
    T.raises("options not a table", function() mha.sdpa(q, q, q, 5) end,
        "sdpa: options must be a table, got number")
    T.raises("module options not a table", function() mha.MultiheadAttention(4) end,
        "MultiheadAttention takes a table: mha.MultiheadAttention{embed_dim = 4, num_heads = H} (got number)")
    -- the PyTorch habit MultiheadAttention(embed_dim, num_heads): the named form with its numbers
    T.raises("module options positional", function() mha.MultiheadAttention(8, 2) end,
        "MultiheadAttention takes a table: mha.MultiheadAttention{embed_dim = 8, num_heads = 2} (got number)")
    T.raises("a non-integer dim", function() x:sum(1.5) end, "number has no integer representation")
    T.raises("set value of the wrong type", function() x:set(1, 1, "v") end,
        "set: the value (last argument) is a string, expected a number or a boolean")
    T.raises("full without a value", function() mha.full(2, "a") end, "full: the last argument is the value")
end)

T.test("wrong shapes", function()
    T.raises("matmul inner sizes", function() mha.matmul(x, x) end, "matmul: (2,3) @ (2,3): inner sizes 3 and 2 differ")
    T.raises("broadcasting", function() return x + mha.zeros(3, 2) end, { "add", "(2,3)", "(3,2)" })
    T.raises("linear in size", function() mha.linear(x, mha.zeros(4, 5)) end, { "linear", "(2,3)", "(4,5)" })
    T.raises("view element count", function() x:view(4, 2) end,
        "view: shape (4,2) is invalid for a tensor of shape (2,3) (6 elements)")
    T.raises("view of a non-contiguous tensor", function() x:T():view(6) end,
        { "view: cannot view a tensor of shape (3,2)", "contiguous()", "reshape()" })
    T.raises("cat shapes", function() mha.cat({ x, mha.zeros(3, 3) }, 2) end, { "cat", "(2,3)", "(3,3)" })
    T.raises("sdpa head dims", function() mha.sdpa(mha.zeros(2, 3), mha.zeros(4, 5), mha.zeros(4, 5)) end,
        { "(2,3)", "(4,5)" })
    T.raises("layer_norm normalized shape", function() mha.layer_norm(x, { 4 }) end,
        "layer_norm: normalized shape (4) does not match the last dims of x (2,3)")
    -- a number is PyTorch's normalized_shape=n, the size of the last dim, never a count of dims
    T.raises("layer_norm(x, 8) is the shape (8)", function() mha.layer_norm(mha.zeros(2, 4, 3), 8) end,
        "layer_norm: normalized shape (8) does not match the last dims of x (2,4,3)")
    T.raises("layer_norm(x, 1) is the shape (1), not one dim", function() mha.layer_norm(x, 1) end,
        "layer_norm: normalized shape (1) does not match the last dims of x (2,3)")
    T.raises("layer_norm with an empty shape", function() mha.layer_norm(x, {}) end,
        "layer_norm: normalized_shape {} is empty")
    T.raises("layer_norm with a negative size", function() mha.layer_norm(x, -3) end,
        "layer_norm: normalized_shape -3 is negative")
    T.raises("layer_norm with a string", function() mha.layer_norm(x, "3") end,
        "layer_norm: normalized_shape must be a number (the size of the last dim) or a table of the last dims' sizes, got string (for x of shape (2,3))")
    T.raises("forward embed size", function() module():forward(mha.zeros(3, 5)) end,
        { "forward", "(3,5)", "embed_dim 4" })
    T.raises("attn_mask shape", function() module():forward(q, q, q, { attn_mask = mha.zeros(2, 2) }) end,
        { "attn_mask", "(3,3)", "(2,2)" })
    T.raises("key_padding_mask shape", function() module():forward(q, q, q, { key_padding_mask = mha.zeros(5):bool() }) end,
        { "key_padding_mask", "(5)" })
    T.raises("expand", function() x:expand(4, 2, 4) end, "expand: cannot expand (2,3) to (4,2,4)")
    T.raises("item of many", function() x:item() end, "item: a tensor of shape (2,3) has 6 elements, expected exactly 1")
end)

T.test("dims and indices out of range", function()
    T.raises("transpose dim 3 of (2,3)", function() x:transpose(3, 1) end,
        "transpose: dim 3 out of range for a tensor of shape (2,3) (expected 1..2 or -2..-1)")
    T.raises("dim 0 is not a Lua dim", function() x:softmax(0) end,
        "softmax: dim 0 out of range for a tensor of shape (2,3) (expected 1..2 or -2..-1)")
    T.raises("dim -3 of (2,3)", function() x:sum(-3) end, "sum: dim -3 out of range")
    T.raises("unsqueeze past the end", function() x:unsqueeze(5) end,
        "unsqueeze: dim 5 out of range for a tensor of shape (2,3) (expected 1..3 or -3..-1)")
    T.raises("get index", function() x:get(3, 1) end,
        "get: index 3 out of range for dim 1 of size 2 in a tensor of shape (2,3) (expected 1..2 or -2..-1)")
    T.raises("get index count", function() x:get(1) end, "get: 1 indices given for a tensor of shape (2,3), expected 2")
    T.raises("select index 0", function() x:select(1, 0) end, "select: index 0 out of range for dim 1 of size 2")
    T.raises("t[0]", function() return x[0] end, "index: index 0 out of range for dim 1 of size 2")
    T.raises("narrow past the end", function() x:narrow(2, 2, 5) end,
        "narrow: start 2 with length 5 runs past size 3 of dim 2 (tensor of shape (2,3); at most length 2 from there)")
    T.raises("narrow with a negative length", function() x:narrow(2, 1, -1) end,
        "narrow: length -1 is negative; from start 1 in dim 2 of size 3 (tensor of shape (2,3)) it can be 0..3")
    T.raises("narrow from start 0", function() x:narrow(2, 0, 1) end,
        "narrow: start 0 out of range for dim 2 of size 3 in a tensor of shape (2,3) (expected 1..3, or -3..-1 counting from the end)")
    T.raises("narrow from a start before the first", function() x:narrow(1, -3, 1) end,
        "narrow: start -3 out of range for dim 1 of size 2")
    T.raises("narrow from the end, past it", function() x:narrow(2, -1, 2) end,
        "narrow: start -1 with length 2 runs past size 3 of dim 2 (tensor of shape (2,3); at most length 1 from there)")
    T.raises("permute repeats a dim", function() mha.zeros(2, 3, 4):permute(1, 1, 2) end,
        "permute: dim 1 appears twice in the permutation")
    T.raises("permute count", function() x:permute(1) end, "permute: 1 dims given for a tensor of shape (2,3), expected 2")
    T.raises("a scalar has no dims", function() mha.tensor(1):size(1) end, "a scalar, it has no dims")
    T.raises("split of a scalar", function() mha.tensor(1):split(1) end, "split: a scalar tensor (shape ()) has no dim to split")
    T.raises("# of a scalar", function() return #mha.tensor(1) end, "#: a scalar tensor (shape ()) has no length")
end)

T.test("ragged and malformed tables", function()
    T.raises("short row", function() mha.tensor { { 1, 2 }, { 3 } } end, "tensor: ragged table: t[2] has 1 element, but t[1] has 2")
    T.raises("number among rows", function() mha.tensor { { 1, 2 }, 3 } end,
        "tensor: ragged table: t[2] is a number, but t[1] is a table of 2")
    T.raises("row among numbers", function() mha.tensor { 1, { 2 } } end, "tensor: ragged table: t[2] is a table, but t[1] is a number")
    T.raises("a hole in the table", function() mha.tensor { 1, nil, 3 } end, "tensor: t[2] is nil, but t[1] is a number")
    T.raises("torch's values as arguments", function() mha.tensor(1, 2, 3) end,
        "tensor: takes one table of values, not 3 numbers: mha.tensor{1, 2, 3}")
    T.raises("deep ragged", function() mha.tensor { { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7 } } } end,
        "t[2][2] has 1 element, but t[1][1] has 2")
    T.raises("too deep", function() mha.tensor { { { { { { { { { 1 } } } } } } } } } end, "nested deeper than 8 levels")
    T.raises("a negative size", function() mha.zeros(2, -3) end, "zeros: size -3 at position 2 of the shape is negative")
    T.raises("too many sizes", function() mha.zeros(1, 1, 1, 1, 1, 1, 1, 1, 1) end, "zeros: 9 sizes given, a tensor has at most 8 dims")
    T.raises("an overflowing shape", function() mha.zeros(1 << 62, 1 << 62) end,
        "shape (4611686018427387904,4611686018427387904) has too many elements")
end)

T.test("bad options and values", function()
    T.raises("unknown sdpa option", function() mha.sdpa(q, q, q, { causal = true }) end,
        "sdpa: unknown option 'causal' (did you mean 'is_causal'?); valid options: attn_mask, is_causal, scale, need_weights")
    T.raises("sdpa mask for attn_mask", function() mha.sdpa(q, q, q, { mask = q }) end,
        "sdpa: unknown option 'mask' (did you mean 'attn_mask'?)")
    T.raises("module num_head for num_heads", function() mha.MultiheadAttention { embed_dim = 4, num_head = 2 } end,
        "MultiheadAttention: unknown option 'num_head' (did you mean 'num_heads'?); valid options: embed_dim, num_heads")
    T.raises("option of the wrong type", function() mha.sdpa(q, q, q, { is_causal = 1 }) end,
        "sdpa: option is_causal must be a boolean, got number")
    T.raises("a mask that is not a tensor", function() mha.sdpa(q, q, q, { attn_mask = { 1 } }) end,
        "sdpa: option attn_mask must be a mha.Tensor, got table")
    T.raises("a negative scale", function() mha.sdpa(q, q, q, { scale = -1 }) end,
        "option scale must be a positive number, got -1")
    -- one reader (lmha_optpositive) for sdpa's scale and sdpa_backward's: both refuse inf
    T.raises("an infinite scale", function() mha.sdpa(q, q, q, { scale = math.huge }) end,
        "sdpa: option scale must be a positive number, got inf")
    -- the two names of one function: an error says the one the student typed, the core's and the
    -- options' alike
    T.raises("the long name's shape error", function() mha.scaled_dot_product_attention(q, mha.zeros(3, 5), q) end,
        "scaled_dot_product_attention: q")
    T.raises("the long name's option error", function() mha.scaled_dot_product_attention(q, q, q, { causal = 1 }) end,
        "scaled_dot_product_attention: unknown option 'causal'")
    T.raises("the short name's shape error", function() mha.sdpa(q, mha.zeros(3, 5), q) end, "sdpa: q")
    T.raises("an infinite scale in sdpa_backward", function()
        mha.sdpa_backward(q, q, q, q, { scale = 1 / 0, out = q }) end,
        "sdpa_backward: option scale must be a positive number, got inf")
    T.raises("a scale that is not a number in sdpa_backward", function()
        mha.sdpa_backward(q, q, q, q, { scale = "2", out = q }) end,
        "sdpa_backward: option scale must be a positive number, got 2")
    T.raises("unknown forward option", function() module():forward(q, q, q, { need_weight = false }) end,
        "MultiheadAttention.forward: unknown option 'need_weight'")
    T.raises("unknown module option", function() mha.MultiheadAttention { embed_dim = 4, num_heads = 2, dropout = 0.1 } end,
        "MultiheadAttention: unknown option 'dropout'; valid options: embed_dim, num_heads")
    T.raises("missing embed_dim", function() mha.MultiheadAttention { num_heads = 2 } end,
        "MultiheadAttention: option embed_dim is required")
    T.raises("a fractional embed_dim", function() mha.MultiheadAttention { embed_dim = 4.5, num_heads = 2 } end,
        "MultiheadAttention: option embed_dim must be a positive integer, got 4.5")
    T.raises("heads that do not divide embed_dim", function() mha.MultiheadAttention { embed_dim = 5, num_heads = 2 } end,
        { "MultiheadAttention", "5", "2" })
    T.raises("batch_first=false", function() mha.MultiheadAttention { embed_dim = 4, num_heads = 2, batch_first = false } end,
        "batch_first=false is not supported")
    T.raises("a bad dtype name", function() mha.tensor({ 1 }, "int64") end, "invalid option 'int64'")
    T.raises("a zero step", function() mha.arange(0, 1, 0) end, "arange: step must not be 0")
    -- an infinite step away from an infinite stop: (inf - 0) / -inf is NaN, no element (fuzz_lua's
    -- finding: the NaN count was cast to a size)
    T.eq("arange(0, inf, -inf) is empty", mha.arange(0, math.huge, -math.huge):numel(), 0)
    T.eq("arange(0, -inf, inf) is empty", mha.arange(0, -math.huge, math.huge):numel(), 0)
    T.raises("a zero split size", function() x:split(0) end, "split: split_size must be a positive integer, got 0")
    T.raises("a negative seed", function() mha.seed(-1) end, "seed: the seed must not be negative, got -1")
end)

T.test("parameters by name", function()
    local m = module()
    T.raises("an unknown parameter lists the valid names", function() return m.in_proj_wieght end,
        { "MultiheadAttention: no field 'in_proj_wieght'", "in_proj_weight", "out_proj_bias", "embed_dim" })
    T.raises("assigning an unknown name", function() m.weight = x end,
        { "MultiheadAttention: cannot assign to unknown field 'weight'", "in_proj_weight" })
    T.raises("a parameter of the wrong shape", function() m.out_proj_bias = mha.zeros(3) end,
        "MultiheadAttention: out_proj_bias must be assigned a tensor of shape (4), got a float32 tensor of shape (3)")
    T.raises("a parameter assigned nil", function() m.in_proj_weight = nil end,
        "MultiheadAttention: in_proj_weight must be assigned a tensor of shape (12,4), got nil")
    T.raises("a parameter assigned a number", function() m.out_proj_weight = 1 end,
        "MultiheadAttention: out_proj_weight must be assigned a tensor of shape (4,4), got number")
    T.raises("a parameter assigned a string", function() m.in_proj_bias = "zeros" end,
        "MultiheadAttention: in_proj_bias must be assigned a tensor of shape (12), got string")
    T.raises("a parameter assigned a bool tensor", function() m.out_proj_bias = mha.tensor { true, false, true, false } end,
        "MultiheadAttention: out_proj_bias must be assigned a tensor of shape (4), got a bool tensor of shape (4)")
    T.raises("a parameter assigned a ragged table", function() m.out_proj_bias = { { 1, 2 }, { 3 } } end,
        "MultiheadAttention.out_proj_bias: ragged table: t[2] has 1 element, but t[1] has 2")
    T.raises("a parameter assigned a table of the wrong shape", function() m.out_proj_bias = { { 1, 2, 3, 4 } } end,
        "MultiheadAttention: out_proj_bias must be assigned a tensor of shape (4), got a float32 tensor of shape (1,4)")
    local closed_t = mha.zeros(4)
    closed_t:close()
    T.raises("a parameter assigned a closed tensor", function() m.out_proj_bias = closed_t end,
        "MultiheadAttention: out_proj_bias must be assigned a tensor of shape (4), got a closed tensor")
    T.raises("a read-only field", function() m.embed_dim = 8 end, "MultiheadAttention: embed_dim is read-only")
    T.raises("a parameter this module does not have", function() m.q_proj_weight = mha.zeros(4, 4) end, "q_proj_weight")
end)

T.test("wrong dtypes", function()
    T.raises("a float mask to masked_fill", function() x:masked_fill(mha.zeros(2, 3), 1) end,
        "masked_fill: mask (2,3) is float32; it must be a bool tensor")
    T.raises("a float condition to where", function() mha.where(x, x, x) end, "where: cond (2,3) is float32")
    T.raises("subtracting bool tensors", function() return mha.tensor { true } - mha.tensor { true } end,
        "sub: argument a is a bool tensor")
    T.raises("logical ops need bools", function() mha.logical_and(x, x) end, "logical_and")
end)

T.test("files", function()
    T.raises("a missing file", function() mha.load("/nonexistent/x.npy") end, "load: cannot open '/nonexistent/x.npy'")
    T.raises("not a .npy file", function() mha.load(T.path("tests/lua/testlib.lua")) end, "not a .npy file")
    T.raises("an unwritable path", function() mha.save("/nonexistent/dir/x.npy", x) end, "save: cannot open '/nonexistent/dir/x.npy'")
    T.raises("save without a path", function() mha.save(nil, x) end, "bad argument #1 to 'save' (string expected, got nil)")
end)

T.test("closed objects", function()
    local t = mha.zeros(2)
    t:close()
    T.raises("a closed tensor", function() return t + 1 end, "the tensor was closed")
    T.raises("a closed tensor as an argument", function() mha.matmul(x, t) end, "bad argument #2 to 'matmul' (the tensor was closed)")
    local m = module()
    m:close()
    T.raises("a closed module", function() m:forward(q) end, "the MultiheadAttention was closed")
    T.raises("a closed module's parameter", function() return m.in_proj_weight end, "closed")
    T.raises("assigning to a closed module's parameter", function() m.out_proj_bias = mha.zeros(4) end,
        "MultiheadAttention: cannot assign out_proj_bias: the MultiheadAttention was closed")
end)

-- Out of memory is reported under the function the student called, not the core's allocator ("empty:").
-- The sizes are far past any machine's address space (2^47 bytes), so the allocation always fails.
T.test("out of memory", function()
    T.raises("a module too large to make", function() mha.MultiheadAttention { embed_dim = 1e9, num_heads = 1 } end,
        "MultiheadAttention: out of memory allocating 12000000000000000000 bytes for shape (3000000000,1000000000)")
    T.ok("the constructor's message hides the core's allocator",
        not T.errmsg(mha.MultiheadAttention, { embed_dim = 1e9, num_heads = 1 }):find("empty", 1, true))
    local m = mha.MultiheadAttention { embed_dim = 1, num_heads = 1 }
    local long = mha.zeros(6000000, 1) -- 6e6 queries: (1,1,6e6,6e6) weights are 144 TB
    local weights_msg = "MultiheadAttention.forward: out of memory: the (1,1,6000000,6000000) attention weights need "
        .. "144.0 TB; pass need_weights=false to use the fused path, which never forms them"
    T.raises("forward names itself and the weights that do not fit", function() m:forward(long) end, weights_msg)
    T.raises("m(q) likewise", function() m(long:unsqueeze(1)) end, weights_msg)
    T.raises("trace names itself", function() m:trace(long) end, "MultiheadAttention.trace: out of memory allocating")
    T.raises("sdpa names itself and suggests the fused path", function() mha.sdpa(long, long, long) end,
        "sdpa: out of memory allocating 144000000000000 bytes for shape (6000000,6000000); "
            .. "with need_weights=false the fused path never forms the (L,S) weights")
    T.raises("a plain constructor keeps its own name", function() mha.zeros(1e7, 1e7) end,
        "zeros: out of memory allocating 400000000000000 bytes for shape (10000000,10000000)")
    local wide = mha.zeros(1, 1):expand(6000000, 6000000) -- a view: no memory until copied
    local copy_msg = "contiguous: out of memory allocating 144000000000000 bytes for shape (6000000,6000000)"
    T.raises("a method copying a view names itself, not the core's 'empty'", function() return wide:contiguous() end, copy_msg)
    T.eq("called from C (pcall(mha.contiguous, t)) too, by its name in mha", T.errmsg(mha.contiguous, wide), copy_msg)
    -- each core allocation names the function it allocates for, never "empty" (issue 10, finding 8)
    local path = os.tmpname()
    T.raises("save names itself", function() mha.save(path, wide) end,
        "save: out of memory allocating 144000000000000 bytes for shape (6000000,6000000)")
    os.remove(path)
    T.raises("softmax names itself", function() return mha.softmax(wide, 2) end,
        "softmax: out of memory allocating 144000000000000 bytes for shape (6000000,6000000)")
    T.raises("a bool -> float conversion names float", function() return mha.zeros(1, 1):gt(0):expand(6000000, 6000000):float() end,
        "float: out of memory allocating 36000000000000 bytes for shape (6000000,6000000)")
    T.raises("layer_norm names itself", function() return mha.layer_norm(wide, 6000000) end,
        "layer_norm: out of memory allocating 144000000000000 bytes for shape (6000000,6000000)")
    T.raises("positional_encoding names itself", function() return mha.positional_encoding(6000000, 6000000) end,
        "positional_encoding: out of memory allocating 144000000000000 bytes for shape (6000000,6000000)")
    local huge = mha.zeros(1, 1, 1):expand(1, 10000000000000, 1) -- a view; its copy inside linear cannot be made
    T.raises("the forward names itself, then where memory ran out",
        function() return m:forward(huge, mha.zeros(1, 1, 1), mha.zeros(1, 1, 1), { need_weights = false }) end,
        "MultiheadAttention.forward: linear: out of memory allocating 40000000000000 bytes for shape (1,10000000000000,1)")
    for _, name in ipairs { "softmax", "layer_norm", "positional_encoding" } do
        T.ok(name .. "'s message hides the core's allocator", not select(2, pcall(mha[name], wide, 2)):find("empty", 1, true))
    end
end)

-- The sweep: every function and method, called with every pair (and some triples) from a pool of wrong
-- and right arguments, must return or raise a string; a crash ends the test with no summary line.
T.test("no call crashes", function()
    local function pool()
        local closed = mha.zeros(2)
        closed:close()
        return { n = 13, nil, 0, 1, -1, 2.5, true, "a", {}, { { 1, 2 }, { 3 } }, mha.zeros(2, 3),
            mha.tensor { { true, false } }, closed, mha.tensor(2) }
    end
    local calls, errors, bad = 0, 0, {}
    local function try(label, f, ...)
        calls = calls + 1
        local ok, err = pcall(f, ...)
        if not ok then
            errors = errors + 1
            if type(err) ~= "string" or #err == 0 then bad[#bad + 1] = label .. " raised a " .. type(err) end
        end
    end
    local names = {}
    for name, f in pairs(mha) do
        -- the C functions (the display helpers print; save would write files; seed would reseed)
        if type(f) == "function" and debug.getinfo(f, "S").what == "C" and name ~= "save" and name ~= "seed" then
            names[#names + 1] = name
        end
    end
    table.sort(names)
    for _, name in ipairs(names) do
        local p = pool()
        for i = 1, p.n do
            for j = 1, p.n do
                try(name, mha[name], p[i], p[j])
                try(name, mha[name], p[10], p[i], p[j])
            end
        end
    end
    local methods = getmetatable(x).__methods
    local mnames = {}
    for name in pairs(methods) do mnames[#mnames + 1] = name end
    table.sort(mnames)
    for _, name in ipairs(mnames) do
        local p = pool()
        for i = 1, p.n do
            for j = 1, p.n do
                try("t:" .. name, methods[name], mha.zeros(2, 3), p[i], p[j])
                try("scalar:" .. name, methods[name], mha.tensor(3), p[i], p[j])
                try("bool:" .. name, methods[name], mha.tensor { true, false }, p[i], p[j])
            end
        end
    end
    local m = module()
    local p = pool()
    for _, name in ipairs { "forward", "trace", "parameters" } do
        for i = 1, p.n do
            for j = 1, p.n do
                try("m:" .. name, m[name], m, p[i], p[j])
                try("m:" .. name, m[name], m, q, q, q, { attn_mask = p[i], key_padding_mask = p[j] })
            end
        end
    end
    T.ok(string.format("%d calls, %d errors, every error a message", calls, errors), #bad == 0, table.concat(bad, "; "))
    T.ok("the sweep called enough", calls > 10000, calls .. " calls")
end)

-- The pool above gives a function at most three arguments. Here each function that takes several
-- tensors is called right, then with each tensor (or a tensor in its options) swapped for one of the
-- other dtype, which must raise a message naming the function (unless the call takes either), or of
-- another shape, which may also return. A bool weight read as floats would read past its storage.
T.test("every tensor argument of a right call swapped for a wrong one", function()
    local function f(...) return mha.randn(...) end
    local function b(...) return mha.randn(...):gt(0) end
    local idx = mha.tensor { 1, 3 }
    local calls = {
        { "linear", f(2, 4), f(3, 4), f(3) },
        { "linear_backward", f(2, 3), f(2, 4), f(3, 4) },
        { "layer_norm", f(2, 40), { 40 }, f(40), f(40) },
        { "layer_norm_backward", f(2, 40), f(2, 40), 1, f(40) },
        { "embedding", idx, f(3, 4) },
        { "embedding_backward", f(2, 4), idx, 3 },
        { "cross_entropy", f(2, 3), idx },
        { "cross_entropy_backward", f(2, 3), idx, mha.tensor(1) },
        { "softmax_backward", f(2, 3), f(2, 3), 2 },
        { "log_softmax_backward", f(2, 3), f(2, 3), 2 },
        { "matmul", f(2, 3), f(3, 4) },
        { "masked_fill", f(2, 3), b(2, 3), 0, either = { true } },   -- a bool tensor filled, as in torch
        { "where", b(2, 3), f(2, 3), f(2, 3), either = { false, true, true } },   -- bool and float: float
        { "maximum", f(2, 3), f(2, 3), either = { true, true } },
        { "sdpa", f(2, 3, 4), f(2, 5, 4), f(2, 5, 4), { attn_mask = b(3, 5) } },
        { "sdpa", f(2, 3, 4), f(2, 5, 4), f(2, 5, 4), { attn_mask = f(3, 5) } },
        { "sdpa_backward", f(2, 3, 4), f(2, 3, 4), f(2, 5, 4), f(2, 5, 4),
            { attn_mask = b(3, 5), weights = mha.softmax(f(2, 3, 5), 3) } },
        { "sdpa_backward", f(2, 3, 4), f(2, 3, 4), f(2, 3, 4), f(2, 3, 4), { is_causal = true, out = f(2, 3, 4) } },
        { "rope", f(2, 3, 4) },
        { "sample", f(2, 5), { seed = 1 } },
    }
    local checked, bad = 0, {}
    local function call(label, name, args, must_raise)
        checked = checked + 1
        local ok, err = pcall(mha[name], table.unpack(args, 1, args.n))
        if ok and must_raise then bad[#bad + 1] = label .. ": accepted" end
        if not ok and (type(err) ~= "string" or not err:find(name, 1, true)) then
            bad[#bad + 1] = label .. ": " .. tostring(err)
        end
    end
    local function wrongs(t)   -- the other dtype, the same shape; and a tensor of another shape
        local other = t:dtype() == "bool" and mha.zeros(t:size()) or mha.zeros(t:size()):gt(0)
        return { other, t:dtype() == "bool" and mha.tensor { true } or mha.zeros(7) }
    end
    for _, c in ipairs(calls) do
        local name, args = c[1], table.pack(table.unpack(c, 2))
        call(name .. " as given", name, args)
        T.ok(name .. " right call succeeds", pcall(mha[name], table.unpack(args, 1, args.n)))
        for i = 1, args.n do
            local a = args[i]
            if mha.is_tensor(a) then
                for w, wrong in ipairs(wrongs(a)) do
                    local swapped = table.pack(table.unpack(args, 1, args.n))
                    swapped[i] = wrong
                    call(string.format("%s argument %d wrong %d", name, i, w), name, swapped,
                        w == 1 and not (c.either and c.either[i]))
                end
            elseif type(a) == "table" then
                for key, t in pairs(a) do
                    if mha.is_tensor(t) then
                        for w, wrong in ipairs(wrongs(t)) do
                            local swapped = table.pack(table.unpack(args, 1, args.n))
                            swapped[i] = setmetatable({ [key] = wrong }, { __index = a })
                            for k2, v2 in pairs(a) do if k2 ~= key then swapped[i][k2] = v2 end end
                            call(string.format("%s option %s wrong %d", name, key, w), name, swapped,
                                w == 1 and key ~= "attn_mask")
                        end
                    end
                end
            end
        end
    end
    T.ok(string.format("%d swapped calls, each a message naming its function (or a result)", checked), #bad == 0,
        table.concat(bad, "; "))
end)

-- The library's Lua functions raise their errors without a position inside the library (as C's luaL_error
-- does): a message starting "lua/nn/optim.lua:43:" tells a student nothing, and "attempt to ..." means an
-- argument was never checked. The same pool as above, through every Lua-written entry point.
T.test("Lua-written functions: checked arguments, no library positions", function()
    local entries = {}
    local function add(label, f) entries[#entries + 1] = { label, f } end
    for _, name in ipairs { "clip_grad_norm", "format", "load_model" } do add("mha." .. name, mha[name]) end
    for _, sub in ipairs { "optim", "tasks", "heads" } do
        local names = {}
        for name in pairs(mha[sub]) do names[#names + 1] = name end
        table.sort(names)
        for _, name in ipairs(names) do add("mha." .. sub .. "." .. name, mha[sub][name]) end
    end
    for _, name in ipairs { "Linear", "Embedding", "LayerNorm", "ModuleList", "Sequential", "Transformer" } do
        add("mha.nn." .. name, function(...) return mha.nn[name](...) end)
    end
    local values = { n = 12, nil, 0, -1, 2.5, 0 / 0, true, "a", {}, { 1, 2 }, { lr = -1 }, mha.zeros(2, 3),
        mha.tensor { { true, false } } }
    -- every message names this file's line that made the call (the user's line), never one inside lua/
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
    T.ok(string.format("%d calls through %d Lua entry points, no library position", calls, #entries), #bad == 0,
        table.concat(bad, "\n", 1, math.min(#bad, tonumber(os.getenv("SHOWALL")) or 5)))
    T.ok("the Lua sweep reached clip_grad_norm", #entries > 20, #entries .. " entries")
end)

-- Errors the library's Lua helpers raise (through mha.raise) name the line that called them, however deep in
-- the helpers they are found (format -> render -> check_keys, forward -> tokens_of, train -> make_optimizer):
-- "tests/lua/test_errors.lua:N: format: ..." where N is the line of the call, as "stdin:1:" at the prompt.
T.test("Lua helpers' errors name the caller's line", function()
    local plot, html = require "mha.plot", require "mha.notebook.html"
    local tools, repl = require "mha.lesson.tools", require "mha.repl"
    local function at_caller(name, call, expected)
        local info = debug.getinfo(call, "S")
        local err = T.errmsg(call) or "no error"
        local position = info.short_src .. ":" .. info.linedefined .. ": "
        T.ok(name .. ": at the caller's line", err:sub(1, #position) == position, err)
        T.ok(name .. ": the message", err:find(expected, 1, true) ~= nil, err)
    end
    local saved_output = io.output()
    local printed = io.tmpfile()
    at_caller("printoptions(5)", function() mha.printoptions(5) end, 'printoptions: expected a table of options or "reset", got number')
    at_caller("printoptions typo", function() mha.printoptions { precison = 2 } end,
        "printoptions: unknown option 'precison' (did you mean 'precision'?)")
    at_caller("format options", function() mha.format(x, 5) end, "format: options must be a table, got number")
    at_caller("format typo", function() mha.format(x, { row = 1 }) end, "format: unknown option 'row' (did you mean 'rows'?)")
    io.output(printed)   -- a show or heat that wrongly succeeds prints here, not among the PASS lines
    at_caller("show a ragged table", function() mha.show { { 1 }, 2 } end,
        "show: ragged table: t[2] is a number where a table was expected")
    at_caller("heat zrange", function() mha.heat(x, { zrange = { 1, 0 } }) end, "heat: zrange must be {lo, hi} with lo < hi")
    at_caller("heat of a scalar", function() mha.heat(mha.tensor(1)) end, "heat: expected a tensor with at least one dimension")
    io.output(saved_output)
    at_caller("plot.line logy", function() plot.line { y = { 1, -1 }, logy = true } end, "logy needs positive y")
    at_caller("plot.line series", function() plot.line { { y = { 1 } }, 5 } end, "series 2 is a number")
    at_caller("plot.heatmap font", function() plot.heatmap(x, { font = 3 }) end, "font must be a size in points from 6 to 72")
    at_caller("plot.heatmap options", function() plot.heatmap(x, 5) end, "options must be a table, got number")
    at_caller("plot.save", function() plot.save("a.png") end, "plot.save: no figure: draw something first")
    at_caller("plot.terminal", function() plot.terminal("a b") end, "plot.terminal: expected a terminal name")
    at_caller("Module:extend", function() mha.nn.Module:extend(5) end, "Module:extend: give the class a name")
    local Blank = mha.nn.Module:extend("Blank")
    local blank = Blank()
    at_caller("forward not written", function() blank(x) end, "Blank:forward is not defined")
    at_caller("register_parameter", function() blank:register_parameter("w", 5) end, "w must be a mha.Tensor, got number")
    at_caller("load_state_dict", function() blank:load_state_dict(5) end, "the state dict must be a table key -> tensor")
    local model = mha.nn.Transformer { vocab = 6, d_model = 4, heads = 2, layers = 1, d_ff = 0, max_len = 4 }
    at_caller("Transformer tokens", function() model:forward("a") end, "tokens must be a tensor (N, L) or a table of 1-based ids")
    at_caller("Transformer too long", function() model:forward { { 1, 2, 3, 4, 5 } } end, "longer than max_len 4")
    at_caller("Transformer heads", function() mha.nn.Transformer { vocab = 6, d_model = 5, heads = 2, layers = 1, d_ff = 0, max_len = 4 } end,
        "d_model 5 must be divisible by heads 2")
    at_caller("tasks vocab", function() mha.tasks.reverse { vocab = 1 } end, "option vocab must be a whole number >= 3, got 1")
    at_caller("tasks.show", function() mha.tasks.show { { true } } end, "tasks.show: ids must be whole numbers")
    at_caller("train(5)", function() mha.train(5) end, "train: give a table")
    at_caller("train optimizer", function() mha.train { model = model, task = mha.tasks.reverse { vocab = 6, len = 2 }, steps = 1, optimizer = "x" } end,
        'train: option optimizer must be "adamw", "adam" or "sgd", got x')
    at_caller("train lr", function() mha.train { model = model, task = mha.tasks.reverse { vocab = 6, len = 2 }, steps = 1, lr = "fast" } end,
        "train: option lr must be a number >= 0, got fast")
    at_caller("save_model", function() mha.save_model(5, "m.npz") end, "save_model: model must be a mha.nn.Transformer")
    at_caller("save_model to a missing folder", function() mha.save_model("/no/such/folder/m.npz", model) end,
        "save_model: cannot open")
    at_caller("load_model", function() mha.load_model(5) end, "load_model: give a name")
    at_caller("SGD of nothing", function() mha.optim.SGD({}, { lr = 1 }) end, "the optimizer got an empty parameter list")
    at_caller("clip_grad_norm", function() mha.clip_grad_norm({ x }, -1) end, "max_norm must be a non-negative number, got -1")
    at_caller("html.tensor", function() html.tensor(5) end, "html.tensor: expected a tensor, got number")
    at_caller("LESSON.fails", function() tools.fails("1 + 1") end, "LESSON.fails: 1 + 1 did not fail")
    at_caller("add_command", function() repl.add_command(5) end, "add_command: name must be a word, got 5")
    at_caller("record_step", function() repl.record_step(5) end, "record_step: code must be a string, got number")
    at_caller("on_reset", function() repl.on_reset(5) end, "on_reset: expected a name, a keep function and a resume function")
    printed:seek("set")
    T.eq("nothing printed by the failing show and heat", printed:read("a"), "")
end)

-- cat sums sizes: two (2^62, 0) tensors would make a dim of 2^63, which no constructor can take back
T.test("cat past the largest size", function()
    local half = mha.zeros(2^62, 0)
    T.raises("cat of two (2^62, 0)", function() mha.cat({half, half}, 1) end,
             "cat: joining the 2nd tensor (4611686018427387904,0) makes dim -2 longer than 2^63-1 "
             .. "(4611686018427387904 + 4611686018427387904), the largest size a dim may have")
    local grad_half = mha.zeros(2^62, 0):requires_grad(true)
    T.raises("and with gradients", function() mha.cat({grad_half, half}, 1) end, "longer than 2^63-1")
    T.eq("along the other dim it is fine", mha.cat({half, half}, 2):shape(), {2^62, 0})
end)

T.done()
