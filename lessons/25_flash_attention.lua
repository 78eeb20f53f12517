-- lessons/25_flash_attention.lua - FlashAttention as a lesson: the tiled loop with a running max, sum and
-- output, held equal to the fused kernel and the plain formula; its memory; the backward from the lse.
return lesson{
    name = "flash_attention", seed = 27,   -- a draw where m rises in several rows
    title = {en = "FlashAttention, tile by tile", zh = "FlashAttention：逐块计算"},
    summary = {en = "an online softmax over key tiles: m, l and O; memory O(L); the backward from the lse",
               zh = "在键的分块上做在线 softmax：m、l 与 O；内存 O(L)；由 lse 做反向传播"},

    step{
        title = {en = "Attention without the L×S matrix", zh = "不用 L×S 矩阵的注意力"},
        text = {
            en = [[
The plain formula builds the scores S = q·kᵀ/√d, L×S numbers, before it can take a softmax.
FlashAttention reads the keys a tile at a time and keeps, for each query row, three things: m the
largest score so far, l the sum of exp(s − m), and O the sum of exp(s − m)·v. When a tile brings a
larger max, the earlier sums were counted against the old max: multiply them by c = exp(m_old −
m_new). At the end, out = O / l.]],
            zh = [[
普通公式要先建出分数 S = q·kᵀ/√d，共 L×S 个数，才能做 softmax。FlashAttention 一次读一块键，对每个
查询行只保存三样东西：m 是目前最大的分数，l 是 exp(s − m) 之和，O 是 exp(s − m)·v 之和。当新的一块
带来更大的最大值时，之前的和是按旧的最大值算的：把它们乘以 c = exp(m_old − m_new)。最后
out = O / l。]],
        },
        code = [[
function flash(q, k, v, tile, report)
  local L, d = q:size(1), q:size(2)
  local m = mha.full({L, 1}, -math.huge)  -- tr{en = "largest score so far", zh = "目前最大的分数"}
  local l = mha.zeros(L, 1)               -- tr{en = "sum of exp(s - m)", zh = "exp(s - m) 之和"}
  local O = mha.zeros(L, v:size(2))       -- tr{en = "sum of exp(s - m)·v", zh = "exp(s - m)·v 之和"}
  for first = 1, k:size(1), tile do
    local kt, vt = k:narrow(1, first, tile), v:narrow(1, first, tile)
    local s = q:matmul(kt:T()) / math.sqrt(d)       -- (L, tile)
    local m_new = mha.max(m, (s:max(2, true)))
    local c = mha.exp(m - m_new)          -- tr{en = "rescales the earlier tiles", zh = "重新缩放之前的块"}
    local p = mha.exp(s - m_new)
    l = l * c + p:sum(2, true)
    O = O * c + p:matmul(vt)
    m = m_new
    if report then report(first, first + tile - 1, m, l, O) end
  end
  return O / l, m + l:log()               -- tr{en = "out, and the lse of each row", zh = "out，以及每行的 lse"}
end]],
    },

    step{
        title = {en = "m, l and O after each tile", zh = "每一块之后的 m、l 和 O"},
        text = {
            en = [[
4 queries, 8 keys, d = 2, tiles of 2 keys. Watch m: when it rises (a query meets a better key),
l and O shrink by c before the new tile adds to them.]],
            zh = [[
4 个查询，8 个键，d = 2，每块 2 个键。注意 m：当它变大时（某个查询遇到更匹配的键），l 和 O 先乘以 c
缩小，再加上新的一块。]],
        },
        code = [[
q, k, v = mha.randn(4, 2), mha.randn(8, 2), mha.randn(8, 2)
function report(a, b, m, l, O)
  print(string.format(tr{en = "keys %d-%d:", zh = "键 %d-%d："}, a, b))
  for i = 1, 4 do
    print(string.format("  %d  m %7.4f  l %7.4f  O %7.4f %7.4f",
      i, m:get(i, 1), l:get(i, 1), O:get(i, 1), O:get(i, 2)))
  end
end
out, lse = flash(q, k, v, 2, report)]],
    },

    step{
        title = {en = "The same as the fused kernel and the formula", zh = "与融合内核和公式相同"},
        text = {
            en = [[
The tiled loop gives the plain formula's output, and that of mha's fused kernel (sdpa with
need_weights = false), which runs this same loop in C over tiles of keys.]],
            zh = [[
分块循环的结果与普通公式相同，也与 mha 的融合内核（need_weights = false 时的 sdpa）相同，后者在 C 里
按键的分块运行的正是这个循环。]],
        },
        code = [[
show(out, {title = tr{en = "out = O / l", zh = "out = O / l"}})
fused = mha.sdpa(q, k, v, {need_weights = false})
plain = mha.softmax(q:matmul(k:T()) / math.sqrt(2), 2):matmul(v)
print(tr{en = "tiled = fused kernel (< 1e-6):", zh = "分块 = 融合内核（< 1e-6）："},
      (out - fused):abs():max():item() < 1e-6)
print(tr{en = "tiled = softmax(q·kᵀ/√d)·v (< 1e-6):",
         zh = "分块 = softmax(q·kᵀ/√d)·v（< 1e-6）："},
      (out - plain):abs():max():item() < 1e-6)]],
    },

    step{
        title = {en = "Memory against L", zh = "内存随 L 的变化"},
        text = {
            en = [[
For self-attention (S = L) the plain way holds the L×L weights of a head, 4·L² bytes in float32.
The tiled loop holds m and l, 2·L numbers, beside O, which is the size of the output anyway, and
one tile of scores. Memory grows like L instead of L². The work is still L², but it stays in fast on-chip
memory instead of writing L×L numbers out and reading them back.]],
            zh = [[
对于自注意力（S = L），普通做法要保存一个头的 L×L 权重，float32 下是 4·L² 字节。分块循环只保存 m 和 l
这 2·L 个数，外加 O（它本来就是输出的大小）和一块分数。内存随 L 增长，而不是 L²。计算量仍然是 L²，但它
留在芯片上快速的存储里，而不用把 L×L 个数写出去再读回来。]],
        },
        code = [[
rows = {}
for _, L in ipairs{1024, 4096, 16384, 65536} do
  rows[#rows + 1] = {L, 4 * L * L / 2^20, 2 * 4 * L / 2^10}
end
LESSON.table(rows, tr{en = {"L", "weights L×L (MiB)", "m and l (KiB)"},
                      zh = {"L", "权重 L×L（MiB）", "m 和 l（KiB）"}}, "%.0f")]],
    },

    step{
        title = {en = "What the backward keeps: the lse", zh = "反向传播保存什么：lse"},
        text = {
            en = [[
The backward needs P, which the forward never stored. It keeps one number per row instead,
lse = m + log l = log Σ_j exp(s_j), and recomputes each tile's weights exactly:

    P = exp(s − lse)

The gradient through the softmax also needs rowsum(dP ⊙ P), which equals rowsum(dO ⊙ out): one
more number per row, from the output, again no L×S matrix.]],
            zh = [[
反向传播需要 P，而前向从没保存它。它改为每行保存一个数，lse = m + log l = log Σ_j exp(s_j)，
然后精确地重算每一块的权重：

    P = exp(s − lse)

穿过 softmax 的梯度还需要 rowsum(dP ⊙ P)，它等于 rowsum(dO ⊙ out)：每行再多一个数，由输出算出，
同样不需要 L×S 矩阵。]],
        },
        code = [[
s = q:matmul(k:T()) / math.sqrt(2)                -- (4, 8)
print(tr{en = "lse = log Σ exp(s) (< 1e-5):", zh = "lse = log Σ exp(s)（< 1e-5）："},
      (lse - s:exp():sum(2, true):log()):abs():max():item() < 1e-5)
print(tr{en = "exp(s - lse) = softmax(s) (< 1e-6):",
         zh = "exp(s - lse) = softmax(s)（< 1e-6）："},
      (mha.exp(s - lse) - mha.softmax(s, 2)):abs():max():item() < 1e-6)]],
    },

    step{
        title = {en = "The backward, tile by tile", zh = "逐块的反向传播"},
        text = {
            en = [[
With lse and D = rowsum(dO ⊙ out), each key tile gives its own dK and dV and adds to dQ; the same
equations as lesson 13, with P recomputed. Held against autograd through the fused kernel.]],
            zh = [[
有了 lse 和 D = rowsum(dO ⊙ out)，每一块键各自给出它的 dK 和 dV，并累加到 dQ 上；方程与第 13 课
相同，只是 P 是重算的。与经过融合内核的自动求导对照。]],
        },
        code = [[
dO = mha.randn(4, 2)
D = (dO * out):sum(2, true)                       -- (4, 1)
dQ, dK, dV = mha.zeros(4, 2), {}, {}
for first = 1, 8, 2 do
  local kt, vt = k:narrow(1, first, 2), v:narrow(1, first, 2)
  local P = mha.exp(q:matmul(kt:T()) / math.sqrt(2) - lse)   -- (4, 2)
  local dS = P * (dO:matmul(vt:T()) - D)
  dQ = dQ + dS:matmul(kt) / math.sqrt(2)
  dK[#dK + 1] = dS:T():matmul(q) / math.sqrt(2)
  dV[#dV + 1] = P:T():matmul(dO)
end
qg, kg, vg = q:detach(), k:detach(), v:detach()
for _, t in ipairs{qg, kg, vg} do t:requires_grad(true) end
loss = (mha.sdpa(qg, kg, vg, {need_weights = false}) * dO):sum()
loss:backward()
checks = {{"dQ", dQ, qg}, {"dK", mha.cat(dK), kg}, {"dV", mha.cat(dV), vg}}
for _, c in ipairs(checks) do
  local gap = (c[2] - c[3]:grad()):abs():max():item()
  print(c[1] .. tr{en = " = autograd (< 1e-5):", zh = " = 自动求导（< 1e-5）："}, gap < 1e-5)
end]],
    },

    exercise{
        title = {en = "One more tile", zh = "再来一块"},
        prompt = {
            en = [[
A query row has m = 1 and l = 2 so far. The next tile gives it the scores 3 and 1. What is l after
this tile, as the loop of step 1 computes it? answer(number)]],
            zh = [[
某个查询行目前 m = 1、l = 2。下一块给它的分数是 3 和 1。按第 1 步的循环，这一块之后 l 是多少？
answer(数值)]],
        },
        solution = [[2 * math.exp(1 - 3) + math.exp(3 - 3) + math.exp(1 - 3)]],
        mistakes = {
            mistake{wrong = [[2 + math.exp(3 - 3) + math.exp(1 - 3)]],
                hint = {en = "the old l was counted against the old max 1; the max is now 3: multiply l by "
                        .. "c = exp(1 - 3) first",
                        zh = "旧的 l 是按旧的最大值 1 算的；现在最大值是 3：先把 l 乘以 c = exp(1 - 3)"}},
            mistake{wrong = [[2 * math.exp(3 - 1) + math.exp(3 - 3) + math.exp(1 - 3)]],
                hint = {en = "c = exp(m_old - m_new) = exp(1 - 3): the old terms shrink, they do not grow",
                        zh = "c = exp(m_old - m_new) = exp(1 - 3)：旧的项要变小，不是变大"}},
            mistake{wrong = [[2 + math.exp(3 - 1) + math.exp(1 - 1)]],
                hint = {en = "the new max is 3, not the old 1: the new scores are taken as exp(s - 3), and l is rescaled",
                        zh = "新的最大值是 3，不是旧的 1：新分数要取 exp(s - 3)，l 也要重新缩放"}},
            mistake{wrong = [[2 + math.exp(3) + math.exp(1)]],
                hint = {en = "subtract the running max before exp: l is a sum of exp(s - m), with m = 3 now",
                        zh = "取 exp 之前要减去当前的最大值：l 是 exp(s - m) 之和，现在 m = 3"}},
        },
    },
}
