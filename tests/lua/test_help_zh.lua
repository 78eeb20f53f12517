-- tests/lua/test_help_zh.lua - help in Chinese: every entry ?name knows, help(), and :help of every command
-- read as Chinese (no English sentence, no "this entry is in English" note), and each entry's Chinese
-- names the same functions, fields and arguments as its English.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"

local help = require "mha.help"
local zh = require "mha.help.zh"
local docs = help.docs()
help.set_lang(function() return "zh" end)

-- The first English sentence in s: three plain words in a row ("the gradient of"), outside `code`,
-- 《titles》 and quoted strings; nil when there is none. Names (mha.softmax, in_proj_weight, x:view(),
-- d_k) are not plain words.
local function english_sentence(s)
    s = s:gsub("`[^`]*`", " "):gsub("《.-》", " "):gsub("'[^'\n]*'", " "):gsub('"[^"\n]*"', " ")
    local run = {}
    for token in s:gmatch("%S+") do
        local word = token:gsub("^[%(（“]+", ""):gsub("[,.;:!?%)）”]+$", "")
        if word:match("^%a+$") and (#word > 1 or word == "a") then
            run[#run + 1] = word
            if #run == 3 then return table.concat(run, " ") end
        else
            run = {}
        end
    end
end

-- The prose of a help text: its blocks (separated by blank lines) without the first (the signature, which
-- is code) and without the formula and example blocks.
local function prose(text, skip_first)
    local blocks, kept = {}, {}
    for block in (text .. "\n\n"):gmatch("(.-)\n%s*\n") do blocks[#blocks + 1] = block end
    for i, block in ipairs(blocks) do
        if not (skip_first and i == 1) and not block:match("^  " .. zh.words.formula)
           and not block:match("^  " .. zh.words.example) then
            kept[#kept + 1] = block
        end
    end
    return table.concat(kept, "\n\n")
end

local keys = {}
for key in pairs(docs) do keys[#keys + 1] = key end
table.sort(keys)

-- every entry: a Chinese explanation, shown by ?name without English
local untranslated, english = {}, {}
for _, key in ipairs(keys) do
    if type(zh.docs[key]) ~= "string" then untranslated[#untranslated + 1] = key end
    local text = prose(help.text(key), true)
    local sentence = text:find(zh.words.english, 1, true) and "(the English note)" or english_sentence(text)
    if sentence then english[#english + 1] = key .. ": '" .. sentence .. "'" end
end
T.ok("zh_every_entry_has_chinese", #untranslated == 0,
     #untranslated .. " of " .. #keys .. " without Chinese: " .. table.concat(untranslated, ", "))
T.ok("zh_no_english_sentence_in_entries", #english == 0, table.concat(english, "; "))

-- the Chinese names what the English names: functions and fields (mha.softmax, x:view, in_proj_weight,
-- softmax(...)) and the signature's arguments that the English mentions
local skip = {["e.g"] = true, ["i.e"] = true, ["and"] = true, ["or"] = true, ["not"] = true, ["true"] = true,
              ["false"] = true, ["nil"] = true, ["function"] = true}
local function names_in(doc, sig)
    local names = {}
    for name in doc:gmatch("[%a_][%w_]*[.:][%a_][%w_.:]*[%w_]") do names[name] = true end
    for name in doc:gmatch("[%a_][%w_]*_[%w_]*") do names[name] = true end
    for name in doc:gmatch("([%a_][%w_]*)%(") do names[name] = true end
    local args = (sig:match("^(.-) %->") or sig):gsub('"[^"]*"', "")
    for group in args:gmatch("[%w_](%b())") do   -- a call's arguments, not a remark in parentheses
        for arg in group:gmatch("[%a_][%w_]*") do
            if #arg > 1 and doc:find("%f[%w_]" .. arg .. "%f[^%w_]") then names[arg] = true end
        end
    end
    for name in pairs(names) do if skip[name] or name:match("^%d") then names[name] = nil end end
    return names
end
local lost = {}
for _, key in ipairs(keys) do
    local chinese = zh.docs[key]
    if type(chinese) == "string" then
        local missing = {}
        for name in pairs(names_in(docs[key].doc, docs[key].sig or key)) do
            if not chinese:find("%f[%w_]" .. name:gsub("%p", "%%%0") .. "%f[^%w_]") then missing[#missing + 1] = name end
        end
        table.sort(missing)
        if #missing > 0 then lost[#lost + 1] = key .. " lacks " .. table.concat(missing, ", ") end
    end
end
T.ok("zh_entries_name_what_the_english_names", #lost == 0, table.concat(lost, "; "))

-- help(): the index, its prose and group headings (the indented lines list names)
local index = help.text():gsub("\n  [^\n]*", "")
T.ok("zh_index_is_chinese", index:find(zh.words.intro:sub(1, 30), 1, true) ~= nil and not english_sentence(index),
     tostring((english_sentence(index))))

-- every group of help() has a Chinese heading
local unnamed, seen = {}, {}
for _, key in ipairs(keys) do
    local e = docs[key]
    local group = e.group or (key:match("^:") and "REPL commands") or key:match("^(.*)[.:]") or "topics"
    if not zh.groups[group] and not seen[group] then unnamed[#unnamed + 1] = group end
    seen[group] = true
end
T.ok("zh_every_group_has_a_heading", #unnamed == 0, "no Chinese heading for: " .. table.concat(unnamed, ", "))

-- every command (the REPL's and the lesson runner's): its line in ? and :help NAME, in Chinese
local repl = require "mha.repl"
require("mha.lesson").install(repl)
help.set_commands(repl.commands)
help.set_lang(function() return "zh" end)   -- mha.repl handed help its own language (MHA_LANG's)
local no_line, english_help = {}, {}
for name in pairs(repl.commands) do
    if type(zh.commands[name]) ~= "string" then no_line[#no_line + 1] = name end
    local text = help.command_text(name)
    local sentence = text:find(zh.words.english, 1, true) and "(the English note)" or english_sentence(prose(text, true))
    if sentence then english_help[#english_help + 1] = ":" .. name .. ": '" .. sentence .. "'" end
end
table.sort(no_line)
table.sort(english_help)
T.ok("zh_every_command_has_a_line", #no_line == 0, "no Chinese line for :" .. table.concat(no_line, ", :"))
T.ok("zh_no_english_sentence_in_command_help", #english_help == 0, table.concat(english_help, "; "))

-- help's own messages
local messages = {
    {"no entry", help.text("mha.nothing_here_at_all")},
    {"nil", help.text(nil)},
    {"no command", help.command_text("nosuchcommand")},
    {"Lua's own", help.text("print")},
    {"a table", help.text({})},
    {"several names", help.text("close")},
}
for _, m in ipairs(messages) do
    local sentence = english_sentence(m[2])
    T.ok("zh_message_" .. m[1]:gsub("%W", "_"), not sentence, "English '" .. tostring(sentence) .. "' in: " .. m[2])
end

-- the detector itself
T.ok("english_sentence_detects", english_sentence("把分数 the gradient of 变成") == "the gradient of"
     and not english_sentence("用 `for _, name in ipairs(tr) do` 遍历 mha.softmax(x, dim) 的 in_proj_weight"), "")

-- a signature's alternatives are joined by 或 in Chinese, by "or" in English; the code stays as it is
do
    local first = help.text("mha.softmax"):match("^[^\n]*")
    T.eq("the signature's alternatives in Chinese", first, "mha.softmax(x, dim) 或 x:softmax(dim) -> tensor")
    local english
    for name, e in pairs(docs) do
        local line = type(e.sig) == "string" and help.text(name):match("^[^\n]*") or ""
        if line:find("%sor%s") then english = name .. ": " .. line end
    end
    T.eq("no signature says \"or\" in Chinese", english, nil)
    help.set_lang(function() return "en" end)
    T.eq("in English: or", help.text("mha.softmax"):match("^[^\n]*"), "mha.softmax(x, dim) or x:softmax(dim) -> tensor")
    help.set_lang(function() return "zh" end)
end

help.set_lang(function() return "en" end)
T.done()
