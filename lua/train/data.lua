-- lua/train/data.lua - module "mha.data": real text from Debian's packages, cleaned for a
-- character model (mha.data.text(name)), and its split into training and validation text.
--
-- The corpora and the rules that clean them (what is left is what a reader calls text):
--   "kjv"      the King James Bible (bible-kjv, bible-kjv-text), as
--              `bible -l100000 gen1:1-rev22:21` prints it: a verse a line. Book and chapter
--              headers ("Genesis 1") and the verse numbers go; runs of spaces inside a verse
--              become one space; an empty line stands between two chapters. About 4.1 million
--              characters, all ASCII.
--   "tang300"  the 300 Tang poems (fortunes-zh): each poem its title line (the title in double
--   "song100"  angle brackets), its author line ("author: ..." in Chinese) and its lines; the 100
--              Song ci the same (a line "title: ..." and a line "author: ...", with dates).
--   "chinese"  the larger Chinese collection of fortunes-zh (sayings, poems, Debian's code of
--              conduct).
--              For the three: ANSI colour codes (ESC [ ... m) and every other control character
--              but the newline go; so do the spaces that indent or end a line. The fortune
--              separator (a line "%", spaces around it or not) ends a piece; the empty lines
--              inside a piece go, and one empty line stands between two pieces (so it marks
--              where a piece ends).
-- Every text ends with one newline. A package that is missing gets an error naming it and the
-- command that installs it.

local raise = require "mha.raise"   -- errors at the user's line
local options = require "mha.options"
local M = {}

-- Where the packages put the corpora (a test points them elsewhere to see a package missing).
M.paths = {bible = "/usr/bin/bible", bible_data = "/usr/lib/bible.data",
           fortunes = "/usr/share/games/fortunes/"}
local INSTALL = "tools/deps.sh text (or: sudo apt-get install bible-kjv bible-kjv-text fortunes-zh)"

M.names = {"kjv", "tang300", "song100", "chinese"}

local function readable(path)
    local f = io.open(path, "rb")
    if f then f:close() end
    return f ~= nil
end

local function missing(name, package)
    raise(string.format("data.text: %q needs the Debian package %s, which is not installed; " ..
                        "install it with %s", name, package, INSTALL))
end

-- The Bible as `bible` prints it, cleaned: a verse a line, an empty line between chapters.
local function kjv()
    local bible = M.paths.bible
    if not readable(bible) then missing("kjv", "bible-kjv") end
    if not readable(M.paths.bible_data) then missing("kjv", "bible-kjv-text") end
    local argv = {bible, "-l100000", "gen1:1-rev22:21"}   -- lines of 100000 columns: a verse a line
    local ok, said, code, printed = require("mha.proc").run(argv, true)
    if not ok then
        raise(string.format("data.text: %s failed (status %d): %s", bible, code, said))
    end
    local out, n = {}, 0
    for line in printed:gmatch("([^\n]*)\n") do
        local verse = line:match("^%s+%d+ (.*)$")
        if verse then
            n = n + 1
            out[n] = verse:gsub("  +", " "):gsub(" +$", "") .. "\n"
        elseif line:match("%S") and n > 0 then   -- a chapter's header: the one before ends
            n = n + 1
            out[n] = "\n"
        end
    end
    return table.concat(out, "", 1, n)
end

-- The line without the spaces and no-break spaces (U+00A0, bytes C2 A0) that indent or end it
local function trim(line)
    local a, b = 1, #line
    while true do
        if line:sub(a, a) == " " then a = a + 1
        elseif line:sub(a, a + 1) == "\194\160" then a = a + 2
        else break end
    end
    while b >= a do
        if line:sub(b, b) == " " then b = b - 1
        elseif b - 1 >= a and line:sub(b - 1, b) == "\194\160" then b = b - 2
        else break end
    end
    return line:sub(a, b)
end

-- A fortune file cleaned: the pieces apart by one empty line (rules above).
local function fortunes(name)
    local path = M.paths.fortunes .. name
    local f = io.open(path, "rb")
    if not f then missing(name, "fortunes-zh") end
    local raw = f:read("a")
    f:close()
    raw = raw:gsub("\27%[[%d;%[]*%a", "")      -- colour codes: "\27[32m", "\27[;[34;1m", "\27[m"
             :gsub("[%z\1-\9\11-\31\127]", "")   -- the other control characters but "\n"
    local pieces = {}
    local lines = {}
    local function close_piece()
        if #lines > 0 then pieces[#pieces + 1] = table.concat(lines, "\n") .. "\n" end
        lines = {}
    end
    for line in (raw .. "\n"):gmatch("([^\n]*)\n") do
        line = trim(line)
        if line == "%" then
            close_piece()
        elseif line ~= "" then   -- an empty line is only the boundary between pieces
            lines[#lines + 1] = line
        end
    end
    close_piece()
    return table.concat(pieces, "\n")
end

local cache = {}   -- name and paths -> the cleaned text: each corpus is read once a session

-- mha.data.text(name) -> the corpus as a UTF-8 string, cleaned (the rules at the top of this file).
function M.text(name)
    if type(name) ~= "string" then
        raise(string.format('data.text: give the name of a corpus ("%s"), got %s',
                            table.concat(M.names, '", "'), type(name)))
    end
    local key = name .. "\0" .. M.paths.bible .. "\0" .. M.paths.fortunes
    if cache[key] then return cache[key] end
    local text
    if name == "kjv" then
        text = kjv()
    elseif name == "tang300" or name == "song100" or name == "chinese" then
        text = fortunes(name)
    else
        raise(string.format('data.text: no corpus %q; the corpora are "%s"', name,
                            table.concat(M.names, '", "')))
    end
    cache[key] = text
    return text
end

-- The byte offset where character number k + 1 of text starts (k whole characters before it).
local function char_offset(text, k)
    return utf8.offset(text, k + 1) or #text + 1
end

-- mha.data.split(text, {val = 0.1}) -> train, validation: the last floor(val * characters)
-- characters are the validation text, always (so every figure is reproducible), cut on a
-- character boundary.
function M.split(text, opts)
    local fname = "data.split"
    if type(text) ~= "string" then raise(fname .. ": text must be a string, got " .. type(text)) end
    opts = opts or {}
    if type(opts) ~= "table" then raise("data.split: options must be a table, e.g. {val = 0.1}") end
    options.check("data.split", opts, {"val"})
    local val = opts.val == nil and 0.1 or opts.val
    if type(val) ~= "number" or not (val > 0 and val < 1) then
        raise("data.split: option val must be a fraction between 0 and 1, got " .. tostring(val))
    end
    local chars = utf8.len(text)
    if not chars then raise("data.split: text is not valid UTF-8") end
    local n_val = math.floor(val * chars)
    if n_val < 1 or n_val >= chars then
        raise(string.format("%s: %d characters split at val = %g leave an empty part", fname, chars,
                            val))
    end
    local cut = char_offset(text, chars - n_val)
    return text:sub(1, cut - 1), text:sub(cut)
end

return M
