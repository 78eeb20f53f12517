-- lua/notebook/html.lua - module "mha.notebook.html": HTML escaping and a tensor as an HTML table
-- (heat-shaded cells, token labels on rows and columns), for the Jupyter kernel's results and the
-- notebook export.

local display = require "mha.display"   -- finite_range, as heat maps shade
local raise = require "mha.raise"   -- errors at the user's line

local M = {}

local ESCAPES = {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;"}

-- A control character as its picture (ESC as ␛, U+241B; DEL as ␡): no control character may appear
-- in an HTML page. Tab and line feed are text; a C1 control (U+0080..U+009F) becomes U+FFFD.
local function control_picture(c)
    if c == "\t" or c == "\n" then return c end
    if c == "\127" then return "\u{2421}" end
    return utf8.char(0x2400 + c:byte())
end

-- s with every character HTML gives a meaning escaped, and its control characters shown as
-- pictures; safe in text and in quoted attributes.
function M.escape(s)
    return (tostring(s):gsub("[&<>\"']", ESCAPES):gsub("[%c\127]", control_picture):gsub("\194[\128-\159]", "\u{FFFD}"))
end

local MAX_ROWS, MAX_COLS, MAX_SLICES = 32, 32, 8

local function is_tensor(v)
    local mt = getmetatable(v)
    return type(mt) == "table" and mt.__name == "mha.Tensor"
end

local function label_list(labels, n)
    if type(labels) ~= "table" then return nil end
    local out = {}
    for i = 1, n do out[i] = labels[i] ~= nil and tostring(labels[i]) or tostring(i) end
    return out
end

-- One number format for a whole tensor, as its printout chooses: whole numbers as such ("1."), else
-- 4 decimals, or scientific notation when the magnitudes need it.
local function number_format(mats)
    local whole, big, small = true, 0, math.huge
    for _, m in ipairs(mats) do
        for _, row in ipairs(m) do
            for _, v in ipairs(row) do
                if v == v and v ~= math.huge and v ~= -math.huge then
                    if v ~= math.floor(v) then whole = false end
                    local a = math.abs(v)
                    if a > big then big = a end
                    if a > 0 and a < small then small = a end
                end
            end
        end
    end
    if whole and big < 1e16 then return "whole" end
    if big >= 1e8 or small < 1e-4 then return "%.4e" end
    return "%.4f"
end

local function format_value(v, fmt)
    if v ~= v then return "nan" end
    if v == math.huge then return "inf" end
    if v == -math.huge then return "-inf" end
    if fmt == "whole" then return string.format("%.0f.", v) end
    return string.format(fmt, v)
end

-- The shading of value v in [lo, hi]: a blue of growing strength (white text on the darker half).
local function cell_style(v, lo, hi)
    -- no shading where the values hardly differ (sums to 1 within rounding): it would show noise
    if v ~= v or hi - lo <= 1e-6 * math.max(math.abs(hi), math.abs(lo), 1) or v == math.huge or v == -math.huge then
        return ""
    end
    local x = (v - lo) / (hi - lo)
    return string.format(' style="background:rgba(33,102,172,%.2f);color:%s"', 0.08 + 0.82 * x,
                         x > 0.55 and "#fff" or "#111")
end

-- One matrix (rows x cols of numbers) as a <table>.
local function matrix_table(rows, row_labels, col_labels, lo, hi, fmt)
    local out = {'<table class="mha-tensor">'}
    local ncols = #(rows[1] or {})
    if col_labels then
        out[#out + 1] = "<thead><tr><th></th>"
        for j = 1, math.min(ncols, MAX_COLS) do out[#out + 1] = "<th>" .. M.escape(col_labels[j]) .. "</th>" end
        if ncols > MAX_COLS then out[#out + 1] = "<th>…</th>" end
        out[#out + 1] = "</tr></thead>"
    end
    out[#out + 1] = "<tbody>"
    for i = 1, math.min(#rows, MAX_ROWS) do
        out[#out + 1] = "<tr><th>" .. M.escape(row_labels[i] or "") .. "</th>"
        for j = 1, math.min(ncols, MAX_COLS) do
            local v = rows[i][j]
            out[#out + 1] = "<td" .. cell_style(v, lo, hi) .. ">" .. format_value(v, fmt) .. "</td>"
        end
        if ncols > MAX_COLS then out[#out + 1] = "<td>…</td>" end
        out[#out + 1] = "</tr>"
    end
    if #rows > MAX_ROWS then out[#out + 1] = '<tr><th>…</th><td colspan="' .. math.min(ncols, MAX_COLS) .. '">…</td></tr>' end
    out[#out + 1] = "</tbody></table>"
    return table.concat(out)
end

-- The matrices a tensor is shown as: a scalar and a vector as one row, a matrix as it is, more
-- dimensions as the matrices of its last two (the first MAX_SLICES), each with its index.
-- The part of t the tables show, read as Lua numbers: its last two dimensions cut to one row and
-- one column past MAX_ROWS and MAX_COLS (so that "…" shows), and each leading dimension to what the
-- first MAX_SLICES matrices use - a (3000,3000) tensor is read as 33x33 numbers, not 9 million.
local function shown_part(t, shape)
    local part, later = t, 1   -- later: how many matrices one index of the dimension spans
    for d = #shape, 1, -1 do
        local keep
        if d == #shape then keep = MAX_COLS + 1
        elseif d == #shape - 1 then keep = MAX_ROWS + 1
        else
            keep = (MAX_SLICES + later - 1) // later
            later = math.max(1, math.min(later * shape[d], MAX_SLICES))   -- (an empty dimension: 1)
        end
        if shape[d] > keep then part = part:narrow(d, 1, keep) end
    end
    return part:totable()
end

local function matrices_of(t, dims)
    local shape = t:shape()
    local data = shown_part(t, shape)
    if #shape == 0 then return {{{data}}}, {""} end
    if #shape == 1 then return {{data}}, {""} end
    if #shape == 2 then return {data}, {""} end
    local mats, captions = {}, {}
    local function walk(node, depth, index)
        if #mats >= MAX_SLICES then return end
        if depth == #shape - 2 then
            mats[#mats + 1] = node
            -- as mha.show labels a slice: "[head 1]" with opts.dims, else its indices
            if dims and #index == 1 and dims[1] then captions[#captions + 1] = "[" .. tostring(dims[1]) .. " " .. index[1] .. "]"
            else captions[#captions + 1] = "[" .. table.concat(index, ", ") .. ", :, :]" end
            return
        end
        for i, child in ipairs(node) do
            index[depth + 1] = i   -- from 1, as the printout's "[1,:,:]"
            walk(child, depth + 1, index)
        end
        index[depth + 1] = nil
    end
    walk(data, 0, {})
    return mats, captions
end

-- html.tensor(t [, opts]) -> an HTML fragment: the title, the shape, the table(s). opts as show's:
-- rows = and cols = label the last two dimensions (tokens), title = heads it.
function M.tensor(t, opts)
    if not is_tensor(t) then raise("html.tensor: expected a tensor, got " .. type(t)) end
    opts = type(opts) == "table" and opts or {}
    local shape = t:shape()
    local mats, captions = matrices_of(t, type(opts.dims) == "table" and opts.dims or nil)
    if #mats == 0 then mats, captions = {{}}, {""} end   -- an empty tensor of 3 or more dimensions
    -- shaded over the numbers shown; lo > hi when none is finite: no shading
    local lo, hi = display.finite_range(mats)
    local fmt = number_format(mats)
    local nrows, ncols = #mats[1], #(mats[1][1] or {})
    -- rows and columns numbered from 1, as t[i][j] counts them, where no labels are given; a vector
    -- is one unlabelled row, a scalar one cell
    local row_labels = #shape >= 2 and label_list(opts.rows or {}, nrows) or {""}
    local col_labels = #shape >= 1 and label_list(#shape >= 2 and opts.cols or opts.cols or opts.rows or {}, ncols)
    local out = {'<div class="mha-tensor-box">'}
    local dims = {}
    for i, n in ipairs(shape) do dims[i] = tostring(n) end
    local head = "tensor (" .. table.concat(dims, ", ") .. ")"
    if opts.title then head = M.escape(opts.title) .. " · " .. head end
    out[#out + 1] = '<div class="mha-tensor-title">' .. head .. "</div>"
    for k, m in ipairs(mats) do
        if captions[k] ~= "" then out[#out + 1] = '<div class="mha-tensor-slice">' .. M.escape(captions[k]) .. "</div>" end
        out[#out + 1] = matrix_table(m, row_labels, col_labels, lo, hi, fmt)
    end
    local slices = 1
    for d = 1, #shape - 2 do slices = slices * shape[d] end
    if #shape > 2 and slices > #mats then
        out[#out + 1] = '<div class="mha-tensor-slice">… (the first ' .. #mats .. " slices)</div>"
    end
    out[#out + 1] = "</div>"
    return table.concat(out)
end

-- The style of tensor tables, written once into an exported page (notebook front ends take the
-- inline shading alone).
M.TENSOR_CSS = [[
.mha-tensor-box { margin: 0.4em 0; }
.mha-tensor-title { font-weight: 600; margin-bottom: 0.2em; }
.mha-tensor-slice { color: #555; font-size: 90%; margin: 0.3em 0 0.1em; }
table.mha-tensor { border-collapse: collapse; font-family: "DejaVu Sans Mono", monospace; font-size: 85%; }
table.mha-tensor th, table.mha-tensor td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
table.mha-tensor th { background: #f4f4f4; font-weight: 600; }
]]

return M
