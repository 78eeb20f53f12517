-- lessons/29_both_directions.lua - a bidirectional (masked) character model beside a causal one on
-- the same line, a padding mask over a batch of unequal lines, and filling a masked character.
return lesson{
    name = "both_directions", seed = 29,
    title = {en = "Both directions: a masked character model", zh = "双向：遮盖字符模型"},
    summary = {en = "attention that looks both ways, padding masks, and filling a hidden character",
               zh = "双向的注意力、填充掩码，以及补出被遮住的字"},

    step{
        title = {en = "A causal model reads left to right", zh = "因果模型从左往右读"},
        text = {
            en = [[
char_zh, trained on the 300 Tang poems, is causal: the query at character i sees keys 1 .. i,
so it can write the next character. Its attention map is lower-triangular. Here is one head of its
first layer on a line of Li Bai, the characters as row (query) and column (key) labels.]],
            zh = [[
char_zh 是因果模型：第 i 个字上的查询只看得到键 1 .. i，所以它能写出下一个字。它的注意力图是下三角
的。下面是它第一层的一个头在李白的一句诗上的注意力，行（查询）和列（键）都标着字。]],
        },
        code = [[
causal, c_extra = mha.load_model("char_zh")
masked, m_extra = mha.load_model("char_zh_mlm")
tok = m_extra.tokenizer   -- tr{en = "with the marker [MASK]", zh = "带标记 [MASK]"}
line = "床前明月光，疑是地上霜。"
chars = {}
for _, c in utf8.codes(line) do chars[#chars + 1] = utf8.char(c) end
function maps(model, t, text)   -- tr{en = "each layer's (1, H, L, L)", zh = "每层的 (1, H, L, L)"}
  model:forward(t:encode(text))
  return model:attention()
end
causal_maps = maps(causal, c_extra.tokenizer, line)
mha.heat(causal_maps[1][1][2], {rows = chars, cols = chars,
  title = tr{en = "char_zh, layer 1, head 2", zh = "char_zh，第 1 层，头 2"}})]],
    },

    step{
        title = {en = "A masked model looks both ways", zh = "遮盖模型两边都看"},
        text = {
            en = [[
char_zh_mlm has the same size, RoPE positions and causal = false: every query sees every key.
It learned to recover characters hidden by a marker (BERT's rule: 15% of the characters chosen, 80% of them
replaced by [MASK], 10% by a random character, 10% kept). Its map fills both triangles.]],
            zh = [[
char_zh_mlm 大小相同，用 RoPE 位置，causal = false：每个查询都看得到每个键。它学的是补出被标记遮住的字（BERT
的规则：选出 15% 的字，其中 80% 换成 [MASK]，10% 换成随机的字，10% 不变）。它的注意力图两个三角都有
值。]],
        },
        code = [[
both = maps(masked, tok, line)
mha.heat(both[1][1][2], {rows = chars, cols = chars,
  title = tr{en = "char_zh_mlm, layer 1, head 2", zh = "char_zh_mlm，第 1 层，头 2"}})]],
    },

    step{
        title = {en = "Every head, both models", zh = "两个模型的每个头"},
        text = {
            en = [[
One head could be chance. For every head of every layer of both models: the share of its attention
that falls on later characters (above the diagonal), averaged over the queries of the line. The
causal model's is 0 by construction; the masked model's heads read both sides, each in its own
measure.]],
            zh = [[
一个头可能是巧合。对两个模型每一层的每个头：它的注意力落在后面的字（对角线以上）上的占比，在这句的
所有查询上取平均。因果模型的占比按构造就是 0；遮盖模型的头两边都读，各有各的比例。]],
        },
        code = [[
L = #chars
earlier = mha.causal_mask(L):logical_not()   -- tr{en = "j <= i", zh = "j <= i"}
function ahead(w)   -- tr{en = "share on later keys, per head", zh = "每个头落在后面的键上的占比"}
  local s = {}
  for h = 1, w:size(2) do
    local on_later = w[1][h]:masked_fill(earlier, 0):sum():item() / L
    s[h] = string.format("%.2f", on_later)
  end
  return table.concat(s, " ")
end
for l = 1, 4 do
  print(string.format(tr{en = "layer %d  causal %s   masked %s",
                         zh = "第 %d 层  因果 %s   遮盖 %s"},
                      l, ahead(causal_maps[l]), ahead(both[l])))
end]],
    },

    step{
        title = {en = "A batch of unequal lines: the padding mask", zh = "长短不一的一批句子：填充掩码"},
        text = {
            en = [[
Lines of different lengths share one (N, L) batch only when the short ones are padded. The padding
must not be read: key_padding_mask (N, L) is true at padding, as in torch, and no query attends to
those keys. A padded line then gives the same outputs as the line alone; the weights of line 3 are
0 on its padding columns (the padding's own rows are computed and never
read).]],
            zh = [[
长短不同的句子要放进同一个 (N, L) 批次，短的就得补齐（填充）。填充的位置不能被读到：
key_padding_mask (N, L) 在填充处为 true（与 torch 一样），任何查询都不关注这些键。这样补齐后的句子
与单独运行的结果相同；第 3 句在填充列上的权重为 0（填充位置自己的行照样算出，但不会被读）。]],
        },
        code = [[
lines = {"春眠不觉晓，", "处处闻啼鸟。", "花落"}
ids, pad = {}, {}
for n, s in ipairs(lines) do
  local row = tok:encode(s):totable()
  pad[n] = {}
  for p = 1, 6 do pad[n][p] = p > #row; row[p] = row[p] or 1 end
  ids[n] = row
end
pad = mha.tensor(pad):bool()
logits = masked:forward(ids, {key_padding_mask = pad})   -- (3, 6, V)
labels = {"花", "落", "_", "_", "_", "_"}
w3 = masked:attention()[1][3][1]   -- (6, 6)
mha.heat(w3, {rows = labels, cols = labels, values = 2,
  title = tr{en = "line 3, layer 1, head 1", zh = "第 3 句，第 1 层，头 1"}})
alone = masked:forward(tok:encode("花落"))   -- (1, 2, V)
print(tr{en = "line 3 padded = line 3 alone:", zh = "第 3 句补齐后 = 单独运行："},
      (logits[3]:narrow(1, 1, 2) - alone[1]):abs():max():item() < 1e-4)]],
    },

    step{
        title = {en = "补全诗句: fill in the line", zh = "补全诗句"},
        text = {
            en = [[
The classroom game: hide a character of a famous line and guess it from both sides. The masked
model plays too: mha.fill_mask(model, tok, text) gives, for each [MASK] in the text, the most
likely characters with their probabilities. char_zh_mlm read only 26,611 characters of 2,578 kinds:
it knows where a comma goes and that 作者 heads the author line, but not the poems' own characters -
for 霜 it offers common ones. Here the class wins.]],
            zh = [[
课堂游戏：遮住名句里的一个字，从两边猜出它。遮盖模型也来玩：mha.fill_mask(model, tok, text) 为文本
中的每个 [MASK] 给出最可能的字和它们的概率。char_zh_mlm 只读过 26,611 个字、2,578 种：它知道逗号该在
哪里、作者行以“作者”开头，却还不认得诗里的字——遮住“霜”时它给出的是常见字。这一局同学们赢。]],
        },
        code = [[
top3 = {top_k = 3}
print(mha.fill_mask(masked, tok, "红豆生南国[MASK]春来发几枝。", top3))
print(mha.fill_mask(masked, tok, "作[MASK]：李白", top3))
print(mha.fill_mask(masked, tok, "床前明月光，疑是地上[MASK]。", top3))]],
    },

    step{
        title = {en = "And in English", zh = "英文也一样"},
        text = {
            en = [[
char_en_mlm read the King James Bible (140 times as many characters) the same way. It does better,
but not always: in the last verse it
is sure of the i of light, and puts i before a in w_s. It reads characters, not words.]],
            zh = [[
char_en_mlm 以同样的方式读了英王钦定本圣经（字数是它的 140 倍）。它猜得更好，但并不总对：最后一节里它对 light 的 i 很有把握，
在 w_s 里却把 i 排在 a 前面。它读的是字母，不是单词。]],
        },
        code = [[
en, en_extra = mha.load_model("char_en_mlm")
etok = en_extra.tokenizer
moses = "And the LORD spake unto Mos[MASK]s, saying,"
print(mha.fill_mask(en, etok, moses, top3))
print(mha.fill_mask(en, etok, "For God so loved the w[MASK]rld", top3))
verse = "And God said, Let there be l[MASK]ght: and there w[MASK]s light."
print(mha.fill_mask(en, etok, verse, top3))]],
    },

    step{
        title = {en = "Better than a guess from the neighbours", zh = "胜过只看邻字的猜测"},
        text = {
            en = [[
Is it more than the two neighbours? On held-out text (the last 10%, never trained on) one character
per window is hidden. A bigram guess takes the character c with the largest P(c | left) ·
P(right | c), counted on the training text; the model reads the whole window of 64. char_zh_mlm is only a little ahead (its text is
small); char_en_mlm is far ahead.]],
            zh = [[
它比只看左右两个邻字强吗？在留出的文本（最后 10%，从未训练过）里，每个窗口遮住一个字。二元组的猜测
取使 P(c | 左) · P(右 | c) 最大的字 c（在训练文本上计数）；模型读整个 64 字的窗口。char_zh_mlm 只领先
一点（它读的文本太少）；char_en_mlm 领先很多。]],
        },
        code = [[
extras = {char_zh_mlm = m_extra, char_en_mlm = en_extra}
for _, name in ipairs({"char_zh_mlm", "char_en_mlm"}) do
  local x = extras[name]
  local model_acc = 100 * x["heldout.accuracy"]:item()
  local bigram_acc = 100 * x["heldout.bigram"]:item()
  print(string.format(tr{en = "%-12s model %5.1f%%   bigram guess %5.1f%%",
                         zh = "%-12s 模型 %5.1f%%   二元组猜测 %5.1f%%"},
                      name, model_acc, bigram_acc))
end]],
    },
}
