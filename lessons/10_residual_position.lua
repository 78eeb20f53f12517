-- lessons/10_residual_position.lua - around the attention layer: the residual connection and layer norm
-- (and a tutorial's code comment that claims them), and sinusoidal positional encoding, plotted.
return lesson{
    name = "residual_position", seed = 10,
    title = {en = "Residual, layer norm, positions", zh = "残差、层归一化与位置编码"},
    summary = {en = "x + Attention(x), layer norm, and sinusoidal positional encoding",
               zh = "x + Attention(x)、层归一化，以及正弦位置编码"},

    step{
        title = {en = "The residual connection", zh = "残差连接"},
        text = {
            en = [[
A Transformer block does not replace x by Attention(x); it adds: y = x + Attention(x). The layer only
has to learn a *correction*, and the gradient has a direct path through the "+ x" (this is what eases
training of deep stacks). Then layer norm rescales each token's row to mean 0 and variance 1 and
applies a learned gain γ and bias β:

    LayerNorm(y) = (y − mean(y)) / √(var(y) + ε) · γ + β
                   (per token, over its E features)]],
            zh = [[
Transformer 块不是用 Attention(x) 替换 x，而是相加：y = x + Attention(x)。这一层只需学一个*修正量*，
梯度也有一条经过 "+ x" 的直通路径（这正是深层堆叠容易训练的原因）。然后层归一化把每个词元的行缩放到
均值 0、方差 1，再乘以学到的增益 γ、加上偏置 β：

    LayerNorm(y) = (y − mean(y)) / √(var(y) + ε) · γ + β
                   （对每个词元，在它的 E 个特征上）]],
        },
        code = [[
tokens = {"a", "b", "c", "d"}
layer = mha.MultiheadAttention{embed_dim = 8, num_heads = 2}
x = mha.randn{4, 8} * 3 + 1
attended = layer:forward(x, x, x)
y = x + attended
normed = mha.layer_norm(y, {8})   -- tr{en = "over the last dim, E = 8 (γ = 1, β = 0)", zh = "在最后一维上，E = 8（γ = 1，β = 0）"}
show(normed, {rows = tokens, title = "LayerNorm(x + Attention(x))"})
-- tr{en = "the means are 0 up to rounding (about 1e-8, different on every CPU)", zh = "均值在舍入误差范围内为 0（约 1e-8，在每种 CPU 上都不同）"}
local worst = normed:mean(2):abs():max():item()
print(tr{en = "mean per token: max |mean| < 1e-6:",
         zh = "每个词元的均值：max |均值| < 1e-6："},
    worst < 1e-6)
show(normed:var(2, false, 0), {cols = tokens,
    title = tr{en = "variance per token", zh = "每个词元的方差"}})]],
    },

    step{
        title = {en = "What a tutorial's code does", zh = "一篇教程的代码做了什么"},
        text = {
            en = [[
The code of “Transformer大模型实战 多头注意力层” puts the comment "residual connection and layer norm" over output = out_linear(...),
which is only the output projection W^O: there is no "+ x" and no normalisation in it. Its output has
neither property above; the residual and the norm belong to the Transformer block around the layer.]],
            zh = [[
《Transformer大模型实战 多头注意力层》的代码在 output = out_linear(...) 上方写了注释“残差连接和层归一化”，而那只是输出投影 W^O：
其中既没有 "+ x"，也没有归一化。它的输出不具有上面的任何一个性质；残差和归一化属于包在这一层外面的
Transformer 块。]],
        },
        code = [[
show(attended:mean(2), {cols = tokens, title = tr{en = "out_linear output: means", zh = "out_linear 输出：均值"}})
show(attended:var(2, false, 0), {cols = tokens,
    title = tr{en = "out_linear output: variances", zh = "out_linear 输出：方差"}})
print(string.format(tr{
    en = "max |out_linear(...) - LayerNorm(x + it)| = %.4f",
    zh = "max |out_linear(...) - LayerNorm(x + 它)| = %.4f"},
    (attended - normed):abs():max():item()))]],
    },

    step{
        title = {en = "Attention does not see order", zh = "注意力看不到顺序"},
        text = {
            en = [[
Attention compares every query with every key; nothing in it knows which token came first. Permute
the tokens and the outputs are permuted the same way, nothing else changes: "dog bites man" and
"man bites dog" get the same vectors. Order has to be put into the inputs.]],
            zh = [[
注意力把每个查询与每个键比较；其中没有任何东西知道哪个词元在前。把词元重新排列，输出也以同样方式重新
排列，别的什么都不变：“狗咬人”与“人咬狗”得到相同的向量。顺序必须加到输入里去。]],
        },
        code = [[
order = {3, 1, 4, 2}
permuted = mha.stack({x:select(1, 3), x:select(1, 1),
                      x:select(1, 4), x:select(1, 2)}, 1)
out_permuted = layer:forward(permuted, permuted, permuted)
expected = mha.stack({attended:select(1, 3), attended:select(1, 1),
                      attended:select(1, 4), attended:select(1, 2)}, 1)
print(tr{en = "max |Attention(permuted x) - permuted Attention(x)| < 1e-5:",
         zh = "max |Attention(置换的 x) - 置换的 Attention(x)| < 1e-5："},
    (out_permuted - expected):abs():max():item() < 1e-5)]],
    },

    step{
        title = {en = "Sinusoidal positional encoding", zh = "正弦位置编码"},
        text = {
            en = [[
The original Transformer adds to token p the vector

    PE[p, 2i]   = sin(p / 10000^(2i/E))
    PE[p, 2i+1] = cos(p / 10000^(2i/E))

Each pair of columns is a clock at its own frequency, from one turn every 2π tokens (i = 0) to very
slow ones. Every position gets a distinct pattern, and PE[p + k] is a fixed rotation of PE[p], so
"k tokens later" looks the same everywhere.]],
            zh = [[
原始的 Transformer 给第 p 个词元加上向量

    PE[p, 2i]   = sin(p / 10000^(2i/E))
    PE[p, 2i+1] = cos(p / 10000^(2i/E))

每对列是一个以自己频率转动的时钟，从每 2π 个词元转一圈（i = 0）到非常慢的时钟。每个位置都有不同的模式，
并且 PE[p + k] 是 PE[p] 的一个固定旋转，所以“k 个词元之后”在任何位置看起来都一样。]],
        },
        code = [[
pe = mha.positional_encoding(16, 8)
show(pe:narrow(1, 1, 4), {sci_mode = false,
    title = tr{en = "PE rows 1-4 (positions 0-3)", zh = "PE 第 1-4 行（位置 0-3）"}})]],
    },

    step{
        title = {en = "Every position its own pattern", zh = "每个位置一个模式"},
        text = {
            en = [[
Drawn for 16 positions, the clocks are visible: the first pair of columns turns fast, the last pair
hardly moves. PE·PEᵀ compares positions: its entry (p, q) depends only on the distance |p − q|, which
is what lets attention learn "the token k places back" once for every position.]],
            zh = [[
画出 16 个位置，时钟就看得见了：第一对列转得快，最后一对列几乎不动。PE·PEᵀ 比较两个位置：它的 (p, q)
元素只取决于距离 |p − q|，所以注意力学会“往回数第 k 个词元”一次，就对每个位置都适用。]],
        },
        code = [[
plot.heatmap(pe, {title = tr{en = "positional encoding (16 positions × 8)",
                             zh = "位置编码（16 个位置 × 8）"}})
similarity = pe:matmul(pe:transpose(1, 2))
show(similarity:narrow(1, 1, 4):narrow(2, 1, 8),
    {title = tr{en = "PE·PEᵀ: depends on distance", zh = "PE·PEᵀ：取决于距离"}})]],
    },

    exercise{
        title = {en = "One encoding by hand", zh = "手算一个编码"},
        prompt = {
            en = [[
With E = 8, compute PE for position p = 3 (the 4th row) by the formula, as a list or tensor of 8
numbers, and answer with it. (Lua: math.sin, math.cos, 10000^(2*i/8).)]],
            zh = [[
E = 8 时，按公式算出位置 p = 3（第 4 行）的 PE，8 个数的列表或张量，并作答。
（Lua：math.sin、math.cos、10000^(2*i/8)。）]],
        },
        solution = [[pe:select(1, 4)]],
        mistakes = {
            mistake{wrong = [[pe:select(1, 3)]],
                hint = {en = "that is position 2: positions start at 0, so p = 3 is row 4",
                        zh = "那是位置 2：位置从 0 开始，所以 p = 3 是第 4 行"}},
        },
    },
}
