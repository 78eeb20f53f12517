-- tests/lua/test_habits.lua - mha.repl.habits: the one-line hints for a student's Python habits and the
-- did-you-mean for misspelt names, each checked against the message the REPL really gives.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha
local habits = require "mha.repl.habits"
_G.mha = _G.mha or mha

-- The message an input raises, as the REPL would see it (a syntax error or a run-time error).
local function error_of(input)
    local chunk, err = load("return " .. input, "=stdin")
    if not chunk then chunk, err = load(input, "=stdin") end
    if not chunk then return err end
    local ok, msg = pcall(chunk)
    assert(not ok, input .. " raised no error")
    return msg
end

T.test("python habits in errors", function()
    x = mha.randn(3, 4)
    y = mha.randn(3, 4)
    T.eq("x @ y", habits.after_error("x @ y", error_of("x @ y"), "en"),
        "hint: Lua has no @ operator: the matrix product is x:matmul(y), or mha.matmul(x, y)")
    T.eq("x:T() @ mha.eye(3)", habits.after_error("x:T() @ mha.eye(3)", error_of("x:T() @ mha.eye(3)"), "en"),
        "hint: Lua has no @ operator: the matrix product is x:T():matmul(mha.eye(3)), or mha.matmul(x:T(), mha.eye(3))")
    T.eq("x * y:T() meant as a matrix product", habits.after_error("x * y:T()", error_of("x * y:T()"), "en"),
        "hint: * multiplies element by element (broadcasting); for the matrix product write x:matmul(y:T())")
    -- matmul is offered only where the inner sizes match, else the product that fits, or none
    y = mha.randn(3, 5)
    T.eq("x * y with (3,4) and (3,5): x transposed fits", habits.after_error("x * y", error_of("x * y"), "en"),
        "hint: * multiplies element by element (broadcasting); the matrix product that fits (3,4) and (3,5) is " ..
        "x:transpose(1, 2):matmul(y): (4,3) @ (3,5) gives (4,5)")
    T.eq("the suggested product runs", x:transpose(1, 2):matmul(y):shape(), {4, 5})
    local z = mha.randn(5, 4)
    _G.z = z
    T.eq("x * z with (3,4) and (5,4): z transposed", habits.after_error("x * z", error_of("x * z"), "en"),
        "hint: * multiplies element by element (broadcasting); the matrix product that fits (3,4) and (5,4) is " ..
        "x:matmul(z:transpose(1, 2)): (3,4) @ (4,5) gives (3,5)")
    T.eq("no product fits", habits.after_error("x * mha.randn(5, 6)", error_of("x * mha.randn(5, 6)"), "en"),
        "hint: * multiplies element by element, so the shapes must broadcast; no matrix product fits (3,4) and " ..
        "(5,6) either (A:matmul(B) needs A's last size equal to B's second-to-last)")
    T.eq("in Chinese", habits.after_error("x * y", error_of("x * y"), "zh"),
        "提示：* 是逐元素相乘（会广播）；适合 (3,4) 和 (3,5) 的矩阵乘法是 x:transpose(1, 2):matmul(y)：(4,3) @ (3,5) 得到 (4,5)")
    _G.z = nil
    y = mha.randn(3, 4)
    T.eq("x * y (same shapes) is fine: no hint", habits.after_error("x * 2", "stdin:1: some other error", "en"), nil)
    T.eq("exit()", habits.after_error("exit()", error_of("exit()"), "en"), "hint: :quit or Ctrl-D leaves mha-repl (os.exit() too)")
    T.eq("quit()", habits.after_error("quit()", error_of("quit()"), "en"), "hint: :quit or Ctrl-D leaves mha-repl (os.exit() too)")
    T.eq("exit() in Chinese", habits.after_error("exit()", error_of("exit()"), "zh"), "提示：:quit 或 Ctrl-D 退出 mha-repl（os.exit() 也可以）")
    x, y = nil, nil
end)

T.test("did you mean, in errors", function()
    x = mha.randn(2, 2)
    T.eq("field", habits.after_error("mha.sofmax(x, 1)", error_of("mha.sofmax(x, 1)"), "en"), "hint: did you mean mha.softmax?")
    T.eq("method", habits.after_error("x:tranpose(1, 2)", error_of("x:tranpose(1, 2)"), "en"), "hint: did you mean x:transpose?")
    T.eq("global", habits.after_error("mhaa.softmax(x)", error_of("mhaa.softmax(x)"), "en"), "hint: mhaa is nil: did you mean mha?")
    T.eq("mha's function without mha.", habits.after_error("sofmax(x)", error_of("sofmax(x)"), "en"), "hint: sofmax is nil: did you mean mha.softmax?")
    T.eq("in Chinese", habits.after_error("mha.sofmax(x)", error_of("mha.sofmax(x)"), "zh"), "提示：你是想写 mha.softmax 吗？")
    T.eq("a one-letter name gets no guess (x is one edit from _)", habits.after_error("x:T()", "stdin:1: attempt to index a nil value (global 'x')", "en"),
         "hint: x is nil: nothing has been assigned to it in this session (after :reset, run the lines that make it again)")
    T.eq("nothing near: no hint", habits.after_error("mha.zzzzzzzz(x)", error_of("mha.zzzzzzzz(x)"), "en"), nil)
    x = nil
end)

-- Python's x.shape[1], a method reached with '.' after a call, torch's mha.tensor(1, 2, 3)
T.test("python habits with no hint before", function()
    x = mha.randn(3, 4)
    T.eq("x.shape[1]", habits.after_error("x.shape[1]", error_of("x.shape[1]"), "en"),
         "hint: x.shape is a method here, and dims count from 1: Python's x.shape[1] is x:shape()[2] " ..
         "(x:shape() is the whole shape)")
    T.eq("which is the size of dim 2", x:shape()[2], 4)
    T.eq("x.shape[-1]", habits.after_error("x.shape[-1]", error_of("x.shape[-1]"), "en"),
         "hint: x.shape is a method here, and dims count from 1: Python's x.shape[-1] is x:size(-1) " ..
         "(x:shape() is the whole shape)")
    T.eq("x.shape[1] in Chinese", habits.after_error("x.shape[1]", error_of("x.shape[1]"), "zh"),
         "提示：x.shape 在这里是方法，而且维度从 1 开始数：x.shape[1] 要写成 x:shape()[2]（x:shape() 是整个形状）")
    local T_method = mha.randn(3, 4).T
    T.eq("mha.randn(3, 4).T", habits.after_value("mha.randn(3, 4).T", "en", T_method),
         "hint: mha.randn(3, 4).T is the method itself; call it with a colon: mha.randn(3, 4):T()")
    T.eq("a function that is no tensor method", habits.after_value("f().g", "en", print), nil)
    local msg = error_of("mha.tensor(1, 2, 3)")
    T.eq("mha.tensor(1, 2, 3) in Chinese", habits.zh_line(msg), "提示：mha.tensor 只接受一个装着数值的表，写作 mha.tensor{1, 2, 3}")
    T.eq("no English line: the message says it", habits.core_line(msg, "en"), nil)
    x = nil
end)

T.test("an optimizer called as torch calls it: the call as typed, in mha's form", function()
    lin = mha.nn.Linear{in_features = 2, out_features = 2}
    for _, c in ipairs({
        {"mha.optim.Adam{params = lin:parameters(), lr = 1e-3}", "hint: write mha.optim.Adam(lin:parameters(), {lr = 1e-3})"},
        {"mha.optim.Adam(lin:parameters(), 1e-3)", "hint: write mha.optim.Adam(lin:parameters(), {lr = 1e-3})"},
        {"opt = mha.optim.SGD({lin.weight, lin.bias}, 0.1)", "hint: write mha.optim.SGD({lin.weight, lin.bias}, {lr = 0.1})"},
        {"mha.optim.AdamW{lr = 0.01, params = lin:parameters(), betas = {0.9, 0.95}}",
         "hint: write mha.optim.AdamW(lin:parameters(), {lr = 0.01, betas = {0.9, 0.95}})"},
    }) do
        T.eq(c[1], habits.after_error(c[1], error_of(c[1]), "en"), c[2])
    end
    T.eq("in Chinese", habits.after_error("mha.optim.Adam(lin:parameters(), 1e-3)",
         error_of("mha.optim.Adam(lin:parameters(), 1e-3)"), "zh"), "提示：写作 mha.optim.Adam(lin:parameters(), {lr = 1e-3})")
    T.ok("the hint's call runs", mha.optim.Adam(lin:parameters(), {lr = 1e-3}) ~= nil)
    lin = nil
end)

-- a nil global is said to be nil; a guess only for a close spelling of a name that holds a value
T.test("a nil variable, not a far guess", function()
    local never = "is nil: nothing has been assigned to it in this session (after :reset, run the lines that make it again)"
    out = 1
    T.eq("loss.item() is not load", habits.after_error("loss.item()", error_of("loss.item()"), "en"), "hint: loss " .. never)
    T.eq("lin.forward(x) is not the keyword in", habits.after_error("lin.forward(x)", error_of("lin.forward(x)"), "en"),
         "hint: lin " .. never)
    T.eq("opt.step() is not out", habits.after_error("opt.step()", error_of("opt.step()"), "en"), "hint: opt " .. never)
    T.eq("in Chinese", habits.after_error("loss.item()", error_of("loss.item()"), "zh"),
         "提示：loss 是 nil：本次会话里还没有给它赋过值（:reset 之后，要重新运行生成它的那几行）")
    modle = 1
    T.eq("a close spelling of a variable", habits.after_error("model.forward(x)", error_of("model.forward(x)"), "en"),
         "hint: model is nil: did you mean modle?")
    T.eq("a call is not offered a number", habits.after_error("modl(x)", error_of("modl(x)"), "en"),
         "hint: modl " .. never)
    out, modle = nil, nil
    T.eq("True typed alone is Lua's true", habits.after_value("True", "en", nil), "hint: True is nil: did you mean true?")
    T.eq("False typed alone is Lua's false", habits.after_value("False", "en", nil),
         "hint: False is nil: did you mean false?")
end)

T.test("a value at the end of statements", function()
    local msg = error_of("score = 1; score")
    T.eq("the parser's message", msg, "stdin:1: syntax error near <eof>")
    T.eq("dangling value named", habits.after_error("score = 1; score", msg, "en"),
        "hint: a value alone (score) is not a Lua statement: type score on a line of its own, or print(score)")
end)

-- Python's import, its range loop and its 0-based index, each with the message the REPL gives
T.test("python imports, loops and indices", function()
    local import = "hint: Lua has no import: mha is already loaded, and torch's names live in mha.* " ..
                   "(mha.softmax, mha.nn.Linear)"
    for _, input in ipairs({"import torch", "import numpy as np", "from torch import nn", "torch.zeros(3)"}) do
        T.eq(input, habits.after_error(input, error_of(input), "en"), import)
    end
    T.eq("import torch in Chinese", habits.after_error("import torch", error_of("import torch"), "zh"),
         "提示：Lua 没有导入语句：mha 已经加载好了，张量和神经网络的函数都在 mha.* 里（mha.softmax、mha.nn.Linear）")
    T.eq("important = 1 is no import", habits.after_error("important = 1 +", error_of("important = 1 +"), "en"), nil)
    -- range(n) becomes Lua's 1-based loop (x[i] reads from 1), with range's 0-based i as i - 1
    local counted = "hint: Lua counts from 1: for i = 1, 3 do print(i) end (both ends included) runs i " ..
        "over 1, 2, 3, the indices x[i] takes; where range(3)'s 0, 1, 2 are really needed, write i - 1"
    T.eq("for i in range(3): print(i)", habits.after_error("for i in range(3): print(i)",
         error_of("for i in range(3): print(i)\n"), "en"), counted)
    T.eq("an end typed after it", habits.after_error("for i in range(3): print(i) end",
         error_of("for i in range(3): print(i) end\n"), "en"), counted)
    T.eq("range(0, n)", habits.after_error("for j in range(0, n):", error_of("for j in range(0, n):\n"), "en"),
         "hint: Lua counts from 1: for j = 1, n do ... end (both ends included) runs j over 1, 2, ..., n, " ..
         "the indices x[j] takes; where range(0, n)'s 0, 1, ..., n - 1 are really needed, write j - 1")
    local loops = {
        {"for i in range(1, n):", "for i = 1, n - 1 do ... end"},
        {"for k in range(10, 0, -2): print(k) end", "for k = 10, 1, -2 do print(k) end"},
    }
    for _, c in ipairs(loops) do
        T.eq(c[1], habits.after_error(c[1], error_of(c[1] .. "\n"), "en"),
             "hint: Lua's loop is " .. c[2] .. " (both ends included)")
    end
    -- with its colon the loop never completes, so the REPL gives it back at once; Lua's own loop
    -- over a function named range reads on
    T.eq("the colon never completes", {habits.never_completes("for i in range(3):"),
         habits.never_completes("for i in range(3): print(i)"),
         habits.never_completes("for i in range(3) do"),
         habits.never_completes("for i in range(3):each() do")}, {true, true, false, false})
    T.eq("a range loop in Chinese", habits.after_error("for i in range(3): print(i)",
         error_of("for i in range(3): print(i)"), "zh"),
         "提示：Lua 从 1 开始数：for i = 1, 3 do print(i) end（两端都包括在内）让 i 依次取 1, 2, 3，" ..
         "正是 x[i] 要的下标；确实需要 range(3) 的 0, 1, 2 时，写 i - 1")
    x = mha.randn(2, 3)
    T.eq("x[0]", habits.after_error("x[0]", error_of("x[0]"), "en"),
         "hint: Lua and mha index from 1: x[1] is the first, x[-1] the last")
    T.eq("x[1][0]", habits.after_error("x[1][0]", error_of("x[1][0]"), "en"),
         "hint: Lua and mha index from 1: x[1][1] is the first, x[1][-1] the last")
    T.eq("x[0] in Chinese", habits.after_error("x[0]", error_of("x[0]"), "zh"),
         "提示：Lua 和 mha 的下标从 1 开始：x[1] 是第一个，x[-1] 是最后一个")
    T.eq("x[3] (past the end) is no 0-based slip", habits.after_error("x[3]", error_of("x[3]"), "en"), nil)
    x = nil
end)

-- Python's def and its [1, 2] lists: errors with a hint; its [[1, 2], [3, 4]]: a Lua long string,
-- no error at all, so the hint comes after the statement
T.test("python functions and lists", function()
    local defs = {
        {"def f(x):", "function f(x) ... end"},
        {"def f(x): return x * 2", "function f(x) return x * 2 end"},
        {"def scale(x: Tensor, s: float): return x * s", "function scale(x, s) return x * s end"},
    }
    for _, case in ipairs(defs) do
        T.eq(case[1], habits.after_error(case[1], error_of(case[1]), "en"), "hint: Lua's function is written " .. case[2])
    end
    T.eq("def in Chinese", habits.after_error("def f(x):", error_of("def f(x):"), "zh"),
         "提示：Lua 的函数写作 function f(x) ... end")
    T.eq("define = 1 + is no def", habits.after_error("define = 1 +", error_of("define = 1 +"), "en"), nil)
    local lists = {{"x = [1, 2, 3]", "{1, 2, 3}"}, {"y = mha.tensor([1,2])", "{1,2}"}, {"f(1, [2, [3]])", "{2, {3}}"}}
    for _, case in ipairs(lists) do
        T.eq(case[1], habits.after_error(case[1], error_of(case[1]), "en"),
             "hint: Lua's lists are tables in braces: " .. case[2] .. " (mha.tensor takes one too)")
    end
    T.eq("a list in Chinese", habits.after_error("x = [1, 2]", error_of("x = [1, 2]"), "zh"),
         "提示：Lua 的列表是花括号里的表：{1, 2}（mha.tensor 也接受它）")
    T.eq("np.array: the import hint", habits.after_error("np.array({1})", error_of("np.array({1})"), "en"),
         "hint: Lua has no import: mha is already loaded, and torch's names live in mha.* (mha.softmax, mha.nn.Linear)")
    T.eq("x = [[1, 2], [3, 4]]", habits.after_statement("x = [[1, 2], [3, 4]]", "en"),
         "hint: [[...]] is a Lua string, not a list: x holds text now; a table of rows is {{1, 2}, {3, 4}}")
    T.eq("local w = [[0.5, -1e-3]]", habits.after_statement("local w = [[0.5, -1e-3]]", "en"),
         "hint: [[...]] is a Lua string, not a list: w holds text now; a table of rows is {{0.5, -1e-3}}")
    T.eq("a long string in Chinese", habits.after_statement("x = [[1, 2]]", "zh"),
         "提示：[[...]] 在 Lua 里是字符串，不是列表：x 现在存的是文字；按行的表写作 {{1, 2}}")
    T.eq("a real long string: no hint", habits.after_statement("s = [[hello]]", "en"), nil)
    T.eq("t = {[1] = 2}: no hint", habits.after_statement("t = {[1] = 2}", "en"), nil)
    T.eq("a block's last line (end): no hint", habits.after_statement("end", "en"), nil)
end)

-- More of Python's syntax: x += 1, !=, # comments, if x > 0:, print x, keyword arguments, dims from 0,
-- and None or True assigned (no error: an unset name, so nil)
T.test("python syntax", function()
    x = mha.randn(2, 3)
    local cases = {
        {"x += 1", "hint: Lua has no +=: write x = x + 1"},
        {"t.n *= 2", "hint: Lua has no *=: write t.n = t.n * 2"},
        {"print(x != x)", "hint: Lua's not-equal is ~=: print(x ~= x)"},
        {"# the scores", "hint: Lua's comments start with --: -- the scores"},
        {"if x:sum():item() > 0:", "hint: Lua's blocks take no colon: if x:sum():item() > 0 then ... end"},
        {"while n < 3:", "hint: Lua's blocks take no colon: while n < 3 do ... end"},
        {"print x", "hint: print is a function in Lua: print(x)"},
        {"mha.softmax(x, dim=-1)", "hint: Lua has no keyword arguments: write mha.softmax(x, -1) (options, where a "
                                   .. "function has them, go in {name = value})"},
        {"x:sum(0)", "hint: dims count from 1 here: dim 1 is the first, -1 the last"},
        {"x:transpose(0, 1)", "hint: dims count from 1 here: dim 1 is the first, -1 the last"},
    }
    for _, case in ipairs(cases) do T.eq(case[1], habits.after_error(case[1], error_of(case[1]), "en"), case[2]) end
    T.eq("+= in Chinese", habits.after_error("x += 1", error_of("x += 1"), "zh"), "提示：Lua 没有 +=：写作 x = x + 1")
    T.eq("dim 0 in Chinese", habits.after_error("x:sum(0)", error_of("x:sum(0)"), "zh"),
         "提示：这里的维度从 1 开始数：dim 1 是第一维，-1 是最后一维")
    T.eq("x == y is Lua: no keyword hint, f is nil",
         habits.after_error("f(x == y)", "stdin:1: attempt to call a nil value (global 'f')", "en"),
         "hint: f is nil: nothing has been assigned to it in this session (after :reset, run the lines that make it again)")
    T.eq("a = None", habits.after_statement("a = None", "en"),
         "hint: Lua writes None as nil: None is an unset name here, so a is nil")
    T.eq("b = True in Chinese", habits.after_statement("b = True", "zh"),
         "提示：Lua 把 True 写作 true：True 在这里是未定义的名字，所以 b 是 nil")
    T.eq("a = Nothing: no hint", habits.after_statement("a = Nothing", "en"), nil)
    x = nil
end)

T.test("python habits in values", function()
    x = mha.randn(2, 3)
    T.eq("x.shape", habits.after_value("x.shape", "en", x.shape), "hint: x.shape is the method itself; call it with a colon: x:shape()")
    T.eq("x.shape in Chinese", habits.after_value("x.shape", "zh", x.shape), "提示：x.shape 是方法本身；用冒号调用它：x:shape()")
    T.eq("x:shape() is right: no hint", habits.after_value("x:shape()", "en", x:shape()), nil)
    T.eq("mha.softmax (a library function) gets no method hint", habits.after_value("mha.softmax", "en", mha.softmax), nil)
    T.eq("help", habits.after_value("help", "en", function() end),
        "hint: help is a function: help() lists the topics, help(mha.softmax) explains one; ? lists the commands")
    T.eq("quit", habits.after_value("quit", "en", nil), "hint: :quit or Ctrl-D leaves mha-repl")
    T.eq("clear, a shell's habit", habits.after_value("clear", "en", nil), "hint: clear is nil here: Ctrl-L clears the screen")
    T.eq("cls in Chinese", habits.after_value("cls", "zh", nil), "提示：cls 在这里是 nil：Ctrl-L 清屏")
    T.eq("clear holding a value gets none", habits.after_value("clear", "en", 3), nil)
    T.eq("exit", habits.after_value("exit", "en", nil), "hint: :quit or Ctrl-D leaves mha-repl")
    x = nil
end)

T.test("unknown commands", function()
    local names = { "answer", "back", "goto", "help", "lang", "lessons", "next", "open", "quit", "reset", "save" }
    T.eq(":opne", habits.unknown_command("opne", names, "en"), "unknown command :opne (did you mean :open?)")
    T.eq(":rest in Chinese", habits.unknown_command("rset", names, "zh"), "没有命令 :rset（你是想输入 :reset 吗？）")
    T.eq(":zzzz", habits.unknown_command("zzzz", names, "en"), nil)
end)

-- the C core's file and size errors are English; in Chinese each gets a line saying what it means
T.test("core file errors in Chinese: one line of habits.zh_line each", function()
    local lossy = "load: 'ids.npy': a.flat[2] of dtype '<i8' is 16777217, which float32 cannot hold exactly (it "
        .. "holds every integer from -2^24 to 2^24 = 16777216); mha tensors are float32."
    T.eq("a lossy .npy", habits.zh_line(lossy),
         "提示：mha 的张量是 float32，只能精确表示 -2^24 到 2^24 之间的整数；能接受舍入的话，先在 NumPy 里转换：a.astype(np.float32)")
    T.eq("no English hint: the message says it", habits.after_error("mha.load('ids.npy')", lossy, "en"), nil)
    local full = "save: cannot write 'x.npy': No space left on device (the old file is kept as it was)"
    T.eq("a full disk", habits.zh_line(full),
         "提示：磁盘满了：新文件没有写成，旧文件原样保留；腾出空间后再保存一次")
    T.eq("a plot on a full disk", habits.zh_line(
         "plot.save: cannot write 'a.png': No space left on device (the old file is kept as it was)"),
         "提示：磁盘满了：新文件没有写成，旧文件原样保留；腾出空间后再保存一次")
    T.eq("cat past 2^63-1", habits.zh_line("cat: joining the 2nd tensor (4611686018427387904,0) "
         .. "makes dim -2 longer than 2^63-1 (4611686018427387904 + 4611686018427387904), the largest size a dim may have"),
         "提示：一个维度最长 2^63-1；拼接后的长度超过了它")
end)

T.test("the errors a student meets first: a hint in English, a Chinese line in Chinese", function()
    local missing = "stdin:1: bad argument #2 to 'softmax' (number expected, got no value)"
    T.eq("a missing argument", habits.after_error("mha.softmax(x)", missing, "en"),
         "hint: softmax needs argument #2: ?softmax shows what it takes")
    T.eq("a missing argument in Chinese", habits.after_error("mha.softmax(x)", missing, "zh"),
         "提示：softmax 缺少第 2 个参数：?softmax 列出它要的参数")
    T.eq("a wrong argument in Chinese", habits.zh_line("stdin:1: bad argument #2 to 'softmax' (number expected, got string)"),
         "提示：第 2 个参数（softmax 的）应该是 number，实际是 string")
    T.eq("matmul's inner sizes in Chinese", habits.zh_line("stdin:1: matmul: (2,3) @ (2,3): inner sizes 3 and 2 differ"),
         "提示：矩阵乘法 A·B 要求 A 的最后一维等于 B 的倒数第二维（这里是 3 和 2）；也许要先转置其中一个：:transpose(1, 2)")
    T.eq("heads that do not divide embed_dim in Chinese",
         habits.zh_line("stdin:1: MultiheadAttention: embed_dim 8 is not divisible by num_heads 3"),
         "提示：embed_dim 8 必须能被 num_heads 3 整除：每个头分到 embed_dim/num_heads 维")
    -- English gets the lines its message does not say: transpose one; each head's share; Ctrl-C
    local repl = require "mha.repl"
    T.eq("matmul's inner sizes in English", habits.core_line("stdin:1: matmul: (3,4) @ (3,5): inner sizes 4 and 3 differ", "en"),
         "hint: the matrix product A·B needs A's last dim to equal B's second-to-last (here 4 and 3); perhaps one " ..
         "of them should be transposed first: :transpose(1, 2)")
    T.eq("heads that do not divide embed_dim in English",
         habits.core_line("stdin:1: MultiheadAttention: embed_dim 8 is not divisible by num_heads 3", "en"),
         "hint: each head gets embed_dim/num_heads dims, so embed_dim 8 must be a multiple of num_heads 3")
    T.eq("Ctrl-C in English", habits.core_line("interrupted", "en"),
         "hint: Ctrl-C stopped this input; what it did before that (an assignment, say) is kept")
    T.eq("the message says it already: no line", habits.core_line("view: cannot view a tensor of shape (2,3)", "en"), nil)
    T.eq("the REPL gives it under mha.matmul(x, y)", repl.hint("mha.matmul(x, y)", "error",
         "stdin:1: matmul: (3,4) @ (3,5): inner sizes 4 and 3 differ"),
         "hint: the matrix product A·B needs A's last dim to equal B's second-to-last (here 4 and 3); perhaps one " ..
         "of them should be transposed first: :transpose(1, 2)")
    T.eq("a misspelt name alone is nil", habits.after_value("mha.sofmax", "en", nil), "hint: mha.sofmax is nil: did you mean mha.softmax?")
    T.eq("a misspelt global alone", habits.after_value("sofmax", "en", nil), "hint: sofmax is nil: did you mean mha.softmax?")
    T.eq("a nil that is no misspelling gets no hint", habits.after_value("mha.zzzzqqqq", "en", nil), nil)
    T.eq("a name that is there gets none", habits.after_value("mha.softmax", "en", mha.softmax), nil)
end)

T.test("a method called with a dot and its arguments: the colon, not a missing argument", function()
    x = mha.randn(2, 3)
    for _, input in ipairs {"x.matmul(x:transpose(1, 2))", "x.softmax(-1)", "x.add(1)", "x.pow(2)"} do
        local fname = input:match("^x%.([%a_]+)")
        T.eq(input, habits.after_error(input, error_of(input), "en"), "hint: write " .. input:gsub("^x%.", "x:"))
        T.eq(input .. " in Chinese", habits.after_error(input, error_of(input), "zh"),
             "提示：写作 " .. input:gsub("^x%.", "x:"))
        T.ok(input .. ": the error was about argument #2", error_of(input):find("#2 to '" .. fname, 1, true) ~= nil,
             error_of(input))
    end
    -- reductions refuse a number, which x.sum(2) passed alone (it answered 2)
    for _, input in ipairs {"x.sum(2)", "x.mean(-1)", "x.max(1)", "x.argmax(-1)", "x.var(1)"} do
        T.eq(input, habits.after_error(input, error_of(input), "en"), "hint: write " .. input:gsub("^x%.", "x:"))
    end
    -- mha's own functions take the tensor as an argument: mha.exp() lacks it, it is not mha:exp()
    T.eq("mha.exp()", habits.after_error("mha.exp()", error_of("mha.exp()"), "en"),
         "hint: exp needs argument #1: ?exp shows what it takes")
    T.eq("mha.softmax()", habits.after_error("mha.softmax()", error_of("mha.softmax()"), "zh"),
         "提示：softmax 缺少第 1 个参数：?softmax 列出它要的参数")
    T.eq("mha.sum(2): no colon to suggest", habits.after_error("mha.sum(2)", error_of("mha.sum(2)"), "en"), nil)
end)

T.test("python's f-strings and 0-based indexes into tables", function()
    x = mha.randn(2, 3)
    local input = 'print(f"loss {x:sum():item()} at {x:mean():item():.3f}, 100%")'
    local hint = habits.after_error(input, error_of(input), "en")
    T.eq("f-string: string.format with its values", hint,
         'hint: Lua has no f-strings: string.format builds the text, string.format("loss %s at %.3f, 100%%", ' ..
         'x:sum():item(), x:mean():item())')
    -- the suggestion runs, and says what the f-string meant
    local call = hint:match("text, (.*)$")
    local text = load("return " .. call)()
    T.eq("the suggested call runs", text, string.format("loss %s at %.3f, 100%%", x:sum():item(), x:mean():item()))
    T.eq("f-string in Chinese", habits.after_error("print(f'{x}')", error_of("print(f'{x}')"), "zh"),
         "提示：Lua 没有 f 字符串：用 string.format 拼出文字，string.format('%s', x)")
    T.eq("a global f called as f(1) is no f-string", habits.after_error("f(1)", error_of("f(1)"), "en"),
         "hint: f is nil: nothing has been assigned to it in this session (after :reset, run the lines that make it again)")
    T.eq("x:shape()[0]", habits.after_value("x:shape()[0]", "en", x:shape()[0]),
         "hint: Lua and mha index from 1: x:shape()[0] is nil; x:shape()[1] is the first")
    T.eq("t[0] in Chinese", habits.after_value("t[0]", "zh", nil), "提示：Lua 和 mha 的下标从 1 开始：t[0] 是 nil；t[1] 才是第一个")
    T.eq("t[0] holding a value gets no hint", habits.after_value("t[0]", "en", 5), nil)
end)

T.test("x.sum(): the message says to use a colon, and no second hint", function()
    x = mha.randn(2, 3)
    local msg = error_of("x.sum()")
    T.ok("the message names the call", msg:find("call it with a colon: x:sum()", 1, true), msg)
    T.eq("no hint after it", habits.after_error("x.sum()", msg, "en"), nil)
    T.eq("in Chinese, the message's line", habits.zh_line(msg), "提示：sum 是方法：用冒号调用它，写作 x:sum()")
end)

T.done()
