#!/usr/bin/env bash
# tests/sh/test_zero_size.sh - every op on a tensor with no element returns at once, however many empty
# rows it has ((2^62, 0) is 2^62 rows of nothing): no loop walks them, no memory is taken for them.
# The calls run in one REPL under a timeout, so a regression fails (naming the call) instead of hanging.
# env: MHA_REPL (the binary), as tests/run.sh sets it.
set -u
repl=${MHA_REPL:?set MHA_REPL to the mha-repl binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/calls.lua" <<'EOF'
local G, T40 = 1 << 62, 1 << 40
local E = mha.zeros(G, 0)
-- name, function, and what it must give: a string the result's tostring equals, or {error = text}
local calls = {
    { "positional_encoding(2^62, 0)", function() return mha.positional_encoding(G, 0) end, "[float32 (4611686018427387904,0)]" },
    { "causal_mask(2^62, 0)", function() return mha.causal_mask(G, 0) end, "[bool (4611686018427387904,0)]" },
    { "causal_mask(0, 2^62)", function() return mha.causal_mask(0, G) end, "[bool (0,4611686018427387904)]" },
    { "layer_norm of zeros(2^62, 0)", function() return mha.layer_norm(E, 0) end, "[float32 (4611686018427387904,0)]" },
    { "softmax of zeros(2^62, 0) over dim 2", function() return mha.softmax(E, 2) end, "[float32 (4611686018427387904,0)]" },
    { "softmax of zeros(2^62, 0) over dim 1", function() return mha.softmax(E, 1) end, "[float32 (4611686018427387904,0)]" },
    { "log_softmax of zeros(2^62, 0) over dim 2", function() return mha.log_softmax(E, 2) end, "[float32 (4611686018427387904,0)]" },
    { "log_softmax of zeros(2^62, 0) over dim -1", function() return E:log_softmax(-1) end, "[float32 (4611686018427387904,0)]" },
    { "tostring(zeros(1e7, 0))", function() return tostring(mha.zeros(1e7, 0)) end, "[float32 (10000000,0)]" },
    { "tostring(zeros(2^40, 0))", function() return tostring(mha.zeros(T40, 0)) end, "[float32 (1099511627776,0)]" },
    { "mha.format(zeros(2^40, 0))", function() return mha.format(mha.zeros(T40, 0), { rows = {} }) end, "[float32 (1099511627776,0)]" },
    { "totable(zeros(2^40, 0))", function() return mha.zeros(T40, 0):totable() end,
      { error = "totable: a tensor of shape (1099511627776,0) has no element but would take more than 1048576 empty tables" } },
    { "totable(zeros(3, 0))", function() local t = mha.zeros(3, 0):totable(); return #t .. " " .. #t[3] end, "3 0" },
    { "heat(zeros(2^40, 0))", function() return mha.heat(mha.zeros(T40, 0)) end,
      { error = "heat: the tensor is empty, shape (1099511627776,0): nothing to shade" } },
    { "heat(zeros(0, 2^62))", function() return mha.heat(mha.zeros(0, G)) end,
      { error = "heat: the tensor is empty, shape (0,4611686018427387904): nothing to shade" } },
    { "reductions over an empty dim: sum 0, mean and var NaN", function()
        local x = mha.zeros(1 << 20, 0)
        local s, m, v = x:sum(2), x:mean(2), x:var(2)
        return tostring(s:shape()[1] == 1 << 20 and s:max():item() == 0 and s:min():item() == 0) .. " "
            .. tostring(m[1] ~= m[1] and m[1 << 20] ~= m[1 << 20]) .. " " .. tostring(v[7] ~= v[7]) end,
      "true true true" },
    { "plot.heatmap(zeros(2^40, 0))", function() return plot.heatmap(mha.zeros(T40, 0)) end,
      { error = "plot.heatmap: M is empty, shape (1099511627776,0)" } },
    { "t[i] = v, index a tensor", function() local t = mha.zeros(T40, 0); t[mha.zeros(T40, 0)] = 1 end,
      { error = "newindex: t[mha.Tensor] = ...: only integer indices can be assigned" } },
    { "t[1] = 5 on zeros(2^40, 0)", function() local t = mha.zeros(T40, 0); t[1] = 5; return t end, "[float32 (1099511627776,0)]" },
    { "sdpa with 2^62 batches of no query", function()
        local q = mha.zeros(G, 0, 4); return (mha.sdpa(q, q, q)) end, "[float32 (4611686018427387904,0,4)]" },
    { "MultiheadAttention over 2^62 empty sequences", function()
        local x = mha.zeros(G, 0, 4)
        local out, w = mha.MultiheadAttention { embed_dim = 4, num_heads = 2 }:forward(x, x, x)
        return tostring(out) .. " " .. tostring(w) end,
      "[float32 (4611686018427387904,0,4)] [float32 (4611686018427387904,0,0)]" },
    { "sum, exp, matmul, cat of zeros(2^62, 0)", function()
        return E:sum():item() .. " " .. tostring(mha.exp(E)) .. " " .. tostring(mha.matmul(E, mha.zeros(0, 0)))
            .. " " .. tostring(mha.cat({ E, E }, 2)) end,
      "0.0 [float32 (4611686018427387904,0)] [float32 (4611686018427387904,0)] [float32 (4611686018427387904,0)]" },
}
for _, c in ipairs(calls) do
    io.stderr:write("START ", c[1], "\n")
    local t0 = os.clock()
    local ok, got = pcall(c[2])
    local seconds = os.clock() - t0
    local want = c[3]
    local right
    if type(want) == "table" then
        right = not ok and tostring(got):find(want.error, 1, true) ~= nil
    else
        right = ok and tostring(got) == want
    end
    if not right then
        print(string.format("FAIL %s: got %s %s, want %s", c[1], ok and "result" or "error", tostring(got),
            type(want) == "table" and ("error " .. want.error) or want))
    elseif seconds > 0.5 then
        print(string.format("FAIL %s: took %.2f s of CPU", c[1], seconds))
    else
        print("PASS " .. c[1])
    end
end
-- every function and method of mha on (2^62, 0), its transpose and (0, 2^62), with a dim or a second
-- tensor: a result or an error, and never a loop over the empty rows (a hang names the call on stderr)
local skip = { show = true, heat = true, save = true, load = true, seed = true, printoptions = true,
    save_model = true, load_model = true, close = true }
local names = {}
for k, f in pairs(mha) do if type(f) == "function" and not skip[k] then names[#names + 1] = "mha." .. k end end
local methods = getmetatable(E).__methods
for k in pairs(methods) do if not skip[k] then names[#names + 1] = "t:" .. k end end
table.sort(names)
local sets = { { E }, { E, 1 }, { E, 2 }, { E, -1 }, { E, E }, { E, 1, 2 }, { E:T(), 1 }, { mha.zeros(0, G), 2 } }
local slow = {}
for _, name in ipairs(names) do
    local f = name:sub(1, 4) == "mha." and mha[name:sub(5)] or methods[name:sub(3)]
    for i, a in ipairs(sets) do
        io.stderr:write("START ", name, " with argument set ", i, "\n")
        local t0 = os.clock()
        pcall(f, table.unpack(a))
        if os.clock() - t0 > 0.5 then slow[#slow + 1] = name .. " #" .. i end
    end
end
print((#slow == 0 and "PASS " or "FAIL ") .. #names .. " functions and methods on empty tensors of 2^62 rows return at once"
    .. (#slow == 0 and "" or ": slow: " .. table.concat(slow, ", ")))
print("DONE")
EOF
MHA_PLOT_TERM=none timeout 60 "$repl" "$tmp/calls.lua" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "FAIL zero-size calls: status $rc (124: timed out) during: $(grep '^START ' "$tmp/err" | tail -1 | cut -c7-)"
fi
