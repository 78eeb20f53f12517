-- lessons/31_logit_lens.lua - the logit lens on the shipped char_en model: each layer's residual
-- stream read through the final norm and the unembedding: which layer first knows the next char.
return lesson{
    name = "logit_lens", seed = 31,
    title = {en = "The logit lens", zh = "logit 透镜"},
    summary = {en = "read every layer's residual stream as a guess of the next character",
               zh = "把每一层的残差流读成对下一个字符的猜测"},

    step{
        title = {en = "A guess at every layer", zh = "每一层都有一个猜测"},
        text = {
            en = [[
char_en, the shipped character model of the King James Bible, has 4 blocks (d_model 128, 4 heads,
an MLP each). Each block adds to the residual stream x (1, L, 128); only at the end does the final norm
ln_f and the unembedding turn x into logits. The logit lens (nostalgebraist, 2020) applies that same
ending to the stream entering every block (blocks.l.hook_resid_pre: layer 0 is the embeddings
alone) and after the last. mha.interp.logit_lens gives all five at once, (5, N, L, 63); read after
the last block, the lens is exactly the model's logits.]],
            zh = [[
char_en 是随附的字符模型，用钦定版圣经训练：4 个块（d_model 128，4 个头，每块一个 MLP）。每个块都往
残差流 x (1, L, 128) 上加东西；只有到最后，最后的层归一化 ln_f 和反嵌入才把 x 变成 logits。logit 透镜
（nostalgebraist，2020）把同样的结尾用在进入每个块的残差流上（blocks.l.hook_resid_pre：第 0 层就是
只有嵌入），以及最后一个块之后。mha.interp.logit_lens 一次给出全部五个，(5, N, L, 63)；在最后一个块
之后读，透镜给出的正是模型的 logits。]],
        },
        code = [[
m, extra = mha.load_model("char_en")
tok = extra.tokenizer
verse = "In the beginning God created the heaven and the earth."
ids = tok:encode(verse)
L = ids:shape()[1]
function lens(ids) return mha.interp.logit_lens(m, ids:view(1, -1)) end
layers = lens(ids)   -- tr{en = "(5, 1, 54, 63); layers[l + 1] is layer l", zh = "(5, 1, 54, 63)；layers[l + 1] 是第 l 层"}
print(tr{en = "max |lens after block 4 - model logits|:",
         zh = "max |第 4 块之后的透镜 - 模型 logits|："},
      (layers[5] - m:forward(ids:view(1, L))):abs():max():item())]],
    },

    step{
        title = {en = "Top-1 per layer", zh = "每一层的 top-1"},
        text = {
            en = [[
The first line is the verse shifted left by one: under each character, what should come next.
Each row below is a layer's top-1 guess at that position (¶ is a new line). Layer 0 sees only the
current character and its position: nearly a bigram table. The last line names the first layer
whose guess is right (- where none is).]],
            zh = [[
第一行是左移一位的经文：每个字符下面应该是紧跟着的那个字符。下面每一行是某一层在该位置的 top-1
猜测（¶ 表示换行）。第 0 层只看得到当前字符和它的位置：差不多是一个二元组表。最后一行写出第一个猜对的层
（都没猜对的地方是 -）。]],
        },
        code = [[
function top1(logits)   -- tr{en = "(1, L, 63) -> a string of L characters", zh = "(1, L, 63) -> L 个字符的字符串"}
  local pred, s = logits[1]:argmax(-1), {}
  for i = 1, L do
    local id = pred[i]
    s[i] = tok.chars[id]:gsub("\n", "¶")
  end
  return table.concat(s), pred
end
print(tr{en = "next     ", zh = "下一个   "} .. verse:sub(2))
first = {}
for l = 0, m.layers do
  local s, pred = top1(layers[l + 1])
  print(string.format(tr{en = "layer %d  %s", zh = "第 %d 层  %s"}, l, s))
  for i = 1, L - 1 do
    if not first[i] and pred[i] == ids[i + 1] then first[i] = l end
  end
end
marks = {}
for i = 1, L - 1 do marks[i] = first[i] and tostring(first[i]) or "-" end
print(tr{en = "first    ", zh = "最早     "} .. table.concat(marks))]],
    },

    step{
        title = {en = "How much each layer knows", zh = "每一层知道多少"},
        text = {
            en = [[
Over the 53 positions that have a next character: how many top-1 guesses are right, the mean
probability the lens gives the true next character, and its mean rank among the 63 (1 = top).]],
            zh = [[
在有下一个字符的 53 个位置上：top-1 猜对了多少个，透镜给真实下一个字符的平均概率，以及它在 63 个
字符中的平均名次（1 = 第一）。]],
        },
        code = [[
-- tr{en = "probability and rank of the true next character", zh = "真实下一个字符的概率和名次"}
function true_next(logits)
  local p = mha.softmax(logits[1], -1)   -- (L, 63)
  local probs, ranks = {}, {}
  for i = 1, L - 1 do
    local next_id = ids[i + 1]
    probs[i] = p[i][next_id]
    ranks[i] = p[i]:gt(probs[i]):float():sum():item() + 1
  end
  return probs, ranks
end
function mean(t)
  local s = 0; for _, v in ipairs(t) do s = s + v end; return s / #t
end
-- tr{en = "how many top-1 guesses name the next character", zh = "top-1 猜对下一个字符的次数"}
function right(logits, ids)
  local n = ids:shape()[1]
  local pred = logits[1]:argmax(-1):narrow(1, 1, n - 1)
  return pred:eq(ids:narrow(1, 2, n - 1)):sum():item()
end
print(tr{en = "layer  right  mean p  mean rank", zh = "层      猜对  平均 p   平均名次"})
for l = 0, m.layers do
  local probs, ranks = true_next(layers[l + 1])
  local hits = right(layers[l + 1], ids)
  print(string.format("%5d  %2d/53  %6.3f  %9.2f", l, hits, mean(probs),
                      mean(ranks)))
end]],
    },

    step{
        title = {en = "Four positions, layer by layer", zh = "四个位置，逐层来看"},
        text = {
            en = [[
The probability of the true next character and its rank (in brackets) after each block, at four
positions the last line of step 2 sorts differently: a bigram (G -> o), a letter inside a word
(hea -> v), the end of a word (the -> space, ␣) and the first letter of the next one. The lens
need not improve at every block: hea -> v is top-1 after block 2 and slips to rank 2 by the end.]],
            zh = [[
在第 2 步最后一行归类不同的四个位置上，每个块之后真实下一个字符的概率和名次（括号里）：一个二元组
（G -> o），词中间的一个字母（hea -> v），一个词的结尾（the -> 空格，␣），以及下一个词的首字母。透镜
不一定每过一个块都更好：hea -> v 在第 2 个块之后排第一，到最后却滑到第 2 名。]],
        },
        code = [[
local heads = {}
for k, i in ipairs({18, 36, 47, 48}) do
  local next = verse:sub(i + 1, i + 1):gsub(" ", "␣")
  local label = verse:sub(i - 2, i):gsub(" ", "␣") .. "->" .. next
  heads[k] = label .. string.rep(" ", 12 - utf8.len(label))
end
print((("         " .. table.concat(heads)):gsub(" +$", "")))
for l = 0, m.layers do
  local probs, ranks = true_next(layers[l + 1])
  local row = {}
  for _, i in ipairs({18, 36, 47, 48}) do
    row[#row + 1] = string.format("%.2f (%2d)", probs[i], ranks[i])
  end
  print(string.format(tr{en = "layer %d  %s", zh = "第 %d 层  %s"}, l,
                      table.concat(row, "   ")))
end
 ]],
    },

    step{
        title = {en = "What the lens shows", zh = "透镜显示了什么"},
        text = {
            en = [[
No single layer "knows the next character": right guesses grow from 7 to 16, 28, 35 and 36 of 53,
block by block. The embeddings alone (layer 0) get some bigrams right (G -> o, e -> d, t -> h).
Inside a word whose first letters are there, block 2 finds most of the rest (heave, earth).
Whether a word ends (the space after each "the") first shows after block 3: "the" could go on as
"then" or "there", and only context decides. The first letter of the next word is rarely right at
any layer; that is where the text itself is uncertain. The lens is a reading, not the model's own
view: a middle layer's stream was never trained to be read by ln_f and the unembedding, so it
may hold more than its lens shows.]],
            zh = [[
没有哪一层单独“知道下一个字符”：53 个位置里猜对的数目一块一块地从 7 增长到 16、28、35、36。只有
嵌入（第 0 层）就能猜对一些二元组（G -> o、e -> d、t -> h）。一个词的开头几个字母出现之后，第 2 个块
能找出其余的大部分（heave、earth）。一个词是否结束（每个 "the" 后面的空格）要到第 3 个块之后才显示
出来："the" 还可能接着写成 "then" 或 "there"，只有上下文才能决定。下一个词的首字母在哪一层都很少
猜对；文本本身在那里就是不确定的。透镜只是一种读法，不是模型自己的视角：中间层的残差流从没被训练成让
ln_f 和反嵌入来读，所以它包含的可能比透镜显示的更多。]],
        },
    },

    exercise{
        title = {en = "Another verse", zh = "另一节经文"},
        prompt = {
            en = [[
On "And God said, Let there be light: and there was light." how many of its positions does the
lens after block 2 predict right? Use tok:encode, lens and right from the earlier steps, and
answer(number).]],
            zh = [[
在 "And God said, Let there be light: and there was light." 上，第 2 个块之后的透镜
猜对了多少个位置？用 tok:encode 以及前面几步的 lens 和 right，answer(数值)。]],
        },
        solution = [[(function()
  local ids2 = tok:encode("And God said, Let there be light: and there was light.")
  return right(lens(ids2)[3], ids2) end)()]],
        mistakes = {
            mistake{wrong = [[(function()
  local ids2 = tok:encode("And God said, Let there be light: and there was light.")
  return right(lens(ids2)[2], ids2) end)()]],
                hint = {en = "lens(ids)[1] is layer 0 (the embeddings); block 2's is lens(ids)[3]",
                        zh = "lens(ids)[1] 是第 0 层，即嵌入；第 2 个块之后是 lens(ids)[3]"}},
        },
    },
}
