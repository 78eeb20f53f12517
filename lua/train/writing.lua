-- lua/train/writing.lua - module "mha.writing": a character model that writes (mha.generate, with
-- the KV cache, streamed at a terminal) and what it is judged by (n-gram baselines, val loss).
--
--   mha.generate(model, tok, prompt, {max_new_tokens = 100, temperature = 1, top_k =, top_p =,
--                seed =, stream =}) -> prompt .. what the model wrote
--   writing.baselines(train, valid, tok) -> unigram, bigram: the mean loss (nats per character) of
--                                           both n-gram models counted on train, on valid
--   writing.val_loss(model, tok, valid, {batches = 8, batch = 32, len = 64, seed = 0}) -> the mean
--                                           loss of the model on fixed windows of valid
--   writing.val_loss(model, task, {batches = 8}) -> the same over batches of any mha.tasks task
--                                           (mha.tasks.masked for a masked model), from its seed

local mha = require "mha.core"
local raise = require "mha.raise"   -- errors at the user's line
local options = require "mha.options"
local module = require "mha.nn.module"   -- the option checks modules share
local term = require "mha.term"     -- whether stdout is a terminal
local i18n = require "mha.i18n"     -- the line after a writing Ctrl-C stopped

local M = {}

-- The ids of a text as a Lua list (encode's tensor read back in pieces, so a long text stays
-- small).
local function id_list(tok, text)
    local ids, out = tok:encode(text), {}
    local n, CHUNK = ids:shape()[1], 1 << 16
    for from = 1, n, CHUNK do
        local part = ids:narrow(1, from, math.min(CHUNK, n - from + 1)):totable()
        for i = 1, #part do out[from + i - 1] = math.tointeger(part[i]) end
    end
    return out
end

-- writing.baselines(train, valid, tok) -> unigram, bigram loss on valid in nats per character.
-- Counted on train with add-one smoothing:
--   unigram  p(b)   = (n(b) + 1) / (N + V)
--   bigram   p(b|a) = (n(a b) + p(b)) / (n(a) + 1)   (the unigram as a prior worth one count)
-- Every character of valid counts; the first one's bigram context is the last character of train.
function M.baselines(train, valid, tok)
    local tr, va, V = id_list(tok, train), id_list(tok, valid), tok.vocab_size
    local uni, pair = {}, {}
    for id = 1, V do uni[id] = 0 end
    for i = 1, #tr do
        local b = tr[i]
        uni[b] = uni[b] + 1
        if i > 1 then
            local row = pair[tr[i - 1]]
            if not row then row = {} pair[tr[i - 1]] = row end
            row[b] = (row[b] or 0) + 1
        end
    end
    local p_uni, following = {}, {}   -- following[a]: how many pairs start with a
    for id = 1, V do p_uni[id] = (uni[id] + 1) / (#tr + V) end
    for a, row in pairs(pair) do
        local n = 0
        for _, c in pairs(row) do n = n + c end
        following[a] = n
    end
    local sum_uni, sum_bi, prev = 0, 0, tr[#tr]
    for i = 1, #va do
        local b = va[i]
        local row = pair[prev] or {}
        sum_uni = sum_uni - math.log(p_uni[b])
        sum_bi = sum_bi - math.log(((row[b] or 0) + p_uni[b]) / ((following[prev] or 0) + 1))
        prev = b
    end
    return sum_uni / #va, sum_bi / #va
end

local VAL_OPTIONS = {"batches", "batch", "len", "seed"}

-- writing.val_loss(model, tok, valid [, opts]) -> the mean cross-entropy (nats per character) over
-- batches batches of windows of valid (mha.tasks.text from seed), the same windows every call.
-- writing.val_loss(model, task [, {batches = 8}]) -> the same over batches of task, whose stream
-- restarts at its seed each call (a masked task's loss counts its masked positions only).
function M.val_loss(model, tok, valid, opts)
    local task
    if type(tok) == "table" and type(tok.batch) == "function" and type(tok.reseed) == "function" then
        task, opts = tok, valid or {}
        options.check("writing.val_loss", opts, {"batches"})
    else
        opts = opts or {}
        options.check("writing.val_loss", opts, VAL_OPTIONS)
        task = require("mha.tasks").text{text = valid, tokenizer = tok, len = opts.len or 64,
                                         batch = opts.batch or 32, seed = opts.seed or 0}
    end
    return require("mha.train").validation_loss(model, task, opts.batches or 8)
end

local GENERATE_OPTIONS = {"max_new_tokens", "temperature", "top_k", "top_p", "seed", "stream"}

-- The arguments of generate checked -> the prompt's ids (a Lua list).
local function checked(fname, model, tok, prompt, opts)
    if type(model) ~= "table" or type(model.new_cache) ~= "function" then
        raise(fname .. ": model must be a mha.nn.Transformer, e.g. from " ..
              "mha.load_model(\"char_en\")")
    end
    if not require("mha.tokenizer").is_tokenizer(tok) then
        raise(fname .. ": tokenizer must be a mha.tokenizer.CharTokenizer, e.g. extra.tokenizer " ..
              "of mha.load_model, got " .. type(tok))
    end
    if model.vocab ~= tok.vocab_size then
        raise(string.format("%s: the model's vocab is %d but the tokenizer has %d characters; " ..
                            "give the tokenizer the model was trained with", fname, model.vocab,
                            tok.vocab_size))
    end
    if type(prompt) ~= "string" then
        raise(string.format("%s: prompt must be a string, got %s", fname, type(prompt)))
    end
    if prompt == "" then raise(fname .. ": prompt is empty; give at least one character") end
    if type(opts) ~= "table" then raise(fname .. ": options must be a table, e.g. {seed = 1}") end
    options.check(fname, opts, GENERATE_OPTIONS)
    local ok, ids = pcall(tok.encode, tok, prompt)
    if not ok then
        raise(fname .. ": prompt " .. tostring(ids):gsub("^.-tokenizer%.encode: ", ""))
    end
    return ids:totable()
end

-- mha.generate(model, tok, prompt [, opts]) -> prompt .. the characters the model wrote, drawn by
-- model:generate with roll = true (mha.sample from the last position's logits, the KV cache, a
-- prompt past max_len read from its last max_len characters, writing on past max_len); seed seeds
-- mha.seed once. At a terminal or in a notebook (or stream = true) each character is written as it
-- comes; Ctrl-C stops the writing, says so on a line of its own, and returns what was written so
-- far.
function M.generate(model, tok, prompt, opts)
    local fname = "mha.generate"
    opts = opts or {}
    local tokens = checked(fname, model, tok, prompt, opts)
    local n_new = module.opt_count(fname, opts, "max_new_tokens", 100)
    local stream = opts.stream
    -- at a terminal, or in a notebook (the kernel sends each write as it comes: mha.output_live)
    if stream == nil then stream = term.isatty(1) or debug.getregistry()["mha.output_live"] == true end
    -- the prompt is written with the first character drawn, so that a sampling option sample
    -- rejects prints its error alone, not after a prompt left without its line end
    local written = {}
    local decode_opts = {max_new_tokens = n_new, temperature = opts.temperature,
                         top_k = opts.top_k, top_p = opts.top_p, seed = opts.seed, roll = true,
                         on_token = function(id)
                             written[#written + 1] = id
                             if stream then
                                 if #written == 1 then io.write(prompt) end
                                 io.write(tok.chars[id]) io.flush()
                             end
                         end}
    -- model:generate's errors (sample's checks) read under this function's name
    local function decode()
        local ok, err = pcall(model.generate, model, tokens, decode_opts)
        if not ok then
            error((tostring(err):gsub("Transformer:generate: ", fname .. ": ", 1)), 0)
        end
    end
    -- Ctrl-C: the REPL's hook raises "interrupted" at the next Lua instruction (or the kernels
    -- stop; a hook still armed after the inner pcall fires inside the outer one), and the
    -- characters written so far are returned
    local stopped = false
    local function guarded()
        local ok, err = pcall(decode)
        if not ok and not tostring(err):find("interrupted", 1, true) then error(err, 0) end
        stopped = not ok
        for _ = 1, 4 do local _ = written[1] end   -- a pending hook fires here, still protected
    end
    local ok, err = pcall(guarded)
    local interrupted = not ok or stopped
    if not ok and not tostring(err):find("interrupted", 1, true) then error(err, 0) end
    if stream then io.write(#written == 0 and prompt or "", "\n") end
    -- a line saying the writing was cut, not ended, in the language of what is printed: on stderr,
    -- where the REPL says "interrupted", so that the text streamed is still the last thing on
    -- stdout (the REPL does not echo a value the input has shown)
    if interrupted then
        local lang = require("mha.display").printoptions().lang
        io.stdout:flush()
        io.stderr:write(i18n.words(lang).train.generate_stopped(#written), "\n")
    end
    local text = prompt .. (#written > 0 and tok:decode(written) or "")
    -- a Ctrl-C caught here still stops a loop that called this, at its next turn (the REPL's hook)
    local later = interrupted and debug.getregistry()["mha.repl.interrupt_later"]
    if later then return later(text) end
    return text
end

return M
