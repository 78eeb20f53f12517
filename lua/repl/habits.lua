-- lua/repl/habits.lua - module "mha.repl.habits": one-line hints for a student's Python habits (x.shape,
-- x @ y, x * y:T(), help, quit, exit()) and did-you-mean for misspelt names, commands and help topics.

local display = require "mha.display"
local complete = require "mha.repl.complete"
local mha_is_tensor = require("mha").is_tensor

local habits = {}

-- The hints' words, in the language the REPL is in ("en" or "zh").
local WORDS = {
    en = {
        hint = "hint: ",
        method = "%s is the method itself; call it with a colon: %s:%s()",
        help = "help is a function: help() lists the topics, help(mha.softmax) explains one; ? lists the commands",
        quit = ":quit or Ctrl-D leaves mha-repl",
        exit = ":quit or Ctrl-D leaves mha-repl (os.exit() too)",
        data = "there is no .data here: use %s:detach() (the same numbers, outside the graph) or %s itself",
        len = "Lua has no len(): #%s is the size of dim 1, as %s:size(1); %s:numel() counts every element",
        ce_target = "classes count from 1 here; to skip the targets that are %s, give {ignore_index = %s}",
        matmul_at = "Lua has no @ operator: the matrix product is %s:matmul(%s), or mha.matmul(%s, %s)",
        matmul_star = "* multiplies element by element (broadcasting); for the matrix product write %s:matmul(%s)",
        did_you_mean = "did you mean %s?",
        colon = "write %s",
        dangling = "a value alone (%s) is not a Lua statement: type %s on a line of its own, or print(%s)",
        dangling_any = "a value alone is not a Lua statement: type it on a line of its own, or print(...) it",
        command = "unknown command :%s (did you mean :%s?)",
        missing_arg = "%s needs argument #%s: ?%s shows what it takes",
        nil_name = "%s is nil: did you mean %s?",
    },
    zh = {
        hint = "提示：",
        method = "%s 是方法本身；用冒号调用它：%s:%s()",
        help = "help 是一个函数：help() 列出所有主题，help(mha.softmax) 解释其中一个；? 列出命令",
        quit = ":quit 或 Ctrl-D 退出 mha-repl",
        exit = ":quit 或 Ctrl-D 退出 mha-repl（os.exit() 也可以）",
        data = "这里没有 .data：用 %s:detach()（同样的数值，不在计算图里）或直接用 %s",
        len = "Lua 没有 len()：#%s 是第 1 维的大小，即 %s:size(1)；%s:numel() 数所有元素",
        to_device = "mha-repl 只在 CPU 上计算：写 m:to(\"cpu\")，或不调用 to",
        train_mode = "m:train(true) 进入训练模式，m:train(false) 或 m:eval() 进入评估模式",
        ce_target = "这里的类别从 1 开始数；要跳过值为 %s 的目标，就给出 {ignore_index = %s}",
        ce_option = "cross_entropy 的选项：ignore_index 是要跳过的目标值（整数），reduction 是 \"mean\"、\"sum\" 或 " ..
                    "\"none\"，label_smoothing 是 0 到 1 之间的数",
        matmul_at = "Lua 没有 @ 运算符：矩阵乘法写作 %s:matmul(%s)，或 mha.matmul(%s, %s)",
        matmul_star = "* 是逐元素相乘（会广播）；矩阵乘法请写 %s:matmul(%s)",
        did_you_mean = "你是想写 %s 吗？",
        colon = "写作 %s",
        dangling = "单独的值（%s）不是 Lua 语句：把 %s 单独输入一行，或用 print(%s)",
        dangling_any = "单独的值不是 Lua 语句：把它单独输入一行，或用 print(...)",
        command = "没有命令 :%s（你是想输入 :%s 吗？）",
        missing_arg = "%s 缺少第 %s 个参数：?%s 列出它要的参数",
        nil_name = "%s 是 nil：你是想写 %s 吗？",
    },
}
function habits.words(lang) return WORDS[lang] or WORDS.en end

habits.closest = display.closest

-- "mha.sofmax" -> "mha.softmax": the name Tab would offer (mha.repl.complete) nearest to a name missing
-- from a table, from an object's methods, or from the globals.
local function suggest(kind, name, input)
    if kind == "global" then   -- a global, else a function of mha's typed without "mha." (sofmax)
        local best = habits.closest(name, complete.names(""))
        if best then return best end
        local fields = {}
        for i, full in ipairs(complete.names("mha.")) do fields[i] = full:sub(5) end
        best = habits.closest(name, fields)
        return best and "mha." .. best
    end
    local sep = kind == "method" and ":" or "."
    -- the expression before the missing name, as typed: mha.sofmax, x:tranpose, m.nn.Linaer
    local base = input:match("([%a_][%w_%.]*)%s*" .. (sep == ":" and ":" or "%.") .. "%s*" .. name .. "%f[^%w_]")
    if not base then return nil end
    local names = {}
    for i, full in ipairs(complete.names(base .. sep)) do names[i] = full:sub(#base + 2) end
    local best = habits.closest(name, names)
    return best and (base .. sep .. best)
end

-- The last value of an input, as typed: "score" in "score = K:matmul(q); score".
local function trailing_value(input)
    local last = input:gsub("%s+$", ""):match("([%a_][%w_%.%[%]\"']*)$")
    if last and #last <= 40 then return last end
    return nil
end

-- The two operands around an operator, as typed: "x", "y" in "x @ y"; nil when they are not plain names
-- or calls.
local function operands(input, op)
    local a, b = input:match("([%a_][%w_%.:]*%b())%s*" .. op .. "%s*([%a_][%w_%.:]*%b())")
    if not a then a, b = input:match("([%a_][%w_%.]*)%s*" .. op .. "%s*([%a_][%w_%.:]*%b())") end
    if not a then a, b = input:match("([%a_][%w_%.]*)%s*" .. op .. "%s*([%a_][%w_%.]*)") end
    return a, b
end

-- A hint for an input whose evaluation raised msg (a syntax or a run-time error), or nil.
function habits.after_error(input, msg, lang)
    local w = habits.words(lang)
    msg = tostring(msg)
    local first = msg:match("^[^\n]*")
    if first:find("near '@'", 1, true) then
        local a, b = operands(input, "@")
        a, b = a or "A", b or "B"
        return w.hint .. string.format(w.matmul_at, a, b, a, b)
    end
    if first:find("syntax error near <eof>$") then
        local value = trailing_value(input)
        if value then return w.hint .. string.format(w.dangling, value, value, value) end
        return w.hint .. w.dangling_any
    end
    local global = first:match("attempt to call a nil value %(global '([%w_]+)'%)")
    if global == "exit" or global == "quit" then return w.hint .. w.exit end
    if global == "len" then   -- Python's len(x)
        local arg = input:match("len%s*%(%s*([%a_][%w_%.]*)%s*%)") or "x"
        return w.hint .. string.format(w.len, arg, arg, arg)
    end
    if first:find("attempt to %a+ a nil value %(field 'data'%)") then   -- torch's x.data
        local base = input:match("([%a_][%w_%.]*)%.data%f[^%w_]")
        if base then return w.hint .. string.format(w.data, base, base) end
    end
    -- the module methods' refusals (lua/nn/module.lua) say it in English; in Chinese a hint says it again
    if w.to_device and first:find("^[^:]*:?%d*:? ?[%w_]+:to: device .* is not available") then return w.hint .. w.to_device end
    if w.train_mode and first:find("[%w_]+:train: mode must be true or false") then return w.hint .. w.train_mode end
    -- torch's habit of padding targets with 0 (or -1): cross_entropy's ignore_index skips them
    local bad = first:match("cross_entropy: targets %S+: entry %d+ is (%-?%d+); expected a whole number from 1")
    if bad and tonumber(bad) <= 0 then return w.hint .. string.format(w.ce_target, bad, bad) end
    if w.ce_option and first:find("cross_entropy[%w_]*: option [%w_]+ must be") then return w.hint .. w.ce_option end
    if first:find("mul: shapes", 1, true) and first:find("cannot broadcast", 1, true) and input:find("*", 1, true) then
        local a, b = operands(input, "%*")
        return w.hint .. string.format(w.matmul_star, a or "A", b or "B")
    end
    -- "item is a method: call it with a colon: x:item()": the call as the user typed it (loss.item())
    local method = first:match("([%w_]+) is a method: call it with a colon: ")
                   or first:match("as a method, call it with a colon: [%w_]+:([%w_]+)")
    if method then
        local base, args = input:match("([%a_][%w_%.]*)%." .. method .. "%s*(%b())")
        local call = base and base .. ":" .. method .. args
        if call and not first:find(call, 1, true) then return w.hint .. string.format(w.colon, call) end
    end
    -- a function called without an argument it needs: where its signature is
    local n, fname = first:match("bad argument #(%d+) to '([%w_]+)' %(.- expected, got no value%)")
    if n then return w.hint .. string.format(w.missing_arg, fname, n, fname) end
    local kind, name = first:match("attempt to %a+ a nil value %((%a+) '([%w_]+)'%)")
    if kind == "global" or kind == "field" or kind == "method" then
        local best = suggest(kind, name, input)
        if best then return w.hint .. string.format(w.did_you_mean, best) end
    end
    return nil
end

-- Whether the dotted name (x, model.x) is a tensor among the globals; nil when it cannot be read.
local function is_tensor_named(path)
    local ok, v = pcall(function()
        local v = _G
        for part in path:gmatch("[^%.]+") do v = v[part] end
        return v
    end)
    return ok and mha_is_tensor(v)
end

-- A hint for an input that printed values, or nil: x.shape (a method, not called), help, quit, exit.
function habits.after_value(input, lang, ...)
    local w = habits.words(lang)
    local code = input:match("^%s*(.-)%s*;?%s*$")
    if code == "help" and type((...)) == "function" then return w.hint .. w.help end
    if (code == "quit" or code == "exit") and select("#", ...) <= 1 and (...) == nil then return w.hint .. w.quit end
    local base, name = code:match("^([%a_][%w_%.]*)%.([%a_][%w_]*)$")
    local value = ...
    if base and name == "data" and value == nil and select("#", ...) <= 1 and is_tensor_named(base) then
        return w.hint .. string.format(w.data, base, base)
    end
    -- a misspelt name typed alone (mha.sofmax, sofmax) is nil: the name Tab would offer
    local bare = code:match("^[%a_][%w_]*$")
    if value == nil and select("#", ...) <= 1 and (base or bare) then
        local best
        if base then best = suggest("field", name, code) else best = suggest("global", bare, code) end
        if best then return w.hint .. string.format(w.nil_name, code, best) end
    end
    if base and type(value) == "function" and select("#", ...) == 1 then
        -- a method reached with '.' (a tensor's, a module's): the name Tab offers after base:
        for _, full in ipairs(complete.names(base .. ":" .. name)) do
            if full == base .. ":" .. name then return w.hint .. string.format(w.method, code, base, name) end
        end
    end
    return nil
end

-- ":opne" -> the message for an unknown command, with the nearest command when one is near.
function habits.unknown_command(name, commands, lang)
    local best = habits.closest(name, commands)
    if best then return string.format(habits.words(lang).command, name, best) end
    return nil
end

-- Chinese hint lines for the messages the C core and the helpers raise in English: in a Chinese session
-- the REPL prints the line under such a message (in English the message says it already). Each entry is
-- a pattern of the message's first line and the hint, a format for the pattern's captures.
local ZH_LINES = {
    {"^interrupted$", "提示：Ctrl-C 中断了这条输入；中断之前它做完的事（例如赋值）都还在"},
    {": interrupted$", "提示：Ctrl-C 中断了这条输入；中断之前它做完的事（例如赋值）都还在"},
    {"unknown option '([^']*)' %(did you mean '([^']*)'%?%)", "提示：没有选项“%s”；你是想写“%s”吗？"},
    {"unknown option '([^']*)'", "提示：没有选项“%s”；分号后面列出了所有可用的选项"},
    {"([%w_]+) is a method: call it with a colon: (.-)$", "提示：%s 是方法：用冒号调用它，写作 %s"},
    {"view: cannot view a tensor", "提示：view 从不复制数据：这个张量的元素在内存中不是依次排列的（例如转置过），"
        .. "先用 :contiguous() 复制成 C 顺序再 view，或者改用 :reshape()"},
    {"inner sizes (%d+) and (%d+) differ", "提示：矩阵乘法 A·B 要求 A 的最后一维等于 B 的倒数第二维（这里是 %s 和 %s）；"
        .. "也许要先转置其中一个：:transpose(1, 2)"},
    {"embed_dim (%d+) is not divisible by num_heads (%d+)", "提示：embed_dim %s 必须能被 num_heads %s 整除："
        .. "每个头分到 embed_dim/num_heads 维"},
    {"bad argument #(%d+) to '([%w_]+)' %((.-) expected, got (.-)%)", "提示：第 %s 个参数（%s 的）应该是 %s，实际是 %s"},
    -- the core's file and size errors
    {"which float32 cannot hold exactly", "提示：mha 的张量是 float32，只能精确表示 -2^24 到 2^24 之间的整数；"
        .. "能接受舍入的话，先在 NumPy 里转换：a.astype(np.float32)"},
    {"beyond float32's range", "提示：这个值超出了 float32 的范围（会变成 inf）；先在 NumPy 里缩放或截断它"},
    {"too small for float32", "提示：这个值太小，float32 表示不了（会变成 0）；能接受的话，先在 NumPy 里转换：a.astype(np.float32)"},
    {"No space left on device", "提示：磁盘满了：新文件没有写成，旧文件原样保留；腾出空间后再保存一次"},
    {"the largest size a dim may have", "提示：一个维度最长 2^63-1；拼接后的长度超过了它"},
}

-- The Chinese hint line for an English message (its first line), or nil.
function habits.zh_line(msg)
    local first = tostring(msg):match("^[^\n]*")
    for _, entry in ipairs(ZH_LINES) do
        local found = table.pack(first:match(entry[1]))
        if found[1] then return string.format(entry[2], table.unpack(found, 1, found.n)) end
    end
    return nil
end

return habits
