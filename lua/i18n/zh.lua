-- lua/i18n/zh.lua - module "mha.i18n.zh": every word the runner, the REPL, printing, plots,
-- notebooks and training print, in Chinese, by room, with the keys of lua/i18n/en.lua.

local zh = {}

-- The lesson runner (lua/lesson/lesson.lua, files.lua, pager.lua): steps, exercises, commands.
zh.lesson = {
    step = "第", exercise = "练习", of_lesson = "课", colon = "：", colon_space = "：",
    header = "第 %d/%d 步：%s",
    quote = "“%s”",
    heat_dims = {"头", "查询", "键"},
    ask = "用 answer(值) 或 :answer 表达式 作答；:solution 显示本课的答案，回车继续。",
    batch_answer = "（批处理模式：用本课自带的答案作答）",
    correct = "正确", not_yet = "还不对",
    skipped = "（跳过了练习；:solution 显示答案）",
    the_end = "本课结束。:lessons 列出其他课程；:restart 从头再来。",
    the_end_next = "本课结束。:open %d 进入下一课“%s”；:lessons 列出所有课程；:restart 从头再来。",
    next_hint = "回车（或 :next）运行下一步；:back、:goto K、:run、:restart。",
    no_lesson = "没有打开的课程：:lessons 列出课程，:open 名称 打开一课",
    no_exercise = "这一步没有要回答的练习",
    answer_empty = "answer(...) 要放进你的答案：answer(0.25)、answer(w) 或 answer({1, 2})；也可以用 :answer "
        .. "表达式；:solution 给出一个解答",
    replaying = function(k, seed)
        return string.format("（用本课的随机种子 %d 悄悄重跑了第 %s 步）", seed, k == 1 and "1" or "1-" .. k)
    end,
    resumed = function(n, k)
        return string.format("（第 %d 课仍停在第 %d 步：:reset 已从头重跑了它的各步）", n, k)
    end,
    solution = "答案",
    error_in_step = "第 %d 步出错",
    interrupted_step = "第 %d 步被 Ctrl-C 停下：按 Enter 重新运行它。",
    recover = function(k) return string.format("课程的变量现在可能不适合第 %d 步：:goto %d 重跑它之前的各步"
        .. "来重建它们，再运行第 %d 步；:restart 从头开始本课。", k, k, k) end,
    lessons = "课程（:open 名称或编号）：",
    lang_set = "课程现在使用中文。",
    lang_usage = ":lang en|zh（英文或中文）",
    goto_range = ":goto：步骤编号应在 1 到 %d 之间",
    goto_number = ":goto：“%s”不是步骤编号；请写 :goto K，K 为 1 到 %d",
    more = "-- 还有：空格下一页，回车下一行，q 退出 --",
    answers_from = "（批处理模式：答案取自 %s）",
    answers_none = "（%s 里没有剩下的答案：用本课自带的答案作答）",
    plot = "图", plot_kinds = {heatmap = "热图", heads = "各头", line = "折线图", bar = "柱状图"},
    series = "%d 条曲线", series_n = "曲线 %d", bars = "%d 根柱", list_sep = "，",
    no_lessons = "没有找到课程（找过 %s；请设置 MHA_LESSONS）",
    no_such_lesson = "没有课程“%s”；请给出 %d 到 %d 之间的编号或名称：\n%s",
    lesson_prefix = "不止一课的名字以“%s”开头：\n%s",
    cannot_load = "（无法加载：%s）",
    open_usage = ":open 名称|编号|路径（:lessons 列出课程）",
}

-- The answer checker's verdicts (lua/lesson/check.lua), as string.format formats.
zh.check = {
    shape = "你的答案形状是 %s；应为 %s",
    value = "你的答案在 %s 处不同：你的是 %.6g（容差 %.0e）",
    scalar = "你给的是 %.6g；这不是要的值（容差 %.0e）",
    count = "你的答案有 %d 个数；应有 %d 个",
    kind = "你的答案是 %s；需要的是 %s",
    string = "你的答案是 %q",
    malformed = "无法读取你的答案：%s",
    why_contains = "其中有一个 %s 值", why_ragged = "它的各行长度不同",
    why_tensor = "一个读不出数值的张量", why_type = "一个 %s 值",
    error = "计算你的答案时出错：%s",
    nan = "你的答案在 %s 处是 NaN（非数）",
    softmax_axis = "你的结果沿第 %LAST 维（键）求和不为 1，而沿第 %D 维求和为 1：softmax 用错了轴。"
        .. "每个查询对所有键的权重之和必须为 1：softmax(x, -1)。",
}

-- The helpers lesson code calls (lua/lesson/tools.lua): LESSON.versus and LESSON.describe.
zh.tools = {
    says = "教程：", truth = "实际：", unprinted = "（未打印）",
    describe = "    形状 (%s)  步长 (%s)  偏移 %d  连续 %s", yes = "是", no = "否",
}

-- The few words a printed tensor carries (lua/show/display.lua), in the printoptions' language.
zh.print = {
    columns = "第 %s-%s 列", column = "第 %s 列", more_columns = "列 ...", scale = "刻度：",
    rows_of = "第 1-%d 行（共 %d 行）", columns_of = "第 1-%d 列（共 %d 列）", shown = "（只显示%s）", comma = "，",
    window = "位置 %d-%d（共 %d 个）", heads_title = "注意力：行 = 查询，列 = 键",
    head_title = "头 %d：行 = 查询，列 = 键",
}

-- The words a plot adds itself (lua/show/figure.lua, plot.lua): panel titles, axis labels, notes.
zh.plot = {
    head = "头 %d", query = "查询", key = "键", dims = {"头", "查询", "键"},
    not_found = "plot：找不到 gnuplot；请安装 Debian 软件包 gnuplot-qt（有窗口）或 gnuplot-nox（只画文件和文字）",
    not_drawn = "plot.line：没有 gnuplot，未画出：",
    blank_note = "红色标记：没有颜色的格子（NaN = 不是数，inf = 无穷大）",
}

-- What mha.train prints and its curves' words (lua/train/train.lua).
zh.train = {
    loss = "损失", accuracy = "准确率", step = "步", training = "训练", layer = "第 %d 层",
    progress = "第 %d/%d 步  %s 步/秒  损失 %.4f  准确率 %.1f%%  还需 %s",
    progress_short = "第 %d/%d 步  损失 %.4f  准确率 %.1f%%  还需 %s",
    log = "第 %5d 步  损失 %.4f  准确率 %5.1f%%",
    interrupted = "train：第 %d 步（共 %d 步）后中断；模型保留已学到的",
    done = "完成：%d 步，用时 %s（CPU），损失 %.4f，准确率 %.1f%%",
    generate_stopped = function(n)
        return string.format("（Ctrl-C 在新写了 %d 个词元后停下；返回的是到此为止的文本）", n)
    end,
    val = "  验证损失 %.4f", val_loss = "验证损失",   -- after the progress line, with val
    model = function(heads, d_model, layers)
        return string.format("训练：%d 个头，d_model %d，%d 层", heads, d_model, layers)
    end,
}

-- How a KV cache prints (lua/nn/cache.lua): print(model:new_cache()).
zh.cache = {
    line = "KV 缓存：%d 层，%d 个词元%s%s，%d 字节",
    window = "，窗口 %d，汇聚点 %d",
    heads = function(H_kv, D) return string.format("，%d 个 K/V 头，每个 %d 维", H_kv, D) end,
}

-- The head detectors' report (lua/train/heads.lua): the kinds, a layer and a head.
zh.heads = {
    previous = "前一词元", duplicate = "重复词元", induction = "归纳", layer = "第 %d 层",
    layer_short = "第 %d 层：", head = "头%d",
}

-- The REPL's hints for a student's Python habits and did-you-mean (lua/repl/habits.lua).
zh.hint = {
    hint = "提示：",
    method = "%s 是方法本身；用冒号调用它：%s:%s()",
    help = "help 是一个函数：help() 列出所有主题，help(mha.softmax) 解释其中一个；? 列出命令",
    quit = ":quit 或 Ctrl-D 退出 mha-repl",
    clear = "%s 在这里是 nil：Ctrl-L 清屏",
    clear_notebook = "%s 在这里是 nil：笔记本用“编辑”菜单里的“清除输出”清掉单元格的输出",
    exit = ":quit 或 Ctrl-D 退出 mha-repl（os.exit() 也可以）",
    quit_notebook = "笔记本用“内核”菜单的“关闭内核”（Shut Down）结束，或关闭它的标签页；“重启内核”重新开始",
    data = "这里没有 .data：用 %s:detach()（同样的数值，不在计算图里）或直接用 %s",
    len = "Lua 没有 len()：#%s 是第 1 维的大小，即 %s:size(1)；%s:numel() 数所有元素",
    to_device = "mha-repl 只在 CPU 上计算：写 m:to(\"cpu\")，或不调用 to",
    train_mode = "m:train(true) 进入训练模式，m:train(false) 或 m:eval() 进入评估模式",
    ce_target = "这里的类别从 1 开始数；要跳过值为 %s 的目标，就给出 {ignore_index = %s}",
    ce_option = "cross_entropy 的选项：ignore_index 是要跳过的目标值（整数），reduction 是 \"mean\"、\"sum\" 或 " ..
                "\"none\"，label_smoothing 是 0 到 1 之间的数",
    matmul_at = "Lua 没有 @ 运算符：矩阵乘法写作 %s:matmul(%s)，或 mha.matmul(%s, %s)",
    matmul_star = "* 是逐元素相乘（会广播）；矩阵乘法请写 %s:matmul(%s)",
    matmul_star_t = "* 是逐元素相乘（会广播）；适合 %s 和 %s 的矩阵乘法是 %s：(%d,%d) @ (%d,%d) 得到 (%d,%d)",
    matmul_none = "* 是逐元素相乘，形状必须能广播；%s 和 %s 也做不了矩阵乘法" ..
                  "（A:matmul(B) 要求 A 的最后一维等于 B 的倒数第二维）",
    did_you_mean = "你是想写 %s 吗？",
    colon = "写作 %s",
    dangling = "单独的值（%s）不是 Lua 语句：把 %s 单独输入一行，或用 print(%s)",
    dangling_any = "单独的值不是 Lua 语句：把它单独输入一行，或用 print(...)",
    command = "没有命令 :%s（你是想输入 :%s 吗？）",
    missing_arg = "%s 缺少第 %s 个参数：?%s 列出它要的参数",
    nil_name = "%s 是 nil：你是想写 %s 吗？",
    nil_global = "%s 是 nil：本次会话里还没有给它赋过值（:reset 之后，要重新运行生成它的那几行）",
    import = "Lua 没有导入语句：mha 已经加载好了，张量和神经网络的函数都在 mha.* 里（mha.softmax、mha.nn.Linear）",
    range = "Lua 的循环写作 %s（两端都包括在内）",
    range_from_one = "Lua 从 1 开始数：%s（两端都包括在内）让 %s 依次取 %s，正是 x[%s] 要的下标；" ..
                     "确实需要 range(%s) 的 %s 时，写 %s - 1",
    def = "Lua 的函数写作 %s",
    list = "Lua 的列表是花括号里的表：%s（mha.tensor 也接受它）",
    long_string = "[[...]] 在 Lua 里是字符串，不是列表：%s 现在存的是文字；按行的表写作 %s",
    index_zero = "Lua 和 mha 的下标从 1 开始：%s[1] 是第一个，%s[-1] 是最后一个",
    compound = "Lua 没有 %s=：写作 %s = %s %s %s",
    not_equal = "Lua 的不等号是 ~=：%s",
    comment = "Lua 的注释以 -- 开头：%s",
    colon_block = "Lua 的语句块不用冒号：%s",
    print_call = "在 Lua 里 print 是函数：print(%s)",
    keyword = "Lua 没有关键字参数：写作 %s（函数有选项时，选项写在一个表里）",
    dim_zero = "这里的维度从 1 开始数：dim 1 是第一维，-1 是最后一维",
    constant = "Lua 把 %s 写作 %s：%s 在这里是未定义的名字，所以 %s 是 nil",
    fstring = "Lua 没有 f 字符串：用 string.format 拼出文字，%s",
    shape_index = "%s.shape 在这里是方法，而且维度从 1 开始数：%s.shape[%s] 要写成 %s" ..
                  "（%s:shape() 是整个形状）",
    index_zero_nil = "Lua 和 mha 的下标从 1 开始：%s[0] 是 nil；%s[1] 才是第一个",
}

-- The hint line printed under an English message of the core or the helpers (lua/repl/habits.lua):
-- a format of the captures of the message's pattern.
zh.core = {
    interrupted = "提示：Ctrl-C 中断了这条输入；中断之前它做完的事（例如赋值）都还在",
    interrupted_notebook = "提示：“中断”（■）停下了这个单元格；中断之前它做完的事（例如赋值）都还在",
    option_did_you_mean = "提示：没有选项“%s”；你是想写“%s”吗？",
    option_unknown = "提示：没有选项“%s”；分号后面列出了所有可用的选项",
    method_colon = "提示：%s 是方法：用冒号调用它，写作 %s",
    view = "提示：view 从不复制数据：这个张量的元素在内存中不是依次排列的（例如转置过），"
        .. "先用 :contiguous() 复制成 C 顺序再 view，或者改用 :reshape()",
    inner_sizes = "提示：矩阵乘法 A·B 要求 A 的最后一维等于 B 的倒数第二维（这里是 %s 和 %s）；"
        .. "也许要先转置其中一个：:transpose(1, 2)",
    divisible = "提示：embed_dim %s 必须能被 num_heads %s 整除：每个头分到 embed_dim/num_heads 维",
    linear_in = "提示：线性层 x·Wᵀ 要求 x 的最后一维等于 W 的 in_features（W 的最后一维）：这里是 %s 和 %s",
    bad_argument = "提示：第 %s 个参数（%s 的）应该是 %s，实际是 %s",
    float32_exact = "提示：mha 的张量是 float32，只能精确表示 -2^24 到 2^24 之间的整数；"
        .. "能接受舍入的话，先在 NumPy 里转换：a.astype(np.float32)",
    float32_range = "提示：这个值超出了 float32 的范围（会变成 inf）；先在 NumPy 里缩放或截断它",
    float32_small = "提示：这个值太小，float32 表示不了（会变成 0）；能接受的话，先在 NumPy 里转换：a.astype(np.float32)",
    disk_full = "提示：磁盘满了：新文件没有写成，旧文件原样保留；腾出空间后再保存一次",
    dim_largest = "提示：一个维度最长 2^63-1；拼接后的长度超过了它",
    tensor_values = "提示：mha.tensor 只接受一个装着数值的表，写作 %s",
    generate_positions = "提示：%s 个提示词元加 max_new_tokens %s 需要 %s 个位置：提示词元和前 %s 个新词元" ..
        "都要再读入模型，最后一个新词元只生成、不读入；超过了 max_len %s",
}

-- What the REPL's commands say (lua/repl/repl.lua).
zh.repl = {
    time = "计时：", on = "开", off = "关",
    took = "用时 %s", hold = "，张量占用 %s",
    fresh = "新的状态（历史、:save 的记录和 :time 设置都保留）",
    save_name = ":save 需要文件名：:save FILE 写出 FILE.lua 和 FILE.md",
    saved = "已把 %d 条输入保存到 %s 和 %s",
    unknown = "没有命令 :%s（? 列出所有命令）", could_be = ":%s 可以是 :%s",
    usage = "用法：%s（%s）",
    keys = {
        {"帮助：", "?名字 或 help(f) 解释一个函数（?mha.softmax），?:名字 或 :help 名字 解释一个命令（?:save）；"
                  .. "help() 列出所有主题"},
        {"按键：", "Tab 补全名字、字段、方法（x:tra<Tab>）、命令和字符串里的文件名；上/下键和 Ctrl-R 查找历史；"
                  .. "Ctrl-C 停止正在运行的命令或清空当前行；空行上按 Ctrl-D 退出"},
        {"值：", "表达式会打印它的值；末尾加 ; 则不打印；_ 保存上一个值"},
    },
    banner = "%s %s（%s）- 输入 ? 看命令，help() 看函数，Ctrl-D 退出",
    exported = "已把%s写到 %s", exported_lesson = "第 %s 课", exported_session = "本次会话",
    export_lesson_too = "（:export lesson FILE 只写第 %d 课，从它的随机种子重新运行）",
    value_after = "提示：语句后面的值要用 ; 隔开才会打印：%s",
}

-- What an export says (lua/notebook/notebook.lua, record.lua): headings, the first cell's comment,
-- failures.
zh.notebook = {
    step_heading = "第 %d/%d 步：%s", exercise_heading = "练习：",
    setup = "课程的语言、随机种子、打印选项和辅助函数，与 --batch 的设置相同",
    no_name = "需要一个以 .ipynb 或 .html 结尾的文件名",
    bad_name = "“%s”：文件名必须以 .ipynb 或 .html 结尾",
    not_opened = "课程没有打开", failed = "导出失败",
    no_lesson = "没有打开的课程（:open N 打开一课；:export FILE 写出本次会话）",
    session = "mha-repl 会话", exercise = "下面的答案所检查的练习",
    past = "课程已过了那道练习：答案不再对照它检查",
    your_answer = "把课程自带的解答换成你的答案",
}

-- What a classroom says (classroom/, lua/kernel/kernel.lua): the teacher's report, a cell's limit.
zh.classroom = {
    cpu_limit = "已停止：这个单元用完了 %g 秒的 CPU 时间（MHA_CELL_SECONDS），是不是死循环？内核和变量都还在",
    report_title = "%d 名学生对 %d 道练习的答案（%s）",
    student = "学生", right = "对", wrong = "错", not_yet = "未答",
    total = "合计", exercise = "第 %d 课，练习 %d：%s",
    wrote_csv = "已写入 %s", no_students = "没有找到学生（名单 %s）",
}

-- fill_mask's table (lua/train/mlm.lua): a block per mask marker.
zh.mlm = {
    marker = "第 %d 个遮盖（共 %d 个，第 %d 个字符）：候选字，概率",
}

return zh
