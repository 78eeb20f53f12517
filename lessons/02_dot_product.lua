-- lessons/02_dot_product.lua - dot-product attention by hand: scores, softmax, weighted sum; one query,
-- then all queries at once.
return lesson{
    name = "dot_product", seed = 2,
    title = {en = "Dot-product attention by hand", zh = "手算点积注意力"},
    summary = {en = "scores, softmax and the weighted sum: one query, then all queries",
               zh = "分数、softmax 与加权和：先算一个查询，再一次算全部查询"},

    step{
        title = {en = "One query against three keys", zh = "一个查询对三个键"},
        text = {
            en = [[
Take one query q and three keys k₁, k₂, k₃ (the rows of K). The *score* of key j is the dot product

    score_j = q·k_j = Σ_i q_i·k_j,i

large when q and k_j point the same way, zero when they are orthogonal, negative when opposed. All three
scores at once are the matrix-vector product K·q.]],
            zh = [[
取一个查询 q 和三个键 k₁、k₂、k₃（K 的各行）。键 j 的*分数*是点积

    score_j = q·k_j = Σ_i q_i·k_j,i

q 与 k_j 方向一致时分数大，正交时为零，相反时为负。三个分数一起就是矩阵乘向量 K·q。]],
        },
        code = [[
tokens = tr{en = {"I", "love", "tea"}, zh = {"我", "爱", "茶"}}
K = mha.tensor{{1.0, 0.0, 1.0, 0.0},
               {0.0, 1.0, 0.0, 1.0},
               {1.0, 1.0, 0.0, 0.0}}
V = mha.tensor{{1.0, 2.0},
               {3.0, 4.0},
               {5.0, 6.0}}
q = mha.tensor{1.0, 0.0, 2.0, 0.0}
show(K, {rows = tokens, title = tr{en = "K (keys)", zh = "K（键）"}})
show(V, {rows = tokens, title = tr{en = "V (values)", zh = "V（值）"}})
score = K:matmul(q)
show(score, {cols = tokens, title = "score = K·q"})]],
    },

    step{
        title = {en = "Softmax turns scores into weights", zh = "softmax 把分数变成权重"},
        text = {
            en = [[
Scores can be any real numbers; we want positive weights that sum to 1. Softmax does it:

    w_j = exp(score_j) / Σ_m exp(score_m)

Here we write it out: exponentiate, then divide by the sum. (Lesson 5 shows why real code first
subtracts the largest score.)]],
            zh = [[
分数可以是任意实数；我们要的是为正、且和为 1 的权重。softmax 正是这样：

    w_j = exp(score_j) / Σ_m exp(score_m)

这里把它写开：先取指数，再除以总和。（第 5 课会说明为什么实际代码要先减去最大分数。）]],
        },
        code = [[
e = score:exp()
show(e, {cols = tokens, title = "exp(score)"})
w = e / e:sum()
show(w, {cols = tokens, title = "w = exp(score) / sum"})
show(mha.softmax(score, 1), {cols = tokens,
    title = tr{en = "mha.softmax(score, 1): the same",
               zh = "mha.softmax(score, 1)：相同"}})]],
    },

    step{
        title = {en = "The weighted sum of the values", zh = "对值向量加权求和"},
        text = {
            en = [[
The output for this query is the weighted sum of the value rows:

    out = Σ_j w_j·v_j = w·V

It lies "between" the values, closest to the value of the best-matching key. Notice that q never
touches V directly: the keys decide *where* to look, the values decide *what* comes back.]],
            zh = [[
这个查询的输出是值向量的加权和：

    out = Σ_j w_j·v_j = w·V

它落在各个值向量“之间”，最靠近匹配得最好的那个键对应的值。注意 q 从不直接碰 V：键决定*看哪里*，
值决定*取回什么*。]],
        },
        code = [[
out = w:matmul(V)
show(out, {title = "out = w·V"})]],
    },

    step{
        title = {en = "All queries at once", zh = "一次算全部查询"},
        text = {
            en = [[
With one query per token, stack the queries as the rows of Q (L×d). Then all the scores are one matrix
product and all the outputs another:

    S = Q·Kᵀ            (L×L: row i holds query i's scores against every key)
    W = softmax(S) along dim 2, the keys: each ROW sums to 1
    out = W·V           (L×d_v)

The first row of Q is our q, so the first row of every result is what we computed by hand. The
tutorial “BERT模型中的多头注意力机制解读” writes Σ_i exp(q·k_i)/Σ_j exp(q·k_j)·v_i, exactly this
unscaled form; the Transformer also divides the scores by √d_k (lesson 4).]],
            zh = [[
每个词元一个查询，把查询叠成 Q 的各行（L×d）。于是所有分数是一次矩阵乘法，所有输出是另一次：

    S = Q·Kᵀ            （L×L：第 i 行是查询 i 对每个键的分数）
    W = 沿第 2 维（键）做 softmax：每一*行*的和为 1
    out = W·V           （L×d_v）

Q 的第一行就是刚才的 q，所以每个结果的第一行都与手算的一致。教程《BERT模型中的多头注意力机制解读》写的
Σ_i exp(q·k_i)/Σ_j exp(q·k_j)·v_i 正是这种未缩放的形式；Transformer 还会把分数除以 √d_k（第 4 课）。]],
        },
        code = [[
Q = mha.tensor{{1.0, 0.0, 2.0, 0.0}, {0.0, 1.0, 0.0, 1.0},
               {1.0, 1.0, 1.0, 1.0}}
S = Q:matmul(K:transpose(1, 2))
show(S, {rows = tokens, cols = tokens, title = "S = Q·Kᵀ"})
W = mha.softmax(S, 2)
show(W, {rows = tokens, cols = tokens, title = "W = softmax(S, 2)"})
show(W:matmul(V), {rows = tokens,
    title = tr{en = "out = W·V (row 1 = the one-query result)",
               zh = "out = W·V（第 1 行 = 单个查询的结果）"}})]],
    },

    exercise{
        title = {en = "Scaled weights for all queries", zh = "所有查询的缩放权重"},
        prompt = {
            en = [[
Compute the attention weights of all three queries with the Transformer's scaling: softmax(Q·Kᵀ/√d_k),
d_k = 4, the softmax along the keys. Answer with answer(your_tensor).]],
            zh = [[
用 Transformer 的缩放计算三个查询的注意力权重：softmax(Q·Kᵀ/√d_k)，d_k = 4，沿键的方向做 softmax。
用 answer(你的张量) 作答。]],
        },
        solution = [[mha.softmax(Q:matmul(K:transpose(1, 2)) / math.sqrt(4), 2)]],
        mistakes = {
            mistake.softmax_axis,
            mistake{wrong = [[mha.softmax(Q:matmul(K:transpose(1, 2)), 2)]],
                hint = {en = "these are the unscaled weights: divide the scores by √d_k = 2 before the softmax",
                        zh = "这是未缩放的权重：softmax 之前要把分数除以 √d_k = 2"}},
            mistake{wrong = [[mha.softmax(Q:matmul(K:transpose(1, 2)) / 4, 2)]],
                hint = {en = "you divided by d_k = 4; the scale is 1/√d_k = 1/2",
                        zh = "你除以了 d_k = 4；缩放因子是 1/√d_k = 1/2"}},
        },
    },
}
