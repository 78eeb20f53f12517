-- lua/train/heads.lua - module "mha.heads": what a trained head does, measured as TransformerLens's
-- head_detector measures it: mha.heads.detect(model, tokens, "previous"|"duplicate"|"induction") ->
-- (layers, heads) scores.
--
-- For one sequence and one head with attention A (L, L) (rows sum to 1) and the 0/1 detection
-- pattern P (L, L):
--   previous:  P[i][i-1] = 1                                   (the token just before)
--   duplicate: P[i][j] = 1 when j < i and tok[j] = tok[i]        (earlier copies of this token)
--   induction: P[i][j] = 1 when 1 < j <= i and tok[j-1] = tok[i] (the token after an earlier copy)
--   score = sum(A ⊙ P) / sum(A)  - TransformerLens's "mul" measure with exclude_bos and
--   exclude_current_token off; sum(A) = L, so it is the mean over all L query positions of the
--   weight on the detected keys, a position with no detected key counting 0. detect averages it
--   over the sequences of tokens (N, L).
-- With r random tokens said twice (mha.tasks.repeated), only the second half has earlier copies, so
-- the induction and duplicate scores are at most r/(2r) = 0.5 and the previous-token score at most
-- (2r-1)/(2r). opts.rows = "detected" averages over the query positions that have a detected key
-- instead (at most 1).

local mha = require "mha.core"
local raise = require "mha.raise"   -- errors at the user's line
local i18n = require "mha.i18n"     -- the report's words (room heads)

local M = {}

local KINDS = {previous = true, duplicate = true, induction = true}

local function check_kind(fname, kind)
    if not KINDS[kind] then
        raise(string.format('%s: kind must be "previous", "duplicate" or "induction", got %s', fname,
                            tostring(kind)))
    end
end

-- The pattern P for one sequence (a Lua list of ids) as a Lua table of rows.
local function pattern(tok, kind)
    local L = #tok
    local P = {}
    for i = 1, L do
        local row = {}
        for j = 1, L do
            local v = 0
            if kind == "previous" then v = (j == i - 1) and 1 or 0
            elseif kind == "duplicate" then v = (j < i and tok[j] == tok[i]) and 1 or 0
            else v = (j > 1 and j <= i and tok[j - 1] == tok[i]) and 1 or 0 end
            row[j] = v
        end
        P[i] = row
    end
    return P
end

-- tokens (N, L) or (L) as a tensor or a Lua table of whole numbers -> the tensor (N, L), checked.
local function token_tensor(fname, tokens)
    local t = tokens
    if not mha.is_tensor(t) then
        local ok, made = pcall(mha.tensor, t)
        if type(t) ~= "table" or not ok then
            raise(string.format("%s: tokens must be a tensor (N, L) or (L) of symbol ids, got %s", fname, type(t)))
        end
        t = made
    end
    local shape = t:shape()
    if (#shape ~= 1 and #shape ~= 2) or t:numel() == 0 or t:dtype() ~= "float32" then
        raise(string.format("%s: tokens must be a non-empty float tensor (N, L) or (L) of symbol ids, got %s %s",
                            fname, t:dtype(), require("mha.display").shape_str(shape)))
    end
    if #shape == 1 then t = t:view(1, shape[1]) end
    return t
end

-- mha.heads.pattern(tokens, kind) -> the 0/1 pattern (L, L) of one sequence, as a tensor
function M.pattern(tokens, kind)
    check_kind("heads.pattern", kind)
    local t = token_tensor("heads.pattern", tokens)
    if t:shape()[1] ~= 1 then
        raise(string.format("heads.pattern: tokens must be one sequence (L), got %d sequences", t:shape()[1]))
    end
    local tok = {}
    for p = 1, t:shape()[2] do tok[p] = t[1][p] end
    return mha.tensor(pattern(tok, kind))
end

local function check_model(fname, model)
    if type(model) ~= "table" or type(model.forward) ~= "function" or type(model.attention) ~= "function" then
        raise(string.format("%s: model must be a mha.nn.Transformer (a model with :attention()), got %s", fname,
                            type(model)))
    end
end

local function rows_of(fname, tokens)
    local t = token_tensor(fname, tokens)
    local N, L = t:shape()[1], t:shape()[2]
    local rows = {}
    for n = 1, N do
        rows[n] = {}
        for p = 1, L do rows[n][p] = t[n][p] end
    end
    return t, rows
end

local function check_opts(fname, opts)
    opts = opts or {}
    if type(opts) ~= "table" then raise(string.format('%s: options must be a table, e.g. {rows = "detected"}, got %s',
                                                      fname, type(opts))) end
    if opts.rows ~= nil and opts.rows ~= "all" and opts.rows ~= "detected" then
        raise(string.format('%s: option rows must be "all" or "detected", got %s', fname, tostring(opts.rows)))
    end
    return opts
end

-- The attention maps of one forward of model over the tokens (N, L):
-- {layer 1's weights (N, H, L, L), ...}.
local function attention_of(model, tokens)
    mha.no_grad(function() model:forward(tokens) end)
    return model:attention()
end

-- The scores (layers, heads) of kind from the maps of the sequences rows (Lua lists of ids).
local function scores(maps, rows, kind, only_detected)
    local N, L = #rows, #rows[1]
    local P, qmask = {}, {}
    for n = 1, N do
        P[n] = pattern(rows[n], kind)
        qmask[n] = {}
        for i = 1, L do
            local any = 0
            for j = 1, L do any = math.max(any, P[n][i][j]) end
            qmask[n][i] = {(only_detected and any or 1)}
        end
    end
    local Pt = mha.tensor(P):view(N, 1, L, L)
    local Q = mha.tensor(qmask):view(N, 1, L, 1)
    local out = {}
    for layer, w in ipairs(maps) do
        local hit = (w * Pt * Q):sum(4):sum(3)         -- (N, H)
        local total = (w * Q):sum(4):sum(3)        -- (N, H): the counted rows' weight (their count)
        local H = w:shape()[2]
        local score = (hit / total):mean(1)             -- (H)
        local row = {}
        for h = 1, H do
            local s = score[h]
            row[h] = s == s and s or 0   -- no counted position at all: 0
        end
        out[layer] = row
    end
    return mha.tensor(out)
end

-- mha.heads.detect(model, tokens, kind [, {rows = "all"|"detected"}]) -> scores (layers, heads)
function M.detect(model, tokens, kind, opts)
    check_model("heads.detect", model)
    check_kind("heads.detect", kind)
    opts = check_opts("heads.detect", opts)
    local t, rows = rows_of("heads.detect", tokens)
    return scores(attention_of(model, t), rows, kind, opts.rows == "detected")
end

-- The report's result echoes at the prompt as one line, not as its three tables again: report
-- printed them.
local REPORT = {__name = "heads.report", __tostring = function(r)
    return string.format("heads.report {previous, duplicate, induction}: (layers, heads) = %s each",
                         require("mha.display").shape_str(r.induction:shape()))
end}

-- mha.heads.report(model, tokens): the three scores as a table and a heat map per kind, in the
-- language of the printoptions (a Chinese lesson sets "zh"); returns them
-- {previous = (layers, heads), duplicate = ..., induction = ...}.
function M.report(model, tokens, opts)
    check_model("heads.report", model)
    opts = check_opts("heads.report", opts)
    local t, rows = rows_of("heads.report", tokens)
    local maps = attention_of(model, t)   -- one forward serves the three kinds
    -- the printoptions' language
    local said = i18n.words(require("mha.display").printoptions().lang).heads
    local width = require("mha.text").width
    local result = {}
    for _, kind in ipairs({"previous", "duplicate", "induction"}) do
        local s = scores(maps, rows, kind, opts.rows == "detected")
        result[kind] = s
        local shape = s:shape()
        local line = {said[kind] .. string.rep(" ", 10 - width(said[kind]))}
        for l = 1, shape[1] do
            local cells = {}
            for h = 1, shape[2] do cells[h] = string.format("%.2f", s[l][h]) end
            line[#line + 1] = " " .. string.format(said.layer_short, l) .. table.concat(cells, " ")
        end
        print(table.concat(line, " "))
    end
    local rows, cols = {}, {}
    for l = 1, result.induction:shape()[1] do rows[l] = string.format(said.layer, l) end
    for h = 1, result.induction:shape()[2] do cols[h] = string.format(said.head, h) end
    for _, kind in ipairs({"previous", "induction"}) do
        require("mha.display").heat(result[kind], {rows = rows, cols = cols, title = said[kind], zrange = {0, 1}})
    end
    return setmetatable(result, REPORT)
end

return M
