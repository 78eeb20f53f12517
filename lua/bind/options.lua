-- lua/bind/options.lua - module "mha.options": the one check of an options table read from Lua, for
-- the bindings (lua/bind/lauxmha.c's lmha_checkoptions) and the Lua helpers alike: an unknown key
-- is named with the nearest valid one (row -> rows) and the list of valid ones, at the user's line.

local raise = require "mha.raise"   -- errors at the user's line

local M = {}

-- The edit distance of a and b for a did-you-mean: insertions, deletions, substitutions and swaps
-- of two neighbours ("widht" -> "width" is 1), each costing 1.
function M.edit_distance(a, b)
    local d = {}
    for i = 0, #a do d[i] = { [0] = i } end
    for j = 0, #b do d[0][j] = j end
    for i = 1, #a do
        for j = 1, #b do
            local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
            d[i][j] = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a:sub(i, i) == b:sub(j - 1, j - 1) and a:sub(i - 1, i - 1) == b:sub(j, j) then
                d[i][j] = math.min(d[i][j], d[i - 2][j - 2] + 1)
            end
        end
    end
    return d[#a][#b]
end

-- The candidate nearest to word by edit distance (case aside), when it is near enough to be a slip:
-- one edit for a word of 3 letters, two for a longer one; else nil
-- (always for 1 or 2 letters, where one edit reaches anything: x -> _). Ties go to the first in
-- alphabetical order.
function M.closest(word, candidates)
    if #word <= 2 then return nil end
    local best, best_d
    for _, c in ipairs(candidates) do
        local d = M.edit_distance(word:lower(), c:lower())
        if c ~= word and (d < (best_d or math.huge) or (d == best_d and c < best)) then best, best_d = c, d end
    end
    if best and best_d <= (#word <= 3 and 1 or 2) then return best end
    return nil
end

-- The first of names that has word as one of its "_"-separated parts (mask -> attn_mask, causal ->
-- is_causal): a short name for a long option, which an edit distance finds too far.
local function part_of(word, names)
    if #word < 3 then return nil end
    for _, name in ipairs(names) do
        for part in name:gmatch("[^_]+") do
            if part:lower() == word:lower() and name ~= word then return name end
        end
    end
    return nil
end

-- Raises an error for the first key of opts that is not in `valid` (a list of names), naming the
-- function, the key, the nearest valid key when one is close (row -> rows) and every valid key:
--   show: unknown option 'row' (did you mean 'rows'?); valid options: rows, cols, title, ...
-- Integer keys are allowed when allow_list is true (plot.line's list of series).
function M.check(fname, opts, valid, allow_list)
    local known = {}
    for _, k in ipairs(valid) do known[k] = true end
    local bad = {}
    for k in pairs(opts) do
        if not known[k] and not (allow_list and math.type(k) == "integer") then bad[#bad + 1] = tostring(k) end
    end
    if #bad == 0 then return end
    table.sort(bad)
    local key = bad[1]
    local best = M.closest(key, valid) or part_of(key, valid)
    local hint = best and " (did you mean '" .. best .. "'?)" or ""
    local list = #valid > 0 and table.concat(valid, ", ") or "none"
    raise(string.format("%s: unknown option '%s'%s; valid options: %s", fname, (key:gsub("%c", "?")), hint, list))
end

return M
