-- lessons/26_a_model_that_read.lua - a model that has read: the shipped character models char_en (the
-- King James Bible) and char_zh (the 300 Tang poems) write at several temperatures, and their
-- validation loss stands beside the unigram and bigram baselines counted in the lesson.
return lesson{
    name = "a_model_that_read", seed = 26,
    title = {en = "A model that has read", zh = "一个读过书的模型"},
    summary = {en = "character models of the Bible and of Tang poems write; their loss against n-gram baselines",
               zh = "读过圣经和唐诗的字符模型写字；它们的损失与 n 元基线相比"},

    step{
        title = {en = "Two models that have read", zh = "两个读过书的模型"},
        text = {
            en = [[
Every model so far read random symbols. These two read real text, one character at a time:
char_en the King James Bible (4.1 million characters), char_zh the 300 Tang poems. Each is 4
layers of 4 heads, context 64, and predicts the next character. Its tokenizer, which maps each
character to an id, comes with it.]],
            zh = [[
到目前为止的模型读的都是随机符号。这两个模型读的是真正的文本，一次一个字符：char_en 读的是英王钦定本
圣经（410 万个字符），char_zh 读的是唐诗三百首。每个模型 4 层、每层 4 个头、上下文 64，预测下一个字符。
它的分词器（把每个字符映射成一个编号）和模型一起保存。]],
        },
        code = [[
en, en_extra = mha.load_model("char_en")
zh, zh_extra = mha.load_model("char_zh")
en_tok, zh_tok = en_extra.tokenizer, zh_extra.tokenizer
print(tr{en = "char_en: layers, heads, d_model, context:",
         zh = "char_en：层数、头数、d_model、上下文："},
      en.layers, en.heads, en.d_model, en.max_len)
print(tr{en = "characters it knows:", zh = "它认识的字符数："},
      en_tok.vocab_size, zh_tok.vocab_size)
ids = en_tok:encode("God"):totable()
print(tr{en = "\"God\" as ids:", zh = "\"God\" 的编号："},
      string.format("%d %d %d", table.unpack(ids)))
print(tr{en = "char_zh's ids 100, 200, 300:", zh = "char_zh 的编号 100、200、300："},
      zh_tok:decode({100, 200, 300}))]],
    },

    step{
        title = {en = "It writes", zh = "它会写"},
        text = {
            en = [[
mha.generate runs the loop of lesson 19: the logits of the last position, a character drawn
from them, appended, again. A seed makes a run repeatable. At T = 0.5 it keeps to the likeliest
characters; at T = 1.2 it takes more chances and makes up words (↵ marks a line end).]],
            zh = [[
mha.generate 运行第 19 课的循环：取最后一个位置的 logits，从中抽一个字符，接在后面，再来。种子让一次
运行可以重现。T = 0.5 时它只取最可能的字符；T = 1.2 时它更冒险，会编出不存在的词（↵ 表示换行）。]],
        },
        code = [[
for _, T in ipairs{0.5, 0.8, 1.2} do
  local text = mha.generate(en, en_tok, "And God said",
      {max_new_tokens = 50, temperature = T, seed = 1, stream = false})
  print(string.format("T = %.1f  %s", T, (text:gsub("\n", "↵"))))
end]],
    },

    step{
        title = {en = "A poem, of a kind", zh = "一首诗，算是吧"},
        text = {
            en = [[
Given a title in 《》 and a line end, char_zh writes what follows a title in its book: an author
line (作者：...) and lines cut by ， and ended by 。. The characters rarely make sense, but
most half-lines have five or seven characters, as in the book: its positions are rotary (lesson
22), so a head can find the last ， or 。 and the model can count from it.]],
            zh = [[
给它一个《》里的标题和一个换行，char_zh 就写出书中标题后面的东西：作者行（作者：……）和用 ， 断开、
用 。 结束的诗句。这些字很少讲得通，但大多数半句是五个字或七个字，和书里一样：它的位置是旋转位置
（第 22 课），一个头能找到上一个 ， 或 。，模型就能从那里数字数。]],
        },
        code = [[
for _, T in ipairs{0.5, 1.2} do
  print(string.format("T = %.1f", T))
  local opts = {max_new_tokens = 36, temperature = T, seed = 1}
  opts.stream = true      -- tr{en = "it prints as it writes", zh = "边写边打印"}
  mha.generate(zh, zh_tok, "《春晓》\n", opts)
end]],
    },

    step{
        title = {en = "How good is it? Baselines", zh = "它有多好？基线"},
        text = {
            en = [[
The loss is the mean of -log p(next character), in nats. Two models that only count set the
bar: the unigram guesses each character by how often it occurs, the bigram by how often it
follows the one before. Counting all 3.7 million training characters takes seconds, so here
the counts come from the first 400000 and the loss from the first 40000 validation characters.]],
            zh = [[
损失是 -log p(下一个字符) 的平均值，单位是奈特。两个只会计数的模型给出标准：一元模型按每个字符出现的
频率猜，二元模型按它跟在前一个字符后面的频率猜。数完全部 370 万个训练字符要好几秒，所以这里用前
400000 个训练字符计数，用前 40000 个验证字符算损失。]],
        },
        code = [[
writing = require "mha.writing"
train, valid = mha.data.split(mha.data.text("kjv"), {val = 0.1})
part, held = train:sub(1, 400000), valid:sub(1, 40000)
unigram, bigram = writing.baselines(part, held, en_tok)
model = writing.val_loss(en, en_tok, held, {batches = 2, batch = 8})
LESSON.table({{tr{en = "unigram", zh = "一元"}, unigram},
              {tr{en = "bigram", zh = "二元"}, bigram}, {"char_en", model}},
             tr{en = {"model", "loss (nats)"}, zh = {"模型", "损失（奈特）"}}, "%.2f")]],
    },

    step{
        title = {en = "What the figures say", zh = "这些数字说明什么"},
        text = {
            en = [[
Over every validation character the README reports unigram 3.02, bigram 2.32, char_en 1.53
(the model's loss above is over 16 windows of 64, so it moves a little). exp(loss) is how many
characters the model is as unsure as a fair pick among: about 20 for the unigram, 4.6 for char_en.
char_zh beats its unigram too, but its bigram is worse than its unigram: most pairs of the
validation poems never occur in the 300 training poems.]],
            zh = [[
在全部验证字符上，README 给出一元 3.02、二元 2.32、char_en 1.53（上面模型的损失只在 16 个长 64 的窗口上
算，所以会有一点出入）。exp(损失) 表示模型的不确定程度相当于在多少个字符中公平地挑一个：一元模型约 20 个，
char_en 约 4.6 个。char_zh 也胜过它的一元模型，但它的二元模型比一元还差：验证诗里的大多数字对从没在 300 首
训练诗中出现过。]],
        },
        code = [[
print(tr{en = "exp(loss), unigram and char_en:", zh = "exp(损失)，一元与 char_en："},
      string.format("%.1f  %.1f", math.exp(unigram), math.exp(model)))
ztrain, zvalid = mha.data.split(mha.data.text("tang300"), {val = 0.1})
zu, zb = writing.baselines(ztrain, zvalid, zh_tok)
zm = writing.val_loss(zh, zh_tok, zvalid, {batches = 2, batch = 8})
print(tr{en = "char_zh: unigram, bigram, model:", zh = "char_zh：一元、二元、模型："},
      string.format("%.2f  %.2f  %.2f", zu, zb, zm))]],
    },

    exercise{
        title = {en = "The loss of a blind guess", zh = "瞎猜的损失"},
        prompt = {
            en = [[
A model that gives each of char_en's 63 characters the same probability: what is its loss in
nats? answer(number)]],
            zh = [[
一个给 char_en 的 63 个字符相同概率的模型：它的损失是多少奈特？answer(数值)]],
        },
        solution = [[math.log(63)]],
        mistakes = {
            mistake{wrong = [[1 / 63]],
                hint = {en = "that is the probability; the loss is -log of it",
                        zh = "这是概率；损失是它的 -log"}},
            mistake{wrong = [[math.log(63, 2)]],
                hint = {en = "in bits; the lesson's losses are in nats (the natural log)",
                        zh = "这是比特；本课的损失以奈特为单位（自然对数）"}},
        },
    },
}
