-- lessons/19_generation.lua - generation and sampling: logits -> probabilities -> a token;
-- temperature, top-k and top-p (the nucleus), mha.sample with a seed, then model:generate on the
-- shipped induction model.
return lesson{
    name = "generation", seed = 19,
    title = {en = "Generation: from logits to the next token", zh = "生成：从 logits 到下一个词元"},
    summary = {en = "temperature, top-k and top-p; a trained model continues a sequence",
               zh = "温度、top-k 与 top-p；训练好的模型接着写一个序列"},

    step{
        title = {en = "Logits, probabilities, a token", zh = "logits、概率、一个词元"},
        text = {
            en = [[
A language model ends with one score per word of its vocabulary for the position after the last
token: the logits. softmax turns them into probabilities; then one token must be chosen, appended,
and the model runs again. *Greedy* decoding takes the most probable token (argmax) every time.
*Sampling* draws a token at random with these probabilities, so a likely token comes often and an
unlikely one sometimes. Here a vocabulary of 4 words after "I drink":]],
            zh = [[
语言模型最后为最后一个词元之后的位置给词表中的每个词打一个分：这就是 logits。softmax 把它们变成概率；
然后必须选出一个词元，接在后面，模型再运行一次。*贪心*解码每次都取概率最大的词元（argmax）。*采样*则按
这些概率随机抽一个词元，所以可能的词元常被抽到，不太可能的偶尔被抽到。这里是“我喝”之后的 4 个词：]],
        },
        code = [[
words = tr{en = {"tea", "coffee", "water", "juice"},
           zh = {"茶", "咖啡", "水", "果汁"}}
logits = mha.tensor{2.0, 1.0, 0.5, -1.0}
p = mha.softmax(logits, 1)
show(p, {cols = words, title = tr{en = "p = softmax(logits)", zh = "p = softmax(logits)"}})
greedy = p:argmax():item()
print(tr{en = "greedy (argmax):", zh = "贪心（argmax）："}, words[greedy])]],
    },

    step{
        title = {en = "Drawing with mha.sample", zh = "用 mha.sample 抽取"},
        text = {
            en = [[
mha.sample(logits, opts) returns a 1-based token. It draws from mha.seed's generator, so a seed
gives the same tokens on every machine: seed = s seeds it once before the draw. Over 10000 draws
each word comes about p·10000 times. temperature = 0 draws nothing: it is greedy.]],
            zh = [[
mha.sample(logits, opts) 返回一个从 1 数起的词元编号。它用 mha.seed 的随机数生成器抽取，所以同一个种子
在每台机器上给出相同的词元：seed = s 在抽取前播种一次。抽 10000 次，每个词大约出现 p·10000 次。
temperature = 0 不抽取：那就是贪心。]],
        },
        code = [[
print(tr{en = "seed 1, twice:", zh = "种子 1，两次："},
      words[mha.sample(logits, {seed = 1})],
      words[mha.sample(logits, {seed = 1})])
mha.seed(3)
draws = {}
for i = 1, 12 do draws[i] = words[mha.sample(logits)] end
print(table.concat(draws, " "))
function count(opts)   -- tr{en = "10000 draws, one row each", zh = "10000 次抽取，每行一次"}
  local counts = {0, 0, 0, 0}
  for _, t in ipairs(mha.sample(logits:expand(10000, 4), opts):totable()) do
    counts[t] = counts[t] + 1
  end
  return counts
end
LESSON.table({count{seed = 7}}, words)
print(tr{en = "temperature 0:", zh = "temperature 0："},
      words[mha.sample(logits, {temperature = 0})])]],
    },

    step{
        title = {en = "Temperature", zh = "温度"},
        text = {
            en = [[
The temperature T divides the logits before the softmax:

    p_j = exp(x_j / T) / Σ_i exp(x_i / T)

T < 1 sharpens the distribution toward the largest logit (T → 0 is argmax); T > 1 flattens it
toward uniform (T → ∞ gives every word 1/4). The order of the words never changes, only how far
apart their probabilities are. Low T: safe and repetitive; high T: varied, and more often wrong.]],
            zh = [[
在 softmax 之前，logits 先除以温度 T：

    p_j = exp(x_j / T) / Σ_i exp(x_i / T)

T < 1 让分布向最大的 logit 集中（T → 0 就是 argmax）；T > 1 让分布变平，趋向均匀（T → ∞ 时每个词都是
1/4）。词的先后顺序从不改变，改变的只是它们的概率相差多远。T 低：稳妥而重复；T 高：多样，也更常出错。]],
        },
        code = [[
rows = {}
for _, T in ipairs{0.25, 0.5, 1, 2, 4} do
  local q = mha.softmax(logits / T, 1):totable()
  rows[#rows + 1] = {"T = " .. T, q[1], q[2], q[3], q[4]}
end
LESSON.table(rows, {"", table.unpack(words)}, "%.4f")]],
    },

    step{
        title = {en = "Top-k", zh = "Top-k"},
        text = {
            en = [[
Even at T = 1 the unlikely tail gets drawn now and then, and over a vocabulary of 50000 words the
tail together is large. top_k = k keeps only the k most probable tokens, sets the others to 0 and
renormalises the rest to sum to 1. With k = 2: tea and coffee, in the ratio 0.6095 : 0.2242.]],
            zh = [[
即使在 T = 1，不太可能的尾部也会时不时被抽到，而在 50000 个词的词表里，尾部加起来很大。top_k = k 只保留
概率最大的 k 个词元，其余置 0，再把留下的重新归一化，使其和为 1。k = 2 时：茶和咖啡，比例为
0.6095 : 0.2242。]],
        },
        code = [[
kept = p:clone()
kept[3], kept[4] = 0, 0          -- tr{en = "the 2 largest stay", zh = "保留最大的 2 个"}
kept = kept / kept:sum()
show(kept, {cols = words, title = tr{en = "top_k = 2, renormalised", zh = "top_k = 2，重新归一化"}})
LESSON.table({count{top_k = 2, seed = 7}}, words)]],
    },

    step{
        title = {en = "Top-p, the nucleus", zh = "Top-p：核"},
        text = {
            en = [[
A fixed k is too many when the model is sure and too few when it is not. top_p = p (Holtzman et
al., 2020) sorts the tokens by probability and keeps the fewest of the most probable whose sum
reaches p, then renormalises. With p = 0.9: tea and coffee make 0.8337, not yet 0.9, so water
joins (0.9697) and juice is dropped. At least one token always stays.]],
            zh = [[
固定的 k 在模型很确定时太多，在它不确定时又太少。top_p = p（Holtzman 等，2020）按概率给词元排序，
保留概率最大的、总和达到 p 的最少几个，再重新归一化。p = 0.9 时：茶和咖啡合计 0.8337，还不到 0.9，
所以水也加入（0.9697），果汁被丢掉。至少总会留下一个词元。]],
        },
        code = [[
probs, order = p:totable(), {1, 2, 3, 4}
table.sort(order, function(a, b) return probs[a] > probs[b] end)
rows, sum = {}, 0
for rank, j in ipairs(order) do
  local needed = sum < 0.9           -- tr{en = "not yet 0.9 before it", zh = "加它之前还不到 0.9"}
  sum = sum + probs[j]
  rows[rank] = {rank, words[j], probs[j], sum, needed and "✓" or "-"}
end
header = tr{en = {"rank", "word", "p", "running sum", "kept (0.9)"},
            zh = {"名次", "词", "p", "累计和", "保留（0.9）"}}
LESSON.table(rows, header, "%.4f")
LESSON.table({count{top_p = 0.9, seed = 7}}, words)]],
    },

    step{
        title = {en = "A trained model writes on", zh = "训练好的模型接着写"},
        text = {
            en = [[
The induction model of lesson 16 learned to continue a repeat. model:generate(prompt, opts) runs
the loop: forward, sample the last position's logits, append, again; it returns the prompt and
the new tokens. The prompt is 7 symbols, then the first 3 of them again. Greedy decoding copies
the pattern on and on: each new token is the one 7 places back.]],
            zh = [[
第 16 课的归纳模型学会了接着写一段重复。model:generate(prompt, opts) 执行这个循环：前向、对最后一个位置
的 logits 采样、接在后面、再来；它返回提示和新词元。提示是 7 个符号，然后是其中前 3 个的重复。
贪心解码一直照抄这个模式：每个新词元都是往前数第 7 个。]],
        },
        code = [[
model = mha.load_model("induction")
prompt = {3, 14, 7, 19, 2, 11, 5, 3, 14, 7}
function copies(out)   -- tr{en = "new tokens equal to the one 7 back", zh = "等于往前第 7 个的新词元"}
  local n = 0
  for i = #prompt + 1, #out do
    if out[i] == out[i - 7] then n = n + 1 end
  end
  return n
end
out = model:generate(prompt, {max_new_tokens = 12, temperature = 0})
mha.tasks.show(out, {title = tr{en = "greedy", zh = "贪心"}})
print(tr{en = "new tokens that copy the pattern:", zh = "照抄模式的新词元："},
      copies(out) .. " / 12")]],
    },

    step{
        title = {en = "Too hot breaks the pattern", zh = "温度太高会打破模式"},
        text = {
            en = [[
The model is sure here (it gives the right next symbol about 0.98), so T = 1 still copies. As T
rises the 19 wrong symbols share more and more of the probability: at T = 2 the copy breaks after a
few tokens, at T = 5 at once. A seed makes each run repeatable.]],
            zh = [[
模型在这里很确定（它给正确的下一个符号大约 0.98 的概率），所以 T = 1 仍然照抄。T 升高时，19 个错误符号
分到的概率越来越多：T = 2 时复制在几个词元之后断开，T = 5 时立刻断开。种子让每次运行都可以重现。]],
        },
        code = [[
for _, T in ipairs{1, 2, 5} do
  local out = model:generate(prompt, {max_new_tokens = 12,
                                      temperature = T, seed = 1})
  mha.tasks.show(out, {title = "T = " .. T})
  print(tr{en = "copies:", zh = "照抄："}, copies(out) .. " / 12")
end]],
    },

    exercise{
        title = {en = "Which tokens does top_p keep?", zh = "top_p 保留哪些词元？"},
        prompt = {
            en = [[
A vocabulary of 5 tokens has the probabilities {0.05, 0.4, 0.1, 0.3, 0.15}. Which tokens can
mha.sample draw with top_p = 0.9? Answer with their indices in increasing order, e.g.
answer({1, 2}).]],
            zh = [[
一个 5 个词元的词表，概率为 {0.05, 0.4, 0.1, 0.3, 0.15}。top_p = 0.9 时 mha.sample 能抽到哪些词元？
按从小到大的顺序回答它们的编号，例如 answer({1, 2})。]],
        },
        solution = [[{2, 3, 4, 5}]],
        mistakes = {
            mistake{wrong = [[{2, 4, 5}]],
                hint = {en = "0.4 + 0.3 + 0.15 = 0.85 has not reached 0.9 yet, so the next most "
                        .. "probable token joins",
                        zh = "0.4 + 0.3 + 0.15 = 0.85 还没达到 0.9，所以下一个概率最大的词元也要加入"}},
            mistake{wrong = [[{2, 4, 5, 3}]],
                hint = {en = "the right tokens, in the order of probability: give them in "
                        .. "increasing index order",
                        zh = "词元对了，但按的是概率顺序：请按编号从小到大给出"}},
            mistake{wrong = [[{1, 2, 3, 4, 5}]],
                hint = {en = "the nucleus stops as soon as the sum reaches 0.9: "
                        .. "0.4 + 0.3 + 0.15 + 0.1 = 0.95",
                        zh = "一旦累计和达到 0.9，核就停止：0.4 + 0.3 + 0.15 + 0.1 = 0.95"}},
            mistake{wrong = [[{2, 3, 4}]],
                hint = {en = "sort by probability, not by index: after 0.4 and 0.3 comes 0.15 "
                        .. "(token 5)",
                        zh = "按概率排序，而不是按编号：0.4 和 0.3 之后是 0.15（词元 5）"}},
        },
    },
}
