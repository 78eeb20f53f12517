-- tests/lua/test_notebook.lua - mha.json (jansson), mha.notebook.html (escaping, tensor tables), mha.kernel's cells and
-- mha.notebook's writers, without Python: tests/notebook/ checks the files with nbformat, Jupyter and Chromium.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha
require("mha.repl").init()   -- as mha-repl does before a kernel or an export: print is captured

T.test("json", function()
    local json = require "mha.json"
    T.eq("json_encode", json.encode({b = {1, 2.5, true}, a = "x\"\n<é>\0", e = {}, o = json.object()}),
         '{"a":"x\\"\\n<é>\\u0000","b":[1,2.5,true],"e":[],"o":{}}')
    T.eq("json_nan_is_null", json.encode({0 / 0, math.huge}), "[null,null]")
    local v = json.decode('{"k": [1, "two", null, {"x": 1.5}]}')
    T.ok("json_decode", v.k[1] == 1 and v.k[2] == "two" and v.k[3] == nil and v.k[4].x == 1.5)
    local value, err = json.decode("[1,")
    T.ok("json_decode_error", value == nil and err:find("^json.decode: line 1 column") ~= nil, err)
    T.raises("json_bad_utf8", function() json.encode({"\xff"}) end, "json.encode: a string is not valid UTF-8")
    T.raises("json_function", function() json.encode({f = print}) end, "json.encode: a function has no JSON form")
    T.raises("json_key", function() json.encode({[true] = 1}) end, "json.encode: an object's key is a boolean")
    local cycle = {}
    cycle[1] = cycle
    T.raises("json_cycle", function() json.encode(cycle) end, "nested too deep (or a cycle)")
end)

T.test("html", function()
    local html = require "mha.notebook.html"
    T.eq("html_escape", html.escape([[<a href="x">&'</a>]]), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;")
    local t = mha.tensor{{0, 1}, {2, 3}}
    local h = html.tensor(t, {rows = {"<we>", "like"}, cols = {"a", "b"}, title = "W & b"})
    T.ok("html_tensor_labels", h:find("<th>&lt;we&gt;</th>", 1, true) and h:find("<th>b</th>", 1, true)
         and h:find("W &amp; b · tensor (2, 2)", 1, true), h)
    -- shading: the smallest value lightest (0.08), the largest darkest (0.90), white text on it
    T.ok("html_tensor_shading", h:find('rgba(33,102,172,0.08);color:#111">0', 1, true)
         and h:find('rgba(33,102,172,0.90);color:#fff">3', 1, true), h)
    local h3 = html.tensor(mha.zeros{2, 2, 2})
    T.ok("html_tensor_slices", h3:find("[1, :, :]", 1, true) and h3:find("[2, :, :]", 1, true)
         and not h3:find("[0, :, :]", 1, true), h3)
    -- unlabelled rows and columns are numbered from 1, as t[i][j] counts them: the headers in order
    local function headers(fragment)
        local out = {}
        for label in fragment:gmatch("<th>(.-)</th>") do out[#out + 1] = label end
        return table.concat(out, "|")
    end
    T.eq("html_tensor_numbers", headers(html.tensor(mha.tensor{{1, 2}, {3, 4}, {5, 6}})), "|1|2|1|2|3")
    T.eq("html_tensor_vector_numbers", headers(html.tensor(mha.tensor{7, 8, 9})), "|1|2|3|")
    T.raises("html_tensor_not", function() html.tensor({1, 2}) end, "html.tensor: expected a tensor, got table")
end)

T.test("cells", function()
    local kernel = require "mha.kernel"
    local function run(code)
        local outs = {}
        local status, err = kernel.execute(code, function(o) outs[#outs + 1] = o end)
        return outs, status, err
    end
    local outs, status = run('print("a")\n1 + 1')
    T.ok("cell_stream_and_result", status == "ok" and outs[1].output_type == "stream" and outs[1].text == "a\n"
         and outs[2].output_type == "execute_result" and outs[2].data["text/plain"] == "2")
    outs = run("t = {}\nfor i = 1, 3 do\n  t[i] = i\nend")
    T.ok("cell_block_not_cut", #outs == 0 and #t == 3, "#t = " .. tostring(#t))
    outs, status = run("error('no')")
    T.ok("cell_error", status == "error" and outs[1].output_type == "error" and outs[1].evalue == "cell:1: no")
    outs = run("v = 5;")
    T.ok("cell_quiet", #outs == 0 and v == 5)
    outs = run("mha.show(mha.ones{1, 2}, {cols = {'p', 'q'}})")
    T.ok("cell_show_table", outs[1].output_type == "display_data" and outs[1].data["text/html"]:find("<th>q</th>", 1, true))
    T.eq("is_complete", {kernel.is_complete({code = "if x then"}).status, kernel.is_complete({code = "f(1,"}).status,
                         kernel.is_complete({code = "x = 1"}).status, kernel.is_complete({code = "x = )"}).status},
         {"incomplete", "incomplete", "complete", "invalid"})
    local c = kernel.complete({code = "z = mha.soft", cursor_pos = 12})
    T.ok("complete", c.cursor_start == 4 and c.cursor_end == 12 and c.matches[1] == "mha.softmax")
    -- code points, not bytes: a CJK string before the cursor
    c = kernel.complete({code = 's = "注意" .. mha.soft', cursor_pos = 20})
    T.ok("complete_utf8", c.cursor_start == 12 and c.cursor_end == 20 and c.matches[1] == "mha.softmax", tostring(c.cursor_start))
    local outputs = require "mha.notebook.outputs"
    T.eq("base64", outputs.base64("Man") .. outputs.base64("Ma") .. outputs.base64("M") .. outputs.base64(""),
         "TWFuTWE=TQ==")
end)

T.test("writers", function()
    local nb = require "mha.notebook"
    T.eq("markdown", nb.markdown("a <b> `c<d>`\n\n    x = y/√d\n\n- item\n# Head\n中文\n继续"),
         "a &lt;b&gt; `c<d>`\n\n```text\nx = y/√d\n```\n\n- item\n\n### Head\n\n中文继续")
    local page = nb.html_page({{kind = "markdown", title = "<t>", markup = "*em* `<code>`"},
                               {kind = "code", source = "print('<x>')", count = 1,
                                outputs = {{output_type = "stream", name = "stdout", text = "<x>\n"}}}}, "T<", "zh")
    T.ok("html_page_escaped", page:find("<h2>&lt;t&gt;</h2>", 1, true) and page:find("<em>em</em> <code>&lt;code&gt;</code>", 1, true)
         and page:find("print(&#39;&lt;x&gt;&#39;)", 1, true) and page:find('<html lang="zh-CN">', 1, true)
         and not page:find("<x>", 1, true), page)
    local path = os.tmpname()
    T.ok("write_atomic", nb.write_atomic(path, "one") and io.open(path):read("a") == "one")
    local ok, err = nb.write_atomic("/nonexistent-dir/x.ipynb", "two")
    T.ok("write_atomic_error", not ok and err:find("nonexistent", 1, true), tostring(err))
    os.remove(path)
    ok, err = nb.export_session("/tmp/x.txt", {})
    T.eq("export_extension", err, "'/tmp/x.txt': the name must end in .ipynb or .html")
    -- in the REPL's language: the REPL hands export_session its own
    ok, err = nb.export_session("/tmp/x.txt", {}, "zh")
    T.eq("export_extension_zh", err, "“/tmp/x.txt”：文件名必须以 .ipynb 或 .html 结尾")
    ok, err = nb.export_open_lesson("/tmp/x.ipynb", nil, "zh")
    T.eq("export_lesson_none_zh", err, "没有打开的课程（:open N 打开一课；:export FILE 写出本次会话）")
    ok, err = nb.export_session("", {}, "zh")
    T.eq("export_no_name_zh", err, "需要一个以 .ipynb 或 .html 结尾的文件名")
    ok, err = nb.export_lesson(99, "zh", "/tmp/x.html")
    T.ok("export_no_lesson_zh", not ok and err:find("^%-%-export: 没有课程“99”；"), tostring(err))
end)

-- the command line and the REPL's :export, through the binary under test
T.test("commands", function()
    local repl_bin = os.getenv("MHA_REPL") or "build/mha-repl"
    local dir = os.tmpname()
    os.remove(dir)
    local function sh(command)
        local p = io.popen(command .. " 2>&1")
        local out = p:read("a")
        local _, _, code = p:close()
        return out, code
    end
    local out, code = sh(repl_bin .. " --export x.ipynb")
    T.ok("cli_export_needs_lesson", code == 2 and out:find("--export goes with --lesson NAME --batch", 1, true), out)
    out, code = sh(repl_bin .. " --lesson 2 --batch --export " .. dir .. ".txt")
    T.ok("cli_export_extension", code == 1 and out:find("--export: '" .. dir .. ".txt': the name must end in .ipynb or .html", 1, true), out)
    out, code = sh(repl_bin .. " --lesson 99 --batch --export " .. dir .. ".html")
    T.ok("cli_export_no_lesson", code == 1 and out:find("--export: no lesson '99'", 1, true), out)
    out, code = sh("printf 'x = 41\\nx + 1\\nerror(\"e\")\\n:export " .. dir .. ".ipynb\\n' | " .. repl_bin .. " -i /dev/null")
    -- (exit status 1: an input of the -i session raised an error)
    local f = io.open(dir .. ".ipynb")
    local nb = f and require("mha.json").decode(f:read("a"))
    if f then f:close() end
    T.ok("repl_export_session", code == 1 and out:find("wrote the session to " .. dir .. ".ipynb", 1, true) and nb
         and nb.nbformat == 4 and nb.metadata.kernelspec.name == "mha-repl" and nb.cells[3].source[1] == "x + 1"
         and nb.cells[3].outputs[1].text[1] == "42\n" and nb.cells[4].outputs[1].evalue == "stdin:1: e", out)
    os.remove(dir .. ".ipynb")
end)

T.done()
