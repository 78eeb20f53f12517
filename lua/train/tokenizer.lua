-- lua/train/tokenizer.lua - module "mha.tokenizer": a character tokenizer, one token per Unicode
-- character (a Chinese character is one token), ids 1 .. vocab_size in code point order.
--
--   tok = mha.tokenizer.CharTokenizer(text)  the characters of text sorted by code point: id 1 is
--                                            the smallest ("\n" before " " before "A" before a
--                                            Chinese character)
--   tok:encode(str [, {unknown = id}])  -> (L) float32 tensor of ids (whole numbers, as the tasks'
--                                          tokens)
--   tok:decode(ids)                     -> the string: ids a (L) tensor or a Lua list
--   tok.vocab_size, tok.chars[id] (the character), tok.ids[char] (its id)
--   tok:codepoints()                    -> (V) float32 tensor of the code points in id order,
--                                          what a model's .npz keeps as "tokenizer.codepoints"
--                                          (mha's tensors are float32 or bool; float32 holds every
--                                          code point, all below 2^24, exactly)
--   mha.tokenizer.from_codepoints(cp)   -> the same tokenizer again, from that tensor or a Lua list
--   CharTokenizer(text, {mask = "[MASK]"}), from_codepoints(cp, {mask = "[MASK]"}): one more id,
--                                          vocab_size (the last), for a mask marker, the string
--                                          tok.mask_token with id tok.mask_id; encode reads the
--                                          marker inside a string as that one token
--                                          ("beg[MASK]n" is 5 ids), decode writes it back.
--                                          Without the option there is no marker (mask_id nil),
--                                          so a causal model's ids stay as they are.
-- The module is mha.tokenizer, not mha.text: "mha.text" is the REPL's text wrapping
-- (lua/show/text.lua).

local raise = require "mha.raise"   -- errors at the user's line
local options = require "mha.options"
local M = {}

local CharTokenizer = {}
CharTokenizer.__index = CharTokenizer
CharTokenizer.__name = "mha.tokenizer.CharTokenizer"

local SHOWN = 12   -- how many characters tostring(tok) lists

function CharTokenizer:__tostring()
    local shown = {}
    for id = 1, math.min(self.mask_id and self.vocab_size - 1 or self.vocab_size, SHOWN) do
        shown[id] = string.format("%q", self.chars[id]):gsub("\\\n", "\\n")
    end
    local n = self.mask_id and self.vocab_size - 1 or self.vocab_size
    local marker = self.mask_id and
                   string.format(", mask %q = id %d", self.mask_token, self.mask_id) or ""
    return string.format("mha.tokenizer.CharTokenizer: %d characters, ids 1 .. %d by code point " ..
                         "(%s%s)%s", n, n, table.concat(shown, " "), n > SHOWN and " ..." or "",
                         marker)
end

-- The option mask checked: nil, or the marker (a non-empty string that is not one of the
-- characters, so encode can tell the two apart).
local function mask_marker(fname, opts, ids)
    opts = opts or {}
    if type(opts) ~= "table" then
        raise(fname .. ': options must be a table, e.g. {mask = "[MASK]"}, got ' .. type(opts))
    end
    options.check(fname, opts, {"mask"})
    local mask = opts.mask
    if mask == nil then return nil end
    if type(mask) ~= "string" or mask == "" or not utf8.len(mask) then
        raise(string.format('%s: option mask must be a non-empty UTF-8 string, e.g. "[MASK]", ' ..
                            'got %s', fname, tostring(mask)))
    end
    if ids[mask] then
        raise(string.format("%s: option mask %q is one of the text's characters; choose a " ..
                            'marker the text does not use, e.g. "[MASK]"', fname, mask))
    end
    return mask
end

-- A tokenizer over a list of distinct code points: id i is codepoints[i]; the mask marker, if
-- any, takes the id after them.
local function build(fname, codepoints, opts)
    local tok = setmetatable({chars = {}, ids = {}, vocab_size = #codepoints}, CharTokenizer)
    for id, cp in ipairs(codepoints) do
        local char = utf8.char(cp)
        if tok.ids[char] then
            raise(string.format("%s: code point %d (U+%04X) is there twice", fname, cp, cp))
        end
        tok.chars[id], tok.ids[char] = char, id
    end
    local mask = mask_marker(fname, opts, tok.ids)
    if mask then
        tok.vocab_size = #codepoints + 1
        tok.mask_token, tok.mask_id = mask, tok.vocab_size
        tok.chars[tok.mask_id] = mask
    end
    return tok
end

-- The text's first byte that is not UTF-8, for an error that says where.
local function bad_utf8(fname, text)
    local _, at = utf8.len(text)
    raise(string.format("%s: the text is not valid UTF-8 (byte %d)", fname, at))
end

-- mha.tokenizer.CharTokenizer(text [, {mask =}]): every character of text gets an id, by code
-- point; a mask marker the id after them.
function M.CharTokenizer(text, opts)
    local fname = "CharTokenizer"
    if type(text) ~= "string" then
        raise(string.format("%s: give the text whose characters it knows (a string), got %s", fname,
                            type(text)))
    end
    if text == "" then raise(fname .. ": the text is empty; it needs at least one character") end
    if not utf8.len(text) then bad_utf8(fname, text) end
    local seen, codepoints = {}, {}
    for char in text:gmatch(utf8.charpattern) do
        if not seen[char] then
            seen[char] = true
            codepoints[#codepoints + 1] = utf8.codepoint(char)
        end
    end
    table.sort(codepoints)
    return build(fname, codepoints, opts)
end

-- mha.tokenizer.from_codepoints(cp [, {mask =}]): the tokenizer whose id i is the character of
-- code point cp[i] (and the marker's id #cp + 1).
function M.from_codepoints(cp, opts)
    local fname = "tokenizer.from_codepoints"
    local mha = require "mha.core"
    local list = cp
    if mha.is_tensor(cp) then
        if cp:dim() ~= 1 then
            raise(string.format("%s: the code points must be a 1-D (V) tensor, got shape (%s)",
                                fname, table.concat(cp:shape(), ",")))
        end
        list = cp:totable()
    elseif type(cp) ~= "table" then
        raise(fname .. ": give a (V) tensor or a list of code points, e.g. tok:codepoints(), " ..
              "got " .. type(cp))
    end
    if #list == 0 then raise(fname .. ": the list of code points is empty") end
    local whole = {}
    for i, v in ipairs(list) do
        local c = math.tointeger(v)
        if not c or c < 0 or c > 0x10FFFF or (c >= 0xD800 and c <= 0xDFFF) then
            raise(string.format("%s: entry %d (%s) is not a Unicode code point", fname, i,
                                tostring(v)))
        end
        whole[i] = c
    end
    return build(fname, whole, opts)
end

-- tok:codepoints() -> (V) float32 tensor: the code point of each id, in id order (the characters'
-- ids only: a mask marker is kept apart, by tok:marker_codepoints()).
function CharTokenizer:codepoints()
    local cps = {}
    for id, char in ipairs(self.chars) do
        if id ~= self.mask_id then cps[id] = utf8.codepoint(char) end
    end
    return require("mha.core").tensor(cps)
end

-- tok:marker_codepoints() -> the mask marker's code points as a float32 tensor, or nil without one.
function CharTokenizer:marker_codepoints()
    if not self.mask_token then return nil end
    local cps = {}
    for _, cp in utf8.codes(self.mask_token) do cps[#cps + 1] = cp end
    return require("mha.core").tensor(cps)
end

local CHUNK = 1 << 20   -- ids per Lua list before it becomes a tensor (a long text stays small)

-- The option unknown of encode checked: nil or an id.
local function unknown_id(fname, tok, opts)
    opts = opts or {}
    if type(opts) ~= "table" then
        raise(fname .. ": options must be a table, e.g. {unknown = 1}")
    end
    options.check(fname, opts, {"unknown"})
    local unknown = opts.unknown
    local V = tok.vocab_size
    if unknown ~= nil and (math.type(unknown) ~= "integer" or unknown < 1 or unknown > V) then
        raise(string.format("%s: option unknown must be an id 1 .. %d, got %s", fname, V,
                            tostring(unknown)))
    end
    return unknown
end

-- tok:encode(str [, {unknown = id}]) -> (L) tensor of ids; a character the tokenizer does not know
-- is an error, or the id given as unknown.
function CharTokenizer:encode(str, opts)
    local fname = "tokenizer.encode"
    local mha = require "mha.core"
    if type(str) ~= "string" then
        raise(string.format("%s: give a string to encode, got %s", fname, type(str)))
    end
    if str == "" then raise(fname .. ": the string is empty; there is nothing to encode") end
    local unknown = unknown_id(fname, self, opts)
    if not utf8.len(str) then bad_utf8(fname, str) end
    local ids, parts, list, n, at = self.ids, {}, {}, 0, 0
    local function add(id)
        n = n + 1
        list[n] = id
        if n == CHUNK then
            parts[#parts + 1] = mha.tensor(list)
            list, n = {}, 0
        end
    end
    local function add_chars(piece)
        for char in piece:gmatch(utf8.charpattern) do
            at = at + 1
            local id = ids[char] or unknown
            if not id then
                raise(string.format("%s: character %d, %q (U+%04X), is not one of the " ..
                                    "tokenizer's %d characters; give {unknown = id} to encode " ..
                                    "it as that id", fname, at, char, utf8.codepoint(char),
                                    self.mask_id and self.vocab_size - 1 or self.vocab_size))
            end
            add(id)
        end
    end
    local marker, from = self.mask_token, 1
    while marker do   -- the pieces between markers, each marker one id
        local a, b = str:find(marker, from, true)
        if not a then break end
        add_chars(str:sub(from, a - 1))
        at = at + 1
        add(self.mask_id)
        from = b + 1
    end
    add_chars(from == 1 and str or str:sub(from))
    if n > 0 then parts[#parts + 1] = mha.tensor(list) end
    return #parts == 1 and parts[1] or mha.cat(parts, 1)
end

-- tok:decode(ids) -> the string of the ids: a (L) tensor or a Lua list of whole numbers
-- 1 .. vocab_size.
function CharTokenizer:decode(ids)
    local fname = "tokenizer.decode"
    local mha = require "mha.core"
    local list = ids
    if mha.is_tensor(ids) then
        if ids:dim() ~= 1 then
            raise(string.format("%s: ids must be a 1-D (L) tensor, got shape (%s); decode one " ..
                                "row at a time", fname, table.concat(ids:shape(), ",")))
        end
        list = ids:totable()
    elseif type(ids) ~= "table" then
        raise(string.format("%s: give a (L) tensor or a list of ids, got %s", fname, type(ids)))
    end
    local chars, out = self.chars, {}
    for i, v in ipairs(list) do
        local char = chars[v]
        if not char then
            raise(string.format("%s: ids[%d] = %s is not an id 1 .. %d", fname, i, tostring(v),
                                self.vocab_size))
        end
        out[i] = char
    end
    return table.concat(out)
end

-- mha.tokenizer.is_tokenizer(x) -> whether x is a CharTokenizer.
function M.is_tokenizer(x) return getmetatable(x) == CharTokenizer end

return M
