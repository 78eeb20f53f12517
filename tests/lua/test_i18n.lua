-- tests/lua/test_i18n.lua - the translation catalogue (lua/i18n/) holds every word the runner, the REPL,
-- printing, plots, notebooks and training print, in both languages, and no other Lua file holds any.
--
-- Checked: every key of one language is in the other, with a value of the same kind and the same
-- string.format conversions in the same order; no Chinese value carries an English word of more than four
-- letters unless it is a name the student types (an API, a command, a package); no Lua file under lua/
-- outside lua/i18n/ and lua/help/ (help's own entries) holds a CJK character, nor an English sentence
-- of the catalogue.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"

local i18n = require "mha.i18n"
local en, zh = i18n.catalogue.en, i18n.catalogue.zh

-- Every leaf of a language's table, as "room.word" (a list's items as "room.word.N") -> value.
local function leaves(tbl)
    local out = {}
    local function walk(prefix, t)
        for k, v in pairs(t) do
            local key = prefix == "" and tostring(k) or (prefix .. "." .. tostring(k))
            if type(v) == "table" then walk(key, v) else out[key] = v end
        end
    end
    walk("", tbl)
    return out
end
local en_leaves, zh_leaves = leaves(en), leaves(zh)

-- The text of a value: a string as it is, a function's sentence for sample numbers (2, 3, 4).
local function text_of(v)
    if type(v) == "function" then return v(2, 3, 4) end
    return v
end

-- string.format's conversions of a format, in order: "%d %s %%" -> "d s".
local function conversions(s)
    local list = {}
    for spec in s:gsub("%%%%", ""):gmatch("%%[-+ #0]*%d*%.?%d*(%a)") do list[#list + 1] = spec end
    return table.concat(list, " ")
end

local sorted = {}
for key in pairs(en_leaves) do sorted[#sorted + 1] = key end
table.sort(sorted)

local missing, kinds, formats = {}, {}, {}
for _, key in ipairs(sorted) do
    local e, z = en_leaves[key], zh_leaves[key]
    if z == nil then missing[#missing + 1] = "zh lacks " .. key
    elseif e == false then   -- English says nothing (its message says it already); Chinese must
        if type(z) ~= "string" then kinds[#kinds + 1] = key .. " (English false, Chinese " .. type(z) .. ")" end
    elseif type(e) ~= type(z) then kinds[#kinds + 1] = key .. " (" .. type(e) .. " and " .. type(z) .. ")"
    elseif type(e) == "string" and conversions(e) ~= conversions(z) then
        formats[#formats + 1] = key .. " ('" .. conversions(e) .. "' and '" .. conversions(z) .. "')"
    end
end
for key in pairs(zh_leaves) do
    if en_leaves[key] == nil then missing[#missing + 1] = "en lacks " .. key end
end
T.ok("i18n_every_key_in_both_languages", #missing == 0, table.concat(missing, ", "))
T.ok("i18n_same_kind_of_value", #kinds == 0, table.concat(kinds, ", "))
T.ok("i18n_same_format_conversions", #formats == 0, table.concat(formats, ", "))
T.ok("i18n_has_every_room", #sorted > 150, #sorted .. " keys")

-- English words a Chinese sentence keeps: what the student types or reads on the screen as it is.
local KEPT = {
    answer = true, solution = true, lessons = true, restart = true, reset = true, ["goto"] = true, next = true,
    back = true, lesson = true, open = true, export = true, lang = true, save = true, quit = true, help = true,
    print = true, matmul = true, softmax = true, detach = true, numel = true, size = true, contiguous = true,
    reshape = true, view = true, transpose = true, train = true, eval = true, ignore = true, index = true,
    reduction = true, label = true, smoothing = true, mean = true, none = true, cross = true, entropy = true,
    embed = true, heads = true, model = true, batch = true, float = true, astype = true, line = true,
    gnuplot = true, debian = true, ctrl = true, enter = true, numpy = true, ipynb = true, html = true,
    repl = true, plot = true, method = true,
}

-- The first English word of more than four letters in s that is not a name (outside KEPT), or nil.
-- A token with a digit, '_', '.', ':', '(' or '#' is a name (d_model, mha.softmax, :goto, x:view()).
local function english_word(s)
    for token in s:gmatch("[%w_%.:#%(%)%%\"'%-]+") do
        local word = token:gsub("^[\"'%(]+", ""):gsub("[\"'%),%.:]+$", "")
        if word:match("^%a+$") and #word > 4 and not KEPT[word:lower()] and not KEPT[word] then return word end
    end
end

local english = {}
for key, v in pairs(zh_leaves) do
    local s = text_of(v)
    if type(s) == "string" then
        local word = english_word(s)
        if word then english[#english + 1] = key .. ": '" .. word .. "'" end
    end
end
table.sort(english)
T.ok("i18n_no_english_word_in_zh", #english == 0, table.concat(english, "; "))

-- lookups: t("room.word", lang), English for a word or a language that is missing
T.eq("i18n_t_zh", i18n.t("lesson.correct", "zh"), "正确")
T.eq("i18n_t_en", i18n.t("lesson.correct", "en"), "correct")
T.eq("i18n_t_unknown_language_is_english", i18n.t("lesson.correct", "fr"), "correct")
T.eq("i18n_both", i18n.both("train.loss").zh, "损失")
T.eq("i18n_pick", i18n.pick({en = "a", zh = "b"}, "fr"), "a")

-- The Lua files under lua/: none outside lua/i18n/ and lua/help/ holds a CJK character or a sentence of
-- the catalogue's English.
local files = {}
local p = io.popen("find '" .. T.path("lua") .. "' -name '*.lua' -type f 2>/dev/null")
for path in p:lines() do
    if not path:find("/lua/i18n/", 1, true) and not path:find("/lua/help/", 1, true) then files[#files + 1] = path end
end
p:close()
table.sort(files)
T.ok("i18n_found_lua_files", #files > 20, #files .. " files under " .. T.path("lua"))

-- a CJK ideograph (U+3400..U+4DBF, U+4E00..U+9FFF): a word. CJK punctuation is no word: the line
-- breaking rules of lua/show/text.lua list it.
local function has_cjk(s)
    for _, cp in utf8.codes(s, true) do
        if (cp >= 0x4E00 and cp <= 0x9FFF) or (cp >= 0x3400 and cp <= 0x4DBF) then return true end
    end
    return false
end

local with_cjk, with_english = {}, {}
for _, path in ipairs(files) do
    local f = assert(io.open(path, "rb"))
    local source = f:read("a")
    f:close()
    local name = path:sub(#T.path("") + 1)
    local n = 0
    for line in source:gmatch("[^\n]*") do
        n = n + 1
        if has_cjk(line) then with_cjk[#with_cjk + 1] = name .. ":" .. n; break end
    end
    for key, v in pairs(en_leaves) do
        if type(v) == "string" and #v >= 20 and source:find(v, 1, true) then
            with_english[#with_english + 1] = name .. " (" .. key .. ")"
        end
    end
end
T.ok("i18n_no_cjk_outside_catalogue", #with_cjk == 0, table.concat(with_cjk, ", "))
table.sort(with_english)
T.ok("i18n_no_catalogue_english_outside", #with_english == 0, table.concat(with_english, ", "))

T.done()
