-- lessons/17_residual_norm_training.lua - “多头自注意力模块”'s claims measured: gradient norms through a deep
-- stack with and without residual connections; training with and without layer norm; the training loop of
-- “Transformer大模型实战：多头注意力层解析” for real.
return lesson{
    name = "residual_norm_training", seed = 17,
    title = {en = "Residuals, layer norm, a real training loop", zh = "残差、层归一化与真实的训练循环"},
    summary = {en = "a tutorial's claims on residuals and layer norm measured; another's training loop run",
               zh = "测量一篇教程关于残差与层归一化的说法；运行另一篇的训练循环"},

    step{
        title = {en = "Gradients through a deep stack", zh = "穿过深层堆叠的梯度"},
        text = {
            en = [[
The tutorial “多头自注意力模块” says residual connections ease vanishing gradients. Stack layers
y = tanh(W·y + b) and measure the gradient that reaches the input, with y = f(y) (plain) and
y = y + f(y) (residual).]],
            zh = [[
教程《多头自注意力模块》说残差连接缓解梯度消失。堆叠 y = tanh(W·y + b) 层，测量到达输入的梯度，分别用
y = f(y)（普通）和 y = y + f(y)（残差）。]],
        },
        code = [[
function input_grad(depth, residual)
  mha.seed(17)
  local x = mha.randn(8, 32):requires_grad(true)
  local y = x
  for i = 1, depth do
    local lin = mha.nn.Linear{in_features = 32, out_features = 32}
    local f = mha.tanh(lin(y))
    y = residual and (y + f) or f
  end
  y:sum():backward()
  return (x:grad() * x:grad()):sum():sqrt():item()
end
print(tr{en = "depth   plain |dx|   residual |dx|",
         zh = "深度    普通 |dx|    残差 |dx|"})
for _, depth in ipairs({2, 8, 32}) do
  print(string.format("%5d   %10.1e   %13.1f", depth,
        input_grad(depth, false), input_grad(depth, true)))
end]],
    },

    step{
        title = {en = "Training with and without layer norm", zh = "有无层归一化的训练"},
        text = {
            en = [[
The same tutorial says layer norm stabilises training. Six layers, the reverse task, a bold
learning rate of 0.03, 100 steps, the same seed: once with pre-norm, once with no norm at all.]],
            zh = [[
同一篇教程说层归一化让训练稳定。六层，反转任务，较大的学习率 0.03，100 步，相同的种子：一次用
pre-norm，一次完全不用归一化。]],
        },
        code = [[
results = {}
for _, norm in ipairs({"pre", "none"}) do
  mha.seed(17)
  local m = mha.nn.Transformer{vocab = 10, d_model = 32, heads = 2,
    layers = 6, d_ff = 64, max_len = 12, norm = norm}
  local t = mha.tasks.reverse{vocab = 10, len = 6, batch = 16}
  results[norm] = mha.train{model = m, task = t, steps = 100,
    lr = 3e-2, log_every = 50, seed = 1, quiet = true}
end
yes_no = {[true] = tr{en = "yes", zh = "是"}, [false] = tr{en = "no", zh = "否"}}
for _, norm in ipairs({"pre", "none"}) do
  local h = results[norm]
  print(string.format(tr{en = "norm = %-4s  accuracy >= 90%%: %s  loss < 1: %s",
                         zh = "norm = %-4s  准确率 >= 90%%：%s  损失 < 1：%s"},
        norm, yes_no[h.acc[2] >= 0.9], yes_no[h.loss[2] < 1]))
end]],
    },

    step{
        title = {en = "A tutorial's model does not parse; its loop is right",
                 zh = "一篇教程的模型无法解析，它的循环却是对的"},
        text = {
            en = [[
The tutorial “Transformer大模型实战：多头注意力层解析” builds its Decoder's layers with

    nn.ModuleList([MultiHeadAttention(...), CrossAttention(...),
                   nn.Linear(d_model, d_model) for _ in range(num_layers)])

which is a Python syntax error (a list comprehension has one expression before `for`), and its
forward calls self.fc, which it never made. Its loop, though, is the right one. Here it is for real:
zero the gradients, forward, loss, backward, step.]],
            zh = [[
教程《Transformer大模型实战：多头注意力层解析》的 Decoder 这样构造各层：

    nn.ModuleList([MultiHeadAttention(...), CrossAttention(...),
                   nn.Linear(d_model, d_model) for _ in range(num_layers)])

这是 Python 语法错误（列表推导式在 `for` 前只能有一个表达式），而且 forward 调用了从未创建的
self.fc。不过它的循环是对的。下面真正运行它：清零梯度、前向、损失、反向、更新。]],
        },
        code = [[
mha.seed(3)
model = mha.nn.Transformer{vocab = 10, d_model = 32, heads = 2,
  layers = 1, d_ff = 0, max_len = 12}
optimizer = mha.optim.Adam(model:parameters(), {lr = 3e-3})
data = mha.tasks.copy{vocab = 10, len = 6, batch = 64, seed = 3}
for epoch = 1, 150 do
  optimizer:zero_grad()
  src, tgt = data:batch()
  output = model:forward(src, {need_weights = false})
  loss, acc = mha.train.loss(output, tgt)
  loss:backward()
  optimizer:step()
end
print(tr{en = "copy learned (accuracy >= 99%):",
         zh = "学会了复制（准确率 >= 99%）："}, yes_no[acc >= 0.99])]],
    },

    exercise{
        title = {en = "What the optimizer updates", zh = "优化器更新什么"},
        prompt = {
            en = [[
How many parameter tensors does that optimizer update? (model:parameter_names() lists them.)
answer(number)]],
            zh = [[
这个优化器更新多少个参数张量？（model:parameter_names() 列出它们。）answer(数值)]],
        },
        solution = [[#model:parameter_names()]],
        mistakes = {
            mistake{wrong = [[#model:parameter_names() - 2]],
                hint = {en = "count the embeddings too: embed.weight and pos.weight are parameters",
                        zh = "嵌入也要算：embed.weight 和 pos.weight 都是参数"}},
        },
    },
}
