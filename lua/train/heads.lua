-- lua/train/heads.lua - module "mha.heads": what a trained head does, measured as TransformerLens's head_detector
-- measures it: mha.heads.detect(model, tokens, "previous"|"duplicate"|"induction") -> (layers, heads) scores.
--
-- For one sequence and one head with attention A (L, L) (rows sum to 1) and the 0/1 detection pattern P (L, L):
--   previous:  P[i][i-1] = 1                                   (the token just before)
--   duplicate: P[i][j] = 1 when j < i and tok[j] = tok[i]        (earlier copies of this token)
--   induction: P[i][j] = 1 when 1 < j <= i and tok[j-1] = tok[i] (the token after an earlier copy)
--   score = sum(A ⊙ P) / sum(A)  - TransformerLens's "mul" measure with exclude_bos and exclude_current_token
--   off; sum(A) = L, so it is the mean over all L query positions of the weight on the detected keys, a
--   position with no detected key counting 0. detect averages it over the sequences of tokens (N, L).
-- With r random tokens said twice (mha.tasks.repeated), only the second half has earlier copies, so the
-- induction and duplicate scores are at most r/(2r) = 0.5 and the previous-token score at most (2r-1)/(2r).
-- opts.rows = "detected" averages over the query positions that have a detected key instead (at most 1).

local mha = require "mha"

local M = {}

local KINDS = {previous = true, duplicate = true, induction = true}

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
M.pattern = pattern

local function rows_of(tokens)
    local t = mha.is_tensor(tokens) and tokens or mha.tensor(tokens)
    local shape = t:shape()
    if #shape == 1 then t = t:view(1, shape[1]) end
    local N, L = t:shape()[1], t:shape()[2]
    local rows = {}
    for n = 1, N do
        rows[n] = {}
        for p = 1, L do rows[n][p] = t[n][p] end
    end
    return t, rows
end

-- mha.heads.detect(model, tokens, kind [, {rows = "all"|"detected"}]) -> scores (layers, heads)
function M.detect(model, tokens, kind, opts)
    if not KINDS[kind] then
        error(string.format('heads.detect: kind must be "previous", "duplicate" or "induction", got %s',
                            tostring(kind)), 2)
    end
    opts = opts or {}
    local only_detected = opts.rows == "detected"
    if opts.rows ~= nil and opts.rows ~= "all" and not only_detected then
        error('heads.detect: option rows must be "all" or "detected", got ' .. tostring(opts.rows), 2)
    end
    local t, rows = rows_of(tokens)
    mha.no_grad(function() model:forward(t) end)
    local maps = model:attention()
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
        local total = (w * Q):sum(4):sum(3)            -- (N, H): the counted rows' weight (their count)
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

-- mha.heads.report(model, tokens): the three scores as a table and a heat map per kind; returns them
-- {previous = (layers, heads), duplicate = ..., induction = ...}.
function M.report(model, tokens, opts)
    local result = {}
    local display = require "mha.display"
    for _, kind in ipairs({"previous", "duplicate", "induction"}) do
        local s = M.detect(model, tokens, kind, opts)
        result[kind] = s
        local shape = s:shape()
        local line = {string.format("%-10s", kind)}
        for l = 1, shape[1] do
            local cells = {}
            for h = 1, shape[2] do cells[h] = string.format("%.2f", s[l][h]) end
            line[#line + 1] = string.format(" L%d: %s", l, table.concat(cells, " "))
        end
        print(table.concat(line, " "))
    end
    local rows, cols = {}, {}
    for l = 1, result.induction:shape()[1] do rows[l] = "layer " .. l end
    for h = 1, result.induction:shape()[2] do cols[h] = "h" .. h end
    for _, kind in ipairs({"previous", "induction"}) do
        display.heat(result[kind], {rows = rows, cols = cols, title = kind, zrange = {0, 1}})
    end
    return result
end

return M
