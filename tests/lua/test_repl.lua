-- tests/lua/test_repl.lua - the Lua side of the REPL (module mha.repl) without a terminal: how values
-- print (tables nested, sorted, cycles, depth and length limits), completion candidates, commands.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local repl = require "mha.repl"

-- printing
T.eq("format_number", repl.format(42), "42")
T.eq("format_float", repl.format(0.5), "0.5")
T.eq("format_string_top_level", repl.format("a\nb"), "a\nb")
T.eq("format_list", repl.format({1, 2, 3}), "{1, 2, 3}")
T.eq("format_sorted_keys", repl.format({z = 1, a = 2, [10] = 3, [true] = 4, "x"}), '{"x", [true] = 4, [10] = 3, a = 2, z = 1}')
-- keys in natural order: numbers by value, strings with their digit runs compared as numbers
T.eq("format_keys_natural_order", repl.format({k10 = 1, k2 = 2, k1 = 3, k11 = 4, [10] = 5, [9] = 6, [-1.5] = 7, k02 = 8}),
     "{[-1.5] = 7, [9] = 6, [10] = 5, k1 = 3, k02 = 8, k2 = 2, k10 = 1, k11 = 4}")
T.eq("format_keys_natural_inner_runs", repl.format({x2y10 = 1, x2y9 = 2, x10y1 = 3, x = 4}), "{x = 4, x2y9 = 2, x2y10 = 1, x10y1 = 3}")
T.eq("format_quoted_keys_and_strings", repl.format({["a b"] = "it's\n", ["end"] = 1}), '{["a b"] = "it\'s\\n", ["end"] = 1}')
T.eq("format_nested", repl.format({a = {b = {c = {}}}}), "{a = {b = {c = {}}}}")
T.eq("format_depth_limit", repl.format({{{{{1}}}}}), "{{{{{...}}}}}")
local cyc = {1}
cyc.me = cyc
T.eq("format_cycle", repl.format(cyc), "{1, me = <cycle>}")
local shared = {7}
T.eq("format_shared_not_cycle", repl.format({shared, shared}), "{{7}, {7}}")
local long = {}
for i = 1, 150 do long[i] = i end
local text = repl.format(long)
T.ok("format_item_limit", text:find("  ... (50 more entries)\n}", 1, true) and text:find(" 100,\n", 1, true)
     and not text:find("101"), text)
-- a flat array of scalars is packed across the width (78 columns without a terminal), in aligned columns
local lines = {}
for line in text:gmatch("[^\n]+") do lines[#lines + 1] = line end
T.ok("format_array_packed", #lines == 10 and lines[2] == "    1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,  14,  15,"
     and lines[8] == "   91,  92,  93,  94,  95,  96,  97,  98,  99, 100,", text)
local widest = 0
for _, line in ipairs(lines) do widest = math.max(widest, #line) end
T.ok("format_array_packed_width", widest <= 78, "a line of " .. widest .. " columns:\n" .. text)
local floats = {}
for i = 1, 500 do floats[i] = i / 4 end
text = repl.format(floats)
T.ok("format_500_numbers_few_lines", select(2, text:gsub("\n", "")) <= 12 and text:find("... (400 more entries)", 1, true), text)
T.eq("format_strings_packed", repl.format({"alpha", "b", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"}),
     '{\n  "alpha",   "b",       "gamma",   "delta",   "epsilon", "zeta",    "eta",\n  "theta",   "iota",    "kappa",   "lambda",  "mu",\n}')
-- one printed table takes at most 50 lines; the rest of its entries are counted
local big = {}
for i = 1, 80 do big["k" .. string.format("%02d", i)] = {i, tostring(i)} end
text = repl.format(big)
local nlines = select(2, text:gsub("\n", "")) + 1
T.ok("format_line_budget", nlines <= 50 and text:find("\n  %.%.%. %(%d+ more entries%)\n}$"), nlines .. " lines:\n" .. text)
local shown = select(2, text:gsub("\n  k%d%d = ", ""))
local rest = tonumber(text:match("%.%.%. %((%d+) more entries%)"))
T.ok("format_line_budget_counts", rest and shown + rest == 80, shown .. " shown, " .. tostring(rest) .. " counted")
text = repl.format(_G)
nlines = select(2, text:gsub("\n", "")) + 1
T.ok("format_globals_capped", nlines <= 50 and text:find("more entries%)\n}$"), nlines .. " lines")
local nested = {}
for i = 1, 30 do nested[i] = {i, i * 2, name = "row " .. i, pad = string.rep("x", 40)} end
text = repl.format({rows = nested})
nlines = select(2, text:gsub("\n", "")) + 1
T.ok("format_line_budget_nested", nlines <= 50 and text:find("\n    %.%.%. %(%d+ more entries%)\n  },\n}$"), nlines .. " lines:\n" .. text)
local wide = {}
for i = 1, 30 do wide["key" .. i] = i end
T.ok("format_wraps_long_tables", repl.format(wide):find("^{\n  key1 = 1,\n  key2 = 2,\n"), repl.format(wide))
local x = mha.tensor{{1, 2}, {3, 4}}
T.eq("format_tensor_is_tostring", repl.format(x), tostring(x))
-- a tensor in a table: its further lines under its first, not under the key
T.eq("format_tensor_in_table", repl.format({w = x}), "{\n  w = " .. tostring(x):gsub("\n", "\n      ") .. ",\n}")
T.eq("format_tensor_in_list", repl.format({x, 5}), "{\n  " .. tostring(x):gsub("\n", "\n  ") .. ",\n  5,\n}")
local bad = setmetatable({}, {__tostring = function() error("broken") end})
T.ok("format_tostring_error", repl.format(bad):find("<error in __tostring:", 1, true), repl.format(bad))

-- completion
local function same(name, got, want)
    T.ok(name, type(got) == "table" and table.concat(got, " ") == table.concat(want, " "),
         "got " .. (type(got) == "table" and table.concat(got, " ") or tostring(got)) .. ", want " .. table.concat(want, " "))
end
same("complete_field", repl.complete("mha.so", "mha.so", 0), {"mha.softmax", "mha.softmax_backward"})
same("complete_field_after_paren", repl.complete("mha.sq", "print(mha.sq", 6), {"mha.sqrt", "mha.squeeze"})
_G.completion_x = mha.randn(2, 3)
same("complete_tensor_method", repl.complete("completion_x:transp", "completion_x:transp", 0), {"completion_x:transpose"})
same("complete_string_method", repl.complete(("s"):rep(0) .. "string.up", "string.up", 0), {"string.upper"})
local m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}
_G.completion_m = m
same("complete_module_method", repl.complete("completion_m:for", "completion_m:for", 0), {"completion_m:forward"})
-- an mha.nn instance's methods, not what its class holds for itself (Linear.extend, new, super)
_G.completion_lin = mha.nn.Linear {in_features = 2, out_features = 3}
local lin_methods = table.concat(repl.complete("completion_lin:", "completion_lin:", 0), " ")
T.ok("complete_nn_instance_methods", lin_methods:find("completion_lin:forward", 1, true)
     and lin_methods:find("completion_lin:parameters", 1, true) and not lin_methods:find(":extend", 1, true)
     and not lin_methods:find(":new", 1, true) and not lin_methods:find("super", 1, true), lin_methods)
local lin_fields = table.concat(repl.complete("completion_lin.", "completion_lin.", 0), " ")
T.ok("complete_nn_instance_fields", lin_fields:find("completion_lin.weight", 1, true)
     and not lin_fields:find(".super", 1, true) and not lin_fields:find(".extend", 1, true), lin_fields)
same("complete_nn_class_extend", repl.complete("mha.nn.Linear:exte", "mha.nn.Linear:exte", 0), {"mha.nn.Linear:extend"})
-- mha.nn. offers the building blocks only: the methods MultiheadAttention takes from the Lua modules
-- are handed to it by lua/mha.lua, not kept in mha.nn
local nn_names = table.concat(repl.complete("mha.nn.", "mha.nn.", 0), " ")
T.ok("complete_nn_blocks_only", nn_names:find("mha.nn.Linear", 1, true) and nn_names:find("mha.nn.Transformer", 1, true)
     and not nn_names:find("multihead_methods", 1, true), nn_names)
T.ok("MultiheadAttention still has the module methods",
     m.state_dict ~= nil and m.named_parameters ~= nil and m.eval ~= nil)
same("complete_keyword_and_global", repl.complete("whi", "whi", 0), {"while"})
same("complete_lazy_global", repl.complete("plo", "plo", 0), {"plot"})
same("complete_operator_prefix", repl.complete("1+mha.ey", "1+mha.ey", 0), {"1+mha.eye"})
local class = {greet = function() end}
_G.completion_obj = setmetatable({}, {__index = class})
same("complete_through_index_table", repl.complete("completion_obj.gr", "completion_obj.gr", 0), {"completion_obj.greet"})
-- an optimizer's methods, not the metamethods its class holds (opt:__tostring); a "__" prefix still finds them
_G.completion_opt = mha.optim.SGD({mha.randn(2):requires_grad(true)}, {lr = 0.1})
local opt_methods = table.concat(repl.complete("completion_opt:", "completion_opt:", 0), " ")
T.ok("complete_no_metamethods", opt_methods:find("completion_opt:step", 1, true) and not opt_methods:find("__", 1, true),
     opt_methods)
same("complete_metamethods_asked", repl.complete("completion_opt:__to", "completion_opt:__to", 0),
     {"completion_opt:__tostring"})
-- a module's fields and parameters, not only its methods: m:parameter_names() and the __fields list
same("complete_module_parameter", repl.complete("completion_m.in_", "completion_m.in_", 0),
     {"completion_m.in_proj_bias", "completion_m.in_proj_weight"})
same("complete_module_out_proj", repl.complete("completion_m.out", "completion_m.out", 0),
     {"completion_m.out_proj_bias", "completion_m.out_proj_weight"})
local all = table.concat(repl.complete("completion_m.", "completion_m.", 0), " ")
T.ok("complete_module_everything", all:find("completion_m.forward", 1, true) and all:find("completion_m.in_proj_weight", 1, true), all)
if rawget(getmetatable(m), "__fields") then  -- the bindings list the fields (embed_dim ...)
    same("complete_module_field", repl.complete("completion_m.emb", "completion_m.emb", 0), {"completion_m.embed_dim"})
    T.ok("complete_module_fields_listed", all:find("completion_m.num_heads", 1, true) and all:find("completion_m.head_dim", 1, true), all)
end
local fake_methods = {forward = function() end, parameter_names = function() return {"in_proj_weight", "bias_k"} end}
_G.completion_fake = setmetatable({}, {__index = function() end, __methods = fake_methods,
                                       __fields = {"embed_dim", "num_heads", "bias"}})
same("complete_fields_list", repl.complete("completion_fake.b", "completion_fake.b", 0), {"completion_fake.bias", "completion_fake.bias_k"})
same("complete_fields_all", repl.complete("completion_fake.", "completion_fake.", 0),
     {"completion_fake.bias", "completion_fake.bias_k", "completion_fake.embed_dim", "completion_fake.forward",
      "completion_fake.in_proj_weight", "completion_fake.num_heads", "completion_fake.parameter_names"})
same("complete_methods_not_fields", repl.complete("completion_fake:", "completion_fake:", 0),
     {"completion_fake:forward", "completion_fake:parameter_names"})
fake_methods.parameter_names = function() error("broken") end
same("complete_fields_survive_errors", repl.complete("completion_fake.n", "completion_fake.n", 0), {"completion_fake.num_heads"})
-- mha.nn's classes: an instance's __index is a function, its class (and the class's parents) the
-- metatable's __methods; the parameters and children through __fields; "_" names once "_" is typed
_G.completion_tf = mha.nn.Transformer{vocab = 65, d_model = 32, heads = 2, layers = 1, max_len = 16}
_G.completion_lin = mha.nn.Linear{in_features = 4, out_features = 3}
same("complete_nn_method", repl.complete("completion_tf:gen", "completion_tf:gen", 0), {"completion_tf:generate"})
local lin_methods = table.concat(repl.complete("completion_lin:", "completion_lin:", 0), " ")
T.ok("complete_nn_inherited_methods", lin_methods:find("completion_lin:forward", 1, true)
     and lin_methods:find("completion_lin:parameters", 1, true) and lin_methods:find("completion_lin:state_dict", 1, true)
     and not lin_methods:find("completion_lin:weight", 1, true) and not lin_methods:find("__", 1, true), lin_methods)
same("complete_nn_parameters", repl.complete("completion_lin.b", "completion_lin.b", 0), {"completion_lin.bias"})
same("complete_nn_child", repl.complete("completion_tf.une", "completion_tf.une", 0), {"completion_tf.unembed"})
same("complete_nn_child_method", repl.complete("completion_tf.embed:for", "completion_tf.embed:for", 0),
     {"completion_tf.embed:forward"})
local tf_fields = table.concat(repl.complete("completion_tf.", "completion_tf.", 0), " ")
T.ok("complete_nn_no_private", tf_fields:find("completion_tf.generate", 1, true) and tf_fields:find("completion_tf.vocab", 1, true)
     and not tf_fields:find("completion_tf._", 1, true), tf_fields)
same("complete_nn_private_asked", repl.complete("completion_tf._c", "completion_tf._c", 0), {"completion_tf._config"})
-- a chain of __index tables as long as it goes, and a cycle of them ends (an instruction budget
-- turns a hang into a failure)
local root = {deep_method = function() end}
local level = root
for _ = 1, 12 do level = setmetatable({}, {__index = level}) end
_G.completion_deep = setmetatable({}, {__index = level})
same("complete_long_chain", repl.complete("completion_deep:dee", "completion_deep:dee", 0), {"completion_deep:deep_method"})
local ring_a, ring_b = {ring_a_method = function() end}, {ring_b_method = function() end}
setmetatable(ring_a, {__index = ring_b})
setmetatable(ring_b, {__index = ring_a})
_G.completion_ring = setmetatable({}, {__index = ring_a})
local ring = coroutine.create(function() return repl.complete("completion_ring:ring", "completion_ring:ring", 0) end)
debug.sethook(ring, function() error("completion did not finish") end, "", 1e7)
local ring_ok, ring_names = coroutine.resume(ring)
T.ok("complete_index_cycle_ends", ring_ok, tostring(ring_names))
same("complete_index_cycle", ring_ok and ring_names or {},
     {"completion_ring:ring_a_method", "completion_ring:ring_b_method"})
same("complete_nothing_for_nil", repl.complete("no_such_table.x", "no_such_table.x", 0), {})
same("complete_command", repl.complete(":ti", ":ti", 0), {":time"})
T.eq("complete_command_file_argument", repl.complete("/tm", ":save /tm", 6), "files")

-- commands: one line adds one
local ran
repl.add_command("testcmd", {args = "TEXT...", help = "a test command", run = function(a) ran = a end})
repl.command(":testcmd  hello world")
T.eq("add_command_runs", ran, "hello world")
repl.command(":testc abbreviated")
T.eq("command_prefix", ran, "abbreviated")
T.eq("command_quit_action", repl.command(":quit"), "quit")
ran = nil
repl.add_command("onearg", {args = "K", help = "one word", run = function(a) ran = a end})
repl.command(":onearg 1 2")
T.eq("command_one_placeholder_one_word", ran, nil)
repl.command(":onearg 3")
T.eq("command_one_placeholder_runs", ran, "3")
T.eq("command_reset_action", repl.command(":reset"), "reset")
T.raises("add_command_checks_name", function() repl.add_command("bad name", {run = print}) end, "name must be a word")
T.raises("add_command_checks_run", function() repl.add_command("norun", {}) end, "spec.run must be a function")

-- where an input's code ends: a trailing ';' makes it quiet, comments after it are not code, and a
-- ';' or "--" inside a string literal is neither
local function split(name, input, code, quiet, tail)
    local c, q, t = repl.split_input(input)
    T.ok(name, c == code and q == quiet and t == tail,
         string.format("split_input(%q) gave %q, %s, %q; want %q, %s, %q", input, c, q, t, code, quiet, tail))
end
split("split_plain", "1 + 2", "1 + 2", false, "")
split("split_semicolon", "1 + 2;", "1 + 2", true, "")
split("split_readme_line", "mha.softmax(x, -1);            -- a trailing ; hides the value ...",
      "mha.softmax(x, -1)", true, "            -- a trailing ; hides the value ...")
split("split_statement_comment", "x = 1; -- c", "x = 1", true, " -- c")
split("split_comment_no_semicolon", "x -- c;", "x", false, " -- c;")
split("split_dashes_in_string", '"a--b";', '"a--b"', true, "")
split("split_semicolon_in_string", "'a;'", "'a;'", false, "")
split("split_escaped_quote", [["a\";" -- x]], [["a\";"]], false, " -- x")
split("split_long_string", "[[;]]", "[[;]]", false, "")
split("split_long_string_level", "[==[x]]--]==];", "[==[x]]--]==]", true, "")
split("split_long_comment", "2 --[[ c; ]] ;", "2", true, "")
split("split_long_comment_after", "2; --[==[ a\nb ]==]", "2", true, " --[==[ a\nb ]==]")
split("split_index_not_long_string", "t[1];", "t[1]", true, "")
split("split_multiline", "f(1, -- one\n2);\n-- done", "f(1, -- one\n2)", true, "\n-- done")
split("split_unfinished_string", '"abc;', '"abc;', false, "")

-- a value after statements (repl.split_last): split at the last ';' or line break before one expression
local function last(name, code, head, value)
    local got_head, got_value = repl.split_last(code)
    T.eq(name, {got_head, got_value}, {head, value})
end
last("last_after_semicolon", "A = m:attention(); #A", "A = m:attention();", " #A")
last("last_call_statement", 'sd = f(); sd["w"]:shape()', "sd = f();", ' sd["w"]:shape()')
last("last_after_line", "x = 1 -- one\nx + 1", "x = 1 -- one\n", "x + 1")
-- two calls, the first line's comment holding a ';': the break after the comment still splits them
last("last_call_after_a_comment", "f(1) -- one; two\ng(2)", "f(1) -- one; two\n", "g(2)")
last("last_in_string_not_a_break", 's = "a; b"', nil, nil)
last("last_assignment_none", "a = 1; b = 2", nil, nil)
last("last_loop_none", "for i = 1, 2 do f(i); g(i) end", nil, nil)
last("last_expression_spanning_lines", "t = 1; {1,\n2}", "t = 1;", " {1,\n2}")
-- a line break the parser reads on through is no break: "x = f\n(g)()" is x = f(g)()
last("last_not_a_continuation", "x = f\n(g)()", nil, nil)
last("last_not_a_binary_continuation", "x = 1\n- 2", nil, nil)
T.eq("return_last_code", {repl.return_last("a = 1\nb = 2; a + b; -- sum")}, {"a = 1\nb = 2; return  a + b\n;", true, 2, " a + b"})

-- :save writes each input as a chunk that compiles, whatever its comments and strings hold; a lesson
-- step (repl.record_step) runs inline under a comment naming it
local saved_base = os.tmpname()
local function session(entries)
    for _, e in ipairs(entries) do
        if e.step then repl.record_step(e.step, e.label)
        else repl.after(e[1], e[2], 0, table.unpack(e, 3)) end
    end
    local lua_path, md_path = assert(repl.save(saved_base))
    local f = assert(io.open(lua_path))
    local script = f:read("a")
    f:close()
    f = assert(io.open(md_path))
    local md = f:read("a")
    f:close()
    return script, md
end
local script, md = session{
    {"mha.softmax(x, 2); -- hidden?", "quiet", 1},
    {"x = 1; -- c", "stmt"},
    {'"a--b";', "quiet", "a--b"},
    {"[[;]] -- a comment", "print", ";"},
    {step = "step_w = mha.ones(2, 2)", label = "step 1/3: the weights"},
    {"step_w:sum()", "print", 4},
}
local chunk, load_err = load(script, "=saved")
T.ok("save_comments_compile", chunk ~= nil, tostring(load_err) .. "\n" .. script)
T.ok("save_keeps_trailing_comment", script:find("replay.keep(mha.softmax(x, 2)) -- hidden?\n", 1, true)
     and script:find("replay.show([[;]]) -- a comment\n", 1, true), script)
T.ok("save_step_inline", script:find("-- lesson step: step 1/3: the weights\ndo\nstep_w = mha.ones(2, 2)\nend\n", 1, true), script)
T.ok("save_step_markdown", md:find("Lesson step: step 1/3: the weights\n\n```lua\nstep_w = mha.ones(2, 2)\n```", 1, true), md)
-- replayed, the step makes step_w and the input after it prints its sum
rawset(_G, "x", mha.ones(2, 3))
local printed = {}
local saved_print = _G.print
local replayer = repl.replayer
repl.replayer = function()
    local r = replayer()
    r.show = function(...) for i = 1, select("#", ...) do printed[#printed + 1] = tostring((select(i, ...))) end end
    return r
end
local ran_ok, run_err = pcall(chunk)
repl.replayer, _G.print = replayer, saved_print
T.ok("save_step_replays", ran_ok and #printed == 2 and printed[1] == ";" and printed[2]:find("^4") and rawget(_G, "step_w") ~= nil,
     tostring(run_err) .. " printed " .. table.concat(printed, ","))
T.raises("record_step_checks_code", function() repl.record_step(nil, "x") end, "code must be a string")
os.remove(saved_base)
os.remove(saved_base .. ".lua")
os.remove(saved_base .. ".md")

-- :reset hooks: what a module keeps is carried as a string and handed to its resume in the next state
-- (here the same state plays the next one: repl.init with what repl.carry returned)
T.raises("on_reset_checks_its_arguments", function() repl.on_reset("x", "not a function") end,
         "on_reset: expected a name, a keep function and a resume function")
local resumed = {}
repl.on_reset("test_hook", function() return "kept \"text\"\nline 2" end, function(s) resumed[#resumed + 1] = s end)
repl.on_reset("test_nothing", function() return nil end, function(s) resumed[#resumed + 1] = "nothing: " .. s end)
local carried = repl.carry()
T.eq("on_reset_not_resumed_in_its_own_state", #resumed, 0)
repl.init(carried)
T.eq("on_reset_resume_waits_for_registration", #resumed, 0)
repl.on_reset("test_hook", function() return nil end, function(s) resumed[#resumed + 1] = s end)
T.eq("on_reset_resumes_what_was_kept", resumed, {"kept \"text\"\nline 2"})
repl.on_reset("test_hook", function() return nil end, function(s) resumed[#resumed + 1] = s end)
T.eq("on_reset_resumes_once", #resumed, 1)

-- the start-up line (lua/repl/repl.c prints it at a terminal) and :export's report follow the REPL's language
do
    local saved_lang = repl.lang
    T.eq("banner_en", repl.banner("mha-repl", "0.1.0", "Lua 5.4.4"),
        "mha-repl 0.1.0 (Lua 5.4.4)\ntype ? for the commands, help() for the functions, Ctrl-D to quit")
    repl.lang = function() return "zh" end
    T.eq("banner_zh", repl.banner("mha-repl", "0.1.0", "Lua 5.4.4"),
        "mha-repl 0.1.0（Lua 5.4.4）- 输入 ? 看命令，help() 看函数，Ctrl-D 退出")
    for _, lang in ipairs { "en", "zh" } do   -- a 80-column terminal must not wrap it
        repl.lang = function() return lang end
        local widest = 0
        for line in repl.banner("mha-repl", "0.1.0", "Lua 5.4.4"):gmatch("[^\n]+") do
            widest = math.max(widest, require("mha.text").width(line))
        end
        T.ok("banner_fits_80_" .. lang, widest <= 80, widest .. " columns")
    end
    repl.lang = function() return "zh" end
    T.eq("export_report_zh", string.format(repl.said("exported"), string.format(repl.said("exported_lesson"), 3), "l3.ipynb"),
        "已把第 3 课写到 l3.ipynb")
    -- a command given arguments it does not take says its form and its help in the REPL's language
    local saved_stderr, said = io.stderr, {}
    io.stderr = {write = function(_, ...) said[#said + 1] = table.concat({...}) end}
    repl.command(":reset now")
    repl.lang = saved_lang
    repl.command(":reset now")
    io.stderr = saved_stderr
    T.eq("usage_zh", said[1], "用法：:reset（重新开始：新的 Lua 状态，所有变量清空）\n")
    T.eq("usage_en", said[2], "usage: :reset   (start afresh: a new Lua state, every variable gone)\n")
end

T.done()
