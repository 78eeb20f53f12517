-- lessons/27_heads_on_text.lua - the heads of a model that has read: per-head maps of char_en on a real
-- sentence with its characters as labels (mha.show_attention), a previous-character head and a
-- start-of-word head measured with mha.heads.detect and a pattern the lesson builds, no induction
-- head yet, and char_zh's heads on a poem: heads that find where the half-line began, none that
-- looks at the same place in the line before.
return lesson{
    name = "heads_on_text", seed = 27,
    title = {en = "The heads of a model that has read", zh = "读过书的模型的头"},
    summary = {en = "char_en's heads on a sentence: previous character, start of the word; what is not there",
               zh = "char_en 的头在一句话上：前一个字符、词的开头；以及还没有的东西"},

    step{
        title = {en = "A sentence, one head", zh = "一句话，一个头"},
        text = {
            en = [[
Feed char_en a sentence in the Bible's words and look at one head: each row is a character
asking (the query), each column a character it may look at (the key), ␣ a space. A long text
shows a window: here the last 16 of its 63 characters. Layer 1's head 1 looks at the character
just before: the shade runs one step left of the diagonal.]],
            zh = [[
把一句圣经用语的话输入 char_en，看一个头：每一行是一个提问的字符（查询），每一列是它可以看的字符（键），
␣ 表示空格。长文本只显示一个窗口：这里是 63 个字符中的最后 16 个。第 1 层的头 1 看紧挨在前面的字符：
深色沿着对角线左边一格排下去。]],
        },
        code = [[
en, extra = mha.load_model("char_en")
tok = extra.tokenizer
s = "And Laban said, Nay. And Jacob said unto Laban, Give me my wife"
mha.no_grad(function() en:forward(tok:encode(s):view(1, -1)) end)
maps = en:attention()       -- tr{en = "4 layers of (1, 4, 63, 63)", zh = "4 层，每层 (1, 4, 63, 63)"}
mha.show_attention(maps, s, {layer = 1, head = 1, window = 16})]],
    },

    step{
        title = {en = "Measured on the validation text", zh = "在验证文本上测量"},
        text = {
            en = [[
One sentence can mislead. mha.heads.detect (lesson 16) scores every head by its mean weight on
the key a pattern names, here over 16 windows of 64 characters of the validation text, which
the model never trained on. Layer 1's head 1 puts 0.96 of its weight on the previous
character; head 3 of the same layer 0.38; every other head 0.3 or less.]],
            zh = [[
一句话可能误导人。mha.heads.detect（第 16 课）按每个头在模式所指的键上的平均权重给它打分，这里用验证
文本中 16 个长 64 个字符的窗口，模型从没在上面训练过。第 1 层的头 1 把 0.96 的权重放在前一个字符上；
同一层的头 3 是 0.38；其余的头都不超过 0.3。]],
        },
        code = [[
function board(scores)   -- tr{en = "(layers, heads), two decimals", zh = "（层，头），两位小数"}
  local rows = {}
  for l = 1, 4 do
    rows[l] = {string.format(tr{en = "layer %d", zh = "第 %d 层"}, l),
               table.unpack(scores[l]:totable())}
  end
  LESSON.table(rows, tr{en = {"", "head 1", "head 2", "head 3", "head 4"},
                        zh = {"", "头 1", "头 2", "头 3", "头 4"}}, "%.2f")
end
_, valid = mha.data.split(mha.data.text("kjv"), {val = 0.1})
windows = mha.tasks.text{text = valid:sub(1, 100000), tokenizer = tok,
                         len = 64, seed = 3}:batch(16)
board(mha.heads.detect(en, windows, "previous"))]],
    },

    step{
        title = {en = "A pattern of our own: the start of the word", zh = "自己的模式：词的开头"},
        text = {
            en = [[
The detector knows three patterns; a new one is a 0/1 matrix P (L, L) with P[i][j] = 1 where
query i should look. Here j is the first letter of the word that i is in (after a space or a
line end), and a head's score is its weight on that letter, averaged over every position. Layer
2's head 3 scores 0.41, twice as much as most heads: a start-of-word head.]],
            zh = [[
检测器只认识三种模式；新的模式是一个 0/1 矩阵 P (L, L)，查询 i 应该看的位置 j 上 P[i][j] = 1。这里 j 是
i 所在的词的第一个字母（在空格或换行之后），一个头的得分是它在这个字母上的权重，对所有位置取平均。第 2 层
的头 3 得 0.41，是多数头的两倍：一个看词开头的头。]],
        },
        code = [=[
function word_starts(ids)  -- tr{en = "P[i][j] = 1: j starts i's word", zh = "P[i][j] = 1：j 是 i 所在词的开头"}
  local P, first = mha.zeros(64, 64), 1
  for i = 1, 64 do
    local before = i > 1 and tok.chars[ids[i - 1]]
    if before == " " or before == "\n" then first = i end
    P[i][first] = 1
  end
  return P
end
mha.no_grad(function() en:forward(windows) end)
maps, sums = en:attention(), mha.zeros(4, 4)
for n = 1, 16 do
  local P = word_starts(windows[n]):view(1, 64, 64)
  for l = 1, 4 do
    sums[l]:copy_(sums[l] + (maps[l][n] * P):sum(3):sum(2))
  end
end
board(sums / (16 * 64))]=],
    },

    step{
        title = {en = "The start-of-word head, seen", zh = "看见词开头头"},
        text = {
            en = [[
Back on the sentence: in "Give", every letter and the space after it look at G; in "me" and
"my" the letters look at m. A head like this tells the layers above which word a character is
in, which a model needs to spell the rest of the word.]],
            zh = [[
回到这句话：在 "Give" 里，每个字母和它后面的空格都看 G；在 "me" 和 "my" 里，字母看 m。这样的头告诉
上面的层一个字符在哪个词里，模型要拼出词的其余部分就需要这个。]],
        },
        code = [[
mha.no_grad(function() en:forward(tok:encode(s):view(1, -1)) end)
mha.show_attention(en:attention(), s, {layer = 2, head = 3, window = 16})]],
    },

    step{
        title = {en = "No induction head yet", zh = "还没有归纳头"},
        text = {
            en = [[
"Laban" comes twice in the sentence. An induction head (lesson 16) at the second "Lab" would
look at the letter after the first copy. Scored only on the positions that have an earlier copy,
no head does it well (the best 0.23), and on 20 random characters said twice, where lesson 16's
model scored near 0.5, none reaches 0.06. After 1500 steps char_en has not formed one.]],
            zh = [[
"Laban" 在这句话里出现了两次。归纳头（第 16 课）在第二个 "Lab" 上会看第一次出现之后的那个字母。只在有
前一次出现的位置上打分，没有一个头做得好（最高 0.23）；在说两遍的 20 个随机字符上，第 16 课的模型接近
0.5，这里没有一个头达到 0.06。训练 1500 步后，char_en 还没有形成归纳头。]],
        },
        code = [[
only = {rows = "detected"}   -- tr{en = "positions with an earlier copy", zh = "有前一次出现的位置"}
board(mha.heads.detect(en, tok:encode(s), "induction", only))
probes = mha.tasks.repeated(en.vocab, 20, 8, 99)
best = mha.heads.detect(en, probes, "induction", only):max():item()
print(tr{en = "on random repeats, the best head:", zh = "在随机重复上，最好的头："},
      string.format("%.2f", best))]],
    },

    step{
        title = {en = "char_zh on a poem", zh = "char_zh 读一首诗"},
        text = {
            en = [[
A line of a five-character poem is 13 characters with its ， 。 and line end, so "the same place
in the line before" is 13 back. On this poem, scored on that pattern, no head of char_zh follows
it: the best, layer 4's head 3, puts 0.08 there, against 0.05 for an even spread over the keys.]],
            zh = [[
五言诗的一行连同 ， 。 和换行共 13 个字符，所以“上一行的同一位置”在往前 13 个。在这首诗上用这个模式
打分，char_zh 没有一个头遵循它：最好的是第 4 层的头 3，在那里放了 0.08，
而把权重均匀分给各个键是 0.05。]],
        },
        code = [[
zh, zh_extra = mha.load_model("char_zh")
ztok = zh_extra.tokenizer
poem = "嫁得瞿塘贾，朝朝误妾期。\n早知潮有信，嫁与弄潮儿。"
mha.no_grad(function() zh:forward(ztok:encode(poem):view(1, -1)) end)
P, even = mha.zeros(1, 25, 25), 0     -- tr{en = "25 characters", zh = "25 个字符"}
for i = 14, 25 do P[1][i][i - 13], even = 1, even + 1 / i end
scores = {}
for l, w in ipairs(zh:attention()) do
  scores[l] = ((w[1] * P):sum(3):sum(2) / 12):totable()
end
board(mha.tensor(scores))
print(tr{en = "an even spread:", zh = "均匀分布："}, string.format("%.2f", even / 12))]],
    },

    step{
        title = {en = "Where the half-line began", zh = "半句从哪里开始"},
        text = {
            en = [[
Another pattern: the last mark (， 。 ？ ！ or a line end) before each character, where its
half-line began. Over 16 windows of 64 of the validation poems, layer 3's head 1 and layer 4's
head 1 put 0.33 there and layer 4's head 4 0.29, seven to eight times an even spread (0.04);
layer 3's head 2 puts 0.22, every other head 0.16 or less. Knowing where its half-line began is
what a model needs to count the characters since (lesson 26: it writes lines of five or seven).]],
            zh = [[
另一个模式：每个字符之前的最后一个标点（， 。 ？ ！ 或换行），也就是它所在的半句开始的地方。在验证诗的
16 个长 64 的窗口上，第 3 层的头 1 和第 4 层的头 1 在那里放了 0.33，第 4 层的头 4 放了 0.29，是均匀分布
（0.04）的七到八倍；第 3 层的头 2 放了 0.22，其余的头都不超过 0.16。
知道半句从哪里开始，模型才能数出从那以后的字数（第 26 课：它写出五言或七言的诗句）。]],
        },
        code = [=[
_, zvalid = mha.data.split(mha.data.text("tang300"), {val = 0.1})
zwin = mha.tasks.text{text = zvalid, tokenizer = ztok, seed = 3}:batch(16)
marks = {["，"] = 1, ["。"] = 1, ["？"] = 1, ["！"] = 1, ["\n"] = 1}
mha.no_grad(function() zh:forward(zwin) end)
zmaps, sums, rows, even = zh:attention(), mha.zeros(4, 4), 0, 0
for n = 1, 16 do
  local P, last = mha.zeros(1, 64, 64), nil
  for i = 1, 64 do
    if last then P[1][i][last], rows, even = 1, rows + 1, even + 1 / i end
    if marks[ztok.chars[zwin[n][i]]] then last = i end
  end
  for l = 1, 4 do
    sums[l]:copy_(sums[l] + (zmaps[l][n] * P):sum(3):sum(2))
  end
end
board(sums / rows)
print(tr{en = "an even spread:", zh = "均匀分布："}, string.format("%.2f", even / rows))]=],
    },

    step{
        title = {en = "The half-line head, seen", zh = "看见半句头"},
        text = {
            en = [[
Layer 3's head 1 on the poem's last 16 characters: every character of the last half-line
(嫁与弄潮儿) puts nearly all its weight on the ， before it, and 有 and 信 lean on the 。 that
ended the first line (not on the line end).]],
            zh = [[
第 3 层的头 1 在这首诗的最后 16 个字符上：最后半句（嫁与弄潮儿）的每个字几乎把全部权重
放在它前面的 ， 上；有 和 信 偏向结束第一行的 。（而不是换行）。]],
        },
        code = [[
mha.no_grad(function() zh:forward(ztok:encode(poem):view(1, -1)) end)
mha.show_attention(zh:attention(), poem, {layer = 3, head = 1, window = 16})]],
    },

    exercise{
        title = {en = "Which head?", zh = "哪个头？"},
        prompt = {
            en = [[
In char_en, which head of layer 1 looks at the previous character? Answer with its number, e.g.
answer(2).]],
            zh = [[
在 char_en 中，第 1 层的哪个头看前一个字符？回答它的编号，例如 answer(2)。]],
        },
        solution = [[1]],
        mistakes = {
            mistake{wrong = [[3]],
                hint = {en = "head 3 puts 0.38 on the previous character; another puts 0.96",
                        zh = "头 3 在前一个字符上放 0.38；另一个头放 0.96"}},
        },
    },
}
