-- lessons/32_activation_patching.lua - activation patching on char_en: a KJV sentence and the same
-- with another name; clean residual streams patched into the corrupt run, per layer and position.
return lesson{
    name = "activation_patching", seed = 32,
    title = {en = "Activation patching: where the name lives", zh = "激活修补：名字存在哪里"},
    summary = {en = "patch a clean run into a corrupt one, layer by layer and position by position",
               zh = "把干净运行的激活逐层、逐位置修补进被破坏的运行"},

    step{
        title = {en = "Two sentences, one name apart", zh = "两句话，只差一个名字"},
        text = {
            en = [[
The clean run reads "And Moses said unto", the corrupt run "And Aaron said unto": the same length,
only the name differs. Under each sentence, char_en's top-1 guess of the next character at every
position; the marks show where the two runs guess differently.]],
            zh = [[
干净运行读 "And Moses said unto"，被破坏的运行读 "And Aaron said unto"：长度相同，只有名字不同。
每句话下面是 char_en 在每个位置对下一个字符的 top-1 猜测；标记表示两次运行猜得不同的位置。]],
        },
        code = [[
m, extra = mha.load_model("char_en")
tok = extra.tokenizer
clean_text, corrupt_text = "And Moses said unto", "And Aaron said unto"
clean = tok:encode(clean_text):view(1, -1)       -- (1, 19)
corrupt = tok:encode(corrupt_text):view(1, -1)
L = clean:shape()[2]
function guesses(ids)
  local pred, s = m:forward(ids)[1]:argmax(-1), {}
  for i = 1, L do
    local id = pred[i]
    s[i] = tok.chars[id]
  end
  return s
end
a, b = guesses(clean), guesses(corrupt)
marks = {}
for i = 1, L do marks[i] = a[i] == b[i] and " " or "^" end
print(tr{en = "clean    ", zh = "干净     "} .. clean_text)
print(tr{en = "  guess  ", zh = "  猜测   "} .. table.concat(a))
print(tr{en = "corrupt  ", zh = "被破坏   "} .. corrupt_text)
print(tr{en = "  guess  ", zh = "  猜测   "} .. table.concat(b))
print("         " .. table.concat(marks))]],
    },

    step{
        title = {en = "A metric", zh = "一个指标"},
        text = {
            en = [[
The runs disagree inside the name and barely after it: this small model forgets the name within a
few characters. So the question to ask it is inside the name: after "And Mose" the next character
is "s", after "And Aaro" it is "n". The metric is the logit difference at position 8,
logit(s) - logit(n); patching asks how much of the clean value a part of the clean run brings back.
    recovered = (m(patched) - m(corrupt)) / (m(clean) - m(corrupt))
0 means the patched part carries nothing of the difference, 1 that it carries all of it.]],
            zh = [[
两次运行只在名字内部意见不同，名字之后几乎一样：这个小模型几个字符之内就忘了名字。所以要问它的问题
在名字内部："And Mose" 之后是 "s"，"And Aaro" 之后是 "n"。指标是位置 8 上的 logit 差
logit(s) - logit(n)；修补问的是：干净运行的某一部分能找回多少干净的值。
    找回 = (m(修补) - m(被破坏)) / (m(干净) - m(被破坏))
0 表示被修补的部分不带有任何差别，1 表示它带有全部差别。]],
        },
        code = [[
S, N, pos = tok.ids["s"], tok.ids["n"], 8
function metric(logits) return logits[1][pos][S] - logits[1][pos][N] end
clean_metric = metric(m:forward(clean))
corrupt_metric = metric(m:forward(corrupt))
print(string.format(tr{en = "logit(s) - logit(n): clean %.2f, corrupt %.2f",
                       zh = "logit(s) - logit(n)：干净 %.2f，被破坏 %.2f"},
                    clean_metric, corrupt_metric))]],
    },

    step{
        title = {en = "Patching the residual stream", zh = "修补残差流"},
        text = {
            en = [[
blocks.l.hook_resid_pre is the residual stream entering block l + 1 (l from 0, as in the state_dict:
layer 0 is the embeddings). run_with_cache keeps the clean run's; run_with_hooks runs the corrupt
sentence with a hook that puts the clean stream back at some positions of one layer.]],
            zh = [[
blocks.l.hook_resid_pre 是进入第 l + 1 个块的残差流（l 从 0 数起，与 state_dict 一致：第 0 层就是
嵌入）。run_with_cache 保存干净运行的残差流；run_with_hooks 运行被破坏的句子，用一个钩子在某一层的
某些位置换回干净的残差流。]],
        },
        code = [[
_, clean_cache = m:run_with_cache(clean)
function recovered(layer, positions)
  local name = string.format("blocks.%d.hook_resid_pre", layer)
  local keep = mha.ones(1, L, 1)   -- tr{en = "0: take the clean stream", zh = "0：换入干净的残差流"}
  for _, p in ipairs(positions) do keep[1][p][1] = 0 end
  local hooks = {[name] = function(x)
    return x * keep + clean_cache[name] * (1 - keep)
  end}
  local patched = metric(m:run_with_hooks(corrupt, hooks))
  return (patched - corrupt_metric) / (clean_metric - corrupt_metric)
end
nothing = recovered(0, {})
everything = recovered(0, {1, 2, 3, 4, 5, 6, 7, 8})
print(string.format(tr{en = "patch nothing: %.2f   patch all of layer 0: %.2f",
                       zh = "什么都不修补：%.2f   修补第 0 层全部：%.2f"},
                    nothing, everything))]],
    },

    step{
        title = {en = "Where the name lives", zh = "名字存在哪里"},
        text = {
            en = [[
mha.interp.patch does this once per layer and position (or head) and returns the table. Positions
after 8 cannot reach position 8 (attention is causal), so the map shows the first 8:]],
            zh = [[
mha.interp.patch 对每个层和位置（或头）各做一次，返回整张表。位置 8 之后的位置影响不到位置 8（注意力
是因果的），所以图里只画前 8 个：]],
        },
        code = [[
grid = mha.interp.patch(m, clean, corrupt, "hook_resid_pre", metric,
                        {positions = true}):narrow(2, 1, pos)   -- (4, 8)
for l = 1, 4 do   -- tr{en = "rounded to 2 decimals", zh = "四舍五入到 2 位小数"}
  for p = 1, pos do
    grid[l][p] = math.floor(grid[l][p] * 100 + 0.5) / 100
  end
end
labels = clean_text:sub(1, pos):gsub(" ", "_")
mha.heat(grid, {rows = "0 1 2 3", cols = labels, values = true,
                zrange = {0, 1},
                title = tr{en = "recovered (rows: layer, columns: position)",
                           zh = "找回的比例（行：层，列：位置）"}})]],
    },

    step{
        title = {en = "Reading the map", zh = "解读这张图"},
        text = {
            en = [[
"And " is the same in both runs, so its columns are 0. In the embeddings (layer 0) what tells Moses
from Aaron is spread over the name's letters: the last letter "e" brings back 0.38, "M" 0.28, and
"s" alone even hurts (-0.18: "Aaso" is no name). Block by block the difference gathers at the last
position: 0.55 entering block 2, 0.85 entering block 3, 0.92 entering block 4. Attention in blocks
1 and 2 has moved "which name is this" from the earlier letters to the place that must say what
comes next (an MLP works on one position; only attention moves across). That is where the model's
knowledge lives: first in the letters, then at the end.]],
            zh = [[
"And " 在两次运行中相同，所以这几列是 0。在嵌入（第 0 层）里，区分 Moses 和 Aaron 的信息分散在名字的
各个字母上：最后一个字母 "e" 找回 0.38，"M" 找回 0.28，单独的 "s" 甚至有害（-0.18："Aaso" 不是名字）。
一个块接一个块，差别聚集到最后一个位置：进入第 2 个块时 0.55，进入第 3 个块时 0.85，进入第 4 个块时
0.92。第 1、2 个块的注意力把“这是哪个名字”从前面的字母搬到了必须说出下一个字符的位置（MLP 只作用于
单个位置；只有注意力能跨位置搬运）。模型的知识就存在那里：先在字母里，然后在末尾。]],
        },
    },

    step{
        title = {en = "Which parts carry it", zh = "哪些部分在搬运它"},
        text = {
            en = [[
The same question part by part: patch only one block's attention output, MLP output, or one head's
z (its weighted sum of values), at position 8 alone.]],
            zh = [[
对各个部分问同一个问题：只在位置 8 修补一个块的注意力输出、MLP 输出，或一个头的 z（它对值的加权
和）。]],
        },
        code = [[
-- tr{en = "the first 8 characters are all that reach position 8", zh = "能影响位置 8 的只有前 8 个字符"}
function at8(name, opts)   -- tr{en = "(layers, 8) or (layers, 8, H) -> position 8", zh = "(层, 8) 或 (层, 8, H) -> 取位置 8"}
  local r = mha.interp.patch(m, clean:narrow(2, 1, pos),
                             corrupt:narrow(2, 1, pos), name, metric, opts)
  return r:select(2, pos)
end
function row(label, values)   -- tr{en = "one row, rounded", zh = "一行，四舍五入"}
  local cells = {}
  for l = 1, 4 do
    local v = math.floor(values[l] * 100 + 0.5) / 100
    cells[l] = string.format("%8.2f", v)
  end
  print(string.format("%-16s%s", label, table.concat(cells)))
end
print(tr{en = "                 block 1 block 2 block 3 block 4",
         zh = "                    块 1    块 2    块 3    块 4"})
row("hook_attn_out", at8("hook_attn_out", {positions = true}))
row("hook_mlp_out", at8("hook_mlp_out", {positions = true}))
z = at8("attn.hook_z", {positions = true, heads = true})   -- (4, 4)
for h = 1, 4 do row("attn.hook_z h" .. h, z:select(2, h)) end]],
    },

    step{
        title = {en = "Spread, not stored in one place", zh = "分散的，而不是存在一处"},
        text = {
            en = [[
No single part holds the name. Alone at position 8, block 1's MLP brings back 0.28, block 2's
attention 0.23 and block 4's MLP 0.29, while block 3's attention pushes the other way (-0.10). No
head brings back more than 0.13 (block 2 head 3), and block 1 head 1 even costs 0.19. Patching the
parts one at a time does not add up to patching the stream: each part's output is read by every
later part, and the network is not linear. In a small model, patching shows what is spread as
plainly as what is concentrated.]],
            zh = [[
没有哪一个部分单独存着这个名字。只在位置 8 修补时，第 1 个块的 MLP 找回 0.28，第 2 个块的注意力 0.23，
第 4 个块的 MLP 0.29，而第 3 个块的注意力反而往相反方向推（-0.10）。没有哪个头找回超过 0.13（第 2 个块
头 3），第 1 个块头 1 甚至损失 0.19。逐个修补各部分，加起来也不等于修补残差流：每个部分的输出都被
后面所有部分读取，而网络不是线性的。在一个小模型上，修补既能清楚地显示集中在一处的东西，也能同样清楚地
显示分散的东西。]],
        },
    },

    exercise{
        title = {en = "The name without its last letter", zh = "去掉最后一个字母的名字"},
        prompt = {
            en = [[
Patch positions 5 to 7 ("Mos", the name but its last letter) together, into the stream entering
block 2 (layer 1). What fraction comes back? (Into the embeddings it is 0.28; try layer 2 too.)
Use recovered(layer, positions) and answer(number).]],
            zh = [[
把位置 5 到 7（"Mos"，名字去掉最后一个字母）一起修补进进入第 2 个块的残差流（第 1 层）。能找回多少？
（修补进嵌入是 0.28；也试试第 2 层。）用 recovered(layer, positions)，answer(数值)。]],
        },
        solution = [[recovered(1, {5, 6, 7})]],
        mistakes = {
            mistake{wrong = [[recovered(2, {5, 6, 7})]],
                hint = {en = "layer 1 is the stream entering block 2 (layer 0 is the embeddings)",
                        zh = "第 1 层是进入第 2 个块的残差流（第 0 层是嵌入）"}},
        },
    },
}
