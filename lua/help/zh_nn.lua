-- lua/help/zh_nn.lua - module "mha.help.zh_nn": the Chinese of the modules' entries (mha.nn.Module
-- and its methods, the containers, Linear, Embedding, LayerNorm, the Transformer and its KV cache),
-- merged into mha.help.zh's entries.

local M = {docs = {}}
local D = M.docs

D["mha.nn.Module"] = [[
所有模块的基类，用来像在 PyTorch 里那样写自己的模块：用 extend 造一个类，给它一个 init（调用这个类时运行）
和一个 forward。把一个模块赋给某个字段，就把它按这个名字登记为子模块；m:register_parameter(name, t)
添加一个参数。state_dict 的键是点号路径：子模块名、'.'、参数名。]]
D["Module:extend"] = [[
从 Base（mha.nn.Module，或你自己的类）派生出一个新的模块类；调用这个类就创建一个实例，并用这些参数运行它的
init。]]
D["Module:forward"] = [[
模块的计算。用 mha.nn.Module:extend 写的类自己定义它；调用模块就是调用它。]]
D["Module:add_module"] = [[
把 child（一个模块）登记在 name 下，和赋值 m[name] = child 一样；child 为 nil 时删掉它。]]
D["Module:register_parameter"] = [[
把 t 登记为 m 在 name（不能含 '.'）下的参数：一个打开了 requires_grad 的叶子，parameters 和 state_dict
都会列出它。之后给这个名字赋另一个张量，就替换这个参数。]]
D["Module:parameters"] = [[
点号名字 -> 张量，包含模块和它所有子模块的每个参数：就是参数本身，所以 p:grad() 就是梯度，用这张表造出的
优化器会更新这个模块。两个子模块共享的参数只列一次。]]
D["Module:named_parameters"] = [[
带点号名字的参数，按 PyTorch 的顺序。可以像 torch 那样循环：for name, p in m:named_parameters() do ... end；
也可以当作 {name, tensor} 的列表来取下标。]]
D["Module:train"] = [[
设置 torch 的训练标志：模块和它的每个子模块都有 m.training = mode（m:eval() 就是 m:train(false)）。这里没有
模块带 dropout 或 batch norm，所以这个标志不改变任何结果；你自己写的 forward 可以读 self.training。]]
D["Module:eval"] = [[
即 m:train(false)：模块和每个子模块的 m.training 都是 false，同 torch 的 eval()。]]
D["Module:to"] = [[
mha-repl 只在 CPU 上计算：m:to("cpu") 原样返回 m（torch 代码照常能跑），其他设备（"cuda"、"mps"）会被拒绝，
错误里写出设备名。]]
D["MultiheadAttention:named_parameters"] = [[
参数和 PyTorch 的名字（out_proj.weight），按 state_dict 的顺序，同 Module:named_parameters。]]
D["MultiheadAttention:train"] = [[
设置 torch 的训练标志 m.training，同 Module:train。这个模块没有 dropout，所以这个标志不改变任何结果。]]
D["MultiheadAttention:eval"] = [[
即 m:train(false)，同 Module:eval。]]
D["MultiheadAttention:to"] = [[
只有 CPU，同 Module:to：m:to("cpu") 返回 m，其他设备会被拒绝。]]
D["Module:parameter_names"] = [[
参数的点号名字，按 PyTorch 的顺序：先是模块自己的，再是每个子模块的。]]
D["Module:named_children"] = [[
直接的子模块，按赋值的先后顺序。]]
D["Module:state_dict"] = [[
点号键 -> 张量，每个参数一项，键名同 PyTorch（attn.out_proj.weight、layers.0.bias）。这些张量和参数共享数据，
但已从计算图上分离。用 mha.save("m.npz", m:state_dict()) 存下后，PyTorch 里用
m.load_state_dict({k: torch.from_numpy(v) for k, v in np.load("m.npz").items()}) 就能载入。]]
D["Module:load_state_dict"] = [[
把 sd 的每一项（键 -> 张量，或嵌套的表）原地复制进同一个键的参数，所以持有这些参数的优化器不受影响。和
PyTorch 一样，strict 时缺少的键或多出来的键都是错误（某个键像是拼错了时会给出猜测），形状不符则总是错误；
所有问题一次列出，什么都不复制。返回缺少的键和多出的键两个列表。]]
D["Module:zero_grad"] = [[
清掉每个参数的梯度（p:grad() 又是 nil），同 PyTorch 的 zero_grad(set_to_none=True)。在此之前，多次
backward 的梯度会累加。]]
D["mha.nn.Linear"] = [[
y = x·Wᵀ + b，作用在 x 的最后一维：(..., in_features) -> (..., out_features)，通过 mha.linear 计算。参数
weight (out_features, in_features) 和 bias (out_features)，和 PyTorch 一样用 mha.seed 的发生器初始化：
weight 用 a = √5 的 kaiming_uniform_，也就是 U(-1/√in_features, 1/√in_features)，bias 用同样的界。]]
D["mha.nn.Embedding"] = [[
一张表，存着 num_embeddings 个向量，每个有 embedding_dim 个数（weight，和 PyTorch 一样按 N(0, 1) 初始化）；
m(indices) 取出 indices 所指的那些行。下标和 Lua 一样从 1 开始：一张表（嵌套得和形状一样）或一个形状为 (...)
的整数张量，得到 (..., embedding_dim)。梯度流进用到的那些行。]]
D["mha.nn.LayerNorm"] = [[
把最后几维（normalized_shape：一个数表示最后一维，或者一张表给出最后几维的大小）归一化成均值 0、方差 1，
再乘 weight、加 bias（一开始是全 1 和全 0，同 PyTorch），通过 mha.layer_norm 计算。]]
D["mha.nn.ModuleList"] = [[
模块的列表：state_dict 的键和 PyTorch 一样从 0 数（layers.0.weight），而 Lua 里从 1 读：l[1] 是第一个，
#l 是个数，ipairs(l) 逐个遍历。它自己没有 forward：在你的 forward 里调用这些模块。]]
D["ModuleList:append"] = [[
把 m 加为下一个子模块，名字是它从 0 开始的位置。]]
D["mha.nn.Sequential"] = [[
一个接一个地应用各模块：forward(x) 就是 m2(m1(x))。键和 PyTorch 一样从 0 数。]]
D["mha.nn.Transformer"] = [[
用核心部件搭成的小型仅解码器 Transformer：词元嵌入和位置嵌入，每层一个注意力（d_ff = 0 之外还有一个 MLP），
带残差连接和层归一化（norm 为 "pre"、"post" 或 "none"），最后一个归一化（pre 时）和反嵌入。
model:forward(tokens) 接受 (N, L) 或 (L) 的从 1 开始的词元编号，返回 logits (N, L, vocab)；
model:forward(tokens, {key_padding_mask = pad}) 中 pad 为 (N, L) 布尔张量，填充处为 true（同 torch），
任何查询都不读这些键（长短不一的一批句子）；之后
model:attention() 给出每层一个 (N, H, L, L) 的权重张量。state_dict 的键同 PyTorch
（layers.0.attn.in_proj_weight）。pos 可以是 "learned"、"sinusoidal"、"rope"（配 rope_layout、rope_base）、
"alibi" 或 "none"；kv_heads < heads 时每个 K/V 头由 heads / kv_heads 个查询头共用（1 就是 MQA）；
window = W 让每个查询只看最近的 W 个键和开头的 sinks 个。用到其中任何一个时，注意力是 LLaMA 的写法：
layers.0.attn.q_proj.weight、k_proj、v_proj、o_proj，没有偏置。model:new_cache() 和
model:generate(prompt, opts) 用来逐词解码。]]
D["Transformer:attention"] = [[
一次前向传播（need_weights 保持默认的开）之后，每层的注意力权重，每层一个 (N, H, L, L) 张量：
weights[n][h][i][j] 是第 n 行、第 h 个头里查询 i 对键 j 的关注程度，每行加起来是 1。还没做过前向传播时
报错并说明原因。]]
D["Transformer:config"] = [[
构建这个模型的选项（vocab、d_model、heads、layers、d_ff、max_len、norm、pos……）的一份副本，每一项都已
填好：mha.nn.Transformer(model:config()) 再建一个同样形状的模型；mha.save_model 保存它们，
mha.load_model 据此重建模型。]]
D["Transformer:new_cache"] = [[
这个模型（须是因果的）的一个空 KV 缓存。之后 model:forward(tokens, {cache = cache}) 只接受新的词元：
它们的位置从 cache:length() 接着数，每层的键和值 (N, H_kv, S, D) 接到缓存后面，于是每一步只算一个词元，
而不是整个序列。logits 与完整前向传播的相同。超过 max_len 会报错，除非模型有窗口：那时缓存只保留 sinks
个汇聚词元和最近的 W 个（StreamingLLM），位置在缓存里面数，可以一直解码下去。一个缓存只服务一个模型、
一种批大小。]]
D["Transformer:generate"] = [[
从 prompt（从 1 开始的编号组成的表，或一维张量）往下写：每个新词元由 mha.sample 从最后一个位置的 logits
里抽出，再喂回模型。返回一张表：prompt 加上 max_new_tokens 个新编号。seed 只调用一次 mha.seed，所以同一个
seed 用缓存（cache = true，每步喂一个词元）和不用缓存（cache = false，每步重跑整个序列）得到同样的词元。temperature 为 0 时取最大者。
每抽出一个新词元就调用一次 on_token(id)，它返回 false 时停下。roll = true 时读 prompt 的
最后 max_len 个词元，缓存存满 max_len 个时清空它，把文本的后一半重新读进去，于是可以写过
max_len（mha.generate 就这样写）。
Ctrl-C 可以停下它。]]
D["KVCache:length"] = [[
缓存里存着多少个词元，也就是下一个词元所占的位置。有窗口时它长到 sinks + W 就不再增长；
cache:seen_tokens() 数的是经过它的所有词元。]]
D["KVCache:bytes"] = [[
缓存所存的键和值占的内存，单位是字节：layers · 2 · N · H_kv · S · D 个数，每个 4 字节。K/V 头更少
（kv_heads）时，它是原来的 kv_heads / heads。]]
D["KVCache:seen_tokens"] = [[
自从创建或 reset 以来经过缓存的词元数；窗口丢掉一些之后，它比 cache:length() 大。]]
D["KVCache:keys"] = [[
第 layer 层（1 .. layers）存着的键，(N, H_kv, S, D)：S = cache:length() 个词元，H_kv 个
K/V 头，每个 D 个数。它就是缓存自己的张量，不是副本。用 RoPE 时存的是转过的键；有窗口的
模型除外，它每一步在缓存里的位置上转它们。]]
D["KVCache:values"] = [[
第 layer 层（1 .. layers）存着的值，(N, H_kv, S, D)，同 cache:keys(layer)：是缓存自己的张量。]]
D["KVCache:reset"] = [[
清空缓存，用同一个模型换一个新的 prompt。]]

return M
