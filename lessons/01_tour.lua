-- lessons/01_tour.lua - a tour: what attention computes, on three tokens, in one screen.
return lesson{
    name = "tour", seed = 1,
    title = {en = "A tour of attention", zh = "注意力速览"},
    summary = {en = "what attention computes, on three tokens",
               zh = "用三个词元看注意力算了什么"},

    step{
        title = {en = "Three tokens", zh = "三个词元"},
        text = {
            en = [[
A sentence reaches attention as a matrix X: one row per token, one column per feature. Here L = 3 tokens
and E = 4 features (the *embedding dimension*, d_model in the papers). Attention will let every token
look at every other token and take a mix of what it finds.]],
            zh = [[
句子进入注意力层时是一个矩阵 X：每个词元一行，每个特征一列。这里有 L = 3 个词元，E = 4 个特征（*嵌入维度*，
论文里叫 d_model）。注意力让每个词元去看所有词元，并把看到的内容按比例混合起来。]],
        },
        code = [[
tokens = tr{en = {"the", "cat", "sat"}, zh = {"小", "猫", "坐"}}
X = mha.tensor{{1.0, 0.0, 1.0, 0.0},
               {0.0, 2.0, 0.0, 2.0},
               {1.0, 1.0, 1.0, 1.0}}
show(X, {rows = tokens, title = "X (L=3, E=4)"})]],
    },

    step{
        title = {en = "Attention in one call", zh = "一次调用算出注意力"},
        text = {
            en = [[
Each token asks a *query* and offers a *key* and a *value*. Here we take Q = K = V = X (the next lessons
add the learned projections). Attention computes

    weights = softmax(Q·Kᵀ/√d_k)    (L×L: how much token i looks at token j)
    out     = weights·V             (L×E: each row a weighted mix of V's rows)

d_k = 4 is the length of a query. Read a row of `weights`: it is how one token spreads its attention.]],
            zh = [[
每个词元提出一个*查询*（query），并提供一个*键*（key）和一个*值*（value）。
本课先取三者都等于 X：Q = K = V = X（后面的课会加上学习得到的投影）。注意力计算

    weights = softmax(Q·Kᵀ/√d_k)    （L×L：词元 i 看词元 j 的程度）
    out     = weights·V             （L×E：每行是 V 各行的加权混合）

d_k = 4 是查询向量的长度。读 `weights` 的一行：那就是一个词元如何分配它的注意力。]],
        },
        code = [[
Q, K, V = X, X, X
out, weights = mha.scaled_dot_product_attention(Q, K, V)
show(weights, {rows = tokens, cols = tokens,
    title = "weights = softmax(Q·Kᵀ/√4)"})
show(out, {rows = tokens, title = "out = weights·V"})]],
    },

    step{
        title = {en = "Every row is a distribution", zh = "每一行都是一个概率分布"},
        text = {
            en = [[
Softmax makes each row of `weights` positive and sum to 1, so every output row is an *average* of the
value rows, weighted by how well the query matched each key. A match needs length and direction: "cat"
has the longest vector and keeps 0.87 of its own row, but "the" is orthogonal to it (score 0), so "the"
gives "cat" only 0.16 and splits the rest between itself and "sat" (0.42 each). "sat" weights "cat" and
itself equally (0.42 each): its dot product with both is 4.]],
            zh = [[
softmax 让 `weights` 的每一行都为正且和为 1，所以每个输出行都是值向量的*加权平均*，权重取决于查询与各个键
的匹配程度。匹配既看长度也看方向：“猫”的向量最长，它自己那一行有 0.87 落在自己身上；但“小”与它正交
（分数为 0），所以“小”只分给“猫” 0.16，其余平分给自己和“坐”（各 0.42）。“坐”给“猫”和自己的
权重相同（各 0.42）：它与两者的点积都是 4。]],
        },
        code = [[
show(weights:sum(2), {title = tr{en = "weights:sum(2): one sum per row", zh = "weights:sum(2)：每行的和"}})
plot.heatmap(weights, {rows = tokens, cols = tokens, values = true,
    title = tr{en = "attention weights", zh = "注意力权重"}})]],
    },

    step{
        title = {en = "Many heads at once", zh = "多个头同时计算"},
        text = {
            en = [[
*Multi-head* attention runs several attentions side by side, each on its own learned projection of X
(a smaller space of E/H features), then joins their outputs and mixes them with one more matrix W^O.
mha.MultiheadAttention is the same layer as PyTorch's nn.MultiheadAttention. With 2 heads each head
has its own L×L weights; they differ because their projections differ.]],
            zh = [[
*多头*注意力把几个注意力并排运行，每个头作用在 X 的一个自己学到的投影上（一个 E/H 维的较小空间），
然后把各头的输出拼接起来，再用一个矩阵 W^O 混合。mha.MultiheadAttention 与 PyTorch 的
nn.MultiheadAttention 是同一个层。两个头各有自己的 L×L 权重；它们不同，因为各自的投影不同。]],
        },
        code = [[
layer = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}
out2, head_weights = layer:forward(X, X, X, {average_attn_weights = false})
plot.heads(head_weights, {tokens = tokens, title = tr{en = "weights per head", zh = "每个头的权重"}})
show(out2, {rows = tokens, title = tr{en = "multi-head output", zh = "多头输出"}})]],
    },

    step{
        title = {en = "The road ahead", zh = "接下来的路"},
        text = {
            en = [[
The next lessons take this apart: dot products by hand (2), projections (3), scaling (4), softmax (5),
masks (6), splitting into heads (7), the whole layer (8), its cost (9), residual and position (10),
cross-attention (11), and a check of a tutorial's worked example (12).

Along the way they check five popular Chinese tutorials on multi-head attention, by their titles:
“Transformer大模型实战 多头注意力层” (Transformers in practice: the multi-head attention layer),
“BERT模型中的多头注意力机制解读” (Multi-head attention in BERT, explained), the study notes
“多头注意力” (Multi-head attention, after d2l.ai), “Transformer大模型实战：多头注意力层解析”
(Transformers in practice: the layer analysed) and “多头自注意力模块” (The multi-head self-attention
module). Where a tutorial prints a number, the lesson computes it again; where they disagree, the
lesson says which is right and why.]],
            zh = [[
后面的课会把它逐一拆开：手算点积（2）、投影（3）、缩放（4）、softmax（5）、掩码（6）、拆分成多个头（7）、
完整的层（8）、计算量（9）、残差与位置（10）、交叉注意力（11），以及核对一篇教程的算例（12）。

一路上还会核对五篇流行的中文多头注意力教程：《Transformer大模型实战 多头注意力层》、
《BERT模型中的多头注意力机制解读》、学习笔记《多头注意力》（源自 d2l.ai）、
《Transformer大模型实战：多头注意力层解析》和《多头自注意力模块》。教程里印出的每个数，课程都重新算一遍；
两者不一致时，课程会说明哪个对、为什么。]],
        },
    },

    exercise{
        title = {en = "One output row by hand", zh = "手算一行输出"},
        prompt = {
            en = [[
Compute the output row of "cat" yourself: the weighted sum of the rows of V with the weights in row 2
of `weights`. (weights:select(1, 2) is that row, a vector of 3; a vector times a matrix is :matmul.)]],
            zh = [[
自己算出“猫”的输出行：用 `weights` 第 2 行的权重对 V 的各行加权求和。
（weights:select(1, 2) 就是那一行，长度为 3 的向量；向量乘矩阵用 :matmul。）]],
        },
        solution = [[weights:select(1, 2):matmul(V)]],
        mistakes = {
            mistake{wrong = [[V:select(1, 2)]],
                hint = {en = "that is cat's own value row; attention mixes ALL the value rows, weighted by row 2 of weights",
                        zh = "这是猫自己的值向量；注意力要按 weights 第 2 行的权重混合所有的值向量"}},
            mistake{wrong = [[weights:select(2, 2):matmul(V)]],
                hint = {en = "you took column 2 of weights (how much each token looks AT cat); cat's own weights are row 2: select(1, 2)",
                        zh = "你取的是 weights 的第 2 列（各词元看猫的程度）；猫自己的权重是第 2 行：select(1, 2)"}},
        },
    },
}
