-- lessons/20_kv_cache.lua - the KV cache: decoding token by token, why the keys and values of past
-- tokens can be kept (causal attention), cached decoding equal to the full forward, its memory and
-- its cost per token.
return lesson{
    name = "kv_cache", seed = 20,
    title = {en = "The KV cache", zh = "KV 缓存"},
    summary = {en = "keep the keys and values of past tokens: equal logits, O(L) work a token",
               zh = "保存过去词元的键和值：logits 不变，每个词元 O(L) 的工作量"},

    step{
        title = {en = "The past does not change", zh = "过去不会改变"},
        text = {
            en = [[
model:generate (lesson 19) runs the model once for every new token. Run naively, each step feeds
the whole sequence again, and recomputes every earlier position just as before. In causal
attention position j reads only the tokens 1 .. j, so everything computed at j - its keys and
values in every layer, its output - stays the same when tokens are appended. The logits of the
first 6 positions, alone and inside 10 tokens:]],
            zh = [[
model:generate（第 19 课）为每个新词元运行一次模型。朴素的做法是每一步把整个序列重新送进去，把之前的
每个位置原样再算一遍。在因果注意力中，位置 j 只读词元 1 .. j，所以在 j 上算出的一切——它在每一层的
键和值、它的输出——在后面接上词元时都保持不变。前 6 个位置的 logits，单独算与在 10 个词元里算：]],
        },
        code = [[
model = mha.load_model("induction")
tokens = {3, 14, 7, 19, 2, 11, 5, 3, 14, 7}
full = model:forward({tokens})               -- (1, 10, 20)
first6 = model:forward({{table.unpack(tokens, 1, 6)}})   -- (1, 6, 20)
diff = (first6 - full:narrow(2, 1, 6)):abs():max():item()
print(tr{en = "the first 6 positions unchanged (< 1e-5):",
         zh = "前 6 个位置不变（< 1e-5）："}, diff < 1e-5)]],
    },

    step{
        title = {en = "Keep them: the cache", zh = "把它们存起来：缓存"},
        text = {
            en = [[
So keep each layer's K and V of the tokens seen so far. model:new_cache() makes an empty cache;
model:forward(new_tokens, {cache = c}) takes only the new tokens, computes their q, k and v,
appends k and v to the cache, and lets the new queries attend to all the cached keys. Positions
go on from c:length(). Per layer the cache holds K and V of shape (N, H_kv, S, D): S tokens, H_kv
K/V heads of D numbers (H_kv = H here; lesson 21 shares them). Feed the prompt, then one token at
a time:]],
            zh = [[
那就把每一层中已见过的词元的 K 和 V 存起来。model:new_cache() 建一个空缓存；
model:forward(new_tokens, {cache = c}) 只接收新词元，算出它们的 q、k、v，把 k 和 v 接到缓存后面，
并让新的查询关注缓存中所有的键。位置从 c:length() 接着数。缓存在每一层保存形状为 (N, H_kv, S, D) 的
K 和 V：S 个词元，H_kv 个 K/V 头，每个 D 个数（这里 H_kv = H；第 21 课让它们共享）。先送入提示，
再一次一个词元：]],
        },
        code = [[
c = model:new_cache()
parts = {model:forward({{table.unpack(tokens, 1, 4)}}, {cache = c})}
print(c)
for i = 5, #tokens do
  parts[#parts + 1] = model:forward({{tokens[i]}}, {cache = c})
end
print(c)
print(tr{en = "layer 1 K:", zh = "第 1 层 K："},
      table.concat(c:keys(1):shape(), "×"))
cached = mha.cat(parts, 2)                   -- (1, 10, 20)
print(tr{en = "cached logits = full logits (< 1e-5):",
         zh = "用缓存的 logits = 完整的 logits（< 1e-5）："},
      (cached - full):abs():max():item() < 1e-5)]],
    },

    step{
        title = {en = "Generating with and without it", zh = "用与不用缓存来生成"},
        text = {
            en = [[
model:generate uses a cache unless cache = false: it feeds the prompt once, then only the token it
just drew. The logits are the same, so with a seed the tokens are the same too.]],
            zh = [[
model:generate 默认使用缓存，除非 cache = false：它先把提示送入一次，之后只送入刚抽到的那个词元。
logits 相同，所以在同一个种子下，抽到的词元也相同。]],
        },
        code = [[
opts = {max_new_tokens = 12, temperature = 2, seed = 4}
with = model:generate(tokens, opts)
opts.cache = false
without = model:generate(tokens, opts)
mha.tasks.show(with, {title = tr{en = "with the cache", zh = "用缓存"}})
mha.tasks.show(without, {title = tr{en = "without", zh = "不用缓存"}})]],
    },

    step{
        title = {en = "What it costs in memory", zh = "它占用多少内存"},
        text = {
            en = [[
Every token adds its K and V in every layer: 2 tensors, H_kv·D numbers each, 4 bytes a number
(float32; 2 in the 16-bit numbers large models use):

    bytes = 2 · layers · L · H_kv · D · 4

Here 2 layers, 2 heads of 16, 10 tokens. For LLaMA 2 7B (32 layers, 32 heads of 128, 2 bytes) the
cache of one 4096-token text takes 2 GiB, and a server keeps one for every text it serves at
once.]],
            zh = [[
每个词元在每一层加入它的 K 和 V：2 个张量，每个 H_kv·D 个数，每个数 4 字节（float32；大模型用的
16 位数是 2 字节）：

    字节数 = 2 · layers · L · H_kv · D · 4

这里是 2 层、2 个 16 维的头、10 个词元。对 LLaMA 2 7B（32 层，32 个 128 维的头，2 字节）来说，一段
4096 个词元的文本，缓存就占 2 GiB，而服务器要为同时服务的每段文本各存一个。]],
        },
        code = [[
layers, H_kv, D, L = 2, 2, 16, c:length()
print(tr{en = "c:bytes():", zh = "c:bytes()："}, c:bytes())
print(tr{en = "formula:  ", zh = "公式：    "}, 2 * layers * L * H_kv * D * 4)
rows = {}
for _, L in ipairs{1024, 4096, 32768} do
  rows[#rows + 1] = {L, 2 * 32 * L * 32 * 128 * 2 / 2^30}
end
LESSON.table(rows, tr{en = {"tokens", "LLaMA 2 7B cache (GiB)"},
                      zh = {"词元数", "LLaMA 2 7B 的缓存（GiB）"}}, "%.2f")]],
    },

    step{
        title = {en = "What it saves in work", zh = "它省下多少计算"},
        text = {
            en = [[
Count the multiplies of one layer (d = d_model, no MLP) for the output of the L-th token.
Without the cache all L positions run again: the projections q, k, v, out take 4·d² a token,
the scores Q·Kᵀ (L × L, masked after) and the weighted sum L²·d each. With the cache only the new
token runs: 4·d², and 2·L·d for its L keys:

    without: 4·L·d² + 2·L²·d        with the cache: 4·d² + 2·L·d

The cached step does one token's work, O(L) instead of O(L²): exactly L times less.]],
            zh = [[
数一数一层（d = d_model，没有 MLP）为第 L 个词元的输出做的乘法。不用缓存时，全部 L 个位置重新运行：
投影 q、k、v、out 每个词元 4·d²，分数 Q·Kᵀ（L × L，之后再掩码）与加权和各 L²·d。用缓存时只有新词元
运行：4·d²，再加上它对 L 个键的 2·L·d：

    不用缓存：4·L·d² + 2·L²·d        用缓存：4·d² + 2·L·d

用缓存的一步只做一个词元的工作，O(L) 而不是 O(L²)：正好少 L 倍。]],
        },
        code = [[
d = 128
rows = {}
for _, L in ipairs{16, 64, 256, 1024} do
  local without = 4 * L * d^2 + 2 * L^2 * d
  local with = 4 * d^2 + 2 * L * d
  rows[#rows + 1] = {L, without, with, without / with}
end
LESSON.table(rows, tr{en = {"L", "without", "with the cache", "ratio"},
                      zh = {"L", "不用缓存", "用缓存", "倍数"}}, "%.0f")]],
    },

    step{
        title = {en = "Timing it live", zh = "现场计时"},
        text = {
            en = [[
At the prompt this step generates 128 tokens with a fresh 4-layer model of d_model 128, with the
cache and without it, and prints tokens per second. Times differ from machine to machine and run
to run, so a batch replay prints none. Expect the cache to win by several times, more as the text
grows.]],
            zh = [[
在交互提示符下，这一步用一个新建的 4 层、d_model 128 的模型生成 128 个词元，分别用缓存和不用缓存，
并打印每秒的词元数。时间因机器、因每次运行而异，所以批处理重放不打印时间。可以预期缓存快好几倍，
文本越长差得越多。]],
        },
        code = [[
big = mha.nn.Transformer{vocab = 40, d_model = 128, heads = 4,
                         layers = 4, max_len = 256}
if LESSON.batch then
  print(tr{en = "(batch mode: no timings)", zh = "（批处理模式：不计时）"})
else
  for _, use in ipairs{true, false} do
    local t0 = LESSON.clock()
    big:generate({1}, {max_new_tokens = 128, seed = 1, cache = use})
    local rate = 128 / (LESSON.clock() - t0)
    print(string.format(tr{en = "cache = %-5s  %8.0f tokens/s",
                           zh = "cache = %-5s  每秒 %8.0f 个词元"},
                        tostring(use), rate))
  end
end]],
    },

    exercise{
        title = {en = "The bytes of a cache", zh = "一个缓存的字节数"},
        prompt = {
            en = [[
A model of 6 layers, d_model 256 in 8 heads (K/V heads too), float32, has read 100 tokens. How many
bytes does its KV cache hold? answer(number)]],
            zh = [[
一个 6 层的模型，d_model 256 分成 8 个头（K/V 头也是 8 个），float32，已经读了 100 个词元。它的
KV 缓存占多少字节？answer(数值)]],
        },
        solution = [[2 * 6 * 100 * 8 * 32 * 4]],
        mistakes = {
            mistake{wrong = [[2 * 6 * 100 * 8 * 256 * 4]],
                hint = {en = "D is the size of one head: d_model / heads = 32, not 256",
                        zh = "D 是一个头的维度：d_model / heads = 32，不是 256"}},
            mistake{wrong = [[6 * 100 * 8 * 32 * 4]],
                hint = {en = "the cache keeps K and V: two tensors a layer",
                        zh = "缓存保存 K 和 V：每层两个张量"}},
            mistake{wrong = [[2 * 6 * 100 * 8 * 32]],
                hint = {en = "that counts numbers; a float32 takes 4 bytes",
                        zh = "这是数的个数；一个 float32 占 4 字节"}},
            mistake{wrong = [[2 * 100 * 8 * 32 * 4]],
                hint = {en = "every layer has its own K and V: multiply by the 6 layers",
                        zh = "每一层都有自己的 K 和 V：乘以 6 层"}},
        },
    },
}
