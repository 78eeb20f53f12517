-- lessons/28_train_your_own.lua - train a small character model at the prompt on a slice of the Bible:
-- the loss and the samples improve, Ctrl-C stops a run and a checkpoint lets it go on, and the
-- checkpoint loads as a model that writes. A replay (--batch) trains 40 steps; the prompt 600.
return lesson{
    name = "train_your_own", seed = 28,
    title = {en = "Train your own", zh = "自己训练一个"},
    summary = {en = "a small character model trained at the prompt: loss, samples, stop and resume",
               zh = "在提示符下训练一个小字符模型：损失、样本、停止与继续"},

    step{
        title = {en = "A slice and a small model", zh = "一段文本和一个小模型"},
        text = {
            en = [[
char_en took minutes to train; this one trains while you watch. It reads the first 200000
characters of the Bible's training part (Genesis and most of Exodus) in windows of 32, and is
checked on 20000 characters of the validation part. 2 layers of 4 heads, d_model 64. Untrained,
it writes every character about as often as any other.]],
            zh = [[
char_en 训练了好几分钟；这个模型在你眼前训练。它读圣经训练部分的前 200000 个字符（创世记和出埃及记的大部分），
每次一个长 32 的窗口，并在验证部分的 20000 个字符上检查。2 层，每层 4 个头，d_model 64。没训练时，它写出
每个字符的机会都差不多。]],
        },
        code = [[
kjv = mha.data.text("kjv")
tok = mha.tokenizer.CharTokenizer(kjv)        -- tr{en = "63 characters", zh = "63 个字符"}
train, valid = mha.data.split(kjv, {val = 0.1})
part, held = train:sub(1, 200000), valid:sub(1, 20000)
task = mha.tasks.text{text = part, tokenizer = tok, len = 32, batch = 16,
                      seed = 1}
m = mha.nn.Transformer{vocab = tok.vocab_size, d_model = 64, heads = 4,
                       layers = 2, max_len = 32}
function sample(model)   -- tr{en = "40 characters after a prompt", zh = "提示之后的 40 个字符"}
  local opts = {max_new_tokens = 40, temperature = 0.8, seed = 1}
  opts.stream = false   -- tr{en = "printed once, below", zh = "只在下面打印一次"}
  print((mha.generate(model, tok, "And God said", opts):gsub("\n", "↵")))
end
sample(m)]],
    },

    step{
        title = {en = "Training, with a checkpoint", zh = "训练，并保存检查点"},
        text = {
            en = [[
mha.train prints the training loss and, with val =, the validation loss. checkpoint = path
writes the model, the optimizer's state and the history there every log step and when Ctrl-C
stops the run. A replay trains 40 steps (under a second of CPU); at the prompt the lesson
trains 600 (4 to 20 s of CPU, by the machine), which reach a validation loss of 1.87 and write "And God said, and and
took the bed he grow thee done": spaces and common words come first, spelling later. Ctrl-C
stops it with what m has learned; Enter then runs the step again, on from those weights.]],
            zh = [[
mha.train 打印训练损失，给了 val = 时还打印验证损失。checkpoint = 路径 在每个记录步、以及 Ctrl-C 停止训练时，
把模型、优化器的状态和历史写到那里。回放只训练 40 步（不到 1 秒 CPU）；在提示符下本课训练 600 步（视机器而定，
4 到 20 秒 CPU），验证损失降到 1.87，写出“And God said, and and took the bed he grow thee done”：先学会的是空格和常用词，
拼写要晚一些。Ctrl-C 会让它停下，m 保留已学到的；再按回车会重新运行这一步，从这些权重接着训练。]],
        },
        code = [[
path = LESSON.scratch(".npz")  -- tr{en = "a scratch file; yours: \"mine.npz\"", zh = "临时文件；你自己的：\"mine.npz\""}
steps = LESSON.batch and 40 or 600
h = mha.train{model = m, task = task, steps = steps, lr = 3e-3, val = held,
              val_batches = 2, log_every = steps // 4, checkpoint = path}
sample(m)]],
    },

    step{
        title = {en = "Stop, and go on", zh = "停下，再继续"},
        text = {
            en = [[
Ctrl-C during mha.train stops it after the step it is in; the model keeps what it learned and
the checkpoint holds that step. resume = path goes on from it, into any model of the same shape:
here a fresh one, to show that the file holds everything. steps counts the steps before it too,
so this run does 20 more. Its batches are drawn anew, so it is not the run you would have had
without the stop, only as good.]],
            zh = [[
在 mha.train 运行时按 Ctrl-C，它会在当前这一步结束后停下；模型保留已学到的，检查点保存这一步。resume = 路径
从那里继续，可以继续到任何同样形状的模型里：这里用一个新模型，以说明文件里保存了一切。steps 也把之前的步数
算在内，所以这次再跑 20 步。它的批次是重新抽取的，所以不是没有停下时的那次运行，只是一样好。]],
        },
        code = [[
m2 = mha.nn.Transformer{vocab = tok.vocab_size, d_model = 64, heads = 4,
                        layers = 2, max_len = 32}
h2 = mha.train{model = m2, task = task, steps = steps + 20, lr = 3e-3,
               val = held, val_batches = 2, log_every = 10,
               checkpoint = path, resume = path}
print(tr{en = "steps done:", zh = "完成的步数："}, h2.steps)]],
    },

    step{
        title = {en = "Your model, like the shipped ones", zh = "你的模型，和自带的一样"},
        text = {
            en = [[
A checkpoint of a text task keeps its tokenizer, so mha.load_model reads it as it reads
char_en. Measure it as lesson 26 measured char_en: on the same windows of the held-out text,
the loss of yours beside char_en's. After the prompt's 600 and 20 steps yours is at 1.92 on these
windows; char_en, 4 layers of d_model 128 after 1500 steps of 12 windows of 64, at 1.48.]],
            zh = [[
文本任务的检查点保存了分词器，所以 mha.load_model 像读 char_en 一样读它。像第 26 课测量 char_en 那样测量它：
在留出文本的同样窗口上，把你的模型的损失和 char_en 的放在一起。在提示符下训练 600 步再加 20 步后，你的模型在这些
窗口上是 1.92；char_en 有 4 层、d_model 128，用 12 个长 64 的窗口训练了 1500 步，是 1.48。]],
        },
        code = [[
mine, extra = mha.load_model(path)
en = mha.load_model("char_en")
function loss(model)   -- tr{en = "the same 16 windows of 32", zh = "同样的 16 个长 32 的窗口"}
  return require("mha.writing").val_loss(model, tok, held,
                                         {batches = 2, batch = 8, len = 32})
end
LESSON.table({{tr{en = "yours", zh = "你的"}, loss(mine)}, {"char_en", loss(en)}},
             tr{en = {"model", "loss (nats)"}, zh = {"模型", "损失（奈特）"}}, "%.2f")
print(tr{en = "its tokenizer is the lesson's:", zh = "它的分词器就是本课的："},
      extra.tokenizer.vocab_size == tok.vocab_size)
if LESSON.batch then os.remove(path) end]],
    },

    exercise{
        title = {en = "Characters per step", zh = "每步的字符数"},
        prompt = {
            en = [[
One training step of this lesson reads a batch of 16 windows of 32 characters. On how many
positions is the loss counted in one step? answer(number)]],
            zh = [[
本课的一个训练步读一批 16 个长 32 个字符的窗口。一步中在多少个位置上计算损失？answer(数值)]],
        },
        solution = [[16 * 32]],
        mistakes = {
            mistake{wrong = [[16 * 33]],
                hint = {en = "a window of 32 has 32 targets: each is the character after one of its positions",
                        zh = "长 32 的窗口有 32 个目标：每个都是它某个位置之后的那个字符"}},
            mistake{wrong = [[32]],
                hint = {en = "that is one window; a batch holds 16",
                        zh = "这只是一个窗口；一批有 16 个"}},
        },
    },
}
