-- tests/lua/test_text.lua - real text for character models: the corpora of mha.data (cleaned,
-- split), the character tokenizer (round trips on every corpus, mixed scripts, errors, code points
-- in a .npz), the text task, and a short training run on the Bible whose loss falls below the
-- unigram entropy. No NumPy needed.

local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
local T = require "testlib"
local mha = T.mha

local CORPORA = {"kjv", "tang300", "song100", "chinese"}

local function count(s, pattern)
    local _, n = s:gsub(pattern, "")
    return n
end

T.test("corpora are clean text", function()
    for _, name in ipairs(CORPORA) do
        local text = mha.data.text(name)
        T.ok(name .. ": valid UTF-8", utf8.len(text) ~= nil)
        T.ok(name .. ": no ANSI escape", not text:find("\27", 1, true))
        T.ok(name .. ": no control character but newline", not text:find("[%z\1-\9\11-\31\127]"))
        T.ok(name .. ": ends with one newline", text:sub(-1) == "\n" and text:sub(-2) ~= "\n\n")
        T.ok(name .. ": at most one empty line in a row", not text:find("\n\n\n", 1, true))
        T.ok(name .. ": no line ends or starts with a space", not text:find(" \n", 1, true)
             and not text:find("\n ", 1, true))
        T.ok(name .. ": no fortune separator", not text:find("\n%\n", 1, true))
        T.ok(name .. ": the same string a second time (read once)", mha.data.text(name) == text)
    end
    local kjv = mha.data.text("kjv")
    T.ok("kjv: no verse number or chapter header (no digit at all)", not kjv:find("%d"))
    local first = "In the beginning God created the heaven and the earth.\n"
    local last = "The grace of our Lord Jesus Christ be with you all. Amen.\n"
    T.eq("kjv: begins with Genesis 1:1", kjv:sub(1, #first), first)
    T.eq("kjv: ends with Revelation 22:21", kjv:sub(-#last), last)
    T.eq("kjv: a verse a line, an empty line between chapters: 31102 verses, 1189 chapters",
         {count(kjv, "[^\n]\n"), count(kjv, "\n\n") + 1}, {31102, 1189})
    T.ok("kjv: runs of spaces are one space", not kjv:find("  ", 1, true))
    local tang = mha.data.text("tang300")
    local opening = "《感遇・其一》\n作者：张九龄\n兰叶春葳蕤，"
    T.eq("tang300: the first poem, title, author and lines", tang:sub(1, #opening), opening)
    for _, name in ipairs({"tang300", "song100", "chinese"}) do
        local f = assert(io.open(mha.data.paths.fortunes .. name, "rb"))
        local raw = f:read("a")
        f:close()
        local separators = count(raw, "\n *%% *\n") + (raw:match("^%%\n") and 1 or 0)
        T.eq(name .. ": a piece for each fortune, an empty line between two", count(mha.data.text(name), "\n\n") + 1,
             separators + (raw:match("%%%s*$") and 0 or 1))
    end
end)

T.test("a missing package names itself and its install command", function()
    local saved = mha.data.paths
    mha.data.paths = {bible = "/nonexistent/bible", bible_data = saved.bible_data, fortunes = "/nonexistent/"}
    T.raises("data.text kjv without bible-kjv", function() return mha.data.text("kjv") end,
             {"bible-kjv", "not installed", "tools/deps.sh text", "apt-get install"})
    T.raises("data.text tang300 without fortunes-zh", function() return mha.data.text("tang300") end,
             {'"tang300" needs the Debian package fortunes-zh', "tools/deps.sh text"})
    mha.data.paths = saved
    T.raises("data.text: an unknown name lists the corpora", function() return mha.data.text("shakespeare") end,
             'no corpus "shakespeare"; the corpora are "kjv", "tang300", "song100", "chinese"')
    T.raises("data.text: a number", function() return mha.data.text(1) end, "give the name of a corpus")
end)

T.test("split", function()
    local kjv = mha.data.text("kjv")
    local train, valid = mha.data.split(kjv, {val = 0.1})
    local n = utf8.len(kjv)
    T.eq("kjv: validation is the last 10% of characters", utf8.len(valid), n // 10)
    T.ok("kjv: train .. validation is the text", train .. valid == kjv)
    local train2, valid2 = mha.data.split(kjv)
    T.ok("the default is val = 0.1, and the same every time", train2 == train and valid2 == valid)
    local text = "一二三四五六七八九十abc"   -- 13 characters: the last 2 (floor 0.2 * 13) go to validation
    local a, b = mha.data.split(text, {val = 0.2})
    T.eq("Chinese: cut on a character boundary", {a, b}, {"一二三四五六七八九十a", "bc"})
    local c, d = mha.data.split("春眠不觉晓处处闻啼鸟", {val = 0.25})
    T.eq("Chinese: both parts whole characters", {c, d}, {"春眠不觉晓处处闻", "啼鸟"})
    T.raises("split: val 0", function() return mha.data.split(kjv, {val = 0}) end,
             "option val must be a fraction between 0 and 1, got 0")
    T.raises("split: val 1", function() return mha.data.split(kjv, {val = 1}) end, "got 1")
    T.raises("split: an empty part", function() return mha.data.split("abc", {val = 0.2}) end,
             "3 characters split at val = 0.2 leave an empty part")
    T.raises("split: not a string", function() return mha.data.split(42) end, "text must be a string, got number")
    T.raises("split: an unknown option", function() return mha.data.split("abc", {valid = 0.1}) end, "valid")
end)

T.test("tokenizer round trip on the whole of every corpus", function()
    for _, name in ipairs(CORPORA) do
        local text = mha.data.text(name)
        local t0 = mha.clock()
        local tok = mha.tokenizer.CharTokenizer(text)
        local ids = tok:encode(text)
        local back = tok:decode(ids)
        local seconds = mha.clock() - t0
        T.ok(string.format("%s: decode(encode(text)) == text (%d characters, vocab %d, %.2f s)", name,
                           ids:size(1), tok.vocab_size, seconds), back == text)
        T.eq(name .. ": one id per character", ids:size(1), utf8.len(text))
    end
end)

T.test("tokenizer on mixed English, Chinese and punctuation", function()
    local text = "Hello, world! 床前明月光，疑是地上霜。\n\"Amen.\""
    local tok = mha.tokenizer.CharTokenizer(text)
    local ids = tok:encode(text)
    T.eq("decode(encode(s)) == s", tok:decode(ids), text)
    T.eq("a Chinese character is one token", tok:encode("床前"):size(1), 2)
    T.eq("ids by code point: newline first", tok.chars[1], "\n")
    local ordered = true
    for id = 2, tok.vocab_size do
        if utf8.codepoint(tok.chars[id]) <= utf8.codepoint(tok.chars[id - 1]) then ordered = false end
    end
    T.ok("ids in increasing code point order", ordered)
    local distinct = {}
    for c in text:gmatch(utf8.charpattern) do distinct[c] = true end
    local n = 0
    for _ in pairs(distinct) do n = n + 1 end
    T.eq("vocab_size counts the distinct characters", tok.vocab_size, n)
    T.eq("tok.ids and tok.chars are inverse", tok.chars[tok.ids["月"]], "月")
    T.eq("encode gives float32 whole numbers", {ids:dtype(), ids:dim()}, {"float32", 1})
    T.eq("decode takes a Lua list", tok:decode({tok.ids["光"], tok.ids["。"]}), "光。")
    T.eq("unknown = id encodes what it does not know", tok:decode(tok:encode("Hi 月!", {unknown = tok.ids[" "]})),
         "H  月!")
end)

T.test("tokenizer errors", function()
    local tok = mha.tokenizer.CharTokenizer("abc 月")
    T.raises("CharTokenizer(number)", function() return mha.tokenizer.CharTokenizer(42) end,
             "CharTokenizer: give the text whose characters it knows (a string), got number")
    T.raises("CharTokenizer(\"\")", function() return mha.tokenizer.CharTokenizer("") end,
             "CharTokenizer: the text is empty")
    T.raises("CharTokenizer(bad UTF-8)", function() return mha.tokenizer.CharTokenizer("ab\255c") end,
             "the text is not valid UTF-8 (byte 3)")
    T.raises("encode(number)", function() return tok:encode(7) end, "tokenizer.encode: give a string to encode, got number")
    T.raises("encode(\"\")", function() return tok:encode("") end, "tokenizer.encode: the string is empty")
    T.raises("encode(unknown character)", function() return tok:encode("ab日") end,
             {'character 3, "日" (U+65E5), is not one of the tokenizer\'s 5 characters', "{unknown = id}"})
    T.raises("encode unknown = 0", function() return tok:encode("x", {unknown = 0}) end,
             "option unknown must be an id 1 .. 5, got 0")
    T.raises("decode(0)", function() return tok:decode({1, 0}) end, "ids[2] = 0 is not an id 1 .. 5")
    T.raises("decode(6)", function() return tok:decode(mha.tensor({6})) end, "is not an id 1 .. 5")
    T.raises("decode(1.5)", function() return tok:decode({1.5}) end, "ids[1] = 1.5 is not an id")
    T.raises("decode((1, 2) tensor)", function() return tok:decode(mha.ones(1, 2)) end, "got shape (1,2)")
    T.raises("decode(string)", function() return tok:decode("abc") end, "give a (L) tensor or a list of ids, got string")
end)

T.test("tokenizer code points, through a .npz", function()
    local tok = mha.tokenizer.CharTokenizer("The 春 and 晓\n")
    local cp = tok:codepoints()
    T.eq("codepoints: float32 (V)", {cp:dtype(), cp:shape()}, {"float32", {tok.vocab_size}})
    T.eq("codepoints: the code points in id order", cp:totable(), {10, 32, 84, 97, 100, 101, 104, 110, 0x6625, 0x6653})
    local path = os.tmpname() .. ".npz"
    mha.save(path, {["tokenizer.codepoints"] = cp})
    local back = mha.tokenizer.from_codepoints(mha.load(path)["tokenizer.codepoints"])
    os.remove(path)
    T.eq("from_codepoints: the same characters and ids", back.chars, tok.chars)
    T.eq("from_codepoints: a Lua list too", mha.tokenizer.from_codepoints({104, 105}):decode({2, 1}), "ih")
    T.raises("from_codepoints: twice", function() return mha.tokenizer.from_codepoints({65, 65}) end,
             "code point 65 (U+0041) is there twice")
    T.raises("from_codepoints: not a code point", function() return mha.tokenizer.from_codepoints({65, -1}) end,
             "entry 2 (-1) is not a Unicode code point")
    T.raises("from_codepoints: empty", function() return mha.tokenizer.from_codepoints({}) end, "is empty")
end)

T.test("text task", function()
    local text = mha.data.text("tang300")
    local tok = mha.tokenizer.CharTokenizer(text)
    local task = mha.tasks.text{text = text, tokenizer = tok, len = 16, batch = 5, seed = 3}
    local tokens, targets = task:batch()
    T.shape("tokens (batch, len)", tokens, {5, 16})
    T.shape("targets (batch, len)", targets, {5, 16})
    T.eq("the task's vocab is the tokenizer's", {task.vocab, task.seq_len}, {tok.vocab_size, 16})
    T.ok("targets are the tokens shifted by one",
         mha.equal(tokens:narrow(2, 2, 15), targets:narrow(2, 1, 15)))
    local inside = true
    for i = 1, 5 do
        local window = tok:decode(tokens:select(1, i)) .. tok:decode(targets:select(1, i):narrow(1, 16, 1))
        if not text:find(window, 1, true) then inside = false end
    end
    T.ok("every window and the character after it are text of the corpus", inside)
    local again = mha.tasks.text{text = text, tokenizer = tok, len = 16, batch = 5, seed = 3}
    T.ok("the same seed, the same batch", mha.equal(again:batch(), tokens))
    T.ok("another seed, another batch", not mha.equal(again:reseed(4):batch(), tokens))
    T.shape("batch(n)", task:batch(2), {2, 16})
    local own = mha.tasks.text{text = "abcabcabc", len = 3, batch = 2}
    T.eq("without a tokenizer: one built from the text", own.tokenizer.vocab_size, 3)
    T.raises("text task: no text", function() return mha.tasks.text{len = 4} end, "option text must be a string")
    T.raises("text task: not a tokenizer", function() return mha.tasks.text{text = "abc", tokenizer = {}} end,
             "option tokenizer must be a tokenizer")
    T.raises("text task: too short", function() return mha.tasks.text{text = "abc", len = 3} end,
             "the text has 3 characters; windows of len 3 need at least 4")
    T.raises("text task: a character the tokenizer lacks", function()
        return mha.tasks.text{text = "abz", tokenizer = mha.tokenizer.CharTokenizer("ab"), len = 1} end, '"z"')
    T.raises("text task: an unknown option", function() return mha.tasks.text{text = "abc", vocab = 3} end, "vocab")
end)

-- The unigram entropy of text in nats: - sum_c p(c) log p(c), the loss of a model that knows only
-- how often each character comes.
local function unigram_entropy(text)
    local counts, n = {}, 0
    for c in text:gmatch(utf8.charpattern) do counts[c], n = (counts[c] or 0) + 1, n + 1 end
    local h = 0
    for _, k in pairs(counts) do h = h - k / n * math.log(k / n) end
    return h
end

T.test("a short training run on the Bible beats the unigram baseline", function()
    local kjv = mha.data.text("kjv")
    local train, valid = mha.data.split(kjv:sub(1, 300000), {val = 0.1})
    local tok = mha.tokenizer.CharTokenizer(kjv)
    local baseline = unigram_entropy(train)
    mha.manual_seed(1)
    local model = mha.nn.Transformer{vocab = tok.vocab_size, d_model = 32, heads = 2, layers = 1, d_ff = 64,
                                     max_len = 32}
    local task = mha.tasks.text{text = train, tokenizer = tok, len = 32, batch = 16, seed = 1}
    local history = mha.train{model = model, task = task, steps = 150, lr = 1e-2, val = valid, val_every = 50,
                              log_every = 50, quiet = true}
    local last = history.val_loss[#history.val_loss]
    T.eq("validation every 50 steps and at the last", history.val_step, {50, 100, 150})
    T.ok(string.format("validation loss %.3f < unigram entropy %.3f nats", last, baseline), last < baseline)
    T.ok(string.format("training loss %.3f < unigram entropy", history.loss[#history.loss]),
         history.loss[#history.loss] < baseline)
    local again = mha.train{model = model, task = task, steps = 2, val_every = 2, val = mha.tasks.text{text = valid, tokenizer = tok,
                            len = 32, batch = 4}, quiet = true}
    T.eq("val may be a task", #again.val_loss, 1)
    local toy = mha.tasks.reverse{vocab = 10, len = 4}
    local small = mha.nn.Transformer{vocab = 10, d_model = 8, heads = 2, layers = 1, max_len = 8}
    T.raises("val as text needs a text task", function()
        return mha.train{model = small, task = toy, steps = 1, val = "abc", quiet = true} end,
             "option val is a text but the task is not mha.tasks.text")
    T.raises("val_every must be positive", function()
        return mha.train{model = small, task = toy, steps = 1, val = toy, val_every = 0, quiet = true} end,
             "option val_every must be a positive integer, got 0")
    T.raises("val must be another task than task", function()
        return mha.train{model = small, task = toy, steps = 1, val = toy, quiet = true} end,
             "option val must be another task than task")
    T.raises("val must be a task or a text", function()
        return mha.train{model = small, task = toy, steps = 1, val = 3, quiet = true} end,
             "option val must be a task or a text")
end)

T.done()
