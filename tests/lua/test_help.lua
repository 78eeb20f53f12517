-- tests/lua/test_help.lua - help and its docs: every public function of mha, every tensor and module
-- method has an entry; every example in mha.docs_mha runs; help() finds names, methods and topics.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local help = require "mha.help"
local docs = help.docs()

-- the structure every docs module promises
local malformed = {}
for name, e in pairs(docs) do
    if type(e) ~= "table" or type(e.sig) ~= "string" or type(e.doc) ~= "string" then malformed[#malformed + 1] = name end
end
table.sort(malformed)
T.ok("docs_entries_have_sig_and_doc", #malformed == 0, "malformed: " .. table.concat(malformed, ", "))

-- coverage: the library, the tensor methods, the module methods
local function missing_from(prefix, t, fallback)
    local missing = {}
    for k, v in pairs(t) do
        if type(k) == "string" and type(v) == "function" and not k:match("^__")
           and not docs[prefix .. k] and not (fallback and docs[fallback .. k]) then
            missing[#missing + 1] = prefix .. k
        end
    end
    table.sort(missing)
    return missing
end
local missing = missing_from("mha.", mha)
T.ok("docs_cover_mha", #missing == 0, "no entry for " .. table.concat(missing, ", "))
local tensor_mt = debug.getregistry()["mha.Tensor"]
missing = missing_from("Tensor:", tensor_mt.__methods, "mha.")
T.ok("docs_cover_tensor_methods", #missing == 0, "no entry for " .. table.concat(missing, ", "))
local module_mt = debug.getregistry()["mha.MultiheadAttention"]
missing = missing_from("MultiheadAttention:", module_mt.__methods)
T.ok("docs_cover_module_methods", #missing == 0, "no entry for " .. table.concat(missing, ", "))

-- every example of mha.docs_mha runs, as an expression or as statements, in its own environment
local own = require "mha.docs_mha"
local failed, count = {}, 0
local names = {}
for name in pairs(own) do names[#names + 1] = name end
table.sort(names)
for _, name in ipairs(names) do
    local e = own[name]
    if not e.example then failed[#failed + 1] = name .. ": no example" end
    if e.example then
        count = count + 1
        local env = setmetatable({print = function() end}, {__index = _G})
        local chunk = load("return " .. e.example, "=" .. name, "t", env) or load(e.example, "=" .. name, "t", env)
        local ok, err = false, "does not compile"
        if chunk then ok, err = pcall(chunk) end
        if not ok then failed[#failed + 1] = name .. ": " .. tostring(err) end
    end
end
T.ok("docs_mha_examples_run", #failed == 0 and count > 80,
     string.format("%d examples, failures:\n  %s", count, table.concat(failed, "\n  ")))

-- what help prints
local text = help.text(mha.softmax)
T.ok("help_function", text:find("mha.softmax(x, dim)", 1, true) and text:find("Formula:", 1, true)
     and text:find("exp(x_i - max x)", 1, true) and text:find("Example:", 1, true), text)
T.ok("help_string_exact", help.text("mha.matmul"):find("C_ij = Σ_k A_ik · B_kj", 1, true), help.text("mha.matmul"))
T.ok("help_string_short_name", help.text("softmax"):find("mha.softmax(x, dim)", 1, true), help.text("softmax"))
local x = mha.randn(2, 3)
T.ok("help_tensor_value", help.text(x):find("mha.Tensor", 1, true), help.text(x))
T.eq("name_of_method", help.name_of(tensor_mt.__methods.shape), "Tensor:shape")
T.eq("name_of_library_first", help.name_of(tensor_mt.__methods.transpose), "mha.transpose")
T.eq("name_of_module_method", help.name_of(module_mt.__methods.forward), "MultiheadAttention:forward")
T.eq("name_of_lua", help.name_of(string.format), "string.format")
_G.help_test_x = x
T.ok("help_method_of_variable", help.text("help_test_x:shape"):find("t:shape()", 1, true), help.text("help_test_x:shape"))
T.ok("help_method_falls_back_to_library", help.text("help_test_x:view"):find("mha.view(t, d1, ...)", 1, true),
     help.text("help_test_x:view"))
-- a Transformer's methods: its own entry (m:generate is not mha.generate), else Module's
_G.help_test_lm = mha.nn.Transformer{vocab = 8, d_model = 16, max_len = 8}
T.ok("help_transformer_method", help.text("help_test_lm:generate"):find("model:generate(prompt", 1, true),
     help.text("help_test_lm:generate"))
T.ok("help_transformer_inherited", help.text("help_test_lm:parameters"):find("m:parameters()", 1, true),
     help.text("help_test_lm:parameters"))
T.ok("help_transformer_function", help.text(help_test_lm.generate):find("model:generate(prompt", 1, true),
     help.text(help_test_lm.generate))
T.ok("help_transformer_forward", help.text(help_test_lm.forward):find("m:forward(x, ...)", 1, true),
     help.text(help_test_lm.forward))
T.ok("help_transformer_config", help.text("help_test_lm:config"):find("model:config() -> options", 1, true),
     help.text("help_test_lm:config"))
T.ok("help_transformer_attention", help.text("help_test_lm:attention"):find("model:attention() -> {weights", 1, true),
     help.text("help_test_lm:attention"))
-- an optimizer's methods are Optimizer's
_G.help_test_opt = mha.optim.SGD(help_test_lm:parameters(), {lr = 0.1})
T.ok("help_optimizer_method", help.text("help_test_opt:step"):find("opt:step([closure])", 1, true),
     help.text("help_test_opt:step"))
-- a name without an entry of its own, described in the entry it is part of
for name, within in pairs {["mha.tasks.reverse"] = "mha.tasks", ["mha.train.loss"] = "mha.train"} do
    local text = help.text(name)
    T.ok("help_described_in " .. name, text:find(name .. " is described under ?" .. within .. ":", 1, true)
         and not text:find("No help", 1, true), text)
end
local m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}
T.ok("help_module_value", help.text(m):find("PyTorch 1.13", 1, true), help.text(m))
T.ok("help_lua_function", help.text(string.format):find("manual.html#pdf-string.format", 1, true), help.text(string.format))
T.ok("help_nil", help.text(nil):find("nil", 1, true) and not help.text(nil):find("attention:"), help.text(nil))
local topics = help.text()
T.ok("help_topics", topics:find("attention:", 1, true) and topics:find("mha.softmax", 1, true)
     and topics:find("tensor methods:", 1, true), topics)
T.ok("help_unknown", help.text("no_such_thing_here"):find("No help for 'no_such_thing_here'", 1, true),
     help.text("no_such_thing_here"))
-- exact names win over names that only contain the word; Lua's own names point to Lua's manual
local function lacks(text, word) return not text:find(word, 1, true) end
text = help.text("print")
T.ok("help_print_is_lua", text:find("manual.html#pdf-print", 1, true) and lacks(text, "printoptions"), text)
text = help.text(print)
T.ok("help_print_value_is_lua", text:find("manual.html#pdf-print", 1, true) and lacks(text, "printoptions"), text)
text = help.text("type")
T.ok("help_type_is_lua", text:find("manual.html#pdf-type", 1, true) and lacks(text, "dtype"), text)
T.ok("help_type_value_is_lua", help.text(type):find("manual.html#pdf-type", 1, true), help.text(type))
text = help.text("select")
T.ok("help_lua_name_first_then_mha", text:find("manual.html#pdf-select", 1, true) and text:find("See also: ?mha.select", 1, true), text)
T.ok("help_lua_library", help.text("string"):find("manual.html#6.4", 1, true), help.text("string"))
text = help.text("printopt")
T.ok("help_substring_did_you_mean", text:find("Did you mean:", 1, true) and text:find("mha.printoptions", 1, true)
     and lacks(text, "linewidth"), text)
-- a module's name lists its functions as what it holds, in en and zh, not as "No help for"
text = help.text("mha.interp")
T.ok("help_module_holds", text:find("mha.interp holds:", 1, true) and text:find("mha.interp.patch", 1, true)
     and lacks(text, "No help"), text)
help.set_lang(function() return "zh" end)
text = help.text("mha.interp")
T.ok("help_module_holds_zh", text:find("mha.interp 里有：", 1, true), text)
help.set_lang(function() return "en" end)
function help_test_own(n) return n end
text = help.text(help_test_own)
T.ok("help_user_function", text:find("help_test_own is a function defined at", 1, true) and text:find("test_help.lua:", 1, true), text)

-- commands: help() lists every command of the REPL's table; ?:name and :help name explain one
local repl = require "mha.repl"
local lesson_ok, lesson = pcall(require, "mha.lesson")
if lesson_ok then lesson.install(repl) end
help.set_commands(repl.commands)            -- the REPL hands help its commands (repl.init does)
topics = help.text()
local listed = topics:match("REPL commands:\n(.-)\n%S") or ""
local missing_commands = {}
for name in pairs(repl.commands) do
    if not listed:find(":" .. name .. "%f[^%w_]") then missing_commands[#missing_commands + 1] = ":" .. name end
end
table.sort(missing_commands)
T.ok("help_lists_every_command", #missing_commands == 0 and listed:find(":save", 1, true) and listed:find(":quit", 1, true),
     "missing " .. table.concat(missing_commands, " ") .. " in:\n" .. listed)
text = help.text(":save")
T.ok("help_command_save", text:find(":save FILE", 1, true) and text:find(repl.commands.save.help:sub(1, 30), 1, true), text)
if repl.commands["goto"] then
    text = help.text(":goto")
    T.ok("help_command_goto", text:find(":goto " .. repl.commands["goto"].args, 1, true)
         and text:find(repl.commands["goto"].help:sub(1, 20), 1, true), text)
end
T.ok("help_command_unknown", help.text(":no_such_command"):find("No command :no_such_command", 1, true), help.text(":no_such_command"))
local printed = {}
local real_print = _G.print
_G.print = function(...) printed[#printed + 1] = table.concat({...}, "\t") end
repl.command(":help save")
repl.command("?:save")
repl.command(":help mha.softmax")
_G.print = real_print
T.ok("colon_help_command", printed[1] and printed[1]:find(":save FILE", 1, true) and printed[1] == printed[2], tostring(printed[1]))
T.ok("colon_help_function", printed[3] and printed[3]:find("mha.softmax(x, dim)", 1, true), tostring(printed[3]))

-- layout: help is wrapped to the terminal's width (here mha.term.columns answering 80, then 50); lines
-- break only between words (the words are those of the unwrapped text, in order), and a line is wider
-- only when it holds a single word (a URL)
local text_mod = require "mha.text"
local term = require "mha.term"
-- text.fit: a line cut at a character boundary to a width in cells (a Chinese character takes two)
T.eq("text_fit", {text_mod.fit("第 191/600 步  80.7 步/秒", 20), text_mod.fit("abcdef", 3), text_mod.fit("abc", 10),
                  text_mod.fit("步步", 3)}, {"第 191/600 步  80.7 ", "abc", "abc", "步"})
local real_columns = term.columns
local function words_of(s) local w = {} for word in s:gmatch("%S+") do w[#w + 1] = word end return table.concat(w, " ") end
-- (code is never broken inside a string literal or a comment: a line of an example may run past the
-- width there)
local function layout_problems(s, columns)
    for line in s:gmatch("[^\n]+") do
        local fits = text_mod.width(line) <= columns
                     or select(2, line:gsub("^  %u[%a ]+:  ", ""):gsub("%S+", "")) <= 1
        local before = line:sub(1, columns)
        local in_literal = select(2, before:gsub('"', "")) % 2 == 1 or before:find("--", 1, true)
        if not fits and not (line:find("^  Example:  ") or line:find("^    ")) then in_literal = false end
        if not fits and not in_literal then return "too wide: " .. line end
    end
end
local keys = {}
for key in pairs(docs) do keys[#keys + 1] = key end
table.sort(keys)
for _, columns in ipairs({80, 50}) do
    local bad = {}
    for _, key in ipairs(keys) do
        term.columns = function() return 100000 end
        local wide = help.text(key)
        term.columns = function() return columns end
        local narrow = help.text(key)
        local problem = layout_problems(narrow, columns)
        if not problem and words_of(narrow) ~= words_of(wide) then problem = "words changed:\n" .. narrow end
        if problem then bad[#bad + 1] = key .. ": " .. problem end
    end
    term.columns = real_columns
    T.ok("help_wrapped_to_" .. columns .. "_columns", #bad == 0, table.concat(bad, "\n"))
end
-- a signature breaks after a comma, hanging under its first argument
term.columns = function() return 80 end
local sig_lines = {}
for line in help.text("mha.scaled_dot_product_attention"):gmatch("[^\n]*") do
    if line == "" then break end
    sig_lines[#sig_lines + 1] = line
end
term.columns = real_columns
local hang = ("mha.scaled_dot_product_attention("):len()
T.ok("help_signature_hangs_after_comma", #sig_lines >= 2 and sig_lines[1]:find(",$")
     and sig_lines[2]:sub(1, hang) == string.rep(" ", hang) and sig_lines[2]:sub(hang + 1, hang + 1) ~= " ",
     table.concat(sig_lines, "\n"))
-- a signature that does not start with a call (a list of names, a table argument) is indented 4,
-- not hung under some later "(" (?LESSON under "LESSON.clock(", column 41): at 80 columns every
-- continuation line hangs under the "(" its signature starts with, or is indented 4
term.columns = function() return 80 end
local odd_hangs = {}
for _, key in ipairs(keys) do
    local sig = help.text(key):match("^(.-)\n\n") or ""
    local open = sig:match("^[^,{(]*()%(")
    for line in sig:gmatch("\n([^\n]*)") do
        local indent = #line:match("^ *")
        if indent ~= 4 and indent ~= (open and text_mod.width(sig:sub(1, open)) or 4) then
            odd_hangs[#odd_hangs + 1] = key .. ": " .. line
        end
    end
end
term.columns = real_columns
T.eq("help_signature_continuation_indents", odd_hangs, {})
term.columns = function() return 80 end
T.eq("help_signature_of_LESSON", help.text("LESSON"):match("^(.-)\n\n"),
     "LESSON.batch, LESSON.lang, LESSON.clock(), LESSON.table, LESSON.versus,\n" ..
     "    LESSON.describe, LESSON.median_ms, say(text), tr{en=, zh=}")
term.columns = real_columns
-- an example line that fits is kept as written
term.columns = function() return 80 end
T.ok("help_example_kept", help.text("mha.softmax"):find("  Example:  " .. docs["mha.softmax"].example:match("^[^\n]*"), 1, true),
     help.text("mha.softmax"))
-- at 80 columns every example line (76 columns at most) is printed whole, in en and zh: it can be pasted
for _, lang in ipairs({"en", "zh"}) do
    mha.printoptions{lang = lang}
    local split = {}
    for _, key in ipairs(keys) do
        local whole = {}   -- the lines shown, without the label and the indent
        for line in help.text(key):gmatch("[^\n]+") do
            whole[(line:gsub("^  Example:", ""):gsub("^  例子：", ""):match("^ *(.-)$"))] = true
        end
        for line in ((docs[key].example or "") .. "\n"):gmatch("(.-)\n") do
            if line ~= "" and not whole[line:match("^ *(.-)$")] then
                split[#split + 1] = key .. ": " .. line
            end
        end
    end
    T.ok("help_examples_whole_at_80_" .. lang, #split == 0, table.concat(split, "\n"))
end
mha.printoptions{lang = "en"}
term.columns = real_columns
-- ? : the command table at 50 columns, each command's help wrapped under its own column
term.columns = function() return 50 end
local listing_file = io.tmpfile()
local real_stdout = io.stdout
io.stdout = listing_file
repl.command("?")
io.stdout = real_stdout
term.columns = real_columns
listing_file:seek("set")
local listing = listing_file:read("a")
listing_file:close()
local help_column = #listing:match("\n(  :%S+ %S+ +)")
local hanging = true
for line in (listing:match("\n(  :.-)\nHelp:") or ""):gmatch("[^\n]+") do
    if not line:find("^  :") and #line:match("^ *") ~= help_column then hanging = false end
end
T.ok("command_table_wrapped", listing:find(":save FILE", 1, true) and not layout_problems(listing, 50) and hanging
     and listing:find("\n" .. string.rep(" ", help_column) .. "%S"),
     (layout_problems(listing, 50) or "fits") .. " hanging " .. tostring(hanging) .. " at " .. help_column .. "\n" .. listing)

-- help() at a terminal pages as a lesson step does (the lesson runner's pager): a 10-row screen pauses
-- with the "-- more" line under 9 lines of help, and q quits
do
    local lesson = require "mha.lesson"
    local saved = {}
    for k, v in pairs(lesson.pager) do saved[k] = v end
    local reads = 0
    lesson.pager.at_terminal = function() return true end
    lesson.pager.rows = function() return 10 end
    lesson.pager.key = function(prompt, show) show(prompt); reads = reads + 1; return "q" end
    local path = os.tmpname()
    local saved_output, saved_stdout, file = io.output(), io.stdout, assert(io.open(path, "w"))
    io.output(file)
    io.stdout = file   -- the pager writes to io.stdout
    local ok, err = pcall(help.help)
    io.stdout = saved_stdout
    file:close()
    io.output(saved_output)
    for k, v in pairs(saved) do lesson.pager[k] = v end
    local f = io.open(path, "rb"); local out = f:read("a"); f:close(); os.remove(path)
    T.ok("help() runs through the pager", ok, tostring(err))
    T.eq("help() pauses once on a 10-row screen, then q quits", reads, 1)
    local first = {}
    for line in help.text():gmatch("[^\n]*") do if #first < 10 then first[#first + 1] = line end end
    T.ok("help() shows its first 9 lines, the more line under them, and nothing after q",
        out:find(table.concat(first, "\n", 1, 9) .. "\n-- more", 1, true) == 1
        and not out:find(first[10], 1, true), out:sub(1, 600))
end

-- a table of mha's, given itself, is found by its name as help("mha.interp") finds it
T.ok("help_library_table", help.text(mha.interp) == help.text("mha.interp")
     and help.text(mha.interp):find("mha.interp.patch", 1, true), help.text(mha.interp))
T.ok("help_library_function", help.text(mha.interp.logit_lens):find("mha.interp.logit_lens(model, tokens)", 1, true),
     help.text(mha.interp.logit_lens))
T.ok("help_other_table", help.text({}):find("No help for this table", 1, true), help.text({}))

local before = rawget(_G, "help")
T.ok("help_global_is_lazy", before == nil and type(_G.help) == "function" and rawget(_G, "help") == _G.help,
     "help was " .. tostring(before) .. " before its first use")

T.done()
