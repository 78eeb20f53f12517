-- lessons/14_why_sqrt_dk.lua - why √d_k, measured: the gradient that reaches the scores with and without the
-- scaling as d_k grows (as “Transformer大模型实战 多头注意力层” §4.1 says), plotted; “多头自注意力模块”'s
-- "gradient explosion" shown to be the wrong word.
return lesson{
    name = "why_sqrt_dk", seed = 14,
    title = {en = "Why √d_k, measured", zh = "为什么是 √d_k：测量"},
    summary = {en = "the gradient at the scores with and without scaling, as d_k grows",
               zh = "有无缩放时到达分数的梯度，随 d_k 增长"},

    step{
        title = {en = "The claim", zh = "说法"},
        text = {
            en = [[
The tutorial “Transformer大模型实战 多头注意力层” (§4.1) says the scaling keeps the softmax's gradient
from vanishing; “多头自注意力模块” calls the same problem "gradient explosion". Which is it? We
measure the gradient that reaches the scores, dS = softmax_backward(dP, P), for one query over 16
keys, with entries of unit variance.]],
            zh = [[
教程《Transformer大模型实战 多头注意力层》（4.1 节）说缩放让 softmax 的梯度不至于消失；《多头自注意力模块》
把同一个问题叫作“梯度爆炸”。到底是哪个？
我们测量到达分数的梯度 dS = softmax_backward(dP, P)：一个查询、16 个键，元素方差为 1。]],
        },
        code = [[
function measure(d_k, scaled)
  local total, top = 0, 0
  for trial = 1, 50 do
    local q, K = mha.randn(1, d_k), mha.randn(16, d_k)
    local S = q:matmul(K:transpose(1, 2))
    if scaled then S = S / math.sqrt(d_k) end
    local P = mha.softmax(S, 2)
    local dP = mha.randn(1, 16)
    local dS = mha.softmax_backward(dP, P, 2)
    total = total + (dS * dS):sum():sqrt():item()
    top = top + P:max():item()
  end
  return total / 50, top / 50
end
print(tr{en = "measure(d_k, scaled) -> mean |dS|, mean largest weight",
         zh = "measure(d_k, scaled) -> |dS| 均值、最大权重均值"})]],
    },

    step{
        title = {en = "As d_k grows", zh = "随着 d_k 增长"},
        text = {
            en = [[
Without scaling, the scores' standard deviation is √d_k: the softmax becomes one-hot, and a one-hot
softmax passes (almost) no gradient. With scaling the scores keep unit variance at every d_k, and
so does the gradient.]],
            zh = [[
不缩放时，分数的标准差是 √d_k：softmax 变成 one-hot，而 one-hot 的 softmax（几乎）不传递梯度。缩放后
分数在任何 d_k 下方差都是 1，梯度也一样。]],
        },
        code = [[
dims, plain, scaled = {4, 16, 64, 256, 1024}, {}, {}
print(tr{en = "  d_k   |dS| plain  top weight   |dS| scaled",
         zh = "  d_k   |dS| 不缩放  最大权重    |dS| 缩放"})
for i, d in ipairs(dims) do
  local g, top = measure(d, false)
  local gs = measure(d, true)
  plain[i], scaled[i] = g, gs
  print(string.format("%5d   %9.2f  %10.2f   %11.2f", d, g, top, gs))
end
plot.line{{x = dims, y = plain, title = "no scaling"},
          {x = dims, y = scaled, title = "scaled by 1/sqrt(d_k)"},
          logx = true, xlabel = "d_k", ylabel = "|dS|"}]],
    },

    step{
        title = {en = "Vanishing, not exploding", zh = "是消失，不是爆炸"},
        text = {
            en = [[
The unscaled gradient at the scores *shrinks* as d_k grows: it vanishes. Nothing explodes; the
word in “多头自注意力模块” is wrong. (The scores themselves grow, which is what the scaling removes.)]],
            zh = [[
不缩放时到达分数的梯度随 d_k 增长而*变小*：它消失了。没有任何东西爆炸；《多头自注意力模块》的用词是错的。
（变大的是分数本身，缩放去掉的正是这一点。）]],
        },
        code = [[
yes_no = {[true] = tr{en = "yes", zh = "是"}, [false] = tr{en = "no", zh = "否"}}
print(tr{en = "plain |dS| at d_k = 1024 below a quarter of d_k = 4:",
         zh = "d_k = 1024 时不缩放的 |dS| 小于 d_k = 4 时的四分之一："},
      yes_no[plain[5] < plain[1] / 4])
lo, hi = math.min(table.unpack(scaled)), math.max(table.unpack(scaled))
print(tr{en = "scaled |dS| within a factor 2 at every d_k:",
         zh = "缩放后的 |dS| 在每个 d_k 下相差不到 2 倍："},
      yes_no[hi < 2 * lo])]],
    },

    exercise{
        title = {en = "The variance of a score", zh = "分数的方差"},
        prompt = {
            en = [[
q and k have d_k = 64 independent entries of mean 0 and variance 1. What is the variance of q·k?
answer(number)]],
            zh = [[
q 和 k 各有 d_k = 64 个独立元素，均值 0、方差 1。q·k 的方差是多少？answer(数值)]],
        },
        solution = [[64]],
        mistakes = {
            mistake{wrong = [[8]],
                hint = {en = "8 = √64 is the standard deviation; the variances of the 64 products add up",
                        zh = "8 = √64 是标准差；64 个乘积的方差相加"}},
            mistake{wrong = [[1]],
                hint = {en = "each product q_i·k_i has variance 1, and there are 64 of them",
                        zh = "每个乘积 q_i·k_i 方差为 1，一共有 64 个"}},
        },
    },
}
