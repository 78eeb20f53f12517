-- lua/help/zh_text.lua - module "mha.help.zh_text": the Chinese help for attention maps on text
-- and training checkpoints, which lua/help/zh.lua merges into its explanations (zh.lua is near
-- its limit of lines).
--
-- new: whole explanations of entries zh.lua does not have; more: sentences added at the end of an
-- explanation zh.lua has (they continue its last paragraph).

local M = {}

M.new = {}
M.new["mha.show_attention"] = [[
模型在一段文本上的注意力，每个字符占一行（查询）和一列（键）：weights 是 m:attention()（layer= 选一层，默认
第 1 层）、一层的 (B,H,L,L) 或 (H,L,L)，或者一个头的 (L,L)；head= 选一个头，否则画出所有的头。text 的每个
字符对应一个位置（一个汉字就是一个），空格显示为 ␣，换行显示为 ↵。超过 32 个字符的文本只显示一个窗口：
到位置 at（默认是最后一个）为止的 window（24）个位置。因果模型的查询只往前看，所以第 at 行和它在窗口里能看
到的每个键都在屏幕上。打印 mha.heat 那样的格子，色标为 0..1；plot = true 改为用 plot.heads 或
plot.heatmap 画出来（一个窗口，或笔记本里的一张图）。没有返回值。]]

M.more = {}
M.more["mha.heat"] = [[
at=i, window=n 在行和列上都只显示到位置 i 为止的 n 个位置（长文本的注意力），带上它们的标签，并说明显示的是
哪些位置；只给 window 时窗口到最后一个位置为止，只给 at 时窗口长 24。]]
M.more["plot.heatmap"] = [[
at=、window= 画出和 mha.heat 一样的位置窗口。]]
M.more["plot.heads"] = [[
at=、window= 画出和 mha.heat 一样的位置窗口。]]
M.more["mha.train"] = [[
checkpoint = "mine.npz" 每 checkpoint_every 步（默认同 log_every）、最后一步以及 Ctrl-C 停下时，把模型
（文本任务还有它的分词器，所以 mha.load_model 能读它）、优化器的状态和历史写到那里；resume = "mine.npz"
从那里继续训练到第 steps 步（steps 也把之前的步数算在内），可以继续到同一个模型，或一个同样形状的新模型。]]

return M
