-- lua/show/textmap.lua - module "mha.textmap": attention maps on text: one visible label per character
-- (␣ for a space, ↵ for a line end), a window of a long sequence, and mha.show_attention.
--
-- The window option (heat, plot.heatmap, plot.heads, show_attention): {at = i, window = n} keeps the
-- n positions that end at position i, on both the query (row) and the key (column) axes. A causal
-- model's query attends only backward, so row i and every key it sees within n positions stay in
-- the picture; near the start the window is positions 1 .. n. at alone takes window 24; window
-- alone ends at the last position.

local mha = require "mha.core"
local raise = require "mha.raise"   -- errors at the user's line
local options = require "mha.options"

local M = {}

M.DEFAULT_WINDOW = 24   -- 24 cells of 3 columns and a row label fit 80 columns

-- Characters that print as nothing (or move the cursor) -> a visible sign of them.
local VISIBLE = {[" "] = "␣", ["\n"] = "↵", ["\t"] = "⇥", ["\r"] = "␍"}

-- M.labels(text) -> a list of one label per character of the UTF-8 string text (one per code point, so
-- a Chinese character is one label), spaces and line ends made visible; a list of strings is taken
-- as it is, each made visible the same way.
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
-- window of opts.at / opts.window, opts' rows, cols and tokens narrowed with it (a copy of opts), and
-- the note "first, last, n" (nil without a window). split(what, given, n, unit) turns a label
-- option into a list (display.label_list). A key axis of another length than the query axis (cross
-- attention) keeps the same positions, clamped to its length.
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

local SHOW_OPTIONS = {"layer", "head", "at", "window", "plot", "title", "values", "color"}

-- The maps show_attention takes: a model's m:attention() list of (B, H, L, L) (layer= picks one,
-- default 1), one layer's (B, H, L, L) or (H, L, L), or one head's (L, L). -> (H, L, L) or (L, L)
local function pick(weights, o)
    if type(weights) == "table" and not mha.is_tensor(weights) then
        local layer = o.layer or 1
        if math.type(layer) ~= "integer" or not weights[layer] then
            raise(string.format("show_attention: layer must be 1..%d (the model's layers), got %s", #weights,
                                tostring(layer)))
        end
        weights = weights[layer]
    elseif o.layer ~= nil and o.layer ~= 1 then
        raise("show_attention: layer= picks from a list of layers (m:attention()); weights is one layer's")
    end
    if not mha.is_tensor(weights) then
        raise("show_attention: weights must be m:attention() or a tensor (B,H,L,L), (H,L,L) or (L,L), got "
              .. type(weights))
    end
    local shape = weights:shape()
    if #shape == 4 then weights = weights:select(1, 1) shape = weights:shape() end
    if #shape < 2 or #shape > 3 or shape[#shape] ~= shape[#shape - 1] then
        raise(string.format("show_attention: weights must be (B,H,L,L), (H,L,L) or (L,L), got %s",
                            require("mha.display").shape_str(weights:shape())))
    end
    if o.head ~= nil then
        if #shape ~= 3 or math.type(o.head) ~= "integer" or o.head < 1 or o.head > shape[1] then
            raise(string.format("show_attention: head must be 1..%d, got %s", #shape == 3 and shape[1] or 1,
                                tostring(o.head)))
        end
        weights = weights[o.head]
    end
    return weights
end

-- mha.show_attention(weights, tokens [, {layer=, head=, at=, window=, plot=, title=, values=}]):
-- the attention of one layer (every head, or head=) over a text, each character labelling its row
-- (query) and column (key); a long text shows the window of window positions (24) ending at at (the
-- last). plot = true draws it with plot.heads / plot.heatmap instead (a window, or in a notebook a
-- figure). Prints (or draws) and returns nothing.
function M.show_attention(weights, tokens, o)
    o = o or {}
    if type(o) ~= "table" then raise("show_attention: options must be a table, got " .. type(o)) end
    options.check("show_attention", o, SHOW_OPTIONS)
    local w = pick(weights, o)
    local L = w:shape()[#w:shape()]
    local labels = M.labels(tokens, "show_attention")
    if #labels ~= L then
        raise(string.format("show_attention: tokens has %d characters, for weights over %d positions", #labels, L))
    end
    if o.at == nil and o.window == nil and L > 32 then o = setmetatable({window = M.DEFAULT_WINDOW}, {__index = o}) end
    local display = require "mha.display"
    local shown, view, note = M.window("show_attention", w, {rows = labels, cols = labels, at = o.at,
                                                            window = o.window}, function(what, given, n, unit)
        return display.label_list("show_attention", what, given, n, unit)
    end)
    local lang = display.printoptions().lang
    local title = o.title
    if title == nil then
        local said = require("mha.i18n").words(lang).print
        title = o.head and string.format(said.head_title, o.head) or said.heads_title
        if note then title = title .. "  " .. string.format(said.window, note[1], note[2], note[3]) end
    end
    if o.plot then
        local plot = require "mha.plot"
        if #shown:shape() == 3 then plot.heads(shown, {rows = view.rows, cols = view.cols, title = title, values = o.values})
        else plot.heatmap(shown, {rows = view.rows, cols = view.cols, title = title, values = o.values}) end
    else
        local dims = #shown:shape() == 3 and require("mha.i18n").words(lang).plot.dims or nil
        display.heat(shown, {rows = view.rows, cols = view.cols, title = title, zrange = {0, 1}, dims = dims,
                             values = o.values, color = o.color})
    end
end

return M
