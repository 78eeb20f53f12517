-- docs/make_images.lua - makes the README's pictures with mha-repl itself:
--     build/mha-repl docs/make_images.lua        (writes docs/heads.png)
-- Four heads of a seeded, untrained MultiheadAttention looking at one short sentence: even before any
-- training each head has its own pattern, which is the point the picture makes.
mha.seed(2024)
local tokens = { "the", "cat", "sat", "on", "the", "mat" }
local L, E, H = #tokens, 32, 4
local layer = mha.MultiheadAttention { embed_dim = E, num_heads = H }
-- token embeddings: one random vector per distinct word (so both "the" agree), plus positions
local vectors, rows = {}, {}
for i, word in ipairs(tokens) do
    vectors[word] = vectors[word] or mha.randn(E) * 1.5
    rows[i] = vectors[word]
end
local x = (mha.stack(rows, 1) + mha.positional_encoding(L, E)):unsqueeze(1)   -- (1,L,E)
local _, weights = layer:forward(x, x, x, { average_attn_weights = false })     -- (1,H,L,L)
plot.terminal("none")
plot.heads(weights:select(1, 1), { tokens = tokens, title = "Self-attention weights, 4 heads (untrained, seed 2024)" })
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
print(plot.save(here .. "heads.png"))
