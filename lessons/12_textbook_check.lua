-- lessons/12_textbook_check.lua - §4's worked example of the tutorial "Transformer大模型实战 多头注意力层"
-- recomputed step by step, every printed number set beside the true one and every disagreement explained;
-- the tutorials' misconceptions each shown
-- wrong by a computation. The true values are also computed independently by tests/check_seeds.py.
return lesson{
    name = "textbook_check", seed = 12,
    title = {en = "Checking a tutorial", zh = "核对一篇教程"},
    summary = {en = "a tutorial's worked example recomputed number by number; misconceptions tested",
               zh = "逐个数字重算一篇教程的算例；检验教程中的误解"},

    step{
        title = {en = "§4.1: one query, one key", zh = "第 4.1 节：一个查询，一个键"},
        text = {
            en = [[
§4.1 of the tutorial “Transformer大模型实战 多头注意力层” takes q = [0.1, 0.2, 0.3], k = [0.4, 0.5, 0.6], v = [1, 2, 3] and writes
score = (0.1×0.4 + 0.2×0.5 + 0.3×0.6)/√3 ≈ 0.2598. Its own expression is 0.32/√3 = 0.1848: the printed
value is wrong. The rest is right: with a single key, softmax of one number is exp(s)/exp(s) = 1,
whatever s is, and the output is v itself. (One key is also why this example cannot show what
attention does: there is nothing to choose between.)]],
            zh = [[
教程《Transformer大模型实战 多头注意力层》第 4.1 节取 q = [0.1, 0.2, 0.3]、k = [0.4, 0.5, 0.6]、v = [1, 2, 3]，并写出
score = (0.1×0.4 + 0.2×0.5 + 0.3×0.6)/√3 ≈ 0.2598。它自己的算式等于 0.32/√3 = 0.1848：印出的数是错的。
其余部分正确：只有一个键时，一个数的 softmax 是 exp(s)/exp(s) = 1，与 s 无关，输出就是 v 本身。
（只有一个键也正是这个例子无法说明注意力作用的原因：没有可供选择的东西。）]],
        },
        code = [[
q = mha.tensor{{0.1, 0.2, 0.3}}
k = mha.tensor{{0.4, 0.5, 0.6}}
v = mha.tensor{{1.0, 2.0, 3.0}}
LESSON.versus("q_dot_k", nil, q:matmul(k:transpose(1, 2)):item())
score = q:matmul(k:transpose(1, 2)) / math.sqrt(3)
LESSON.versus("score", "0.2598", score:item())
LESSON.versus("alpha", "1.0", mha.softmax(score, 2):item())
LESSON.versus("output", "[1.0, 2.0, 3.0]", mha.softmax(score, 2):matmul(v))]],
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
LESSON.versus("Q1", "[2.3, 3.5]", Q1)
LESSON.versus("K1", "[6.6, 7.8]", K1)
LESSON.versus("V1", "[10.9, 12.1]", V1)
LESSON.versus("Q2", "[13.7, 14.3]", Q2)
LESSON.versus("K2", "[17.1, 17.7]", K2)
LESSON.versus("V2", "[20.5, 21.1]", V2)]],
    },

    step{
        title = {en = "§4.2: the heads", zh = "第 4.2 节：各个头"},
        text = {
            en = [[
With one token each head's score matrix is 1×1, its softmax is the 1×1 matrix (1), so head_i = V_i exactly. The
tutorial prints head₁ = [11.8, 13.2] although its own V₁ is [10.9, 12.1]: the tutorial contradicts itself,
whatever the projections. (Head 2's scaled score is 318, its dot product 449.72: softmax of a single number is 1 even then.)]],
            zh = [[
只有一个词元时，每个头的分数矩阵是 1×1，softmax 是 1×1 的矩阵 (1)，因此 head_i 恰好等于 V_i。教程印出
head₁ = [11.8, 13.2]，而它自己的 V₁ 是 [10.9, 12.1]：不论投影算得对不对，教程都自相矛盾。
（头 2 缩放后的分数是 318，点积是 449.72：即便如此，单个数的 softmax 也是 1。）]],
        },
        code = [[
head1, weight1 = mha.scaled_dot_product_attention(Q1, K1, V1)
head2, weight2 = mha.scaled_dot_product_attention(Q2, K2, V2)
LESSON.versus("score1", nil, Q1:matmul(K1:transpose(1, 2)) / math.sqrt(2))
LESSON.versus("score2", nil, Q2:matmul(K2:transpose(1, 2)) / math.sqrt(2))
LESSON.versus("weight1", nil, weight1)
LESSON.versus("weight2", nil, weight2)
LESSON.versus("head1", "[11.8, 13.2]", head1)
LESSON.versus("head2", "[20.9, 21.5]", head2)
yes_no = {[true] = tr{en = "yes", zh = "是"}, [false] = tr{en = "no", zh = "否"}}
print(string.format(tr{en = "head1 == V1: %s  head2 == V2: %s",
                       zh = "head1 == V1：%s  head2 == V2：%s"},
      yes_no[(head1 - V1):abs():max():item() == 0],
      yes_no[(head2 - V2):abs():max():item() == 0]))]],
    },

    step{
        title = {en = "§4.2: W^O has the wrong shape", zh = "第 4.2 节：W^O 的形状不对"},
        text = {
            en = [[
Concat(head₁, head₂) is 1×4. The tutorial prints W^O as 3×4, and a (1×4)·(3×4) product is not defined.
Its own definition says W^O ∈ ℝ^(h·d_v × d_model) = 4×3, so the matrix meant is the transpose of the
printed one. With it the result is [234.76, 258.92, 283.08], not [197.5, 208.7, 220.0]; and not even
the tutorial's own (wrong) heads give its result: they give [261.33, 288.29, 315.25].
Note also h·d_v = 4 ≠ d_model = 3: legal for the formula, but nn.MultiheadAttention (and the paper's
choice d_k = d_v = d_model/h) requires h·d_k = d_model.]],
            zh = [[
Concat(head₁, head₂) 是 1×4。教程印出的 W^O 是 3×4，而 (1×4)·(3×4) 的乘积没有定义。它自己的定义是
W^O ∈ ℝ^(h·d_v × d_model) = 4×3，所以应该用印出矩阵的转置。这样结果是 [234.76, 258.92, 283.08]，
而不是 [197.5, 208.7, 220.0]；就连教程自己（错误的）各头也算不出它的结果：它们给出 [261.33, 288.29, 315.25]。
另外注意 h·d_v = 4 ≠ d_model = 3：对公式而言合法，但 nn.MultiheadAttention（以及论文中 d_k = d_v =
d_model/h 的选择）要求 h·d_k = d_model。]],
        },
        code = [[
WO_printed = mha.tensor{{3.7, 3.8, 3.9, 4.0}, {4.1, 4.2, 4.3, 4.4},
                        {4.5, 4.6, 4.7, 4.8}}
concat = mha.cat({head1, head2}, 2)
LESSON.versus("concat", "[11.8, 13.2, 20.9, 21.5]", concat)
LESSON.fails("concat:matmul(WO_printed)")
WO = WO_printed:transpose(1, 2)
LESSON.versus("multihead", "[197.5, 208.7, 220.0]", concat:matmul(WO))
LESSON.versus("from_heads", "[197.5, 208.7, 220.0]",
    mha.tensor{{11.8, 13.2, 20.9, 21.5}}:matmul(WO))]],
    },

    step{
        title = {en = "Misconception: head size from sequence length", zh = "误解：头的大小取决于序列长度"},
        text = {
            en = [[
“Transformer大模型实战：多头注意力层解析” says each head's size is "1/k of the sequence length". Run one layer (d_model = 8, h = 2) on
sequences of 3 and of 10 tokens and read the shape of the per-head queries from the trace: the head
size is d_model/h = 4 both times. The sequence length only decides how many rows there are.]],
            zh = [[
《Transformer大模型实战：多头注意力层解析》说每个头的大小是“序列长度的 1/k”。用同一层（d_model = 8，h = 2）分别处理 3 个和 10 个词元的
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
The same tutorial says the weights multiply "the original input embeddings" and that the heads' outputs are
simply concatenated. The weights multiply V = X·W^V, and the concatenation is followed by W^O. Each
omission gives a different result from the real layer.]],
            zh = [[
同一篇教程说权重乘的是“原始输入序列的嵌入向量”，并且各头的输出只是拼接起来。实际上权重乘的是
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
“多头自注意力模块” says each head's attention matrix is concatenated into a "multi-head attention matrix". The
attention matrices are L×L each; concatenated they are L×(h·L), which W^O (h·d_v × d_model) cannot
multiply unless h·L happens to equal h·d_v, and even then the result means nothing. What is
concatenated is the heads' outputs, L×d_v each, into L×(h·d_v).]],
            zh = [[
《多头自注意力模块》说把每个头的注意力矩阵拼接成“多头注意力矩阵”。注意力矩阵每个是 L×L；拼接后是 L×(h·L)，
W^O（h·d_v × d_model）无法与之相乘，除非 h·L 恰好等于 h·d_v，而即便如此结果也毫无意义。真正拼接的是各头的
输出，每个 L×d_v，拼成 L×(h·d_v)。]],
        },
        code = [[
W_heads = trace.weights   -- (H, L, L) = (2, 3, 3)
joined = mha.cat({W_heads:select(1, 1), W_heads:select(1, 2)}, 2)
print(tr{en = "attention matrices concatenated: ",
         zh = "注意力矩阵拼接后："}
    .. table.concat(joined:shape(), "×"))
LESSON.fails("mha.linear(joined, layer.out_proj_weight)")
print(tr{en = "head outputs concatenated: ", zh = "各头输出拼接后："}
    .. table.concat(trace.concat:shape(), "×"))]],
    },

    step{
        title = {en = "Misconception: a comment that does nothing", zh = "误解：什么也没做的注释"},
        text = {
            en = [[
The code of “Transformer大模型实战 多头注意力层” labels out_linear(...) "residual connection and layer norm". Were it so, each output row
would have mean 0 and variance 1 and would contain x. Its row means below happen to be near 0, but its
row variances are all below 0.06, not 1, and no x is added anywhere (lesson 10 shows the real block).
The other claims tested elsewhere: the reason for 1/√d_k (lesson 4), −1e9 against −∞ and the opposite
mask conventions (lesson 6), the cost of many heads (lesson 9).]],
            zh = [[
《Transformer大模型实战 多头注意力层》的代码把 out_linear(...) 标注为“残差连接和层归一化”。若真如此，每个输出行的均值应为 0、
方差为 1，并且包含 x。下面各行的均值碰巧接近 0，但方差都小于 0.06，不是 1，
而且哪里都没有加上 x（第 10 课展示了真正的块）。其他说法在别处检验过：1/√d_k 的原因
（第 4 课）、−1e9 与 −∞ 以及相反的掩码约定（第 6 课）、多头的计算量（第 9 课）。]],
        },
        code = [[
show(real:mean(2), {cols = tokens, title = tr{en = "out_linear: row means", zh = "out_linear：各行均值"}})
show(real:var(2, false, 0), {cols = tokens,
    title = tr{en = "out_linear: row variances", zh = "out_linear：各行方差"}})
block = mha.layer_norm(X + real, {8})
-- tr{en = "the real block's means are 0 up to rounding (about 1e-8, CPU-dependent)", zh = "真正的块：均值在舍入误差范围内为 0（约 1e-8，因 CPU 而异）"}
print(tr{en = "LayerNorm(x + out): max |row mean| < 1e-6:",
    zh = "LayerNorm(x + out)：max |行均值| < 1e-6："},
    block:mean(2):abs():max():item() < 1e-6)]],
    },

    exercise{
        title = {en = "Two tokens: a real choice", zh = "两个词元：真正的选择"},
        prompt = {
            en = [[
§4.1 could not show what attention does: with one key there is nothing to choose. Give the tutorial's
head 1 a second token: X2 has the rows [1, 2, 3] and [3, 2, 1] (set below). Compute head 1's attention weights
(2×2) with the tutorial's W₁^Q and W₁^K (set: W1Q, W1K), scaled by √d_k = √2, and answer with them.]],
            zh = [[
第 4.1 节无法说明注意力做了什么：只有一个键，没有可选的。给教程的头 1 加上第二个词元：
X2 的两行是 [1, 2, 3] 和 [3, 2, 1]（已在下面设好）。用教程的 W₁^Q 和 W₁^K（已设好：W1Q、W1K）算出头 1 的
注意力权重（2×2），按 √d_k = √2 缩放，并作答。]],
        },
        setup = [[X2 = mha.tensor{{1.0, 2.0, 3.0}, {3.0, 2.0, 1.0}}]],
        solution = [[mha.softmax(X2:matmul(W1Q):matmul(X2:matmul(W1K):transpose(1, 2)) / math.sqrt(2), 2)]],
        mistakes = {
            mistake{wrong = [[mha.softmax(X2:matmul(W1Q):matmul(X2:matmul(W1K):transpose(1, 2)), 2)]],
                hint = {en = "these are the weights of the unscaled scores; divide the scores by √2 before the softmax",
                        zh = "这是未缩放分数的权重；softmax 之前先把分数除以 √2"}},
            mistake{wrong = [[mha.softmax(X2:matmul(W1Q):matmul(X2:matmul(W1K):transpose(1, 2)) / math.sqrt(3), 2)]],
                hint = {en = "d_k is the length of a query after the projection, 2, not d_model = 3",
                        zh = "d_k 是投影之后查询的长度 2，不是 d_model = 3"}},
            mistake{error = "matmul",
                hint = {en = "X2 is 2×3 and W1Q is 3×2: Q = X2·W1Q, K = X2·W1K, scores = Q·Kᵀ",
                        zh = "X2 是 2×3，W1Q 是 3×2：Q = X2·W1Q，K = X2·W1K，分数 = Q·Kᵀ"}},
            mistake.softmax_axis,
        },
    },
}
