#!/usr/bin/env bash
# tests/sh/test_nn_torch.sh - a checkpoint moves both ways between mha-repl and PyTorch, as docs/training.md shows:
# mha.save("m.npz", b:state_dict()) of a composite (MultiheadAttention, LayerNorm, a ModuleList of Linear);
# torch 1.13 loads it with m.load_state_dict({k: torch.from_numpy(v) for k, v in np.load("m.npz").items()})
# into the same structure and gives the same output; torch takes an SGD step and writes it back with np.savez;
# mha loads that and gives torch's new output. Needs Debian's /usr/bin/python3 with torch (python3-torch);
# skipped with a message when it is absent.
set -u
cd "$(dirname "$0")/../.." || exit 2
repl=${MHA_REPL:?MHA_REPL must name the mha-repl binary}
py=/usr/bin/python3
if ! "$py" -c "import torch, numpy" >/dev/null 2>&1; then
    echo "SKIP nn_torch: $py with torch and numpy is not installed (Debian packages python3-torch, python3-numpy)"
    exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# the same composite on both sides
block_lua='
local Block = mha.nn.Module:extend("Block")
function Block:init(E)
    self.attn = mha.MultiheadAttention{embed_dim = E, num_heads = 2}
    self.norm = mha.nn.LayerNorm{normalized_shape = E}
    self.layers = mha.nn.ModuleList{mha.nn.Linear{in_features = E, out_features = E},
                                    mha.nn.Linear{in_features = E, out_features = E}}
end
function Block:forward(x)
    local y = self.norm(x + self.attn(x, x, x, {need_weights = false}))
    for _, layer in ipairs(self.layers) do y = layer(y):relu() end
    return y
end
'
"$repl" -e "$block_lua
mha.seed(11)
local b = Block(4)
local x = mha.randn(5, 4)
mha.save('$dir/m.npz', b:state_dict())
mha.save('$dir/io.npz', {x = x, out = b(x)})
" || { echo "FAIL nn_torch: mha-repl could not write the checkpoint"; exit 1; }

out=$("$py" - "$dir" <<'PY' 2>&1
import sys
import numpy as np
import torch
from torch import nn
d = sys.argv[1]

class Block(nn.Module):
    def __init__(self, E):
        super().__init__()
        self.attn = nn.MultiheadAttention(E, 2, batch_first=True)
        self.norm = nn.LayerNorm(E)
        self.layers = nn.ModuleList([nn.Linear(E, E), nn.Linear(E, E)])

    def forward(self, x):
        y = self.norm(x + self.attn(x, x, x, need_weights=False)[0])
        for layer in self.layers:
            y = torch.relu(layer(y))
        return y

m = Block(4)
m.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(d + "/m.npz").items()})   # strict: every key
io = np.load(d + "/io.npz")
x = torch.from_numpy(io["x"])
np.testing.assert_allclose(m(x).detach().numpy(), io["out"], rtol=1e-5, atol=1e-6)
opt = torch.optim.SGD(m.parameters(), lr=0.5)
m(x).pow(2).mean().backward()
opt.step()
np.savez(d + "/back.npz", **{k: v.detach().numpy() for k, v in m.state_dict().items()})
np.save(d + "/out2.npy", m(x).detach().numpy())
print("ok")
PY
)
if [ "$out" != ok ]; then
    echo "FAIL nn_torch: torch could not load mha's checkpoint or gave another output: $(printf '%s' "$out" | tail -4 | tr '\n' ' ')"
    exit 1
fi
echo "PASS nn_torch torch loads mha's state_dict from .npz and gives mha's output"

back=$("$repl" -e "$block_lua
local b = Block(4)
b:load_state_dict(mha.load('$dir/back.npz'))
local io = mha.load('$dir/io.npz')
local got, want = b(io.x), mha.load('$dir/out2.npy')
local worst = ((got - want):abs() - (want:abs() * 1e-5 + 1e-6)):max():item()
print(worst <= 0 and 'ok' or ('differs by ' .. worst))
" 2>&1)
if [ "$back" = ok ]; then
    echo "PASS nn_torch mha loads torch's np.savez checkpoint and gives torch's output"
else
    echo "FAIL nn_torch: back in mha: $(printf '%s' "$back" | tail -3 | tr '\n' ' ')"
    exit 1
fi
