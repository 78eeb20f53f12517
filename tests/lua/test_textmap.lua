-- tests/lua/test_textmap.lua - attention maps on text (mha.textmap: labels, the window option of heat,
-- plot.heatmap/heads and show_attention) and mha.train's checkpoint and resume.
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha
local textmap = require "mha.textmap"

-- What fn prints, as one string (io.write captured).
local function printed(fn)
    local out, write = {}, io.write
    io.write = function(...) for _, s in ipairs({...}) do out[#out + 1] = tostring(s) end end
    local ok, err = pcall(fn)
    io.write = write
    if not ok then error(err, 0) end
    return table.concat(out)
end

T.test("labels: one per character, space and line end visible", function()
    T.eq("english", textmap.labels("a b\nc"), {"a", "␣", "b", "↵", "c"})
    T.eq("chinese: one label per character", textmap.labels("床前\n明月"), {"床", "前", "↵", "明", "月"})
    T.eq("a list keeps its labels", textmap.labels({"ab", " ", "\t"}), {"ab", "␣", "⇥"})
    T.raises("a number", function() textmap.labels(5) end, "tokens must be a string or a list of labels")
end)

T.test("the window ends at at, moved inside 1 .. n", function()
    T.eq("at 30, window 24", {textmap.range("f", 64, {at = 30, window = 24})}, {7, 24})
    T.eq("near the start", {textmap.range("f", 64, {at = 5, window = 24})}, {1, 24})
    T.eq("window alone ends at the last", {textmap.range("f", 64, {window = 8})}, {57, 8})
    T.eq("at alone takes 24", {textmap.range("f", 64, {at = 64})}, {41, 24})
    T.eq("a window longer than the sequence", {textmap.range("f", 10, {window = 24})}, {1, 10})
    T.eq("no window", textmap.range("f", 10, {}), nil)
    T.raises("at past the end", function() textmap.range("heat", 10, {at = 11}) end,
             "heat: at must be a position 1..10 (the sequence has 10), got 11")
    T.raises("window 0", function() textmap.range("heat", 10, {window = 0}) end,
             "heat: window must be a positive whole number of positions, got 0")
end)

T.test("heat with at/window shows the window's cells and labels", function()
    local w = mha.arange(1, 101):view(10, 10)   -- w[i][j] = 10 (i-1) + j
    local text = printed(function()
        mha.heat(w, {rows = "abcdefghij", cols = "abcdefghij", at = 6, window = 3, values = 0})
    end)
    local lines = {}
    for line in text:gmatch("[^\n]+") do lines[#lines + 1] = line end
    T.eq("the column labels: d e f", lines[1]:gsub("%s+", " "), " d e f")
    T.ok("row d holds 34 35 36", lines[2]:find("^d .*34 .*35 .*36") ~= nil, lines[2])
    T.ok("row f holds 54 55 56", lines[4]:find("^f .*54 .*55 .*56") ~= nil, lines[4])
    T.ok("the note names the window", text:find("(positions 4-6 of 10 shown)", 1, true) ~= nil, text)
end)

T.test("show_attention: one head of a model's maps over a text", function()
    mha.seed(1)
    local m = mha.nn.Transformer{vocab = 6, d_model = 8, heads = 2, layers = 2, d_ff = 16, max_len = 40}
    local tokens = mha.tensor({{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6,
                                1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}})
    mha.no_grad(function() m:forward(tokens) end)
    local maps = m:attention()
    local text = ("ab cd\n"):rep(6)
    local out = printed(function() mha.show_attention(maps, text, {layer = 2, head = 2, at = 12, window = 6}) end)
    T.ok("the title names the head and the window",
         out:find("head 2: rows = queries, columns = keys  positions 7-12 of 36", 1, true) ~= nil, out)
    T.ok("the column labels are the window's characters, visible",
         out:find("\n  a  b  ␣  c  d  ↵\n", 1, true) ~= nil, out)
    local long = printed(function() mha.show_attention(maps[1], text, {head = 1}) end)
    T.ok("36 positions show the last 24", long:find("positions 13-36 of 36", 1, true) ~= nil, long)
    T.raises("as many characters as positions", function() mha.show_attention(maps, "abc") end,
             "mha.show_attention: text has 3 characters, for weights over 36 positions")
    T.raises("a head that is not there", function() mha.show_attention(maps, text, {head = 3}) end,
             "mha.show_attention: head must be 1..2, got 3")
    T.raises("a layer that is not there", function() mha.show_attention(maps, text, {layer = 3}) end,
             "mha.show_attention: layer must be 1..2 (the model's layers), got 3")
end)

T.test("plot.heads and plot.heatmap draw the window, labels quoted for gnuplot", function()
    local plot = require "mha.plot"
    local w = mha.softmax(mha.randn(2, 6, 6), 3)
    printed(function() plot.heads(w, {tokens = textmap.labels("ab \"d\n"), at = 4, window = 3}) end)
    local commands = table.concat(plot.current().script.commands, "\n")
    T.ok("the key axis: b, the space and the quote (as \\042)",
         commands:find('set xtics ("b" 1, "␣" 2, "\\042" 3)', 1, true) ~= nil, commands)
    T.ok("the query axis too", commands:find('set ytics ("b" 1, "␣" 2, "\\042" 3)', 1, true) ~= nil, commands)
    printed(function() plot.heatmap(w[1], {tokens = textmap.labels("ab \"d\n"), window = 2}) end)
    commands = table.concat(plot.current().script.commands, "\n")
    T.ok("a window of 2 at the end: d and the line end", commands:find('set xtics ("d" 1, "↵" 2)', 1, true) ~= nil,
         commands)
end)

T.test("train: a checkpoint, and a run resumed from it", function()
    local path = os.tmpname() .. ".npz"
    local function fresh()
        mha.seed(7)
        return mha.nn.Transformer{vocab = 8, d_model = 16, heads = 2, layers = 1, d_ff = 0, max_len = 12}
    end
    local task = mha.tasks.reverse{vocab = 8, len = 6, seed = 1}
    local m = fresh()
    local h = mha.train{model = m, task = task, steps = 6, lr = 1e-2, quiet = true, checkpoint = path,
                        checkpoint_every = 3, seed = 1}
    T.eq("6 steps done", h.steps, 6)
    local saved = mha.load_model(path)
    T.close("the checkpoint holds the model's weights", saved:state_dict()["embed.weight"],
            m:state_dict()["embed.weight"], 0, 0)
    local function resumed()
        local r = fresh()
        local hr = mha.train{model = r, task = task, steps = 10, lr = 1e-2, quiet = true, resume = path,
                             log_every = 2, seed = 1}
        return r, hr
    end
    local r1, h1 = resumed()
    local r2 = resumed()
    T.eq("the resumed run reaches step 10", h1.steps, 10)
    T.eq("its history goes on from the checkpoint's", h1.step, {1, 2, 3, 4, 5, 6, 8, 10})
    T.close("a resumed run is repeatable", r1:state_dict()["embed.weight"], r2:state_dict()["embed.weight"], 0, 0)
    T.raises("resume past the end", function()
        mha.train{model = fresh(), task = task, steps = 6, quiet = true, resume = path}
    end, "train: resume: the checkpoint has reached step 6 already; give steps > 6")
    local text = ("abc de\n"):rep(20)
    local tok = mha.tokenizer.CharTokenizer(text)
    local tt = mha.tasks.text{text = text, tokenizer = tok, len = 8, batch = 4, seed = 2}
    local function small()
        mha.seed(3)
        return mha.nn.Transformer{vocab = tok.vocab_size, d_model = 8, heads = 2, layers = 1, max_len = 8}
    end
    mha.train{model = small(), task = tt, steps = 4, quiet = true, val = text, val_every = 2, checkpoint = path}
    local mine, extra = mha.load_model(path)
    T.eq("a text task's checkpoint loads with its tokenizer", extra.tokenizer.chars, tok.chars)
    T.eq("and as a model of its shape", mine.d_model, 8)
    local hv = mha.train{model = small(), task = tt, steps = 6, quiet = true, val = text, val_every = 2,
                         resume = path}
    T.eq("the validation curve goes on", hv.val_step, {2, 4, 6})
    os.remove(path)
end)

T.done()
