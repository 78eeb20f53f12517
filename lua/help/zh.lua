-- lua/help/zh.lua - module "mha.help.zh": help in Chinese - the words of help() and ?, the commands' lines,
-- and the explanations of the functions a class meets first. An entry without one here shows its English.

local zh = {}

-- The words help.lua and the REPL's ? print around the entries.
zh.words = {
    formula = "公式：", example = "例子：", see_also = "参见：",
    intro = "help(f) 或 ?名字 解释一个函数：签名、作用、公式和例子（如 ?mha.softmax、help(mha.matmul)、"
        .. "?x:view）。单独一个 ? 列出 REPL 的命令。",
    no_help = "没有“%s”的帮助。help() 列出所有主题。",
    no_help_near = "没有“%s”的帮助。你是想查：",
    no_help_close = "没有“%s”的帮助。你是想查 %s 吗？",
    no_help_nil = "help(nil)：你问的值是 nil（名字拼错了？）。help() 列出所有主题。",
    name_of = "“%s”是以下名字的一部分：",
    english = "（这一条暂无中文说明，以下为英文。）",
    commands_heading = "命令（输入不引起歧义的前缀即可，:q 即 :quit）：",
    help_key = "帮助：", keys_key = "按键：", values_key = "值：",
    help_line = "?名字 或 help(f) 解释一个函数（?mha.softmax），?:名字 或 :help 名字 解释一个命令（?:save）；"
        .. "help() 列出所有主题",
    keys_line = "Tab 补全名字、字段、方法（x:tra<Tab>）、命令和字符串里的文件名；上/下键和 Ctrl-R 查找历史；"
        .. "Ctrl-C 停止正在运行的命令或清空当前行；空行上按 Ctrl-D 退出",
    values_line = "表达式会打印它的值；末尾加 ; 则不打印；_ 保存上一个值",
}

-- The groups of help().
zh.groups = {
    topics = "总览", constructors = "构造", random = "随机数", files = "文件与内存", comparison = "比较与掩码",
    reductions = "归约", joining = "拼接", views = "视图", attention = "注意力", module = "模块",
    display = "显示", plot = "绘图", lesson = "课程", ["REPL commands"] = "REPL 命令",
}

-- Each command's line in ? (by the command's name; the lesson runner's commands too).
zh.commands = {
    help = "列出命令，或解释 NAME：一个命令（:help goto）或一个函数（同 ?NAME）",
    quit = "退出 mha-repl（Ctrl-D 也可以）",
    time = "开关：每条命令之后显示耗时和张量占用的内存",
    reset = "重新开始：新的 Lua 状态，所有变量清空",
    save = "把会话写成 FILE.lua（脚本）和 FILE.md（输入和输出）",
    lessons = "列出所有课程及一句话简介",
    open = "打开一课，从第一步开始",
    next = "运行课程的下一步（空行上按回车也可以）",
    back = "回到上一步（重放它之前的步骤）",
    ["goto"] = "跳到第 K 步（从种子重放第 1..K-1 步）",
    run = "运行本课剩下的所有步骤",
    restart = "从第 1 步和本课的种子重新开始",
    answer = "用 EXPR 的值回答练习",
    solution = "显示练习的参考答案",
    lang = "切换课程语言",
    text = "重新显示当前步骤的文字（不重新运行）",
}

-- The explanations (doc) of the entries a class meets first; signature, formula and example stay as
-- they are (they are code).
zh.docs = {
    ["mha"] = "mha-repl 的模块：在 REPL 里是全局变量，在别处用 require \"mha\"。张量是 float32（或 bool）数组，"
        .. "最多 8 维，由 mha.tensor、zeros、randn 等创建。维度和下标和 Lua 一样从 1 开始，负的维度从末尾数"
        .. "（-1 是最后一维）。以张量为第一个参数的函数也是方法：mha.softmax(x, 2) 就是 x:softmax(2)。"
        .. "每个错误都会说出函数、参数和形状。help() 列出全部；?名字 解释其中一个。",
    ["mha.Tensor"] = "张量是共享存储上的形状、步长和偏移。视图（view、transpose、permute、narrow、select、"
        .. "unsqueeze、squeeze、expand、split、chunk）共享存储而不复制，所以转置不花时间，也所以对不连续的"
        .. "张量 view() 会失败（先调用 contiguous() 或用 reshape()）。运算符按 NumPy 的广播规则逐元素计算："
        .. "+ - * / ^；矩阵乘法是 x:matmul(y)。",
    ["mha.tensor"] = "由嵌套的 Lua 表（数字，或布尔值得到 bool 张量）、单个数字（0 维标量）或另一个张量（复制）"
        .. "创建张量。每行长度必须相同。",
    ["mha.randn"] = "形状给定、元素服从标准正态分布 N(0, 1) 的 float32 张量，来自唯一的带种子的随机数发生器"
        .. "（mha.seed(n) 重置它），所以每次运行结果相同。",
    ["mha.seed"] = "重置随机数发生器：之后的 rand、randn 和随机初始化都从这里重新开始，课程因此每次打印同样的数字。",
    ["mha.matmul"] = "矩阵乘法，同 torch.matmul：1 维向量、2 维矩阵，以及带批次维的广播。内层的两个大小必须"
        .. "相等，否则错误会说出两个形状。注意 * 是逐元素相乘，不是矩阵乘法。",
    ["mha.softmax"] = "把分数变成沿 dim 为正且和为 1 的权重（dim 必须给出，同 PyTorch；注意力分数矩阵的行"
        .. "是 dim -1）。先减去最大值再计算，所以大的分数不会溢出。全为 -inf 的一行（所有键都被掩码）得到 NaN，"
        .. "同 PyTorch 和 NumPy。",
    ["mha.transpose"] = "交换两个维度，得到共享存储的视图（不复制）；结果通常不连续，所以之后的 view 需要先 "
        .. "contiguous()。",
    ["mha.view"] = "同样的元素、新的形状，共享存储；只对元素在内存中依次排列的张量可行。不连续时先调用 "
        .. "contiguous()，或者用会在必要时复制的 reshape()。一个维度可以写 -1，由其余维度推出。",
    ["mha.contiguous"] = "元素在内存中依次排列的张量：已经连续时返回它本身，否则复制一份。",
    ["mha.masked_fill"] = "mask 为 true 的位置填入 value（其余不变）。注意力里用 -math.huge 填入不允许看的"
        .. "位置，softmax 之后这些位置的权重就是 0。",
    ["mha.causal_mask"] = "因果掩码：(L,S) 的 bool 张量，查询 i 之后的键为 true（不允许看）。",
    ["mha.layer_norm"] = "对最后几维做层归一化：减去均值、除以标准差（加 eps），再乘 weight 加 bias，同 PyTorch。",
    ["mha.scaled_dot_product_attention"] = "缩放点积注意力 softmax(Q·Kᵀ/√d_k + mask)·V，返回输出和权重。"
        .. "bool 掩码 true 表示不允许看（同 nn.MultiheadAttention），浮点掩码加到分数上。",
    ["mha.MultiheadAttention"] = "多头注意力模块，参数和数值都与 PyTorch 的 nn.MultiheadAttention 一致："
        .. "输入投影 W^Q、W^K、W^V，每个头做缩放点积注意力，拼接后经 W^O 输出。",
    ["MultiheadAttention:forward"] = "对 query、key、value 做一次多头注意力，返回输出和（默认按头平均的）注意力权重；"
        .. "average_attn_weights=false 时返回每个头的权重。",
    ["mha.show"] = "打印张量，可以给行和列加标签、加标题：show(t, {rows=, cols=, title=})。中文标签按显示宽度对齐。",
    ["mha.heat"] = "在终端里用明暗表示矩阵的大小：没有颜色时用 8 级高度的竖条（在浅色和深色终端上都看得清），"
        .. "有颜色时用 12 级色阶；values=true 在每格写出数值。",
    ["plot.heatmap"] = "用 gnuplot 画一个矩阵（通常是注意力权重 (L,S)）的热力图，带词元标签；有标签时两轴"
        .. "标为“查询”和“键”。font= 和 size= 调整字号和窗口大小（也可用环境变量 MHA_PLOT_FONT、MHA_PLOT_SIZE）。",
    ["plot.heads"] = "把 (H,L,S) 注意力权重的每个头画在一张图里，所有头共用一个色阶，面板标题为“头 1”……",
}

return zh
