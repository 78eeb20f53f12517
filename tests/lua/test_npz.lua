-- tests/lua/test_npz.lua - checkpoints through the bindings: mha.save of a name -> tensor table to .npz and
-- mha.load back (stored and compressed), np.savez's own archives (tests/fixtures/npz, made by
-- tests/fixtures/gen/gen_npz_fixtures.py), the dispatch between .npy and .npz, and the errors it gives.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local tmpdir = os.tmpname()
os.remove(tmpdir)
assert(os.execute("mkdir -p '" .. tmpdir .. "'"))
local function tmp(name) return tmpdir .. "/" .. name end

T.test("round trips", function()
    mha.seed(3)
    local sd = {weight = mha.randn(3, 4), ["out_proj.bias"] = mha.randn(4), mask = mha.tensor{true, false},
                step = 7, table = {{1, 2}, {3, 4}}, view = mha.randn(4, 3):T()}
    for _, compressed in ipairs{false, true} do
        local path = tmp(compressed and "c.npz" or "s.npz")
        mha.save(path, sd, {compressed = compressed})
        local back = mha.load(path)
        local names = {}
        for k in pairs(back) do names[#names + 1] = k end
        table.sort(names)
        local tag = compressed and " (compressed)" or ""
        T.eq("names in sorted order" .. tag, names, {"mask", "out_proj.bias", "step", "table", "view", "weight"})
        T.ok("float tensor equal" .. tag, back.weight == sd.weight)
        T.ok("dotted name" .. tag, back["out_proj.bias"] == sd["out_proj.bias"])
        T.ok("bool tensor" .. tag, back.mask == sd.mask)
        T.ok("number saved as a scalar" .. tag, back.step == mha.tensor(7) and back.step:dim() == 0)
        T.ok("nested table converted" .. tag, back.table == mha.tensor{{1, 2}, {3, 4}})
        T.ok("view saved in C order" .. tag, back.view == sd.view and back.view:is_contiguous())
    end
    mha.save(tmp("list.npz"), {mha.ones(2), mha.zeros(3)})
    local list = mha.load(tmp("list.npz"))
    T.ok("a list is saved as arr_0, arr_1 (as np.savez)", list.arr_0 == mha.ones(2) and list.arr_2 == nil)
    T.ok("arr_1 holds the second tensor", list.arr_1 == mha.zeros(3))
    mha.save(tmp("one.npz"), mha.eye(2))
    T.ok("a single tensor is arr_0", mha.load(tmp("one.npz")).arr_0 == mha.eye(2))
    mha.save(tmp("empty.npz"), {})
    local empty = mha.load(tmp("empty.npz"))
    T.ok("an empty table round-trips", next(empty) == nil)
end)

T.test("the .npy path is unchanged", function()
    local x = mha.randn(2, 2)
    mha.save(tmp("x.npy"), x)
    T.ok("a tensor to .npy loads as a tensor", mha.is_tensor(mha.load(tmp("x.npy"))) and mha.load(tmp("x.npy")) == x)
    os.rename(tmp("c.npz"), tmp("renamed.bin"))
    T.ok("load dispatches on the zip magic, not the name", type(mha.load(tmp("renamed.bin"))) == "table")
end)

T.test("NumPy's archives", function()
    for _, name in ipairs{"savez", "savez_compressed", "streamed"} do
        local sd = mha.load(T.path("tests/fixtures/npz/" .. name .. ".npz"))
        local names = {}
        for k in pairs(sd) do names[#names + 1] = k end
        table.sort(names)
        T.eq(name .. ": every member", names,
             {"big", "empty", "f64", "fortran", "i64", "layers.0.attn.out_proj.bias", "mask", "scalar", "weight"})
        T.ok(name .. ": int64 read as float", sd.i64 == mha.tensor{{-3, -2, -1}, {0, 1, 2}})
        T.ok(name .. ": Fortran order read in C order", sd.fortran == mha.arange(6):view(2, 3))
        T.ok(name .. ": bool", sd.mask == mha.tensor{{true, false}, {false, true}})
        T.shape(name .. ": empty (0,3)", sd.empty, {0, 3})
    end
end)

T.test("errors", function()
    local x = mha.ones(2)
    T.raises("a named table to .npy", function() mha.save(tmp("m.npy"), {w = x}) end,
             {"save: '" .. tmp("m.npy") .. "': a table of named tensors is saved as a .npz archive", "mha.save(\"m.npz\", t)"})
    T.raises("a name given twice", function() mha.save(tmp("d.npz"), {x, arr_0 = x}) end,
             "the name 'arr_0' is given twice")
    T.raises("a bad key", function() mha.save(tmp("k.npz"), {[true] = x}) end,
             "the table has the key true; a .npz holds tensors by name")
    T.raises("an empty name", function() mha.save(tmp("e.npz"), {[""] = x}) end, "a tensor name must be a non-empty string")
    T.raises("unknown option", function() mha.save(tmp("o.npz"), {w = x}, {compress = true}) end,
             "save: unknown option 'compress' (did you mean 'compressed'?); valid options: compressed")
    T.raises("a ragged member names itself", function() mha.save(tmp("r.npz"), {w = {{1, 2}, {3}}}) end, "member 'w'")
    T.raises("a module, not its state", function() mha.save(tmp("m.npz"), mha.nn.Linear{in_features = 1, out_features = 1}) end,
             "save: '" .. tmp("m.npz") .. "': save the module's state: mha.save(\"" .. tmp("m.npz") .. "\", m:state_dict())")
    T.raises("a MultiheadAttention, not its state", function()
        mha.save(tmp("m.npz"), mha.MultiheadAttention{embed_dim = 2, num_heads = 1}) end, "m:state_dict()")
    T.raises("not a table", function() mha.save(tmp("s.npz"), "text") end, "a .npz archive holds a table name -> tensor")
    T.raises("bad CRC names file and member", function() mha.load(T.path("tests/fixtures/npz/bad_crc.npz")) end,
             {"load: '", "bad_crc.npz': member 'a.npy': CRC-32 is"})
    T.raises("missing directory", function() mha.save("/no/such/dir/m.npz", {w = x}) end,
             "save: cannot open '/no/such/dir/m.npz' for writing")
end)

-- 65,000 members (np.savez of a big model's parameters, one array per name): the duplicate-name check
-- is n log n, so the archive loads in well under a second (it took 87 s when each name was compared with
-- every earlier one); an archive whose two members share a name among them is still refused.
T.test("an archive of 65,000 members", function()
    local many, one = {}, mha.ones(2)
    for i = 1, 65000 do many[string.format("p%05d", i)] = one end
    local path = tmp("many.npz")
    local t0 = os.clock()
    mha.save(path, many)
    local saved = os.clock() - t0
    t0 = os.clock()
    local back = mha.load(path)
    local loaded = os.clock() - t0
    local count = 0
    for _ in pairs(back) do count = count + 1 end
    T.eq("all 65,000 members load", count, 65000)
    T.ok("a member holds its values", back.p65000 == one and back.p00001 == one)
    T.ok("saved in under 3 s of CPU", saved < 3, string.format("%.2f s", saved))
    T.ok("loaded in under 3 s of CPU", loaded < 3, string.format("%.2f s", loaded))
    -- the same archive with member p65000.npy renamed p00007.npy in both of its headers
    local f = assert(io.open(path, "rb"))
    local bytes = f:read("a")
    f:close()
    local renamed, n = bytes:gsub("p65000%.npy", "p00007.npy")
    T.eq("both headers of the last member renamed", n, 2)
    local dup_path = tmp("many_dup.npz")
    f = assert(io.open(dup_path, "wb"))
    f:write(renamed)
    f:close()
    t0 = os.clock()
    T.raises("a repeated name among 65,000 is refused", function() mha.load(dup_path) end,
             "two members are named 'p00007.npy' (np.load would keep only one)")
    T.ok("and refused in under 3 s of CPU", os.clock() - t0 < 3, string.format("%.2f s", os.clock() - t0))
end)

os.execute("rm -rf '" .. tmpdir .. "'")
T.done()
