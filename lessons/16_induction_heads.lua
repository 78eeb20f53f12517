-- lessons/16_induction_heads.lua - what heads learn: the shipped 2-layer attention-only model on repeated
-- sequences; a previous-token head in layer 1, an induction head in layer 2, and the phase change in which
-- they form (replayed from the checkpoint; the student can retrain it live).
return lesson{
    name = "induction_heads", seed = 16,
    title = {en = "What heads learn: induction heads", zh = "头学到了什么：归纳头"},
    summary = {en = "a trained 2-layer model: previous-token and induction heads, and how they form",
               zh = "训练好的两层模型：前一词元头与归纳头，以及它们如何形成"},

    step{
        title = {en = "A trained model", zh = "一个训练好的模型"},
        text = {
            en = [[
Every head so far had random weights. This one was trained: 2 layers of attention only (no MLP),
2 heads each, d_model 32, on sequences of random symbols in which one stretch of 3 to 8 symbols is
repeated later. On the repeat the next symbol is predictable: find the earlier copy of the current
symbol and say what came after it. `make models` trained it in about 6 s of CPU.]],
            zh = [[
到目前为止，每个头的权重都是随机的。这个模型是训练过的：两层，只有注意力（没有 MLP），每层 2 个头，
d_model 32，训练数据是随机符号序列，其中一段 3 到 8 个符号在后面重复出现。在重复段上，下一个符号可以
预测：找到当前符号的前一次出现，说出它后面的那个符号。`make models` 用大约 6 秒 CPU 训练了它。]],
        },
        code = [[
m, extra = mha.load_model("induction")
print(tr{en = "layers, heads, d_model:", zh = "层数、头数、d_model："},
      m.layers, m.heads, m.d_model)
t = mha.tasks.induction{vocab = 20, len = 24, seed = 5}
tokens, targets = t:batch(1)
mha.tasks.show(tokens, {title = tr{en = "tokens", zh = "词元"}})
mha.tasks.show(targets, {zero = "-",
               title = tr{en = "targets (- = not counted)",
                          zh = "目标（- = 不计入）"}})]],
    },

    step{
        title = {en = "A probe it never saw", zh = "一个它没见过的探针"},
        text = {
            en = [[
To see what the heads do, feed 11 random symbols said twice: a repeat longer than any it trained on.
An induction head at position i in the second half looks at the token *after* the earlier copy of
token i, that is key i - 11 + 1. A previous-token head looks at key i - 1.]],
            zh = [[
为了看清头在做什么，输入 11 个随机符号并重复一遍：比训练时的任何重复都长。第二半中位置 i 上的归纳头
看向词元 i 前一次出现位置的*下一个*，即键 i - 11 + 1。前一词元头看向键 i - 1。]],
        },
        code = [[
probe = mha.tasks.repeated(20, 11, 1, 7)
logits = m:forward(probe)
maps = m:attention()        -- tr{en = "layer 1, layer 2: (1, 2, 22, 22)", zh = "第 1 层、第 2 层：(1, 2, 22, 22)"}
for layer = 1, 2 do
  for h = 1, 2 do
    local w, off = maps[layer][1][h], {}
    for i = 14, 22 do
      off[#off + 1] = string.format("%d", w[i]:argmax():item() - i)
    end
    print(string.format(tr{en = "layer %d head %d: key - query = %s",
                           zh = "第 %d 层 头 %d：键 - 查询 = %s"},
          layer, h, table.concat(off, " ")))
  end
end]],
    },

    step{
        title = {en = "The heads, measured", zh = "测量这些头"},
        text = {
            en = [[
TransformerLens's head detector scores a head by the share of its attention that falls on the keys
a pattern names, averaged over all query positions. With a sequence said twice only the second half
can score for induction, so a perfect induction head scores about 0.5 (a little more where the
random first half repeats a token by chance).]],
            zh = [[
TransformerLens 的头检测器给一个头打分：它的注意力落在模式所指的键上的比例，对所有查询位置取平均。
序列重复两遍时，只有第二半能在归纳上得分，所以完美的归纳头大约得 0.5（随机的前一半偶然重复某个词元时，
会略多一点）。]],
        },
        code = [[
probes = mha.tasks.repeated(20, 11, 16, 99)
scores = mha.heads.report(m, probes)]],
    },

    step{
        title = {en = "A phase change", zh = "相变"},
        text = {
            en = [[
While it trained, the scores were measured every 25 steps (kept in the checkpoint). For 150 steps
nothing happens; then within about 75 steps the previous-token head and the induction head appear
together, and the loss falls at the same time: the two heads only help as a pair.]],
            zh = [[
训练时每 25 步测一次分数（保存在检查点里）。前 150 步什么也没发生；然后在大约 75 步之内，前一词元头和
归纳头一起出现，损失也在同一时间下降：这两个头只有成对时才有用。]],
        },
        code = [[
steps = extra["formed.step"]
for i = 1, steps:shape()[1], 2 do
  print(string.format(tr{
    en = "step %3d  previous %.2f  induction %.2f  loss %s",
    zh = "第 %3d 步  前一词元 %.2f  归纳 %.2f  损失 %s"},
    steps[i], extra["formed.previous"][i],
    extra["formed.induction"][i],
    i > 1 and string.format("%.2f", extra["history.loss"][i - 1])
          or "-"))
end]],
    },

    step{
        title = {en = "Train it yourself", zh = "自己训练一次"},
        text = {
            en = [[
At the prompt you can train a fresh copy (about 6 s; Ctrl-C stops it and keeps what it learned):

    m2 = mha.nn.Transformer{vocab = 20, d_model = 32, heads = 2,
                            layers = 2, d_ff = 0, max_len = 24}
    h = mha.train{model = m2, task = t, steps = 600, lr = 1e-2, plot = true}
    mha.heads.report(m2, probes)

Here, 100 steps only show that the loss starts to move.]],
            zh = [[
在提示符下你可以训练一个新模型（大约 6 秒；Ctrl-C 会停止并保留已学到的）：

    m2 = mha.nn.Transformer{vocab = 20, d_model = 32, heads = 2,
                            layers = 2, d_ff = 0, max_len = 24}
    h = mha.train{model = m2, task = t, steps = 600, lr = 1e-2, plot = true}
    mha.heads.report(m2, probes)

这里只跑 100 步，只为看到损失开始变化。]],
        },
        code = [[
m2 = mha.nn.Transformer{vocab = 20, d_model = 32, heads = 2,
                        layers = 2, d_ff = 0, max_len = 24}
check_tokens, check_targets = t:batch(64)
before = mha.train.loss(m2:forward(check_tokens), check_targets):item()
h = mha.train{model = m2, task = t, steps = 100, lr = 1e-2,
              log_every = 100, quiet = true}
after = mha.train.loss(m2:forward(check_tokens), check_targets):item()
print(tr{en = "loss before, after 100 steps:", zh = "100 步前后的损失："},
      string.format("%.1f  %.1f", before, after))]],
    },

    exercise{
        title = {en = "A score by hand", zh = "手算一个分数"},
        prompt = {
            en = [[
Compute layer 1 head 1's previous-token score on the single probe by hand: the weight each query i
puts on key i - 1, summed over i = 2 .. 22, divided by the number of query positions. Use
maps[1][1][1] (22×22) and answer(number).]],
            zh = [[
手算第 1 层头 1 在单个探针上的前一词元分数：每个查询 i 放在键 i - 1 上的权重，对 i = 2 .. 22 求和，
再除以查询位置的个数。用 maps[1][1][1]（22×22），answer(数值)。]],
        },
        solution = [[(maps[1][1][1]:narrow(1, 2, 21):narrow(2, 1, 21)
  * mha.eye(21)):sum():item() / 22]],
        mistakes = {
            mistake{wrong = [[(maps[1][1][1]:narrow(1, 2, 21):narrow(2, 1, 21)
  * mha.eye(21)):sum():item() / 21]],
                hint = {en = "the detector averages over all 22 query positions, the first (with no key before it) too",
                        zh = "检测器对全部 22 个查询位置取平均，包括第一个（它前面没有键）"}},
        },
    },
}
