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
    -- bytes that are not UTF-8 become U+FFFD (json.utf8_clean's), in values and keys alike
    local encoded = json.encode({"a\xffb", {["k\xe2\x82"] = "\xc0\xaf"}})
    T.eq("json_bad_utf8", encoded, '["a\u{FFFD}b",{"k\u{FFFD}":"\u{FFFD}\u{FFFD}"}]')
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
    -- a value after statements on one line shows, as at the prompt (repl.return_last)
    local function shown(code)
        local o, st = run(code)
        return st == "ok" and #o == 1 and o[1].output_type == "execute_result" and o[1].data["text/plain"] or o
    end
    T.eq("cell_value_after_semicolon", shown("w = 2; w"), "2")
    T.eq("cell_value_after_semicolon_lines", shown("w = 3\nw = w * 2; w"), "6")
    T.eq("cell_value_after_block", shown("do w = 7 end; w"), "7")
    T.eq("cell_value_after_a_comment", shown("w = 8   -- a comment; with a ';'\nw"), "8")
    outs = run("w = 4; w;")
    T.ok("cell_value_after_semicolon_quiet", #outs == 0 and w == 4)
    -- x.shape: the method itself, which the hint explains; no "function: 0x..." result above it
    outs = run("xs = mha.ones(2, 3)\nxs.shape")
    T.ok("cell_method_value_hint_alone", #outs == 1 and outs[1].output_type == "stream"
         and outs[1].text == "hint: xs.shape is the method itself; call it with a colon: xs:shape()\n", outs)
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

-- quit and exit() in a cell: the hint says how a notebook ends, not :quit or Ctrl-D
T.test("quit hint", function()
    local kernel = require "mha.kernel"
    local function run(code)
        local outs = {}
        local status = kernel.execute(code, function(o) outs[#outs + 1] = o end)
        return outs, status
    end
    local said = "hint: a notebook ends from its Kernel menu (Shut Down), or by closing its tab; " ..
                 "Kernel > Restart starts afresh"
    local outs = run("quit")
    T.eq("quit in a cell", outs[#outs].text, said .. "\n")
    local status
    outs, status = run("exit()")
    T.eq("exit() in a cell", {status, outs[1].traceback[#outs[1].traceback]}, {"error", said})
    outs = run("clear")
    T.eq("clear in a cell: the notebook's menu, not Ctrl-L", outs[#outs].text,
         "hint: clear is nil here: a notebook clears its cells' outputs from its Edit menu (Clear Outputs)\n")
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
    T.eq("write_atomic_error names the file, not its temporary", err,
         "/nonexistent-dir/x.ipynb: No such file or directory")
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

-- mha.json.utf8_clean: each maximal invalid subpart one U+FFFD, as Python's decode(errors="replace")
T.test("utf8_clean", function()
    local clean = require("mha.json").utf8_clean
    local R = "\u{FFFD}"
    T.eq("utf8_clean_valid", clean("ok é 注意 \0 😀"), "ok é 注意 \0 😀")
    T.eq("utf8_clean_cases", {clean("\xff"), clean("a\xe4\xb8b"), clean("\xed\xa0\x80"), clean("\xc0\xaf"),
                              clean("x\xf0\x9f\x98"), clean("\xf4\x90\x80\x80")},
         {R, "a" .. R .. "b", R .. R .. R, R .. R, "x" .. R, R .. R .. R .. R})
end)

-- what a lesson or a session puts in Markdown and in the page: no HTML of its own, no control character
T.test("escaping", function()
    local nb = require "mha.notebook"
    local html = require "mha.notebook.html"
    T.eq("markdown_unclosed_backtick", nb.markdown("a `b` <i> `c <script>x"), "a `b` &lt;i&gt; `c &lt;script&gt;x")
    T.eq("markdown_controls", nb.markdown("bell\a esc\27[31m `\1`"), "bell␇ esc␛[31m `␁`")
    T.eq("markdown_formula_fence", nb.markdown("  a ``` <b>"), "````text\na ``` <b>\n````")
    T.eq("html_escape_controls", html.escape("\27[31mx\r\127\t\n\xc2\x85"), "␛[31mx␍␡\t\n\u{FFFD}")
    local text = nb.ipynb({{kind = "markdown", title = "<img src=x onerror=alert(1)> `t", level = 1, markup = ""},
                           {kind = "code", source = "print('\xff')", count = 1,
                            outputs = {{output_type = "stream", name = "stdout", text = "\xff\xfe\n"}}}}, "T\xff")
    local decoded = require("mha.json").decode(text)
    T.ok("ipynb_title_escaped", decoded and decoded.cells[1].source[1] == "# &lt;img src=x onerror=alert(1)&gt; `t", text)
    T.ok("ipynb_bad_utf8_replaced", decoded and decoded.cells[2].outputs[1].text[1] == "\u{FFFD}\u{FFFD}\n"
         and decoded.metadata.title == "T\u{FFFD}", text)
    local page = nb.html_page({{kind = "markdown", title = "t\27", markup = "x\1 `\2`"},
                               {kind = "code", source = "\3", count = 1,
                                outputs = {{output_type = "stream", name = "stdout", text = "a\rb\n\xff"}}}}, "T", "en")
    T.ok("html_page_no_controls", not page:find("[\0-\8\11-\31\127]") and utf8.len(page) ~= nil
         and page:find("<pre class=\"out stdout\">b\n\u{FFFD}</pre>", 1, true), page)
end)

-- a tensor's table reads only what it shows: 33 x 33 numbers of a (3000,3000) tensor, 8 slices of many
T.test("html_bounded", function()
    local html = require "mha.notebook.html"
    local big = mha.zeros{3000, 3000}
    local t0 = os.clock()
    local h = html.tensor(big)
    local seconds = os.clock() - t0
    local _, cells = h:gsub("<td", "")
    T.ok("html_tensor_big_fast", seconds < 0.2 and cells == 32 * 33 + 1 and h:find("tensor (3000, 3000)", 1, true),
         string.format("%.3f s, %d cells", seconds, cells))
    local h4 = html.tensor(mha.zeros{100, 3, 2, 2})
    local _, slices = h4:gsub('class="mha%-tensor%-slice">%[', "")
    T.ok("html_tensor_first_slices", slices == 8 and h4:find("[3, 2, :, :]", 1, true) and not h4:find("[3, 3, :, :]", 1, true)
         and h4:find("(the first 8 slices)", 1, true), h4:sub(1, 300))
    T.ok("html_tensor_all_slices", not html.tensor(mha.zeros{2, 40, 40}):find("first", 1, true))
    T.ok("html_tensor_empty", html.tensor(mha.zeros{2, 0, 3, 3}):find("tensor (2, 0, 3, 3)", 1, true)
         and html.tensor(mha.zeros{0, 3}):find("tensor (0, 3)", 1, true))
end)

-- what an input printed, in parts: its text and the spans a table or a figure stands for (mha.notebook.record)
T.test("kept_outputs", function()
    local repl = require "mha.repl"
    local record = require "mha.notebook.record"
    repl.take_output()
    io.write("a\n")
    local from = repl.output_mark()
    io.write("T\n")
    repl.keep_output(from, {kind = "display_data", html = "<t>"})
    io.write("b\n")
    local text, parts = repl.take_output()
    T.eq("kept_parts", {text, #parts, parts[1].text, parts[2].text, parts[2].output.html, parts[3].text},
         {"a\nT\nb\n", 3, "a\n", "T\n", "<t>", "b\n"})
    -- a figure drawn again in the same input: one output, where it was drawn last, the older text left out
    local fig = {}
    repl.take_output()
    from = repl.output_mark(); io.write("plot 1\n"); repl.keep_output(from, {kind = "figure", n = 1}, fig)
    io.write("between\n")
    from = repl.output_mark(); io.write("plot 2\n")
    local replaced = repl.keep_output(from, {kind = "figure", n = 2}, fig)
    text, parts = repl.take_output()
    T.eq("kept_figure_redrawn", {replaced.n, #parts, parts[1].text, parts[2].output.n, parts[2].text},
         {1, 2, "between\n", 2, "plot 2\n"})
    -- show() is kept as a table with its labels, a value by repl.after; nothing past the bound
    repl.take_output()   -- (the PASS lines printed so far)
    mha.show(mha.tensor{{1, 2}}, {cols = {"p", "<q>"}})
    text, parts = repl.take_output()
    T.ok("kept_show", parts and parts[1].output.kind == "display_data" and parts[1].output.html:find("<th>&lt;q&gt;</th>", 1, true)
         and parts[1].text == text, tostring(text))
    repl.take_output()
    repl.after("t", "print", 0, mha.tensor{5})
    local entries = repl.transcript()
    local last = entries[#entries]
    T.ok("kept_value", last.parts and last.parts[1].output.kind == "execute_result" and last.parts[1].text == last.output,
         last.output)
    local saved = record.MAX_BYTES
    record.MAX_BYTES = 0
    repl.take_output()
    mha.show(mha.tensor{1})
    text, parts = repl.take_output()
    record.MAX_BYTES = saved
    T.ok("kept_bounded", parts == nil and text:find("[float32 (1)]", 1, true), tostring(text))
end)

-- a session's transcript as cells: steps as shown, quiet replays left out, answers, tables, errors
T.test("session_cells", function()
    local nb = require "mha.notebook"
    local cells = nb.session_cells({
        {kind = "step", label = "the lesson", input = 'require("mha.lesson").replaying("x", "en")', output = "── 02 T ──\n",
         heading = {title = "02 T", level = 1, markup = "summary", number = 2, lang = "en"}},
        {kind = "step", label = "the lesson's seed", input = "mha.seed(2)", output = ""},
        {kind = "step", label = "lesson t, step 1", input = "a = 1\nprint(a)",
         output = "Enter runs the next step.\n\n── step 1/2: S ──\ntext\n\n  │ a = 1\n  │ print(a)\n1\n",
         heading = {title = "Step 1/2: S", level = 2, markup = "text"}},
        {kind = "command", command = "open", input = ":open 2", output = "Answer with answer(value).\n"},
        {kind = "command", command = "goto", input = ":goto 2", output = "replaying step 1\n"},
        {kind = "step", label = "lesson t, step 1", input = "a = 1\nprint(a)", output = "",
         heading = {title = "Step 1/2: S", level = 2, markup = "text"}},
        {kind = "lua", input = "answer(3)", how = "print", output = "not yet: the expected one has 9\n"},
        {kind = "lua", input = "t", how = "print", output = "1.  2.\n[float32 (2)]\n",
         parts = {{text = "1.  2.\n[float32 (2)]\n", output = {kind = "execute_result", html = "<table/>"}}}},
        {kind = "lua", input = "error('e')", how = "error", output = "stdin:1: e\n"},
    })
    local shape = {}
    for i, c in ipairs(cells) do shape[i] = c.kind == "markdown" and (c.level .. " " .. c.title) or c.source end
    -- the lesson opened for code (its helpers for the cells after it); a stepping command is no cell
    T.eq("session_cells_shape", shape, {"1 mha-repl session", "2 02 T",
                                        '-- the lesson\'s language, seed, print options and helpers, as --batch sets them\n'
                                        .. 'require("mha.lesson").open_cells(2, "en");', "mha.seed(2)", "3 Step 1/2: S",
                                        "a = 1\nprint(a)", "answer(3)", "t", "error('e')"})
    T.eq("session_step_outputs", cells[6].outputs, {{output_type = "stream", name = "stdout",
                                                      text = "1\nAnswer with answer(value).\n"}})
    T.eq("session_wrong_answer", cells[7].outputs[1].text, "not yet: the expected one has 9\n")
    T.ok("session_value_table", cells[8].outputs[1].output_type == "execute_result"
         and cells[8].outputs[1].data["text/html"] == "<table/>" and cells[8].outputs[1].data["text/plain"] == "1.  2.\n[float32 (2)]")
    T.eq("session_error", {cells[9].outputs[1].output_type, cells[9].outputs[1].evalue}, {"error", "stdin:1: e"})
end)

-- an exercise shown is at_step(k), the step past it at_step(k + 1), so answer() re-runs as in the session;
-- the Enter that showed the exercise (no code of its own) is no ':next' cell; a file opened by its path
-- opens as :save's script does
T.test("session_cells_exercise", function()
    local nb = require "mha.notebook"
    local cells = nb.session_cells({
        {kind = "step", label = "the lesson", input = 'require("mha.lesson").replaying("/p/77_m.lua", "zh")',
         output = "── 77 M ──\n", heading = {title = "77 M", level = 1, markup = "s", lang = "zh"}},
        {kind = "step", label = "lesson m, step 1", input = "", before = 'require("mha.lesson").at_step(1)',
         output = "── step 1/2: E ──\n", heading = {title = "E", level = 2, markup = "q", exercise = 1, lang = "zh"}},
        {kind = "enter", input = "", output = "Exercise:\nq\nAnswer with answer(value).\n"},
        {kind = "lua", input = "answer(2)", how = "print", output = "correct\n"},
        {kind = "step", label = "lesson m, step 2", input = "x = 1", before = 'require("mha.lesson").at_step(2)',
         output = "── step 2/2: S ──\n  │ x = 1\n", heading = {title = "S", level = 2, markup = "t", lang = "zh"}},
        {kind = "enter", input = "", output = "End of the lesson.\n"},
    })
    local code = {}
    for _, c in ipairs(cells) do if c.kind == "code" then code[#code + 1] = c.source end end
    T.eq("session_exercise_cells", code, {'require("mha.lesson").replaying("/p/77_m.lua", "zh");',
        'require("mha.lesson").at_step(1)   -- 下面的答案所检查的练习', "answer(2)",
        'require("mha.lesson").at_step(2)   -- 课程已过了那道练习：答案不再对照它检查', "x = 1"})
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
    -- with a lesson open, :export writes the session (the student's wrong answer in it); :export lesson
    -- writes the lesson alone, run afresh
    out, code = sh("printf ':open 2\\n:goto 5\\nanswer(1)\\n:export " .. dir .. ".ipynb\\n:export lesson " .. dir .. "-l.ipynb\\n' | "
                   .. repl_bin .. " -i /dev/null")
    local function read_nb(path)
        local file = io.open(path)
        local text = file and file:read("a")
        if file then file:close() end
        return text and require("mha.json").decode(text)
    end
    local session, lesson = read_nb(dir .. ".ipynb"), read_nb(dir .. "-l.ipynb")
    local answered, step_tables = false, 0
    for _, cell in ipairs(session and session.cells or {}) do
        local first = cell.outputs and cell.outputs[1]
        if cell.source[1] == "answer(1)" and first and first.text[1]:find("^not yet") then answered = true end
        for _, o in ipairs(cell.outputs or {}) do
            if o.output_type == "display_data" and o.data["text/html"] then step_tables = step_tables + 1 end
        end
    end
    T.ok("repl_export_lesson_session", session and answered and step_tables == 3
         and out:find("wrote the session to " .. dir .. ".ipynb\n(:export lesson FILE writes lesson 2 alone", 1, true)
         and session.cells[2].source[1] == "## 02 Dot-product attention by hand\n", out)
    T.ok("repl_export_lesson_alone", lesson and out:find("wrote lesson 2 to " .. dir .. "-l.ipynb", 1, true)
         and lesson.cells[1].source[1] == "# 02 Dot-product attention by hand\n", out)
    os.remove(dir .. ".ipynb")
    os.remove(dir .. "-l.ipynb")
    -- the tables kept before a :reset are still tables after it; a Chinese session is titled in Chinese
    out, code = sh("printf 't = mha.tensor{{1, 2}}\\nt\\n:reset\\n:export " .. dir .. ".ipynb\\n' | MHA_LANG=zh "
                   .. repl_bin .. " -i /dev/null")
    session = read_nb(dir .. ".ipynb")
    local value = session and session.cells[3]
    T.ok("repl_export_after_reset", value and value.source[1] == "t" and value.outputs[1].output_type == "execute_result"
         and value.outputs[1].data["text/html"][1]:find("<td", 1, true) and session.cells[1].source[1] == "# mha-repl 会话", out)
    os.remove(dir .. ".ipynb")
end)

T.done()
