-- lessons/30_induction_circuit.lua - the induction circuit of the shipped induction model, proved:
-- heads knocked out, measured on repeated halves; the induction heads' lost target; K-composition.
return lesson{
    name = "induction_circuit", seed = 30,
    title = {en = "The induction circuit, proved", zh = "证明归纳电路"},
    summary = {en = "knock heads out and measure; the previous-token head feeds the induction keys",
               zh = "去掉头再测量；前一词元头为归纳头的键提供信息"},

    step{
        title = {en = "A claim to test", zh = "一个待检验的说法"},
        text = {
            en = [[
Lesson 16 read the attention of the shipped induction model: layer 1 head 1 looks at the previous
token, both layer 2 heads look at the token after the earlier copy. That is a claim about what the
heads look at, not about what the model needs. To test it, measure the job itself: 200 probes of 11
random symbols said twice; on the second half (positions 12 .. 21) the next symbol is the one 10
places back. Count how often the top logit names it. Guessing scores 1/20 = 0.05.]],
            zh = [[
第 16 课看了随附归纳模型的注意力：第 1 层头 1 看前一个词元，第 2 层的两个头都看前一次出现之后的那个
词元。这只是在说头看向哪里，并没有说模型需要什么。要检验它，就直接测量任务本身：200 个探针，每个是
11 个随机符号重复两遍；在第二半（位置 12 .. 21）上，下一个符号就是往回第 10 个位置的那个。数一数最高
的 logit 有多少次说对了。瞎猜的得分是 1/20 = 0.05。]],
        },
        code = [[
m = mha.load_model("induction")
probes = mha.tasks.repeated(20, 11, 200, 99)    -- (200, 22)
-- tr{en = "second half: does the top-1 name the next symbol?", zh = "第二半：top-1 是否说中下一个符号？"}
function accuracy(logits)
  local pred = logits:argmax(-1):narrow(2, 12, 10)
  return pred:eq(probes:narrow(2, 13, 10)):float():mean():item()
end
print(string.format(tr{en = "accuracy on the repeat: %.3f", zh = "重复段上的准确率：%.3f"},
                    accuracy(m:forward(probes))))]],
    },

    step{
        title = {en = "Knock out a head", zh = "去掉一个头"},
        text = {
            en = [[
A head adds W_O^h · z^h to the residual stream, where z^h (L, 16) is its weighted sum of values,
the activation named blocks.{layer-1}.attn.hook_z. mha.interp.ablate runs the model with one head's
z replaced: by zeros (the same as zeroing its 16 columns of W_O; the out-projection's bias stays),
or by its mean over the probes at each position (kind = "mean"). Without head =, every head of the
layer goes.]],
            zh = [[
一个头向残差流加上 W_O^h · z^h，其中 z^h (L, 16) 是它对值的加权和，这个激活名叫
blocks.{layer-1}.attn.hook_z。mha.interp.ablate 运行模型时替换一个头的 z：换成零（等同于把 W_O 中
属于它的 16 列置零；输出投影的偏置保留），或者换成它在各探针上按位置取的平均（kind = "mean"）。
不给 head =，就去掉这一层的所有头。]],
        },
        code = [[
print(tr{en = "knocked out     zero   mean", zh = "去掉的头        置零   平均"})
for _, c in ipairs({{1, 1}, {1, 2}, {2, 1}, {2, 2}, {1}, {2}}) do
  local acc = {}
  for k, kind in ipairs({"zero", "mean"}) do
    local logits = mha.interp.ablate(m, probes, {layer = c[1], head = c[2],
                                                 kind = kind})
    acc[k] = accuracy(logits)
  end
  local name = c[2] and string.format("L%dh%d", c[1], c[2])
               or string.format("L%d h1+h2", c[1])
  print(string.format("%-15s %.3f  %.3f", name, acc[1], acc[2]))
end]],
    },

    step{
        title = {en = "What the table shows", zh = "表格说明了什么"},
        text = {
            en = [[
Knocking out both layer-2 heads drops the accuracy to chance, 0.05. Either one alone costs only
0.06 to 0.09: the other does the same job, the two are redundant copies. Layer 1 head 2 matters
little (0.80). But layer 1 head 1 is not an "other head": without it only 0.20 to 0.23 is left;
the induction heads depend on it. How much do they still look at their target, key
i - 10, with layer 1 head 1 zeroed? run_with_cache takes hooks too and keeps the patterns.]],
            zh = [[
同时去掉第 2 层的两个头，准确率降到瞎猜的 0.05。只去掉其中一个只损失 0.06 到 0.09：另一个做同样的
事，两者是冗余的副本。第 1 层头 2 几乎无关紧要（0.80）。但第 1 层头 1 不是“别的头”：没有它只剩
0.20 到 0.23；归纳头依赖于它。去掉第 1 层头 1 之后，归纳头还有多少注意力落在目标（键
i - 10）上？run_with_cache 也接受钩子，并保存注意力模式。]],
        },
        code = [[
zero_h1 = {["blocks.0.attn.hook_z"] = function(z)   -- z (N, L, 2, 16)
  return mha.cat({z:narrow(3, 1, 1) * 0, z:narrow(3, 2, 1)}, 3)
end}
target = mha.zeros(22, 22)   -- tr{en = "1 at query i, key i - 10", zh = "查询 i、键 i - 10 处为 1"}
for i = 12, 22 do target[i][i - 10] = 1 end
name = "blocks.1.attn.hook_pattern"   -- (200, 2, 22, 22)
function on_target(hooks)   -- tr{en = "mean weight on key i - 10", zh = "键 i - 10 上的平均权重"}
  local _, cache = m:run_with_cache(probes, {hooks = hooks, names = {name}})
  local w = (cache[name] * target):sum(4):sum(3):mean(1) / 11   -- (2)
  return string.format("%.2f %.2f", w[1], w[2])
end
print(tr{en = "weight on the target, layer 2 heads 1 and 2:",
         zh = "目标上的权重，第 2 层头 1 和头 2："})
print(tr{en = "  intact        ", zh = "  完整          "} .. on_target({}))
print(tr{en = "  without L1h1  ", zh = "  去掉 L1h1     "} .. on_target(zero_h1))]],
    },

    step{
        title = {en = "The induction heads lose their target", zh = "归纳头失去了目标"},
        text = {
            en = [[
An induction head at query i wants the key j whose *previous* token equals token i. A key learns
its previous token mainly from layer 1 head 1 (previous-token score 0.84; head 2's is 0.22).
Without that head, where do the layer-2 heads look? On the first probe, the key each query of the
second half attends to most, as key - query (the target is -10, or -6 where the symbol has a
nearer earlier copy):]],
            zh = [[
位置 i 上的归纳头要找这样的键 j：它的*前一个*词元等于词元 i。键主要从第 1 层头 1 得知它的前一个
词元（前一词元分数 0.84；头 2 是 0.22）。去掉这个头，第 2 层的头看向哪里？在第一个探针上，第二半
每个查询最关注的键，写成
键 - 查询（目标是 -10；若该符号在更近处还出现过，则是 -6）：]],
        },
        code = [[
function offsets(label, hooks)
  print(label)
  m:run_with_hooks(probes:narrow(1, 1, 1), hooks)
  for h = 1, 2 do
    local w, off = m:attention()[2][1][h], {}
    for i = 13, 22 do
      off[#off + 1] = string.format("%4d", w[i]:argmax():item() - i)
    end
    print(string.format("  h%d: %s", h, table.concat(off)))
  end
end
offsets(tr{en = "intact", zh = "完整"}, {})
offsets(tr{en = "without L1h1", zh = "去掉 L1h1"}, zero_h1)]],
    },

    step{
        title = {en = "K-composition, read from the weights", zh = "从权重读出 K-组合"},
        text = {
            en = [[
Elhage et al. (2021) read the same wiring from the weights alone. Head h1 of layer 1 writes W_OV =
W_O^h1·W_V^h1 (32×32) of what it reads; head h2 of layer 2 compares query and key through W_QK =
W_Q^h2ᵀ·W_K^h2 (32×32). When h2's keys read h1's output, the score has the term x_qᵀ·W_QK·W_OV·x,
and the K-composition score is
    ‖W_QK·W_OV‖_F / (‖W_QK‖_F · ‖W_OV‖_F)
(biases and LayerNorm's scale left out; folding the scale in moves each score by < 0.01). Random
matrices of the same shapes give the baseline.]],
            zh = [[
Elhage 等人（2021）只从权重就读出了同样的连线。第 1 层的头 h1 把它读到的东西经 W_OV =
W_O^h1·W_V^h1（32×32）写出；第 2 层的头 h2 通过 W_QK = W_Q^h2ᵀ·W_K^h2（32×32）比较查询和键。当 h2
的键读到 h1 的输出时，分数里有一项 x_qᵀ·W_QK·W_OV·x，K-组合分数就是
    ‖W_QK·W_OV‖_F / (‖W_QK‖_F · ‖W_OV‖_F)
（不计偏置和 LayerNorm 的缩放；把缩放并入，每个分数的变化 < 0.01）。形状相同的随机矩阵给出基线。]],
        },
        code = [[
function W(layer, which, h)   -- tr{en = "which 0 = W_Q, 1 = W_K, 2 = W_V: (16, 32)", zh = "which = 0、1、2 取 W_Q、W_K、W_V：(16, 32)"}
  local rows = m:blocks()[layer].attn.in_proj_weight    -- (96, 32)
  return rows:narrow(1, which * 32 + (h - 1) * 16 + 1, 16)
end
function fro(a) return (a * a):sum():sqrt():item() end
function score(A, B) return fro(A:matmul(B)) / (fro(A) * fro(B)) end
function OV(h)   -- W_O^h (32, 16) · W_V^h (16, 32)
  local W_O = m:blocks()[1].attn.out_proj_weight   -- (32, 32)
  return W_O:narrow(2, (h - 1) * 16 + 1, 16):matmul(W(1, 2, h))
end
function QK(h) return W(2, 0, h):T():matmul(W(2, 1, h)) end   -- (32, 32)
for h1 = 1, 2 do
  print(string.format(tr{en = "L1h%d -> L2h1 %.3f   -> L2h2 %.3f",
                         zh = "L1h%d -> L2h1 %.3f   -> L2h2 %.3f"},
        h1, score(QK(1), OV(h1)), score(QK(2), OV(h1))))
end
base = 0
for _ = 1, 100 do
  base = base + score(mha.randn(16, 32):T():matmul(mha.randn(16, 32)),
                      mha.randn(32, 16):matmul(mha.randn(16, 32))) / 100
end
print(string.format(tr{en = "random baseline   %.3f", zh = "随机基线          %.3f"}, base))]],
    },

    step{
        title = {en = "Reading the scores", zh = "解读这些分数"},
        text = {
            en = [[
The previous-token head composes with both induction heads' keys more than anything random does
(0.32 against about 0.18); layer 1 head 2 less (0.24), though above the baseline too. The weights
tell the same story as the knock-outs, but more faintly: a composition score says a path exists,
the ablation says the model uses it. Both are needed before "this is an induction circuit" is
more than a claim.

At the prompt, any head and either kind:

    accuracy(mha.interp.ablate(m, probes, {layer = 2, head = 1}))]],
            zh = [[
前一词元头与两个归纳头的键的组合强于随机矩阵（0.32 对约 0.18）；第 1 层头 2 弱一些（0.24），但也高于基线。权重讲的
故事和去掉头的实验一样，只是更弱：组合分数说明一条通路存在，消融说明模型在用它。两者都有，
“这是一个归纳电路”才不只是一个说法。

在提示符下可以试任意一个头和任一种方式：

    accuracy(mha.interp.ablate(m, probes, {layer = 2, head = 1}))]],
        },
    },

    exercise{
        title = {en = "Q-composition", zh = "Q-组合"},
        prompt = {
            en = [[
If layer 2 head 1's *queries* read layer 1 head 1's output, the score has the term
(W_OV·x)ᵀ·W_QK·x_k, and the Q-composition score is ‖W_QKᵀ·W_OV‖_F / (‖W_QK‖_F · ‖W_OV‖_F).
Compute it for L1h1 -> L2h1 with QK, OV and score from the previous steps, and answer(number).]],
            zh = [[
如果第 2 层头 1 的*查询*读到第 1 层头 1 的输出，分数里就有 (W_OV·x)ᵀ·W_QK·x_k 这一项，Q-组合分数是
‖W_QKᵀ·W_OV‖_F / (‖W_QK‖_F · ‖W_OV‖_F)。用前面几步的 QK、OV 和 score 算出 L1h1 -> L2h1 的值，
answer(数值)。]],
        },
        solution = [[score(QK(1):T(), OV(1))]],
        mistakes = {
            mistake{wrong = [[score(QK(1), OV(1))]],
                hint = {en = "that is K-composition; queries read through W_QK transposed",
                        zh = "这是 K-组合分数；查询一侧要用 W_QK 的转置"}},
        },
    },
}
