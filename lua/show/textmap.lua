-- lua/show/textmap.lua - module "mha.textmap": what maps of text share: one visible label per
-- character (␣ for a space, ↵ for a line end) and the window of a long sequence.
--
-- The window option (heat, plot.heatmap, plot.heads, show_attention): {at = i, window = n} keeps
-- the n positions that end at position i, on both the query (row) and the key (column) axes. A
-- causal model's query attends only backward, so row i and every key it sees within n positions
-- stay in the picture; near the start the window is positions 1 .. n. at alone takes window 24;
-- window alone ends at the last position.

local mha = require "mha.core"
local raise = require "mha.raise"   -- errors at the user's line

local M = {}

M.DEFAULT_WINDOW = 24   -- 24 cells of 3 columns and a row label fit 80 columns

-- Characters that print as nothing (or move the cursor) -> a visible sign of them.
local VISIBLE = {[" "] = "␣", ["\n"] = "↵", ["\t"] = "⇥", ["\r"] = "␍"}

-- M.labels(text) -> a list of one label per character of the UTF-8 string text (one per code
-- point, so a Chinese character is one label), spaces and line ends made visible; a list of
-- strings is taken as it is, each made visible the same way.
function M.labels(text, fname)
    fname = fname or "textmap.labels"
    local list = {}
    if type(text) == "string" then
        if not utf8.len(text) then raise(fname .. ": tokens is not valid UTF-8 text") end
        for _, c in utf8.codes(text) do
            local ch = utf8.char(c)
            list[#list + 1] = VISIBLE[ch] or ch
        end
    elseif type(text) == "table" then
        for i = 1, #text do
            local s = tostring(text[i])
            list[i] = VISIBLE[s] or (s:gsub("[ \n\t\r]", VISIBLE))
        end
    else
        raise(string.format("%s: tokens must be a string or a list of labels, got %s", fname, type(text)))
    end
    return list
end

-- M.range(fname, n, opts) -> first, count of the window over n positions (nil when opts has neither
-- at nor window): the window positions that end at opts.at, moved to fit 1 .. n.
function M.range(fname, n, opts)
    local at, window = opts.at, opts.window
    if at == nil and window == nil then return nil end
    window = window or M.DEFAULT_WINDOW
    if math.type(window) ~= "integer" or window < 1 then
        raise(string.format("%s: window must be a positive whole number of positions, got %s", fname,
                            tostring(window)))
    end
    at = at or n
    if math.type(at) ~= "integer" or at < 1 or at > n then
        raise(string.format("%s: at must be a position 1..%d (the sequence has %d), got %s", fname, n, n,
                            tostring(at)))
    end
    local count = math.min(window, n)
    local first = math.max(1, math.min(at - count + 1, n - count + 1))
    return first, count
end

-- A part of a label list (nil stays nil): labels first .. first + count - 1.
local function part(list, first, count)
    if type(list) ~= "table" then return list end
    local out = {}
    for i = 1, count do out[i] = list[first + i - 1] end
    return out
end

-- M.window(fname, t, opts, split) -> t narrowed on its last two dimensions (queries, keys) to the
-- window of opts.at / opts.window, opts' rows, cols and tokens narrowed with it (a copy of opts),
-- and the note {first, last, n} (nil without a window). split(what, given, n, unit) turns a label
-- option into a list (display.label_list). A key axis of another length than the query axis
-- (cross attention) keeps the same positions, clamped to its length.
function M.window(fname, t, opts, split)
    if opts.at == nil and opts.window == nil then return t, opts, nil end
    if not mha.is_tensor(t) then t = mha.tensor(t) end
    local shape = t:shape()
    local nd = #shape
    if nd < 2 then raise(string.format("%s: at and window need a map of 2 or more dimensions, got %d", fname, nd)) end
    local L, S = shape[nd - 1], shape[nd]
    local first, count = M.range(fname, L, opts)
    local kfirst = math.min(first, math.max(1, S - count + 1))
    local kcount = math.min(count, S)
    local out = {}
    for k, v in pairs(opts) do out[k] = v end
    out.at, out.window = nil, nil
    if opts.tokens ~= nil then
        local rows = split("tokens", opts.tokens, L, "row")
        out.rows = out.rows == nil and part(rows, first, count) or out.rows
        if S == L then out.cols = out.cols == nil and part(rows, kfirst, kcount) or out.cols end
        out.tokens = nil
    end
    if opts.rows ~= nil then out.rows = part(split("rows", opts.rows, L, "row"), first, count) end
    if opts.cols ~= nil then out.cols = part(split("cols", opts.cols, S, "column"), kfirst, kcount) end
    local narrowed = t:narrow(nd - 1, first, count):narrow(nd, kfirst, kcount)
    return narrowed, out, {first, first + count - 1, L}
end

return M
