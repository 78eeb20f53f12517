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
T.ok("format_item_limit", text:find("... (50 more)", 1, true) and text:find("\n  100,", 1, true) and not text:find("101"), text)
local wide = {}
for i = 1, 30 do wide["key" .. i] = i end
T.ok("format_wraps_long_tables", repl.format(wide):find("^{\n  key1 = 1,\n  key10 = 10,\n"), repl.format(wide))
local x = mha.tensor{{1, 2}, {3, 4}}
T.eq("format_tensor_is_tostring", repl.format(x), tostring(x))
T.ok("format_tensor_in_table", repl.format({w = x}):find(tostring(x):gsub("\n", "\n  "), 1, true), repl.format({w = x}))
local bad = setmetatable({}, {__tostring = function() error("broken") end})
T.ok("format_tostring_error", repl.format(bad):find("<error in __tostring:", 1, true), repl.format(bad))

-- completion
local function same(name, got, want)
    T.ok(name, type(got) == "table" and table.concat(got, " ") == table.concat(want, " "),
         "got " .. (type(got) == "table" and table.concat(got, " ") or tostring(got)) .. ", want " .. table.concat(want, " "))
end
same("complete_field", repl.complete("mha.so", "mha.so", 0), {"mha.softmax"})
same("complete_field_after_paren", repl.complete("mha.sq", "print(mha.sq", 6), {"mha.sqrt", "mha.squeeze"})
_G.completion_x = mha.randn(2, 3)
same("complete_tensor_method", repl.complete("completion_x:transp", "completion_x:transp", 0), {"completion_x:transpose"})
same("complete_string_method", repl.complete(("s"):rep(0) .. "string.up", "string.up", 0), {"string.upper"})
local m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}
_G.completion_m = m
same("complete_module_method", repl.complete("completion_m:for", "completion_m:for", 0), {"completion_m:forward"})
same("complete_keyword_and_global", repl.complete("whi", "whi", 0), {"while"})
same("complete_lazy_global", repl.complete("plo", "plo", 0), {"plot"})
same("complete_operator_prefix", repl.complete("1+mha.ey", "1+mha.ey", 0), {"1+mha.eye"})
local class = {greet = function() end}
_G.completion_obj = setmetatable({}, {__index = class})
same("complete_through_index_table", repl.complete("completion_obj.gr", "completion_obj.gr", 0), {"completion_obj.greet"})
same("complete_nothing_for_nil", repl.complete("no_such_table.x", "no_such_table.x", 0), {})
same("complete_command", repl.complete(":ti", ":ti", 0), {":time"})
T.eq("complete_command_file_argument", repl.complete("/tm", ":save /tm", 6), "files")

-- commands: one line adds one
local ran
repl.add_command("testcmd", {args = "X", help = "a test command", run = function(a) ran = a end})
repl.command(":testcmd  hello world")
T.eq("add_command_runs", ran, "hello world")
repl.command(":testc abbreviated")
T.eq("command_prefix", ran, "abbreviated")
T.eq("command_quit_action", repl.command(":quit"), "quit")
T.eq("command_reset_action", repl.command(":reset"), "reset")
T.raises("add_command_checks_name", function() repl.add_command("bad name", {run = print}) end, "name must be a word")
T.raises("add_command_checks_run", function() repl.add_command("norun", {}) end, "spec.run must be a function")

T.done()
