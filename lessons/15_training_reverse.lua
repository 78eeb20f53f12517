-- lessons/15_training_reverse.lua - training a layer: a one-layer attention-only model learns to reverse a
-- sequence; its heads go from looking nowhere in particular to an anti-diagonal; loss and accuracy plotted.
return lesson{
    name = "training_reverse", seed = 15,
    title = {en = "Training a layer: reverse", zh = "训练一层：反转序列"},
    summary = {en = "a one-layer model learns to reverse; its heads before and after",
               zh = "一层模型学会反转；训练前后的头"},

    step{
        title = {en = "The task", zh = "任务"},
        text = {
            en = [[
Six symbols (1 .. 9), the separator 10, then the six in reverse order. The model reads left to right
(causal attention) and at every position predicts the next token; only the predictions of the
reversed half count (targets 0 elsewhere, shown as -). mha.tasks.show prints the ids as the whole
numbers they are (show prints a float tensor, "3."; the ids are whole numbers stored as floats).]],
            zh = [[
六个符号（1 .. 9），分隔符 10，然后是这六个符号的逆序。模型从左往右读（因果注意力），在每个位置预测下
一个词元；只有逆序那一半的预测计入（其他位置的目标为 0，显示为 -）。mha.tasks.show 把编号印成整数
（show 印的是浮点张量，写作 "3."；编号是以浮点数存放的整数）。]],
        },
        code = [[
task = mha.tasks.reverse{vocab = 10, len = 6, batch = 64}
tokens, targets = task:batch(2)
mha.tasks.show(tokens, {title = tr{en = "tokens", zh = "词元"}})
mha.tasks.show(targets, {zero = "-",
               title = tr{en = "targets (- = not counted)",
                          zh = "目标（- = 不计入）"}})]],
    },

    step{
        title = {en = "An untrained model", zh = "未训练的模型"},
        text = {
            en = [[
One layer of attention (2 heads, d_model 32), no MLP. At position 6 + k the answer is symbol
7 - k, so a head that solves the task must look from query 6 + k at key 7 - k: the sum key + query
is 13 on every row, an anti-diagonal. Untrained, each query looks wherever its random weights say.]],
            zh = [[
一层注意力（2 个头，d_model 32），没有 MLP。在位置 6 + k，答案是第 7 - k 个符号，所以能解决这个任务的头
必须从查询 6 + k 看向键 7 - k：每一行的 键 + 查询 都是 13，即一条反对角线。未训练时，每个查询看向
哪里由随机权重决定。]],
        },
        code = [[
model = mha.nn.Transformer{vocab = 10, d_model = 32, heads = 2,
                           layers = 1, d_ff = 0, max_len = 12}
check_tokens, check_targets = mha.tasks.reverse{vocab = 10, len = 6,
  batch = 500, seed = 99}:batch()
function accuracy()
  local logits = mha.no_grad(function()
    return model:forward(check_tokens)
  end)
  local _, acc = mha.train.loss(logits, check_targets)
  return acc
end
function looks()
  model:forward(tokens)
  for h = 1, 2 do
    local w, keys = model:attention()[1][1][h], {}
    for q = 7, 12 do
      keys[#keys + 1] = string.format("%d", w[q]:argmax():item())
    end
    local fmt = tr{en = "head %d, queries 7-12 look at keys %s",
                   zh = "头 %d，查询 7-12 看向键 %s"}
    print(string.format(fmt, h, table.concat(keys, " ")))
  end
end
print(tr{en = "accuracy below 20%:", zh = "准确率低于 20%："}, accuracy() < 0.2)
looks()]],
    },

    step{
        title = {en = "Training", zh = "训练"},
        text = {
            en = [[
mha.train draws a batch, runs the model, takes the cross entropy on the counted positions, runs
backward and lets AdamW update every parameter: 400 times, about 2 s. At the prompt a progress line
counts the steps, and plot = true draws the curves as they come.]],
            zh = [[
mha.train 取一批数据、运行模型、在计入的位置上算交叉熵、反向传播，再让 AdamW 更新每个参数：共 400 次，
大约 2 秒。在提示符下会有一行进度显示步数，plot = true 会随训练画出曲线。]],
        },
        code = [[
h = mha.train{model = model, task = task, steps = 400, lr = 3e-3,
              log_every = 20, quiet = true}
plot.line{{x = h.step, y = h.loss, title = tr{en = "loss", zh = "损失"}},
          {x = h.step, y = h.acc,
           title = tr{en = "accuracy", zh = "准确率"}},
          xlabel = tr{en = "step", zh = "步"}}
print(tr{en = "accuracy on 500 new sequences >= 99%:",
         zh = "在 500 个新序列上准确率 >= 99%："}, accuracy() >= 0.99)]],
    },

    step{
        title = {en = "The heads after", zh = "训练后的头"},
        text = {
            en = [[
The same queries now look at 6 5 4 3 2 1: the anti-diagonal. Nobody wrote this rule; it is what
gradient descent found useful. plot.heatmap shows head 1's whole map.]],
            zh = [[
同样的查询现在看向 6 5 4 3 2 1：反对角线。没有人写下这条规则；这是梯度下降找到的有用做法。
plot.heatmap 画出头 1 的完整注意力图。]],
        },
        code = [[
looks()
plot.heatmap(model:attention()[1][1][1],
  {title = tr{en = "head 1 after training", zh = "训练后的头 1"}})]],
    },

    exercise{
        title = {en = "Where does query 9 look?", zh = "查询 9 看向哪里？"},
        prompt = {
            en = [[
In a trained head, which key does the query at position 9 attend to most? Work it out from the
layout (x1..x6 SEP y1..y5), then check with model:attention(). answer(number)]],
            zh = [[
在训练好的头里，位置 9 的查询最关注哪个键？先从布局（x1..x6 SEP y1..y5）推出来，再用
model:attention() 验证。answer(数值)]],
        },
        solution = [[4]],
        mistakes = {
            mistake{wrong = [[3]],
                hint = {en = "position 9 holds y2 and predicts the NEXT token, y3 = x4",
                        zh = "位置 9 上是 y2，它预测的是*下一个*词元 y3 = x4"}},
            mistake{wrong = [[5]],
                hint = {en = "x5 is y2, which position 9 already holds; it predicts y3",
                        zh = "x5 就是 y2，位置 9 上已经有了；它要预测 y3"}},
        },
    },
}
