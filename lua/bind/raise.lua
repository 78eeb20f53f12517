-- lua/bind/raise.lua - module "mha.raise": how the library's Lua code raises an error: at the
-- position of the first code outside the library on the stack (the user's line), as luaL_error
-- gives a C function's caller.
--
-- error(msg, 1) would name the library's own line ("lua/nn/optim.lua:43: ..."), error(msg, 2) the
-- right line only when the user called this very function, and error(msg, 0) none at all.
-- raise(msg) walks up the stack past the embedded files (chunk names "@lua/...") and the C
-- functions between them (pcall, mha.no_grad).

local getinfo = debug.getinfo

local function embedded(source) return source:sub(1, 5) == "@lua/" end

return function(msg)
    local level = 2   -- 1 is raise itself; error(msg, k) counts levels the same way
    while true do
        local info = getinfo(level, "S")
        if not info then return error(msg, 0) end
        if info.what ~= "C" and not embedded(info.source) then return error(msg, level) end
        level = level + 1
    end
end
