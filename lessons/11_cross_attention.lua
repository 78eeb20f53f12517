-- lessons/11_cross_attention.lua - cross-attention (encoder-decoder): queries from one sequence, keys and
-- values from another, of another length and other widths (kdim, vdim).
return lesson{
    name = "cross_attention", seed = 11,
    title = {en = "Cross-attention", zh = "交叉注意力"},
    summary = {en = "queries from the decoder, keys and values from the encoder: L ≠ S, kdim and vdim",
               zh = "查询来自解码器，键和值来自编码器：L ≠ S，以及 kdim、vdim"},

    step{
        title = {en = "Two sequences", zh = "两个序列"},
        text = {
            en = [[
In *self*-attention Q, K and V all come from the same sequence. In *cross*-attention (the middle layer
of a Transformer decoder) the queries come from the sequence being generated, L tokens, while keys and
values come from the encoder's output, S tokens of the source sentence. Nothing requires L = S: the
weights are L×S, one row per target token over the source tokens.]],
            zh = [[
在*自*注意力中 Q、K、V 都来自同一个序列。在*交叉*注意力中（Transformer 解码器的中间一层），查询来自正在
生成的序列，L 个词元；键和值来自编码器的输出，即源句子的 S 个词元。没有任何要求让 L = S：权重是 L×S，
每个目标词元一行，分布在源词元上。]],
        },
        code = [[
target = {"我", "爱"}
source = {"I", "love", "green", "tea", "."}
decoder_x = mha.randn{2, 4}    -- tr{en = "L = 2 target tokens, E = 4", zh = "L = 2 个目标词元，E = 4"}
memory = mha.randn{5, 6}   -- tr{en = "S = 5 source tokens, encoder width kdim = 6", zh = "S = 5 个源词元，编码器宽度 kdim = 6"}
show(decoder_x, {rows = target, title = tr{en = "decoder states (L=2, E=4)", zh = "解码器状态（L=2，E=4）"}})
show(memory, {rows = source,
    title = tr{en = "encoder output (S=5, 6)",
               zh = "编码器输出（S=5，6）"}})]],
    },

    step{
        title = {en = "Different widths: kdim and vdim", zh = "不同的宽度：kdim 与 vdim"},
        text = {
            en = [[
When keys and values do not have the layer's width E, nn.MultiheadAttention takes kdim and vdim and
keeps three separate matrices instead of the packed in_proj_weight: q_proj_weight (E×E),
k_proj_weight (E×kdim), v_proj_weight (E×vdim). Each projects into the same E-wide space, so
Q·Kᵀ is defined. Here the memory serves as keys (kdim = 6), and a narrower copy as values (vdim = 3).]],
            zh = [[
当键和值的宽度不是层的宽度 E 时，nn.MultiheadAttention 接受 kdim 和 vdim，并用三个独立的矩阵代替打包的
in_proj_weight：q_proj_weight（E×E）、k_proj_weight（E×kdim）、v_proj_weight（E×vdim）。它们都投影到同一个
E 维空间，所以 Q·Kᵀ 有定义。这里编码器输出作为键（kdim = 6），它的一个较窄的版本作为值（vdim = 3）。]],
        },
        code = [[
cross = mha.MultiheadAttention{embed_dim = 4, num_heads = 2,
                               kdim = 6, vdim = 3}
for _, name in ipairs({"q_proj_weight", "k_proj_weight", "v_proj_weight",
                       "out_proj_weight"}) do
    print(string.format("%-16s %s", name,
        table.concat(cross[name]:shape(), "×")))
end
values = memory:narrow(2, 1, 3)
out, weights = cross:forward(decoder_x, memory, values)
show(weights, {rows = target, cols = source, title = tr{en = "weights (L=2 × S=5)", zh = "权重（L=2 × S=5）"}})
plot.heatmap(weights, {rows = target, cols = source, values = true,
    title = tr{en = "target × source", zh = "目标 × 源"}})]],
    },

    step{
        title = {en = "By hand", zh = "手算"},
        text = {
            en = [[
The same computation by hand: project with the three separate matrices, then attention per head
as before. The shapes tell the story: Q is L×E, K is S×E, the scores are L×S.]],
            zh = [[
手算同样的过程：用三个独立的矩阵投影，然后像以前一样逐头计算注意力。形状说明了一切：Q 是 L×E，K 是 S×E，
分数是 L×S。]],
        },
        code = [[
b_q, b_k, b_v = cross.in_proj_bias:chunk(3, 1)
Q = mha.linear(decoder_x, cross.q_proj_weight, b_q)
K = mha.linear(memory, cross.k_proj_weight, b_k)
V = mha.linear(values, cross.v_proj_weight, b_v)
print("Q " .. table.concat(Q:shape(), "×"),
    "K " .. table.concat(K:shape(), "×"),
    "V " .. table.concat(V:shape(), "×"))
heads_of = function(t) return t:view(t:shape()[1], 2, 2):transpose(1, 2) end
head_out, head_w = mha.scaled_dot_product_attention(
    heads_of(Q), heads_of(K), heads_of(V))
concat = head_out:transpose(1, 2):contiguous():view(2, 4)
by_hand = mha.linear(concat, cross.out_proj_weight, cross.out_proj_bias)
print(tr{en = "max |by hand - layer| < 1e-5:",
         zh = "max |手算 - 层| < 1e-5："},
    (by_hand - out):abs():max():item() < 1e-5)]],
    },

    step{
        title = {en = "Self or cross? Reading a tutorial's example", zh = "自注意力还是交叉注意力？读一篇教程的例子"},
        text = {
            en = [[
The worked example of “多头自注意力模块” on "Thinking Machines" computes Q from "Thinking" and K, V from "Machines".
That is neither: in self-attention *each* token has its own query, key and value, so both tokens give a
Q, a K and a V, and the scores are 2×2; in cross-attention the keys and values come from a second
sequence. With one query and one key, softmax of a single score is 1 and the output is just that V.]],
            zh = [[
教程《多头自注意力模块》在“Thinking Machines”上的例子用“Thinking”算 Q，用“Machines”算 K 和 V。这两者都不是：
在自注意力中*每个*词元都有自己的查询、键和值，所以两个词元各给出一个 Q、一个 K 和一个 V，分数是 2×2；
在交叉注意力中，键和值来自另一个序列。只有一个查询和一个键时，单个分数的 softmax 就是 1，输出就是那个 V。]],
        },
        code = [[
two = {"Thinking", "Machines"}
x2 = mha.randn{2, 4}
self_layer = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}
_, self_weights = self_layer:forward(x2, x2, x2)
show(self_weights, {rows = two, cols = two,
    title = tr{en = "self-attention: 2×2 weights", zh = "自注意力：2×2 权重"}})
_, one_weight = self_layer:forward(x2:narrow(1, 1, 1),
    x2:narrow(1, 2, 1), x2:narrow(1, 2, 1))
show(one_weight, {rows = {"Thinking"}, cols = {"Machines"},
    title = tr{en = "one query, one key: weight 1",
               zh = "一个查询、一个键：权重为 1"}})]],
    },

    exercise{
        title = {en = "The shape of the weights", zh = "权重的形状"},
        prompt = {
            en = [[
A decoder of 7 target tokens attends over an encoder output of 12 source tokens with 4 heads. What is
the shape of the per-head weights (average_attn_weights = false, no batch)? answer{H, L, S}]],
            zh = [[
一个有 7 个目标词元的解码器在 12 个源词元的编码器输出上做 4 头注意力。每头的权重（average_attn_weights =
false，无批次维）形状是什么？answer{H, L, S}]],
        },
        solution = [[{4, 7, 12}]],
        mistakes = {
            mistake{wrong = [[{4, 12, 7}]],
                hint = {en = "rows are queries (the 7 target tokens), columns keys (the 12 source tokens)",
                        zh = "行是查询（7 个目标词元），列是键（12 个源词元）"}},
            mistake{wrong = [[{4, 7, 7}]],
                hint = {en = "that would be self-attention; here the keys are the 12 source tokens",
                        zh = "那是自注意力；这里的键是 12 个源词元"}},
        },
    },
}
