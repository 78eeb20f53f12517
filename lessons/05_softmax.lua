-- lessons/05_softmax.lua - softmax: overflow and the max-subtraction that avoids it, invariance to a
-- shift, temperature (plotted), and 1/√d_k seen as a temperature.
return lesson{
    name = "softmax", seed = 5,
    title = {en = "Softmax: stability and temperature", zh = "softmax：数值稳定与温度"},
    summary = {en = "overflow and subtracting the max; temperature, plotted",
               zh = "溢出与减去最大值；温度，画图展示"},

    step{
        title = {en = "The naive formula overflows", zh = "朴素公式会溢出"},
        text = {
            en = [[
softmax(x)_i = exp(x_i) / Σ_j exp(x_j). In float32 exp overflows to inf above about 88.7, and then
inf/inf is NaN (not a number). Scores of 100 are not rare: unscaled dot products of long vectors
reach them (lesson 4).]],
            zh = [[
softmax(x)_i = exp(x_i) / Σ_j exp(x_j)。在 float32 中，exp 的自变量超过约 88.7 就溢出为 inf，
而 inf/inf 是 NaN（非数）。100 这样的分数并不罕见：长向量未缩放的点积就能达到（第 4 课）。]],
        },
        code = [[
x = mha.tensor{100.0, 101.0, 102.0}
naive = x:exp() / x:exp():sum()
show(x:exp(), {title = "exp(x)"})
show(naive, {title = "exp(x) / sum: NaN"})]],
    },

    step{
        title = {en = "Subtract the max", zh = "减去最大值"},
        text = {
            en = [[
Softmax does not change when the same number c is added to every input, the factor exp(−c) cancels:

    exp(x_i − c) / Σ_j exp(x_j − c) = exp(x_i) / Σ_j exp(x_j)

With c = max x every
exponent is ≤ 0, so nothing overflows, and the largest term is exp(0) = 1, so the sum is ≥ 1 and
nothing divides by 0. mha.softmax does exactly this.]],
            zh = [[
给每个输入加上同一个数 c，softmax 不变，因子 exp(−c) 约掉了：

    exp(x_i − c) / Σ_j exp(x_j − c) = exp(x_i) / Σ_j exp(x_j)

取 c = max x，每个指数都 ≤ 0，不会溢出；最大的一项是 exp(0) = 1，
所以分母 ≥ 1，不会除以 0。mha.softmax 正是这样做的。]],
        },
        code = [[
shifted = x - x:max()
show(shifted, {title = "x - max(x)"})
stable = shifted:exp() / shifted:exp():sum()
show(stable, {title = "exp(x - max) / sum"})
show(mha.softmax(x, 1), {title = "mha.softmax(x, 1)"})
show(mha.softmax(x - 100, 1),
    {title = tr{en = "mha.softmax(x - 100, 1): the same",
                zh = "mha.softmax(x - 100, 1)：相同"}})]],
    },

    step{
        title = {en = "Temperature", zh = "温度"},
        text = {
            en = [[
Dividing the inputs by a *temperature* T before the softmax changes how peaked it is:
softmax(x/T). Small T sharpens towards the maximum (T → 0 gives one-hot, the "hard" max); large T
flattens towards the uniform 1/n. The order of the weights never changes.]],
            zh = [[
在 softmax 之前把输入除以*温度* T，会改变分布的尖锐程度：softmax(x/T)。T 小时更尖锐，集中到最大值上
（T → 0 就是 one-hot，即“硬”最大值）；T 大时趋于平坦，接近均匀的 1/n。权重的大小顺序始终不变。]],
        },
        code = [[
scores = mha.tensor{1.0, 2.0, 3.0, 4.0}
temps = {0.25, 0.5, 1, 2, 4}
rows, labels = {}, {}
for i, T in ipairs(temps) do
    rows[i] = mha.softmax(scores / T, 1)
    labels[i] = "T=" .. T
end
by_temperature = mha.stack(rows, 1)
show(by_temperature, {rows = labels, cols = {"s=1", "s=2", "s=3", "s=4"},
    title = "softmax(scores/T)"})
series = {}
for i, T in ipairs(temps) do
    series[i] = {x = {1, 2, 3, 4}, y = rows[i]:totable(), title = labels[i]}
end
series.xlabel = tr{en = "score", zh = "分数"}
series.ylabel = tr{en = "weight", zh = "权重"}
series.title = tr{en = "softmax at five temperatures",
                  zh = "五个温度下的 softmax"}
plot.line(series)]],
    },

    step{
        title = {en = "√d_k is a temperature", zh = "√d_k 就是温度"},
        text = {
            en = [[
softmax(q·k/√d_k) is softmax at temperature T = √d_k. Lesson 4 measured why this particular
temperature is right: it undoes the growth of var(q·k) with d_k, so the sharpness of attention does not
depend on the head size.]],
            zh = [[
softmax(q·k/√d_k) 就是温度 T = √d_k 的 softmax。第 4 课测量了为什么恰好是这个温度：它抵消了 var(q·k)
随 d_k 的增长，使注意力的尖锐程度不依赖于头的大小。]],
        },
        code = [[
entropy = function(w) return -(w * w:log()):sum():item() end
rows = {}
for i, T in ipairs(temps) do
    rows[i] = {T, entropy(mha.softmax(scores / T, 1))}
end
print(string.format(tr{en = "uniform over 4: log 4 = %.4f", zh = "4 个均匀分布：log 4 = %.4f"},
    math.log(4)))
LESSON.table(rows, tr{en = {"T", "entropy of softmax(scores/T)"},
                      zh = {"T", "softmax(scores/T) 的熵"}})]],
    },

    exercise{
        title = {en = "A stable softmax by hand", zh = "手写稳定的 softmax"},
        prompt = {
            en = [[
z = mha.tensor{500, 502, 499} is set. Compute softmax(z) with exp and sum only (no mha.softmax), so
that it does not overflow, and answer with the result.]],
            zh = [[
已设 z = mha.tensor{500, 502, 499}。只用 exp 和 sum（不用 mha.softmax）计算 softmax(z)，且不能溢出，
然后用结果作答。]],
        },
        code = [[z = mha.tensor{500.0, 502.0, 499.0}]],
        solution = [[(z - z:max()):exp() / (z - z:max()):exp():sum()]],
        mistakes = {
            mistake.nan_hint{
                hint = {en = "NaN: exp(500) overflowed to inf and inf/inf is NaN; subtract z:max() before exp",
                        zh = "NaN：exp(500) 溢出为 inf，inf/inf 是 NaN；在 exp 之前先减去 z:max()"}},
            mistake{wrong = [[(z - z:max()):exp()]],
                hint = {en = "the exponentials are right; now divide them by their sum so they add up to 1",
                        zh = "指数部分对了；再除以它们的和，使总和为 1"}},
        },
    },
}
