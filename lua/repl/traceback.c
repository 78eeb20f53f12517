/* lua/repl/traceback.c - the tracebacks the REPL shows: Lua's own (luaL_traceback) without the
 * frames of the Lua code built into the binary, and with a helper's error placed at the user's line
 * that called it.
 *
 * A student's error in show(x) should read "stdin:2: show: ...", not "lua/show/display.lua:509:
 * show: ...", followed by twenty frames of display.lua and the REPL: those frames are the
 * library's, not theirs. */
#include <string.h>

#include <lauxlib.h>

#include "embedded.h"
#include "traceback.h"

/* Is line (a traceback frame, or a message) at a position in Lua code built into the binary: the
 * REPL's own lua/repl/repl.lua, or a helper such as lua/show/display.lua that raised an error on
 * the user's behalf? Returns the length of its "lua/x.lua:" prefix, else 0. */
static size_t embedded_position(const char *line, size_t len) {
    for (const mha_embedded_file *f = mha_embedded; f->module; f++) {
        size_t n = strlen(f->path);
        if (len > n && memcmp(line, f->path, n) == 0 && line[n] == ':') return n + 1;
    }
    return 0;
}

/* A traceback frame the reader does not need: the C entry point, the embedded Lua code (the REPL's
 * and the helpers'). */
static int hidden_frame(const char *line, size_t len) {
    static const char *const hidden[] = {"[C]: in ?", "(...tail calls...)", NULL};
    while (len > 0 && (*line == '\t' || *line == ' ')) { line++; len--; }
    if (embedded_position(line, len)) return 1;
    for (int i = 0; hidden[i]; i++) {
        size_t n = strlen(hidden[i]);
        if (len >= n && memcmp(line, hidden[i], n) == 0) return 1;
    }
    return 0;
}

static int c_frame(const char *line, size_t len) {
    while (len > 0 && (*line == '\t' || *line == ' ')) { line++; len--; }
    return len >= 4 && memcmp(line, "[C]:", 4) == 0;
}

/* A frame that says nothing the message does not: the chunk typed at the prompt, error() itself. */
static int trivial_frame(const char *line, size_t len) {
    static const char *const trivial[] = {"in main chunk", "in function 'error'", "in function 'assert'", NULL};
    for (int i = 0; trivial[i]; i++) {
        size_t n = strlen(trivial[i]);
        if (len >= n && memcmp(line + len - n, trivial[i], n) == 0) return 1;
    }
    return 0;
}

#define MAX_FRAMES 64   /* luaL_traceback writes at most 22 frames and a "..." line */

typedef struct frame {
    const char *text;   /* "\tstdin:2: in function 'f'", not NUL-terminated */
    size_t len;
    int hidden;
} frame;

/* Adds a frame to b, a function of the C core named as the student knows it: Lua names a C
 * function by the first loaded module it finds it in, and "mha.core" (whose functions lua/mha.lua
 * copies into mha) may come first: "in function 'mha.core.matmul'" reads "'mha.matmul'". */
static void add_frame(luaL_Buffer *b, const frame *f) {
    static const char core[] = "'mha.core.";
    const char *at = NULL;
    for (size_t i = 0; !at && i + sizeof core - 1 <= f->len; i++)
        if (memcmp(f->text + i, core, sizeof core - 1) == 0) at = f->text + i;
    if (!at) {
        luaL_addlstring(b, f->text, f->len);
        return;
    }
    size_t head = (size_t)(at - f->text) + strlen("'mha."), skip = strlen("core.");
    luaL_addlstring(b, f->text, head);
    luaL_addlstring(b, f->text + head + skip, f->len - head - skip);
}

/* Splits traceback tb into frames, marking those the reader does not need. Returns their number. */
static int split_traceback(frame *frames, const char *tb) {
    int n = 0;
    const char *line = strchr(tb, '\n');  /* skip "stack traceback:" */
    while (line && n < MAX_FRAMES) {
        line++;
        const char *end = strchr(line, '\n');
        frames[n].text = line;
        frames[n].len = end ? (size_t)(end - line) : strlen(line);
        frames[n].hidden = hidden_frame(line, frames[n].len);
        n++;
        line = end;
    }
    /* a C function called from a hidden frame (error, pcall inside a helper) is hidden with it */
    for (int i = n - 2; i >= 0; i--)
        if (c_frame(frames[i].text, frames[i].len) && frames[i + 1].hidden) frames[i].hidden = 1;
    return n;
}

/* Does msg start with a position, "stdin:2: " or "lua/nn/optim.lua:43: "? */
static int has_position(const char *msg) {
    const char *colon = strstr(msg, ": ");
    if (!colon) return 0;
    const char *digits = colon;
    while (digits > msg && digits[-1] >= '0' && digits[-1] <= '9') digits--;
    return digits < colon && digits > msg && digits[-1] == ':';
}

/* Was the error raised inside the embedded Lua code: is the first Lua frame
 * (below error() and other C functions) hidden? */
static int raised_in_library(const frame *frames, int nframes) {
    for (int i = 0; i < nframes; i++)
        if (!c_frame(frames[i].text, frames[i].len)) return embedded_position(frames[i].text + 1, frames[i].len - 1) != 0;
    return 0;
}

static const char *tailcall_position = NULL;

const char *repl_traceback_tailcall(const char *where) {
    const char *before = tailcall_position;
    tailcall_position = where;
    return before;
}

/* Is the frame luaL_traceback writes for calls Lua dropped from the stack (a tail call)? */
static int tail_calls(const frame *f) {
    static const char text[] = "\t(...tail calls...)";
    return f->len == sizeof text - 1 && memcmp(f->text, text, f->len) == 0;
}

/* Pushes msg with a helper's position ("lua/show/display.lua:509: show: ...") replaced by the
 * position of the user's code that called the helper ("stdin:2: show: ..."), or dropped when there
 * is none (a tail call, a REPL command). A helper's message without a position
 * (error(msg, 0), as the library raises them) is given the user's too. Pushes msg itself
 * otherwise. */
static const char *push_user_message(lua_State *L, const char *msg, const frame *frames, int nframes) {
    size_t prefix = embedded_position(msg, strlen(msg));
    const char *p = msg + prefix, *text;   /* text: msg after the helper's position */
    while (prefix && *p >= '0' && *p <= '9') p++;
    if (prefix && p > msg + prefix && p[0] == ':' && p[1] == ' ') text = p + 2;
    else if (!prefix && !has_position(msg) && raised_in_library(frames, nframes)) text = msg;
    else return lua_pushstring(L, msg);
    for (int i = 0; i < nframes; i++) {
        if (tail_calls(&frames[i]) && tailcall_position) return lua_pushfstring(L, "%s: %s", tailcall_position, text);
        if (frames[i].hidden || c_frame(frames[i].text, frames[i].len)) continue;
        const char *where = frames[i].text, *end = frames[i].text + frames[i].len;
        while (*where == '\t') where++;
        const char *in = strstr(where, ": in ");
        if (in && in < end) return lua_pushfstring(L, "%s: %s", lua_pushlstring(L, where, (size_t)(in - where)), text);
    }
    return lua_pushstring(L, text);
}

/* Pushes msg and a short traceback of L from level on, as luaL_traceback(L, L, msg, level) would.
 * The traceback leaves out the frames of the embedded Lua code (the REPL's own, and helpers such as
 * lua/show/display.lua with the C functions they called, error() among them), and is left out
 * altogether when it only repeats where the message points (the main chunk, and the C function or
 * operator that raised the error, which the message names). A message a helper raised at its own
 * position is given the user's instead. */
void repl_traceback(lua_State *L, const char *msg, int level) {
    luaL_traceback(L, L, NULL, level);
    frame frames[MAX_FRAMES];
    int nframes = split_traceback(frames, lua_tostring(L, -1));
    msg = push_user_message(L, msg, frames, nframes);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    int useful = 0, innermost = 1;
    for (int i = 0; i < nframes; i++) {
        if (frames[i].hidden) continue;
        /* the C function that raised ("[C]: in metamethod 'mul'", "[C]: in function 'mha.matmul'")
         * is named by its message: alone above the main chunk it is no reason for a traceback */
        int raiser = innermost && c_frame(frames[i].text, frames[i].len);
        innermost = 0;
        if (!raiser && !trivial_frame(frames[i].text, frames[i].len)) useful = 1;
        luaL_addchar(&b, '\n');
        add_frame(&b, &frames[i]);
    }
    luaL_pushresult(&b);
    if (useful) {
        lua_pushstring(L, msg);
        lua_pushliteral(L, "\nstack traceback:");
        lua_pushvalue(L, -3);
        lua_concat(L, 3);
    } else {
        lua_pushstring(L, msg);
    }
}
