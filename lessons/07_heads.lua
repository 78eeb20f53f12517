-- lessons/07_heads.lua - splitting into heads and joining them back: view -> transpose -> contiguous ->
-- view, with the shape, strides and offset of every view printed, and why view fails without contiguous.
return lesson{
    name = "heads", seed = 7,
    title = {en = "Splitting and joining heads", zh = "拆分与拼接多个头"},
    summary = {en = "view → transpose → contiguous → view, strides and offsets printed",
               zh = "view → transpose → contiguous → view，打印步长和偏移"},

    step{
        title = {en = "A tensor is a view of memory", zh = "张量是内存的一个视图"},
        text = {
            en = [[
A tensor is a block of memory (its *storage*) plus three things that say how to read it: the *shape*,
the *strides* (how many elements to skip to move one step along each dim) and the *offset* (where
element [1,1] is). Q here is L = 3 tokens × E = 6 features, filled with 0..17 so that every number is
its own position in memory. Element [i,j] lives at offset + (i−1)·6 + (j−1)·1.]],
            zh = [[
张量是一块内存（它的*存储*）加上三样说明如何读取它的东西：*形状*、*步长*（沿每一维前进一步要跳过多少个元素）
和*偏移*（元素 [1,1] 的位置）。这里 Q 是 L = 3 个词元 × E = 6 个特征，填入 0..17，使每个数恰好是它在内存中
的位置。元素 [i,j] 位于 offset + (i−1)·6 + (j−1)·1。]],
        },
        code = [[
tokens = tr{en = {"the", "cat", "sat"}, zh = {"小", "猫", "坐"}}
L, E, H = 3, 6, 2
D = E // H
Q = mha.arange(0, 18):view(L, E)
show(Q, {rows = tokens, title = "Q (L=3, E=6)"})
LESSON.describe("Q", Q)   -- tr{en = "shape, strides, offset, contiguity", zh = "形状、步长、偏移、是否连续"}]],
    },

    step{
        title = {en = "view: (L, E) → (L, H, D)", zh = "view：(L, E) → (L, H, D)"},
        text = {
            en = [[
With H = 2 heads of D = E/H = 3 features, head h owns columns (h−1)·D+1 … h·D of every row. view(L, H, D)
reads the same memory as 3×2×3: nothing is copied, only the shape and strides change. The tutorial
“Transformer大模型实战：多头注意力层解析” says a head's size is "1/k of the sequence length": wrong; the head size is D = d_model/h, it splits the features
of each token, never the tokens.]],
            zh = [[
H = 2 个头，每头 D = E/H = 3 个特征，第 h 个头占每一行的第 (h−1)·D+1 … h·D 列。view(L, H, D) 把同一块内存
读成 3×2×3：什么也没复制，只改变了形状和步长。教程《Transformer大模型实战：多头注意力层解析》说
“头的大小是序列长度的 1/k”，这是错的：头的大小是
D = d_model/h，它切分的是每个词元的特征，而不是词元。]],
        },
        code = [[
split = Q:view(L, H, D)
LESSON.describe("Q:view(3, 2, 3)", split)
print(tr{en = "shares storage with Q:", zh = "与 Q 共享存储："},
    split:shares_storage(Q))
show(split, {dims = tr{en = {"token", "head", "feature"},
                       zh = {"词元", "头", "特征"}},
    title = "Q:view(L, H, D)"})]],
    },

    step{
        title = {en = "transpose: heads first", zh = "transpose：把头放到前面"},
        text = {
            en = [[
To run the heads as a batch we want (H, L, D): transpose(1, 2) swaps two dims by swapping their sizes
and strides. Still no copy; but now moving along the last dim is contiguous while moving to the next
token skips 6 and to the next head skips 3: the tensor is no longer *contiguous* (its elements are not
in C order in memory). Head 2 alone is a view that starts at offset 3.]],
            zh = [[
为了把各个头当作一个批次运行，我们需要 (H, L, D)：transpose(1, 2) 通过交换两维的大小和步长来交换这两维。
仍然没有复制；但现在沿最后一维移动是连续的，而移到下一个词元要跳 6、移到下一个头要跳 3：张量不再是
*连续的*（元素在内存中不是按 C 顺序排列）。单独的第 2 个头是一个从偏移 3 开始的视图。]],
        },
        code = [[
heads = split:transpose(1, 2)
LESSON.describe("split:transpose(1, 2)", heads)
show(heads, {rows = tokens,
    dims = tr{en = {"head", "token", "feature"},
              zh = {"头", "词元", "特征"}},
    title = tr{en = "heads (H, L, D)", zh = "heads（头 H，词元 L，特征 D）"}})
head2 = heads:select(1, 2)
LESSON.describe("heads:select(1, 2)", head2)
LESSON.describe(tr{en = "Q:narrow(2, 4, 3) (the same)",
             zh = "Q:narrow(2, 4, 3)（相同）"}, Q:narrow(2, 4, 3))]],
    },

    step{
        title = {en = "Joining: transpose, contiguous, view", zh = "拼接：transpose、contiguous、view"},
        text = {
            en = [[
After attention each head gives an (L, D) output: together (H, L, D). To concatenate them per token we
go back: transpose(1, 2) → (L, H, D), then view(L, E). But that view is impossible: (L, H, D) with
strides (3, 9, 1) cannot be read as (L, E) with one stride per dim, because a token's 6 numbers are not
adjacent in memory. view refuses (it never copies); contiguous() copies into C order first, after which
view works. reshape does both for you.]],
            zh = [[
注意力计算后每个头给出一个 (L, D) 的输出：合起来是 (H, L, D)。要按词元拼接，就反过来：transpose(1, 2) →
(L, H, D)，再 view(L, E)。但这个 view 做不到：步长为 (3, 9, 1) 的 (L, H, D) 无法用每维一个步长读成 (L, E)，
因为一个词元的 6 个数在内存中并不相邻。view 拒绝执行（它从不复制）；contiguous() 先把数据复制成 C 顺序，
之后 view 就可以了。reshape 会替你把两步都做掉。]],
        },
        code = [[
-- tr{en = "a stand-in for the heads' outputs, (H, L, D), contiguous", zh = "代替各头输出的张量，(H, L, D)，连续存放"}
head_outputs = heads * 10
back = head_outputs:transpose(1, 2)
LESSON.describe("head_outputs:transpose(1, 2)", back)
-- tr{en = "back:view(L, E), its error caught", zh = "即 back:view(L, E)，接住它的错误"}
ok, err = pcall(back.view, back, L, E)
say(tr{en = "view without contiguous: ",
       zh = "不先 contiguous 就 view：view 从不复制，而这里"
            .. "一个词元的数在内存中不相邻，所以它拒绝了（原话如下）\n"} .. err)
packed = back:contiguous()
LESSON.describe("…:contiguous()", packed)
concat = packed:view(L, E)
show(concat, {rows = tokens,
    title = tr{en = "concat (L, E): head 1 | head 2 per row",
               zh = "concat (L, E)：每行是头 1 | 头 2"}})]],
    },

    step{
        title = {en = "The wrong order", zh = "错误的顺序"},
        text = {
            en = [[
Skipping the transpose "works" without any error: head_outputs:contiguous():view(L, E) has the right
shape, but it reads memory in head order, so a row holds pieces of different tokens: row 1 is head 1's
"the" and "cat", row 2 head 1's "sat" and head 2's "the", row 3 head 2's "cat" and "sat". “多头自注意力模块” makes a related mistake in
words: it is the heads' *outputs* (L×D each) that are
concatenated, not their attention matrices (L×L each).]],
            zh = [[
跳过 transpose 也“能运行”，不报任何错：head_outputs:contiguous():view(L, E) 形状正确，但它按头的顺序读内存，
所以一行装的是不同词元的片段：第 1 行是头 1 的“小”和“猫”，第 2 行是头 1 的“坐”和头 2 的“小”，
第 3 行是头 2 的“猫”和“坐”。教程《多头自注意力模块》在文字上犯了类似的错误：拼接的是各头的*输出*
（每个 L×D），而不是它们的注意力矩阵（每个 L×L）。]],
        },
        code = [[
wrong = head_outputs:contiguous():view(L, E)
show(wrong, {rows = tokens,
    title = tr{en = "view without the transpose: rows mix tokens", zh = "不转置就 view：行混合了不同词元"}})
show(concat - wrong, {rows = tokens, title = "concat - wrong"})]],
    },

    exercise{
        title = {en = "Join the heads", zh = "拼接各个头"},
        prompt = {
            en = [[
outs = mha.randn{2, 3, 3} holds the outputs of H = 2 heads for L = 3 tokens (H, L, D). Concatenate them
per token into an (L, E) = (3, 6) tensor, head 1's features first, and answer with it.]],
            zh = [[
outs = mha.randn{2, 3, 3} 存放 H = 2 个头对 L = 3 个词元的输出 (H, L, D)。把它们按词元拼接成
(L, E) = (3, 6) 的张量，头 1 的特征在前，并作答。]],
        },
        code = [[outs = mha.randn{2, 3, 3}]],
        solution = [[outs:transpose(1, 2):contiguous():view(3, 6)]],
        mistakes = {
            mistake{error = "contiguous",
                hint = {en = "view cannot read the transposed tensor as (3, 6): call :contiguous() before :view (or use :reshape)",
                        zh = "view 无法把转置后的张量读成 (3, 6)：在 :view 之前调用 :contiguous()（或改用 :reshape）"}},
            mistake{wrong = [[outs:contiguous():view(3, 6)]],
                hint = {en = "right shape, wrong order: without transpose(1, 2) the rows hold pieces of different tokens (memory read in head order), not head 1 | head 2 of one token",
                        zh = "形状对了，顺序错了：没有 transpose(1, 2)，各行装的是不同词元的片段（按头的顺序读内存），而不是同一个词元的头 1 | 头 2"}},
            mistake{wrong = [[mha.cat({outs:select(1, 2), outs:select(1, 1)}, 2)]],
                hint = {en = "the heads are in the wrong order: head 1's D features come first in each row",
                        zh = "头的顺序反了：每一行中头 1 的 D 个特征在前"}},
        },
    },
}
