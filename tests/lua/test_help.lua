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
local m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}
T.ok("help_module_value", help.text(m):find("PyTorch 1.13", 1, true), help.text(m))
T.ok("help_lua_function", help.text(string.format):find("manual.html#pdf-string.format", 1, true), help.text(string.format))
T.ok("help_nil", help.text(nil):find("nil", 1, true) and not help.text(nil):find("attention:"), help.text(nil))
local topics = help.text()
T.ok("help_topics", topics:find("attention:", 1, true) and topics:find("mha.softmax", 1, true)
     and topics:find("tensor methods:", 1, true), topics)
T.ok("help_unknown", help.text("no_such_thing_here"):find("No help for 'no_such_thing_here'", 1, true),
     help.text("no_such_thing_here"))
local before = rawget(_G, "help")
T.ok("help_global_is_lazy", before == nil and type(_G.help) == "function" and rawget(_G, "help") == _G.help,
     "help was " .. tostring(before) .. " before its first use")

T.done()
