-- lua/i18n/i18n.lua - module "mha.i18n": the one translation catalogue of every word the lesson
-- runner, the REPL, printing, plots, notebooks and training print; a word missing in a language is
-- said in English.
--
-- The words are in one table per language (lua/i18n/en.lua, lua/i18n/zh.lua), grouped by room:
-- "lesson", "check", "tools", "print", "plot", "train", "heads", "hint", "core", "repl",
-- "notebook", "classroom". A key names the room and the word: t("lesson.the_end", "zh"). A value
-- is a string (often a string.format format), a list of strings, a table of strings, or a function
-- of numbers for a sentence whose arguments change order. A value false says "nothing to add in
-- this language" (English hint lines under messages already English). Help's entries
-- (lua/help/zh.lua) are help's own.

local i18n = {}

i18n.catalogue = {en = require "mha.i18n.en", zh = require "mha.i18n.zh"}

-- Every room of a language other than English falls back, key by key, on the English room.
for lang, rooms in pairs(i18n.catalogue) do
    if lang ~= "en" then
        for room, said in pairs(rooms) do setmetatable(said, {__index = i18n.catalogue.en[room]}) end
    end
end

-- The words of lang ("en", "zh"; English for any other): words(lang).lesson.the_end.
function i18n.words(lang)
    return i18n.catalogue[lang] or i18n.catalogue.en
end

-- One word by its key, "room.word", in lang (English when lang has none).
function i18n.t(key, lang)
    local room, word = key:match("^([%w_]+)%.([%w_]+)$")
    if not room then error(string.format("i18n.t: key '%s' is not room.word", tostring(key)), 2) end
    return i18n.words(lang)[room][word]
end

-- A word in every language, as a lesson's own text is written: {en = ..., zh = ...}.
function i18n.both(key)
    local out = {}
    for lang in pairs(i18n.catalogue) do out[lang] = i18n.t(key, lang) end
    return out
end

-- The text of a {en = ..., zh = ...} table in lang (English when it has none); a plain string as it
-- is.
function i18n.pick(t, lang)
    if type(t) ~= "table" then return t end
    return t[lang or "en"] or t.en
end

return i18n
