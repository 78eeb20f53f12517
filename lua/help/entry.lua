-- lua/help/entry.lua - module "mha.help.entry": the one helper the docs modules
-- (lua/help/docs_*.lua) write their help entries with, so every entry has the same fields whichever
-- file it lives in.

local M = {}

-- A new, empty table of entries and the function that writes one entry into it:
--   local D, entry = require("mha.help.entry").book()
--   entry(name, group, sig, doc, formula, example, see)   -- D[name] = {group =, sig =, doc =, ...}
-- formula, example and see may be nil; help.lua reads the fields (see its header).
function M.book()
    local entries = {}
    local function entry(name, group, sig, doc, formula, example, see)
        entries[name] = {group = group, sig = sig, doc = doc, formula = formula, example = example, see = see}
    end
    return entries, entry
end

return M
