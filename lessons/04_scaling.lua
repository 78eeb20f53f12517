-- lessons/04_scaling.lua - why the scores are divided by √d_k: measure the variance of q·k against d_k,
-- plot it, and watch softmax saturate (and its gradient vanish) without the scaling.
return lesson{
    name = "scaling", seed = 4,
    title = {en = "Scaling by √d_k", zh = "除以 √d_k 的缩放"},
    summary = {en = "var(q·k) grows like d_k; without 1/√d_k softmax saturates and its gradients vanish",
               zh = "var(q·k) 随 d_k 增长；不除以 √d_k，softmax 会饱和、梯度消失"},

    step{
        title = {en = "Measure var(q·k)", zh = "测量 var(q·k)"},
        text = {
            en = [[
Suppose the entries of q and k are independent with mean 0 and variance 1 (what initialisation and
layer norm aim for). Then q·k = Σ_i q_i·k_i is a sum of d_k terms of variance 1, so

    var(q·k) = d_k        and        var(q·k / √d_k) = 1

Let us measure it: 4000 random pairs for each d_k.]],
            zh = [[
假设 q 和 k 的各分量相互独立、均值为 0、方差为 1（初始化和层归一化追求的正是这种状态）。那么
q·k = Σ_i q_i·k_i 是 d_k 个方差为 1 的项之和，所以

    var(q·k) = d_k        而        var(q·k / √d_k) = 1

我们来测量：每个 d_k 取 4000 对随机向量。]],
        },
        code = [[
dims, raw_var, scaled_var = {4, 16, 64, 256}, {}, {}
for i, d_k in ipairs(dims) do
    local q, k = mha.randn{4000, d_k}, mha.randn{4000, d_k}
    local dots = (q * k):sum(2)
    raw_var[i] = dots:var(1):item()
    scaled_var[i] = (dots / math.sqrt(d_k)):var(1):item()
    print(string.format(
        "d_k = %3d   var(q·k) = %8.2f   var(q·k/√d_k) = %5.3f",
        d_k, raw_var[i], scaled_var[i]))
end]],
    },

    step{
        title = {en = "The plot", zh = "画出来"},
        text = {
            en = [[
On log-log axes var(q·k) is a line of slope 1 (it equals d_k), while the scaled variance stays flat at 1.
tests/check_seeds.py repeats this measurement independently with NumPy.]],
            zh = [[
在双对数坐标上，var(q·k) 是一条斜率为 1 的直线（它等于 d_k），而缩放后的方差一直平稳在 1。
tests/check_seeds.py 用 NumPy 独立重复了这个测量。]],
        },
        code = [[
plot.line{
    {x = dims, y = raw_var, title = "var(q·k)"},
    {x = dims, y = scaled_var, title = "var(q·k/√d_k)"},
    xlabel = "d_k", ylabel = tr{en = "variance", zh = "方差"},
    logx = true, logy = true,
    title = tr{en = "scores grow with d_k", zh = "分数随 d_k 增大"},
}]],
    },

    step{
        title = {en = "Softmax without the scaling", zh = "不缩放时的 softmax"},
        text = {
            en = [[
With d_k = 256 the raw scores have standard deviation √256 = 16. Softmax of numbers that far apart is
almost one-hot: one weight near 1, the rest near 0. The layer copies one value instead of mixing, and
stops learning, because the gradient of softmax is

    ∂w_i/∂s_j = w_i·(δ_ij − w_j)

near 0 when every w is near 0 or 1. That is the reason for 1/√d_k: scores at variance 1 do not
*saturate* softmax, and its gradients do not *vanish*.]],
            zh = [[
d_k = 256 时原始分数的标准差是 √256 = 16。对相差如此之大的数做 softmax，结果几乎是 one-hot：一个权重接近 1，
其余接近 0。这一层于是只复制一个值而不再混合，并且学不动了，因为 softmax 的梯度是

    ∂w_i/∂s_j = w_i·(δ_ij − w_j)

当每个 w 都接近 0 或 1 时，它接近 0（最后打印的是最大的 w_i·(1 − w_i)）。这就是除以 √d_k 的原因：
方差为 1 的分数不会让 softmax *饱和*，梯度也不会*消失*。]],
        },
        code = [[
tokens = {"k1", "k2", "k3", "k4", "k5", "k6"}
q, K = mha.randn{1, 256}, mha.randn{6, 256}
scores = q:matmul(K:transpose(1, 2))
show(scores, {cols = tokens, precision = 3,
    title = tr{en = "raw scores q·kᵀ (d_k = 256)", zh = "原始分数 q·kᵀ（d_k = 256）"}})
unscaled = mha.softmax(scores, 2)
scaled = mha.softmax(scores / math.sqrt(256), 2)
show(unscaled, {cols = tokens, precision = 3,
    title = tr{en = "softmax(q·kᵀ): nearly one-hot", zh = "softmax(q·kᵀ)：几乎是 one-hot"}})
show(scaled, {cols = tokens, title = tr{en = "softmax(q·kᵀ/√d_k): a real mix", zh = "softmax(q·kᵀ/√d_k)：真正的混合"}})
gradient = function(w) return (w * (1 - w)):max():item() end
print(string.format(tr{en = "max w(1-w): unscaled %.2e   scaled %.4f",
                       zh = "最大 w(1-w)：未缩放 %.2e   缩放后 %.4f"},
    gradient(unscaled), gradient(scaled)))]],
    },

    step{
        title = {en = "What the tutorials say about it", zh = "教程怎么说"},
        text = {
            en = [[
“Transformer大模型实战 多头注意力层” says the scaling keeps large dot products from making softmax's
gradient small: right. “BERT模型中的多头注意力机制解读” says it prevents softmax's output "approaching
0", and “多头自注意力模块” says it prevents *gradient explosion*. Both miss the point shown above:
without the scaling the outputs go to 0 *and 1*, and the gradients become tiny, they vanish, they do
not explode. Scaling also does not "prevent large values" in general: it divides by exactly the factor
that brings var(q·k) back to 1.]],
            zh = [[
《Transformer大模型实战 多头注意力层》说缩放是为了防止点积过大使 softmax 的梯度变小：这是对的。
《BERT模型中的多头注意力机制解读》说它防止 softmax 输出“趋近于 0”，《多头自注意力模块》说它避免
*梯度爆炸*。两者都没说到要点：如上所示，不缩放时输出趋向 0 *和 1*，梯度变得极小——是梯度消失，而不是爆炸。
缩放也不是笼统地“防止数值过大”：它恰好除以使 var(q·k) 回到 1 的那个因子。]],
        },
        code = [[
rows = {}
for _, d_k in ipairs({4, 64, 1024}) do
    local s = mha.randn{1, 8} * math.sqrt(d_k)   -- tr{en = "var(s) = d_k, as for q·k", zh = "var(s) = d_k，如同 q·k"}
    local unscaled = mha.softmax(s, 2):max():item()
    local scaled = mha.softmax(s / math.sqrt(d_k), 2):max():item()
    rows[#rows + 1] = {d_k, unscaled, scaled}
end
LESSON.table(rows, tr{en = {"d_k", "largest weight, unscaled", "scaled"},
                      zh = {"d_k", "最大权重（未缩放）", "缩放后"}})]],
    },

    exercise{
        title = {en = "The scale of BERT-base", zh = "BERT-base 的缩放因子"},
        prompt = {
            en = [[
BERT-base has d_model = 768 and h = 12 heads. By what number are its attention scores
multiplied before the softmax? answer(number)]],
            zh = [[
BERT-base 的 d_model = 768，头数 h = 12。它的注意力分数在 softmax 之前乘以多少？
answer(数值)]],
        },
        solution = [[1 / math.sqrt(768 / 12)]],
        mistakes = {
            mistake{wrong = [[1 / math.sqrt(768)]],
                hint = {en = "you scaled by √d_model; each head's queries have d_k = d_model/h = 64 entries, so the scale is 1/√d_k",
                        zh = "你用的是 √d_model；每个头的查询长度是 d_k = d_model/h = 64，所以缩放因子是 1/√d_k"}},
            mistake{wrong = [[math.sqrt(768 / 12)]],
                hint = {en = "the scores are DIVIDED by √d_k: the factor is 1/√64", zh = "分数是*除以* √d_k：因子是 1/√64"}},
            mistake{wrong = [[1 / (768 / 12)]],
                hint = {en = "that is 1/d_k; the variance is d_k, so the standard deviation to divide by is √d_k",
                        zh = "那是 1/d_k；方差是 d_k，要除以的是标准差 √d_k"}},
        },
    },
}
