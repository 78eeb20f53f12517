-- lua/help/zh_interp.lua - module "mha.help.zh_interp": the Chinese of docs_interp.lua's entries
-- (the hook points and mha.interp), merged into mha.help.zh's entries and groups.

local M = {groups = {interp = "看进模型内部"}, docs = {}}
local D = M.docs

D["Transformer:run_with_cache"] = [[
运行一次前向，并按 TransformerLens 的钩子名字保存其中的激活：cache["hook_embed"]、
cache["blocks.0.attn.hook_pattern"] (N, H, L, S) 等等（model:hook_names() 列出全部；docs/interp.md
给出每个的形状）。名字里的层号从 0 数起，和 state_dict 一样。names 只保留一个列表里的名字（或一个
function(name) 接受的名字）；hooks 在同一次前向里运行，同 run_with_hooks。保存的张量已从计算图上分离。
注意力内部（q、k、v、scores、pattern、z）只在被要求的层里用它的权重算出；它和融合核的结果只差浮点舍入。]]

D["Transformer:run_with_hooks"] = [[
运行一次前向，在每个指定名字（name）的激活上调用一个钩子：钩子拿到这个张量，返回 nil 表示不改，或返回同形状的
张量，前向余下部分就用它代替（梯度会流过它）。名字不存在会给出“你是想……”的提示；替换张量形状不对或钩子
出错时，错误信息写明是哪个钩子；模型保持原样。原样返回输入的钩子什么都不改变，逐位相同。
TransformerLens 的写法 {fwd_hooks = {{name, fn}, ...}} 也可以（name 是字符串，或一个对要挂钩的名字
返回 true 的 function(name)；同一名字上的两个钩子依次运行），run_with_cache 的 {hooks = {[name] = fn}} 也可以。]]

D["Transformer:hook_names"] = [[
按前向经过的顺序列出这个模型的钩子名字：hook_embed、hook_pos_embed，然后每个块的
blocks.l.hook_resid_pre、ln1.hook_normalized、attn.hook_q、hook_k、hook_v、hook_attn_scores、
hook_pattern、hook_z、hook_attn_out、hook_resid_mid、ln2.hook_normalized、mlp.hook_pre、
mlp.hook_post、hook_mlp_out、hook_resid_post，以及 ln_final.hook_normalized；只列模型里确有其部分的
名字（没有 MLP 就没有 mlp 的名字）。]]

D["mha.interp.ablate"] = [[
把第 layer 层的第 head 个头敲掉（都从 1 数起；head 为 nil 时敲掉这一层的所有头）后的 logits
(N, L, vocab)：把它在 blocks.{layer-1}.attn.hook_z 的输出 z 换成零，或在 kind = "mean" 时换成它在
reference（默认 tokens）这批序列上逐位置的平均。把一个头的 z 置零，等于把 W_O 里它的那几列置零。]]

D["mha.interp.patch"] = [[
激活修补：对每一层（positions = true 时再对每个位置，heads = true 时对每个头），在受损（corrupt）输入
的运行里，把这一层名为 name 的激活换成干净（clean）运行里的值，打分为
(metric(patched) - metric(corrupt)) / (metric(clean) - metric(corrupt))：0 表示什么都没修补，1 表示
和干净运行一样。name 是块内的钩子名字，不带 blocks.l.（"hook_resid_pre"、"attn.hook_z"）：patch 在每一层
都用它，所以带某一层的名字（"blocks.0.hook_resid_pre"）会被拒绝；
metric(logits) 返回一个数。结果是 (layers)、(layers, L)、(layers, H) 或 (layers, L, H)。]]

D["mha.interp.logit_lens"] = [[
logit 透镜：把进入每个块的残差流，以及最后一个块之后的残差流，分别经过最后的 norm（如果模型有）和
unembedding 读出来，就好像模型在那里停下。第 1 行只有嵌入；最后一行等于 model:forward(tokens)。]]

D["mha.interp.attribution"] = [[
直接 logit 归因：每个头（heads，(layers, H, N, L)）、每个 MLP（mlp，(layers, N, L)）和嵌入（embed、
pos，(N, L)）朝 target 的 unembedding 方向写了多少；最后 norm 的缩放从这次运行中读出并固定
（TransformerLens 的 apply_ln）。bias 是偏置项：每层注意力的 b_O 和最后 norm 的偏置；MLP 的份额包含它
自己的偏置。target 是一个词元编号或 (N, L) 个编号（如 tokens 的下一个词元）。各部分之和等于 logit，即模型
model 对 target 的 logit。需要 norm = "pre" 或 "none"。]]

return M
