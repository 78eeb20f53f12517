#!/usr/bin/env bash
# tests/sh/test_npz_numpy.sh - NumPy reads the archives mha.save writes: np.load of a stored and a compressed
# .npz gives every member with its dtype, shape and exact values, and zipfile finds every CRC right.
# Needs Debian's /usr/bin/python3 with python3-numpy; skipped with a message when it is absent.
set -u
cd "$(dirname "$0")/../.." || exit 2
repl=${MHA_REPL:?MHA_REPL must name the mha-repl binary}
py=/usr/bin/python3
if ! "$py" -c "import numpy" >/dev/null 2>&1; then
    echo "SKIP npz_numpy: $py with numpy is not installed (Debian package python3-numpy)"
    exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# The same tensors, each also as its own .npy (whose bytes test_npy.c holds equal to np.save's).
"$repl" -e "
local sd = {['layers.0.attn.out_proj.weight'] = mha.arange(12):view(3, 4) / 7, mask = mha.tensor{{true, false}},
            step = 3, bias = mha.tensor{-0.0, 1e-30, -2.5}, empty = mha.zeros(0, 2)}
mha.save('$dir/s.npz', sd)
mha.save('$dir/c.npz', sd, {compressed = true})
for k, v in pairs(sd) do mha.save('$dir/' .. k .. '.npy', v) end
" || { echo "FAIL npz_numpy: mha-repl could not write the archives"; exit 1; }

out=$("$py" - "$dir" <<'PY' 2>&1
import sys, zipfile
import numpy as np
d = sys.argv[1]
want_keys = ["bias", "empty", "layers.0.attn.out_proj.weight", "mask", "step"]
for name in ["s", "c"]:
    path = "%s/%s.npz" % (d, name)
    assert zipfile.ZipFile(path).testzip() is None, "bad CRC in " + path
    z = np.load(path)
    assert sorted(z.files) == want_keys, z.files
    for k in z.files:
        ref = np.load("%s/%s.npy" % (d, k))
        got = z[k]
        assert got.dtype == ref.dtype and got.shape == ref.shape, (k, got.dtype, got.shape)
        assert got.tobytes() == ref.tobytes(), k
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / np.float32(7)
    assert np.array_equal(z["layers.0.attn.out_proj.weight"], w)
    assert z["mask"].dtype == np.bool_ and z["mask"].tolist() == [[True, False]]
    assert z["step"].shape == () and z["step"] == 3
    assert np.signbit(z["bias"][0]) and z["bias"][1] == np.float32(1e-30)
    assert z["empty"].shape == (0, 2)
    info = zipfile.ZipFile(path).infolist()[0]
    assert info.compress_type == (zipfile.ZIP_DEFLATED if name == "c" else zipfile.ZIP_STORED), info.compress_type
print("ok")
PY
)
if [ "$out" = ok ]; then
    echo "PASS npz_numpy np.load reads stored and compressed archives of mha.save exactly"
else
    echo "FAIL npz_numpy: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
    exit 1
fi
