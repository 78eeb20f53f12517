-- lua/train/models.lua - module "mha.models": trained models as .npz checkpoints that carry their
-- own shape: mha.save_model(path, model) and mha.load_model("induction" | "reverse" | path) for the
-- models `make models` trains (models/NAME.npz, written by tools/train_models.lua from a fixed
-- seed).
--
-- A checkpoint holds the model's state_dict under PyTorch's keys plus its options as one-element
-- tensors "config.vocab", "config.d_model", ..., with norm as 1 pre, 2 post, 3 none and pos as 1
-- learned, 2 sinusoidal, 3 rope, 4 alibi, 5 none. The options of language models today are saved
-- only when a model has them (config.kv_heads, config.window, config.sinks, config.rope_layout as 1
-- half, 2 interleaved, config.rope_base), so the checkpoints of older models keep their exact
-- bytes. A character model keeps its tokenizer as "tokenizer.codepoints" (V), the code point of
-- each id as float32 (lua/train/tokenizer.lua), which load_model gives back as extra.tokenizer;
-- a tokenizer with a mask marker (a masked model's) keeps it as "tokenizer.mask", the marker's
-- code points, so tok.mask_token and tok.mask_id survive a load.

local mha = require "mha.core"
local raise = require "mha.raise"   -- errors at the user's line
local proc = require "mha.proc"     -- where the program's own models/ is
local function tokenizer() return require "mha.tokenizer" end   -- at first use: a fast start

local M = {}

local NORMS, POSES = {"pre", "post", "none"}, {"learned", "sinusoidal", "rope", "alibi", "none"}
local LAYOUTS = {"half", "interleaved"}
local NUMERIC = {"vocab", "d_model", "heads", "layers", "d_ff", "max_len"}
local OPTIONAL = {"kv_heads", "window", "sinks"}   -- whole numbers a model may have

local function index_of(list, v)
    for i, x in ipairs(list) do if x == v then return i end end
end

-- mha.save_model(path, model [, extra]): the state_dict, the options, and extra (name -> tensor) if
-- given; extra.tokenizer, a CharTokenizer, is written as "tokenizer.codepoints".
function M.save_model(path, model, extra)
    if type(model) ~= "table" or type(model.config) ~= "function" then
        raise("save_model: model must be a mha.nn.Transformer, got " .. type(model))
    end
    local tbl = model:state_dict()
    local c = model:config()
    for _, k in ipairs(NUMERIC) do tbl["config." .. k] = mha.tensor({c[k]}) end
    tbl["config.causal"] = mha.tensor({c.causal and 1 or 0})
    tbl["config.norm"] = mha.tensor({index_of(NORMS, c.norm)})
    tbl["config.pos"] = mha.tensor({index_of(POSES, c.pos)})
    for _, k in ipairs(OPTIONAL) do
        if c[k] then tbl["config." .. k] = mha.tensor({c[k]}) end
    end
    if c.rope_layout then tbl["config.rope_layout"] = mha.tensor({index_of(LAYOUTS, c.rope_layout)}) end
    if c.rope_base then tbl["config.rope_base"] = mha.tensor({c.rope_base}) end
    for k, v in pairs(extra or {}) do
        if k == "tokenizer" then
            if not tokenizer().is_tokenizer(v) then
                raise("save_model: extra.tokenizer must be a mha.tokenizer.CharTokenizer, got " .. type(v))
            end
            tbl["tokenizer.codepoints"] = v:codepoints()
            tbl["tokenizer.mask"] = v:marker_codepoints()
        else
            tbl[k] = v
        end
    end
    local ok, err = pcall(mha.save, path, tbl)   -- its error, as save_model's
    if not ok then raise((tostring(err):gsub("^save: ", "save_model: "))) end
end

-- Where shipped models are looked for: $MHA_MODELS, then ./models and models/ beside the real
-- program (mha.proc.shipped, which resolves a symbolic link to it).
local function search_dirs()
    local dirs = {}
    local env = os.getenv("MHA_MODELS")
    if env and env ~= "" then dirs[#dirs + 1] = env end
    for _, dir in ipairs(proc.shipped("models")) do dirs[#dirs + 1] = dir end
    return dirs
end

local function exists(path)
    local f = io.open(path, "rb")
    if f then f:close() return true end
    return false
end

local function available(dirs)
    local names, seen = {}, {}
    for _, name in ipairs({"induction", "reverse", "difference_1head", "difference_2heads", "char_en",
                          "char_zh", "char_en_mlm", "char_zh_mlm"}) do
        for _, d in ipairs(dirs) do
            if not seen[name] and exists(d .. "/" .. name .. ".npz") then
                names[#names + 1], seen[name] = name, true
            end
        end
    end
    return names
end

-- mha.load_model(name_or_path) -> model (a Transformer with the trained weights), extra
-- (the file's other entries: e.g. "history.loss"; tokenizer, a CharTokenizer, when the file keeps
-- "tokenizer.codepoints").
function M.load_model(name)
    if type(name) ~= "string" then raise("load_model: give a name (\"induction\", \"reverse\") or a .npz path") end
    local path
    if name:match("%.npz$") then
        path = name
    else
        local dirs = search_dirs()
        for _, d in ipairs(dirs) do
            if not path and exists(d .. "/" .. name .. ".npz") then path = d .. "/" .. name .. ".npz" end
        end
        if not path then
            local names = available(dirs)
            raise(string.format("load_model: no model '%s' (available: %s; looked in %s; `make models` trains them)",
                                name, #names > 0 and table.concat(names, ", ") or "none",
                                table.concat(dirs, ", ")))
        end
    end
    local ok, tbl = pcall(mha.load, path)
    if not ok then raise("load_model: " .. tostring(tbl)) end
    if not tbl["config.vocab"] then raise("load_model: " .. path .. " has no config.* entries: not a saved model") end
    local c = {}
    for _, k in ipairs(NUMERIC) do c[k] = math.tointeger(tbl["config." .. k]:item()) end
    c.causal = tbl["config.causal"]:item() ~= 0
    c.norm = NORMS[math.tointeger(tbl["config.norm"]:item())]
    c.pos = POSES[math.tointeger(tbl["config.pos"]:item())]
    for _, k in ipairs(OPTIONAL) do
        if tbl["config." .. k] then c[k] = math.tointeger(tbl["config." .. k]:item()) end
    end
    if tbl["config.rope_layout"] then c.rope_layout = LAYOUTS[math.tointeger(tbl["config.rope_layout"]:item())] end
    if tbl["config.rope_base"] then c.rope_base = tbl["config.rope_base"]:item() end
    local model = require("mha.nn.transformer").Transformer(c)
    local sd, extra = {}, {}
    for k, v in pairs(tbl) do
        if k:match("^config%.") then -- options, read above
        elseif k:match("^extra%.") then extra[k:sub(7)] = v
        elseif k == "tokenizer.codepoints" then
            local marker = tbl["tokenizer.mask"]
            if marker then
                local cps = {}
                for i, cp in ipairs(marker:totable()) do cps[i] = math.tointeger(cp) end
                marker = {mask = utf8.char(table.unpack(cps))}
            end
            extra.tokenizer = tokenizer().from_codepoints(v, marker)
        elseif k == "tokenizer.mask" then -- read with the code points
        else sd[k] = v end
    end
    model:load_state_dict(sd)
    return model, extra
end

return M
