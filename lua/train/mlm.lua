-- lua/train/mlm.lua - module "mha.mlm": a masked (bidirectional) character model at work:
-- mha.fill_mask fills each mask marker of a text from both sides, and what it is judged by.
--
--   mha.fill_mask(model, tok, "In the beg[MASK]nning" [, {top_k = 5}]) -> one list per marker, in
--       order of the text, each {token =, prob =} by falling probability (result[1][1].token is
--       the best guess for the first marker); the marker itself is never a candidate (its logit
--       is left out of the softmax). At the prompt the result prints as a table.
--   mlm.accuracy(model, tok, valid, {windows = 1000, len = 64, seed = 0}) -> the share of
--       characters recovered: in each window of valid one position (not the first or last) is
--       the mask, and the model's argmax is checked against the character that was there
--   mlm.bigram_accuracy(train, valid, tok, same options) -> the share the bigram guess from both
--       neighbours recovers on the same positions: argmax over c of P(c|left)·P(right|c), both
--       counted on train with add-one smoothing

local mha = require "mha.core"
local raise = require "mha.raise"   -- errors at the user's line
local options = require "mha.options"
local i18n = require "mha.i18n"     -- the words of the printed table (room mlm)

local M = {}

-- The words of the printed table, in the language of the printoptions.
local function words() return i18n.words(require("mha.display").printoptions().lang).mlm end

local Filled = {}
Filled.__name = "mha.fill_mask result"

-- The candidates as a table: one block per marker, a row per candidate with its probability.
function Filled:__tostring()
    local said, lines = words(), {}
    for k, list in ipairs(self) do
        lines[#lines + 1] = string.format(said.marker, k, #self, list.position)
        for rank, c in ipairs(list) do
            local shown = c.token == "\n" and "\\n" or c.token == " " and "' '" or c.token
            -- padded by the columns a terminal gives it: a Chinese character takes two
            shown = shown .. string.rep(" ", math.max(0, 4 - require("mha.text").width(shown)))
            lines[#lines + 1] = string.format("  %2d  %s %5.1f%%  %s", rank, shown, 100 * c.prob,
                                              string.rep("█", math.floor(c.prob * 30 + 0.5)))
        end
    end
    return table.concat(lines, "\n")
end

-- The arguments of fill_mask checked -> the text's ids (a Lua list) and top_k.
local function checked(fname, model, tok, text, opts)
    if type(model) ~= "table" or type(model.config) ~= "function" then
        raise(fname .. ": model must be a mha.nn.Transformer, e.g. from " ..
              "mha.load_model(\"char_zh_mlm\"), got " .. type(model))
    end
    if model.causal then
        raise(fname .. ": the model is causal (each position sees only the left); filling a " ..
              "mask needs a model trained with causal = false, e.g. " ..
              "mha.load_model(\"char_zh_mlm\")")
    end
    if not require("mha.tokenizer").is_tokenizer(tok) or not tok.mask_id then
        raise(fname .. ": tokenizer must be a CharTokenizer with a mask marker, e.g. " ..
              "extra.tokenizer of mha.load_model(\"char_zh_mlm\")")
    end
    if model.vocab ~= tok.vocab_size then
        raise(string.format("%s: the model's vocab is %d but the tokenizer has %d ids; give the " ..
                            "tokenizer the model was trained with", fname, model.vocab,
                            tok.vocab_size))
    end
    if type(text) ~= "string" then
        raise(string.format("%s: text must be a string with %s where a character is missing, " ..
                            "got %s", fname, tok.mask_token, type(text)))
    end
    opts = opts or {}
    if type(opts) ~= "table" then raise(fname .. ": options must be a table, e.g. {top_k = 5}") end
    options.check(fname, opts, {"top_k"})
    local top_k = opts.top_k or 5
    if math.type(top_k) ~= "integer" or top_k < 1 then
        raise(string.format("%s: option top_k must be a whole number >= 1, got %s", fname,
                            tostring(opts.top_k)))
    end
    if text == "" then raise(fname .. ": text is empty") end
    local ok, ids = pcall(tok.encode, tok, text)
    if not ok then raise(fname .. ": text " .. tostring(ids):gsub("^.-tokenizer%.encode: ", "")) end
    ids = ids:totable()
    if #ids > model.max_len then
        raise(string.format("%s: the text is %d characters long, longer than the model's " ..
                            "max_len %d", fname, #ids, model.max_len))
    end
    return ids, math.min(top_k, tok.vocab_size - 1)
end

-- mha.fill_mask(model, tok, text [, {top_k = 5}]) -> one list of candidates per mask marker.
function M.fill_mask(model, tok, text, opts)
    local fname = "fill_mask"
    local ids, top_k = checked(fname, model, tok, text, opts)
    local at = {}
    for p, id in ipairs(ids) do if id == tok.mask_id then at[#at + 1] = p end end
    if #at == 0 then
        raise(string.format("%s: the text has no mask marker; write %s where a character is " ..
                            "missing, e.g. \"In the beg%snning\"", fname, tok.mask_token,
                            tok.mask_token))
    end
    local logits = mha.no_grad(function()
        return model:forward({ids}, {need_weights = false})[1]   -- (L, V)
    end)
    local V = tok.vocab_size
    local marker = mha.arange(1, V + 1):eq(tok.mask_id)   -- (V) true at the marker's id
    local result = setmetatable({}, Filled)
    for k, p in ipairs(at) do
        local probs = mha.softmax(logits[p]:masked_fill(marker, -math.huge), 1):totable()
        local order = {}
        for id = 1, V - 1 do order[id] = id end
        table.sort(order, function(a, b)   -- by falling probability, ties by id
            if probs[a] ~= probs[b] then return probs[a] > probs[b] end
            return a < b
        end)
        local list = {position = p}
        for rank = 1, top_k do
            list[rank] = {token = tok.chars[order[rank]], prob = probs[order[rank]]}
        end
        result[k] = list
    end
    return result
end

local EVAL_OPTIONS = {"windows", "len", "seed"}

-- The windows of an evaluation: {start, position} pairs over n ids of valid, from seed; position
-- 2 .. len - 1 so the masked character has both neighbours inside the window.
local function eval_windows(fname, n, opts)
    opts = opts or {}
    options.check(fname, opts, EVAL_OPTIONS)
    local count, len = opts.windows or 1000, opts.len or 64
    if n < len then
        raise(string.format("%s: the text has %d characters, fewer than len %d", fname, n, len))
    end
    local rand = require("mha.tasks").stream(opts.seed or 0)
    local out = {}
    for i = 1, count do out[i] = {rand(n - len + 1), 1 + rand(len - 2)} end
    return out, len
end

-- mlm.accuracy(model, tok, valid [, opts]) -> the share of masked characters the model recovers.
function M.accuracy(model, tok, valid, opts)
    local ids = tok:encode(valid)
    local windows, len = eval_windows("mlm.accuracy", ids:size(1), opts)
    local right, BATCH = 0, 50
    mha.no_grad(function()
        for from = 1, #windows, BATCH do
            local rows, truth = {}, {}
            for i = from, math.min(from + BATCH - 1, #windows) do
                local start, p = windows[i][1], windows[i][2]
                local row = ids:narrow(1, start, len):totable()
                truth[#rows + 1], row[p] = row[p], tok.mask_id
                rows[#rows + 1] = row
            end
            local logits = model:forward(rows, {need_weights = false})   -- (n, L, V)
            -- the marker's own logit never wins: it is the last id, left out of the argmax
            local best = logits:narrow(3, 1, tok.vocab_size - 1):argmax(3):totable()
            for r = 1, #rows do
                if best[r][windows[from + r - 1][2]] == truth[r] then right = right + 1 end
            end
        end
    end)
    return right / #windows
end

-- mlm.bigram_accuracy(train, valid, tok [, opts]) -> the share the two-sided bigram guess recovers.
function M.bigram_accuracy(train, valid, tok, opts)
    local tr, va = tok:encode(train):totable(), tok:encode(valid):totable()
    local V = tok.vocab_size
    local uni, pair = {}, {}
    for id = 1, V do uni[id] = 0 end
    for i = 1, #tr do
        uni[tr[i]] = uni[tr[i]] + 1
        if i > 1 then
            local row = pair[tr[i - 1]] or {}
            pair[tr[i - 1]] = row
            row[tr[i]] = (row[tr[i]] or 0) + 1
        end
    end
    -- log P(b|a) with add-one smoothing: (n(a b) + 1) / (n(a) + V)
    local function logp(a, b)
        return math.log(((pair[a] or {})[b] or 0) + 1) - math.log(uni[a] + V)
    end
    local windows = eval_windows("mlm.bigram_accuracy", #va, opts)
    local right = 0
    for _, w in ipairs(windows) do
        local at = w[1] + w[2] - 1
        local left, right_char, best, best_score = va[at - 1], va[at + 1], nil, -math.huge
        for c = 1, V do
            if c ~= tok.mask_id then
                local score = logp(left, c) + logp(c, right_char)
                if score > best_score then best, best_score = c, score end
            end
        end
        if best == va[at] then right = right + 1 end
    end
    return right / #windows
end

return M
