-- lua/help/zh.lua - module "mha.help.zh": help in Chinese - the words of help() and ?, the
-- commands' lines, and the explanation of every entry (tests/lua/test_help_zh.lua fails on one
-- missing or in English).

local zh = {}

-- The words help.lua and the REPL's ? print around the entries.
zh.words = {
    formula = "公式：", example = "例子：", see_also = "参见：",
    signature_or = "或",   -- between alternatives: mha.softmax(x, dim) 或 x:softmax(dim)
    intro = "help(f) 或 ?名字 解释一个函数：签名、作用、公式和例子（如 ?mha.softmax、help(mha.matmul)、"
        .. "?x:view）。单独一个 ? 列出 REPL 的命令。",
    no_help = "没有“%s”的帮助。help() 列出所有主题。",
    no_help_near = "没有“%s”的帮助。你是想查：",
    no_help_close = "没有“%s”的帮助。你是想查 %s 吗？",
    described_in = "%s 的说明在 ?%s 这一条里：",
    module_holds = "%s 里有：",
    no_help_nil = "help(nil)：你问的值是 nil（名字拼错了？）。help() 列出所有主题。",
    name_of = "“%s”是以下几个条目的名字：",
    no_command = "没有命令 :%s。? 列出所有命令。", could_be = ":%s 可以是 :%s",
    lua_library = "%s 是 Lua 自带的 %s 库（这里没有条目）；Lua 手册里有说明：",
    lua_own = "%s 是 Lua 自带的（这里没有条目）；Lua 手册里有说明：",
    defined_at = "%s 是在 %s:%d 定义的函数（没有帮助条目：它不是 mha 的）。",
    this_function = "这个函数", no_help_type = "没有这个 %s 值的帮助。help() 列出所有主题。",
    no_docs = "（这个构建里没有帮助文档模块）",
    english = "（这一条暂无中文说明，以下为英文。）",
    commands_heading = "命令（输入不引起歧义的前缀即可，:q 即 :quit）：",
}

-- The groups of help().
zh.groups = {
    topics = "总览", constructors = "构造", random = "随机数", files = "文件与内存", comparison = "比较与掩码",
    reductions = "归约", joining = "拼接", views = "视图", attention = "注意力", module = "多头注意力模块",
    display = "显示", plot = "绘图", lesson = "课程", ["REPL commands"] = "REPL 命令",
    elementwise = "逐元素运算", gradients = "梯度", nn = "神经网络模块", optim = "优化器",
    ["tensor methods"] = "张量的方法", training = "训练",
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
    ["goto"] = "跳到第 K 步（先用本课的随机种子悄悄重跑第 1..K-1 步）",
    run = "运行本课剩下的所有步骤",
    restart = "用本课的随机种子从第 1 步重新开始",
    answer = "用 EXPR 的值回答练习",
    solution = "显示练习的参考答案",
    lang = "切换课程语言（当前一步用新语言重新显示；你自己的变量保持不变）",
    text = "重新显示当前步骤的文字（不重新运行）",
    export = "把到此为止的会话写成 FILE.ipynb（Jupyter 笔记本）或 FILE.html（一个网页）；:export lesson FILE：只写打开的课程，从它的随机种子重新运行",
    close = "关闭所有绘图窗口（窗口一直开着，直到你关闭它、用 :close 或离开 REPL）",
}

-- The signatures that hold words, not only code.
zh.signatures = {
    [":next"] = ":next   （或在空行上按回车）",
}

-- The explanations (doc) of every entry, as a teacher would say them in class; the signature, the
-- formula and the example stay as they are (they are code). Each text is written over several
-- lines, joined as paragraphs() says: a blank line starts a new paragraph.
local D = {}

-- the Chinese of the help that lives beside its docs module (lua/help/zh_*.lua)
for _, more in ipairs({(require "mha.help.zh_interp"), (require "mha.help.zh_nn")}) do
    for name, text in pairs(more.docs) do D[name] = text end
    for group, title in pairs(more.groups or {}) do zh.groups[group] = title end
end

-- The overviews
D["mha"] = [[
mha-repl 的模块：在 REPL 里是全局变量 mha，在别处用 require "mha" 载入。张量是 float32（或 bool）数组，
最多 8 维，由 mha.tensor、zeros、randn 等函数创建。维度和下标和 Lua 一样从 1 开始数，负的维度从末尾数
（-1 是最后一维）。第一个参数是张量的函数也可以当方法用：mha.softmax(x, 2) 就是 x:softmax(2)。
每个错误都会说出函数、参数和形状。help() 列出全部主题；?名字 解释其中一个。]]
D["mha.Tensor"] = [[
张量 = 一块引用计数的数据存储 + 形状（shape）、步长（strides）和偏移（offset）。视图——view、transpose、
permute、narrow、select、unsqueeze、squeeze、expand、split、chunk——共享存储而不复制：所以转置不花时间，
也所以对不连续的张量调用 view() 会失败（先 contiguous()，或改用 reshape()）。运算符按 NumPy 的广播规则
逐元素计算：+ - * / ^、一元的 -，以及 ==（形状和数值都相同时为 true）。t[i] 是沿第 1 维的第 i 个切片
（1 维张量则是一个数）；#t 是第 1 维的大小。x:view 等方法都由 help() 列出；?x:view 解释其中一个。]]
D["mha.nn"] = [[
和 PyTorch 同名、同形状、同初始化的积木：mha.nn.Linear、mha.nn.Embedding、mha.nn.LayerNorm，容器
mha.nn.ModuleList 和 mha.nn.Sequential，以及用来写自己模块的 mha.nn.Module。模块像函数一样调用
（m(x) 就是 m:forward(x)）；它的参数是打开了 requires_grad 的叶子张量，所以 loss:backward() 会填好
p:grad()。m:state_dict() 用 PyTorch 的点号键名（layers.0.attn.out_proj.bias），所以用
mha.save("m.npz", m:state_dict()) 存下的检查点能载入结构相同的 PyTorch 模块，反过来也行。
mha.MultiheadAttention 也是一个模块。]]
D["mha.optim"] = [[
优化器：根据 backward 留在 p:grad() 里的梯度更新参数，更新规则和选项与 torch.optim 完全一致。每个训练
脚本的循环都是：opt:zero_grad()，算出损失，loss:backward()，opt:step()。没有梯度的参数会被跳过。
每个参数的状态（动量缓冲、Adam 的一阶和二阶矩）放在 opt.state[p] 里。]]

-- Making tensors
D["mha.tensor"] = [[
由嵌套的 Lua 表（数字；或布尔值，得到 bool 张量）、单个数字（0 维标量）或另一个张量（复制一份）创建张量。
每一行的长度必须相同。dtype 写 "float32" 或 "bool" 时会转换：非零为 true，true 为 1。]]
D["mha.zeros"] = [[
给定形状、全部填 0 的 float32 张量。不给大小就得到一个标量。]]
D["mha.ones"] = [[
给定形状、全部填 1 的 float32 张量。]]
D["mha.full"] = [[
给定形状、每个元素都等于 value（最后一个参数）的张量；value 可以是 -math.huge，加性掩码正需要它。]]
D["mha.eye"] = [[
(n,m) 单位矩阵：对角线上是 1，其余是 0；m 默认等于 n。]]
D["mha.arange"] = [[
数值 start、start+step、……直到 stop 之前，组成 1 维 float32 张量，同 torch.arange：start 默认 0，
step 默认 1。注意这些是数值，不是下标：arange(3) 是 0、1、2。]]
D["mha.is_tensor"] = [[
v 是不是一个 mha.Tensor。]]

-- Random numbers
D["mha.seed"] = [[
用非负整数 n 重新启动随机数发生器（启动时默认种子是 42）：rand、randn、原地随机填充和
MultiheadAttention 的初始化都用它，所以每次运行得到同样的数。发生器是 xoshiro256**，
用 splitmix64 播种。]]
D["mha.manual_seed"] = [[
torch.manual_seed 的名字，等同 mha.seed(n)：同一个发生器，从 n 重新开始。]]
D["mha.get_seed"] = [[
随机数发生器上一次启动时用的种子。]]
D["mha.rand"] = [[
[0, 1) 上均匀分布的随机数，来自带种子的发生器（mha.seed），所以一课每次都给出同样的数。]]
D["mha.randn"] = [[
标准正态分布（均值 0、方差 1）的随机数，来自带种子的发生器（mha.seed）。]]
D["mha.uniform_"] = [[
原地把 t 填成 [lo, hi) 上均匀分布的随机数（默认 0 和 1），并返回 t，所以可以链式调用。它通过视图写进
共享的存储；和 PyTorch 一样，对扩展出来的视图（步长为 0，元素共用同一块内存）拒绝写入。normal_ 和
xavier_* 也是如此。]]
D["mha.normal_"] = [[
原地把 t 填成正态分布的随机数（默认 mean 为 0、std 为 1），并返回 t。]]
D["mha.xavier_uniform_"] = [[
PyTorch 的 nn.init.xavier_uniform_：让激活值的方差在前向和反向时大致保持不变。对 2 维权重 (out, in)，
fan_in = in，fan_out = out（如果还有更多维，再乘上它们的大小）。MultiheadAttention 就这样初始化它的
输入投影。]]
D["mha.xavier_normal_"] = [[
PyTorch 的 nn.init.xavier_normal_；fan 的算法同 xavier_uniform_。MultiheadAttention 这样初始化
bias_k 和 bias_v。]]

-- Files, memory, time
D["mha.save"] = [[
把 t 写到 path：一个 numpy.load 能读的 NumPy .npy 文件（格式 1.0，float32 或 bool，C 顺序）；嵌套表或数字会先转换。
path 以 .npz 结尾时，像 np.savez 那样写出一张 name -> 张量的表（compressed = true 时同
np.savez_compressed）：这就是 np.load 和 PyTorch 都能读的检查点。整数键 1、2、……存成 arr_0、arr_1、
……，和 np.savez 给列表起的名字一样。两种文件都先写进临时文件再改名，所以保存失败（比如磁盘满了）时旧文件还在。]]
D["mha.load"] = [[
读取 NumPy .npy 文件（格式 1.0、2.0 或 3.0；float32、float64、整数和 bool，转成 float32 或 bool；C 顺序）。
float64 舍入到 float32；超出 float32 范围的值，或 float32 不能精确表示的整数（超过 2^24），会报错并指出是哪个值。
以 zip 归档开头的文件按 .npz 读取（np.savez 或 np.savez_compressed 写的），得到一张“名字 -> 张量”的表，
比如给 m:load_state_dict 用的 state_dict。文件被截断或格式不对时报错，说明哪里不对，并指出是归档里的
哪个成员。]]
D["mha.memory"] = [[
张量库此刻占用的字节数（存储和计算内核的临时空间），以及自上次 mha.reset_peak() 以来的最高值。一个张量的
存储在它最后一个视图被垃圾回收或关闭时释放。REPL 里的 :time 在每条命令之后显示第一个数。]]
D["mha.reset_peak"] = [[
把 mha.memory() 报告的峰值设为此刻占用的字节数，用来测量某一步的峰值。]]
D["mha.clock"] = [[
从某个固定时刻起的挂钟秒数，用来给一段代码计时：两次读数相减即可。os.clock() 统计的是所有线程的
处理器时间，计算内核用多个核时它会比挂钟跑得快。]]
D["mha.threads"] = [[
一次调用最多可以把工作分给多少个线程（矩阵乘法按行块或列块分，注意力按头和查询块分）。给出 n（1 到 64）
时设置它并返回原来的值；不给则只读出。默认用所有核（或环境变量 MHA_THREADS=n）。只有互相独立的输出会被
分开算，求和从不拆开，所以不论 n 是多少，结果都一位不差。]]
D["mha.isa"] = [[
快速计算内核用的指令集版本（"avx512"、"avx2" 或 "portable"），以及这颗 CPU 能运行的版本列表（快的在前）。
给出 name 时切换到那个版本，并返回原来的版本。默认用最快的（或环境变量 MHA_ISA=name）。各版本的加法顺序不同，
所以结果只在最后几位上有差别：课程打印出来的内容在每个版本上都一样。]]

-- Elementwise arithmetic
D["mha.add"] = [[
逐元素求和。a 和 b 是张量或数字，按 NumPy 的规则广播：形状右对齐，每一对大小要么相等，要么其中一个是 1。]]
D["mha.sub"] = [[
逐元素求差。a 和 b 是张量或数字，按 NumPy 的规则广播：形状右对齐，每一对大小要么相等，要么其中一个是 1。]]
D["mha.mul"] = [[
逐元素（哈达玛）乘积——不是矩阵乘法，矩阵乘法是 mha.matmul。a 和 b 是张量或数字，按 NumPy 的规则广播：
形状右对齐，每一对大小要么相等，要么其中一个是 1。]]
D["mha.div"] = [[
逐元素求商（x/0 是 ±inf，0/0 是 nan）。a 和 b 是张量或数字，按 NumPy 的规则广播：形状右对齐，
每一对大小要么相等，要么其中一个是 1。]]
D["mha.pow"] = [[
逐元素求幂。a 和 b 是张量或数字，按 NumPy 的规则广播：形状右对齐，每一对大小要么相等，要么其中一个是 1。]]
D["mha.maximum"] = [[
逐元素取两者中较大的。a 和 b 是张量或数字，按 NumPy 的规则广播：形状右对齐，每一对大小要么相等，
要么其中一个是 1。]]
D["mha.minimum"] = [[
逐元素取两者中较小的。a 和 b 是张量或数字，按 NumPy 的规则广播：形状右对齐，每一对大小要么相等，
要么其中一个是 1。]]
D["mha.abs"] = [[
每个元素的绝对值。返回与 t 形状相同的新张量。]]
D["mha.neg"] = [[
每个元素取负（和 -t 一样）。返回与 t 形状相同的新张量。]]
D["mha.exp"] = [[
e 的每个元素次幂。返回与 t 形状相同的新张量。]]
D["mha.log"] = [[
每个元素的自然对数（0 处为 -inf，负数为 nan）。返回与 t 形状相同的新张量。]]
D["mha.sqrt"] = [[
每个元素的平方根（负数为 nan）。返回与 t 形状相同的新张量。]]
D["mha.tanh"] = [[
每个元素的双曲正切。返回与 t 形状相同的新张量。]]
D["mha.sigmoid"] = [[
逻辑函数（sigmoid），把每个元素压到 (0, 1) 之间。返回与 t 形状相同的新张量。]]
D["mha.relu"] = [[
线性整流单元：负数变成 0。返回与 t 形状相同的新张量。]]
D["mha.gelu"] = [[
高斯误差线性单元，精确形式（PyTorch 的默认），用在 Transformer 的前馈层里。返回与 t 形状相同的新张量。]]

-- Comparison and masks
local COMPARE = [[
逐元素比较 %s，结果是 bool 张量，支持广播；b 可以是数字。bool 张量就是掩码：masked_fill 和 where
都接受它。Lua 的 < <= > >= 必须给出单个布尔值，所以对张量使用它们会报错并指向这里：要写 x:gt(0)，
而不是 x > 0。]]
D["mha.eq"] = COMPARE:format("a == b")
D["mha.ne"] = COMPARE:format("a ~= b")
D["mha.lt"] = COMPARE:format("a < b")
D["mha.le"] = COMPARE:format("a <= b")
D["mha.gt"] = COMPARE:format("a > b")
D["mha.ge"] = COMPARE:format("a >= b")
D["mha.equal"] = [[
a 和 b 形状、dtype 和数值都相同时为 true（同 torch.equal）；a == b 的意思一样。]]
D["mha.logical_and"] = [[
对两个 bool 张量逐元素做“与”运算，支持广播。]]
D["mha.logical_or"] = [[
对两个 bool 张量逐元素做“或”运算，支持广播。]]
D["mha.logical_xor"] = [[
对两个 bool 张量逐元素做“异或”运算，支持广播。]]
D["mha.logical_not"] = [[
对 bool 张量逐元素取反：把“允许看的位置”的掩码变成“不允许看的位置”的掩码，反过来也一样。]]
D["mha.where"] = [[
在 bool 张量 cond 为 true 的地方取 a，否则取 b；a 和 b 可以是数字。三者一起广播。]]
D["mha.masked_fill"] = [[
t 的一个副本：bool 掩码 mask 为 true 的地方都换成 value；mask 会广播到 t 的形状。在 softmax 之前用
-math.huge 给分数打上掩码，这些位置的权重就是 0：注意力正是这样挡住“未来”（因果掩码）或填充位置的。]]
D["mha.causal_mask"] = [[
(L, S) 的 bool 掩码，对角线以上为 true：查询 i 不能看未来的键 j > i。true 表示“不允许看”，
在 mha-repl 里处处如此，和 nn.MultiheadAttention 一致。]]

-- Reductions
local REDUCE = [[
元素的%s。不给 dim：对所有元素，得到一个标量张量。给出 dim（从 1 开始，负数从末尾数）：沿这一维计算，
这一维随之消失，除非 keepdim 为 true（此时它保留下来、大小为 1，结果就能和 t 广播）。]]
D["mha.sum"] = REDUCE:format("和")
D["mha.mean"] = REDUCE:format("平均值")
D["mha.var"] = [[
方差，默认和 PyTorch 一样带贝塞尔校正（除以 n-1）；correction 为 0 时除以 n，同 NumPy。讲缩放的那一课
测量 var(q·k) 如何随 d_k 增大。]]
D["mha.max"] = [[
最大的元素（一个标量张量）；或者沿 dim 求，得到两个张量：最大值和它们从 1 开始的下标（同 torch.max）；
或者给两个张量时，逐元素取较大者。]]
D["mha.min"] = [[
最小的元素；或者沿 dim 求，得到最小值和它们从 1 开始的下标；或者给两个张量时，逐元素取较小者。]]
D["mha.argmax"] = [[
最大元素的下标（从 1 开始），对展平后的整个张量或沿 dim 求；并列时取第一个。每个查询最关注哪个键？
weights:argmax(-1)。]]
D["mha.argmin"] = [[
最小元素的下标（从 1 开始），对展平后的整个张量或沿 dim 求；并列时取第一个。]]

-- Views
D["mha.view"] = [[
同样的元素、新的形状，共享存储（不复制）；其中一个大小可以写 -1，由其余的推出。只有步长允许时才行：
transpose 之后张量不再连续，view 会失败，这和 PyTorch 一样——先调用 :contiguous()，或者改用 reshape。
拆分多头那一课就建立在这一点上。]]
D["mha.reshape"] = [[
步长允许时同 view，否则按新形状复制出一个连续的张量。其中一个大小可以是 -1。]]
D["mha.contiguous"] = [[
元素已经按 C 顺序无间隙地排列时返回 t 本身（共享），否则复制出一个连续的张量。transpose 或 permute
之后要 view，就需要先调用它。]]
D["mha.transpose"] = [[
交换两个维度：只交换它们的大小和步长，数据一个也不动，所以结果通常不连续。Q·Kᵀ 里的 Kᵀ 就是
K:transpose(-2, -1)。]]
D["mha.permute"] = [[
重新排列所有维度：结果的第 k 维是 t 的第 p_k 维。(N, L, H, D) -> (N, H, L, D) 就是 permute(1, 3, 2, 4)。]]
D["mha.narrow"] = [[
沿 dim 取第 start 到 start+length-1 个元素（从 1 开始），共享存储：一个切片。]]
D["mha.select"] = [[
沿 dim 取下标 i（从 1 开始，负数从末尾数）处的切片，这一维随之去掉：从 (H, L, D) 里选出头 h 得到 (L, D)。
t[i] 就是 t:select(1, i)。]]
D["mha.unsqueeze"] = [[
在结果的第 dim 个位置插入一个大小为 1 的新维度（1..ndim+1；-1 表示加在末尾），常用来让形状能够广播。]]
D["mha.squeeze"] = [[
dim 的大小是 1 时去掉它；不给 dim 时去掉所有大小为 1 的维度。]]
D["mha.expand"] = [[
广播视图：大小为 1 的维度以步长 0 重复到给定的大小，所以不占内存；-1 表示保持原大小。重复的元素是同一块
内存，所以和 PyTorch 一样，copy_ 和随机填充拒绝写进去（fill_ 和 set 可以）：先 clone() 一份。]]
D["mha.chunk"] = [[
沿 dim（默认 1）分成 n 个大小相近的视图，同 torch.chunk：把打包的输入投影 (3E, E) 拆成 W^Q、W^K、W^V
就是 chunk(3)。]]
D["mha.split"] = [[
沿 dim（默认 1）每 size 个元素一段，得到连续各段的视图；最后一段可以小一些。以多个返回值给出，不是一张表。]]
D["mha.clone"] = [[
一个连续的、拥有自己存储的副本：改它不会改到 t。]]

-- Joining
D["mha.cat"] = [[
沿一个已有的维度 dim（默认 1）把张量拼起来；其余维度的大小必须一致。多头注意力就是沿最后一维拼接各个头的输出。]]
D["mha.stack"] = [[
把形状相同的张量沿一个新维度（默认 1，最多 ndim+1）叠起来。]]

-- Attention
D["mha.matmul"] = [[
矩阵乘法，规则同 torch.matmul：(n,k)·(k,m) -> (n,m)；1 维的操作数当作向量；前面的维度是批次维，可以广播，
所以 (N,H,L,D)·(N,H,D,S) -> (N,H,L,S) 一次算出每个头的分数。内层的两个大小必须相等，否则错误会给出两个
形状。很长的计算可以按 Ctrl-C 停下。注意 * 是逐元素相乘，不是矩阵乘法。]]
D["mha.softmax"] = [[
把分数变成沿 dim 为正且和为 1 的权重（dim 必须给出，同 PyTorch；注意力分数矩阵的行是 dim -1）。先减去
最大值再算，数值稳定，所以大的分数不会溢出。一行全是 -inf（所有键都被掩码）时得到 NaN，和 PyTorch、
NumPy 一样。]]
D["mha.log_softmax"] = [[
沿 dim 的 log(softmax(x))，计算时不先算出 softmax（权重极小时也不会出现 log 0）。也可以当方法用：
x:log_softmax(dim)。]]
D["mha.linear"] = [[
全连接层，布局同 PyTorch：W 是 (out, in)，所以 x (..., in) 变成 (..., out)。注意力里的投影
Q = X·W^Qᵀ 就是线性层。]]
D["mha.layer_norm"] = [[
对最后几个维度做层归一化，同 PyTorch 的 F.layer_norm：normalized_shape 是这几维的形状——一个数 n 表示
最后一维、大小为 n（对 (N, L, E) 的输入就写 E），或者一张表 {a, b} 表示最后两维；它必须和 x 最后几维的
大小一致。用有偏方差，eps 默认 1e-5；weight 和 bias 的形状就是归一化的形状。用在残差连接之后：
layer_norm(x + attn(x), E)。]]
D["mha.positional_encoding"] = [[
《Attention Is All You Need》里的正弦位置编码，形状 (L, E)，加到词元嵌入上，注意力就能分辨位置。
偶数列是正弦，奇数列是余弦，波长从 2π 到 10000·2π 按几何级数增长。]]
D["mha.embedding"] = [[
按从 1 开始的下标 indices（整数张量或嵌套表）从 weight (num_embeddings, E) 里取出行：结果的形状是 indices
的形状再加上 E。weight 的梯度把用到的行累加起来（一行用了两次就得到两倍的梯度）。]]
D["mha.scaled_dot_product_attention"] = [[
缩放点积注意力：每个查询的输出是各个值的加权平均，权重取决于查询和每个键有多匹配。
q (..., L, D)、k (..., S, D)、v (..., S, Dv)；前面的维度可以广播。attn_mask 是 bool（true = 不允许看）或浮点
（加到分数上）；is_causal 挡住 j > i 的键；scale 默认 1/√D。need_weights=false 时只返回 out，由一个融合
内核算出，从不构造 L×S 的矩阵。enable_gqa=true（分组查询注意力，torch 2.5 的选项）：q (..., H, L, D)，
k 和 v (..., H_kv, S, D)，H 是 H_kv 的倍数；查询头 h 读第 ⌈h·H_kv/H⌉ 个 K/V 头（torch 的 repeat_interleave
顺序），K 和 V 从不复制；H_kv = 1 就是多查询注意力（MQA）。return_lse=true 还返回每一行缩放、掩码后的分数的
log-sum-exp (..., L)（自然对数，整行都被掩码时为 -inf），排在 out 和权重之后：融合内核保存的 m + log l，
它的反向就从这个数重新算出权重。mha.sdpa 是同一个函数。]]
D["mha.sdpa"] = [[
mha.scaled_dot_product_attention 的简称；详见那一条。]]
D["mha.cross_entropy"] = [[
PyTorch 的 F.cross_entropy：logits 形状为 (C)、(N,C) 或 (N,C,d1,...)（类别维是第 2 维，1 维 logits 则是第 1 维，
同 torch）；targets 是从 1 开始的类别下标，可以是整数张量，也可以是嵌套的 Lua 表，形状就是 logits 去掉类别维。
目标等于 ignore_index 的位置（按你给出的 targets 的值比较，所以填充用的 0 就写 {ignore_index = 0}）不计入：
损失为 0，梯度为 0。reduction 为 "mean" 时对没被忽略的位置取平均（全被忽略时是 NaN，同 torch），"sum" 时求和，
"none" 时返回每个位置的损失（形状同 targets）。label_smoothing ε 把目标和 C 个类别上的均匀分布混合。]]

-- Gradients by hand
D["mha.softmax_backward"] = [[
手算 softmax 的梯度：dy 是 y = softmax(x, dim) 的梯度，结果是 x 的梯度。]]
D["mha.log_softmax_backward"] = [[
手算 log_softmax 的梯度，其中 y = log_softmax(x, dim)。]]
D["mha.linear_backward"] = [[
手算 y = linear(x, W, b) 的梯度：x (..., in)，W (out, in)，dy (..., out)。]]
D["mha.layer_norm_backward"] = [[
手算 layer_norm 对 x 最后 normalized_ndim 维的梯度（eps 默认 1e-5）。]]
D["mha.embedding_backward"] = [[
手算 embedding 的 weight 的梯度：每个位置的 dy 行加到它的下标所对应的行上。]]
D["mha.cross_entropy_backward"] = [[
手算 cross_entropy 的梯度，选项 options 相同（ignore_index、reduction、label_smoothing）。dloss 是损失本身的梯度，
默认为 1：一个数，reduction 为 "none" 时则是形状同 targets 的张量。被忽略的位置梯度为 0。]]
D["mha.sdpa_backward"] = [[
手算缩放点积注意力的反向传播。给出 weights（前向算出的权重）时，是从 (L,S) 矩阵出发的朴素反向；给出 out
（前向的输出）时，是融合的反向：权重由每一行的 log-sum-exp 重新算出，每次 64 个查询 x 128 个键，所以额外
内存是 O(L·D)，从不是 O(L·S)（flash-attention 的做法）。bool 掩码或 is_causal 挡住的位置不传梯度；一整行
都被掩码时 dv 里得到 NaN（它的权重是 NaN），和 torch 1.13 的自动求导一样。给出 enable_gqa 时，一个 K/V 头的
dk 和 dv 是读它的那些查询头的梯度之和。]]

-- Autograd
D["mha.no_grad"] = [[
在关闭梯度记录的状态下运行 f(...)（同 torch.no_grad()）：结果不需要梯度，叶子张量也可以原地写入，
优化器的一步正是这样做的。f 返回或报错时都会恢复原来的模式。]]
D["mha.is_grad_enabled"] = [[
在 mha.no_grad 里面为 false，其他时候为 true。]]
D["mha.clip_grad_norm"] = [[
把所有梯度一起缩放，使它们合起来的 2-范数不超过 max_norm，并返回缩放前的范数，同
torch.nn.utils.clip_grad_norm_（当 max_norm / (total + 1e-6) 小于 1 时乘上这个系数）。在 backward 和 step
之间调用。没有梯度的参数不参与。]]

-- Printing
D["mha.format"] = [[
把张量（或嵌套的数字表）排成给人看的文字：右对齐的列、4 位小数，整数写成 '3.'，只有数量级需要时才用科学
计数法（和 NumPy 一样，对每个张量整体决定），nan/inf/-inf 照写，-0 写成 0，bool 张量写 true/false，末尾一行
'[float32 (3,4)]'。元素多于 threshold 个时，每一维只显示开头和末尾各 edgeitems 个，中间用 '...'；比 linewidth
宽的行折到下面，用 'columns k-m' 标出；3 维和 4 维张量按 2 维切片打印，标为 '[1,:,:]'，或者在 opts.dims
给出维度名字时标为 '[head 1]'。opts 可以带所有 printoptions 的键（只对这一次有效），以及和 mha.show 一样的
rows=、cols=、title=、dims=。print(t) 和 tostring(t) 都用它。]]
D["mha.printoptions"] = [[
设置之后每次打印的样子：precision（小数位数，默认 4）、threshold（元素超过多少个就摘要显示，默认 1000）、
edgeitems（摘要时每一维两端各保留几个，默认 3）、linewidth（默认是终端宽度，输出不是终端时为 80；"auto"
恢复默认）、sci_mode（true、false，或 "auto" 让数量级决定）和 lang（"en" 或 "zh"：打印里带的字，如
"columns 1-6" 或 "scale:"；课程会设置它的语言）。不给参数时返回当前的选项；"reset" 恢复默认值。]]
D["mha.show"] = [[
打印矩阵，行和列（rows=、cols=）带词元标签，于是注意力权重读起来就是“哪个查询在看哪个键”。标签是一个列表，或者按空格
切开的字符串，没有空格时按字切开（'我爱你'）。各列按显示宽度对齐，所以中文等宽字符（每个占两格）也能对齐。
其他选项同 mha.format。]]
D["mha.heat"] = [[
在终端里用深浅不同的格子画出矩阵——不用 gnuplot 就能快速看一眼，在浅色和深色终端上都看得清：终端有颜色且
没有设置 NO_COLOR 时，用从紫到黄绿的 12 级色阶（256 色），否则用 8 种高度的竖条 '▁▂▃▄▅▆▇█'，下面再加一行
色标。范围是有限值的最小到最大，或者 zrange。-inf（被掩码的分数）取最低一级，nan 显示为 '??'。
values=true 在每格里写出数值（values=3：三位小数）。3 维张量逐片画出，共用一个色标。color=true/false
强制使用或禁止颜色。]]

-- Training
D["mha.tasks"] = [[
带种子的玩具任务，用来训练“预测下一个词元”：copy（复制）、reverse（倒序）、sort（排序，x SEP y）、
match（先给键值对，再给一个键：答出它的值）、induction（一段序列在随机位置重复出现，长度随机，取自
repeat = {min, max}）。targets[p] 是应当跟在位置 p 后面的词元；0 表示这个位置不计入。
mha.tasks.repeated(vocab, r, n) 给出 n 个序列，每个是 r 个随机词元说两遍，用来探测各个头的检测器。
difference（差）：从第 3 个位置起，答案是 x(p-1) - x(p-2)，在 vocab 个数的钟面上取模——一次要用到两个词元
（第 18 课）。mha.tasks.show(ids, {title=, zero=}) 把词元编号按整数打印（zero = "-" 用来显示不计入的目标）。]]
D["mha.train"] = [[
在 task 上训练 model：抽一个批次，在计入的位置上算交叉熵（mha.train.loss），反向传播，裁剪梯度范数，
让优化器走一步。在终端里会原地刷新一行进度（步数、每秒步数、损失、准确率、预计剩余时间），按 Ctrl-C
会报告到达的步数并返回到此为止的 history，模型保留已学到的；调用它的循环在下一轮停下，Ctrl-C 总能停下循环；
plot = true 时每次记录都重画损失曲线。
history 里有 loss、acc 和 step（每次记录一行），以及 steps 和 seconds（CPU 时间）。
val（一个任务；对 mha.tasks.text 任务也可以是一段文本）每 val_every 步（默认同 log_every）和最后一步算一次
验证损失：val_batches 个批次的平均，每次都是同样的批次；显示在进度行里，并存进 history.val_loss 和
history.val_step。]]
D["mha.load_model"] = [[
一个随程序提供的训练好的模型（models/NAME.npz，由 `make models` 从固定的种子训练出来；在 $MHA_MODELS、
./models 以及程序构建目录旁的 models/ 里找），或者任何由 mha.save_model 写出的文件。extra 里是文件的其他
条目，例如 extra["history.loss"]；文件存有 tokenizer.codepoints 时还有 extra.tokenizer，一个 CharTokenizer
（char_en：英王钦定本圣经；char_zh：唐诗三百首）。名字不对时会列出找到的模型。]]
D["mha.save_model"] = [[
把一个 Transformer 的 state_dict 和它的选项（config.vocab 等）写进一个 .npz，mha.load_model 能据此重建它，
np.load 也能读；extra（名字 -> 张量）存在它们旁边，extra.tokenizer（一个 CharTokenizer）以码位存成
tokenizer.codepoints。]]
D["mha.heads.detect"] = [[
TransformerLens 的“头检测器”：对每个序列、每个头，算出注意力落在某种模式所指的键上的比例（previous：
i-1；duplicate：词元 i 之前出现过的副本；induction：之前那个副本后面的词元），先对所有查询位置平均，再对
所有序列平均。rows = "detected" 时只对有这种键的位置平均。mha.heads.report(model, tokens) 把三种分数
都打印成表格和热力图。]]
D["mha.heads.report"] = [[
把每一层、每个头的三种检测分数打印成表格，并把 previous-token 和 induction 分数画成热力图；返回这三个
(layers, heads) 张量。]]

-- The attention module
D["mha.MultiheadAttention"] = [[
多头注意力层，忠实于 PyTorch 1.13 的 nn.MultiheadAttention（batch_first）：输入先投影成查询、键和值，
再拆成 num_heads 个头，每个头的维度 head_dim = embed_dim/num_heads，每个头各自做注意力，拼接起来的各头
再经 W^O 投影。kdim/vdim 让键和值有别的大小（交叉注意力）。参数用 PyTorch 的 state_dict 名字，只是把 '.'
写成 '_'（in_proj_weight、in_proj_bias、q_proj_weight、k_proj_weight、v_proj_weight、out_proj_weight、
out_proj_bias、bias_k、bias_v）：m.in_proj_weight 就是参数本身（一个需要梯度的叶子：backward 会填好
m.in_proj_weight:grad()），而 m.in_proj_weight = t 会用 t 的一个副本替换它。初始化和 PyTorch 一样，
来自带种子的随机数发生器。用 m:forward(q, k, v, opts) 或 m(q, k, v, opts) 调用。]]
D["MultiheadAttention:forward"] = [[
这一层走一遍。query 形状 (N, L, E)，或不带批次的 (L, E)；key (N, S, kdim)，value (N, S, vdim)；key 和 value
默认就是 query（自注意力）。key_padding_mask (N, S) 在填充的键上为 true（或 -inf）；attn_mask (L, S) 或
(N·H, L, S) 是 bool（true = 不允许看）或浮点（加到分数上）；is_causal 挡住 j > i。返回 out (N, L, E) 和按头
平均的权重 (N, L, S)；average_attn_weights=false 时返回 (N, H, L, S)；need_weights=false 时权重为 nil——
和 PyTorch 返回的完全一样。]]
D["MultiheadAttention:trace"] = [[
运行一次 forward，并把每个中间结果按名字留下：`query key value Q K V Q_heads K_heads V_heads scores
scaled_scores masked_scores weights head_outputs concat output`。表的数组部分按顺序列出这些名字，所以
`for _, name in ipairs(tr) do print(name, tr[name]) end` 就能一步步走完整个计算。选项同 forward。]]
D["MultiheadAttention:parameters"] = [[
PyTorch 的点号名字（in_proj_weight、out_proj.weight 等）-> 参数本身，模块的每个参数都在里面：一个需要梯度
的叶子，backward 会填好它的 grad()——优化器要的就是它。要往里写，就在 mha.no_grad 里面写。]]
D["MultiheadAttention:parameter_names"] = [[
模块各参数的名字，按 PyTorch 的 state_dict 顺序（'.' 写成 '_'）。]]
D["MultiheadAttention:state_dict"] = [[
nn.MultiheadAttention 在 PyTorch 里的 state_dict：in_proj_weight（或 q/k/v_proj_weight）、in_proj_bias、
bias_k、bias_v、out_proj.weight、out_proj.bias——字段 out_proj_weight 对应键 out_proj.weight。在组合模块
里面时，键前面再加上子模块的名字。]]
D["MultiheadAttention:load_state_dict"] = [[
载入 PyTorch 的 nn.MultiheadAttention 的 state_dict（键名同 MultiheadAttention:state_dict 给出的），
检查同 Module:load_state_dict。]]
D["MultiheadAttention:requires_grad"] = [[
冻结（false）或解冻每个参数：冻结的模块不为它的参数记录计算图，输入也都不需要梯度时，它的 forward 就走
普通的计算内核。]]
D["MultiheadAttention:zero_grad"] = [[
清掉每个参数的梯度（下一次 backward 之前，每个 grad() 都是 nil）。]]
D["MultiheadAttention:close"] = [[
现在就释放模块的参数，而不等垃圾回收（`local m <close>` 离开作用域时也会这样做）。]]

-- Optimizers
D["mha.optim.SGD"] = [[
随机梯度下降，规则同 torch.optim.SGD。params 是张量的列表，或者一张“名字 -> 张量”的表，比如
m:parameters()（按名字排序后取用），或者是若干组 {params = ..., lr = ...} 的列表，每组有自己的选项。
lr 必须给出；和 torch 一样，负的 lr、momentum 或 weight_decay 会被拒绝；nesterov 需要 momentum 且不能有
dampening。]]
D["mha.optim.Adam"] = [[
Adam，规则同 torch.optim.Adam（权重衰减加到梯度上；amsgrad 保留最大的二阶矩）。params 同 mha.optim.SGD。
每个参数的 opt.state[p] 里存着 step、exp_avg 和 exp_avg_sq。]]
D["mha.optim.AdamW"] = [[
权重衰减解耦的 Adam，规则同 torch.optim.AdamW：在 Adam 这一步之前，参数先按 lr·weight_decay 的比例缩小，
而不是把权重衰减并进梯度。]]
D["Optimizer:step"] = [[
更新每个有梯度的参数（其余的跳过，同 torch）。给出 closure 时先调用它，并返回它的结果。]]
D["Optimizer:zero_grad"] = [[
在下一次 backward 之前，清掉优化器各参数的梯度（p:grad() 为 nil）。]]
D["Optimizer:add_param_group"] = [[
添加一组参数，带它们自己的选项（其余选项取优化器的默认值）。]]
D["Optimizer:state_dict"] = [[
优化器的状态，即 torch.optim 的 state_dict 用点号展平（和模块的一样）：state.<i>.step、state.<i>.exp_avg、
state.<i>.exp_avg_sq（Adam、AdamW）、state.<i>.momentum_buffer（SGD）、param_groups.<g>.<选项> 和
param_groups.<g>.params；参数按组的顺序从 0 编号，同 torch。其中的张量是副本。mha.save 可把它写进 .npz。]]
D["Optimizer:load_state_dict"] = [[
取回 opt:state_dict() 给出的状态，或 mha.load 从保存它的 .npz 读回的表：各组的参数个数和形状必须与状态中
的一致，否则报错并指出是哪个键。张量会被复制，状态中的选项替换各组自己的选项（同 torch），所以从检查点
恢复的训练与保存它的那次完全一样地继续。]]

-- Tensor methods
D["Tensor:shape"] = [[
t 各维的大小，作为一个 Lua 列表。]]
D["Tensor:size"] = [[
不给 dim 时是形状（同 t:shape()）；给出 dim（从 1 开始，负数从末尾数）时是那一维的大小。]]
D["Tensor:dim"] = [[
维数（标量为 0）。]]
D["Tensor:numel"] = [[
元素个数：各维大小的乘积。]]
D["Tensor:dtype"] = [[
元素的类型。]]
D["Tensor:strides"] = [[
沿每一维前进 1 时，在存储里要跨过多少个元素。转置的视图交换了步长；扩展出来的维度步长为 0。]]
D["Tensor:offset"] = [[
t 的第一个元素在存储里的位置（从 0 开始，以元素计）：narrow 和 select 会移动它。]]
D["Tensor:is_contiguous"] = [[
元素是否按 C 顺序、无间隙地排在存储里，也就是 view() 能否直接用。]]
D["Tensor:shares_storage"] = [[
t 和 u 是不是同一块存储的视图：是的话，通过一个写入会改变另一个。]]
D["Tensor:T"] = [[
2 维张量的转置，一个视图：t:transpose(1, 2)。]]
D["Tensor:get"] = [[
取一个元素，下标从 1 开始（负数从末尾数），每一维给一个。]]
D["Tensor:set"] = [[
写一个元素，通过任何视图都写进共享的存储。]]
D["Tensor:item"] = [[
只有一个元素的张量里的那个元素。]]
D["Tensor:totable"] = [[
把元素转成嵌套的 Lua 表（标量则是一个数或布尔值）。]]
D["Tensor:fill_"] = [[
原地把每个元素都设为 value。]]
D["Tensor:zero_"] = [[
原地把每个元素都设为 0：x:grad():zero_() 清零的就是 x 的梯度本身，同 torch 的 x.grad.zero_()（t:zero_grad()
则是忘掉梯度）。]]
D["Tensor:copy_"] = [[
原地把 src（张量、数字或嵌套表，广播到 t 的形状）写进 t，通过视图写进共享的存储。和 PyTorch 一样，当 t 的
几个元素共用同一个内存位置时（expand 造成的步长 0）拒绝写入：先 clone()。]]
D["Tensor:bool"] = [[
转成 bool 张量：非零变成 true。]]
D["Tensor:float"] = [[
转成 float32 张量：true 变成 1，false 变成 0（已经是 float32 时就是 t 本身）。]]
D["Tensor:close"] = [[
现在就放开 t 对存储的引用（没有视图再持有存储时它就被释放）；之后 t 显示为已关闭。`local t <close> = ...`
在作用域结束时会这样做。]]
D["Tensor:log_softmax"] = [[
mha.log_softmax 的方法形式。]]
D["Tensor:requires_grad"] = [[
把 t 标为自动求导计算图的叶子（PyTorch 的 requires_grad_）：对它的每个运算都会记录下来，backward() 把
d(loss)/dt 累加进 t:grad()。不给参数时读出这个标志（由这样的张量算出的结果也为 true）。]]
D["Tensor:backward"] = [[
从这个张量出发做反向模式求导：它所依赖的每个叶子都把 d(loss)/d(leaf) 加进自己的 grad()。只有一个元素的
损失不用给参数；否则给出 y 的梯度 grad，一个和 y 形状相同的张量（y:backward(g) 算的是 Σ g·y）。计算图
用完就释放：要再 backward，先再跑一遍前向，或者给 retain_graph = true（torch 的 retain_graph=True）把它留给
下一次 backward（选项放在最后：y:backward(g, {retain_graph = true})，或 {gradient = g, ...}）。]]
D["Tensor:grad"] = [[
backward() 累加进叶子 t 的梯度，一个和 t 形状相同的张量；第一次 backward 之前（以及由运算得到的张量）为 nil。
在 t:zero_grad() 之前，多次 backward 的梯度会累加。]]
D["Tensor:set_grad"] = [[
把 t 的梯度设为 g（一个和 t 形状相同的张量）的副本，或者给 nil 清掉它：就是 torch 的 t.grad = g。]]
D["Tensor:zero_grad"] = [[
清掉 t 的梯度：下一次 backward 之前 t:grad() 都是 nil（torch 的 zero_grad(set_to_none=True)）。]]
D["Tensor:grad_fn"] = [[
计算图里造出 t 的那个运算的名字（"mul"、"matmul"、"softmax" 等），叶子则为 nil。]]
D["Tensor:is_leaf"] = [[
用户自己创建的张量为 true（叶子：它的梯度会被保留），由记录下来的运算造出的为 false。]]
D["Tensor:detach"] = [[
同样的数据（共享存储，不复制），但在自动求导的计算图之外：用它做的任何事都不会影响 t 的梯度。想随意改数值，
就写进 t:detach():clone()。]]

-- Plots
D["plot.heatmap"] = [[
画一个矩阵——通常是注意力权重 (L,S)——的热力图，两条轴上都带词元标签（tokens= 同时设置两条轴），第 1 行在
最上面，和打印出来的一样。palette 取 viridis（默认）、gray、hot、blues、redblue 之一；zrange 固定色阶范围；
values=true 在每格写出数值（values=3：三位小数）。nan 和 ±inf 的格子留空。两条轴都有标签时按注意力来读：
两轴标为“查询”和“键”（用课程的语言；xlabel=/ylabel= 可以改，"" 去掉一个）。font=（磅）和 size={w, h}
（像素）适合投影仪；MHA_PLOT_FONT 和 MHA_PLOT_SIZE=WxH 为每张图设置它们（窗口会缩小以适应
MHA_PLOT_SIZE，默认 960x680）。在文字终端里改为打印 mha.heat；plot.save 写出真正的图片。没有返回值
（plot.current() 是它画在上面的那张图）。]]
D["plot.heads"] = [[
把 (H,L,S) 注意力权重的每个头画在一个网格里，每块面板标题为“头 k”（英文课程里是 'head k'），标出查询轴和
键轴，网格适应屏幕大小，所有头共用一个色阶，便于比较。对带批次的 (B,H,L,S) 权重，先选出一个序列：
W:select(1, 1)。]]
D["plot.line"] = [[
把一条或多条序列画成带点的折线，并加图例。x 和 y 是 Lua 数组或 1 维张量；x 默认为 1..n。顶层带 y= 的表
就是单独一条序列。logx/logy 使用对数坐标轴（此时所有值都必须为正）。xrange 固定横轴的范围（边长边重画的
曲线，横轴保持不动）。在文字（dumb）终端上，标题、轴标签和
图例按显示宽度排版，所以有中文时图例的框和每一行都和终端一样宽。]]
D["plot.bar"] = [[
每个标签画一根柱子——比如一行分数在几种温度下的 softmax。labels 是一个列表，或者按空格切开的字符串；
values 是 Lua 数组或 1 维张量。纵轴从 0 到比最高的柱子再高十分之一（有负值时也往下留出同样的余地），
所以没有柱子碰到边框。]]
D["plot.save"] = [[
把当前图的最后一次绘制写成 .png（pngcairo）、.svg 或 .pdf（pdfcairo）文件。函数返回时文件已经写完并关闭。
width 和 height 以像素计（PDF 按每英寸 100 像素换算）。]]
D["plot.figure"] = [[
新建一张图并把它设为当前图（current = false：一张独立的图，plot.heatmap 等函数不会画在它上面，
mha.train 的曲线就是这样）。每张图有自己的 gnuplot 进程（第一次绘制时才启动，所以窗口会一直显示它）；
plot.heatmap/heads/line/bar 画在当前图上，图本身也有同样的方法（fig:heatmap(W)、fig:save('a.png')、
fig:close()）。绘图函数没有返回值，所以画完之后 REPL 什么也不打印；plot.figure() 和 plot.current() 返回
这张图，它打印为 'figure 1 (gnuplot, pid 1234)' 或 'figure 1 (no gnuplot running)'。窗口一直开着，
直到它被关闭（fig:close()、plot.closeall()、:close）或 REPL 退出，不管垃圾回收做什么；文字图的 gnuplot
在图被回收时也会结束。]]
D["plot.current"] = [[
当前的图；第一次用到时创建一张。]]
D["plot.close"] = [[
关闭一张图（默认是当前图）：它的 gnuplot 结束并被回收，窗口随之消失。plot.closeall() 关闭所有打开的图。]]
D["plot.closeall"] = [[
关闭所有图，并回收它们启动的每个 gnuplot 进程。]]
D["plot.terminal"] = [[
图画在哪里：窗口（qt、wxt 或 x11，需要设置了 DISPLAY 且 gnuplot 支持），否则是当前终端里的文字（'dumb'，
终端有颜色时带颜色），能显示 sixel 图像的终端用 'sixelgd'，或者 'none'（只在保存时才画）。环境变量
MHA_PLOT_TERM 在启动时设置它；plot.terminal(name) 为所有图更改它。]]
D["plot.terminals"] = [[
已安装的 gnuplot 支持的终端名字（每个进程只问一次）。]]

-- Lessons
D["lesson"] = [[
一个课程文件 lessons/NN_name.lua 返回一课：按顺序排好的各个步骤。文件载入时可以直接用 lesson、step、
exercise 和 mistake。每段文字都要有英文和中文（缺了一种语言，运行器就拒绝这一课）。seed 在开始时以及每次
重放之前交给 mha.seed，所以数字每次都一样。步骤的代码在 REPL 的全局环境里运行：它定义的东西（Q、K、
weights 等）在步骤之间留在提示符下可用。]]
D["step"] = [[
一个单元：一个标题（显示为“第 k/N 步：标题”），一段文字，以及先回显再运行的代码。文字的标记：空行开始一个
新段落；段落按显示宽度折行到终端宽度（最多 100 列；中文在字之间断开，从不在收尾标点之前断；英文单词从不
拆开）；'# 标题'；'- 列表项'；缩进两个及以上空格的行只要放得下就原样保留（公式如 softmax(Q·Kᵀ/√d_k)·V、
表格），更宽时在它的最后一列下面折行；`代码` 保留反引号；*强调* 在彩色终端上是粗体，其他地方是普通字。
回显的代码行太宽时在 '  │   ' 后面折行。代码用 show(t, {rows=tokens, ...}) 打印中间结果。]]
D["exercise"] = [[
请学生给出一个值：一个数、一个列表（比如形状 {2, 4, 4}）、一张嵌套表或一个张量。答案和 `solution`
（一个在全局环境里求值的 Lua 表达式，:solution 会显示它）的值比较形状和数值，容差为
|got - want| <= atol + rtol·|want|（不给时两者都是 1e-4）。答错时依次和每个 mistake 比对，给出对应的提示；
都不匹配时，消息指出第一个不同的元素或形状。批处理模式下由 solution 自己作答。]]
D["mistake"] = [[
一个典型的错误答案以及该对它说什么：`wrong` 是一个算出错误值的表达式（答案在容差内等于它就算匹配）；
`error` 是一个模式，和 :answer EXPR 求值时报出的错误匹配（例如用 "contiguous" 匹配没有先 contiguous 就
view 的错误）；`test` 是任意的判断函数。内置的有：mistake.softmax_axis（答案沿最后一维以外的某一维和为 1）
和 mistake.nan_hint{hint=}（答案里有 NaN）。]]
D["answer"] = [[
回答当前的练习。:answer 自己对 EXPR 求值，所以其中的错误（比如对不连续的张量 view）也会和练习的提示比对。
结论是“正确”或“还不对：”加一条提示；格式不对的答案（字符串、各行长度不一的表、形状不对）会得到一条说明，
课程照常继续；错误的数会报出它的值。answer(value) 打印结论，并返回答对与否。:solution 显示本课自带的答案；
按回车跳过这道练习。]]
D["LESSON"] = [[
课程代码可以查询的东西：课程是否在批处理模式下运行（这时输出必须确定不变：不能打印耗时），以及它的语言；
LESSON.clock() 是挂钟秒数（REPL 的单调时钟；REPL 之外是 os.clock），用来计时；say 按课程的语言打印字符串
并折行。tr{en=..., zh=...} 返回课程语言的那个字符串（或表）：课程代码打印的每个标签、标题或格式都用它，这样
中文课程就不会打印英文标签；只由字面量构成的 tr{} 会在步骤回显和运行之前就解析掉，学生只读到一种语言。
LESSON.table(rows, header) 打印对齐的列，LESSON.versus(name, printed, value) 把教程印的数和真实的数并排
给出，LESSON.describe(name, t) 给出张量的形状、步长、偏移和是否连续，LESSON.median_ms(fn) 先预热一次，
再取 5 次计时的中位数，LESSON.scratch(".npz") 给出 /tmp 里一个专用的路径，供某一步写入再读回，程序退出时
连同预留的名字一起删除。解析后的代码应当不超过 76 列，这样在 80 列宽时回显不会折行。批处理模式下 plot.*
不开窗口，而是打印一行说明 '[plot: heatmap "title" 3×3]'（热力图还会用 mha.heat 画出来）。]]

-- The lesson runner's commands
D[":open"] = [[
打开一课，从第 1 步开始、用它的种子，语言依次取 --lang（或上一次 :lang）、MHA_LANG、LANG（zh* 表示中文），
否则为英文。:lang en|zh 切换正在打开的课程，用新语言说明一声，并用它重新显示当前步骤；:text 重新显示当前
步骤而不运行它。路径（含 '/' 或以 .lua 结尾）打开那个课程文件。--answers FILE 用 FILE 的各行回答练习，每次
尝试一个 Lua 表达式（批处理模式）。加 --batch 时，或不在终端里时，每一步都一口气运行下去，练习由它们自己的
答案作答，进程以 0 退出（有步骤失败时为 1）；文字按 $COLUMNS（否则 80）折行，所以记录从不依赖终端。
名字可以只写一课名字的开头（:open flash）；名字或编号不是课程时报错，并列出现有的课程，或名字以它开头的那
几课。]]
D[":lessons"] = [[
列出所有课程，带编号和一句话简介。课程从 $MHA_LESSONS 的每个目录（用 ':' 分隔）读取，然后是 ./lessons，或
程序所在目录旁的 lessons/；同名文件以先找到的为准。]]
D[":next"] = [[
显示并运行下一步。你在提示符下改过的变量照原样使用：课程从你的状态接着往下走。]]
D[":back"] = [[
:goto K 从本课的种子开始安静地重放第 1..K-1 步，再显示第 K 步，所以不论你改过什么，状态都是第 K 步所期望的；
:back 就是 :goto 到上一步（在课程末尾则回到最后一步），:restart 就是 :goto 1，:run 运行剩下的所有步骤。在你的
状态上运行失败的步骤保持未运行，并会说明：:goto K（K 是那一步）重建状态并运行它。]]

-- Attention as language models run it (docs/modern.md)
D["mha.rope"] = [[
旋转位置编码（RoPE）：把 x (..., L, D)（D 为偶数）的每一对特征转过一个随位置增长的角度，所以 rope 之后的
q·k 只取决于两个位置相距多远。第 l 行位于位置 offset + l（从 0 数；offset 就是 KV 缓存的长度）。layout 为
"half" 时特征 i 与 i + D/2 成对（GPT-NeoX、Hugging Face 的 LLaMA，即 rotate_half）；为 "interleaved" 时 2i 与
2i+1 成对（RoFormer、GPT-J、Meta 的 LLaMA）：同样的权重用错了布局，结果就是乱码。base 默认 10000。角度用
double 计算、只舍入一次；自动求导把梯度反向转回去。]]
D["mha.alibi_slopes"] = [[
ALiBi 给 H 个头各自的斜率（Press 等人）：一个等比数列，让不同的头看近处和远处。H 是 2 的幂时斜率为
2^(-8h/H)；否则先取不超过 H 的最大 2 的幂 n 的斜率，再隔一个取 2n 的斜率，和官方的 get_slopes 一样。]]
D["mha.alibi_bias"] = [[
(H, L, S) 的 ALiBi 偏置，加到分数上，代替位置编码：每个头按键到查询的距离乘以本头的斜率来惩罚这个键。
L 个查询是 S 个位置中的最后 L 个（S 默认等于 L），就像从 KV 缓存解码时那样。]]
D["mha.sliding_window_mask"] = [[
宽为 W 的滑动窗口加注意力汇聚点（sinks）的 (L, S) bool 掩码：每个查询看到自己、它之前的 W - 1 个键和最前面
sinks 个键（StreamingLLM 保留它们），从不看未来。true 表示“不允许看”，和 mha.causal_mask 一样；L 个查询是
S 个位置中的最后 L 个。W >= S 时就是因果掩码。]]
D["mha.sample"] = [[
从 logits (..., V)（最后一维是词表）中抽出下一个词元：从 1 开始的下标；logits 为 (V) 时是一个 Lua 整数，否则是
每行一个下标的张量。temperature 去除 logits（为 0 时取第一个最大值，不抽随机数）；top_k 只保留概率最大的 k 个
词元；top_p 保留概率之和达到 top_p 的最少的高概率词元（核采样），再重新归一化。随机数来自 mha.seed 的生成器，
每行一个；seed = s 即先调用 mha.seed(s)。]]

-- Real text (docs/training.md, "Real text")
D["mha.data.text"] = [[
一段来自 Debian 软件包的真实文本，一个 UTF-8 字符串，清理成读者眼中的正文：kjv 是英王钦定本圣经
（bible-kjv），一节一行、去掉节号，章与章之间空一行，没有书名和章名；tang300、song100 和 chinese 是唐诗
三百首、宋词一百首和一个更大的合集（fortunes-zh），每篇是标题、作者和诗句，两篇之间空一行，去掉颜色
代码和 fortune 的分隔符。缺少软件包时报错，说出包名和安装它的 tools/deps.sh text。]]
D["mha.data.split"] = [[
在字符边界上把文本 text 切成两段：最后 floor(val * 字符数) 个字符是验证文本，永远是同样的那些，所以在它上面
的每个损失都能复现。]]
D["mha.tokenizer.CharTokenizer"] = [[
每个 Unicode 字符一个词元（一个汉字就是一个词元）。text 里的每个字符按码位顺序得到编号 1 .. tok.vocab_size；
tok.chars[id] 是字符，tok.ids[char] 是它的编号。encode 给出编号组成的 float32 (L) 张量；不认识的字符会报错，
除非给了 unknown = id。tok:codepoints() 是码位组成的 (V) 张量（float32，小于 2^24 时是精确的），模型的 .npz
把它存成 tokenizer.codepoints；mha.tokenizer.from_codepoints(cp) 由它重建同一个分词器。（mha.text 是 REPL
的文本换行模块，所以分词器放在 mha.tokenizer 里。）mask = "[MASK]" 为遮盖模型加一个标记：多一个编号，
即最后一个（tok.mask_id），名字是 tok.mask_token；encode 把字符串里的标记读成这一个词元，检查点把它存成
tokenizer.mask。]]
D["mha.tasks.text"] = [[
在真实文本上训练预测下一个字符：每行是文本中随机位置（带种子）的 len 个字符的窗口，targets 是同一个窗口
往后挪一个字符，每个位置都计入。tokenizer 默认是 mha.tokenizer.CharTokenizer(text)；task.vocab 是它的
vocab_size。它像玩具任务一样交给 mha.train；val = 验证文本 时报告在它上面的损失。]]
D["mha.tasks.masked"] = [[
给 causal = false 的模型做遮盖字符训练，用 BERT 的规则：每个 len 个字符的窗口里选出 round(p*len) 个位置
（带种子）；选中的字 80% 换成分词器的遮盖编号，10% 换成随机的字，10% 不变。targets 在选中的位置是原来的字，
其余为 0（不计入）。分词器需要一个标记（CharTokenizer(text, {mask = "[MASK]"})，不给时就这样建一个）。
它交给 mha.train；val 给一个验证文本上的遮盖任务。]]
D["mha.fill_mask"] = [[
遮盖（causal = false）字符模型 model 用它的分词器 tokenizer 从两边补出 text 里的每个遮盖标记：每个标记一个列表，按在文本中的顺序
（result[1][1].token 是第一个标记的最佳猜测），各有 top_k 个候选字，按概率从高到低；标记本身从不当候选。
在提示符下结果打印成一张表。出错的情形：文本里没有标记、模型是因果的、文本比 max_len 长、分词器不认识的字。]]
D["mha.generate"] = [[
让字符模型 model 写字：先用 tokenizer 把 prompt 编码，然后每个新字符由 mha.sample 从最后一个位置的 logits 里抽出，再单独经过
KV 缓存喂回去；用满 max_len 个位置时，把后一半重新读进一个新缓存，接着写。seed 只设一次 mha.seed，所以同一个
种子在任意线程数下写出同样的文本。在终端或笔记本里（或 stream = true）每个字符一出来就打印，Ctrl-C
（笔记本里的中断）停下写作并返回
已写的部分（刚流式打印过的文字 REPL 不会再打印一遍；text = mha.generate(...) 把它存下）；调用它的循环
在下一轮停下，Ctrl-C 总能停下循环。返回 prompt 加上模型写的字。]]

-- The text between two lines of a paragraph: nothing between Chinese characters or beside Chinese
-- punctuation, a space where a Latin word, a name or a number meets the line break
-- ("容器" + "mha.nn").
local PUNCTUATION = "，。；：、（）“”—…《》？！"
local CHARACTER = "[%z\1-\127\194-\244][\128-\191]*"
local function joint(line, next_line)
    local last, first = line:match(CHARACTER .. "$"), next_line:match("^" .. CHARACTER)
    if not last or not first or (#last > 1 and #first > 1) then return "" end
    if PUNCTUATION:find(last, 1, true) or PUNCTUATION:find(first, 1, true) then return "" end
    return " "
end

-- A text written over several lines as one paragraph per blank-line-separated block.
local function paragraphs(text)
    local out = {}
    for block in (text:gsub("^\n+", "") .. "\n\n"):gmatch("(.-)\n\n+") do
        local joined
        for line in block:gmatch("[^\n]+") do
            joined = joined and (joined .. joint(joined, line) .. line) or line
        end
        out[#out + 1] = joined
    end
    return table.concat(out, "\n\n")
end

-- the explanations lua/help/zh_text.lua holds: new entries, and sentences that end others
local text_help = require "mha.help.zh_text"
for name, text in pairs(text_help.new) do D[name] = text end
for name, text in pairs(text_help.more) do D[name] = D[name] .. "\n" .. text end

zh.docs = {}
for name, text in pairs(D) do zh.docs[name] = paragraphs(text) end

return zh
