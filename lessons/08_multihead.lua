-- lessons/08_multihead.lua - multi-head attention end to end with the output projection W^O, computed by
-- hand from the layer's own parameters and shown equal to mha.MultiheadAttention; heads plotted.
return lesson{
    name = "multihead", seed = 8,
    title = {en = "Multi-head attention end to end", zh = "多头注意力全过程"},
    summary = {en = "projections, heads, attention, concat, W^O: by hand, equal to mha.MultiheadAttention",
               zh = "投影、分头、注意力、拼接、W^O：手算并与 mha.MultiheadAttention 对照"},

    step{
        title = {en = "The layer and its parameters", zh = "层与它的参数"},
        text = {
            en = [[
    MultiHead(X) = Concat(head_1, …, head_h)·W^O
    head_i       = softmax(Q_i·K_iᵀ/√d_k)·V_i

mha.MultiheadAttention keeps PyTorch's parameters: in_proj_weight (3E×E) stacks W^Q, W^K, W^V in
nn.Linear's (out, in) layout, in_proj_bias (3E) their biases, out_proj_weight (E×E) and out_proj_bias
are W^O and its bias. Here E = 4, h = 2, so d_k = E/h = 2. We give the biases random values so they
are visible.]],
            zh = [[
    MultiHead(X) = Concat(head_1, …, head_h)·W^O
    head_i       = softmax(Q_i·K_iᵀ/√d_k)·V_i

mha.MultiheadAttention 保留了 PyTorch 的参数：in_proj_weight（3E×E）按 nn.Linear 的 (输出, 输入) 方式
叠放 W^Q、W^K、W^V，in_proj_bias（3E）是它们的偏置，out_proj_weight（E×E）和 out_proj_bias 是 W^O 及其
偏置。这里 E = 4，h = 2，所以 d_k = E/h = 2。我们给偏置赋随机值，让它们的作用看得见。]],
        },
        code = [[
tokens = tr{en = {"we", "like", "green", "tea"}, zh = {"我们", "喜欢", "绿", "茶"}}
E, H = 4, 2
D = E // H
layer = mha.MultiheadAttention{embed_dim = E, num_heads = H}
layer.in_proj_bias = mha.randn{3 * E} * 0.1
layer.out_proj_bias = mha.randn{E} * 0.1
X = mha.randn{4, E}
show(layer.in_proj_weight,
    {title = "in_proj_weight (3E×E) = [W_q; W_k; W_v]"})]],
    },

    step{
        title = {en = "Projections", zh = "投影"},
        text = {
            en = [[
Cut in_proj_weight into its three E×E blocks and apply each as nn.Linear does, y = x·Wᵀ + b.]],
            zh = [[
把 in_proj_weight 切成三个 E×E 的块，每块按 nn.Linear 的方式使用：y = x·Wᵀ + b。]],
        },
        code = [[
W_q, W_k, W_v = layer.in_proj_weight:chunk(3, 1)
b_q, b_k, b_v = layer.in_proj_bias:chunk(3, 1)
Q = mha.linear(X, W_q, b_q)
K = mha.linear(X, W_k, b_k)
V = mha.linear(X, W_v, b_v)
show(Q, {rows = tokens, title = "Q = X·W_qᵀ + b_q"})
show(K, {rows = tokens, title = "K"})
show(V, {rows = tokens, title = "V"})]],
    },

    step{
        title = {en = "Heads, scores, weights", zh = "分头、分数、权重"},
        text = {
            en = [[
Split each into H heads of D = 2 features (lesson 7), compute every head's scores at once with a
batched matmul, scale by 1/√d_k with d_k = D (the head size, not E), and softmax along the keys.]],
            zh = [[
把每个矩阵拆成 H 个头、每头 D = 2 个特征（第 7 课），用批量矩阵乘法一次算出所有头的分数，乘以 1/√d_k
（d_k = D，是头的大小，不是 E），再沿键的方向做 softmax。]],
        },
        code = [[
-- (L, E) -> (H, L, D)
split_heads = function(t) return t:view(4, H, D):transpose(1, 2) end
Qh, Kh, Vh = split_heads(Q), split_heads(K), split_heads(V)
scores = Qh:matmul(Kh:transpose(2, 3)) / math.sqrt(D)
weights = mha.softmax(scores, 3)
plot.heads(weights, {tokens = tokens,
    title = tr{en = "each head's attention", zh = "每个头的注意力"}})]],
    },

    step{
        title = {en = "Weighted sums, concat, W^O", zh = "加权和、拼接、W^O"},
        text = {
            en = [[
Each head mixes its own values; the outputs are joined per token (transpose, contiguous, view) and
W^O mixes the heads' features into one E-wide row per token.]],
            zh = [[
每个头混合它自己的值；各头输出按词元拼接（transpose、contiguous、view），再由 W^O 把各头的特征混合成
每个词元一行、宽 E 的输出。]],
        },
        code = [[
head_outputs = weights:matmul(Vh)                       -- (H, L, D)
concat = head_outputs:transpose(1, 2):contiguous():view(4, E)
show(concat, {rows = tokens, title = "Concat(head_1, head_2)"})
by_hand = mha.linear(concat, layer.out_proj_weight, layer.out_proj_bias)
show(by_hand, {rows = tokens,
    title = tr{en = "by hand: Concat·W^Oᵀ + b_o",
               zh = "手算：Concat·W^Oᵀ + b_o"}})]],
    },

    step{
        title = {en = "Equal to the layer", zh = "与层的输出一致"},
        text = {
            en = [[
The layer's forward gives the same numbers, and the same per-head weights. layer:trace returns every
intermediate under a name, so you can compare any of them.]],
            zh = [[
层的 forward 给出相同的数值和相同的每头权重。layer:trace 按名字返回每个中间结果，你可以逐一对照。]],
        },
        code = [[
out, layer_weights = layer:forward(X, X, X, {average_attn_weights = false})
show(out, {rows = tokens, title = "layer:forward(X, X, X)"})
print(tr{en = "max |by hand - layer| < 1e-5:",
         zh = "max |手算 - 层| < 1e-5："},
    (by_hand - out):abs():max():item() < 1e-5)
print(tr{en = "max |weights - layer's weights| < 1e-6:",
         zh = "max |权重 - 层的权重| < 1e-6："},
    (weights - layer_weights):abs():max():item() < 1e-6)
trace = layer:trace(X, X, X)
say(tr{en = "trace: ", zh = "trace 中的名字："} .. table.concat(trace, " "))]],
    },

    exercise{
        title = {en = "A fifth token's query", zh = "第五个词元的查询"},
        prompt = {
            en = [[
A fifth token x5 (1×E, set below) arrives and asks its query. Compute its attention weights over the
four keys in head 1 (1×4): project x5 with W_q and b_q, keep head 1's D columns, score against head 1's
keys Kh[1], scale, softmax. (t:narrow(2, 1, D) keeps columns 1..D; Kh:select(1, 1) is head 1's keys.)]],
            zh = [[
第五个词元 x5（1×E，已在下面设好）到来，提出它的查询。计算它在头 1 中对四个键的注意力权重（1×4）：
用 W_q 和 b_q 投影 x5，保留头 1 的 D 列，与头 1 的键 Kh[1] 算分数，缩放，softmax。
（t:narrow(2, 1, D) 保留第 1..D 列；Kh:select(1, 1) 是头 1 的键。）]],
        },
        setup = [[x5 = mha.randn{1, E}]],
        solution = [[mha.softmax(mha.linear(x5, W_q, b_q):narrow(2, 1, D)
    :matmul(Kh:select(1, 1):transpose(1, 2)) / math.sqrt(D), 2)]],
        mistakes = {
            mistake{wrong = [[mha.softmax(mha.linear(x5, W_q, b_q):narrow(2, 1, D)
    :matmul(Kh:select(1, 1):transpose(1, 2)) / math.sqrt(E), 2)]],
                hint = {en = "you scaled by √d_model = √4; each head's dot products have d_k = D = 2 terms: divide by √2",
                        zh = "你除以的是 √d_model = √4；每个头的点积只有 d_k = D = 2 项：应除以 √2"}},
            mistake{wrong = [[mha.softmax(mha.linear(x5, W_q, b_q):narrow(2, 1, D)
    :matmul(Kh:select(1, 1):transpose(1, 2)), 2)]],
                hint = {en = "these are the weights of the raw scores; divide the scores by √d_k first",
                        zh = "这是未缩放分数的权重；先把分数除以 √d_k"}},
            mistake{wrong = [[mha.softmax(mha.linear(x5, W_q):narrow(2, 1, D)
    :matmul(Kh:select(1, 1):transpose(1, 2)) / math.sqrt(D), 2)]],
                hint = {en = "the query projection has a bias too: mha.linear(x5, W_q, b_q)",
                        zh = "查询的投影也有偏置：mha.linear(x5, W_q, b_q)"}},
            mistake{wrong = [[mha.softmax(mha.linear(x5, W_q, b_q):narrow(2, D + 1, D)
    :matmul(Kh:select(1, 2):transpose(1, 2)) / math.sqrt(D), 2)]],
                hint = {en = "that is head 2; head 1 is columns 1..D and Kh:select(1, 1)",
                        zh = "那是头 2；头 1 是第 1..D 列和 Kh:select(1, 1)"}},
        },
    },
}
