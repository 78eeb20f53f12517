-- lua/help/docs_mha.lua - module "mha.docs_mha": the help entries of module mha
-- (constructors, functions, attention), of the tensor methods and of mha.MultiheadAttention, read
-- by lua/help/help.lua.
--
-- Keys are what a student types: "mha.softmax" for a function
-- (also when it is a method: t:softmax(2)), "Tensor:shape" for a method only tensors have,
-- "MultiheadAttention:forward" for the module's methods. Every example runs as written
-- (tests/lua/test_help.lua runs them all), and also pasted into the REPL line by line: globals,
-- never `local`, and at most 76 columns a line (tests/lua/test_display.lua).

local D, entry = require("mha.help.entry").book()

-- ---- topics ----

entry("mha", "topics", "mha - tensors and attention for Lua 5.4",
    "The module of mha-repl, a global in the REPL and require \"mha\" elsewhere. Tensors are float32 (or "
    .. "bool) arrays of up to 8 dimensions made by mha.tensor, zeros, randn and friends. Dimensions and "
    .. "indices count from 1 as Lua does, and negative dimensions count from the end (-1 is the last). "
    .. "Functions that take a tensor first are methods too: mha.softmax(x, 2) is x:softmax(2). Every "
    .. "error names the function, the argument and the shapes. help() lists everything; ?name explains one.",
    nil,
    "x = mha.tensor{{1, 2}, {3, 4}}\nprint(x:sum(), x:softmax(-1))",
    {"mha.Tensor", "mha.MultiheadAttention"})

entry("mha.Tensor", "topics", "mha.Tensor - a view (shape, strides, offset) over shared storage",
    "A tensor is a shape, strides and an offset over a reference-counted block of numbers. Views - "
    .. "view, transpose, permute, narrow, select, unsqueeze, squeeze, expand, split, chunk - share the "
    .. "storage instead of copying, which is why transposing is free and why view() fails on a "
    .. "non-contiguous tensor (call contiguous() or reshape()). Operators work elementwise with NumPy "
    .. "broadcasting: + - * / ^, unary -, and == (true when shape and values are equal). t[i] is the "
    .. "i-th slice along dim 1 (a number for a 1-D tensor); #t is the size of dim 1. x:view and the "
    .. "other methods are listed by help(); ?x:view explains one.",
    "strides of a contiguous (A,B,C): (B·C, C, 1); element [i,j,k] is data[offset + i·s1 + j·s2 + k·s3]",
    "x = mha.arange(6):view(2, 3)\nprint(x:shape(), x:strides(), x:T():is_contiguous(), x[2])")

-- ---- constructors ----

entry("mha.tensor", "constructors", "mha.tensor(data [, dtype]) -> tensor",
    "A tensor from a nested Lua table of numbers (or booleans, giving a bool tensor), a single number "
    .. "(a 0-dimensional scalar) or another tensor (copied). Rows must have equal lengths. dtype "
    .. "\"float32\" or \"bool\" converts: non-zero is true, true is 1.",
    nil,
    "mha.tensor{{1, 2, 3}, {4, 5, 6}}",
    {"mha.zeros", "mha.arange", "Tensor:totable"})

entry("mha.zeros", "constructors", "mha.zeros(d1, d2, ...) or mha.zeros{d1, d2, ...} -> tensor",
    "A float32 tensor of the given shape filled with 0. No sizes gives a scalar.",
    nil, "mha.zeros(2, 3)", {"mha.ones", "mha.full"})

entry("mha.ones", "constructors", "mha.ones(d1, d2, ...) or mha.ones{d1, d2, ...} -> tensor",
    "A float32 tensor of the given shape filled with 1.", nil, "mha.ones(2, 3)", {"mha.zeros", "mha.full"})

entry("mha.full", "constructors", "mha.full(d1, ..., value) or mha.full({d1, ...}, value) -> tensor",
    "A tensor of the given shape with every element equal to value (the last argument); value may be "
    .. "-math.huge, as an additive mask needs.",
    nil, "mha.full(2, 2, -math.huge)", {"mha.zeros", "mha.causal_mask"})

entry("mha.eye", "constructors", "mha.eye(n [, m]) -> tensor",
    "The (n,m) identity matrix: ones on the diagonal, zeros elsewhere; m defaults to n.",
    "I[i,j] = 1 if i = j, else 0", "mha.eye(3)")

entry("mha.arange", "constructors", "mha.arange([start,] stop [, step]) -> tensor",
    "The values start, start+step, ... below stop, as a 1-D float32 tensor, as torch.arange: start "
    .. "defaults to 0 and step to 1. These are values, not indices: arange(3) is 0, 1, 2.",
    "x_k = start + k·step for k = 0, 1, ... while x_k < stop", "mha.arange(0, 1, 0.25)")

entry("mha.rand", "constructors", "mha.rand(d1, d2, ...) or mha.rand{d1, ...} -> tensor",
    "Uniform random numbers in [0, 1) from the seeded generator (mha.seed), so a lesson gives the "
    .. "same numbers every time.",
    "x ~ U[0, 1)", "mha.seed(1)\nprint(mha.rand(2, 3))", {"mha.seed", "mha.randn"})

entry("mha.randn", "constructors", "mha.randn(d1, d2, ...) or mha.randn{d1, ...} -> tensor",
    "Standard normal random numbers (mean 0, variance 1) from the seeded generator (mha.seed).",
    "x ~ N(0, 1)", "mha.seed(1)\nprint(mha.randn(2, 3))", {"mha.seed", "mha.rand"})

entry("mha.is_tensor", "constructors", "mha.is_tensor(v) -> boolean",
    "Whether v is an mha.Tensor.", nil, "mha.is_tensor(mha.zeros(1)), mha.is_tensor({1})")

-- ---- random numbers ----

entry("mha.seed", "random", "mha.seed(n)",
    "Restarts the generator behind rand, randn, the in-place fills and MultiheadAttention's "
    .. "initialisation from the non-negative integer n (default seed 42 at startup), so every run "
    .. "makes the same numbers. The generator is xoshiro256** seeded through splitmix64.",
    nil, "mha.seed(7)\na = mha.randn(2)\nmha.seed(7)\nprint(a == mha.randn(2))", {"mha.get_seed"})

entry("mha.manual_seed", "random", "mha.manual_seed(n)",
    "torch.manual_seed's name for mha.seed(n): the same generator, started from n.",
    nil, "mha.manual_seed(7)\na = mha.randn(2)\nmha.seed(7)\nprint(a == mha.randn(2))", {"mha.seed"})

entry("mha.get_seed", "random", "mha.get_seed() -> integer",
    "The seed the generator was last started from.", nil, "mha.get_seed()", {"mha.seed"})

entry("mha.uniform_", "random", "t:uniform_([lo [, hi]]) -> t",
    "Fills t in place with uniform random numbers in [lo, hi) (default 0 and 1) and returns t, so "
    .. "calls chain. Writes through views into the shared storage; refused, as in PyTorch, for an "
    .. "expanded view (a stride 0), whose elements share memory. normal_ and xavier_* likewise.",
    "t_i ~ U[lo, hi)", "mha.zeros(2, 3):uniform_(-1, 1)", {"mha.normal_"})

entry("mha.normal_", "random", "t:normal_([mean [, std]]) -> t",
    "Fills t in place with normal random numbers (default mean 0, std 1) and returns t.",
    "t_i ~ N(mean, std²)", "mha.zeros(2, 3):normal_(0, 0.02)", {"mha.uniform_"})

entry("mha.xavier_uniform_", "random", "t:xavier_uniform_([gain]) -> t",
    "PyTorch's nn.init.xavier_uniform_: keeps the variance of activations about the same forward and "
    .. "backward. For a 2-D weight (out, in), fan_in = in and fan_out = out (times the product of "
    .. "any further dims). MultiheadAttention initialises its in-projection this way.",
    "t_i ~ U(-a, a),  a = gain·√(6 / (fan_in + fan_out))",
    "mha.zeros(4, 8):xavier_uniform_()", {"mha.xavier_normal_"})

entry("mha.xavier_normal_", "random", "t:xavier_normal_([gain]) -> t",
    "PyTorch's nn.init.xavier_normal_; fans as for xavier_uniform_. MultiheadAttention initialises "
    .. "bias_k and bias_v this way.",
    "t_i ~ N(0, s²),  s = gain·√(2 / (fan_in + fan_out))",
    "mha.zeros(4, 8):xavier_normal_()", {"mha.xavier_uniform_"})

-- ---- files and memory ----

entry("mha.load", "files", "mha.load(path) -> tensor, or table for a .npz",
    "Reads a NumPy .npy file (format 1.0, 2.0 or 3.0; float32, float64, integers and bool, converted "
    .. "to float32 or bool; C order). A float64 is rounded to float32; a value out of float32's range, "
    .. "or an integer float32 cannot hold exactly (past 2^24), is an error naming it. A file that starts as a zip archive is read as a .npz (np.savez "
    .. "or np.savez_compressed) and gives a table name -> tensor, such as a state_dict for "
    .. "m:load_state_dict. A truncated or malformed file is an error that says what is wrong, naming "
    .. "the member of an archive.",
    nil, 'mha.save("/tmp/x.npy", mha.eye(2))\nprint(mha.load("/tmp/x.npy"))', {"mha.save", "Module:load_state_dict"})

entry("mha.save", "files", "mha.save(path, t) or mha.save(\"m.npz\", {name = t, ...} [, {compressed = false}])",
    "Writes t as a NumPy .npy file (format 1.0, float32 or bool, C order) that numpy.load reads; a "
    .. "nested table or number is converted first. A path ending in .npz writes a table name -> tensor "
    .. "as np.savez does (np.savez_compressed with compressed = true): a checkpoint that np.load and "
    .. "PyTorch read. Integer keys 1, 2, ... are saved as arr_0, arr_1, ... as np.savez names a list. "
    .. "Both are written to a temporary file and renamed, so a failed save (a full disk) leaves the old file.",
    nil, 'mha.save("/tmp/w.npy", mha.tensor{{1, 2}, {3, 4}})\nmha.save("/tmp/ckpt.npz", {w = mha.ones(2)})',
    {"mha.load", "Module:state_dict"})

entry("mha.memory", "files", "mha.memory() -> live, peak",
    "Bytes the tensor library holds now (storages and kernel scratch), and the most it has held since "
    .. "the last mha.reset_peak(). A tensor's storage is freed when the last view of it is garbage "
    .. "collected or closed. :time in the REPL shows the first number after each command.",
    nil, "x = mha.zeros(1000, 1000)\nprint(mha.memory())", {"mha.reset_peak", "Tensor:close"})

entry("mha.reset_peak", "files", "mha.reset_peak()",
    "Sets the peak that mha.memory() reports to the bytes held now, to measure the peak of one step.",
    nil, "mha.reset_peak()\ny = mha.matmul(mha.randn(64, 64), mha.randn(64, 64))\nprint(mha.memory())",
    {"mha.memory"})

entry("mha.threads", "files", "mha.threads([n]) -> previous",
    "The number of threads one call may split its work over (a matrix product by blocks of rows or "
    .. "columns, attention by heads and query tiles). With n (1 to 64) it sets it and returns the count "
    .. "before; without, it reads it. The default is every core (or MHA_THREADS=n in the environment). "
    .. "Only independent outputs are split, never a sum, so the results are the very same bits whatever n is.",
    nil, "before = mha.threads(1)\nprint(mha.threads(), before)\nmha.threads(before)", {"mha.clock"})

entry("mha.isa", "files", "mha.isa([name]) -> previous, runnable",
    "The kernel variant the fast kernels use (\"avx512\", \"avx2\" or \"portable\") and the list of those "
    .. "this CPU runs, fastest first. With a name it switches to that variant and returns the one before. "
    .. "The default is the fastest (or MHA_ISA=name in the environment). The variants add in different orders, "
    .. "so results differ in the last bits only: what a lesson prints is the same on every one.",
    nil, "before, runnable = mha.isa()\nprint(before, table.concat(runnable, \" \"))\nmha.isa(\"portable\")\nmha.isa(before)",
    {"mha.threads"})

entry("mha.clock", "files", "mha.clock() -> seconds",
    "Wall-clock seconds from a fixed point, to time a piece of code: subtract two readings. os.clock() "
    .. "counts the processor time of every thread instead, which runs ahead of the wall clock when the "
    .. "kernels use several cores.",
    nil, "t0 = mha.clock()\nc = mha.matmul(mha.randn(256, 256), mha.randn(256, 256))\nprint(mha.clock() - t0)",
    {"mha.threads"})

-- ---- elementwise ----

local function unary(name, what, formula)
    entry("mha." .. name, "elementwise", "mha." .. name .. "(t) or t:" .. name .. "() -> tensor",
          what .. " A new tensor of t's shape.", formula, "mha." .. name .. "(mha.tensor{-1, 0, 1, 2})")
end
unary("neg", "Minus each element (the same as -t).", "y_i = -x_i")
unary("abs", "The absolute value of each element.", "y_i = |x_i|")
unary("exp", "e to the power of each element.", "y_i = e^(x_i)")
unary("log", "The natural logarithm of each element (-inf at 0, nan below).", "y_i = ln x_i")
unary("sqrt", "The square root of each element (nan below 0).", "y_i = √x_i")
unary("tanh", "The hyperbolic tangent of each element.", "y_i = (e^x_i - e^-x_i) / (e^x_i + e^-x_i)")
unary("relu", "Rectified linear unit: negatives become 0.", "y_i = max(0, x_i)")
unary("gelu", "Gaussian error linear unit, the exact form (PyTorch's default), used in transformer "
      .. "feed-forward layers.", "y_i = x_i·Φ(x_i) = ½·x_i·(1 + erf(x_i / √2))")
unary("sigmoid", "The logistic function, squashing each element into (0, 1).", "y_i = 1 / (1 + e^(-x_i))")

local function binary(name, op, what, formula)
    entry("mha." .. name, "elementwise", "mha." .. name .. "(a, b) or a:" .. name .. "(b)" .. (op and (" or a " .. op .. " b") or "") .. " -> tensor",
          what .. " a and b are tensors or numbers and broadcast as in NumPy: shapes are aligned on "
          .. "the right, and each pair of sizes must be equal or one of them 1.",
          formula, "mha." .. name .. "(mha.tensor{{1, 2}, {3, 4}}, mha.tensor{10, 20})", {"mha.Tensor"})
end
binary("add", "+", "Elementwise sum.", "y_ij = a_ij + b_ij")
binary("sub", "-", "Elementwise difference.", "y_ij = a_ij - b_ij")
binary("mul", "*", "Elementwise (Hadamard) product - not the matrix product, which is mha.matmul.", "y_ij = a_ij · b_ij")
binary("div", "/", "Elementwise quotient (x/0 is ±inf, 0/0 nan).", "y_ij = a_ij / b_ij")
binary("pow", "^", "Elementwise power.", "y_ij = a_ij ^ b_ij")
binary("maximum", nil, "Elementwise larger of the two.", "y_ij = max(a_ij, b_ij)")
binary("minimum", nil, "Elementwise smaller of the two.", "y_ij = min(a_ij, b_ij)")

local function compare(name, op)
    entry("mha." .. name, "comparison", "mha." .. name .. "(a, b) or a:" .. name .. "(b) -> bool tensor",
          "Elementwise a " .. op .. " b as a bool tensor, with broadcasting; b may be a number. Bool "
          .. "tensors are masks: masked_fill and where take them. Lua's < <= > >= must give one boolean, "
          .. "so on tensors they raise an error pointing here: write x:gt(0), not x > 0.",
          "y_ij = (a_ij " .. op .. " b_ij)", "mha.tensor{1, 2, 3}:" .. name .. "(2)", {"mha.where", "mha.masked_fill"})
end
compare("eq", "==")
compare("ne", "~=")
compare("lt", "<")
compare("le", "<=")
compare("gt", ">")
compare("ge", ">=")

entry("mha.equal", "comparison", "mha.equal(a, b) or a:equal(b) -> boolean",
    "true when a and b have the same shape, dtype and values (torch.equal); a == b says the same.",
    nil, "mha.equal(mha.ones(2), mha.tensor{1, 1})")

local function logical(name, formula)
    entry("mha." .. name, "comparison", "mha." .. name .. "(a, b) or a:" .. name .. "(b) -> bool tensor",
          "Elementwise logic on two bool tensors, with broadcasting.", formula,
          "a = mha.tensor{true, true, false}\nb = mha.tensor{true, false, false}\nmha." .. name .. "(a, b)")
end
logical("logical_and", "y_i = a_i ∧ b_i")
logical("logical_or", "y_i = a_i ∨ b_i")
logical("logical_xor", "y_i = a_i ⊕ b_i")

entry("mha.logical_not", "comparison", "mha.logical_not(m) or m:logical_not() -> bool tensor",
    "Elementwise not of a bool tensor: turns a mask of allowed positions into one of forbidden "
    .. "positions and back.", "y_i = ¬m_i", "mha.logical_not(mha.causal_mask(3))")

entry("mha.where", "comparison", "mha.where(cond, a, b) -> tensor",
    "a where the bool tensor cond is true, else b; a and b may be numbers. The three broadcast together.",
    "y_i = cond_i ? a_i : b_i",
    "mha.where(mha.causal_mask(3), -math.huge, mha.zeros(3, 3))", {"mha.masked_fill"})

entry("mha.masked_fill", "comparison", "mha.masked_fill(t, mask, value) or t:masked_fill(mask, value) -> tensor",
    "A copy of t with value wherever the bool mask is true; mask broadcasts to t's shape. Masking "
    .. "scores with -math.huge before softmax gives those positions weight 0: this is how attention "
    .. "hides the future (a causal mask) or padding.",
    "y_i = mask_i ? value : t_i",
    "scores = mha.randn(3, 3)\nmasked = scores:masked_fill(mha.causal_mask(3), -math.huge)\nprint(masked:softmax(-1))",
    {"mha.causal_mask", "mha.where", "mha.softmax"})

-- ---- reductions ----

local function reduction(name, what, formula)
    entry("mha." .. name, "reductions", "mha." .. name .. "(t [, dim [, keepdim]]) or t:" .. name .. "(...) -> tensor",
          what .. " Without dim: over every element, giving a scalar tensor. With dim (1-based, "
          .. "negative from the end): along that dimension, which disappears unless keepdim is true "
          .. "(then it stays with size 1, so the result broadcasts against t).",
          formula, "mha.tensor{{1, 2}, {3, 4}}:" .. name .. "(2)")
end
reduction("sum", "Sum of elements.", "y_i = Σ_j x_ij  (along dim 2)")
reduction("mean", "Mean of elements.", "y_i = (1/n) Σ_j x_ij")

entry("mha.max", "reductions", "mha.max(t) | mha.max(t, dim [, keepdim]) | mha.max(a, b) -> tensor(s)",
    "The largest element (a scalar tensor); or along dim, two tensors: the maxima and their 1-based "
    .. "indices (as torch.max); or, given two tensors, the elementwise maximum.",
    "values_i = max_j x_ij,  indices_i = the first j where x_ij is largest",
    "mha.max(mha.tensor{{1, 5}, {7, 2}}, 2)", {"mha.argmax", "mha.maximum"})

entry("mha.min", "reductions", "mha.min(t) | mha.min(t, dim [, keepdim]) | mha.min(a, b) -> tensor(s)",
    "The smallest element; or along dim, the minima and their 1-based indices; or, given two "
    .. "tensors, the elementwise minimum.",
    "values_i = min_j x_ij", "mha.min(mha.tensor{{1, 5}, {7, 2}}, 2)", {"mha.argmin", "mha.minimum"})

entry("mha.argmax", "reductions", "mha.argmax(t [, dim [, keepdim]]) -> tensor",
    "1-based index of the largest element, over the flattened tensor or along dim; ties take the "
    .. "first. Which key does each query attend to most? weights:argmax(-1).",
    "argmax_j x_ij", "mha.tensor{{1, 5}, {7, 2}}:argmax(2)", {"mha.max"})

entry("mha.argmin", "reductions", "mha.argmin(t [, dim [, keepdim]]) -> tensor",
    "1-based index of the smallest element, over the flattened tensor or along dim; ties take the first.",
    "argmin_j x_ij", "mha.tensor{{1, 5}, {7, 2}}:argmin(2)", {"mha.min"})

entry("mha.var", "reductions", "mha.var(t [, dim [, keepdim [, correction]]]) -> tensor",
    "Variance, with Bessel's correction by default as PyTorch (divide by n-1); correction 0 divides by "
    .. "n as NumPy. The scaling lesson measures var(q·k) growing with d_k.",
    "var = Σ (x_i - x̄)² / (n - correction)",
    "x = mha.tensor{1, 2, 3, 4}\nprint(mha.var(x), mha.var(x, 1, false, 0))")

-- ---- joining ----

entry("mha.cat", "joining", "mha.cat({a, b, ...} [, dim]) -> tensor",
    "Joins tensors along an existing dimension (default 1); the other sizes must agree. "
    .. "Multi-head attention concatenates the heads' outputs along the last dim.",
    nil, "mha.cat({mha.ones(2, 2), mha.zeros(2, 1)}, 2)", {"mha.stack", "mha.split"})

entry("mha.stack", "joining", "mha.stack({a, b, ...} [, dim]) -> tensor",
    "Joins tensors of one shape along a new dimension (default 1, up to ndim+1).",
    nil, "mha.stack({mha.ones(2), mha.zeros(2)})", {"mha.cat"})

entry("mha.split", "views", "mha.split(t, size [, dim]) or t:split(size [, dim]) -> view, view, ...",
    "Views of consecutive pieces of size elements along dim (default 1); the last may be smaller. "
    .. "Returned as several values, not a table.",
    nil, "mha.arange(5):split(2)", {"mha.chunk", "mha.cat"})

entry("mha.chunk", "views", "mha.chunk(t, n [, dim]) or t:chunk(n [, dim]) -> view, view, ...",
    "n near-equal views along dim (default 1), as torch.chunk: splitting the packed in-projection "
    .. "(3E, E) into W^Q, W^K, W^V is chunk(3).",
    nil, "q, k, v = mha.arange(6):chunk(3)\nprint(q, k, v)", {"mha.split"})

-- ---- views ----

entry("mha.view", "views", "mha.view(t, d1, ...) or t:view(d1, ...) or t:view{d1, ...} -> view",
    "The same elements seen with a new shape, sharing storage (no copy); one size may be -1 to be "
    .. "inferred. Only possible when the strides allow it: after transpose the tensor is not "
    .. "contiguous and view fails, as in PyTorch - call :contiguous() first, or use reshape. The "
    .. "head-split lesson rests on this.",
    "(L, E) -> (L, H, D) with E = H·D: element [l, h, d] = [l, h·D + d]",
    "mha.arange(6):view(2, 3)", {"mha.reshape", "mha.contiguous", "Tensor:is_contiguous"})

entry("mha.reshape", "views", "mha.reshape(t, d1, ...) or t:reshape(...) -> tensor",
    "As view when the strides allow, else a contiguous copy with the new shape. One size may be -1.",
    nil, "mha.arange(6):view(2, 3):transpose(1, 2):reshape(6)", {"mha.view"})

entry("mha.transpose", "views", "mha.transpose(t, dim1, dim2) or t:transpose(dim1, dim2) -> view",
    "Swaps two dimensions by swapping their sizes and strides: no data moves, and the result is "
    .. "usually not contiguous. K:transpose(-2, -1) is Kᵀ in Q·Kᵀ.",
    "y[..., j, ..., i, ...] = x[..., i, ..., j, ...]",
    "mha.arange(6):view(2, 3):transpose(1, 2)", {"Tensor:T", "mha.permute"})

entry("mha.permute", "views", "mha.permute(t, p1, p2, ...) or t:permute{p1, ...} -> view",
    "Reorders all dimensions: dimension k of the result is dimension p_k of t. (N, L, H, D) -> "
    .. "(N, H, L, D) is permute(1, 3, 2, 4).",
    "y.shape[k] = x.shape[p_k]", "mha.zeros(2, 3, 4):permute(3, 1, 2):shape()", {"mha.transpose"})

entry("mha.narrow", "views", "mha.narrow(t, dim, start, length) or t:narrow(dim, start, length) -> view",
    "The elements start .. start+length-1 (1-based) along dim, sharing storage: a slice.",
    nil, "mha.arange(10):narrow(1, 3, 4)", {"mha.select"})

entry("mha.select", "views", "mha.select(t, dim, i) or t:select(dim, i) -> view",
    "The slice at index i (1-based, negative from the end) along dim, which is dropped: selecting "
    .. "head h of (H, L, D) gives (L, D). t[i] is t:select(1, i).",
    nil, "mha.arange(6):view(2, 3):select(2, 1)", {"mha.narrow"})

entry("mha.unsqueeze", "views", "mha.unsqueeze(t, dim) or t:unsqueeze(dim) -> view",
    "A new dimension of size 1 at position dim of the result (1..ndim+1; -1 appends), often to make "
    .. "shapes broadcast.", nil, "mha.ones(3):unsqueeze(1):shape()", {"mha.squeeze"})

entry("mha.squeeze", "views", "mha.squeeze(t [, dim]) or t:squeeze([dim]) -> view",
    "Drops dim if its size is 1, or every size-1 dimension when no dim is given.",
    nil, "mha.ones(1, 3, 1):squeeze():shape()", {"mha.unsqueeze"})

entry("mha.expand", "views", "mha.expand(t, d1, ...) or t:expand(d1, ...) -> view",
    "A broadcast view: size-1 dimensions repeat to the given sizes with stride 0, so no memory is "
    .. "used; -1 keeps a size. Its repeated elements are one memory location, so copy_ and the random "
    .. "fills refuse to write into it, as in PyTorch (fill_ and set are allowed): clone() it first.", "stride 0 along an expanded dim: every index reads the same element",
    "mha.tensor{{1}, {2}}:expand(2, 3)")

entry("mha.contiguous", "views", "mha.contiguous(t) or t:contiguous() -> tensor",
    "t itself (shared) when its elements are already laid out in C order without gaps, else a "
    .. "contiguous copy. Needed before view after a transpose or permute.",
    nil, "x = mha.arange(6):view(2, 3):transpose(1, 2)\nprint(x:is_contiguous(), x:contiguous():is_contiguous())",
    {"mha.view", "Tensor:is_contiguous"})

entry("mha.clone", "views", "mha.clone(t) or t:clone() -> tensor",
    "A contiguous copy with its own storage: changing it does not change t.",
    nil, "x = mha.zeros(2)\ny = x:clone()\ny:set(1, 5)\nprint(x, y)")

-- ---- attention ----

entry("mha.matmul", "attention", "mha.matmul(a, b) or a:matmul(b) -> tensor",
    "The matrix product with torch.matmul's rules: (n,k)·(k,m) -> (n,m); a 1-D operand is a vector; "
    .. "leading dimensions are batch dimensions and broadcast, so (N,H,L,D)·(N,H,D,S) -> (N,H,L,S) "
    .. "computes every head's scores at once. The inner sizes must agree; the error shows both shapes. "
    .. "Ctrl-C stops a long one.",
    "C_ij = Σ_k A_ik · B_kj",
    "mha.matmul(mha.tensor{{1, 2}, {3, 4}}, mha.eye(2))", {"mha.linear"})

entry("mha.softmax", "attention", "mha.softmax(x, dim) or x:softmax(dim) -> tensor",
    "Turns scores into weights that are positive and sum to 1 along dim (required, as in PyTorch; "
    .. "rows of an attention score matrix are dim -1). Computed stably by subtracting the maximum "
    .. "first, so large scores do not overflow. A row whose entries are all -inf (every key masked) "
    .. "becomes NaN, as in PyTorch and NumPy.",
    "softmax(x)_i = exp(x_i - max x) / Σ_j exp(x_j - max x)",
    "mha.softmax(mha.tensor{{1, 2, 3}}, 2)", {"mha.scaled_dot_product_attention", "mha.masked_fill"})

entry("mha.linear", "attention", "mha.linear(x, W [, b]) or x:linear(W [, b]) -> tensor",
    "A fully connected layer in PyTorch's layout: W is (out, in), so x (..., in) becomes (..., out). "
    .. "The projections Q = X·W^Qᵀ of attention are linear layers.",
    "y = x·Wᵀ + b",
    "mha.linear(mha.ones(2, 3), mha.eye(3):narrow(1, 1, 2), mha.tensor{10, 20})", {"mha.matmul"})

entry("mha.layer_norm", "attention", "mha.layer_norm(x, normalized_shape [, weight [, bias [, eps]]]) -> tensor",
    "Normalises over the last dimensions, as PyTorch's F.layer_norm: normalized_shape is their shape, "
    .. "a number n for the last dim of size n (E for (N, L, E) inputs) or a table {a, b} for the last "
    .. "two; it must match x's last sizes. Uses the biased variance and eps = 1e-5 by default; weight "
    .. "and bias have the normalized shape. Used after the residual connection: layer_norm(x + attn(x), E).",
    "y = (x - mean) / √(var + eps) · weight + bias",
    "mha.layer_norm(mha.tensor{{1, 2, 3}, {2, 4, 6}}, 3)")

entry("mha.positional_encoding", "attention", "mha.positional_encoding(L, E) -> tensor",
    "The sinusoidal position encodings of 'Attention Is All You Need' as an (L, E) tensor, added to "
    .. "the token embeddings so attention can tell positions apart. Even columns are sines, odd columns "
    .. "cosines, of wavelengths growing geometrically from 2π to 10000·2π.",
    "PE[p, 2i] = sin(p / 10000^(2i/E)),  PE[p, 2i+1] = cos(p / 10000^(2i/E))  (p, i from 0)",
    "mha.positional_encoding(4, 6)")

entry("mha.causal_mask", "attention", "mha.causal_mask(L [, S]) -> bool tensor",
    "The (L, S) bool mask that is true above the diagonal: query i may not look at the future key "
    .. "j > i. true means 'not allowed', as everywhere in mha-repl and in nn.MultiheadAttention.",
    "mask[i, j] = (j > i)", "mha.causal_mask(4)", {"mha.masked_fill", "mha.scaled_dot_product_attention"})

entry("mha.scaled_dot_product_attention", "attention",
    "mha.scaled_dot_product_attention(q, k, v [, {attn_mask=, is_causal=, scale=, need_weights=, enable_gqa=, "
    .. "return_lse=}]) -> out, weights [, lse]",
    "Attention: each query's output is the average of the values, weighted by how well the query "
    .. "matches each key. q (..., L, D), k (..., S, D), v (..., S, Dv); leading dims broadcast. "
    .. "attn_mask is bool (true = not allowed) or float (added to the scores); is_causal masks j > i; "
    .. "scale defaults to 1/√D. With need_weights=false only out is returned, computed by a fused "
    .. "kernel that never forms the L×S matrix. enable_gqa=true (grouped-query attention, torch 2.5's "
    .. "option): q (..., H, L, D), k and v (..., H_kv, S, D) with H a multiple of H_kv; query head h "
    .. "reads K/V head ⌈h·H_kv/H⌉ (torch's repeat_interleave order), K and V never copied; H_kv = 1 "
    .. "is multi-query attention. return_lse=true also returns each row's log-sum-exp (..., L) of the "
    .. "scaled, masked scores (natural log, -inf for a fully masked row), after out and the weights: "
    .. "what the fused kernel keeps as m + log l, and what its backward recomputes the weights from. "
    .. "mha.sdpa is the same function.",
    "out = softmax(s)·v,  s = q·kᵀ·scale + mask,  scale = 1/√D,  lse_i = log Σ_j exp(s_ij)",
    "x = mha.randn(3, 4)\nout, w = mha.scaled_dot_product_attention(x, x, x, {is_causal = true})\nprint(w)\n"
    .. "-- 8 query heads share 2 K/V heads; lse: each row's log-sum-exp\n"
    .. "q, kv = mha.randn(8, 3, 4), mha.randn(2, 3, 4)\n"
    .. "opts = {enable_gqa = true, need_weights = false, return_lse = true}\n"
    .. "out, lse = mha.sdpa(q, kv, kv, opts)\n"
    .. "print(lse)",
    {"mha.softmax", "mha.MultiheadAttention"})

entry("mha.sdpa", "attention", "mha.sdpa(q, k, v [, opts]) -> out, weights",
    "Short name of mha.scaled_dot_product_attention; see there.",
    "out = softmax(q·kᵀ/√D + mask)·v",
    "x = mha.randn(2, 4)\nmha.sdpa(x, x, x)", {"mha.scaled_dot_product_attention"})

-- ---- MultiheadAttention ----

entry("mha.MultiheadAttention", "module",
    "mha.MultiheadAttention{embed_dim=, num_heads=, bias=true, kdim=, vdim=, add_bias_kv=false, add_zero_attn=false}",
    "A multi-head attention layer faithful to PyTorch 1.13's nn.MultiheadAttention (batch_first): "
    .. "the input is projected to queries, keys and values, split into num_heads heads of head_dim = "
    .. "embed_dim/num_heads, each head attends separately, and the concatenated heads are projected "
    .. "by W^O. kdim/vdim give keys and values other sizes (cross-attention). Parameters use "
    .. "PyTorch's state_dict names with '.' written '_' (in_proj_weight, in_proj_bias, q_proj_weight, "
    .. "k_proj_weight, v_proj_weight, out_proj_weight, out_proj_bias, bias_k, bias_v): m.in_proj_weight "
    .. "is the parameter itself (a leaf that requires grad: backward fills m.in_proj_weight:grad()) and "
    .. "m.in_proj_weight = t replaces it by a copy of t. Initialised as PyTorch does, "
    .. "from the seeded generator. Call it with m:forward(q, k, v, opts) or m(q, k, v, opts).",
    "head_h = softmax(Q_h·K_hᵀ/√d_k)·V_h,  MHA(Q, K, V) = concat(head_1, ..., head_H)·W^Oᵀ + b^O",
    "mha.seed(0)\nm = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\nprint(m, m.in_proj_weight:shape())",
    {"MultiheadAttention:forward", "MultiheadAttention:trace"})

entry("MultiheadAttention:forward", "module",
    "m:forward(query [, key [, value [, {key_padding_mask=, attn_mask=, need_weights=true, average_attn_weights=true, is_causal=false}]]]) -> out, weights",
    "One pass of the layer. query (N, L, E) or unbatched (L, E); key (N, S, kdim), value (N, S, vdim); "
    .. "key and value default to query (self-attention). key_padding_mask (N, S) is true (or -inf) at "
    .. "padding keys; attn_mask (L, S) or (N·H, L, S) is bool (true = not allowed) or float (added to "
    .. "the scores); is_causal masks j > i. Returns out (N, L, E) and the weights (N, L, S) averaged "
    .. "over heads, or (N, H, L, S) with average_attn_weights=false, or nil with need_weights=false - "
    .. "exactly what PyTorch returns.",
    "Q = q·W^Qᵀ + b^Q (K, V alike);  out = concat_h(softmax(Q_h·K_hᵀ/√D + mask)·V_h)·W^Oᵀ + b^O",
    "mha.seed(0)\nm = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\nx = mha.randn(3, 4)\nout, w = m:forward(x, x, x)\nprint(out, w)",
    {"mha.MultiheadAttention", "MultiheadAttention:trace"})

entry("MultiheadAttention:trace", "module", "m:trace(query [, key [, value [, opts]]]) -> table",
    "Runs forward and keeps every intermediate under a name: query key value Q K V Q_heads K_heads "
    .. "V_heads scores scaled_scores masked_scores weights head_outputs concat output. The array part "
    .. "lists the names in order, so `for _, name in ipairs(tr) do print(name, tr[name]) end` walks "
    .. "through the computation. Options as forward.",
    "scores = Q_h·K_hᵀ,  scaled_scores = scores/√D,  weights = softmax(masked_scores)",
    "mha.seed(0)\nm = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\nsteps = m:trace(mha.randn(3, 4))\nprint(table.concat(steps, ' '))\nprint(steps.weights)",
    {"MultiheadAttention:forward"})

entry("MultiheadAttention:parameters", "module", "m:parameters() -> table",
    "PyTorch's dotted name (in_proj_weight, out_proj.weight, ...) -> the parameter itself, for every "
    .. "parameter the module has: a leaf that requires grad, whose grad() backward fills - what an "
    .. "optimizer takes. Writes into one go inside mha.no_grad.",
    nil, "m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\nfor name, p in pairs(m:parameters()) do print(name, p:dim()) end",
    {"MultiheadAttention:parameter_names", "MultiheadAttention:zero_grad"})

entry("MultiheadAttention:zero_grad", "module", "m:zero_grad() -> m",
    "Forgets every parameter's gradient (each grad() is nil until the next backward).",
    nil, "m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\nx = mha.randn(3, 4)\n"
    .. "m:forward(x, x, x)[1]:sum():backward()\nm:zero_grad()\nprint(m.in_proj_weight:grad())",
    {"MultiheadAttention:parameters", "Tensor:zero_grad"})

entry("MultiheadAttention:requires_grad", "module", "m:requires_grad(false|true) -> m",
    "Freezes (false) or unfreezes every parameter: a frozen module records no graph for its "
    .. "parameters, and its forward runs the plain kernels when no input requires grad either.",
    nil, "m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}\n"
    .. "m:requires_grad(false)\nprint(m.in_proj_weight:requires_grad())",
    {"MultiheadAttention:parameters"})

entry("MultiheadAttention:parameter_names", "module", "m:parameter_names() -> list",
    "The names of the module's parameters in PyTorch's state_dict order (with '_' for '.').",
    nil, "m = mha.MultiheadAttention{embed_dim = 4, num_heads = 2, kdim = 3}\nm:parameter_names()")

entry("MultiheadAttention:close", "module", "m:close()",
    "Frees the module's parameters now instead of at garbage collection (also done by a "
    .. "`local m <close>` going out of scope).",
    nil, "m = mha.MultiheadAttention{embed_dim = 4, num_heads = 1}\nm:close()")

-- ---- methods only tensors have ----

local function method(name, sig, doc, formula, example, see)
    entry("Tensor:" .. name, "tensor methods", sig, doc, formula, example, see)
end

method("shape", "t:shape() -> {d1, d2, ...}", "The sizes of t's dimensions, as a Lua list.", nil,
       "mha.zeros(2, 3):shape()", {"Tensor:size", "Tensor:dim"})
method("size", "t:size([dim]) -> {d1, ...} or number",
       "Without dim, the shape (as t:shape()); with dim (1-based, negative from the end), that one size.",
       nil, "mha.zeros(2, 3):size(-1)", {"Tensor:shape"})
method("strides", "t:strides() -> {s1, s2, ...}",
       "How many elements to step in storage for +1 along each dimension. A transposed view has its "
       .. "strides swapped; an expanded dimension has stride 0.",
       "element [i1, ..., in] is at offset + Σ_k (i_k - 1)·s_k", "mha.zeros(2, 3):transpose(1, 2):strides()",
       {"Tensor:offset", "mha.view"})
method("offset", "t:offset() -> number",
       "Where t's first element lies in its storage (0-based, in elements): narrow and select move it.",
       nil, "mha.arange(10):narrow(1, 4, 2):offset()", {"Tensor:strides"})
method("dim", "t:dim() -> number", "The number of dimensions (0 for a scalar).", nil, "mha.zeros(2, 3, 4):dim()")
method("numel", "t:numel() -> number", "The number of elements: the product of the sizes.", nil, "mha.zeros(2, 3, 4):numel()")
method("dtype", "t:dtype() -> \"float32\" | \"bool\"", "The element type.", nil, "mha.causal_mask(2):dtype()")
method("is_contiguous", "t:is_contiguous() -> boolean",
       "Whether the elements lie in storage in C order without gaps, so view() works.",
       "contiguous: s_n = 1 and s_k = s_(k+1)·d_(k+1)", "mha.zeros(2, 3):transpose(1, 2):is_contiguous()",
       {"mha.contiguous", "mha.view"})
method("shares_storage", "t:shares_storage(u) -> boolean",
       "Whether t and u are views of the same storage, so writing through one changes the other.",
       nil, "x = mha.zeros(2, 3)\nprint(x:T():shares_storage(x), x:clone():shares_storage(x))")
method("get", "t:get(i, j, ...) -> number | boolean",
       "One element, by 1-based indices (negative from the end), one per dimension.",
       nil, "mha.tensor{{1, 2}, {3, 4}}:get(2, 1)", {"Tensor:set", "Tensor:item"})
method("set", "t:set(i, j, ..., value)",
       "Writes one element, through any view into the shared storage.",
       nil, "x = mha.zeros(2, 2)\nx:set(1, 2, 7)\nprint(x)", {"Tensor:get"})
method("item", "t:item() -> number | boolean", "The only element of a one-element tensor.", nil,
       "mha.tensor{{1, 2}, {3, 4}}:sum():item()")
method("totable", "t:totable() -> nested table",
       "The elements as nested Lua tables (a number or boolean for a scalar).", nil,
       "mha.eye(2):totable()", {"mha.tensor"})
method("float", "t:float() -> tensor", "A float32 tensor: true becomes 1, false 0 (t itself when already float32).",
       nil, "mha.causal_mask(3):float()", {"Tensor:bool"})
method("bool", "t:bool() -> bool tensor", "A bool tensor: non-zero becomes true.", nil,
       "mha.tensor{0, 1, 2}:bool()", {"Tensor:float"})
method("T", "t:T() -> view", "The transpose of a 2-D tensor, a view: t:transpose(1, 2).",
       "(Aᵀ)_ij = A_ji", "mha.tensor{{1, 2, 3}}:T()", {"mha.transpose"})
method("copy_", "t:copy_(src) -> t",
       "Writes src (a tensor, number or nested table, broadcast to t's shape) into t in place, through "
       .. "views into the shared storage. Refused, as in PyTorch, when elements of t share one memory "
       .. "location (a stride 0 from expand): clone() first.", nil,
       "x = mha.zeros(2, 3)\nx:narrow(2, 2, 2):copy_(mha.ones(2, 2))\nprint(x)")
method("fill_", "t:fill_(value) -> t", "Sets every element to value, in place.", nil, "mha.zeros(2, 2):fill_(3)")
method("zero_", "t:zero_() -> t",
       "Sets every element to 0, in place: x:grad():zero_() clears x's gradient itself, as torch's "
       .. "x.grad.zero_() (t:zero_grad() forgets it instead).", nil,
       "x = mha.ones(2):requires_grad(true)\nx:sum():backward()\nx:grad():zero_()\nprint(x:grad())",
       {"Tensor:zero_grad"})
method("close", "t:close()",
       "Drops t's reference to its storage now (the storage is freed when no view holds it); t "
       .. "reads as closed afterwards. `local t <close> = ...` does it at the end of the scope.",
       nil, "t = mha.zeros(100, 100)\nt:close()\nprint(mha.memory())", {"mha.memory"})

-- ---- gradients (core/autograd/autograd.c) ----

local function grad_method(name, sig, doc, formula, example, see)
    entry("Tensor:" .. name, "gradients", sig, doc, formula, example, see)
end

grad_method("requires_grad", "t:requires_grad(true|false) -> t;  t:requires_grad() -> boolean",
    "Marks t as a leaf of the autograd graph (PyTorch's requires_grad_): every op on it records itself, "
    .. "and backward() accumulates d(loss)/dt into t:grad(). With no argument, reads the flag (true also "
    .. "for a result made from such a tensor).", nil,
    "x = mha.randn(2, 3):requires_grad(true)\nprint(x:requires_grad(), (x * 2):requires_grad())",
    {"Tensor:backward", "Tensor:grad", "mha.no_grad"})
grad_method("grad", "t:grad() -> tensor | nil",
    "The gradient accumulated into the leaf t by backward(), a tensor of t's shape, or nil before the "
    .. "first backward (and for a tensor made by an op). Gradients add up over backward calls until "
    .. "t:zero_grad().", "x:grad() = Σ over backward calls of ∂loss/∂x",
    "x = mha.tensor{1, 2, 3}:requires_grad(true)\ny = (x * x):sum()\ny:backward()\nprint(x:grad())",
    {"Tensor:backward", "Tensor:zero_grad"})
grad_method("backward", "loss:backward();  y:backward(grad);  loss:backward{retain_graph = true}",
    "Reverse-mode differentiation from this tensor: every leaf it was computed from gets d(loss)/d(leaf) "
    .. "added to its grad(). A one-element loss needs no argument; otherwise give the gradient of y, a "
    .. "tensor of y's shape (y:backward(g) computes Σ g·y). The graph is freed afterwards: run the forward "
    .. "again to backward again, or pass retain_graph = true (torch's retain_graph=True) to keep it for "
    .. "another backward (options last: y:backward(g, {retain_graph = true}), or {gradient = g, ...}).", nil,
    "w = mha.randn(3, 2):requires_grad(true)\nloss = (mha.ones(4, 3):matmul(w)):mean()\n"
    .. "loss:backward()\nprint(w:grad())",
    {"Tensor:grad", "Tensor:requires_grad"})
grad_method("zero_grad", "t:zero_grad() -> t",
    "Forgets t's gradient: t:grad() is nil until the next backward (torch's zero_grad(set_to_none=True)).",
    nil, "x = mha.ones(2):requires_grad(true)\nx:sum():backward()\nx:zero_grad()\nprint(x:grad())",
    {"Tensor:grad"})
grad_method("set_grad", "t:set_grad(g | nil) -> t",
    "Sets t's gradient to a copy of g (a tensor of t's shape), or forgets it with nil: torch's t.grad = g.",
    nil, "x = mha.zeros(2)\nx:set_grad(mha.ones(2))\nprint(x:grad())", {"Tensor:grad"})
grad_method("detach", "t:detach() -> tensor",
    "The same data (shared storage, no copy) outside the autograd graph: nothing done with it reaches "
    .. "t's gradient. Write into t:detach():clone() to change values freely.", nil,
    "x = mha.ones(2):requires_grad(true)\nprint(x:detach():requires_grad())", {"mha.no_grad"})
grad_method("is_leaf", "t:is_leaf() -> boolean",
    "True for a tensor the user made (a leaf: its gradient is kept), false for one made by a recorded op.",
    nil, "x = mha.ones(2):requires_grad(true)\nprint(x:is_leaf(), (x + 1):is_leaf())", {"Tensor:grad_fn"})
grad_method("grad_fn", "t:grad_fn() -> string | nil",
    "The name of the op that made t in the graph (\"mul\", \"matmul\", \"softmax\", ...), nil for a leaf.",
    nil, "x = mha.ones(2):requires_grad(true)\nprint((x * x):sum():grad_fn())", {"Tensor:is_leaf"})
entry("mha.no_grad", "gradients", "mha.no_grad(f, ...) -> f(...)",
    "Runs f(...) with gradient recording off (torch.no_grad()): results do not require grad and leaves may "
    .. "be written in place, as an optimizer step does. The mode is restored when f returns or raises.",
    nil, "w = mha.ones(2):requires_grad(true)\nmha.no_grad(function() w:fill_(0) end)\nprint(w)",
    {"mha.is_grad_enabled", "Tensor:detach"})
entry("mha.is_grad_enabled", "gradients", "mha.is_grad_enabled() -> boolean",
    "False inside mha.no_grad, true otherwise.", nil,
    "print(mha.is_grad_enabled(), mha.no_grad(mha.is_grad_enabled))", {"mha.no_grad"})

-- ---- ops that training needs, and the backward functions (core/nn/, core/attention/sdpa.c) ----

entry("mha.log_softmax", "gradients", "mha.log_softmax(x, dim) -> tensor",
    "log(softmax(x)) along dim, computed without forming the softmax (no log of 0 for tiny weights). "
    .. "Also a method: x:log_softmax(dim).", "log_softmax(x)_i = x_i - max x - log Σ_j exp(x_j - max x)",
    "x = mha.tensor{1, 2, 3}\nprint(mha.log_softmax(x, 1), x:softmax(1):log())",
    {"mha.softmax", "mha.cross_entropy"})
entry("mha.cross_entropy", "gradients",
    "mha.cross_entropy(logits, targets [, {ignore_index = -100, reduction = \"mean\", label_smoothing = 0}]) -> loss",
    "PyTorch's F.cross_entropy: logits (C), (N,C) or (N,C,d1,...) (the class dim is 2, or 1 for 1-D "
    .. "logits, as in torch); targets hold 1-based class indices, a tensor of whole numbers or a nested "
    .. "Lua table shaped like logits without the class dim. A position whose target equals ignore_index "
    .. "(compared with the targets as you give them, so padding 0 is {ignore_index = 0}) counts for "
    .. "nothing: loss 0, gradient 0. reduction \"mean\" averages over the positions not ignored (NaN when "
    .. "all are, as torch), \"sum\" adds them, \"none\" returns each position's loss (targets' shape). "
    .. "label_smoothing ε mixes the target with the uniform distribution over the C classes.",
    "loss_p = (1-ε)·(-log_softmax(logits_p)[target_p]) + ε/C · Σ_c -log_softmax(logits_p)[c]",
    "logits = mha.tensor{{2, 0, -1}, {0, 3, 0}, {1, 1, 1}}\n"
    .. "print(mha.cross_entropy(logits, {1, 2, 0}, {ignore_index = 0}))\n"
    .. "print(mha.cross_entropy(logits, {1, 2, 3},\n                        {reduction = \"none\", label_smoothing = 0.1}))",
    {"mha.log_softmax", "mha.cross_entropy_backward"})
entry("mha.embedding", "gradients", "mha.embedding(indices, weight) -> tensor",
    "The rows of weight (num_embeddings, E) picked by 1-based indices (a tensor of whole numbers or "
    .. "a nested table): the result has the indices' shape plus E. weight's gradient adds up the rows "
    .. "used (a row used twice gets twice the gradient).", "out[p, :] = weight[indices[p], :]",
    "W = mha.arange(12):view(4, 3)\nprint(mha.embedding({{1, 4}, {2, 2}}, W))",
    {"mha.embedding_backward"})
entry("mha.softmax_backward", "gradients", "mha.softmax_backward(dy, y, dim) -> dx",
    "The gradient of softmax by hand: dy is the gradient of y = softmax(x, dim), the result that of x.",
    "dx = y ∘ (dy - Σ_dim dy∘y)",
    "x = mha.randn(2, 3):requires_grad(true)\ny = x:softmax(2)\ndy = mha.randn(2, 3)\ny:backward(dy)\n"
    .. "print(mha.softmax_backward(dy, y:detach(), 2), x:grad())",
    {"mha.softmax", "Tensor:backward"})
entry("mha.log_softmax_backward", "gradients", "mha.log_softmax_backward(dy, y, dim) -> dx",
    "The gradient of log_softmax by hand, for y = log_softmax(x, dim).", "dx = dy - exp(y) ∘ Σ_dim dy",
    "y = mha.log_softmax(mha.randn(2, 3), 2)\nprint(mha.log_softmax_backward(mha.ones(2, 3), y, 2))",
    {"mha.log_softmax"})
entry("mha.linear_backward", "gradients", "mha.linear_backward(dy, x, W) -> dx, dW, db",
    "The gradients of y = linear(x, W, b) by hand: x (..., in), W (out, in), dy (..., out).",
    "dx = dy·W,  dW = Σ_rows dyᵀ·x,  db = Σ_rows dy",
    "x, W = mha.randn(4, 3), mha.randn(2, 3)\ndx, dW, db = mha.linear_backward(mha.ones(4, 2), x, W)\nprint(dW, db)",
    {"mha.linear"})
entry("mha.layer_norm_backward", "gradients",
    "mha.layer_norm_backward(dy, x, normalized_ndim [, weight [, eps]]) -> dx, dweight, dbias",
    "The gradients of layer_norm over x's last normalized_ndim dims by hand (eps 1e-5 by default).",
    "x̂ = (x - μ)/σ,  ĝ = dy∘w:  dx = (ĝ - mean ĝ - x̂·mean(ĝ∘x̂))/σ,  dw = Σ dy∘x̂,  db = Σ dy",
    "x = mha.randn(2, 4)\ndx, dw, db = mha.layer_norm_backward(mha.randn(2, 4), x, 1)\nprint(dx:sum(2))",
    {"mha.layer_norm"})
entry("mha.embedding_backward", "gradients", "mha.embedding_backward(dy, indices, num_embeddings) -> dweight",
    "The gradient of embedding's weight by hand: each position's dy row added to its index's row.",
    "dW[r] = Σ over p with indices[p] = r of dy[p]",
    "print(mha.embedding_backward(mha.ones(3, 2), {1, 3, 1}, 4))", {"mha.embedding"})
entry("mha.cross_entropy_backward", "gradients",
    "mha.cross_entropy_backward(logits, targets [, dloss [, options]]) -> dlogits",
    "The gradient of cross_entropy by hand, with the same options (ignore_index, reduction, "
    .. "label_smoothing). dloss, the loss's own gradient, is 1 by default: a number, or for reduction "
    .. "\"none\" a tensor of targets' shape. An ignored position's gradient is 0.",
    "dlogits_p = w_p · (softmax(logits_p) - (1-ε)·onehot(target_p) - ε/C), w_p = dloss / counted positions (mean)",
    "print(mha.cross_entropy_backward(mha.tensor{{2, 0, -1}}, {1}))", {"mha.cross_entropy"})
entry("mha.sdpa_backward", "gradients",
    "mha.sdpa_backward(dout, q, k, v, {weights= | out=, attn_mask=, is_causal=, scale=, enable_gqa=}) -> dq, dk, dv",
    "Scaled dot-product attention's backward by hand. With weights (the forward's) it is the plain "
    .. "backward from the (L,S) matrix; with out (the forward's output) it is the fused one: the "
    .. "weights are recomputed 64 queries x 128 keys at a time from each row's log-sum-exp, so the "
    .. "extra memory is O(L·D), never O(L·S) (the flash-attention method). Positions a bool mask or "
    .. "is_causal hides pass no gradient; a fully masked row gives NaN in dv (its weights are NaN), "
    .. "as torch 1.13's autograd does. With enable_gqa, dk and dv of a K/V head sum over the query "
    .. "heads that read it.",
    "dV = Pᵀ·dO,  dP = dO·Vᵀ,  dS = P∘(dP - rowsum(dO∘out)),  dQ = dS·K·scale,  dK = dSᵀ·Q·scale",
    "q, k, v = mha.randn(4, 2), mha.randn(5, 2), mha.randn(5, 3)\nout, w = mha.sdpa(q, k, v)\n"
    .. "dq = mha.sdpa_backward(mha.ones(4, 3), q, k, v, {weights = w})\n"
    .. "dq2 = mha.sdpa_backward(mha.ones(4, 3), q, k, v, {out = out})\nprint((dq - dq2):abs():max())",
    {"mha.scaled_dot_product_attention", "Tensor:backward"})
grad_method("log_softmax", "t:log_softmax(dim) -> tensor", "mha.log_softmax as a method.", nil,
    "mha.tensor{1, 2}:log_softmax(1)", {"mha.log_softmax"})


-- ---- attention as language models run it (docs/modern.md) ----

entry("mha.rope", "attention",
    "mha.rope(x [, {base = 10000, layout = \"half\" | \"interleaved\", offset = 0}]) -> tensor",
    "Rotary position embedding (RoPE): turns each pair of features of x (..., L, D), D even, by an "
    .. "angle that grows with the position, so q·k after rope depends only on how far apart the two "
    .. "positions are. Row l is at position offset + l (0-based; offset is a KV cache's length). "
    .. "layout \"half\" pairs feature i with i + D/2 (GPT-NeoX, Hugging Face LLaMA, rotate_half); "
    .. "\"interleaved\" pairs 2i with 2i+1 (RoFormer, GPT-J, Meta's LLaMA): the same weights in the "
    .. "wrong layout give garbage. Angles in double, rounded once; autograd turns the gradient back.",
    "θ_i = base^(-2i/D),  p = offset + l:  out_a = x_a·cos(pθ_i) - x_b·sin(pθ_i),  out_b = x_b·cos(pθ_i) + x_a·sin(pθ_i)",
    "q = mha.randn(4, 8)\nprint(mha.rope(q, {offset = 2}))",
    {"mha.positional_encoding", "mha.alibi_bias"})

entry("mha.alibi_slopes", "attention", "mha.alibi_slopes(H) -> tensor",
    "ALiBi's slope of each of H heads (Press et al.): a geometric sequence, so heads see near and far. "
    .. "For H a power of two the slopes are 2^(-8h/H); otherwise those of the largest power of two n "
    .. "below H, then every other slope of 2n, as the official get_slopes does.",
    "slope_h = 2^(-8h/H),  h = 1..H  (H a power of two)",
    "print(mha.alibi_slopes(8))", {"mha.alibi_bias"})

entry("mha.alibi_bias", "attention", "mha.alibi_bias(H, L [, S]) -> tensor",
    "The (H, L, S) ALiBi bias to add to the scores instead of position embeddings: each head "
    .. "penalises a key by its distance from the query, times the head's slope. The L queries are the "
    .. "last L of the S positions (S defaults to L), as when decoding from a KV cache.",
    "bias[h, i, j] = -slope_h · |(S - L + i) - j|",
    "scores = mha.randn(2, 4, 4) + mha.alibi_bias(2, 4)\nprint(scores:softmax(-1))",
    {"mha.alibi_slopes", "mha.scaled_dot_product_attention"})

entry("mha.sliding_window_mask", "attention",
    "mha.sliding_window_mask(L, W [, {sinks = 0, S = L}]) -> bool tensor",
    "The (L, S) bool mask of a sliding window of W keys with attention sinks: each query sees itself, "
    .. "the W - 1 keys before it and the first sinks keys (StreamingLLM keeps them), never the future. "
    .. "true means 'not allowed', as in mha.causal_mask; the L queries are the last L of the S "
    .. "positions. W >= S gives the causal mask.",
    "query i at t = S - L + i sees key j  ⇔  j ≤ t  and  (t - j < W  or  j < sinks)",
    "print(mha.sliding_window_mask(6, 2, {sinks = 1}))",
    {"mha.causal_mask", "mha.scaled_dot_product_attention"})

entry("mha.sample", "attention",
    "mha.sample(logits [, {temperature = 1, top_k =, top_p =, seed =}]) -> index or tensor",
    "Draws the next token from logits (..., V), the last dim being the vocabulary: a 1-based index, "
    .. "a Lua integer for logits (V), else a tensor of one index per row. temperature divides the "
    .. "logits (0 takes the first largest, drawing nothing); top_k keeps the k most probable tokens; "
    .. "top_p keeps the fewest most probable tokens whose probability reaches top_p (nucleus), then "
    .. "renormalises. Draws from the generator of mha.seed, one number per row; seed = s is mha.seed(s) first.",
    "p_j ∝ exp(x_j / T) over the kept tokens",
    "logits = mha.tensor{2, 1, 0.5, -1}\nprint(mha.sample(logits, {temperature = 0.8, top_k = 3, seed = 1}))",
    {"mha.seed", "mha.softmax"})

return D
