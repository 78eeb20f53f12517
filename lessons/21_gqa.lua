-- lessons/21_gqa.lua - grouped-query and multi-query attention: H query heads sharing H_kv K/V
-- heads, which query head reads which K/V head, sdpa's enable_gqa against repeating K/V by hand,
-- the cache H/H_kv times smaller, and two small models (kv_heads = heads and 1) on one task.
return lesson{
    name = "gqa", seed = 21,
    title = {en = "GQA and MQA: sharing keys and values", zh = "GQA 与 MQA：共享键和值"},
    summary = {en = "H query heads share H_kv K/V heads: a cache H/H_kv times smaller",
               zh = "H 个查询头共享 H_kv 个 K/V 头：缓存小 H/H_kv 倍"},

    step{
        title = {en = "Fewer K/V heads", zh = "更少的 K/V 头"},
        text = {
            en = [[
The KV cache (lesson 20) grows with H_kv, the number of K/V heads. Multi-query attention (MQA,
Shazeer 2019) keeps all H query heads but only one K/V head, which they all read. Grouped-query
attention (GQA, Ainslie et al. 2023) is in between: H_kv K/V heads, each read by a group of
H/H_kv query heads. LLaMA 2 70B has 64 query heads and 8 K/V heads; Mistral 7B 32 and 8. Query
head h (1-based) reads K/V head ⌈h · H_kv / H⌉: heads 1 .. H/H_kv read K/V head 1, the next
H/H_kv read K/V head 2, and so on.]],
            zh = [[
KV 缓存（第 20 课）随 K/V 头的个数 H_kv 增长。多查询注意力（MQA，Shazeer 2019）保留全部 H 个查询头，
但只有一个 K/V 头，所有查询头都读它。分组查询注意力（GQA，Ainslie 等 2023）介于两者之间：H_kv 个
K/V 头，每个由一组 H/H_kv 个查询头读取。LLaMA 2 70B 有 64 个查询头和 8 个 K/V 头；Mistral 7B 是
32 和 8。查询头 h（从 1 数起）读取 K/V 头 ⌈h · H_kv / H⌉：头 1 .. H/H_kv 读 K/V 头 1，接下来的
H/H_kv 个读 K/V 头 2，依此类推。]],
        },
        code = [[
H = 8
rows = {}
for _, H_kv in ipairs{8, 4, 2, 1} do
  local row = {H_kv}
  for h = 1, H do row[h + 1] = math.ceil(h * H_kv / H) end
  rows[#rows + 1] = row
end
LESSON.table(rows, tr{en = {"H_kv \\ h", "1", "2", "3", "4", "5", "6", "7", "8"},
                      zh = {"H_kv \\ h", "1", "2", "3", "4", "5", "6", "7", "8"}})
print(tr{en = "H_kv = 8: MHA; 4 and 2: GQA; 1: MQA",
         zh = "H_kv = 8：MHA；4 和 2：GQA；1：MQA"})]],
    },

    step{
        title = {en = "enable_gqa: the same as repeating K and V", zh = "enable_gqa：等于重复 K 和 V"},
        text = {
            en = [[
mha.sdpa(q, k, v, {enable_gqa = true}) takes q (H, L, E) and k, v (H_kv, S, E), as torch 2.5
does. It equals repeating each K/V head H/H_kv times in a row (torch's repeat_interleave) and
running ordinary attention, but it never makes those copies. Repeating the whole stack instead
(heads 1 2 1 2 ...) is another pairing of heads: a different result.]],
            zh = [[
mha.sdpa(q, k, v, {enable_gqa = true}) 接收 q (H, L, E) 和 k、v (H_kv, S, E)，与 torch 2.5 一样。
它等于把每个 K/V 头连续重复 H/H_kv 次（torch 的 repeat_interleave），再做普通的注意力，但它从不真的
做这些拷贝。若把整叠头整体重复（头 1 2 1 2 ……），那是另一种头的配对：结果不同。]],
        },
        code = [[
q, k, v = mha.randn(8, 5, 16), mha.randn(2, 5, 16), mha.randn(2, 5, 16)
out = mha.sdpa(q, k, v, {enable_gqa = true, need_weights = false})
function repeat_each(t)   -- tr{en = "(2, 5, 16) -> heads 1 1 1 1 2 2 2 2", zh = "(2, 5, 16) -> 头 1 1 1 1 2 2 2 2"}
  return t:unsqueeze(2):expand(2, 4, 5, 16):reshape(8, 5, 16)
end
function repeat_stack(t)  -- tr{en = "(2, 5, 16) -> heads 1 2 1 2 1 2 1 2", zh = "(2, 5, 16) -> 头 1 2 1 2 1 2 1 2"}
  return t:unsqueeze(1):expand(4, 2, 5, 16):reshape(8, 5, 16)
end
plain = {need_weights = false}
by_hand = mha.sdpa(q, repeat_each(k), repeat_each(v), plain)
stacked = mha.sdpa(q, repeat_stack(k), repeat_stack(v), plain)
print(tr{en = "enable_gqa = repeat_interleave (< 1e-6):",
         zh = "enable_gqa = repeat_interleave（< 1e-6）："},
      (out - by_hand):abs():max():item() < 1e-6)
print(tr{en = "enable_gqa = whole stack repeated (< 1e-6):",
         zh = "enable_gqa = 整叠重复（< 1e-6）："},
      (out - stacked):abs():max():item() < 1e-6)]],
    },

    step{
        title = {en = "The cache, H/H_kv times smaller", zh = "缓存小 H/H_kv 倍"},
        text = {
            en = [[
mha.nn.Transformer{kv_heads = n} (n < heads) builds each layer's attention with LLaMA's separate
projections: q_proj keeps d_model rows, k_proj and v_proj only H_kv·D. The cache holds H_kv heads a
layer, so H/H_kv times less than multi-head attention's. Three models of 8 heads of 8, 2 layers,
one text of 10 tokens; then the attention parameters of the one with H_kv = 2:]],
            zh = [[
mha.nn.Transformer{kv_heads = n}（n < heads）用 LLaMA 那样分开的投影来构建每一层的注意力：q_proj 保留
d_model 行，k_proj 和 v_proj 只有 H_kv·D 行。缓存每层只存 H_kv 个头，所以比多头注意力的小 H/H_kv 倍。
三个模型，都是 8 个 8 维的头、2 层，读同一段 10 个词元的文本；然后是 H_kv = 2 那个模型的注意力参数：]],
        },
        code = [[
rows = {}
for _, H_kv in ipairs{8, 2, 1} do
  local m = mha.nn.Transformer{vocab = 20, d_model = 64, heads = 8,
                               kv_heads = H_kv, layers = 2, max_len = 32}
  local c = m:new_cache()
  m:forward({{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}, {cache = c})
  local n = 0
  for _, p in m:named_parameters() do n = n + p:numel() end
  rows[#rows + 1] = {H_kv, n, c:bytes(), 8 // H_kv}
end
LESSON.table(rows, tr{en = {"H_kv", "parameters", "cache bytes", "H / H_kv"},
                      zh = {"H_kv", "参数个数", "缓存字节数", "H / H_kv"}})
m = mha.nn.Transformer{vocab = 20, d_model = 64, heads = 8, kv_heads = 2,
                       layers = 2, max_len = 32}
for name, p in m:named_parameters() do
  if name:find("layers.0.attn") then
    print(name, table.concat(p:shape(), "×"))
  end
end]],
    },

    step{
        title = {en = "Does quality suffer?", zh = "质量会变差吗？"},
        text = {
            en = [[
The query heads of a group share their keys and values, so they have less to choose from. On big
models GQA with 8 K/V heads comes close to multi-head quality and MQA loses a little (Ainslie et
al.). A toy check: two one-layer models of 4 heads learn to reverse a sequence (lesson 15), one
with 4 K/V heads, one with a single K/V head, from the same seed, 200 steps each (about 2 s
together), tested on 500 new sequences. Both learn it; MQA with 31% fewer parameters.]],
            zh = [[
同一组的查询头共享键和值，所以它们可选的东西更少。在大模型上，8 个 K/V 头的 GQA 接近多头注意力的质量，
MQA 则略有损失（Ainslie 等）。一个玩具检验：两个 4 个头的一层模型学习反转序列（第 15 课），一个有 4 个
K/V 头，一个只有 1 个 K/V 头，用同一个种子，各训练 200 步（共约 2 秒），在 500 个新序列上测试。两个都
学会了；MQA 的参数少 31%。]],
        },
        code = [[
task = mha.tasks.reverse{vocab = 10, len = 6, batch = 64}
test_tokens, test_targets = mha.tasks.reverse{vocab = 10, len = 6,
  batch = 500, seed = 99}:batch()
rows = {}
for _, H_kv in ipairs{4, 1} do
  mha.seed(21)
  local m = mha.nn.Transformer{vocab = 10, d_model = 32, heads = 4,
    kv_heads = H_kv, layers = 1, d_ff = 0, max_len = 12}
  mha.train{model = m, task = task, steps = 200, lr = 3e-3, quiet = true}
  local logits = mha.no_grad(function() return m:forward(test_tokens) end)
  local _, acc = mha.train.loss(logits, test_targets)
  local n = 0
  for _, p in m:named_parameters() do n = n + p:numel() end
  rows[#rows + 1] = {H_kv, n, tostring(acc >= 0.99)}
end
LESSON.table(rows, tr{en = {"K/V heads", "parameters", "accuracy >= 99%"},
                      zh = {"K/V 头数", "参数个数", "准确率 >= 99%"}})]],
    },

    exercise{
        title = {en = "Which K/V head?", zh = "哪个 K/V 头？"},
        prompt = {
            en = [[
A model has H = 12 query heads and H_kv = 4 K/V heads. For each query head 1 .. 12, which K/V head
(1-based) does it read? Answer with a table of 12 numbers.]],
            zh = [[
一个模型有 H = 12 个查询头和 H_kv = 4 个 K/V 头。查询头 1 .. 12 各自读取哪个 K/V 头（从 1 数起）？
用 12 个数的表作答。]],
        },
        solution = [[{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4}]],
        mistakes = {
            mistake{wrong = [[{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}]],
                hint = {en = "that repeats the whole stack of K/V heads; a group of H/H_kv = 3 "
                        .. "neighbouring "
                        .. "query heads shares one (repeat_interleave)",
                        zh = "这是把整叠 K/V 头重复；应该是 H/H_kv = 3 个相邻的查询头共享一个（repeat_interleave）"}},
            mistake{wrong = [[{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}]],
                hint = {en = "those are 0-based; the question counts K/V heads from 1",
                        zh = "这是从 0 数起的；题目中的 K/V 头从 1 数起"}},
            mistake{wrong = [[{0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4}]],
                hint = {en = "round h·H_kv/H up, not down: ⌈h·4/12⌉, so heads 1, 2 and 3 "
                        .. "read K/V head 1",
                        zh = "h·H_kv/H 要向上取整，不是向下：⌈h·4/12⌉，所以头 1、2、3 读 K/V 头 1"}},
            mistake{wrong = [[{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}]],
                hint = {en = "a group has H/H_kv = 12/4 = 3 query heads, not 4",
                        zh = "每组有 H/H_kv = 12/4 = 3 个查询头，不是 4 个"}},
        },
    },
}
