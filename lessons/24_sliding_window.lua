-- lessons/24_sliding_window.lua - sliding windows and attention sinks: the mask and its picture, what a query
-- can see, and the memory a KV cache keeps (the sinks and the last W tokens) against all tokens.
return lesson{
    name = "sliding_window", seed = 24,
    title = {en = "Sliding windows and attention sinks", zh = "滑动窗口与注意力汇聚点"},
    summary = {en = "each query sees the last W keys and a few sinks; the cache keeps only those",
               zh = "每个查询只看最近 W 个键和几个汇聚点；缓存只需保存这些"},

    step{
        title = {en = "A window of W keys", zh = "W 个键的窗口"},
        text = {
            en = [[
A causal query sees every earlier key, so a long text costs a long cache. A *sliding window* lets
the query at position t see only the last W keys, itself included (Mistral 7B: W = 4096):

    query t sees key j  ⇔  j ≤ t  and  t − j < W

mha.sliding_window_mask(L, W) is true where attention is NOT allowed, as mha.causal_mask. In the
picture, o is a key the query sees and . one it does not.]],
            zh = [[
因果注意力中的查询能看到之前所有的键，所以文本越长，缓存就越长。*滑动窗口*让位置 t 上的查询只看最近
W 个键，包括它自己（Mistral 7B：W = 4096）：

    查询 t 看得到键 j  ⇔  j ≤ t  且  t − j < W

mha.sliding_window_mask(L, W) 在*不允许*关注的地方为 true，与 mha.causal_mask 一样。图中 o 是
查询看得到的键，. 是看不到的。]],
        },
        code = [[
function picture(mask)   -- tr{en = "o: seen, .: not allowed", zh = "o：看得到，.：不允许"}
  local keys = {}
  for j = 1, mask:size(2) do keys[j] = j % 10 end
  print("     " .. table.concat(keys, " "))
  for i = 1, mask:size(1) do
    local row = {}
    for j = 1, mask:size(2) do row[j] = mask:get(i, j) and "." or "o" end
    print(string.format("%3d  %s", i, table.concat(row, " ")))
  end
end
window = mha.sliding_window_mask(8, 3)
picture(window)]],
    },

    step{
        title = {en = "Attention sinks", zh = "注意力汇聚点"},
        text = {
            en = [[
A softmax row must sum to 1, and a query with nothing worth reading parks its weight somewhere: in
trained models, mostly on the first tokens, which every query sees. Xiao et al. (StreamingLLM, 2024)
found that a window that drops those first tokens breaks the model, and that keeping a few of
them (4 *sinks*) beside the window restores it (positions j, t count from 0):

    query t sees key j  ⇔  j ≤ t  and  (t − j < W  or  j < sinks)]],
            zh = [[
softmax 的一行之和必须为 1，没有什么值得读的查询也得把权重放在某处：在训练好的模型里，主要放在最前面
的几个词元上，因为每个查询都看得到它们。Xiao 等人（StreamingLLM，2024）发现，丢掉这些开头词元的窗口
会让模型崩溃，而在窗口之外保留其中几个（4 个*汇聚点*）就能恢复（位置 j、t 从 0 数起）：

    查询 t 看得到键 j  ⇔  j ≤ t  且  (t − j < W  或  j < sinks)]],
        },
        code = [[
with_sink = mha.sliding_window_mask(8, 3, {sinks = 1})
picture(with_sink)
print(tr{en = "W ≥ L gives the causal mask:", zh = "W ≥ L 时就是因果掩码："},
      mha.equal(mha.sliding_window_mask(8, 8), mha.causal_mask(8)))]],
    },

    step{
        title = {en = "The mask in attention", zh = "注意力中的掩码"},
        text = {
            en = [[
The window is an ordinary bool mask for sdpa: each query's weights are 0 outside its window and its
sinks, and the rest still sum to 1. Query 8 reads key 1 (the sink) and keys 6, 7 and 8.]],
            zh = [[
窗口对 sdpa 来说是一个普通的布尔掩码：每个查询在它的窗口和汇聚点之外权重为 0，其余的和仍然为 1。
查询 8 读取键 1（汇聚点）以及键 6、7、8。]],
        },
        code = [[
q, k, v = mha.randn(8, 4), mha.randn(8, 4), mha.randn(8, 4)
out, weights = mha.sdpa(q, k, v, {attn_mask = with_sink})
show(weights, {title = tr{en = "weights: window of 3, one sink",
                          zh = "权重：窗口为 3，一个汇聚点"}})
outside = weights:masked_fill(mha.logical_not(with_sink), 0)
print(tr{en = "weight outside the window and sink:", zh = "窗口和汇聚点之外的权重："},
      outside:sum():item())]],
    },

    step{
        title = {en = "What the cache keeps", zh = "缓存保存什么"},
        text = {
            en = [[
Decoding, the new token is one query, the last of all positions so far. It sees the sinks and the
last W keys only, so the KV cache can drop everything else: it keeps sinks + W tokens however long
the text grows (the picture: the one query of a step at position 8, W = 3, one sink). Below, a model of Mistral 7B's size: 32 layers, 8 K/V heads of 128 numbers, 2 bytes
each, so K and V take 128 KiB a token; W = 4096 and 4 sinks.]],
            zh = [[
解码时，新词元是一个查询，位于目前所有位置的最后。它只看汇聚点和最近 W 个键，所以 KV 缓存可以丢掉
其余的一切：无论文本多长，它只保存 sinks + W 个词元（图中是位置 8 上那一步唯一的查询，W = 3，
一个汇聚点）。下面是一个 Mistral 7B 大小的模型：32 层，
8 个 K/V 头，每个 128 个数，每个数 2 字节，所以 K 和 V 每个词元占 128 KiB；W = 4096，4 个汇聚点。]],
        },
        code = [[
picture(mha.sliding_window_mask(1, 3, {sinks = 1, S = 8}))
per_token = 2 * 32 * 8 * 128 * 2        -- tr{en = "K and V, bytes a token", zh = "K 和 V，每个词元的字节数"}
rows = {}
for _, T in ipairs{1024, 4096, 32768, 131072} do
  local kept = math.min(T, 4 + 4096)
  rows[#rows + 1] = {T, T * per_token / 2^20, kept * per_token / 2^20}
end
LESSON.table(rows, tr{en = {"tokens", "all (MiB)", "sinks + window (MiB)"},
                      zh = {"词元数", "全部（MiB）", "汇聚点 + 窗口（MiB）"}},
             "%.1f")]],
    },

    exercise{
        title = {en = "How many keys each query sees", zh = "每个查询看得到几个键"},
        prompt = {
            en = [[
A text of 12 tokens, a window W = 4 and 2 sinks. How many keys does each of the 12 queries see?
Answer with a tensor (or a table) of 12 counts.]],
            zh = [[
一段 12 个词元的文本，窗口 W = 4，2 个汇聚点。12 个查询各自看得到几个键？用 12 个计数组成的张量
（或表）作答。]],
        },
        solution = [[mha.tensor{1, 2, 3, 4, 5, 6, 6, 6, 6, 6, 6, 6}]],
        mistakes = {
            mistake{wrong = [[mha.tensor{1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4}]],
                hint = {en = "that is the window alone: the 2 sinks are seen too, once they fall out of the window",
                        zh = "这只是窗口：2 个汇聚点掉出窗口之后也看得到"}},
            mistake{wrong = [[mha.tensor{3, 4, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6}]],
                hint = {en = "the first queries' windows already hold the sinks: count each key once "
                        .. "(query 1 sees only itself)",
                        zh = "前几个查询的窗口里已经包含汇聚点：每个键只数一次（查询 1 只看得到它自己）"}},
            mistake{wrong = [[mha.tensor{11, 10, 9, 8, 7, 6, 6, 6, 6, 6, 6, 6}]],
                hint = {en = "you counted the true entries of the mask: true means NOT allowed, count the false ones",
                        zh = "你数的是掩码中为 true 的元素：true 表示*不允许*，要数 false 的"}},
            mistake{wrong = [[mha.tensor{1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7, 7}]],
                hint = {en = "a query sees itself and the W - 1 keys before it: t - j < W, not ≤ W",
                        zh = "查询看得到自己和它之前的 W - 1 个键：是 t - j < W，不是 ≤ W"}},
        },
    },
}
