-- lessons/03_projections.lua - the linear projections Q = X·W^Q, K = X·W^K, V = X·W^V: shapes, the two
-- layouts (x·W and PyTorch's x·Wᵀ), and why attention needs projections at all.
return lesson{
    name = "projections", seed = 3,
    title = {en = "Linear projections: Q, K, V", zh = "线性投影：Q、K、V"},
    summary = {en = "Q = X·W^Q, K = X·W^K, V = X·W^V: shapes, layouts, and why project at all",
               zh = "Q = X·W^Q、K = X·W^K、V = X·W^V：形状、两种存储方式，以及为什么要投影"},

    step{
        title = {en = "Three roles, three matrices", zh = "三种角色，三个矩阵"},
        text = {
            en = [[
A token plays three roles: it asks (query), it is found (key), it gives (value). One vector cannot be
good at all three, so each role gets its own learned matrix:

    Q = X·W^Q     K = X·W^K     V = X·W^V

X is L×E; W^Q and W^K are E×d_k, W^V is E×d_v. Each row of Q is one token's query, computed from that
token alone: projections never mix tokens (only attention does).]],
            zh = [[
一个词元扮演三种角色：提问（查询）、被找到（键）、给出内容（值）。一个向量不可能同时胜任三者，
所以每种角色有自己学到的矩阵：

    Q = X·W^Q     K = X·W^K     V = X·W^V

X 是 L×E；W^Q 和 W^K 是 E×d_k，W^V 是 E×d_v。Q 的每一行是一个词元的查询，只由该词元自己算出：
投影从不混合词元（只有注意力会混合）。]],
        },
        code = [[
tokens = tr{en = {"the", "cat", "sat"}, zh = {"小", "猫", "坐"}}
X = mha.randn{3, 4}
W_Q = mha.randn{4, 2} * 0.5
W_K = mha.randn{4, 2} * 0.5
W_V = mha.randn{4, 3} * 0.5
Q, K, V = X:matmul(W_Q), X:matmul(W_K), X:matmul(W_V)
show(Q, {rows = tokens, title = "Q = X·W^Q (3×2)"})
show(K, {rows = tokens, title = "K = X·W^K (3×2)"})
show(V, {rows = tokens, title = "V = X·W^V (3×3)"})]],
    },

    step{
        title = {en = "Shapes: what must agree", zh = "形状：哪些必须一致"},
        text = {
            en = [[
Q·Kᵀ needs queries and keys of the same length d_k; the values may have another length d_v, and the
output of attention has d_v columns. The number of rows of W is always E, the width of a token.
A mismatched product is an error that names both shapes.]],
            zh = [[
Q·Kᵀ 要求查询与键的长度同为 d_k；值可以有另一个长度 d_v，注意力的输出有 d_v 列。W 的行数总是 E，
即一个词元的宽度。形状不匹配的乘法会报错，并给出两边的形状。]],
        },
        code = [[
print("Q " .. table.concat(Q:shape(), "×"),
    "K " .. table.concat(K:shape(), "×"),
    "V " .. table.concat(V:shape(), "×"))
weights = mha.softmax(Q:matmul(K:transpose(1, 2)) / math.sqrt(2), 2)
show(weights, {rows = tokens, cols = tokens,
    title = "softmax(Q·Kᵀ/√2) (3×3)"})
show(weights:matmul(V), {rows = tokens,
    title = tr{en = "weights·V (3×3: d_v columns)", zh = "weights·V（3×3：d_v 列）"}})
LESSON.fails("Q:matmul(V:transpose(1, 2))")]],
    },

    step{
        title = {en = "Two layouts of the same matrix", zh = "同一矩阵的两种存储方式"},
        text = {
            en = [[
Papers write Q = X·W with W of shape (in, out). PyTorch's nn.Linear stores the weight as (out, in) and
computes y = x·Wᵀ + b; mha.linear does the same. The notes “多头注意力” (after d2l.ai) write the column form
W_i^(q)·q with W of shape p_q×d_q. All three are one computation: the stored matrices are transposes
of each other. When you read a weight from a trained model, check which layout it is in.]],
            zh = [[
论文写 Q = X·W，W 的形状是 (输入, 输出)。PyTorch 的 nn.Linear 把权重存成 (输出, 输入)，计算
y = x·Wᵀ + b；mha.linear 与之相同。学习笔记《多头注意力》（源自 d2l.ai）写成列向量形式 W_i^(q)·q，W 的形状为
p_q×d_q。三者是同一个计算：存储的矩阵互为转置。从训练好的模型读取权重时，要先确认它是哪种存储方式。]],
        },
        code = [[
W_Q_torch = W_Q:transpose(1, 2):contiguous()   -- tr{en = "(out, in) = (2, 4)", zh = "(输出, 输入) = (2, 4)"}
show(mha.linear(X, W_Q_torch), {rows = tokens,
    title = "mha.linear(X, W_Q_torch) = X·W_Q_torchᵀ"})
show(W_Q_torch:matmul(X:select(1, 1)),
    {title = tr{en = "column form W·x for token 1 = row 1 of Q",
                zh = "列向量形式 W·x（词元 1）= Q 的第 1 行"}})]],
    },

    step{
        title = {en = "Why project at all", zh = "为什么要投影"},
        text = {
            en = [[
Without projections Q = K = X, and two things go wrong. The score matrix X·Xᵀ is *symmetric*: "the"
attends to "cat" exactly as "cat" attends to "the", though a relation like subject-verb is not. And the
diagonal x·x = |x|² is always positive and often the largest of its row, so a token tends to look at itself. With W^Q ≠ W^K the
scores X·W^Q·(X·W^K)ᵀ need not be symmetric, and the learned matrices choose what "matching" means.]],
            zh = [[
没有投影时 Q = K = X，会出两个问题。分数矩阵 X·Xᵀ 是*对称的*：“小”关注“猫”的程度与“猫”关注
“小”的完全相同，而主谓这类关系并不对称。并且对角线 x·x = |x|² 总是正的，常常是所在行中最大的，所以词元往往偏向看自己。
当 W^Q ≠ W^K 时，分数 X·W^Q·(X·W^K)ᵀ 不必对称，由学到的矩阵决定什么叫“匹配”。]],
        },
        code = [[
raw = X:matmul(X:transpose(1, 2))
show(raw, {rows = tokens, cols = tokens,
    title = tr{en = "X·Xᵀ: symmetric, large diagonal", zh = "X·Xᵀ：对称，对角线大"}})
print(tr{en = "X·Xᵀ equals its transpose:", zh = "X·Xᵀ 等于它的转置："},
    (raw - raw:transpose(1, 2)):abs():max():item() == 0)
projected = Q:matmul(K:transpose(1, 2))
show(projected, {rows = tokens, cols = tokens,
    title = tr{en = "Q·Kᵀ with projections", zh = "带投影的 Q·Kᵀ"}})
show(projected - projected:transpose(1, 2), {rows = tokens, cols = tokens,
    title = "Q·Kᵀ - (Q·Kᵀ)ᵀ ≠ 0"})]],
    },

    exercise{
        title = {en = "Keys through nn.Linear's layout", zh = "用 nn.Linear 的存储方式算键"},
        prompt = {
            en = [[
W_K_torch = W_K:transpose(1, 2):contiguous() is W^K in PyTorch's (out, in) layout. Compute K from X and
W_K_torch (mha.linear, or a matmul) and answer with it.]],
            zh = [[
W_K_torch = W_K:transpose(1, 2):contiguous() 是按 PyTorch (输出, 输入) 方式存储的 W^K。用 X 和
W_K_torch 算出 K（用 mha.linear 或矩阵乘法），并作答。]],
        },
        code = [[W_K_torch = W_K:transpose(1, 2):contiguous()]],
        solution = [[mha.linear(X, W_K_torch)]],
        mistakes = {
            mistake{error = "matmul",
                hint = {en = "X (3×4) times W_K_torch (2×4) does not fit: nn.Linear's weight is (out, in), so the product is X·W_K_torchᵀ",
                        zh = "X（3×4）乘 W_K_torch（2×4）形状不合：nn.Linear 的权重是 (输出, 输入)，所以应为 X·W_K_torchᵀ"}},
            mistake{wrong = [[X:matmul(W_Q)]],
                hint = {en = "that is Q (W^Q); the keys use W^K", zh = "这是 Q（用的是 W^Q）；键要用 W^K"}},
        },
    },
}
