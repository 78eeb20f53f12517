-- lessons/22_rope.lua - RoPE: rotating pairs of features by position, q·k that depends only on the distance,
-- the two layouts ("half" and "interleaved"), the weight permutation that converts one to the other.
return lesson{
    name = "rope", seed = 22,
    title = {en = "RoPE: positions as rotations", zh = "RoPE：用旋转表示位置"},
    summary = {en = "pairs turned by position; only the distance counts; the two layouts and their bug",
               zh = "按位置旋转特征对；只有距离起作用；两种布局和它们带来的错误"},

    step{
        title = {en = "Turning pairs by position", zh = "按位置旋转特征对"},
        text = {
            en = [[
RoPE adds nothing to the tokens. Just before the scores, it takes q and k (D features each) as D/2
pairs and turns pair i of the token at position p by the angle p·θ_i:

    θ_i = base^(-2i/D)      (base = 10000, i = 0 .. D/2 - 1, p from 0)
    (a, b)  ->  (a·cos pθ - b·sin pθ,  b·cos pθ + a·sin pθ)

One pair (D = 2, θ_0 = 1): the vector (1, 0) at positions 0 to 3 is (cos p, sin p). A rotation
keeps the length. Pair 0 turns by 1 radian a position; each later pair 10 times slower (D = 8).]],
            zh = [[
RoPE 不给词元加任何东西。它在算分数之前，把 q 和 k（各 D 个特征）看成 D/2 个特征对，把位置 p 上的
词元的第 i 对转过角度 p·θ_i：

    θ_i = base^(-2i/D)      （base = 10000，i = 0 .. D/2 - 1，p 从 0 数起）
    (a, b)  ->  (a·cos pθ - b·sin pθ,  b·cos pθ + a·sin pθ)

只有一对时（D = 2，θ_0 = 1）：向量 (1, 0) 在位置 0 到 3 上是 (cos p, sin p)。旋转不改变长度。
第 0 对每个位置转 1 弧度，后面每一对慢 10 倍（D = 8）。]],
        },
        code = [[
x = mha.tensor{{1, 0}}:expand(4, 2)   -- tr{en = "one vector at positions 0..3", zh = "同一个向量在位置 0..3"}
show(mha.rope(x), {rows = {"p=0", "p=1", "p=2", "p=3"},
    title = tr{en = "rope(x): (cos p, sin p)", zh = "rope(x)：(cos p, sin p)"}})
for i = 0, 3 do   -- tr{en = "pair i's angle per position, D = 8", zh = "第 i 对每个位置的角度，D = 8"}
  print(string.format("θ_%d = %g", i, 10000 ^ (-2 * i / 8)))
end]],
    },

    step{
        title = {en = "Only the distance counts", zh = "只有距离起作用"},
        text = {
            en = [[
Turn q by its position m and k by its position n: their dot product depends only on n − m,

    R(mθ)q · R(nθ)k = q · R((n − m)θ)k

so q at 5 and k at 2 score as q at 100 and k at 97. Shifting a whole sequence by an offset (mha.rope's
offset, with which a KV cache continues the positions) leaves every score as it was.]],
            zh = [[
把 q 按它的位置 m 旋转，把 k 按它的位置 n 旋转：两者的点积只取决于 n − m，

    R(mθ)q · R(nθ)k = q · R((n − m)θ)k

所以位置 5 的 q 与位置 2 的 k 的分数，和位置 100 的 q 与位置 97 的 k 一样。把整个序列平移一个偏移量
（mha.rope 的 offset，KV 缓存用它接着往下数位置），每个分数都不变。]],
        },
        code = [[
q, k = mha.randn(1, 8), mha.randn(1, 8)
function score(m, n)   -- tr{en = "q at position m, k at position n", zh = "q 在位置 m，k 在位置 n"}
  local qm, kn = mha.rope(q, {offset = m}), mha.rope(k, {offset = n})
  return qm:matmul(kn:T()):item()
end
rows = {}
for _, p in ipairs{{3, 0}, {5, 2}, {100, 97}, {5, 4}, {2, 5}} do
  rows[#rows + 1] = {p[1], p[2], p[1] - p[2], score(p[1], p[2])}
end
LESSON.table(rows, tr{en = {"m", "n", "m - n", "q·k"}, zh = {"m", "n", "m - n", "q·k"}})
Q, K = mha.randn(6, 8), mha.randn(6, 8)
S0 = mha.rope(Q):matmul(mha.rope(K):T())
S50 = mha.rope(Q, {offset = 50}):matmul(mha.rope(K, {offset = 50}):T())
print(tr{en = "both shifted by 50, max |S50 - S0| < 1e-4:",
         zh = "两者都平移 50，max |S50 - S0| < 1e-4："},
      (S50 - S0):abs():max():item() < 1e-4)]],
    },

    step{
        title = {en = "Two layouts of the same pairs", zh = "同样的特征对，两种布局"},
        text = {
            en = [[
Which features form a pair is a choice, and the world made both:

    "half"         pairs (i, i + D/2)   GPT-NeoX, Hugging Face's LLaMA
    "interleaved"  pairs (2i, 2i + 1)   RoFormer, GPT-J, Meta's LLaMA

They are the same rotation once the features are reordered: put features 1, 3, 5, 7 first and
2, 4, 6, 8 after, and the interleaved pairs become the half pairs. Without the reordering, the same
vector in the other layout is turned differently.]],
            zh = [[
哪些特征组成一对是一种选择，而两种选择都有人用：

    "half"         (i, i + D/2) 成对    GPT-NeoX、Hugging Face 的 LLaMA
    "interleaved"  (2i, 2i + 1) 成对    RoFormer、GPT-J、Meta 的 LLaMA

把特征重新排列后，两者是同一个旋转：把特征 1、3、5、7 放在前面，2、4、6、8 放在后面，交错的特征对
就变成了对半的特征对。不重新排列的话，同一个向量换一种布局就会被转成另一个样子。]],
        },
        code = [[
function to_half(x)     -- tr{en = "(n, D): features 1,3,5,... then 2,4,6,...", zh = "(n, D)：先特征 1,3,5,...，再 2,4,6,..."}
  local n, D = x:size(1), x:size(2)
  return x:reshape(n, D / 2, 2):transpose(2, 3):reshape(n, D)
end
function from_half(x)   -- tr{en = "the inverse order", zh = "反过来的顺序"}
  local n, D = x:size(1), x:size(2)
  return x:reshape(n, 2, D / 2):transpose(2, 3):reshape(n, D)
end
x = mha.randn(6, 8)
inter = mha.rope(x, {layout = "interleaved"})
back = from_half(mha.rope(to_half(x), {layout = "half"}))
print(tr{en = "reordered, half equals interleaved exactly:",
         zh = "重排后，half 与 interleaved 完全相等："},
      (back - inter):abs():max():item() == 0)
wrong = mha.rope(x, {layout = "half"})
print(tr{en = "not reordered: max difference > 0.5:",
         zh = "不重排：最大差 > 0.5："},
      (wrong - inter):abs():max():item() > 0.5)]],
    },

    step{
        title = {en = "Converting a checkpoint", zh = "转换一个检查点"},
        text = {
            en = [[
q = x·W_qᵀ: feature r of q is row r of W_q. So reordering q's features is reordering W_q's rows,
done once on the weights. Meta's LLaMA checkpoints are trained in the interleaved layout; the
Hugging Face conversion script permutes the rows of W_q and W_k exactly so (per head), and the
half-layout code then computes the same scores. W_v and W_o are not rotated and stay as they are.]],
            zh = [[
q = x·W_qᵀ：q 的第 r 个特征就是 W_q 的第 r 行。所以重排 q 的特征就是重排 W_q 的行，只需在权重上做
一次。Meta 的 LLaMA 检查点是在交错布局下训练的；Hugging Face 的转换脚本正是这样（逐个头）重排 W_q 和
W_k 的行，于是 half 布局的代码算出相同的分数。W_v 和 W_o 不旋转，保持原样。]],
        },
        code = [[
X = mha.randn(6, 8)                     -- tr{en = "6 tokens", zh = "6 个词元"}
Wq, Wk = mha.randn(8, 8), mha.randn(8, 8)
function scores(Wq, Wk, layout)
  local q = mha.rope(X:matmul(Wq:T()), {layout = layout})
  local k = mha.rope(X:matmul(Wk:T()), {layout = layout})
  return q:matmul(k:T())
end
meta = scores(Wq, Wk, "interleaved")
Wq_hf, Wk_hf = to_half(Wq:T()):T(), to_half(Wk:T()):T()   -- tr{en = "rows reordered", zh = "行已重排"}
hf = scores(Wq_hf, Wk_hf, "half")
print(tr{en = "rows reordered, half layout: same scores (< 1e-4):",
         zh = "行已重排，half 布局：分数相同（< 1e-4）："},
      (hf - meta):abs():max():item() < 1e-4)
bug = scores(Wq, Wk, "half")
print(tr{en = "same weights, wrong layout: same scores?",
         zh = "权重不变，布局用错：分数相同吗？"},
      (bug - meta):abs():max():item() < 1e-4)]],
    },

    step{
        title = {en = "The wrong layout, silently", zh = "用错布局，悄无声息"},
        text = {
            en = [[
The wrong layout raises no error: the shapes are right and the model runs, it only computes
something else. A head that attends to the previous token, built by hand: k's pairs point along
their first axis, q's pairs are turned back by one position's angle, so q at position m meets k
best at m − 1 (pair i scores a_i²·cos((n − m + 1)θ_i), a_i its length). The same q and k at every position: only
position decides. In the wrong layout the head looks at the token itself instead.]],
            zh = [[
用错布局不会报错：形状都对，模型照常运行，只是算的是别的东西。手工搭一个关注前一个词元的头：
k 的每一对指向其第一个轴，q 的每一对往回转了一个位置的角度，所以位置 m 上的 q 与位置 m − 1 上的 k
最匹配（第 i 对的分数是 a_i²·cos((n − m + 1)θ_i)，a_i 是它的长度）。每个位置上的 q 和 k 都相同：只有位置起作用。用错布局
时，这个头看的却是词元自己。]],
        },
        code = [[
qv, kv = {}, {}
for i = 0, 3 do                       -- tr{en = "pair i = features 2i+1, 2i+2", zh = "第 i 对 = 特征 2i+1、2i+2"}
  local th, a = 10000 ^ (-2 * i / 8), ({3, 1, 0, 0})[i + 1]
  qv[2 * i + 1], qv[2 * i + 2] = a * math.cos(th), -a * math.sin(th)
  kv[2 * i + 1], kv[2 * i + 2] = a, 0
end
Qh, Kh = mha.tensor{qv}:expand(6, 8), mha.tensor{kv}:expand(6, 8)
function looks_at(Q, K, layout)     -- tr{en = "the key each query weighs most", zh = "每个查询权重最大的键"}
  local opts = {layout = layout}
  local S = mha.rope(Q, opts):matmul(mha.rope(K, opts):T())
  S = S:masked_fill(mha.causal_mask(6), -math.huge)
  local keys = {}
  for i, j in ipairs(S:argmax(2):totable()) do keys[i] = math.floor(j) end
  return table.concat(keys, " ")
end
print(tr{en = "interleaved:           ", zh = "interleaved：          "}
      .. looks_at(Qh, Kh, "interleaved"))
print(tr{en = "half, rows reordered:  ", zh = "half，行已重排：       "}
      .. looks_at(to_half(Qh), to_half(Kh), "half"))
print(tr{en = "half, same weights:    ", zh = "half，权重不变：       "}
      .. looks_at(Qh, Kh, "half"))]],
    },

    exercise{
        title = {en = "Rotate by hand", zh = "手算旋转"},
        prompt = {
            en = [[
x = mha.tensor{{1, 0, 0, 0}}:expand(4, 4) holds the same vector at positions 0 to 3 (D = 4).
What is the last row of mha.rope(x, {layout = "half"})? Answer with a tensor of 4 numbers
(math.cos and math.sin take radians).]],
            zh = [[
x = mha.tensor{{1, 0, 0, 0}}:expand(4, 4) 在位置 0 到 3 上放着同一个向量（D = 4）。
mha.rope(x, {layout = "half"}) 的最后一行是什么？用 4 个数的张量作答（math.cos 和 math.sin 用弧度）。]],
        },
        solution = [[mha.tensor{math.cos(3), 0, math.sin(3), 0}]],
        mistakes = {
            mistake{wrong = [[mha.tensor{math.cos(3), math.sin(3), 0, 0}]],
                hint = {en = "you paired features 1 and 2: that is the interleaved layout. \"half\" pairs feature i "
                        .. "with i + D/2, so feature 1 turns with feature 3.",
                        zh = "你把特征 1 和 2 配成了一对：那是 interleaved 布局。\"half\" 把特征 i 与 i + D/2 配对，"
                        .. "所以特征 1 和特征 3 一起转。"}},
            mistake{wrong = [[mha.tensor{math.cos(4), 0, math.sin(4), 0}]],
                hint = {en = "positions count from 0: the 4th row is at position 3, so the angle is 3·θ_0 = 3",
                        zh = "位置从 0 数起：第 4 行在位置 3，所以角度是 3·θ_0 = 3"}},
            mistake{wrong = [[mha.tensor{math.cos(3), 0, -math.sin(3), 0}]],
                hint = {en = "the rotation is counterclockwise: b' = b·cos + a·sin, so the second of the pair is +sin 3",
                        zh = "旋转是逆时针的：b' = b·cos + a·sin，所以这一对的第二个是 +sin 3"}},
            mistake{wrong = [[mha.tensor{math.sin(3), 0, math.cos(3), 0}]],
                hint = {en = "cosine and sine are swapped: a' = a·cos - b·sin, and a = 1, b = 0",
                        zh = "cos 和 sin 弄反了：a' = a·cos - b·sin，而 a = 1、b = 0"}},
        },
    },
}
