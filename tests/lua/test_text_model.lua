-- tests/lua/test_text_model.lua - the shipped char_en against its PyTorch copy on real King James
-- windows (tests/fixtures/text/, from tests/fixtures/gen/gen_text_model.py, torch 1.13): logits,
-- loss, every parameter's gradient, 20 AdamW steps of mha.train, generation with and without the
-- KV cache.

local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local ROW_STEP = 11   -- a large gradient is kept as rows 1, 12, 23, ... (gen_text_model.py)

-- The 2-norm of a tensor (its squares summed in float32).
local function norm(t) return math.sqrt((t * t):sum():item()) end

-- char_en as shipped, or nil and a skip when models/ lacks it.
local function char_en(name)
    local ok, model, extra = pcall(mha.load_model, "char_en")
    if not ok then
        T.skip(name, "char_en not shipped: " .. tostring(model))
        return nil
    end
    return model, extra.tokenizer
end

-- Rows 1, 1 + ROW_STEP, ... of a gradient with more than 1024 numbers, or the whole of it.
local function kept(grad)
    local shape = grad:shape()
    local n = 1
    for _, s in ipairs(shape) do n = n * s end
    if n <= 1024 then return grad end
    local rows = {}
    for r = 1, shape[1], ROW_STEP do rows[#rows + 1] = grad:narrow(1, r, 1) end
    return mha.cat(rows, 1)
end

T.test("char_en = torch: logits, loss and every gradient on KJV windows", function()
    local model = char_en("char_en forward")
    if not model then return end
    local fx = mha.load(T.path("tests/fixtures/text/forward.npz"))
    local logits = model:forward(fx.tokens, {need_weights = false})
    -- measured at most 6.2e-6 apart on every kernel variant; a logit near 0 needs the atol
    T.close("logits (4, 64, 63) = torch's", logits, fx.logits, 1e-4, 1e-5)
    local loss = mha.train.loss(logits, fx.targets)
    T.close("cross-entropy loss = torch's", loss, fx.loss, 1e-5, 0)   -- measured 9e-8 relative
    loss:backward()
    local names = model:parameter_names()
    T.eq("53 parameters, as the PyTorch copy's state_dict", #names, 53)
    local params = model:parameters()
    for _, name in ipairs(names) do
        local grad = params[name]:grad()
        T.close("grad norm " .. name .. " = torch's", norm(grad), fx["grad_norm." .. name], 1e-4, 0)
        -- norms measured within 6e-7 relative, elements within 2.1e-6 of the gradient's largest;
        -- an element near 0 is a difference of larger terms: atol 1e-4 of the gradient's largest
        local want = fx["grad." .. name]
        local scale = want:abs():max():item()
        T.close("grad " .. name .. " = torch's", kept(grad), want, 1e-4, 1e-4 * scale)
    end
end)

-- A task that hands mha.train the fixture's batches in order: windows (S, N, L+1).
local function fixed_batches(windows)
    local S, N, L1 = table.unpack(windows:shape())
    local step = 0
    return {batch = function()
        step = step + 1
        local w = windows:select(1, step)
        return w:narrow(2, 1, L1 - 1):contiguous(), w:narrow(2, 2, L1 - 1):contiguous()
    end, steps = S, batch_size = N}
end

T.test("20 steps of mha.train follow torch's AdamW", function()
    local model = char_en("char_en training")
    if not model then return end
    local fx = mha.load(T.path("tests/fixtures/text/train.npz"))
    local task = fixed_batches(fx.windows)
    -- tools/train_models.lua's recipe for char_en: AdamW lr 2e-3 (weight decay 0.01), clip 1.0
    local h = mha.train{model = model, task = task, steps = task.steps, lr = 2e-3, log_every = 1,
                        quiet = true}
    -- each step's loss agrees to float32 rounding (measured at most 1.7e-7 relative on every kernel
    -- variant, not growing over the 20 steps)
    T.close("step 1 loss = torch's", h.loss[1], fx.losses[1], 1e-5, 0)
    T.close("the 20 losses = torch's", mha.tensor(h.loss), fx.losses, 1e-5, 0)
    local params = model:parameters()
    -- the key third of each in_proj_bias has a zero gradient in exact arithmetic (softmax ignores a
    -- constant added to every score), so its gradient is rounding noise that AdamW scales to steps
    -- of +-lr: those norms differ by up to 2.1e-5 relative, the others by 1e-6
    for _, name in ipairs(model:parameter_names()) do
        T.close("after 20 steps, norm of " .. name .. " = torch's", norm(params[name]),
                fx["final_norm." .. name], 1e-4, 0)
    end
end)

T.test("char_en writes the same with the KV cache as without it, on 1 and 2 threads", function()
    local model, tok = char_en("char_en generation")
    if not model then return end
    local prompt = "In the beginning God created"
    local opts = {max_new_tokens = 64 - utf8.len(prompt), temperature = 1, top_k = 10, seed = 7,
                  stream = false}
    local cached = mha.generate(model, tok, prompt, opts)
    local ids = model:generate(tok:encode(prompt), {max_new_tokens = opts.max_new_tokens,
                                                    temperature = 1, top_k = 10, seed = 7,
                                                    cache = false})
    T.eq("cache = no cache within the context of 64", cached, tok:decode(ids))
    T.eq("a 64-character text", utf8.len(cached), 64)
    local before = mha.threads(1)
    local long = {max_new_tokens = 200, temperature = 1, top_k = 10, seed = 3, stream = false}
    local one = mha.generate(model, tok, prompt, long)
    mha.threads(2)
    local two = mha.generate(model, tok, prompt, long)
    mha.threads(before)
    T.eq("200 characters past the context: the same on 1 and 2 threads", two, one)
end)

T.done()
