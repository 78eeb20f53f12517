-- lessons/09_cost.lua - what multi-head attention costs: count the multiply-adds of one head against h
-- heads (the claim of the notes “多头注意力”), where the L² term comes from, memory of the weights, and live timings.
return lesson{
    name = "cost", seed = 9,
    title = {en = "What attention costs", zh = "注意力的计算代价"},
    summary = {en = "FLOPs of one head vs h heads, the L² term, memory; timed live",
               zh = "单头与多头的运算量、L² 项、内存；现场计时"},

    step{
        title = {en = "Count the multiply-adds", zh = "数一数乘加次数"},
        text = {
            en = [[
Self-attention on L tokens of width E, with h heads of D = E/h features, does:

    projections     Q, K, V: 3 × (L×E)·(E×E)    3·L·E²
    scores          per head (L×D)·(D×L)        h·L²·D = L²·E
    weighted sum    per head (L×L)·(L×D)        h·L²·D = L²·E
    output W^O      (L×E)·(E×E)                 L·E²

The number of heads h cancels everywhere: h heads of D = E/h features do exactly the multiply-adds of
one head of E features. Only the softmax sees h: it exponentiates h·L² scores instead of L².]],
            zh = [[
在 L 个宽度为 E 的词元上，h 个头、每头 D = E/h 个特征的一层自注意力要做：

    投影            Q、K、V：3 × (L×E)·(E×E)    3·L·E²
    分数            每头 (L×D)·(D×L)            h·L²·D = L²·E
    加权和          每头 (L×L)·(L×D)            h·L²·D = L²·E
    输出 W^O        (L×E)·(E×E)                 L·E²

头数 h 处处约掉了：h 个 E/h 维的头所做的乘加次数与一个 E 维的头完全相同。只有 softmax 与 h 有关：它要对
h·L² 个分数取指数，而不是 L² 个。]],
        },
        code = [[
macs = function(L, E, h)
    local D = E // h
    return {projections = 3 * L * E * E, scores = h * L * L * D,
            weighted_sum = h * L * L * D, output = L * E * E,
            softmax_exps = h * L * L}
end
rows = {}
for _, L in ipairs({10, 128, 1024}) do
    for _, h in ipairs({1, 8}) do
        local c = macs(L, 512, h)
        local total = c.projections + c.scores + c.weighted_sum + c.output
        rows[#rows + 1] = {L, h, c.projections, c.scores, c.weighted_sum,
                           c.output, total, c.softmax_exps}
    end
end
LESSON.table(rows, tr{en = {"L", "h", "projections", "scores", "weighted sum",
                            "output", "total", "exps"},
                      zh = {"L", "h", "投影", "分数", "加权和", "输出",
                            "合计", "exp 次数"}})]],
    },

    step{
        title = {en = "A miscount in the notes", zh = "笔记里的错误计数"},
        text = {
            en = [[
The notes “多头注意力” say one head computes "one 512×512 matrix operation" and 8 heads "eight 64×64 ones", and
conclude they cost about the same. The conclusion is right (the table above shows exactly equal
multiply-adds) but the count is not: 8·64·64 = 32768 is one eighth of 512·512 = 262144, so taken
literally the multi-head version would be 8 times cheaper. What is actually multiplied: the
projections are full (L×512)·(512×512) products in both cases (each head's 64 columns read all 512
input features), and each head's scores are (L×64)·(64×L), whose 8 copies add up to the single head's
(L×512)·(512×L). A head that only saw 64 of the 512 input features (a block-diagonal W^Q) would indeed
cost 1/8, and would be a weaker, different model.]],
            zh = [[
学习笔记《多头注意力》说单头算“1 次 512×512 的矩阵运算”，8 头算“8 次 64×64 的矩阵运算”，并据此断言二者计算量持平。
结论是对的（上表的乘加次数完全相等），计数却不对：8·64·64 = 32768 只有 512·512 = 262144 的八分之一，
照字面理解多头反而便宜 8 倍。实际相乘的是：两种情况下投影都是完整的 (L×512)·(512×512) 乘法（每个头的
64 列读取全部 512 个输入特征）；每个头的分数是 (L×64)·(64×L)，8 份加起来正好等于单头的 (L×512)·(512×L)。
只看 512 个输入特征中 64 个的头（分块对角的 W^Q）确实只要 1/8 的计算，但那是一个更弱的、不同的模型。]],
        },
        code = [[
print(string.format("512·512 = %d   8·64·64 = %d", 512 * 512, 8 * 64 * 64))
one, eight = macs(128, 512, 1), macs(128, 512, 8)
LESSON.table({{tr{en = "1 head: (128×512)·(512×128)", zh = "1 个头：(128×512)·(512×128)"}, one.scores},
              {tr{en = "8 heads: 8·(128×64)·(64×128)", zh = "8 个头：8·(128×64)·(64×128)"}, eight.scores}},
             tr{en = {"scores, L = 128", "multiply-adds"}, zh = {"分数，L = 128", "乘加次数"}})]],
    },

    step{
        title = {en = "The L² term and memory", zh = "L² 项与内存"},
        text = {
            en = [[
The projections grow like L, the scores and weighted sums like L². Past L ≈ 2E (here 1024 for E = 512)
the L² terms dominate: this is the cost “BERT模型中的多头注意力机制解读” calls the challenge of long sequences. Memory behaves
the same way: the weights tensor holds h·L² floats, and there h *does* count, 8 heads store 8 times the
L×L matrix of one head (unless the kernel never forms it: mha's fused path when need_weights = false).]],
            zh = [[
投影随 L 线性增长，分数和加权和随 L² 增长。L 超过约 2E（E = 512 时为 1024）后 L² 项占主导：这就是《BERT模型中的多头注意力机制解读》
所说长序列的计算开销。内存也是一样：权重张量有 h·L² 个浮点数，这里 h *确实*起作用，8 个头要存
单头 8 倍大的 L×L 矩阵（除非内核根本不形成它：need_weights = false 时 mha 走融合路径）。]],
        },
        code = [[
lengths, linear_part, square_part, rows = {}, {}, {}, {}
for i, L in ipairs({64, 128, 256, 512, 1024, 2048, 4096}) do
    local c = macs(L, 512, 8)
    lengths[i] = L
    linear_part[i] = (c.projections + c.output) / 1e6
    square_part[i] = (c.scores + c.weighted_sum) / 1e6
    rows[i] = {L, linear_part[i], square_part[i], 8 * L * L * 4 / 2^20}
end
LESSON.table(rows, tr{en = {"L", "projections (M)", "scores + sums (M)",
                            "weights (MiB)"},
                      zh = {"L", "投影（百万）", "分数 + 加权和（百万）",
                            "权重（MiB）"}}, "%.1f")
plot.line{
    {x = lengths, y = linear_part, title = tr{en = "projections", zh = "投影"}},
    {x = lengths, y = square_part, title = tr{en = "scores + weighted sums", zh = "分数 + 加权和"}},
    xlabel = "L", ylabel = tr{en = "millions of multiply-adds", zh = "百万次乘加"},
    logx = true, logy = true,
    title = tr{en = "cost against sequence length", zh = "计算量随序列长度的变化"},
}]],
    },

    step{
        title = {en = "Timing it live", zh = "现场计时"},
        text = {
            en = [[
At the prompt this step times the forward pass of a 512-wide layer with 1 and with 8 heads at a few
lengths, and plots time against L. The first run of anything is slow (memory is touched for the first
time, caches are cold), so each length gets one untimed warm-up run, then the median of 5 timed runs.
Times differ from machine to machine and run to run, so a batch replay prints only the counts above.]],
            zh = [[
在交互提示符下，这一步会对 512 宽的层分别用 1 个头和 8 个头、在几个长度上为前向计算计时，
并画出时间随 L 的变化。任何计算第一次运行都偏慢（内存第一次被访问、缓存是冷的），所以每个长度先不计时地
预热一次，再取 5 次计时的中位数。时间因机器、因每次运行而异，所以批处理重放只打印上面的计数。]],
        },
        code = [[
if LESSON.batch then
    print(tr{en = "(batch mode: no timings)", zh = "（批处理模式：不计时）"})
else
    timed_lengths, times = {64, 128, 256, 512}, {[1] = {}, [8] = {}}
    for _, h in ipairs({1, 8}) do
        local layer = mha.MultiheadAttention{embed_dim = 512, num_heads = h}
        for i, L in ipairs(timed_lengths) do
            local x = mha.randn{L, 512}
            local forward = function() layer:forward(x, x, x) end
            times[h][i] = LESSON.median_ms(forward)
            print(string.format("h = %d  L = %4d  %8.2f ms", h, L,
                times[h][i]))
        end
    end
    plot.line{{x = timed_lengths, y = times[1], title = "h = 1"},
              {x = timed_lengths, y = times[8], title = "h = 8"},
              xlabel = "L", ylabel = "ms",
              title = tr{en = "forward time (median of 5)", zh = "前向计算时间（5 次的中位数）"}}
end]],
    },

    exercise{
        title = {en = "Count the scores", zh = "数一数分数的乘加"},
        prompt = {
            en = [[
How many multiply-adds do the attention scores Q·Kᵀ of all heads take for L = 100 tokens, E = 512,
h = 8 heads? answer(number)]],
            zh = [[
L = 100 个词元、E = 512、h = 8 个头时，所有头的注意力分数 Q·Kᵀ 共需多少次乘加？answer(数值)]],
        },
        solution = [[8 * 100 * 100 * (512 // 8)]],
        atol = 0.5,
        mistakes = {
            mistake{wrong = [[8 * 100 * 100 * 512]],
                hint = {en = "each head's dot products have D = E/h = 64 terms, not 512", zh = "每个头的点积只有 D = E/h = 64 项，不是 512"}},
            mistake{wrong = [[100 * 100 * 64]],
                hint = {en = "that is one head; there are 8", zh = "那只是一个头；一共有 8 个"}},
            mistake{wrong = [[8 * 64 * 64]],
                hint = {en = "that is the notes' count; the scores are (L×D)·(D×L) per head, so L·L·D each",
                        zh = "那是学习笔记《多头注意力》的计数；每个头的分数是 (L×D)·(D×L)，各需 L·L·D 次"}},
        },
    },
}
