-- lessons/12_textbook_check.lua - seed 000 §4's worked example recomputed step by step, every printed
-- number set beside the true one and every disagreement explained; the seeds' misconceptions each shown
-- wrong by a computation. The true values are also computed independently by tests/check_seeds.py.
return lesson{
    name = "textbook_check", seed = 12,
    title = {en = "Checking a textbook", zh = "核对一本教材"},
    summary = {en = "seed 000 §4 recomputed number by number; the seeds' misconceptions tested",
               zh = "逐个数字重算种子文档 000 第 4 节；检验种子文档中的误解"},

    step{
        title = {en = "§4.1: one query, one key", zh = "第 4.1 节：一个查询，一个键"},
        text = {
            en = [[
Seed 000 §4.1 takes q = [0.1, 0.2, 0.3], k = [0.4, 0.5, 0.6], v = [1, 2, 3] and writes
score = (0.1×0.4 + 0.2×0.5 + 0.3×0.6)/√3 ≈ 0.2598. Its own expression is 0.32/√3 = 0.1848: the printed
value is wrong. The rest is right: with a single key, softmax of one number is exp(s)/exp(s) = 1,
whatever s is, and the output is v itself. (One key is also why this example cannot show what
attention does: there is nothing to choose between.)]],
            zh = [[
种子文档 000 第 4.1 节取 q = [0.1, 0.2, 0.3]、k = [0.4, 0.5, 0.6]、v = [1, 2, 3]，并写出
score = (0.1×0.4 + 0.2×0.5 + 0.3×0.6)/√3 ≈ 0.2598。它自己的算式等于 0.32/√3 = 0.1848：印出的数是错的。
其余部分正确：只有一个键时，一个数的 softmax 是 exp(s)/exp(s) = 1，与 s 无关，输出就是 v 本身。
（只有一个键也正是这个例子无法说明注意力作用的原因：没有可供选择的东西。）]],
        },
        code = [[
checked = {}
compare = function(name, seed_says, value)
    checked[name] = value
    local got = mha.is_tensor(value) and value:reshape(-1):totable()
                or {value}
    local g = {}
    for i, v in ipairs(got) do g[i] = string.format("%.4f", v) end
    local seed = string.format(tr{en = "%-10s seed: %-26s",
                                  zh = "%-10s 种子：%-26s"},
        name, tr(seed_says))
    local truth = string.format(tr{en = "true: %s", zh = "实际：%s"},
        table.concat(g, ", "))
    -- too wide for one line of 80: the true values go under the seed's
    local width = require("mha.text").width
    if width(seed) + 1 + width(truth) > 80 then
        print(seed)
        seed = string.rep(" ", 11)
    end
    print(seed .. " " .. truth)
end
q = mha.tensor{{0.1, 0.2, 0.3}}
k = mha.tensor{{0.4, 0.5, 0.6}}
v = mha.tensor{{1.0, 2.0, 3.0}}
unprinted = {en = "(not printed)", zh = "（未打印）"}
compare("q_dot_k", unprinted, q:matmul(k:transpose(1, 2)):item())
score = q:matmul(k:transpose(1, 2)) / math.sqrt(3)
compare("score", "0.2598", score:item())
compare("alpha", "1.0", mha.softmax(score, 2):item())
compare("output", "[1.0, 2.0, 3.0]", mha.softmax(score, 2):matmul(v))]],
    },

    step{
        title = {en = "§4.2: the six projections", zh = "第 4.2 节：六个投影"},
        text = {
            en = [[
§4.2 takes x = [1, 2, 3], h = 2 heads, d_k = d_v = 2, d_model = 3, and six 3×2 matrices. Every one of
the six products it prints is wrong. For example x·W₁^Q = [1·0.1 + 2·0.3 + 3·0.5, 1·0.2 + 2·0.4 + 3·0.6]
= [2.2, 2.8], not [2.3, 3.5].]],
            zh = [[
第 4.2 节取 x = [1, 2, 3]、h = 2 个头、d_k = d_v = 2、d_model = 3，以及六个 3×2 矩阵。它印出的六个乘积
全部是错的。例如 x·W₁^Q = [1·0.1 + 2·0.3 + 3·0.5, 1·0.2 + 2·0.4 + 3·0.6] = [2.2, 2.8]，而不是 [2.3, 3.5]。]],
        },
        code = [[
x = mha.tensor{{1.0, 2.0, 3.0}}
W1Q = mha.tensor{{0.1, 0.2}, {0.3, 0.4}, {0.5, 0.6}}
W1K = mha.tensor{{0.7, 0.8}, {0.9, 1.0}, {1.1, 1.2}}
W1V = mha.tensor{{1.3, 1.4}, {1.5, 1.6}, {1.7, 1.8}}
W2Q = mha.tensor{{1.9, 2.0}, {2.1, 2.2}, {2.3, 2.4}}
W2K = mha.tensor{{2.5, 2.6}, {2.7, 2.8}, {2.9, 3.0}}
W2V = mha.tensor{{3.1, 3.2}, {3.3, 3.4}, {3.5, 3.6}}
Q1, K1, V1 = x:matmul(W1Q), x:matmul(W1K), x:matmul(W1V)
Q2, K2, V2 = x:matmul(W2Q), x:matmul(W2K), x:matmul(W2V)
compare("Q1", "[2.3, 3.5]", Q1)
compare("K1", "[6.6, 7.8]", K1)
compare("V1", "[10.9, 12.1]", V1)
compare("Q2", "[13.7, 14.3]", Q2)
compare("K2", "[17.1, 17.7]", K2)
compare("V2", "[20.5, 21.1]", V2)]],
    },

    step{
        title = {en = "§4.2: the heads", zh = "第 4.2 节：各个头"},
        text = {
            en = [[
With one token each head's score matrix is 1×1, its softmax is the 1×1 matrix (1), so head_i = V_i exactly. The
seed prints head₁ = [11.8, 13.2] although its own V₁ is [10.9, 12.1]: the document contradicts itself,
whatever the projections. (Head 2's scaled score is 318, its dot product 449.72: softmax of a single number is 1 even then.)]],
            zh = [[
只有一个词元时，每个头的分数矩阵是 1×1，softmax 是 1×1 的矩阵 (1)，因此 head_i 恰好等于 V_i。种子文档印出
head₁ = [11.8, 13.2]，而它自己的 V₁ 是 [10.9, 12.1]：不论投影算得对不对，文档都自相矛盾。
（头 2 缩放后的分数是 318，点积是 449.72：即便如此，单个数的 softmax 也是 1。）]],
        },
        code = [[
head1, weight1 = mha.scaled_dot_product_attention(Q1, K1, V1)
head2, weight2 = mha.scaled_dot_product_attention(Q2, K2, V2)
compare("score1", unprinted, Q1:matmul(K1:transpose(1, 2)) / math.sqrt(2))
compare("score2", unprinted, Q2:matmul(K2:transpose(1, 2)) / math.sqrt(2))
compare("weight1", unprinted, weight1)
compare("weight2", unprinted, weight2)
compare("head1", "[11.8, 13.2]", head1)
compare("head2", "[20.9, 21.5]", head2)
print("head1 == V1:", (head1 - V1):abs():max():item() == 0,
    "  head2 == V2:", (head2 - V2):abs():max():item() == 0)]],
    },

    step{
        title = {en = "§4.2: W^O has the wrong shape", zh = "第 4.2 节：W^O 的形状不对"},
        text = {
            en = [[
Concat(head₁, head₂) is 1×4. The seed prints W^O as 3×4, and a (1×4)·(3×4) product is not defined.
Its own definition says W^O ∈ ℝ^(h·d_v × d_model) = 4×3, so the matrix meant is the transpose of the
printed one. With it the result is [234.76, 258.92, 283.08], not [197.5, 208.7, 220.0]; and not even
the seed's own (wrong) heads give its result: they give [261.33, 288.29, 315.25].
Note also h·d_v = 4 ≠ d_model = 3: legal for the formula, but nn.MultiheadAttention (and the paper's
choice d_k = d_v = d_model/h) requires h·d_k = d_model.]],
            zh = [[
Concat(head₁, head₂) 是 1×4。种子文档印出的 W^O 是 3×4，而 (1×4)·(3×4) 的乘积没有定义。它自己的定义是
W^O ∈ ℝ^(h·d_v × d_model) = 4×3，所以应该用印出矩阵的转置。这样结果是 [234.76, 258.92, 283.08]，
而不是 [197.5, 208.7, 220.0]；就连文档自己（错误的）各头也算不出它的结果：它们给出 [261.33, 288.29, 315.25]。
另外注意 h·d_v = 4 ≠ d_model = 3：对公式而言合法，但 nn.MultiheadAttention（以及论文中 d_k = d_v =
d_model/h 的选择）要求 h·d_k = d_model。]],
        },
        code = [[
WO_printed = mha.tensor{{3.7, 3.8, 3.9, 4.0}, {4.1, 4.2, 4.3, 4.4},
                        {4.5, 4.6, 4.7, 4.8}}
concat = mha.cat({head1, head2}, 2)
compare("concat", "[11.8, 13.2, 20.9, 21.5]", concat)
print(select(2, pcall(function() return concat:matmul(WO_printed) end)))
WO = WO_printed:transpose(1, 2)
compare("multihead", "[197.5, 208.7, 220.0]", concat:matmul(WO))
compare("from_seed", "[197.5, 208.7, 220.0]",
    mha.tensor{{11.8, 13.2, 20.9, 21.5}}:matmul(WO))]],
    },

    step{
        title = {en = "Misconception: head size from sequence length", zh = "误解：头的大小取决于序列长度"},
        text = {
            en = [[
Seed 003 says each head's size is "1/k of the sequence length". Run one layer (d_model = 8, h = 2) on
sequences of 3 and of 10 tokens and read the shape of the per-head queries from the trace: the head
size is d_model/h = 4 both times. The sequence length only decides how many rows there are.]],
            zh = [[
种子文档 003 说每个头的大小是“序列长度的 1/k”。用同一层（d_model = 8，h = 2）分别处理 3 个和 10 个词元的
序列，从 trace 中读出每头查询的形状：两次的头大小都是 d_model/h = 4。序列长度只决定有多少行。]],
        },
        code = [[
layer = mha.MultiheadAttention{embed_dim = 8, num_heads = 2}
for _, L in ipairs({3, 10}) do
    local xs = mha.randn{L, 8}
    local trace = layer:trace(xs, xs, xs)
    print(string.format("L = %2d: Q_heads %s (H, L, D): D = %d", L,
        table.concat(trace.Q_heads:shape(), "×"), trace.Q_heads:shape()[3]))
end]],
    },

    step{
        title = {en = "Misconception: summing the inputs, no W^O", zh = "误解：对输入求和，没有 W^O"},
        text = {
            en = [[
Seed 003 says the weights multiply "the original input embeddings" and that the heads' outputs are
simply concatenated. The weights multiply V = X·W^V, and the concatenation is followed by W^O. Each
omission gives a different result from the real layer.]],
            zh = [[
种子文档 003 说权重乘的是“原始输入序列的嵌入向量”，并且各头的输出只是拼接起来。实际上权重乘的是
V = X·W^V，拼接之后还要乘 W^O。每一处省略都会得到与真实层不同的结果。]],
        },
        code = [[
tokens = {"t1", "t2", "t3"}
X = mha.randn{3, 8}
trace = layer:trace(X, X, X)
real = trace.output
with_inputs = trace.weights:matmul(X:view(3, 2, 4):transpose(1, 2))
    :transpose(1, 2):contiguous():view(3, 8)
without_WO = trace.concat
print(string.format(tr{en = "max |weights·X (per head) - layer| = %.4f",
                       zh = "max |weights·X（每个头）- 层| = %.4f"},
    (with_inputs - real):abs():max():item()))
print(string.format(tr{en = "max |concat without W^O - layer|  = %.4f",
                       zh = "max |不乘 W^O 的 concat - 层| = %.4f"},
    (without_WO - real):abs():max():item()))]],
    },

    step{
        title = {en = "Misconception: concatenating attention matrices", zh = "误解：拼接注意力矩阵"},
        text = {
            en = [[
Seed 004 says each head's attention matrix is concatenated into a "multi-head attention matrix". The
attention matrices are L×L each; concatenated they are L×(h·L), which W^O (h·d_v × d_model) cannot
multiply unless h·L happens to equal h·d_v, and even then the result means nothing. What is
concatenated is the heads' outputs, L×d_v each, into L×(h·d_v).]],
            zh = [[
种子文档 004 说把每个头的注意力矩阵拼接成“多头注意力矩阵”。注意力矩阵每个是 L×L；拼接后是 L×(h·L)，
W^O（h·d_v × d_model）无法与之相乘，除非 h·L 恰好等于 h·d_v，而即便如此结果也毫无意义。真正拼接的是各头的
输出，每个 L×d_v，拼成 L×(h·d_v)。]],
        },
        code = [[
W_heads = trace.weights   -- (H, L, L) = (2, 3, 3)
joined = mha.cat({W_heads:select(1, 1), W_heads:select(1, 2)}, 2)
print(tr{en = "attention matrices concatenated: ",
         zh = "注意力矩阵拼接后："}
    .. table.concat(joined:shape(), "×"))
say(select(2, pcall(function()
    return mha.linear(joined, layer.out_proj_weight) end)))
print(tr{en = "head outputs concatenated: ", zh = "各头输出拼接后："}
    .. table.concat(trace.concat:shape(), "×"))]],
    },

    step{
        title = {en = "Misconception: a comment that does nothing", zh = "误解：什么也没做的注释"},
        text = {
            en = [[
Seed 000's code labels out_linear(...) "residual connection and layer norm". Were it so, each output row
would have mean 0 and variance 1 and would contain x. Its row means below happen to be near 0, but its
row variances are all below 0.06, not 1, and no x is added anywhere (lesson 10 shows the real block).
The other claims tested elsewhere: the reason for 1/√d_k (lesson 4), −1e9 against −∞ and the opposite
mask conventions (lesson 6), the cost of many heads (lesson 9).]],
            zh = [[
种子文档 000 的代码把 out_linear(...) 标注为“残差连接和层归一化”。若真如此，每个输出行的均值应为 0、
方差为 1，并且包含 x。下面各行的均值碰巧接近 0，但方差都小于 0.06，不是 1，
而且哪里都没有加上 x（第 10 课展示了真正的块）。其他说法在别处检验过：1/√d_k 的原因
（第 4 课）、−1e9 与 −∞ 以及相反的掩码约定（第 6 课）、多头的计算量（第 9 课）。]],
        },
        code = [[
show(real:mean(2), {cols = tokens,
    title = tr{en = "out_linear: row means", zh = "out_linear：各行均值"}})
show(real:var(2, false, 0), {cols = tokens,
    title = tr{en = "out_linear: row variances",
               zh = "out_linear：各行方差"}})
block = mha.layer_norm(X + real, {8})
-- the real block's means are 0 up to rounding (about 1e-8, CPU-dependent)
print(tr{en = "LayerNorm(x + out): max |row mean| < 1e-6:",
    zh = "LayerNorm(x + out)：max |行均值| < 1e-6："},
    block:mean(2):abs():max():item() < 1e-6)]],
    },

    exercise{
        title = {en = "Recompute K₂", zh = "重算 K₂"},
        prompt = {
            en = [[
Compute K₂ = x·W₂^K from the seed's x and W₂^K (both are set: x, W2K) and answer with it.]],
            zh = [[
用种子文档的 x 和 W₂^K（已设好：x、W2K）计算 K₂ = x·W₂^K，并作答。]],
        },
        solution = [[x:matmul(W2K)]],
        mistakes = {
            mistake{wrong = [[mha.tensor{{17.1, 17.7}}]],
                hint = {en = "that is the number the seed prints; compute 1·2.5 + 2·2.7 + 3·2.9 yourself",
                        zh = "那是种子文档印出的数；自己算一下 1·2.5 + 2·2.7 + 3·2.9"}},
            mistake{error = "matmul",
                hint = {en = "x is 1×3 and W2K is 3×2: the product is x·W2K, in that order",
                        zh = "x 是 1×3，W2K 是 3×2：乘积是 x·W2K，顺序不能反"}},
        },
    },
}
