-- lua/train/tasks.lua - module "mha.tasks": seeded toy tasks for mha.train (copy, reverse, sort,
-- match, induction, difference) and windows of real text (text).
-- mha.tasks.NAME{vocab=, len=, batch=, seed=} -> a task whose :batch() returns tokens and targets;
-- mha.tasks.show prints token ids as whole numbers.
--
-- Every task is next-token prediction for a causal model: tokens (N, L) and targets (N, L), both
-- whole numbers in float32 tensors; targets[n][p] is the token that should follow position p, or 0
-- where the position does not count (the loss and the accuracy skip it). Symbols are 1 .. vocab-1;
-- vocab itself is the separator SEP.
--   copy/reverse/sort, len = n:  x1 .. xn SEP y1 .. y(n-1)  (L = 2n); y is x, x reversed, or x
--                                sorted; positions n+1 .. 2n count, predicting y1 .. yn.
--   match, len = p pairs:        k1 v1 .. kp vp SEP kq  (L = 2p + 2); keys distinct; the last
--                                position counts, predicting vq (the value paired with kq).
--   induction, len = L:          random symbols with one stretch of r symbols (a .. a+r-1)
--                                repeated at b >= a+r; r is drawn from repeat = {min, max}
--                                (default {4, L // 2}) and a, b at random, so no fixed offset
--                                solves it; positions b .. b+r-2 count, predicting the repeat's
--                                next symbol.
--   difference, len = L:         random symbols x1 .. xL (1 .. vocab, no separator); positions
--                                p >= 3 count, with target x(p-1) - x(p-2) wrapped into 1 .. vocab
--                                (vocab stands for 0): each answer needs the tokens one and two
--                                back at once, and tells them apart (b - a is another answer than
--                                a - b). The token at p itself plays no part: the residual would
--                                hand it to the output without any head.
--   text{text=, tokenizer=, len=L, batch=, seed=}: windows of L characters at random places of
--                                a real text (mha.data), every position counting: targets[p] is
--                                the character after tokens[p], so targets are the tokens shifted
--                                by one. vocab is the tokenizer's vocab_size (a tokenizer is built
--                                from the text when none is given).
--   masked{text=, tokenizer=, len=L, batch=, seed=, p=0.15}: masked-character prediction for a
--                                model with causal = false (BERT's rule): in each window of L
--                                characters round(p*L) positions (at least 1) are chosen; a
--                                chosen position's token becomes the tokenizer's mask id with
--                                probability 0.8, a random character's id with 0.1, and stays
--                                with 0.1. targets[p] is the original character at a chosen
--                                position and 0 elsewhere. The tokenizer needs a mask marker
--                                (CharTokenizer(text, {mask = "[MASK]"}), built so when none is
--                                given).

local raise = require "mha.raise"   -- errors at the user's line
local options = require "mha.options"
local M = {}

local NAMES = {"copy", "reverse", "sort", "match", "induction", "difference"}

-- A splitmix64 stream: the same numbers for a seed on every machine (Lua 5.4 integers wrap).
local function stream(seed)
    local s = math.tointeger(seed) or 0
    return function(n)   -- a whole number in 1 .. n
        s = s + 0x9E3779B97F4A7C15
        local z = s
        z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
        z = (z ~ (z >> 27)) * 0x94D049BB133111EB
        z = z ~ (z >> 31)
        return (z >> 11) % n + 1
    end
end
M.stream = stream

local Task = {}
Task.__index = Task

function Task:__tostring()
    return string.format("mha.tasks.%s{vocab = %d, len = %d, batch = %d} (sequences of %d tokens)", self.name,
                         self.vocab, self.len, self.batch_size, self.seq_len)
end

-- task:reseed(seed): start the stream again (mha.train does this with its own seed).
function Task:reseed(seed)
    self.seed = seed
    self.rand = stream(seed)
    return self
end

-- task:batch([n]) -> tokens (n, L), targets (n, L); n defaults to the task's batch.
function Task:batch(n)
    n = n or self.batch_size
    local mha = require "mha.core"
    local toks, tgts = {}, {}
    for i = 1, n do toks[i], tgts[i] = self:example() end
    return mha.tensor(toks), mha.tensor(tgts)
end

local function symbols(rand, count, vocab)
    local x = {}
    for i = 1, count do x[i] = rand(vocab - 1) end
    return x
end

-- copy / reverse / sort: x SEP y, predicting y.
local function sequence_example(transform)
    return function(self)
        local n, V = self.len, self.vocab
        local x = symbols(self.rand, n, V)
        local y = transform(x)
        local seq = {}
        for i = 1, n do seq[i] = x[i] end
        seq[n + 1] = V
        for i = 1, n do seq[n + 1 + i] = y[i] end
        local tokens, targets = {}, {}
        for p = 1, 2 * n do
            tokens[p] = seq[p]
            targets[p] = p > n and seq[p + 1] or 0
        end
        return tokens, targets
    end
end

local examples = {
    copy = sequence_example(function(x) return x end),
    reverse = sequence_example(function(x)
        local y = {}
        for i = 1, #x do y[i] = x[#x + 1 - i] end
        return y
    end),
    sort = sequence_example(function(x)
        local y = table.move(x, 1, #x, 1, {})
        table.sort(y)
        return y
    end),
}

function examples.match(self)
    local p, V, rand = self.len, self.vocab, self.rand
    local keys, pool = {}, {}
    for s = 1, V - 1 do pool[s] = s end
    for i = 1, p do   -- p distinct keys: a partial Fisher-Yates shuffle
        local j = i - 1 + rand(#pool - i + 1)
        pool[i], pool[j] = pool[j], pool[i]
        keys[i] = pool[i]
    end
    local values = symbols(rand, p, V)
    local tokens, targets = {}, {}
    for i = 1, p do
        tokens[2 * i - 1], tokens[2 * i] = keys[i], values[i]
    end
    local q = rand(p)
    tokens[2 * p + 1], tokens[2 * p + 2] = V, keys[q]
    for i = 1, 2 * p + 2 do targets[i] = 0 end
    targets[2 * p + 2] = values[q]
    return tokens, targets
end

function examples.induction(self)
    local L, V, rand = self.len, self.vocab, self.rand
    local lo, hi = self.repeat_range[1], self.repeat_range[2]
    local r = lo + rand(hi - lo + 1) - 1
    local tokens = symbols(rand, L, V + 1)   -- every symbol 1 .. vocab: induction has no separator
    local a = rand(L - 2 * r + 1)
    local b = a + r - 1 + rand(L - r + 1 - (a + r) + 1)
    for i = 0, r - 1 do tokens[b + i] = tokens[a + i] end
    local targets = {}
    for p = 1, L do targets[p] = (p >= b and p <= b + r - 2) and tokens[p + 1] or 0 end
    return tokens, targets
end

function examples.difference(self)
    local L, V = self.len, self.vocab
    local tokens = symbols(self.rand, L, V + 1)   -- every symbol 1 .. vocab
    local targets = {0, 0}
    for p = 3, L do targets[p] = (tokens[p - 1] - tokens[p - 2] - 1) % V + 1 end
    return tokens, targets
end

local function check_size(fname, opts, key, def, min)
    local v = opts[key]
    if v == nil then v = def end
    if math.type(v) ~= "integer" and not (type(v) == "number" and v == math.floor(v)) or v < min then
        raise(string.format("%s: option %s must be a whole number >= %d, got %s", fname, key, min, tostring(v)))
    end
    return math.tointeger(v)
end

local function make(name)
    return function(opts)
        local fname = "tasks." .. name
        opts = opts or {}
        if type(opts) ~= "table" then raise(fname .. ": options must be a table, e.g. mha.tasks." .. name ..
                                            "{vocab = 10, len = 8, batch = 32}") end
        options.check(fname, opts, name == "induction" and {"vocab", "len", "batch", "seed", "repeat"}
                                   or {"vocab", "len", "batch", "seed"})
        local t = setmetatable({name = name}, Task)
        t.vocab = check_size(fname, opts, "vocab", 10, 3)
        local long = name == "induction" or name == "difference"
        t.len = check_size(fname, opts, "len", long and 24 or 6, long and 4 or 1)
        t.batch_size = check_size(fname, opts, "batch", 32, 1)
        t.example = examples[name]
        if name == "match" and t.len > t.vocab - 1 then
            raise(string.format("%s: len %d pairs need %d distinct keys but vocab %d has only %d symbols", fname,
                                t.len, t.len, t.vocab, t.vocab - 1))
        end
        if name == "induction" then
            local rr = opts["repeat"] or {math.min(4, t.len // 2), t.len // 2}
            if type(rr) == "number" then rr = {rr, rr} end
            if type(rr) ~= "table" or math.type(rr[1]) ~= "integer" or math.type(rr[2]) ~= "integer" or rr[1] < 2
               or rr[1] > rr[2] or 2 * rr[2] > t.len then
                raise(string.format("%s: option repeat must be {min, max} whole numbers with 2 <= min <= max and " ..
                                    "2*max <= len (%d)", fname, t.len))
            end
            t.repeat_range = {rr[1], rr[2]}
            t.seq_len = t.len
        elseif name == "match" then
            t.seq_len = 2 * t.len + 2
        elseif name == "difference" then
            t.seq_len = t.len
        else
            t.seq_len = 2 * t.len
        end
        t:reseed(opts.seed or 0)
        return t
    end
end

for _, name in ipairs(NAMES) do M[name] = make(name) end

local TextTask = setmetatable({}, {__index = Task})
TextTask.__index = TextTask

function TextTask:__tostring()
    return string.format("mha.tasks.text{len = %d, batch = %d} (%d characters, vocab %d)", self.len,
                         self.batch_size, self.ids:size(1), self.vocab)
end

-- task:batch([n]) -> tokens (n, L), targets (n, L): n windows of the text at random starts; targets
-- are the window one character later.
function TextTask:batch(n)
    n = n or self.batch_size
    local mha = require "mha.core"
    local toks, tgts = {}, {}
    local starts = self.ids:size(1) - self.len   -- a window and the character after it fit
    for i = 1, n do
        local a = self.rand(starts)
        toks[i] = self.ids:narrow(1, a, self.len)
        tgts[i] = self.ids:narrow(1, a + 1, self.len)
    end
    return mha.stack(toks, 1), mha.stack(tgts, 1)
end

-- The options tasks.text and tasks.masked share, checked -> the task's fields: its tokenizer (one
-- built from the text when none is given; with the mask marker for a masked task, which needs one),
-- len, batch_size and the text's ids, of at least `extra` + len characters.
local function text_task(fname, opts, allowed, masked, extra)
    local example = masked and "mha.tasks.masked" or "mha.tasks.text"
    if type(opts) ~= "table" then
        raise(fname .. ": options must be a table, e.g. " ..
              example .. "{text = mha.data.text(\"kjv\"), len = 64}")
    end
    options.check(fname, opts, allowed)
    local tokenizer = require "mha.tokenizer"
    if type(opts.text) ~= "string" then
        raise(fname .. ": option text must be a string, e.g. mha.data.text(\"kjv\"), got " ..
              type(opts.text))
    end
    local marker = masked and {mask = "[MASK]"} or nil
    local tok = opts.tokenizer
    if tok == nil then
        tok = tokenizer.CharTokenizer(opts.text, marker)
    elseif not tokenizer.is_tokenizer(tok) then
        raise(fname .. ": option tokenizer must be a tokenizer, e.g. " ..
              (masked and "mha.tokenizer.CharTokenizer(text, {mask = \"[MASK]\"}), got "
                      or "mha.tokenizer.CharTokenizer(text), got ") .. type(tok))
    elseif masked and not tok.mask_id then
        raise(fname .. ": the tokenizer has no mask marker; build it with " ..
              "mha.tokenizer.CharTokenizer(text, {mask = \"[MASK]\"})")
    end
    local t = {tokenizer = tok, vocab = tok.vocab_size}
    t.len = check_size(fname, opts, "len", 64, 1)
    t.batch_size = check_size(fname, opts, "batch", 32, 1)
    t.seq_len = t.len
    t.ids = tok:encode(opts.text)
    if t.ids:size(1) < t.len + extra then
        raise(string.format("%s: the text has %d characters; windows of len %d need at least %d",
                            fname, t.ids:size(1), t.len, t.len + extra))
    end
    return t
end

-- mha.tasks.text{text=, tokenizer=, len=64, batch=32, seed=0}: random windows of text, for a
-- character model.
function M.text(opts)
    local fname = "tasks.text"
    local t = text_task(fname, opts, {"text", "tokenizer", "len", "batch", "seed"}, false, 1)
    t.name = "text"
    setmetatable(t, TextTask)
    t:reseed(opts.seed or 0)
    return t
end

local MaskedTask = setmetatable({}, {__index = Task})
MaskedTask.__index = MaskedTask

function MaskedTask:__tostring()
    return string.format("mha.tasks.masked{len = %d, batch = %d, p = %g} (%d characters, " ..
                         "vocab %d, mask id %d)", self.len, self.batch_size, self.p, self.ids:size(1),
                         self.vocab, self.tokenizer.mask_id)
end

-- One window's tokens and targets (Lua lists of L ids) from the window's ids: BERT's rule on
-- `chosen` positions drawn without repeats (a partial Fisher-Yates shuffle).
function MaskedTask:example_of(window)
    local L, rand, mask_id = self.len, self.rand, self.tokenizer.mask_id
    local tokens, targets, order = {}, {}, {}
    for p = 1, L do tokens[p], targets[p], order[p] = window[p], 0, p end
    for i = 1, self.chosen do
        local j = i - 1 + rand(L - i + 1)
        order[i], order[j] = order[j], order[i]
        local p = order[i]
        targets[p] = window[p]
        local roll = rand(10)   -- 1..8 the mask, 9 a random character, 10 kept
        if roll <= 8 then
            tokens[p] = mask_id
        elseif roll == 9 then
            tokens[p] = rand(mask_id - 1)   -- ids 1 .. mask_id - 1 are the characters
        end
    end
    return tokens, targets
end

-- task:batch([n]) -> tokens (n, L), targets (n, L): n windows at random starts, masked.
function MaskedTask:batch(n)
    n = n or self.batch_size
    local mha = require "mha.core"
    local toks, tgts = {}, {}
    local starts = self.ids:size(1) - self.len + 1
    for i = 1, n do
        local window = self.ids:narrow(1, self.rand(starts), self.len):totable()
        toks[i], tgts[i] = self:example_of(window)
    end
    return mha.tensor(toks), mha.tensor(tgts)
end

-- mha.tasks.masked{text=, tokenizer=, len=64, batch=32, seed=0, p=0.15}: masked characters of
-- text, for a model with causal = false.
function M.masked(opts)
    local fname = "tasks.masked"
    local t = text_task(fname, opts, {"text", "tokenizer", "len", "batch", "seed", "p"}, true, 0)
    local p = opts.p == nil and 0.15 or opts.p
    if type(p) ~= "number" or not (p > 0 and p <= 1) then
        raise(string.format("%s: option p (the share of positions chosen) must be a number in " ..
                            "(0, 1], got %s", fname, tostring(opts.p)))
    end
    t.name, t.p = "masked", p
    setmetatable(t, MaskedTask)
    t.chosen = math.max(1, math.floor(p * t.len + 0.5))
    t:reseed(opts.seed or 0)
    return t
end

-- mha.tasks.repeated(vocab, r, n, seed) -> tokens (n, 2r): n sequences of r random symbols, each
-- said twice (the detectors' probe: on the second half an induction head looks at the token after
-- the first one).
function M.repeated(vocab, r, n, seed)
    local mha = require "mha.core"
    for i, a in ipairs({{"vocab", vocab, 2}, {"r", r, 1}, {"n", n, 1}, {"seed", seed or 0, 0}}) do
        if math.type(a[2]) ~= "integer" or a[2] < a[3] then
            raise(string.format("tasks.repeated: argument #%d (%s) must be a whole number >= %d, got %s; " ..
                                "e.g. mha.tasks.repeated(10, 8, 4)", i, a[1], a[3], tostring(a[2])))
        end
    end
    local rand = stream(seed or 0)
    local rows = {}
    for i = 1, n do
        local x = symbols(rand, r, vocab + 1)
        local row = {}
        for j = 1, r do row[j], row[r + j] = x[j], x[j] end
        rows[i] = row
    end
    return mha.tensor(rows)
end

-- mha.tasks.show(ids [, opts]): token ids (a (L) or (N, L) tensor or Lua table of whole numbers)
-- printed as the whole numbers they are, one sequence a line, right-aligned ("3  4 10", where a
-- float tensor prints "3.  4. 10."); opts.title is printed above them, opts.zero replaces every 0
-- (targets: "-" for a position that does not count).
function M.show(ids, opts)
    local mha = require "mha.core"
    opts = opts or {}
    if type(opts) ~= "table" then
        raise("tasks.show: opts must be a table such as {title = \"tokens\", zero = \"-\"}, got " .. type(opts))
    end
    local t = ids
    if not mha.is_tensor(t) then
        local ok, made = pcall(mha.tensor, ids)
        if not ok or type(ids) ~= "table" then
            raise("tasks.show: ids must be a tensor or a table of token ids, got " .. type(ids))
        end
        t = made
    end
    local shape = t:shape()
    if #shape == 1 then t, shape = t:view(1, shape[1]), {1, shape[1]} end
    if #shape ~= 2 then
        raise(string.format("tasks.show: ids must be 1-D (L) or 2-D (N, L), got shape (%s)",
                            table.concat(shape, ",")))
    end
    local rows = t:totable()
    -- 2: ids below 100 line up from call to call
    local width = math.max(2, #tostring(opts.zero or ""))
    for n, row in ipairs(rows) do
        for p, v in ipairs(row) do
            local id = math.tointeger(v)
            if not id then
                raise(string.format("tasks.show: ids must be whole numbers; ids[%d][%d] is %s", n, p, tostring(v)))
            end
            row[p] = (id == 0 and opts.zero) and tostring(opts.zero) or tostring(id)
            width = math.max(width, #row[p])
        end
    end
    if opts.title then print(opts.title) end
    for _, row in ipairs(rows) do
        for p, v in ipairs(row) do row[p] = string.rep(" ", width - #v) .. v end
        print(table.concat(row, " "))
    end
end

return M
