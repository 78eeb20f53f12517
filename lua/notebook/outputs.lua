-- lua/notebook/outputs.lua - module "mha.notebook.outputs": a figure as a notebook cell's output,
-- made the same way for the Jupyter kernel, a lesson's export and a session's export.
--
-- A figure is a PNG (image/png) beside its name (text/plain), with no image/svg+xml: every viewer
-- that takes an SVG prefers it to the PNG, and Debian's nbconvert
-- (6.5.3, and 7.x: nbconvert issues #1849/#1894) passes an SVG through lxml's clean_html, which
-- keeps the text and drops the drawing. The one-page HTML export takes the SVG from
-- outputs.svg(output) instead, drawn from the same script.

local json = require "mha.json"

local M = {}

-- Wraps mha.show, and the global show while it is mha.show: wrapper(show) returns the new show. The
-- kernel (a cell's table) and the session's recorder (:export's table) each wrap it this one way.
function M.wrap_show(wrapper)
    local mha = require "mha"
    if type(mha.show) ~= "function" then return end
    local shown = mha.show
    mha.show = wrapper(shown)
    if rawget(_G, "show") == shown then rawset(_G, "show", mha.show) end
end

-- Base64 (RFC 4648) of a byte string, for a PNG inside the notebook's JSON.
local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function sextet(n) return B64:sub(n + 1, n + 1) end
function M.base64(s)
    local out = {}
    for i = 1, #s, 3 do
        local a, b, c = s:byte(i, i + 2)
        local n = a * 65536 + (b or 0) * 256 + (c or 0)
        out[#out + 1] = sextet(n >> 18) .. sextet((n >> 12) & 63)
            .. (b and sextet((n >> 6) & 63) or "=") .. (c and sextet(n & 63) or "=")
    end
    return table.concat(out)
end

local function read_file(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local s = f:read("a")
    f:close()
    return s
end

-- The bytes of a drawing's script as a .png or .svg file (plot.render), or nil when gnuplot cannot
-- make it.
local function rendered(script, ext)
    local ok, plot = pcall(require, "mha.plot")
    if not ok or type(plot) ~= "table" or not plot.render then return nil end
    local base = os.tmpname()
    local made = pcall(plot.render, script, base .. ext)
    local bytes = made and read_file(base .. ext) or nil
    os.remove(base .. ext)
    os.remove(base)
    if bytes and #bytes > 0 then return bytes end
    return nil
end

local scripts = setmetatable({}, {__mode = "k"})  -- a figure output -> the script it was drawn from

-- A figure's drawing (its script, as fig.script holds it; number: the figure's) as a display_data
-- output holding a PNG; nil when gnuplot cannot draw it.
function M.figure(script, number)
    local png = rendered(script, ".png")
    if not png then return nil end
    local output = {output_type = "display_data", metadata = json.object(),
                    -- not tostring(fig): its gnuplot's pid differs run to run
                    data = {["image/png"] = M.base64(png), ["text/plain"] = "figure " .. tostring(number)}}
    scripts[output] = script
    return output
end

-- The <svg> element of a figure output (no XML declaration: it goes inside a page), or nil. A heat
-- map is a tiny image stretched over its axes: drawn pixelated, or viewers blur its cells together.
function M.svg(output)
    local script = scripts[output]
    local svg = script and (rendered(script, ".svg") or ""):match("<svg.*$")
    if not svg then return nil end
    return (svg:gsub("<image ", '<image style="image-rendering:pixelated" '))
end

return M
