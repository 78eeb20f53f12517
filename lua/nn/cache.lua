-- lua/nn/cache.lua - module "mha.nn.cache": the KV cache of a Transformer (model:new_cache()),
-- the keys and values of every token seen so far per layer, so decoding feeds only the new tokens.
--
-- Per layer the cache holds k and v (N, H_kv, S, D): S tokens, H_kv K/V heads of D numbers,
-- detached (the cache serves decoding, not training): views of the first S rows of storage with
-- spare rows, so a step writes its new rows in place (a window's cache is joined anew). With RoPE
-- the keys are held after their rotation, except in a model with a window, where they are held
-- before it and turned at their places in the cache on every step (StreamingLLM). With a window W
-- and n sinks, after each forward the cache keeps only the first n tokens and the last W, and
-- positions count inside the cache, so decoding runs on past max_len. A forward appends to each
-- layer through cache:append and makes the step count with cache:commit, so a forward stopped
-- half-way (an error, Ctrl-C) leaves the cache as it was.

local raise = require "mha.raise"   -- errors at the user's line
local mha = require "mha.core"
local i18n = require "mha.i18n"     -- how a cache prints (room cache)

local M = {}

local Cache = {}
Cache.__index = Cache
Cache.__name = "mha.nn.KVCache"

-- M.new(model, {layers =, window =, sinks =}) -> an empty cache bound to model.
function M.new(model, o)
    return setmetatable({model = model, n_layers = o.layers, window = o.window,
                         sinks = o.sinks or 0, layers = {}, pending = {}, held = 0, seen = 0,
                         batch = nil}, Cache)
end

function M.is_cache(v)
    return getmetatable(v) == Cache
end

-- How many tokens the cache holds: the position the next token takes.
function Cache:length()
    return self.held
end

-- How many tokens went through the cache since it was made (more than length() once a window
-- drops some).
function Cache:seen_tokens()
    return self.seen
end

-- The keys or values (what = "k" or "v") of layer i, checked.
local function held(self, fname, i, what)
    if math.type(i) ~= "integer" and not (type(i) == "number" and i == math.floor(i))
            or i < 1 or i > self.n_layers then
        raise(string.format("%s: layer must be a whole number from 1 to %d, got %s", fname,
                            self.n_layers, tostring(i)))
    end
    local entry = self.layers[math.tointeger(i)]
    if not entry then
        raise(fname .. ": the cache is empty; run model:forward(tokens, {cache = cache}) first")
    end
    return entry[what]
end

-- cache:keys(i) -> the keys layer i holds (N, H_kv, S, D), the cache's own tensor: with RoPE
-- turned, except in a model with a window (turned at their places on every step).
function Cache:keys(i)
    return held(self, "KVCache:keys", i, "k")
end

-- cache:values(i) -> the values layer i holds (N, H_kv, S, D), the cache's own tensor.
function Cache:values(i)
    return held(self, "KVCache:values", i, "v")
end

-- The memory of the keys and values held, in bytes (float32: 4 bytes a number).
function Cache:bytes()
    local n = 0
    for _, entry in pairs(self.layers) do n = n + 4 * (entry.k:numel() + entry.v:numel()) end
    return n
end

-- Empties the cache (the model stays its owner).
function Cache:reset()
    self.layers, self.pending, self.held, self.seen, self.batch = {}, {}, 0, 0, nil
end

-- Checks that the cache suits this forward: its model, its batch size; starts a step.
function Cache:begin(fname, model, N)
    if self.model ~= model then
        raise(fname .. ": this cache belongs to another model; make one with model:new_cache()")
    end
    if self.batch and self.batch ~= N then
        raise(string.format("%s: the cache holds %d sequence%s but the tokens have %d rows", fname,
                            self.batch, self.batch == 1 and "" or "s", N))
    end
    self.pending = {}
end

-- Rows of a layer's K/V storage: the S + L needed, at least 256 and twice the last capacity (so a
-- token costs one row's copy, not all of S), at most the model's max_len.
local function capacity(entry, need, max_len)
    local grown = math.max(need, 2 * (entry and entry.cap or 0), 256)
    return math.min(grown, math.max(max_len, need))
end

-- The storage of one of K or V (N, H_kv, cap, D) holding the S rows of held (or none) and the L
-- rows of new at S+1 .. S+L, reused from buf when it has room -> the storage, the first S + L rows.
local function write_rows(buf, cap, held, new, S, L)
    if not buf then
        local N, H, _, D = table.unpack(new:shape())
        buf = mha.zeros(N, H, cap, D)
        if S > 0 then buf:narrow(3, 1, S):copy_(held) end
    end
    buf:narrow(3, S + 1, L):copy_(new)
    return buf, buf:narrow(3, 1, S + L)
end

-- Cache:append's write in place: the L rows of k and v at S+1 .. S+L of layer i's storage
-- (entry's, or a larger one holding entry's S rows) -> the views of the first S + L rows.
local function store(self, i, entry, k, v, S, L)
    local cap, kbuf, vbuf = entry and entry.cap, entry and entry.kbuf, entry and entry.vbuf
    if not kbuf or S + L > cap then
        cap, kbuf, vbuf = capacity(entry, S + L, self.model.max_len), nil, nil
    end
    local kall, vall
    kbuf, kall = write_rows(kbuf, cap, entry and entry.k, k, S, L)
    vbuf, vall = write_rows(vbuf, cap, entry and entry.v, v, S, L)
    self.pending[i] = {k = kall, v = vall, kbuf = kbuf, vbuf = vbuf, cap = cap, rows = S + L}
    return kall, vall
end

-- k and v (N, H_kv, L, D) of layer i's new tokens -> all of the layer's keys and values
-- (N, H_kv, S + L, D). Without a window and a graph to record, they go in place into storage
-- with spare rows, and what attention reads is a view of its first S + L rows (rows of D
-- contiguous, as sdpa reads them without a copy); rows past S change nothing held until commit.
-- New keys that require grad (a forward recorded by hand) are joined with mha.cat so the graph
-- reaches them; a window drops rows at commit and joins them the same way.
function Cache:append(i, k, v)
    local entry = self.layers[i]
    if self.window or k:requires_grad() or v:requires_grad() then
        if entry then
            k, v = mha.cat({entry.k, k}, 3), mha.cat({entry.v, v}, 3)
        end
        self.pending[i] = {k = k:detach(), v = v:detach()}
        return k, v
    end
    return store(self, i, entry, k, v, entry and entry.k:size(3) or 0, k:size(3))
end

-- cache:append for one token made under no_grad in a model without a window (generate's step,
-- lua/nn/transformer.lua): k and v (N, H_kv, 1, D) stored as append stores them, without its
-- checks, once the layer holds rows in storage; else append itself.
function Cache:append_step(i, k, v)
    local entry = self.layers[i]
    local S = entry and entry.rows
    if not S then return self:append(i, k, v) end
    return store(self, i, entry, k, v, S, 1)
end

-- Keeps the sinks and the last W of (N, H_kv, S, D) along S, as a fresh tensor (so the dropped
-- memory goes).
local function keep_window(t, sinks, W)
    local S = t:shape()[3]
    if S <= sinks + W then return t end
    local recent = t:narrow(3, S - W + 1, W)
    if sinks == 0 then return recent:clone() end
    return mha.cat({t:narrow(3, 1, sinks), recent}, 3)
end

-- Ends a step of L new tokens over N sequences: the appended keys and values become the cache's.
function Cache:commit(L, N)
    for i = 1, self.n_layers do
        local entry = self.pending[i]
        if self.window then
            local W, sinks = self.window, self.sinks
            entry = {k = keep_window(entry.k, sinks, W), v = keep_window(entry.v, sinks, W)}
        end
        self.layers[i] = entry
    end
    self.pending = {}
    self.batch = N
    self.seen = self.seen + L
    self.held = self.layers[1].k:size(3)
end

function Cache:__tostring()
    local said = i18n.words(require("mha.display").printoptions().lang).cache
    local entry = self.layers[1]
    local heads = entry and said.heads(entry.k:shape()[2], entry.k:shape()[4]) or ""
    local window = self.window and string.format(said.window, self.window, self.sinks)
    return string.format(said.line, self.n_layers, self.held, heads, window or "", self:bytes())
end

return M
