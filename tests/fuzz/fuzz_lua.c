/* tests/fuzz/fuzz_lua.c - libFuzzer target for the Lua API: the input bytes pick a sequence of calls of
 * mha functions and tensor methods on a pool of tensors (empty, 0-d, transposed, bool, (2^62,0)...) and
 * hostile values (NaN, 2^62, strings, tables). Every call runs in pcall; a Lua error is a right answer,
 * an error raised from inside a Lua helper ("attempt to index a nil value") is a finding, and so is any
 * report of AddressSanitizer or UndefinedBehaviorSanitizer, a hang (-timeout) or a leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "lmha.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The driver: `bytes` is the fuzzer's input. Results with more than MAX_KEEP elements are not kept
 * in the pool, so no chain of calls grows a tensor past a few megabytes. */
static const char driver[] =
    "local bytes = ...\n"
    "local MAX_KEEP = 4096\n"
    "local pos = 0\n"
    "local function byte() pos = pos + 1; return bytes:byte(pos) or 0 end\n"
    "local pool = { mha.zeros(2, 3), mha.randn(3, 4), mha.zeros(0, 3), mha.tensor(1.5), mha.ones(2, 1, 3):bool(),\n"
    "  mha.arange(6):view(2, 3):transpose(1, 2), mha.zeros(1 << 62, 0), mha.eye(3), mha.tensor({0/0, 1/0, -1/0}),\n"
    "  mha.randn(2, 2, 4), mha.zeros(3):expand(2, 3), mha.zeros(1, 1, 1, 1) }\n"
    "local values = { 0, 1, 2, 3, 4, -1, -2, 0.5, 0/0, 1/0, -1/0, 1 << 62, -(1 << 62), math.mininteger, 1e300,\n"
    "  'x', '', 'a b c', true, false, nil, {}, {1, 2}, {{1, 2}, {3, 4}}, {2, 3}, {attn_mask = true},\n"
    "  {is_causal = true}, {dim = 1}, {0/0}, {{}} }\n"
    "local skip = { printoptions = true, show = true, heat = true, save = true, load = true, seed = true }\n"
    "local functions, methods = {}, {}\n"
    "for name, f in pairs(mha) do if type(f) == 'function' and not skip[name] then functions[#functions + 1] = name end end\n"
    "for name in pairs(getmetatable(pool[1]).__methods or {}) do\n"
    "  if name ~= 'close' then methods[#methods + 1] = name end\n"
    "end\n"
    "table.sort(functions); table.sort(methods)\n"
    "local function arg() local c = byte(); if c % 2 == 0 then return pool[c // 2 % #pool + 1] end\n"
    "  return values[c // 2 % #values + 1] end\n"
    "while pos < #bytes do\n"
    "  local kind, which, nargs = byte(), byte(), byte() % 5\n"
    "  local args = {}\n"
    "  for i = 1, nargs do args[i] = arg() end\n"
    "  local f, name\n"
    "  if kind % 2 == 0 and #methods > 0 then\n"
    "    name = methods[which % #methods + 1]\n"
    "    local self = pool[byte() % #pool + 1]\n"
    "    f = function(...) return self[name](self, ...) end\n"
    "  else\n"
    "    name = functions[which % #functions + 1]\n"
    "    f = mha[name]\n"
    "  end\n"
    "  local ok, r = pcall(f, table.unpack(args, 1, nargs))\n"
    "  if ok and mha.is_tensor(r) then\n"
    "    local shown = tostring(r)\n"
    "    if r:numel() <= MAX_KEEP and #pool < 64 then pool[#pool + 1] = r end\n"
    "  elseif not ok and type(r) == 'string' and (r:find('^lua/') or r:find('attempt to ')) then\n"
    "    error('FINDING: ' .. name .. ': ' .. r, 0)\n"
    "  end\n"
    "end\n";

/* One state for the whole run, made at the first input: opening mha (and compiling its Lua helpers)
 * costs far more than a typical input, so a fresh state each time ran ~30 inputs a second. Each input
 * builds its own pool in the driver, and a full collection after it frees what it made; the
 * functions that change state shared between inputs (seed, printoptions) are not called. */
static lua_State *state = NULL;
static int driver_ref = LUA_NOREF;

static lua_State *open_state(void) {
    lua_State *L = luaL_newstate();
    if (L == NULL) abort();
    luaL_openlibs(L);
    luaL_requiref(L, "mha", luaopen_mha, 1);
    lua_pop(L, 1);
    if (luaL_loadbuffer(L, driver, sizeof driver - 1, "=fuzz_lua") != LUA_OK) {
        fprintf(stderr, "fuzz_lua: the driver does not compile: %s\n", lua_tostring(L, -1));
        abort();
    }
    driver_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return L;
}

static void close_state(void) {
    if (state) lua_close(state);   /* at exit, so LeakSanitizer sees only real leaks */
    state = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (state == NULL) {
        state = open_state();
        atexit(close_state);
    }
    lua_State *L = state;
    lua_rawgeti(L, LUA_REGISTRYINDEX, driver_ref);
    lua_pushlstring(L, (const char *)data, size);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        if (msg && strncmp(msg, "FINDING: ", 9) == 0) {
            fprintf(stderr, "fuzz_lua: %s\n", msg);
            abort();
        }
        lua_pop(L, 1);   /* anything else (out of memory in Lua itself) is not the API's fault */
    }
    lua_settop(L, 0);
    lua_gc(L, LUA_GCCOLLECT);
    return 0;
}
