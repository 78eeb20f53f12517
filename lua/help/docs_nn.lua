-- lua/help/docs_nn.lua - module "mha.docs_nn": the help entries of mha.nn
-- (Module, containers, Linear, Embedding, LayerNorm), mha.optim (SGD, Adam, AdamW),
-- mha.clip_grad_norm and the module methods MultiheadAttention shares with them, read by
-- lua/help/help.lua.
--
-- Every example runs as written, also pasted into the REPL line by line
-- (tests/lua/test_display.lua): globals, never `local`, at most 76 columns a line.

local D, entry = require("mha.help.entry").book()

-- ---- topics ----

entry("mha.nn", "topics", "mha.nn - modules: Linear, Embedding, LayerNorm and your own",
    "Building blocks with PyTorch's names, shapes and initialisation: mha.nn.Linear, mha.nn.Embedding, "
    .. "mha.nn.LayerNorm, containers mha.nn.ModuleList and mha.nn.Sequential, and mha.nn.Module to "
    .. "write your own. A module is called like a function (m(x) is m:forward(x)); its parameters are "
    .. "leaves with requires_grad on, so loss:backward() fills p:grad(). m:state_dict() uses PyTorch's "
    .. "dotted keys (layers.0.attn.out_proj.bias), so a checkpoint saved with mha.save(\"m.npz\", "
    .. "m:state_dict()) loads into a PyTorch module of the same structure, and back. "
    .. "mha.MultiheadAttention is a module too.",
    nil,
    "lin = mha.nn.Linear{in_features = 4, out_features = 2}\nprint(lin, lin(mha.randn(3, 4)))",
    {"mha.nn.Module", "mha.optim", "mha.save"})

entry("mha.optim", "topics", "mha.optim - SGD, Adam, AdamW: torch.optim's update rules",
    "Optimizers that update parameters from the gradients backward left in p:grad(), with torch.optim's "
    .. "exact rules and options. The loop of every training script: opt:zero_grad(), compute the loss, "
    .. "loss:backward(), opt:step(). A parameter without a gradient is skipped. The state of each "
    .. "parameter (momentum buffer, Adam's moments) is in opt.state[p].",
    nil,
    "w = mha.tensor{1.0, -2.0}:requires_grad(true)\n"
    .. "opt = mha.optim.SGD({w}, {lr = 0.1})\n"
    .. "for step = 1, 3 do\n"
    .. "  opt:zero_grad()\n"
    .. "  loss = (w * w):sum()\n"
    .. "  loss:backward()\n"
    .. "  opt:step()\n"
    .. "end\n"
    .. "print(w)",
    {"mha.optim.SGD", "mha.optim.Adam", "mha.clip_grad_norm"})

-- ---- layers ----

entry("mha.nn.Linear", "nn", "mha.nn.Linear{in_features =, out_features =, bias = true}",
    "y = x·Wᵀ + b on the last dim of x: (..., in_features) -> (..., out_features), through mha.linear. "
    .. "Parameters weight (out_features, in_features) and bias (out_features), initialised as PyTorch "
    .. "does from mha.seed's generator: kaiming_uniform_ with a = √5 for the weight, which is "
    .. "U(-1/√in_features, 1/√in_features), and the same bound for the bias.",
    "y_j = Σ_i x_i · W_ji + b_j;   W, b ~ U(-1/√in, 1/√in)",
    "lin = mha.nn.Linear{in_features = 3, out_features = 2}\n"
    .. "print(lin.weight:shape(), lin(mha.ones(5, 3)):shape())",
    {"mha.linear", "mha.nn.Module"})

entry("mha.nn.Embedding", "nn", "mha.nn.Embedding{num_embeddings =, embedding_dim =}",
    "A table of num_embeddings vectors of embedding_dim numbers (weight, initialised N(0, 1) as in "
    .. "PyTorch); m(indices) gives the rows the indices name. Indices count from 1, as Lua does: a "
    .. "table (nested like the shape) or a tensor of whole numbers of shape (...) gives (..., "
    .. "embedding_dim). Gradients flow into the rows that were used.",
    "out[..., :] = weight[index, :]",
    "emb = mha.nn.Embedding{num_embeddings = 10, embedding_dim = 4}\nprint(emb.weight:shape())",
    {"mha.nn.Linear"})

entry("mha.nn.LayerNorm", "nn", "mha.nn.LayerNorm{normalized_shape =, eps = 1e-5, elementwise_affine = true}",
    "Normalises the last dims (normalized_shape: a number for the last dim, or a table of the last "
    .. "dims' sizes) to mean 0 and variance 1, then scales by weight and shifts by bias (ones and "
    .. "zeros at first, as in PyTorch), through mha.layer_norm.",
    "y = (x - mean) / √(var + eps) · weight + bias   (biased variance)",
    "ln = mha.nn.LayerNorm{normalized_shape = 4}\nprint(ln(mha.randn(2, 4)):mean(-1))",
    {"mha.layer_norm"})

-- ---- the Module base and containers ----

entry("mha.nn.Module", "nn", "mha.nn.Module:extend(name) -> class",
    "The base of every module, to write your own as in PyTorch: make a class with extend, give it an "
    .. "init (run when the class is called) and a forward. Assigning a module to a field registers it "
    .. "as a child under that name; m:register_parameter(name, t) adds a parameter. state_dict keys "
    .. "are the dotted paths: child name, '.', parameter name.",
    nil,
    "Net = mha.nn.Module:extend(\"Net\")\n"
    .. "function Net:init(E)\n"
    .. "  self.proj = mha.nn.Linear{in_features = E, out_features = E}\n"
    .. "  self.norm = mha.nn.LayerNorm{normalized_shape = E}\n"
    .. "end\n"
    .. "function Net:forward(x) return self.norm(self.proj(x):relu()) end\n"
    .. "net = Net(4)\n"
    .. "print(net, net(mha.randn(2, 4)):shape())\n"
    .. "print(table.concat(net:parameter_names(), \" \"))",
    {"Module:state_dict", "mha.nn.ModuleList", "Module:register_parameter"})

entry("mha.nn.ModuleList", "nn", "mha.nn.ModuleList{m1, m2, ...}",
    "A list of modules whose state_dict keys count from 0, as PyTorch's (layers.0.weight), while Lua "
    .. "reads them from 1: l[1] is the first, #l the count, ipairs(l) walks them. It has no forward of "
    .. "its own: call the modules in yours.",
    nil,
    "layers = mha.nn.ModuleList{mha.nn.Linear{in_features = 2, out_features = 2}}\n"
    .. "layers:append(mha.nn.LayerNorm{normalized_shape = 2})\n"
    .. "print(#layers, table.concat(layers:parameter_names(), \" \"))",
    {"mha.nn.Sequential"})

entry("mha.nn.Sequential", "nn", "mha.nn.Sequential(m1, m2, ...) or mha.nn.Sequential{m1, m2, ...}",
    "Modules applied one after the other: forward(x) is m2(m1(x)). Keys count from 0, as PyTorch's.",
    nil,
    "seq = mha.nn.Sequential(mha.nn.Linear{in_features = 3, out_features = 2},\n"
    .. "                        mha.nn.LayerNorm{normalized_shape = 2})\n"
    .. "print(seq(mha.randn(4, 3)):shape())",
    {"mha.nn.ModuleList"})

entry("Module:forward", "nn", "m:forward(x, ...) or m(x, ...)",
    "The computation of the module. A class written with mha.nn.Module:extend defines it; calling the "
    .. "module calls it.",
    nil, "lin = mha.nn.Linear{in_features = 2, out_features = 1}\nprint(lin:forward(mha.ones(2)))")

entry("Module:parameters", "nn", "m:parameters() -> table",
    "Dotted name -> tensor for every parameter of the module and its children: the parameters "
    .. "themselves, so p:grad() is the gradient and an optimizer made from this table updates the "
    .. "module. A parameter shared by two children is listed once.",
    nil,
    "lin = mha.nn.Linear{in_features = 2, out_features = 1}\n"
    .. "for name, p in pairs(lin:parameters()) do print(name, p:shape()) end",
    {"Module:parameter_names", "mha.optim"})

entry("Module:parameter_names", "nn", "m:parameter_names() -> list",
    "The dotted names of the parameters in PyTorch's order: the module's own, then each child's.",
    nil, "mha.nn.LayerNorm{normalized_shape = 3}:parameter_names()")

entry("Module:named_parameters", "nn", "m:named_parameters() -> list of {name, tensor}, also an iterator",
    "The parameters with their dotted names, in PyTorch's order. Loop over it as in torch: "
    .. "for name, p in m:named_parameters() do ... end; or index it as a list of {name, tensor}.",
    nil, "lin = mha.nn.Linear{in_features = 2, out_features = 1}\n"
    .. "for name, p in lin:named_parameters() do print(name, p:shape()) end")

entry("Module:train", "nn", "m:train([mode = true]) -> m",
    "Sets torch's training flag, m.training = mode, on the module and every child (m:eval() is "
    .. "m:train(false)). No module here has dropout or batch norm, so the flag changes no result; "
    .. "a forward of your own may read self.training.",
    nil, "seq = mha.nn.Sequential(mha.nn.Linear{in_features = 2, out_features = 2})\n"
    .. "print(seq:eval().training, seq[1].training, seq:train().training)",
    {"Module:eval"})

entry("Module:eval", "nn", "m:eval() -> m",
    "m:train(false): m.training is false on the module and every child, as torch's eval().",
    nil, "print(mha.nn.Linear{in_features = 2, out_features = 1}:eval().training)", {"Module:train"})

entry("Module:to", "nn", "m:to(\"cpu\") -> m",
    "mha-repl computes on the CPU only: m:to(\"cpu\") returns m unchanged (torch code runs as it is), "
    .. "and another device (\"cuda\", \"mps\") is refused by name.",
    nil, "lin = mha.nn.Linear{in_features = 2, out_features = 1}\nprint(lin:to(\"cpu\") == lin)")

entry("Module:named_children", "nn", "m:named_children() -> list of {name, module}",
    "The direct children in the order they were assigned.",
    nil,
    "seq = mha.nn.Sequential(mha.nn.Linear{in_features = 2, out_features = 2})\n"
    .. "print(seq:named_children()[1][1])")

entry("Module:register_parameter", "nn", "m:register_parameter(name, t) -> t",
    "Makes t a parameter of m under name (no '.'): a leaf with requires_grad on, listed by parameters "
    .. "and state_dict. Assigning another tensor to the name later replaces the parameter.",
    nil,
    "Scale = mha.nn.Module:extend(\"Scale\")\n"
    .. "function Scale:init() self:register_parameter(\"s\", mha.ones(1)) end\n"
    .. "function Scale:forward(x) return x * self.s end\n"
    .. "print(Scale()(mha.tensor{1, 2}))")

entry("Module:add_module", "nn", "m:add_module(name, child) -> child",
    "Registers child (a module) under name, as assigning m[name] = child does; nil removes it.",
    nil,
    "Net = mha.nn.Module:extend(\"Net\")\n"
    .. "net = Net()\n"
    .. "net:add_module(\"head\", mha.nn.Linear{in_features = 2, out_features = 1})\n"
    .. "print(net)")

entry("Module:state_dict", "nn", "m:state_dict() -> table",
    "Dotted key -> tensor for every parameter, with PyTorch's keys (attn.out_proj.weight, "
    .. "layers.0.bias). The tensors share the parameters' data but are detached from the graph. Saved "
    .. "with mha.save(\"m.npz\", m:state_dict()) they load into PyTorch with "
    .. "m.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(\"m.npz\").items()}).",
    nil,
    "lin = mha.nn.Linear{in_features = 2, out_features = 1}\n"
    .. "mha.save(\"/tmp/lin.npz\", lin:state_dict())",
    {"Module:load_state_dict", "mha.save"})

entry("Module:load_state_dict", "nn", "m:load_state_dict(sd [, strict = true]) -> missing, unexpected",
    "Copies each entry of sd (key -> tensor or nested table) into the parameter of that key, in "
    .. "place, so an optimizer holding the parameters keeps them. As in PyTorch, with strict a missing "
    .. "or an unexpected key is an error (with a guess when a key looks misspelt), and a shape mismatch "
    .. "always is; all of them are listed at once and nothing is copied. Returns the lists of missing "
    .. "and unexpected keys.",
    nil,
    "lin = mha.nn.Linear{in_features = 2, out_features = 1}\n"
    .. "lin:load_state_dict({weight = {{1, 2}}, bias = {0.5}})\n"
    .. "print(lin(mha.tensor{1, 1}))",
    {"Module:state_dict", "mha.load"})

entry("Module:zero_grad", "nn", "m:zero_grad()",
    "Forgets the gradient of every parameter (p:grad() is nil again), as PyTorch's "
    .. "zero_grad(set_to_none=True). Gradients add up over backward calls until then.",
    nil, "lin = mha.nn.Linear{in_features = 2, out_features = 1}\nlin:zero_grad()")

entry("Module:extend", "nn", "Base:extend(name) -> class",
    "A new module class deriving from Base (mha.nn.Module, or a class of yours); calling the class "
    .. "makes an instance and runs its init with the arguments.",
    nil, "Net = mha.nn.Module:extend(\"Net\")\nprint(Net)", {"mha.nn.Module"})

entry("ModuleList:append", "nn", "l:append(m) -> l",
    "Adds m as the next child, named by its 0-based position.",
    nil, "l = mha.nn.ModuleList{}\nl:append(mha.nn.Linear{in_features = 1, out_features = 1})\nprint(#l)")

-- ---- MultiheadAttention as a module ----

entry("MultiheadAttention:state_dict", "module", "m:state_dict() -> table",
    "PyTorch's state_dict of nn.MultiheadAttention: in_proj_weight (or q/k/v_proj_weight), "
    .. "in_proj_bias, bias_k, bias_v, out_proj.weight, out_proj.bias - the field out_proj_weight is the "
    .. "key out_proj.weight. The same keys prefixed with the child's name inside a composite.",
    nil,
    "m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\n"
    .. "for k, v in pairs(m:state_dict()) do print(k, v:shape()) end",
    {"Module:state_dict"})

entry("MultiheadAttention:load_state_dict", "module", "m:load_state_dict(sd [, strict = true]) -> missing, unexpected",
    "Loads PyTorch's nn.MultiheadAttention state_dict (keys as MultiheadAttention:state_dict gives "
    .. "them), with Module:load_state_dict's checks.",
    nil,
    "a = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\n"
    .. "b = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\n"
    .. "b:load_state_dict(a:state_dict())\n"
    .. "print(a.out_proj_weight == b.out_proj_weight)",
    {"Module:load_state_dict"})

entry("MultiheadAttention:named_parameters", "module", "m:named_parameters() -> list of {name, tensor}, also an iterator",
    "The parameters with PyTorch's names (out_proj.weight), in state_dict order, as Module:named_parameters.",
    nil, "m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\n"
    .. "for name, p in m:named_parameters() do print(name, p:shape()) end",
    {"Module:named_parameters"})

entry("MultiheadAttention:train", "module", "m:train([mode = true]) -> m",
    "Sets torch's training flag m.training, as Module:train. The module has no dropout, so the flag "
    .. "changes no result.",
    nil, "m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\nprint(m:train(false).training)",
    {"Module:train"})

entry("MultiheadAttention:eval", "module", "m:eval() -> m",
    "m:train(false), as Module:eval.", nil,
    "print(mha.MultiheadAttention{embed_dim = 4, num_heads = 2}:eval().training)", {"Module:eval"})

entry("MultiheadAttention:to", "module", "m:to(\"cpu\") -> m",
    "The CPU only, as Module:to: m:to(\"cpu\") returns m, another device is refused.", nil,
    "m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\nprint(m:to(\"cpu\") == m)", {"Module:to"})

-- ---- optimizers ----

-- ---- decoding a Transformer: the KV cache and generation (lua/nn/cache.lua, docs/modern.md) ----

entry("Transformer:attention", "training", "model:attention() -> {weights, ...}",
    "After a forward with need_weights left on (the default), each layer's attention weights, one "
    .. "(N, H, L, L) tensor a layer: weights[n][h][i][j] is how much query i of head h of line n "
    .. "attends to key j. Each row sums to 1. Before any forward: an error that says so.",
    nil,
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 2, max_len = 6}\n"
    .. "logits = m:forward({{1, 2, 3}})\n"
    .. "w = m:attention()\n"
    .. "print(#w, w[1]:shape(), w[1][1][1]:sum(2))",
    {"mha.nn.Transformer", "mha.heads.detect"})

entry("Transformer:config", "training", "model:config() -> options",
    "A copy of the options that built the model (vocab, d_model, heads, layers, d_ff, max_len, norm, "
    .. "pos...), each filled in: mha.nn.Transformer(model:config()) builds another of the same shape, "
    .. "and mha.save_model keeps them so that mha.load_model rebuilds it.",
    nil,
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, max_len = 6}\n"
    .. "c = m:config()\n"
    .. "print(c.vocab, c.d_ff, c.norm)",
    {"mha.nn.Transformer", "mha.save_model", "mha.load_model"})

entry("Transformer:new_cache", "training", "model:new_cache() -> cache",
    "An empty KV cache for this model (a causal one). model:forward(tokens, {cache = cache}) then "
    .. "takes only the new tokens: their positions continue from cache:length(), and each layer's keys "
    .. "and values (N, H_kv, S, D) join the cache's, so a step costs one token, not the whole "
    .. "sequence. The logits equal the full forward's. Past max_len is an error, unless the model has a "
    .. "window: its cache keeps only the sinks and the last W tokens (StreamingLLM), positions counted "
    .. "inside the cache, and decodes on. A cache serves one model and one batch size.",
    nil,
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, max_len = 8}\n"
    .. "c = m:new_cache()\n"
    .. "a = m:forward({{1, 2, 3}}, {cache = c})\n"
    .. "b = m:forward({{4}}, {cache = c})\n"
    .. "full = m:forward({{1, 2, 3, 4}})\n"
    .. "print(c:length(), (b[1][1] - full[1][4]):abs():max())",
    {"Transformer:generate", "KVCache:bytes", "mha.sliding_window_mask"})

entry("Transformer:generate", "training",
    "model:generate(prompt [, {max_new_tokens = 20, temperature = 1, top_k =, top_p =, seed =, "
    .. "cache = true, on_token =, roll = false}]) -> tokens",
    "Writes on from prompt (a table of 1-based ids, or a 1-D tensor): each new token is drawn by "
    .. "mha.sample from the logits of the last position, then fed back. Returns a table of the prompt "
    .. "and max_new_tokens new ids. seed calls mha.seed once, so a seed gives the same tokens with the "
    .. "cache (each step feeds one token) and without it (each step runs the whole sequence). "
    .. "temperature 0 is greedy. on_token(id) is called with each new token as it is drawn; "
    .. "returning false stops. roll = true reads the last max_len tokens of the prompt and, when "
    .. "the cache holds max_len tokens, reads the last half of the text again into the emptied "
    .. "cache, so decoding goes on past max_len (mha.generate writes this way). Ctrl-C stops it.",
    nil,
    "m = mha.nn.Transformer{vocab = 10, d_model = 16, max_len = 16}\n"
    .. "print(table.concat(m:generate({1, 2}, {max_new_tokens = 5, seed = 1}), \" \"))",
    {"mha.sample", "Transformer:new_cache"})

entry("KVCache:length", "training", "cache:length() -> n",
    "How many tokens the cache holds: the position the next token takes. With a window it stops "
    .. "growing at sinks + W; cache:seen_tokens() counts every token that went through.",
    nil,
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, max_len = 8}\n"
    .. "c = m:new_cache()\nm:forward({{1, 2}}, {cache = c})\nprint(c:length())",
    {"Transformer:new_cache", "KVCache:bytes"})

entry("KVCache:bytes", "training", "cache:bytes() -> n",
    "The memory of the keys and values the cache holds, in bytes: layers · 2 · N · H_kv · S · D "
    .. "numbers of 4 bytes. Fewer K/V heads (kv_heads) divide it by heads / kv_heads.",
    "bytes = 4 · layers · 2 · N · H_kv · S · D",
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 4,\n"
    .. "    kv_heads = 1, max_len = 8, pos = \"rope\"}\n"
    .. "c = m:new_cache()\nm:forward({{1, 2, 3}}, {cache = c})\nprint(c:bytes(), c)",
    {"KVCache:length"})

entry("KVCache:seen_tokens", "training", "cache:seen_tokens() -> n",
    "How many tokens went through the cache since it was made or reset; more than cache:length() "
    .. "once a window has dropped some.",
    nil,
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, max_len = 8,\n"
    .. "    window = 2, sinks = 1}\n"
    .. "c = m:new_cache()\nm:forward({{1, 2, 3, 4}}, {cache = c})\n"
    .. "print(c:seen_tokens(), c:length())",
    {"KVCache:length"})

entry("KVCache:keys", "training", "cache:keys(layer) -> k",
    "The keys layer (1 .. layers) holds, (N, H_kv, S, D): S = cache:length() tokens, "
    .. "H_kv K/V heads of D numbers. It is the cache's own tensor, not a copy. With RoPE the "
    .. "keys are held turned, except in a model with a window, which turns them at their "
    .. "places in the cache on every step.",
    nil,
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 2, max_len = 8}\n"
    .. "c = m:new_cache()\nm:forward({{1, 2, 3}}, {cache = c})\n"
    .. "print(table.concat(c:keys(1):shape(), \" x \"))",
    {"KVCache:values", "KVCache:length"})

entry("KVCache:values", "training", "cache:values(layer) -> v",
    "The values layer (1 .. layers) holds, (N, H_kv, S, D), as cache:keys(layer): the cache's own "
    .. "tensor.",
    nil,
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 2, max_len = 8}\n"
    .. "c = m:new_cache()\nm:forward({{1, 2, 3}}, {cache = c})\n"
    .. "print(table.concat(c:values(1):shape(), \" x \"))",
    {"KVCache:keys"})

entry("KVCache:reset", "training", "cache:reset()",
    "Empties the cache, for a new prompt with the same model.",
    nil,
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, max_len = 8}\n"
    .. "c = m:new_cache()\nm:forward({{1}}, {cache = c})\nc:reset()\nprint(c:length())",
    {"Transformer:new_cache"})

entry("mha.optim.SGD", "optim",
    "mha.optim.SGD(params, {lr =, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false})",
    "Stochastic gradient descent with torch.optim.SGD's rule. params is a list of tensors, a table name "
    .. "-> tensor such as m:parameters() (taken in sorted name order), or a list of groups {params = "
    .. "..., lr = ...} with options of their own. lr is required; a negative lr, momentum or "
    .. "weight_decay is refused, as in torch; nesterov needs momentum and no dampening.",
    "g = grad + wd·p;  buf = μ·buf + (1 - dampening)·g (buf = g at first);  g = g + μ·buf (nesterov) "
    .. "or buf;  p = p - lr·g",
    "w = mha.tensor{1.0}:requires_grad(true)\n"
    .. "opt = mha.optim.SGD({w}, {lr = 0.1, momentum = 0.9})\n"
    .. "(w * w):sum():backward()\nopt:step()\nprint(w)",
    {"mha.optim", "mha.optim.Adam"})

entry("mha.optim.Adam", "optim",
    "mha.optim.Adam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0, amsgrad = false})",
    "Adam with torch.optim.Adam's rule (weight decay added to the gradient; amsgrad keeps the largest "
    .. "second moment). params as for mha.optim.SGD. Per parameter, opt.state[p] holds step, exp_avg "
    .. "and exp_avg_sq.",
    "m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²;  p = p - lr/(1-β1^t) · m / (√v/√(1-β2^t) + eps)",
    "w = mha.tensor{1.0, -1.0}:requires_grad(true)\n"
    .. "opt = mha.optim.Adam({w}, {lr = 1e-2})\n"
    .. "loss = (w ^ 2):mean()\nloss:backward()\nopt:step()\nopt:zero_grad()\nprint(w)",
    {"mha.optim.AdamW", "mha.optim"})

entry("mha.optim.AdamW", "optim",
    "mha.optim.AdamW(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 1e-2, amsgrad = false})",
    "Adam with decoupled weight decay, torch.optim.AdamW's rule: the parameter shrinks by lr·weight_decay "
    .. "of itself before the Adam step, instead of weight decay joining the gradient.",
    "p = p·(1 - lr·wd), then Adam's step without weight decay",
    "w = mha.tensor{1.0, 2.0}:requires_grad(true)\n"
    .. "opt = mha.optim.AdamW({w}, {lr = 0.1})\n"
    .. "w:sum():backward()\nopt:step()\nprint(w)",
    {"mha.optim.Adam"})

entry("Optimizer:step", "optim", "opt:step([closure]) -> loss",
    "Updates every parameter that has a gradient (the others are skipped, as in torch). closure, when "
    .. "given, is called first and its result returned.",
    nil,
    "w = mha.tensor{3.0}:requires_grad(true)\nopt = mha.optim.SGD({w}, {lr = 0.5})\n"
    .. "w:sum():backward()\nopt:step()\nprint(w)")

entry("Optimizer:zero_grad", "optim", "opt:zero_grad()",
    "Forgets the gradients of the optimizer's parameters (p:grad() is nil), before the next backward.",
    nil, "w = mha.tensor{3.0}:requires_grad(true)\nopt = mha.optim.SGD({w}, {lr = 0.5})\nopt:zero_grad()")

entry("Optimizer:add_param_group", "optim", "opt:add_param_group{params = ..., option = value, ...}",
    "Adds parameters with options of their own (the others come from the optimizer's defaults).",
    nil,
    "a = mha.zeros(1):requires_grad(true)\nb = mha.zeros(1):requires_grad(true)\n"
    .. "opt = mha.optim.SGD({a}, {lr = 0.1})\nopt:add_param_group{params = {b}, lr = 1}\n"
    .. "print(opt)")

entry("Optimizer:state_dict", "optim", "opt:state_dict() -> table",
    "The optimizer's state as torch.optim's state_dict flattened with dots, as a module's is: "
    .. "state.<i>.step, state.<i>.exp_avg, state.<i>.exp_avg_sq (Adam, AdamW), state.<i>.momentum_buffer "
    .. "(SGD), param_groups.<g>.<option> and param_groups.<g>.params, the parameters numbered from 0 in "
    .. "group order as torch numbers them. The tensors are copies. mha.save writes it to a .npz.",
    nil,
    "w = mha.tensor{1.0, 2.0}:requires_grad(true)\nopt = mha.optim.Adam({w}, {lr = 0.1})\n"
    .. "w:sum():backward()\nopt:step()\nsd = opt:state_dict()\nprint(sd[\"state.0.step\"], sd[\"state.0.exp_avg\"])",
    {"Optimizer:load_state_dict", "mha.save"})

entry("Optimizer:load_state_dict", "optim", "opt:load_state_dict(sd)",
    "Takes back a state from opt:state_dict() or from mha.load of the .npz it was saved to: the groups must "
    .. "hold as many parameters as the state's, of the same shapes, or the error names the key. The "
    .. "tensors are copied and the state's options replace the groups' own (as torch), so a run resumed "
    .. "from a checkpoint goes on exactly as the one that saved it.",
    nil,
    "w = mha.tensor{1.0, 2.0}:requires_grad(true)\nopt = mha.optim.Adam({w}, {lr = 0.1})\n"
    .. "w:sum():backward()\nopt:step()\nsaved = opt:state_dict()\n"
    .. "again = mha.optim.Adam({w}, {lr = 0.1})\nagain:load_state_dict(saved)\nprint(again.state[w].step)",
    {"Optimizer:state_dict", "mha.load"})

entry("mha.clip_grad_norm", "optim", "mha.clip_grad_norm(params, max_norm) -> total_norm",
    "Scales all the gradients together so their joint 2-norm is at most max_norm, and returns the norm "
    .. "they had, as torch.nn.utils.clip_grad_norm_ (a factor of max_norm / (total + 1e-6) when that is "
    .. "below 1). Call it between backward and step. Parameters without a gradient are left out.",
    "total = √(Σ_p ‖grad_p‖²);  grad_p = grad_p · min(1, max_norm / (total + 1e-6))",
    "w = mha.tensor{3.0, 4.0}:requires_grad(true)\nw:set_grad(mha.tensor{3, 4})\n"
    .. "print(mha.clip_grad_norm({w}, 1), w:grad())",
    {"mha.optim"})

return D
