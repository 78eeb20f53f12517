-- lua/show/display.lua - module "mha.display": tensors printed for people
-- (aligned columns, NumPy's rules for decimals and scientific notation, token labels, summaries,
-- wrapping) and as shaded heat maps.
--
-- Its format, show, printoptions and heat are mha's (lua/mha.lua); a Tensor's __tostring is
-- mha.format. It also formats plain nested Lua tables of numbers or booleans.

local mha = require "mha.core"   -- the bindings
local term = require "mha.term"
local raise = require "mha.raise"   -- errors at the user's line
local option_tables = require "mha.options"
local i18n = require "mha.i18n"   -- the words a printed tensor carries (room print)

local M = {}

-- ---------------------------------------------------------------------------------------------
-- Options
-- ---------------------------------------------------------------------------------------------

-- linewidth nil: the terminal's width when stdout is a terminal, else 80 (so output piped to a file
-- or a test is the same everywhere). sci_mode nil: decided per tensor, as NumPy does. whole
-- "exact": values print as "3." when every one is a whole number (NumPy, PyTorch); "shown": when
-- every one shows as a whole number at `precision` decimals, so that 0.99999994 and 1 print alike
-- on every CPU (lessons).
local DEFAULTS = { precision = 4, threshold = 1000, edgeitems = 3, linewidth = nil, sci_mode = nil, lang = "en",
                   whole = "exact" }
local options = {}
for k, v in pairs(DEFAULTS) do options[k] = v end

local OPTION_CHECK = {
    precision = function(v) return math.type(v) == "integer" and v >= 0 and v <= 16, "an integer 0..16" end,
    threshold = function(v) return math.type(v) == "integer" and v >= 0, "an integer >= 0" end,
    edgeitems = function(v) return math.type(v) == "integer" and v >= 1, "an integer >= 1" end,
    linewidth = function(v) return v == "auto" or (math.type(v) == "integer" and v >= 10), "an integer >= 10 or \"auto\"" end,
    sci_mode = function(v) return type(v) == "boolean" or v == "auto", "true, false or \"auto\"" end,
    lang = function(v) return v == "en" or v == "zh", "\"en\" or \"zh\"" end,
    whole = function(v) return v == "exact" or v == "shown", "\"exact\" or \"shown\"" end,
}

-- The few words a printed tensor carries, in the language of the printoptions
-- (a lesson in Chinese sets "zh").
local function words(lang) return i18n.words(lang).print end

-- Text safe to print: control characters (which could move the cursor or change colours) become
-- "?".
local function clean_text(s)
    return (tostring(s):gsub("[%c]", "?"))
end

-- "1 label", "2 labels", "1 entry", "3 entries": a number with its noun, plural when it is not 1.
local function count(n, noun, plural)
    return n .. " " .. (n == 1 and noun or plural or noun .. "s")
end

-- A value's type for a message: "nil", "a string", "a table".
local function a_type(v)
    return v == nil and "nil" or "a " .. type(v)
end

-- Option tables are checked by the one checker of the library (lua/bind/options.lua): "show:
-- unknown option 'row' (did you mean 'rows'?); valid options: rows, cols, title, ..."
local check_keys, closest = option_tables.check, option_tables.closest

local PRINT_OPTIONS = { "precision", "threshold", "edgeitems", "linewidth", "sci_mode", "lang", "whole" }

local function copy_options()
    local out = {}
    for k, v in pairs(options) do out[k] = v end
    return out
end

-- Checks the printing options in `given` (a table) and returns them merged over `base`.
local function merge_options(fname, base, given)
    local merged = {}
    for k, v in pairs(base) do merged[k] = v end
    for k in pairs(OPTION_CHECK) do
        local v = given[k]
        if v ~= nil then
            local ok, want = OPTION_CHECK[k](v)
            if not ok then
                raise(string.format("%s: option %s must be %s, got %s", fname, k, want, tostring(v)))
            end
            if v == "auto" then v = nil end
            merged[k] = v
        end
    end
    return merged
end

-- mha.printoptions{precision=, threshold=, edgeitems=, linewidth=, sci_mode=, lang=} sets the
-- options for every later print (lang: "en" or "zh", the words a print carries, as "columns 1-6");
-- mha.printoptions() returns them; mha.printoptions("reset") restores the defaults.
function M.printoptions(given)
    if given == nil then return copy_options() end
    if given == "reset" then
        options = {}
        for k, v in pairs(DEFAULTS) do options[k] = v end
        return copy_options()
    end
    if type(given) ~= "table" then
        raise("printoptions: expected a table of options or \"reset\", got " .. type(given))
    end
    check_keys("printoptions", given, PRINT_OPTIONS, false)
    options = merge_options("printoptions", options, given)
    return copy_options()
end

local function linewidth_of(opts)
    if opts.linewidth then return opts.linewidth end
    if term.isatty(io.stdout) then return term.columns(io.stdout) end
    return 80
end

-- ---------------------------------------------------------------------------------------------
-- Sources: a tensor or a nested Lua table, seen as a shape, a dtype and a way to read one element
-- ---------------------------------------------------------------------------------------------

local is_tensor = mha.is_tensor

-- Shape of a nested table, checked rectangular, and whether its leaves are booleans.
local function table_shape(fname, t)
    local shape, leaf_type = {}, nil
    local function walk(x, d, where)
        if type(x) == "table" then
            if shape[d] == nil then shape[d] = #x
            elseif shape[d] ~= #x then
                raise(string.format("%s: ragged table: %s has %s where %d were expected", fname, where,
                    count(#x, "entry", "entries"), shape[d]))
            end
            for i = 1, #x do walk(x[i], d + 1, where .. "[" .. i .. "]") end
        else
            if shape[d] ~= nil then
                raise(string.format("%s: ragged table: %s is %s where a table was expected", fname, where, a_type(x)))
            end
            if type(x) ~= "number" and type(x) ~= "boolean" then
                raise(string.format("%s: %s is %s, not a number or boolean", fname, where, a_type(x)))
            end
            leaf_type = leaf_type or type(x)
        end
    end
    walk(t, 1, "t")
    -- an empty table {} has shape (0); trailing nils from the first walk are impossible
    return shape, leaf_type == "boolean"
end

-- source(fname, t) -> { shape = {...}, dtype = "float32"|"bool"|..., read = function(idx) }
-- idx is a list of 1-based indices, one per dimension. `whole` says every element will be read,
-- so a tensor is converted once with totable() rather than element by element.
local function source(fname, t, whole)
    if is_tensor(t) then
        local shape = t:shape()
        local src = { shape = shape, dtype = t:dtype(), tensor = true }
        if #shape == 0 then
            src.read = function() return t:get() end
        elseif whole then
            local data = t:totable()
            src.read = function(idx)
                local x = data
                for d = 1, #idx do x = x[idx[d]] end
                return x
            end
        else
            src.read = function(idx) return t:get(table.unpack(idx)) end
        end
        return src
    elseif type(t) == "boolean" then
        return { shape = {}, dtype = "bool", read = function() return t end }
    elseif type(t) == "number" then
        -- shown as the 0-d tensor mha.tensor(t) would make: rounded to float32, "[float32 ()]"
        local value = t
        if math.abs(t) >= 3.4028235677973366e38 then   -- FLT_MAX + half an ulp and up round to
                                                       -- infinity
            value = t > 0 and math.huge or -math.huge
        elseif t == t then
            value = string.unpack("f", string.pack("f", t))
        end
        return { shape = {}, dtype = "float32", read = function() return value end }
    elseif type(t) == "table" then
        local shape, is_bool = table_shape(fname, t)
        return {
            shape = shape, dtype = is_bool and "bool" or "table",
            read = function(idx)
                local x = t
                for d = 1, #idx do x = x[idx[d]] end
                return x
            end,
        }
    end
    raise(string.format("%s: expected a tensor, a number or a table, got %s", fname, a_type(t)))
end

local function shape_str(shape)
    local parts = {}
    for i, n in ipairs(shape) do parts[i] = tostring(n) end
    return "(" .. table.concat(parts, ",") .. ")"
end

local function numel(shape)
    local n = 1
    for _, s in ipairs(shape) do n = n * s end
    return n
end

-- The indices shown along a dimension of size n: all of them, or when summarising the first and
-- last `edge` with the marker "..." between (only when that hides at least one index).
local function shown_indices(n, summarise, edge)
    local ix = {}
    if summarise and n > 2 * edge then
        for i = 1, edge do ix[#ix + 1] = i end
        ix[#ix + 1] = "..."
        for i = n - edge + 1, n do ix[#ix + 1] = i end
    else
        for i = 1, n do ix[i] = i end
    end
    return ix
end

-- ---------------------------------------------------------------------------------------------
-- Numbers to text: NumPy's rules, with a fixed number of decimals
-- ---------------------------------------------------------------------------------------------

-- Chooses how to write every number of one tensor, from the values that will be shown:
--   scientific when some magnitude demands it (NumPy: of the finite non-zero |x|, max >= 1e8, or
--   min < 1e-4, or max/min > 1e3), unless sci_mode forces it on or off;
--   integers as "3." when every finite value is a whole number (NumPy and PyTorch do the same), or
--   with whole = "shown" when every finite value shows as one at `precision` decimals;
--   otherwise `precision` decimals.
local function number_format(values, opts)
    local lo, hi, all_whole = math.huge, 0, true
    local fixed = "%." .. opts.precision .. "f"
    local function whole(v)
        if opts.whole == "shown" then return not string.format(fixed, v):find("%.%d*[1-9]") end
        return v == math.floor(v)
    end
    for _, v in ipairs(values) do
        if v == v and v ~= math.huge and v ~= -math.huge then
            local a = math.abs(v)
            if a ~= 0 then
                if a < lo then lo = a end
                if a > hi then hi = a end
            end
            if not whole(v) then all_whole = false end
        end
    end
    local sci = opts.sci_mode
    if sci == nil then
        sci = hi > 0 and (hi >= 1e8 or lo < 1e-4 or hi / lo > 1e3)
    end
    local p = opts.precision
    if sci then return "%." .. p .. "e", false end
    if all_whole then return "%.0f", true end
    return "%." .. p .. "f", false
end

local function format_number(v, fmt, whole)
    if v ~= v then return "nan" end
    if v == math.huge then return "inf" end
    if v == -math.huge then return "-inf" end
    local s = string.format(fmt, v)
    -- -0, and a negative number that rounds to zero, is written without its sign
    if s:sub(1, 1) == "-" and not s:find("[1-9]") then s = s:sub(2) end
    if whole then s = s .. "." end
    return s
end

-- ---------------------------------------------------------------------------------------------
-- Labels
-- ---------------------------------------------------------------------------------------------

local MAX_LABEL = 24   -- cells; longer labels are cut and end in "…"

-- A row or column label: clean, and cut when wider than MAX_LABEL cells so one long token cannot
-- push the matrix off the screen. (Titles are not cut: they stand on a line of their own.)
local function clean_label(s)
    s = clean_text(s)
    if term.width(s) > MAX_LABEL then s = term.truncate(s, MAX_LABEL - 1) .. "…" end
    return s
end


-- Labels from a list, or from a string: split on spaces, or into characters when it has none
-- (a Chinese sentence -> one label per character). There must be n of them (n rows, or n `unit`).
local function label_list(fname, what, given, n, unit)   -- unit: "row", "column", "value"
    if given == nil then return nil end
    local list = {}
    if type(given) == "string" then
        if given:find("%s") then
            for word in given:gmatch("%S+") do list[#list + 1] = word end
        else
            for _, c in utf8.codes(given, true) do list[#list + 1] = utf8.char(c) end
        end
    elseif type(given) == "table" then
        for i = 1, #given do list[i] = given[i] end
    else
        raise(string.format("%s: %s must be a list of labels or a string, got %s", fname, what, a_type(given)))
    end
    if #list ~= n then
        raise(string.format("%s: %s has %s, for %s", fname, what, count(#list, "label"),
            count(n, unit or "row")))
    end
    for i = 1, #list do list[i] = clean_label(list[i]) end
    return list
end

local function pad_left(s, width) return string.rep(" ", width - term.width(s)) .. s end
local function pad_right(s, width) return s .. string.rep(" ", width - term.width(s)) end

-- "[1,:,:]", or "[head 1]" when every leading dimension has a name in dims.
local function slice_label(index, ndim, dims)
    local named = dims ~= nil
    for d = 1, #index do
        if type(dims) ~= "table" or type(dims[d]) ~= "string" then named = false end
    end
    local parts = {}
    if named then
        for d = 1, #index do parts[d] = clean_label(dims[d]) .. " " .. index[d] end
        return "[" .. table.concat(parts, ", ") .. "]"
    end
    for d = 1, #index do parts[d] = tostring(index[d]) end
    for _ = #index + 1, ndim do parts[#parts + 1] = ":" end
    return "[" .. table.concat(parts, ",") .. "]"
end

-- Every combination of the shown indices of the leading dimensions (those before the last two), in
-- order; a combination containing "..." is the single marker "..." (one marker line per gap).
local function leading_slices(ix, nlead)
    local slices = { {} }
    for d = 1, nlead do
        local grown = {}
        for _, prefix in ipairs(slices) do
            if prefix == "..." then
                grown[#grown + 1] = "..."
            else
                for _, i in ipairs(ix[d]) do
                    if i == "..." then
                        grown[#grown + 1] = "..."
                    else
                        local s = { table.unpack(prefix) }
                        s[#s + 1] = i
                        grown[#grown + 1] = s
                    end
                end
            end
        end
        -- runs of markers collapse into one
        slices = {}
        for _, s in ipairs(grown) do
            if not (s == "..." and slices[#slices] == "...") then slices[#slices + 1] = s end
        end
    end
    return slices
end

-- ---------------------------------------------------------------------------------------------
-- The 2-D grid: rows of cells, wrapped to the line width
-- ---------------------------------------------------------------------------------------------

local SEP = "  "

-- Lays out one matrix. cells[r][c] are strings (rows and columns as shown, "..." included), and
-- cells[r] is the string "..." for the marker row of a summary;
-- col_index[c] is the original column index or "..."; row_labels/col_labels may be nil.
-- Returns the lines.
local function layout(cells, col_index, row_labels, col_labels, cell_width, linewidth, words)
    local ncols = #col_index
    local widths = {}
    for c = 1, ncols do
        local w = cell_width
        if col_index[c] == "..." then w = 3 end
        if col_labels and col_labels[c] then w = math.max(w, term.width(col_labels[c])) end
        widths[c] = w
    end
    local label_width = 0
    if row_labels then
        for _, l in ipairs(row_labels) do label_width = math.max(label_width, term.width(l)) end
    end
    local lead = row_labels and label_width + #SEP or 0

    -- greedy chunks of columns that fit in linewidth (at least one column per chunk)
    local chunks, start, used = {}, 1, lead
    for c = 1, ncols do
        local w = widths[c] + (c > start and #SEP or 0)
        if c > start and used + w > linewidth then
            chunks[#chunks + 1] = { start, c - 1 }
            start, used = c, lead + widths[c]
        else
            used = used + w
        end
    end
    if ncols > 0 then chunks[#chunks + 1] = { start, ncols } end

    local lines = {}
    for k, chunk in ipairs(chunks) do
        local first, last = chunk[1], chunk[2]
        if #chunks > 1 then
            if k > 1 then lines[#lines + 1] = "" end
            -- the marker names original column numbers: the first and last real ones in the chunk
            local a, b
            for c = first, last do
                if col_index[c] ~= "..." then a = a or col_index[c]; b = col_index[c] end
            end
            if a == nil then lines[#lines + 1] = words.more_columns
            elseif a == b then lines[#lines + 1] = string.format(words.column, a)
            else lines[#lines + 1] = string.format(words.columns, a, b) end
        end
        if col_labels then
            local parts = {}
            for c = first, last do parts[#parts + 1] = pad_left(col_labels[c] or "", widths[c]) end
            lines[#lines + 1] = (string.rep(" ", lead) .. table.concat(parts, SEP)):gsub("%s+$", "")
        end
        for r, row in ipairs(cells) do
            local prefix = row_labels and pad_right(row_labels[r], label_width) .. SEP or ""
            if row == "..." then
                lines[#lines + 1] = prefix .. "..."
            else
                local parts = {}
                for c = first, last do parts[#parts + 1] = pad_left(row[c], widths[c]) end
                lines[#lines + 1] = (prefix .. table.concat(parts, SEP)):gsub("%s+$", "")
            end
        end
    end
    return lines
end

-- ---------------------------------------------------------------------------------------------
-- format and show
-- ---------------------------------------------------------------------------------------------

-- The shared work of format/show/heat: the source, the options, the shown indices and the slices.
local function plan(fname, t, opts)
    local o = merge_options(fname, options, opts)
    local probe = source(fname, t, false)
    local shape = probe.shape
    -- no element: only the footer is printed, so nothing is read, however many empty rows (1e7,0)
    -- has
    if numel(shape) == 0 then return probe, o, {} end
    local summarise = numel(shape) > o.threshold
    local src = summarise and probe or source(fname, t, true)
    local ix = {}
    for d = 1, #shape do ix[d] = shown_indices(shape[d], summarise, o.edgeitems) end
    return src, o, ix
end

-- The footer: "[float32 (3,4)]".
local function footer(src)
    return "[" .. src.dtype .. " " .. shape_str(src.shape) .. "]"
end

-- Reads the values of every shown element, slice by slice: values[s][r][c] (nil at "..." places),
-- and a flat list of them for the format decision.
local function gather(src, ix, slices)
    local ndim = #src.shape
    local rows_ix = ndim >= 2 and ix[ndim - 1] or { 1 }
    local cols_ix = ndim >= 1 and ix[ndim] or { 1 }
    local flat, grids = {}, {}
    for s, prefix in ipairs(slices) do
        if prefix ~= "..." then
            local grid = {}
            for r, i in ipairs(rows_ix) do
                grid[r] = {}
                if i ~= "..." then
                    for c, j in ipairs(cols_ix) do
                        if j ~= "..." then
                            local idx = { table.unpack(prefix) }
                            if ndim >= 2 then idx[#idx + 1] = i end
                            if ndim >= 1 then idx[#idx + 1] = j end
                            local v = src.read(idx)
                            grid[r][c] = v
                            flat[#flat + 1] = v
                        end
                    end
                end
            end
            grids[s] = grid
        end
    end
    return grids, flat, rows_ix, cols_ix
end

-- mha.format(t [, opts]) -> the text of t: its elements in aligned columns, then "[dtype (shape)]".
-- opts: the printoptions, plus rows=, cols= (token labels), title=, dims= (names of dimensions).
local FORMAT_OPTIONS = { "rows", "cols", "title", "dims", table.unpack(PRINT_OPTIONS) }

local function render(fname, t, opts)
    opts = opts or {}
    if type(opts) ~= "table" then raise(fname .. ": options must be a table, got " .. type(opts)) end
    check_keys(fname, opts, FORMAT_OPTIONS, false)
    local src, o, ix = plan(fname, t, opts)
    local shape, ndim = src.shape, #src.shape
    local lines = {}
    if opts.title ~= nil then lines[#lines + 1] = clean_text(opts.title) end
    if numel(shape) == 0 then
        lines[#lines + 1] = footer(src)
        return table.concat(lines, "\n")
    end

    local nlead = math.max(ndim - 2, 0)
    local slices = leading_slices(ix, nlead)
    local grids, flat, rows_ix, cols_ix = gather(src, ix, slices)

    -- one format for the whole tensor, so every slice lines up with every other
    local text_of
    if src.dtype == "bool" then
        text_of = function(v) return (v == true or (type(v) == "number" and v ~= 0)) and "true" or "false" end
    else
        local fmt, whole = number_format(flat, o)
        text_of = function(v) return format_number(v, fmt, whole) end
    end
    local cell_width = 0
    local texts = {}
    for s, grid in pairs(grids) do
        texts[s] = {}
        for r = 1, #rows_ix do
            texts[s][r] = {}
            if rows_ix[r] == "..." then texts[s][r] = "..." end
            for c = 1, (rows_ix[r] == "...") and 0 or #cols_ix do
                local v = grid[r][c]
                local text = (v == nil) and "..." or text_of(v)
                if v ~= nil then cell_width = math.max(cell_width, #text) end
                texts[s][r][c] = text
            end
        end
    end

    local nrows = ndim >= 2 and shape[ndim - 1] or 1
    local ncols = ndim >= 1 and shape[ndim] or 1
    local row_labels = ndim >= 2 and label_list(fname, "rows", opts.rows, nrows, "row") or nil
    local col_labels = ndim >= 1 and label_list(fname, "cols", opts.cols, ncols, "column") or nil
    local function pick(labels, shown)
        if labels == nil then return nil end
        local out = {}
        for k, i in ipairs(shown) do out[k] = (i == "...") and "" or labels[i] end
        return out
    end
    row_labels, col_labels = pick(row_labels, rows_ix), pick(col_labels, cols_ix)

    local width = linewidth_of(o)
    for s, prefix in ipairs(slices) do
        if nlead > 0 then
            if s > 1 then lines[#lines + 1] = "" end
            if prefix == "..." then
                lines[#lines + 1] = "..."
            else
                lines[#lines + 1] = slice_label(prefix, ndim, opts.dims)
            end
        end
        if prefix ~= "..." then
            local cells = texts[s]
            for _, line in ipairs(layout(cells, cols_ix, row_labels, col_labels, cell_width, width, words(o.lang))) do
                lines[#lines + 1] = line
            end
        end
    end
    lines[#lines + 1] = footer(src)
    return table.concat(lines, "\n")
end

function M.format(t, opts)
    return render("format", t, opts)
end

-- mha.show(t [, opts]) prints mha.format(t, opts): token labels on rows and columns, a title.
function M.show(t, opts)
    io.write(render("show", t, opts), "\n")
end

-- ---------------------------------------------------------------------------------------------
-- heat: a matrix as shaded cells
-- ---------------------------------------------------------------------------------------------

-- Without colour: eight bar heights, lowest to highest. A bar is drawn in the terminal's own text
-- colour, so it reads on a light background and a dark one alike, and eight levels tell 0.14 from
-- 0.20.
local SHADES = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" }
local NAN_MARK = "?"                          -- a NaN cell: no place on the scale
-- With colour: twelve steps of a viridis-like ramp of the 256-colour palette, from purple through
-- teal to yellow-green. None is near black or near white, so neither end vanishes into a dark or a
-- light terminal (a gray ramp loses its top on white and its bottom on black); the value printed in
-- a cell (values=true) is white on the dark half, black on the light half.
local RAMP = { 53, 54, 61, 67, 31, 37, 36, 72, 71, 107, 149, 185 }
local RAMP_DARK = 6                           -- steps 1..6 take white text

-- Colour as opts.color says, else as the one policy (term.colour, lua/sys/lterm.c) says for stdout.
local function use_colour(opts)
    if opts.color ~= nil then return opts.color and true or false end
    return term.colour(io.stdout)
end

local MAX_HEAT_ROWS = 64

-- mha.heat(t [, opts]) -> prints t (1-D, 2-D or more, as slices) as shaded cells with a scale.
-- opts: rows=, cols= (labels), title=, zrange={lo,hi}, dims=, color=true|false (default: detect),
-- values=true|decimals (each cell also shows its value, 2 decimals for true), at=, window= (the
-- window of window positions ending at position at, on the rows and the columns: mha.textmap).
-- Position in the range: x = (v - lo) / (hi - lo); level k of n covers x in [(k-1)/n, k/n), the top
-- value taking the last (n = 8 bar heights, or 12 colours).
local HEAT_OPTIONS = { "rows", "cols", "title", "zrange", "dims", "color", "values", "at", "window",
                       table.unpack(PRINT_OPTIONS) }

-- The level (1..n) of position x in [0, 1].
local function level_of(x, n) return math.min(n, math.floor(x * n) + 1) end

-- The smallest and largest finite number in matrices (lists of rows of values; NaN, inf, -inf and
-- non-numbers left out), as heat maps shade them: here, in plot.heatmap and in a notebook's tables.
-- lo > hi (math.huge, -math.huge) when there is none.
local function finite_range(mats)
    local lo, hi = math.huge, -math.huge
    for _, m in ipairs(mats) do
        for _, row in ipairs(m) do
            for _, v in ipairs(row) do
                if type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge then
                    lo, hi = math.min(lo, v), math.max(hi, v)
                end
            end
        end
    end
    return lo, hi
end

-- The range the shades span: opts.zrange, else the finite values' min and max
-- ({0, 1} when none is).
local function heat_range(opts, flat)
    if opts.zrange then
        if type(opts.zrange) ~= "table" or type(opts.zrange[1]) ~= "number" or type(opts.zrange[2]) ~= "number"
            or not (opts.zrange[1] < opts.zrange[2]) then
            raise("heat: zrange must be {lo, hi} with lo < hi")
        end
        return opts.zrange[1], opts.zrange[2]
    end
    local lo, hi = finite_range({ { flat } })
    if lo > hi then return 0, 1 end   -- nothing finite
    return lo, hi
end

-- The matrices heat shades: t checked, then its slices gathered (at most MAX_HEAT_ROWS rows each)
-- into a table the steps below share; a bool tensor's cells as 0 and 1, on the scale {0, 1}.
local function heat_gather(t)
    local shape = source("heat", t, false).shape   -- checked before any element is read
    local ndim = #shape
    if ndim == 0 then raise("heat: expected a tensor with at least one dimension, got a scalar") end
    if numel(shape) == 0 then raise("heat: the tensor is empty, shape " .. shape_str(shape) .. ": nothing to shade") end
    local src = source("heat", t, true)
    local ix = {}
    for d = 1, ndim do
        ix[d] = {}
        for i = 1, math.min(shape[d], d == ndim - 1 and MAX_HEAT_ROWS or math.huge) do ix[d][i] = i end
    end
    local nlead = math.max(ndim - 2, 0)
    local slices = leading_slices(ix, nlead)
    local grids, flat, rows_ix, cols_ix = gather(src, ix, slices)
    if src.dtype == "bool" then
        for _, grid in pairs(grids) do
            for _, row in pairs(grid) do
                for c, v in pairs(row) do row[c] = (v == true or v == 1) and 1 or 0 end
            end
        end
        flat = { 0, 1 }
    end
    return { src = src, shape = shape, ndim = ndim, nlead = nlead, slices = slices, grids = grids,
             flat = flat, rows_ix = rows_ix, cols_ix = cols_ix }
end

-- How the map is drawn: the range and colour, the cells' format and width (cw), the row labels'
-- width, the columns that fit the line (shown_cols).
local function heat_layout(map, opts, o)
    map.lo, map.hi = heat_range(opts, map.flat)
    map.colour = use_colour(opts)
    local decimals = opts.values == true and 2 or opts.values
    if decimals ~= nil and decimals ~= false and not (math.type(decimals) == "integer" and decimals >= 0 and decimals <= 6) then
        raise("heat: values must be true, false or a number of decimals 0..6")
    end
    map.value_format = decimals and "%." .. decimals .. "f" or nil
    local shape, ndim = map.shape, map.ndim
    map.nrows = ndim >= 2 and shape[ndim - 1] or 1
    map.ncols = shape[ndim]
    map.row_labels = ndim >= 2 and label_list("heat", "rows", opts.rows, map.nrows, "row") or nil
    map.col_labels = label_list("heat", "cols", opts.cols, map.ncols, "column")
    local cw = 2
    if map.value_format then   -- room for the widest value (and, without colour, its bar before it)
        for _, v in ipairs(map.flat) do
            if type(v) == "number" then
                cw = math.max(cw, #string.format(map.value_format, v) + (map.colour and 0 or 1))
            end
        end
    end
    if map.col_labels then
        for _, l in ipairs(map.col_labels) do cw = math.max(cw, math.min(term.width(l), 6)) end
    end
    map.cw = cw
    map.label_width = 0
    if map.row_labels then
        for r = 1, #map.rows_ix do
            map.label_width = math.max(map.label_width, term.width(map.row_labels[r]))
        end
    end
    map.lead = map.row_labels and map.label_width + 1 or 0
    local fitting = (linewidth_of(o) - map.lead + 1) // (cw + 1)   -- cells of cw and a space
    map.shown_cols = math.max(1, math.min(#map.cols_ix, fitting))
end

-- The position of v on the scale, 0..1, or nil for NaN.
local function heat_position(map, v)
    if v ~= v then return nil end
    if map.hi == map.lo then return 0.5 end
    local x = (v - map.lo) / (map.hi - map.lo)
    return math.max(0, math.min(1, x))
end

-- A cell of cw columns: its shade (a background colour, or a bar height) and, with values=, its
-- value. A NaN cell is NAN_MARKs, and map.saw_nan tells the scale to explain them.
local function heat_cell(map, v)
    local cw, value_format = map.cw, map.value_format
    local x = heat_position(map, v)
    if x == nil then
        map.saw_nan = true
        return string.rep(NAN_MARK, cw)
    end
    if map.colour then
        local k = level_of(x, #RAMP)
        local text = value_format and string.format(value_format, v) or ""
        local ink = value_format and (k <= RAMP_DARK and "\27[97m" or "\27[30m") or ""
        local background = "\27[48;5;" .. RAMP[k] .. "m"
        return background .. ink .. string.rep(" ", cw - #text) .. text .. "\27[0m"
    end
    local shade = SHADES[level_of(x, #SHADES)]
    if value_format then
        local text = string.format(value_format, v)
        return shade .. string.rep(" ", cw - 1 - #text) .. text
    end
    return string.rep(shade, cw)
end

-- The title, then each slice: its label (3-D and more), the column labels, a line of cells per row.
local function heat_slices(lines, map, opts)
    local cw, lead = map.cw, map.lead
    if opts.title ~= nil then lines[#lines + 1] = clean_text(opts.title) end
    for s, prefix in ipairs(map.slices) do
        if map.nlead > 0 then
            if s > 1 then lines[#lines + 1] = "" end
            lines[#lines + 1] = slice_label(prefix, map.ndim, opts.dims)
        end
        if map.col_labels then
            local parts = {}
            for c = 1, map.shown_cols do
                parts[c] = pad_right(term.truncate(map.col_labels[c], cw), cw)
            end
            lines[#lines + 1] = (string.rep(" ", lead) .. table.concat(parts, " ")):gsub("%s+$", "")
        end
        for r = 1, #map.rows_ix do
            local parts = {}
            for c = 1, map.shown_cols do parts[c] = heat_cell(map, map.grids[s][r][c]) end
            local labels = map.row_labels
            local label = labels and pad_right(labels[r], map.label_width) .. " " or ""
            lines[#lines + 1] = label .. table.concat(parts, " ")
        end
    end
end

-- Below the slices: the rows and columns left out, then the scale: lo, every level lowest to
-- highest, hi (each level an equal part of the range), and what ? means when a cell is NaN.
local function heat_scale(lines, map, o)
    local notes = {}
    local said = words(o.lang)
    local shown_rows, shown_cols = #map.rows_ix, map.shown_cols
    if map.nrows > shown_rows then
        notes[#notes + 1] = string.format(said.rows_of, shown_rows, map.nrows)
    end
    if map.ncols > shown_cols then
        notes[#notes + 1] = string.format(said.columns_of, shown_cols, map.ncols)
    end
    if map.window then notes[#notes + 1] = string.format(said.window, table.unpack(map.window)) end
    if #notes > 0 then lines[#lines + 1] = string.format(said.shown, table.concat(notes, said.comma)) end

    local lo, hi = map.lo, map.hi
    local fmt, whole = number_format({ lo, hi, (hi - lo) / (map.colour and #RAMP or #SHADES) }, o)
    local function num(v) return format_number(v, fmt, whole) end
    local steps = {}
    if map.colour then
        for k = 1, #RAMP do steps[k] = "\27[48;5;" .. RAMP[k] .. "m \27[0m" end
    else
        steps = SHADES
    end
    lines[#lines + 1] = said.scale .. num(lo) .. " " .. table.concat(steps) .. " " .. num(hi)
    if map.saw_nan then lines[#lines] = lines[#lines] .. "  " .. NAN_MARK .. " = nan" end
end

-- The steps in order: check the options, gather the slices, lay out the cells, draw, the scale.
function M.heat(t, opts)
    opts = opts or {}
    if type(opts) ~= "table" then raise("heat: options must be a table, got " .. type(opts)) end
    check_keys("heat", opts, HEAT_OPTIONS, false)
    local o = merge_options("heat", options, opts)
    local window
    t, opts, window = require("mha.textmap").window("heat", t, opts, function(what, given, n, unit)
        return label_list("heat", what, given, n, unit)
    end)
    local map = heat_gather(t)
    map.window = window
    heat_layout(map, opts, o)
    local lines = {}
    heat_slices(lines, map, opts)
    heat_scale(lines, map, o)
    lines[#lines + 1] = footer(map.src)
    io.write(table.concat(lines, "\n"), "\n")
end

-- Exposed for mha.plot (its text fallback) and for the tests.
M.clean_label = clean_label
M.label_list = label_list
M.check_keys = check_keys
M.closest = closest
M.count = count
M.a_type = a_type
M.shape_str = shape_str
M.finite_range = finite_range

return M
