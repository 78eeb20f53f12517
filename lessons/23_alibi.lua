-- lessons/23_alibi.lua - ALiBi: a penalty per distance added to the scores as a float mask, one slope per
-- head; why it runs past the training length where learned positions cannot, shown without training.
return lesson{
    name = "alibi", seed = 23,
    title = {en = "ALiBi: a penalty per distance", zh = "ALiBi：按距离扣分"},
    summary = {en = "slopes per head, the bias as a float mask, running past the training length",
               zh = "每个头的斜率，作为浮点掩码的偏置，超出训练长度照样运行"},

    step{
        title = {en = "One slope per head", zh = "每个头一个斜率"},
        text = {
            en = [[
ALiBi (Press, Smith and Lewis, 2022) adds no position to the tokens. Each head subtracts its slope
times the distance from every score:

    bias[h, i, j] = -slope_h · |i - j|        slope_h = 2^(-8h/H),  h = 1 .. H

The slopes form a geometric sequence: for H = 8, 1/2, 1/4, ... 1/256. For an H that is not a power of
two, the paper takes the slopes of the power of two below it, then every other slope of twice that.]],
            zh = [[
ALiBi（Press、Smith 和 Lewis，2022）不给词元加任何位置。每个头从每个分数中减去它的斜率乘以距离：

    bias[h, i, j] = -slope_h · |i - j|        slope_h = 2^(-8h/H)，h = 1 .. H

这些斜率是等比数列：H = 8 时为 1/2、1/4、……1/256。H 不是 2 的幂时，论文先取比它小的那个 2 的幂的
斜率，再从两倍头数的斜率中隔一个取一个。]],
        },
        code = [[
print(mha.alibi_slopes(8))
print(mha.alibi_slopes(6))   -- tr{en = "the 4 of H = 4, then slopes 1, 3 of H = 8", zh = "H = 4 的 4 个，再取 H = 8 的第 1、3 个"}
bias = mha.alibi_bias(8, 5)  -- tr{en = "(H, L, L) = (8, 5, 5)", zh = "(H, L, L) = (8, 5, 5)"}
show(bias:select(1, 1), {title = tr{en = "head 1 of 8: slope 1/2",
                                    zh = "8 个头中的头 1：斜率 1/2"}})]],
    },

    step{
        title = {en = "The bias of each head", zh = "每个头的偏置"},
        text = {
            en = [[
Four heads (slopes 1/4, 1/16, 1/64, 1/256) on one colour scale: head 1's bias falls fast with the
distance, head 2's slowly, heads 3 and 4 hardly at all over 5 positions. So some heads look near and
some far.]],
            zh = [[
四个头（斜率 1/4、1/16、1/64、1/256）用同一个色标：头 1 的偏置随距离下降得快，头 2 的慢，头 3 和
头 4 在 5 个位置之内几乎不变。所以有的头看近处，有的看远处。]],
        },
        code = [[
plot.heads(mha.alibi_bias(4, 5), {title = tr{en = "ALiBi bias, H = 4",
                                             zh = "ALiBi 偏置，H = 4"}})]],
    },

    step{
        title = {en = "Added to the scores as a float mask", zh = "作为浮点掩码加到分数上"},
        text = {
            en = [[
The bias is a float mask: sdpa adds it to the scores before the softmax. A decoder also hides the
future: fill the causal positions with −∞. With no content at all (every score 0) the softmax of
the bias alone shows where each head looks from the last of 6 positions.]],
            zh = [[
偏置就是一个浮点掩码：sdpa 在 softmax 之前把它加到分数上。解码器还要挡住未来：把因果掩码的位置填成
−∞。完全没有内容时（所有分数为 0），单看偏置的 softmax，就知道每个头从 6 个位置中的最后一个往哪里看。]],
        },
        code = [[
mask = mha.alibi_bias(4, 6):masked_fill(mha.causal_mask(6), -math.huge)
q, k, v = mha.randn(4, 6, 8), mha.randn(4, 6, 8), mha.randn(4, 6, 8)
out = mha.sdpa(q, k, v, {attn_mask = mask, need_weights = false})
scores = q:matmul(k:transpose(-1, -2)) / math.sqrt(8) + mask
by_hand = mha.softmax(scores, -1):matmul(v)
print(tr{en = "sdpa = softmax(q·kᵀ/√8 + bias)·v (< 1e-5):",
         zh = "sdpa = softmax(q·kᵀ/√8 + 偏置)·v（< 1e-5）："},
      (out - by_hand):abs():max():item() < 1e-5)
show(mha.softmax(mask, -1):select(2, 6), {rows = {"h1", "h2", "h3", "h4"},
    title = tr{en = "no content: the last query's weights per head",
               zh = "没有内容时：最后一个查询在各头的权重"}})]],
    },

    step{
        title = {en = "Past the training length", zh = "超出训练长度"},
        text = {
            en = [[
A learned position embedding is a table of max_len rows: position max_len + 1 has no row, and the
model cannot run at all. Sinusoidal positions exist for any length, but the model never saw those
vectors. ALiBi has no table: the bias at distance 40 is the same line continued, and the bias of a
query over its recent keys is the same at any length. Press et al. trained on 1024 tokens and ran
on 2048 as well as a sinusoidal model trained on 2048.]],
            zh = [[
学到的位置嵌入是一张 max_len 行的表：位置 max_len + 1 没有对应的行，模型根本无法运行。正弦位置对任何
长度都有，但模型从没见过那些向量。ALiBi 没有表：距离 40 处的偏置就是同一条直线的延长，一个查询对它
最近那些键的偏置在任何长度下都一样。Press 等人在 1024 个词元上训练，在 2048 个词元上运行，效果与
在 2048 上训练的正弦位置模型一样好。]],
        },
        code = [[
model = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 2, max_len = 16}
tokens = {}
for i = 1, 17 do tokens[i] = 1 + i % 8 end
print(tr{en = "learned positions, 17 tokens, max_len 16: runs?",
         zh = "学到的位置，17 个词元，max_len 16：能运行吗？"},
      (pcall(model.forward, model, tokens)))
at16 = mha.alibi_bias(8, 1, 16)    -- tr{en = "the last query of 16", zh = "16 个位置中的最后一个查询"}
at64 = mha.alibi_bias(8, 1, 64)    -- tr{en = "the last query of 64", zh = "64 个位置中的最后一个查询"}
print(tr{en = "its 16 nearest keys get the same bias:",
         zh = "最近 16 个键得到相同的偏置："},
      mha.equal(at64:narrow(3, 49, 16), at16))]],
    },

    step{
        title = {en = "Near heads keep, far heads spread", zh = "近处的头不变，远处的头摊开"},
        text = {
            en = [[
Say a model was trained on 16 tokens and now runs on 64 and 256. The table gives the weight the
last query puts on its 16 nearest keys (no content, the bias alone). The steep heads see what they saw in training. The gentle ones spread
some weight over keys farther than any in training, each at the penalty their slope already
defines: nothing in the model is new, only farther.]],
            zh = [[
假设一个模型在 16 个词元上训练，现在在 64 和 256 个词元上运行。表中是最后一个查询放在它最近的 16 个
键上的权重（没有内容，只有偏置）。陡的头看到的和训练时一样。平缓的头把一部分权重摊到比训练时任何键都远的键上，每个键的惩罚
都由它的斜率确定：模型里没有任何新东西，只是更远了。]],
        },
        code = [[
rows, slopes = {}, mha.alibi_slopes(8):totable()
for h = 1, 8 do rows[h] = {h, string.format("1/%d", 1 / slopes[h])} end
for _, L in ipairs{16, 64, 256} do
  local w = mha.softmax(mha.alibi_bias(8, 1, L), -1)   -- (8, 1, L)
  local near = w:narrow(3, L - 15, 16):sum(3):view(8):totable()
  for h = 1, 8 do rows[h][#rows[h] + 1] = string.format("%.3f", near[h]) end
end
LESSON.table(rows, tr{en = {"head", "slope", "L = 16", "L = 64", "L = 256"},
                      zh = {"头", "斜率", "L = 16", "L = 64", "L = 256"}})]],
    },

    exercise{
        title = {en = "One entry of the bias", zh = "偏置的一个元素"},
        prompt = {
            en = [[
A model has H = 16 heads. What bias does head 3 add to the score of query 6 for key 2 (both counted
from 1, as Lua counts)? answer(number)]],
            zh = [[
一个模型有 H = 16 个头。头 3 给查询 6 对键 2 的分数加上的偏置是多少（两者都从 1 数起，与 Lua 一样）？
answer(数值)]],
        },
        solution = [[-4 * 2 ^ (-8 * 3 / 16)]],
        mistakes = {
            mistake{wrong = [[4 * 2 ^ (-8 * 3 / 16)]],
                hint = {en = "the bias is a penalty: it is subtracted, -slope·|i - j|",
                        zh = "偏置是扣分：要减去，-slope·|i - j|"}},
            mistake{wrong = [[-4 * 2 ^ (-3)]],
                hint = {en = "2^(-3) is head 3's slope for H = 8; the exponent is -8h/H with H = 16",
                        zh = "2^(-3) 是 H = 8 时头 3 的斜率；指数是 -8h/H，这里 H = 16"}},
            mistake{wrong = [[-4 * 2 ^ (-8 * 2 / 16)]],
                hint = {en = "heads count from 1 in the formula: head 1's slope is 2^(-8/H), so head 3 has h = 3",
                        zh = "公式里的头从 1 数起：头 1 的斜率是 2^(-8/H)，所以头 3 的 h = 3"}},
            mistake{wrong = [[-4 * math.exp(-8 * 3 / 16)]],
                hint = {en = "the slopes are powers of 2, not of e: 2^(-8h/H)",
                        zh = "斜率是 2 的幂，不是 e 的幂：2^(-8h/H)"}},
            mistake{wrong = [[-5 * 2 ^ (-8 * 3 / 16)]],
                hint = {en = "the distance from key 2 to query 6 is 6 - 2 = 4",
                        zh = "键 2 到查询 6 的距离是 6 - 2 = 4"}},
        },
    },
}
