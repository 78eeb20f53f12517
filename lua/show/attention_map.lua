-- lua/show/attention_map.lua - module "mha.attention_map": mha.show_attention, a model's attention
-- over a text with its characters as row and column labels (lua/show/textmap.lua's window).

local mha = require "mha.core"
local raise = require "mha.raise"   -- errors at the user's line
local options = require "mha.options"
local display = require "mha.display"
local textmap = require "mha.textmap"
local i18n = require "mha.i18n"     -- the titles (room print)

local M = {}

local SHOW_OPTIONS = {"layer", "head", "at", "window", "plot", "title", "values", "color"}

-- The maps show_attention takes: a model's m:attention() list of (B, H, L, L) (layer= picks one,
-- default 1), one layer's (B, H, L, L) or (H, L, L), or one head's (L, L). -> (H, L, L) or (L, L)
local function pick(weights, o)
    if type(weights) == "table" and not mha.is_tensor(weights) then
        local layer = o.layer or 1
        if math.type(layer) ~= "integer" or not weights[layer] then
            raise(string.format("mha.show_attention: " ..
                                "layer must be 1..%d (the model's layers), got %s",
                                #weights, tostring(layer)))
        end
        weights = weights[layer]
    elseif o.layer ~= nil and o.layer ~= 1 then
        raise("mha.show_attention: layer= picks from a list of layers (m:attention()); " ..
              "weights is one layer's")
    end
    if not mha.is_tensor(weights) then
        raise("mha.show_attention: " ..
              "weights must be m:attention() or a tensor (B,H,L,L), (H,L,L) or " ..
              "(L,L), got " .. type(weights))
    end
    local shape = weights:shape()
    if #shape == 4 then weights = weights:select(1, 1) shape = weights:shape() end
    if #shape < 2 or #shape > 3 or shape[#shape] ~= shape[#shape - 1] then
        raise(string.format("mha.show_attention: " ..
                            "weights must be (B,H,L,L), (H,L,L) or (L,L), got %s",
                            display.shape_str(weights:shape())))
    end
    if o.head ~= nil then
        if #shape ~= 3 or math.type(o.head) ~= "integer" or o.head < 1 or o.head > shape[1] then
            raise(string.format("mha.show_attention: head must be 1..%d, got %s",
                                #shape == 3 and shape[1] or 1, tostring(o.head)))
        end
        weights = weights[o.head]
    end
    return weights
end

-- The window show_attention draws: at= and window= as given, or the last DEFAULT_WINDOW positions
-- of a text longer than 32 -> the weights, the labels of its rows and columns, the note
-- {first, last, L} (nil when the whole text is shown).
local function windowed(w, labels, o)
    local at, window = o.at, o.window
    if at == nil and window == nil and #labels > 32 then window = textmap.DEFAULT_WINDOW end
    local function split(what, given, n, unit)
        return display.label_list("mha.show_attention", what, given, n, unit)
    end
    local opts = {rows = labels, cols = labels, at = at, window = window}
    local shown, view, note = textmap.window("mha.show_attention", w, opts, split)
    return shown, view.rows, view.cols, note
end

-- mha.show_attention(weights, tokens [, {layer=, head=, at=, window=, plot=, title=, values=}]):
-- the attention of one layer (every head, or head=) over a text, each character labelling its
-- row (query) and column (key); a long text shows the window of window positions (24) ending at
-- at (the last). plot = true draws it with plot.heads / plot.heatmap instead (a window, or in a
-- notebook a figure). Prints (or draws) and returns nothing.
function M.show_attention(weights, tokens, o)
    o = o or {}
    if type(o) ~= "table" then
        raise("mha.show_attention: options must be a table, got " .. type(o))
    end
    options.check("mha.show_attention", o, SHOW_OPTIONS)
    local w = pick(weights, o)
    local L = w:shape()[#w:shape()]
    local labels = textmap.labels(tokens, "mha.show_attention")
    if #labels ~= L then
        raise(string.format("mha.show_attention: " ..
                            "text has %d characters, for weights over %d positions",
                            #labels, L))
    end
    local shown, rows, cols, note = windowed(w, labels, o)
    local lang = display.printoptions().lang
    local title = o.title
    if title == nil then
        local said = i18n.words(lang).print
        title = o.head and string.format(said.head_title, o.head) or said.heads_title
        if note then title = title .. "  " .. string.format(said.window, note[1], note[2], note[3]) end
    end
    local heads = #shown:shape() == 3
    if o.plot then
        local plot = require "mha.plot"
        local draw = heads and plot.heads or plot.heatmap
        draw(shown, {rows = rows, cols = cols, title = title, values = o.values})
    else
        display.heat(shown, {rows = rows, cols = cols, title = title, zrange = {0, 1},
                             dims = heads and i18n.words(lang).plot.dims or nil,
                             values = o.values, color = o.color})
    end
end

return M
