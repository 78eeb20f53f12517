-- lua/show/text.lua - module "mha.text": width-aware text wrapping for the terminal, and the small
-- markup the lessons are written in.
--
--     local text = require "mha.text"
--     text.width(s)                  -- display width of s in terminal cells (a CJK character is 2)
--     text.wrap(s, width, opts)      -- s broken into lines of at most `width` cells; opts (all
--                                    --   optional): first = prefix of the first line (e.g. "• "),
--                                    --   rest = prefix of the others (default: first), mode = nil
--                                    --   (prose: runs of white space become one space) |
--                                    --   "verbatim" (spaces kept) | "code" (spaces kept, never
--                                    --   breaks inside a string literal or a comment);
--                                    --   no_lone_last = true: the last line is never one word
--                                    --   or one CJK character alone (the one before it comes
--                                    --   down too, where the lines still fit)
--     text.render(markup, width, color)
--                                    -- a lesson text (headings, items, formulas, *emphasis*) to
--                                    --   lines
--     text.code_lines(code, width)   -- the echo of a code block behind the gutter "  │ "
--     text.rule(width, title)        -- a title rule "── title ─────"
--     text.hint_lines(hint)          -- a hint as the REPL prints it under an error or a value
--
-- Lines break at spaces and between CJK characters (never before closing punctuation or after
-- opening punctuation), never inside a word; a line is wider than `width` only when it holds a
-- single word (or, in code, a string or a comment) longer than the line.

local M = {}

local term = require "mha.term"

-- ---------------------------------------------------------------------------------------------
-- Text. Every line the runner prints goes through one wrapper, which measures display width with
-- mha.term (a CJK character takes two cells), breaks at spaces and between CJK characters
-- (never before closing punctuation or after opening punctuation) and never inside a word. Lesson
-- texts use a small markup: "# heading", "- item", a blank line starts a paragraph, a line indented
-- by two or more spaces is a formula or a table (kept as written while it fits; wider, it wraps
-- with its columns' indent), `code` is shown with its backticks, *emphasis* and **strong** are
-- drawn bold on a colour terminal and plain elsewhere. Markup becomes invisible marks before
-- wrapping, so an emphasis that spans a line break is still one emphasis; finish() turns the marks
-- into escape codes or removes them.
-- ---------------------------------------------------------------------------------------------

local EM_ON, EM_OFF, CODE_ON, CODE_OFF = "\1", "\2", "\3", "\4"
local opening_mark = {[EM_ON] = true, [CODE_ON] = true}
local closing_mark = {[EM_OFF] = true, [CODE_OFF] = true}

-- Display width of a UTF-8 string in terminal cells; a code mark shows as a backtick, the others as
-- nothing.
function M.width(s)
    local _, backticks = s:gsub("[\3\4]", "")
    return term.width(s) + backticks
end

-- s cut at a character boundary to at most `width` terminal cells (a line that must not wrap: a
-- progress line rewritten in place with "\r").
function M.fit(s, width)
    if term.width(s) <= width then return s end
    local out, used = {}, 0
    for _, cp in utf8.codes(s) do
        local c = utf8.char(cp)
        used = used + term.width(c)
        if used > width then break end
        out[#out + 1] = c
    end
    return table.concat(out)
end

local wide_cache = {}
local function is_wide(cp)
    local w = wide_cache[cp]
    if w == nil then w = term.width(utf8.char(cp)) == 2; wide_cache[cp] = w end
    return w
end

-- Characters that may not start a line (closing punctuation) or end one (opening punctuation).
local no_break_before = {}
for _, c in utf8.codes("，。、；：？！）」』》〉】”’…%,.;:!?)]}·") do no_break_before[c] = true end
local no_break_after = {}
for _, c in utf8.codes("（「『《〈【“‘([{") do no_break_after[c] = true end

-- The last character of s that is not a mark, as a code point (nil when there is none).
local function last_visible(s)
    local last
    for _, cp in utf8.codes(s) do
        if cp > 4 and cp ~= 42 and cp ~= 96 then last = cp end   -- not a mark, "*" or "`"
    end
    return last
end

-- Splits text into atoms {text, space, glue}: a line may break before an atom
-- (dropping its `space`, the white space written before it) unless it is glued to the one before. A
-- run of non-space, non-wide characters is one atom; each wide (CJK) character is an atom of its
-- own. Closing punctuation and closing marks stick to what precedes them, opening marks to what
-- follows. keep_spaces keeps runs of spaces as written (formulas, code); otherwise any white space
-- between two atoms is one space (prose). code glues the words of a string literal or a comment
-- together, so code breaks between its tokens, never inside a "string" or a -- comment.
local function atoms_of(text, keep_spaces, code)
    local ok_utf8 = utf8.len(text)
    if not ok_utf8 then return {{text = text, space = ""}} end   -- not UTF-8: one unbreakable atom
    local atoms, current, space, prefix = {}, {}, "", ""
    local function push(s)
        atoms[#atoms + 1] = {text = s, space = space}
        space = ""
    end
    local quote, escaped, in_string = nil, false, {}   -- in_string[i]: atom i starts in a literal
                                                       -- or comment
    local run_inside = false   -- the run in `current` started inside a literal or comment
    local function flush()
        if #current > 0 then
            push(table.concat(current)); current = {}
            if run_inside then in_string[#atoms] = true end
        end
    end
    local function stick_to_last(s) atoms[#atoms].text = atoms[#atoms].text .. s end
    local function can_stick() return #current == 0 and prefix == "" and #atoms > 0 and space == "" end
    local comment, previous = false, nil
    for _, cp in utf8.codes(text) do
        local ch = utf8.char(cp)
        -- an ASCII ':' right after a CJK character starts a command (；:restart), so it sticks to
        -- what follows it, not to the character before
        local command_colon = ch == ":" and previous ~= nil and is_wide(utf8.codepoint(previous))
        local inside = quote ~= nil or comment   -- before ch: an opening quote itself may start a
                                                 -- line
        if code and not comment then
            if quote then
                if escaped then escaped = false
                elseif ch == "\\" then escaped = true
                elseif ch == quote then quote = nil end
            elseif ch == '"' or ch == "'" then
                quote = ch
            elseif ch == "-" and previous == "-" then
                comment = true  -- the rest of the line is a comment: its apostrophes open no string
            end
        end
        previous = ch
        if ch == " " or ch == "\t" or ch == "\n" then
            flush()
            if #atoms > 0 or prefix ~= "" then
                space = keep_spaces and space .. (ch == "\t" and "    " or " ") or " "
            end
        elseif opening_mark[ch] then
            if #current > 0 then current[#current + 1] = ch else prefix = prefix .. ch end
        elseif closing_mark[ch] then
            if #current > 0 then current[#current + 1] = ch
            elseif can_stick() then stick_to_last(ch)
            else prefix = prefix .. ch end
        elseif no_break_before[cp] and can_stick() and not command_colon then
            stick_to_last(ch)
        elseif is_wide(cp) then
            if no_break_before[cp] and #current > 0 then
                current[#current + 1] = ch
                flush()
            else
                flush()
                push(prefix .. ch)
                if inside then in_string[#atoms] = true end
                prefix = ""
            end
        else
            if #current == 0 then run_inside = inside end
            if #current == 0 and prefix ~= "" then current[1] = prefix; prefix = "" end
            current[#current + 1] = ch
        end
    end
    flush()
    if prefix ~= "" then
        if #atoms > 0 then stick_to_last(prefix) else push(prefix) end
    end
    for i, atom in ipairs(atoms) do
        atom.width = M.width(atom.text)
        if i > 1 and atom.space == "" then
            local last = last_visible(atoms[i - 1].text)
            atom.glue = last ~= nil and no_break_after[last] or false
        end
        if in_string[i] then atom.glue = true end
    end
    return atoms
end

-- Wraps text to `width` columns; the first line starts with `first`, the others with `rest`
-- (default: `first`). Breaks only where atoms_of allows, so a line is wider than `width` only when
-- it holds one unbreakable run (a long word, a path); in prose a glued run too long for a line of
-- its own breaks at its spaces after all, in code it stays whole
-- (a string or a comment broken in two is no longer Lua). mode "code" keeps spaces, string literals
-- and comments; "verbatim" keeps spaces; nil is prose. Returns the list of lines (marks kept; see
-- finish), the atom each line starts with, and the atoms.
local function wrap_atoms(text, width, first, rest, mode)
    first = first or ""
    rest = rest or first
    local lines = {}
    local line, line_w, empty = first, M.width(first), true
    local atoms = atoms_of(text, mode ~= nil, mode == "code")
    local starts = {}   -- starts[n]: the atom line n starts with
    local room = width - M.width(rest)
    local loose_until = 0   -- atoms up to this one break freely: their glued run is longer than a
                            -- line
    local i = 1
    while i <= #atoms do
        -- gather the atoms glued together (no break allowed between them)
        local group, group_w = {atoms[i]}, atoms[i].width
        local j = i + 1
        while j <= #atoms and atoms[j].glue and j > loose_until do
            group[#group + 1] = atoms[j]
            group_w = group_w + #atoms[j].space + atoms[j].width
            j = j + 1
        end
        if group_w > room and #group > 1 and mode ~= "code" then
            loose_until = j - 1
            group, group_w, j = {atoms[i]}, atoms[i].width, i + 1
        end
        local sep = empty and "" or atoms[i].space
        if not empty and line_w + #sep + group_w > width then
            lines[#lines + 1] = line
            line, line_w, empty, sep = rest, M.width(rest), true, ""
        end
        if empty then starts[#lines + 1] = i end
        for k, atom in ipairs(group) do
            line = line .. (k == 1 and sep or atom.space) .. atom.text
        end
        line_w = line_w + #sep + group_w
        empty = false
        i = j
    end
    if not empty or #lines == 0 then lines[#lines + 1] = line end
    return lines, starts, atoms
end

-- When the last of lines (wrapped from atoms, starts[n] the atom line n starts with) holds one atom
-- alone (a word, or one CJK character with the punctuation stuck to it), the atom before it comes
-- down to it: if a line may break before that one, the line above keeps at least two of its own
-- and the last line still fits in `width`. "the two layouts and their" / "bug" becomes
-- "the two layouts and" / "their bug".
local function lone_last_down(lines, starts, atoms, width, first, rest)
    local n = #lines
    if n < 2 or starts[n] ~= #atoms then return lines end
    local down = #atoms - 1
    if down <= starts[n - 1] + 1 or atoms[down].glue or atoms[#atoms].glue then return lines end
    local function joined(prefix, from, to)
        local parts = {prefix, atoms[from].text}
        for k = from + 1, to do parts[#parts + 1] = atoms[k].space .. atoms[k].text end
        return table.concat(parts)
    end
    local last = joined(rest, down, #atoms)
    if M.width(last) > width then return lines end
    lines[n - 1] = joined(n == 2 and first or rest, starts[n - 1], down - 1)
    lines[n] = last
    return lines
end

-- wrap_atoms' lines; no_lone_last: never one word alone on the last (lone_last_down).
local function wrap(text, width, first, rest, mode, no_lone_last)
    first = first or ""
    rest = rest or first
    local lines, starts, atoms = wrap_atoms(text, width, first, rest, mode)
    if no_lone_last then return lone_last_down(lines, starts, atoms, width, first, rest) end
    return lines
end

-- The public wrapper (see the top of the file): opts.first, opts.rest, opts.mode,
-- opts.no_lone_last.
function M.wrap(text, width, opts)
    opts = opts or {}
    return wrap(text, width, opts.first, opts.rest, opts.mode, opts.no_lone_last)
end

-- A hint as the REPL prints it (and LESSON.fails under its error): wrapped to the terminal,
-- HINT_WIDTH columns when stdout is not one, continuation lines indented.
local HINT_WIDTH = 78

function M.hint_lines(hint)
    return wrap(hint, math.max(30, term.columns() or HINT_WIDTH), "", "      ")
end

-- Inline markup to marks: `code` spans are kept whole (no emphasis inside), *x* and **x**
-- (opened before a non-space, closed after one) become emphasis marks. Anything else, a lone *
-- included, stays as written.
function M.inline(text)
    local out = {}
    local function emphasis(s)
        local function mark(body)
            if body:match("%s$") then return nil end
            return EM_ON .. body .. EM_OFF
        end
        s = s:gsub("%*%*([^%s%*][^%*]-)%*%*", mark)
        return (s:gsub("%*([^%s%*][^%*]-)%*", mark))
    end
    local pos = 1
    while true do
        local a, b = text:find("`[^`]+`", pos)
        if not a then break end
        out[#out + 1] = emphasis(text:sub(pos, a - 1))
        out[#out + 1] = CODE_ON .. text:sub(a + 1, b - 1) .. CODE_OFF
        pos = b + 1
    end
    out[#out + 1] = emphasis(text:sub(pos))
    return table.concat(out)
end

-- Marks to what the terminal shows: bold (closed at the end of every line, reopened on the next, so
-- a line never leaks its style) on a colour terminal, nothing otherwise; code marks become
-- backticks.
function M.finish(lines, color)
    local out, bold = {}, false
    for i, line in ipairs(lines) do
        local s = line:gsub("[\3\4]", "`")
        if color then
            local opened = bold
            s = s:gsub("[\1\2]", function(m)
                bold = (m == EM_ON)
                return bold and "\27[1m" or "\27[22m"
            end)
            if opened then s = "\27[1m" .. s end
            if bold then s = s .. "\27[22m" end
        else
            s = s:gsub("[\1\2]", "")
        end
        out[i] = s
    end
    return out
end

-- Wraps a line of prose written with the inline markup; no_lone_last as in M.wrap (a header's).
function M.wrap_text(text, width, first, rest, no_lone_last)
    return wrap(M.inline(text), width, first, rest, nil, no_lone_last)
end

-- A formula or table line (indented by two or more spaces): as written when it fits. A wider one
-- wraps at its spaces, its continuation lines hanging under its last column
-- (the text after its last run of two or more spaces, e.g. a comment) when that leaves 20 columns,
-- else under its indent plus two.
function M.wrap_formula(line, width)
    if M.width(line) <= width then return {line} end
    local indent = line:match("^ *")
    local column, pos = nil, #indent + 1
    while true do
        local _, gap_end = line:find("  +", pos)
        if not gap_end then break end
        if gap_end < #line then column = gap_end + 1 end
        pos = gap_end + 1
    end
    if column then
        local head = line:sub(1, column - 1)
        local hang = M.width(head)
        if hang <= width - 20 then
            return wrap(line:sub(column), width, head, string.rep(" ", hang), "verbatim")
        end
    end
    local rest = indent .. "  "
    if M.width(rest) > width - 20 then rest = "  " end
    return wrap(line:sub(#indent + 1), width, indent, rest, "verbatim")
end

-- The echo of a step's code: every line behind the gutter "  │ ", the block's common indent
-- removed; a line too wide wraps at its spaces, its continuation lines marked "  │   " under its
-- own indent.
function M.code_lines(code, width)
    local body = code:gsub("^%s*\n", ""):gsub("%s+$", "")
    local indent = body:match("^( *)") or ""
    local out = {}
    for line in (body .. "\n"):gmatch("(.-)\n") do
        if line:sub(1, #indent) == indent then line = line:sub(#indent + 1) end
        local own = line:match("^ *")
        if M.width("  │ " .. line) <= width then
            out[#out + 1] = "  │ " .. line
        else
            local rest = "  │   " .. own
            if M.width(rest) > width - 20 then rest = "  │   " end
            for _, l in ipairs(wrap(line:sub(#own + 1), width, "  │ " .. own, rest, "code")) do out[#out + 1] = l end
        end
    end
    return out
end

-- A title rule "── title ─────" filling the width; a title too long for one line wraps under
-- itself, never leaving one word alone on its last line.
function M.rule(width, title)
    local head = "── " .. title .. " "
    if M.width(head) + 3 <= width then return {head .. string.rep("─", width - M.width(head))} end
    local lines = wrap(title, width, "── ", "   ", nil, true)
    local last = lines[#lines] .. " "
    local room = width - M.width(last)
    if room >= 3 then lines[#lines] = last .. string.rep("─", room) end
    return lines
end

-- Joins the source lines of a paragraph: with a space, except where a line break falls between two
-- CJK characters or next to CJK punctuation (Chinese puts no spaces between words; the lessons do
-- put one between a Chinese word and a Latin one, as before "nn.Linear", so that break stays a
-- space).
local function cjk_punctuation(cp) return is_wide(cp) and (no_break_before[cp] or no_break_after[cp]) end
-- Curly quotes are narrow on most terminals, but a Chinese quotation takes no space either side of
-- them: the Chinese characters before the opening quote and after the closing one touch it.
local opening_quote = {[0x201C] = true, [0x2018] = true}
local closing_quote = {[0x201D] = true, [0x2019] = true}
local function quote_tight(last, first)
    return (is_wide(last) and opening_quote[first]) or (closing_quote[last] and is_wide(first))
end
local function join_lines(lines)
    local text = lines[1]
    for i = 2, #lines do
        local prev, nxt = text, lines[i]
        local last = last_visible(prev)
        local at = nxt:match("^[\1-\4*`]*()")   -- the first visible character
        local first = utf8.codepoint(nxt, at <= #nxt and at or 1)
        local tight = last and ((is_wide(last) and is_wide(first)) or cjk_punctuation(last) or cjk_punctuation(first)
            or quote_tight(last, first))
        text = prev .. (tight and "" or " ") .. nxt
    end
    return text
end

-- Renders a lesson text (the markup above) to lines of at most `width` columns
-- (see M.wrap for the one exception); color draws emphasis bold. A heading, like every header the
-- runner prints, never ends on one word alone (no_lone_last).
function M.render(text, width, color)
    local out = {}
    local paragraph = {}
    local function add(lines)
        for _, l in ipairs(M.finish(lines, color)) do out[#out + 1] = l end
    end
    local function flush()
        if #paragraph > 0 then
            add(M.wrap_text(join_lines(paragraph), width))
            paragraph = {}
        end
    end
    local raw = text:gsub("^%s*\n", ""):gsub("%s+$", "")
    for line in (raw .. "\n"):gmatch("(.-)\n") do
        local heading = line:match("^#+%s+(.*)$")
        local item = line:match("^%s?[-•]%s+(.*)$")
        if line:match("^%s*$") then
            flush()
            if #out > 0 and out[#out] ~= "" then out[#out + 1] = "" end
        elseif heading then
            flush()
            local lines = M.wrap_text(heading, width, nil, nil, true)
            add(lines)
            local widest = 0
            for _, l in ipairs(lines) do widest = math.max(widest, M.width(l)) end
            out[#out + 1] = string.rep("─", widest)
        elseif item then
            flush()
            add(M.wrap_text(item, width, "• ", "  "))
        elseif line:match("^  ") then
            flush()
            add(M.wrap_formula(line, width))
        else
            paragraph[#paragraph + 1] = line
        end
    end
    flush()
    return out
end


return M
