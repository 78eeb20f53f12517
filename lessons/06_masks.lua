-- lessons/06_masks.lua - masks: causal and padding, boolean and additive, the opposite conventions in the
-- tutorials' code, and what happens to a row where every key is masked.
return lesson{
    name = "masks", seed = 6,
    title = {en = "Masks: causal and padding", zh = "掩码：因果掩码与填充掩码"},
    summary = {en = "causal and padding masks, boolean and additive; a fully masked row is NaN",
               zh = "因果与填充掩码，布尔与加性两种形式；整行被屏蔽会得到 NaN"},

    step{
        title = {en = "The causal mask", zh = "因果掩码"},
        text = {
            en = [[
A decoder that predicts the next token must not look at later tokens. The *causal mask* is true above
the diagonal (key j > query i); in mha-repl, as in nn.MultiheadAttention, a boolean mask is true where
attention is NOT allowed. Masked scores are set to −∞ BEFORE the softmax, so exp(−∞) = 0 gives them
weight 0 and the rest of each row still sums to 1.]],
            zh = [[
预测下一个词元的解码器不能看后面的词元。*因果掩码*在对角线以上（键 j > 查询 i）为 true；在 mha-repl 中，
与 nn.MultiheadAttention 一样，布尔掩码为 true 的位置表示*不允许*关注。被屏蔽的分数在 softmax *之前*
置为 −∞，exp(−∞) = 0 使其权重为 0，而每行剩下的权重之和仍为 1。]],
        },
        code = [[
tokens = tr{en = {"I", "drink", "green", "tea"}, zh = {"我", "喝", "绿", "茶"}}
scores = mha.randn{4, 4}
mask = mha.causal_mask(4)
masked = scores:masked_fill(mask, -math.huge)
show(masked, {rows = tokens, cols = tokens,
    title = tr{en = "scores, -inf where mask is true", zh = "分数：mask 为 true 处是 -inf"}})
weights = mha.softmax(masked, 2)
show(weights, {rows = tokens, cols = tokens,
    title = tr{en = "softmax: lower triangular, rows sum to 1",
               zh = "softmax：下三角，每行和为 1"}})]],
    },

    step{
        title = {en = "Boolean or additive: the same", zh = "布尔掩码与加性掩码：结果相同"},
        text = {
            en = [[
A float mask is *added* to the scores: 0 where allowed, −∞ where not. It gives the same weights, and it
can also hold finite penalties (a bias such as ALiBi). scaled_dot_product_attention takes either, or
is_causal = true.]],
            zh = [[
浮点掩码是*加*到分数上的：允许处为 0，不允许处为 −∞。它给出相同的权重，还可以存放有限的惩罚值
（例如 ALiBi 这样的偏置）。scaled_dot_product_attention 两种都接受，也可以用 is_causal = true。]],
        },
        code = [[
additive = mha.zeros{4, 4}:masked_fill(mask, -math.huge)
show(additive, {rows = tokens, cols = tokens, title = tr{en = "additive mask", zh = "加性掩码"}})
show(mha.softmax(scores + additive, 2) - weights,
    {rows = tokens, cols = tokens,
     title = tr{en = "difference from the boolean mask", zh = "与布尔掩码的差"}})
q, k, v = mha.randn{4, 2}, mha.randn{4, 2}, mha.randn{4, 2}
out_bool = mha.scaled_dot_product_attention(q, k, v, {attn_mask = mask})
out_add = mha.scaled_dot_product_attention(q, k, v, {attn_mask = additive})
out_causal = mha.scaled_dot_product_attention(q, k, v, {is_causal = true})
print(tr{en = "max |bool - additive| < 1e-6:",
         zh = "max |布尔 - 加性| < 1e-6："},
    (out_bool - out_add):abs():max():item() < 1e-6)
print(tr{en = "max |bool - is_causal| < 1e-6:",
         zh = "max |布尔 - is_causal| < 1e-6："},
    (out_bool - out_causal):abs():max():item() < 1e-6)]],
    },

    step{
        title = {en = "Padding masks", zh = "填充掩码"},
        text = {
            en = [[
Sentences in a batch have different lengths; the short ones are padded to the longest. No query should
attend to a padding key, so key_padding_mask (N×S, true = padding) blocks those columns for every
query of that sentence. Here sentence 2 has 2 real tokens and 2 pads.]],
            zh = [[
一个批次里的句子长度不同，短句被填充到最长的长度。任何查询都不应关注填充位置的键，所以
key_padding_mask（N×S，true 表示填充）对该句的所有查询屏蔽这些列。这里第 2 句有 2 个真实词元和 2 个填充。]],
        },
        code = [[
layer = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}
batch = mha.randn{2, 4, 4}
padding = mha.tensor{{false, false, false, false},
                     {false, false, true, true}}
out, w = layer:forward(batch, batch, batch, {key_padding_mask = padding})
show(w, {dims = tr{en = {"sentence", "query", "key"},
                   zh = {"句子", "查询", "键"}},
    title = tr{en = "weights (averaged over heads): pads get 0",
               zh = "权重（各头平均）：填充位得到 0"}})]],
    },

    step{
        title = {en = "Two conventions in the tutorials", zh = "教程里的两种约定"},
        text = {
            en = [[
The code of “Transformer大模型实战 多头注意力层” and of the notes “多头注意力” writes
scores.masked_fill(mask == 0, -1e9): there mask is 1 where attention is ALLOWED,
the opposite sense of PyTorch's boolean attn_mask (true = blocked). Passing one kind of mask where the
other is expected silently blocks exactly the wrong positions. Converting is a logical not.]],
            zh = [[
《Transformer大模型实战 多头注意力层》和学习笔记《多头注意力》的代码写的是
scores.masked_fill(mask == 0, -1e9)：那里 mask 为 1 表示*允许*关注，
与 PyTorch 布尔 attn_mask（true = 屏蔽）的含义正好相反。把一种掩码当作另一种传入，会悄无声息地
屏蔽掉恰好错误的位置。两者之间的转换就是逻辑非。]],
        },
        code = [[
allowed = mha.logical_not(mask)
show(allowed, {rows = tokens, cols = tokens, title = tr{en = "allowed = not mask", zh = "allowed = 非 mask"}})
wrong = mha.softmax(scores:masked_fill(allowed, -math.huge), 2)
show(wrong, {rows = tokens, cols = tokens,
    title = tr{
        en = "allowed passed as a blocking mask: wrong, last row NaN",
        zh = "把 allowed 当作屏蔽掩码传入：错误，最后一行是 NaN"}})]],
    },

    step{
        title = {en = "A row with every key masked", zh = "所有键都被屏蔽的一行"},
        text = {
            en = [[
If every key of a row is masked, softmax gets only −∞: exp gives 0/0 and the row is NaN (as in PyTorch
and NumPy). NaN then spreads through everything it touches, which is loud but honest. Those
tutorials' −1e9 instead of −∞ hides it: the row becomes softmax of equal numbers, the uniform 1/S, so the query
silently attends to all the padding. Neither is what you want; the fix is to never let a real query
have no key, or to zero such rows after the softmax deliberately.]],
            zh = [[
如果一行的所有键都被屏蔽，softmax 拿到的全是 −∞：exp 得到 0/0，这一行就是 NaN（与 PyTorch 和 NumPy 一致）。
NaN 会传染给它碰到的一切，虽然吵闹，但很诚实。那两篇教程用 −1e9 代替 −∞ 则把问题掩盖了：这一行变成对相等
数值做 softmax，即均匀的 1/S，查询悄悄地关注了所有填充位置。两者都不是想要的；正确的做法是不让真实的查询
没有可看的键，或者在 softmax 之后有意地把这样的行置零。]],
        },
        code = [[
all_blocked = mha.full({1, 4}, 1):bool()
row = mha.randn{1, 4}
show(mha.softmax(row:masked_fill(all_blocked, -math.huge), 2),
    {cols = tokens, title = tr{en = "every key masked with -inf: NaN", zh = "所有键都用 -inf 屏蔽：NaN"}})
show(mha.softmax(row:masked_fill(all_blocked, -1e9), 2), {cols = tokens,
    title = tr{en = "every key masked with -1e9: uniform 1/4",
               zh = "所有键都用 -1e9 屏蔽：均匀的 1/4"}})]],
    },

    exercise{
        title = {en = "Causal weights for five tokens", zh = "五个词元的因果权重"},
        prompt = {
            en = [[
A sentence of five tokens has the scores `scores5` (5×5, set above; already scaled). Compute its
causal attention weights and answer with them. The mask of step 1 is 4×4: build the one you need.]],
            zh = [[
一个五个词元的句子的分数是 `scores5`（5×5，已在上面设好，并已缩放）。计算它的因果注意力权重并作答。
第 1 步的掩码是 4×4 的：自己构造需要的那个。]],
        },
        setup = [[scores5 = mha.randn{5, 5}]],
        solution = [[mha.softmax(scores5:masked_fill(mha.causal_mask(5), -math.huge), 2)]],
        mistakes = {
            mistake{wrong = [[mha.softmax(scores5:masked_fill(mha.causal_mask(5), 0), 2)]],
                hint = {en = "you filled the masked scores with 0, and 0 is an ordinary score: exp(0) = 1, so the future "
                        .. "keys still get weight. Fill them with -math.huge: exp(-inf) = 0.",
                        zh = "你把被屏蔽的分数填成了 0，而 0 只是一个普通的分数：exp(0) = 1，未来的键仍然得到权重。"
                        .. "要填 -math.huge：exp(-inf) = 0。"}},
            mistake{wrong = [[mha.softmax(scores5, 2):masked_fill(mha.causal_mask(5), 0)]],
                hint = {en = "you masked AFTER the softmax: the future weights are 0 but the rows no longer sum to 1. "
                        .. "Fill the scores with -inf first, then take the softmax.",
                        zh = "你在 softmax *之后*才做掩码：未来位置的权重是 0，但各行之和不再为 1。"
                        .. "先把分数填成 -inf，再做 softmax。"}},
            mistake{wrong = [[mha.softmax(scores5:masked_fill(mha.logical_not(mha.causal_mask(5)), -math.huge), 2)]],
                hint = {en = "you blocked the allowed positions: in mha-repl a boolean mask is true where attention is NOT allowed",
                        zh = "你屏蔽的是允许的位置：在 mha-repl 中布尔掩码为 true 表示*不允许*关注"}},
            mistake{error = "masked_fill",
                hint = {en = "the mask must have the scores' shape, 5×5: mha.causal_mask(5)",
                        zh = "掩码的形状必须与分数相同，即 5×5：mha.causal_mask(5)"}},
            mistake.softmax_axis,
        },
    },
}
