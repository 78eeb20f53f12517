/* lua/sys/lproc.c - module "mha.proc": another program run with its arguments as a list (fork and
 * execv, never a shell: no file name is read as shell syntax), and where the running program is. */
#define _GNU_SOURCE   /* dladdr1 and struct link_map: is this code in mha.so or in the program? */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "lsys.h"

/* The real path of the running program, from /proc/self/exe. Returns 0, or -1 and sets errno. */
static int program_path(char path[PATH_MAX]) {
    ssize_t n = readlink("/proc/self/exe", path, PATH_MAX - 1);
    if (n < 0) return -1;
    path[n] = '\0';
    return 0;
}

/* proc.self() -> the real path of the running program (/proc/self/exe), or nil and a message */
static int proc_self(lua_State *L) {
    char path[PATH_MAX];
    if (program_path(path) != 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "proc.self: /proc/self/exe: %s", strerror(errno));
        return 2;
    }
    lua_pushstring(L, path);
    return 1;
}

static const char in_this_file = 0;   /* an address inside this file's data, for dladdr1 */

/* The real path (symbolic links resolved) of the file this code was loaded from: mha.so when a
 * stock lua5.4 loaded it, else the running program. Returns 0, or -1 and sets errno. */
static int code_path(char path[PATH_MAX]) {
    Dl_info info;
    struct link_map *map = NULL;
    /* the program's own link map has an empty name; a shared object's is the path it was opened by
     */
    if (dladdr1(&in_this_file, &info, (void **)&map, RTLD_DL_LINKMAP) && map && map->l_name[0])
        return realpath(map->l_name, path) ? 0 : -1;
    return program_path(path);
}

/* proc.shipped(name) -> {folder, ...}: where the folder `name` that ships with mha-repl ("lessons",
 * "models") may be, in the order to look: name itself (under the current folder), then beside the
 * folder holding the real program (build/mha-repl: build/../name) and one level up
 * (build/asan/mha-repl). The program is found by its real path, so a symbolic link to it (the
 * ./mha-repl `make` links) or a start from another folder finds the same files. Every lookup of
 * shipped files asks here. */
static int proc_shipped(lua_State *L) {
    const char *name = luaL_checkstring(L, 1);
    lua_newtable(L);
    lua_pushstring(L, name);
    lua_rawseti(L, -2, 1);
    char path[PATH_MAX];
    if (code_path(path) != 0) return 1;   /* without /proc: the current folder's only */
    char *slash = strrchr(path, '/');
    if (!slash) return 1;
    *slash = '\0';                       /* the program's folder: .../build */
    lua_Integer n = 1;
    for (int up = 1; up <= 2; up++) {
        slash = strrchr(path, '/');
        if (!slash) break;
        *slash = '\0';                   /* its parent ("" is the root) */
        lua_pushfstring(L, "%s/%s", path, name);
        lua_rawseti(L, -2, ++n);
    }
    return 1;
}

/* Reads the whole of an open file from its start into a string on the stack. */
static void push_file(lua_State *L, FILE *file) {
    luaL_Buffer text;
    luaL_buffinit(L, &text);
    rewind(file);
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, file)) > 0) luaL_addlstring(&text, chunk, got);
    luaL_pushresult(&text);
}

/* proc.run({program, arg1, ...} [, capture]) -> ok, what the program wrote on stderr, exit status
 *                                                [, what it wrote on stdout]
 * Runs program (a path, not looked up in PATH) with stdin on /dev/null and waits for it; ok is true
 * when it exited with status 0. Its stdout goes to /dev/null, or with capture true to an unnamed
 * temporary file (no pipe to fill while stderr is read) whose text is the fourth result. */
static int proc_run(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    int capture = lua_toboolean(L, 2);
    lua_settop(L, 1);
    lua_Integer argc = luaL_len(L, 1);
    luaL_argcheck(L, argc >= 1 && argc < 256, 1, "a list of 1 to 255 strings (the program, then its arguments)");
    const char *argv[256];
    for (lua_Integer i = 1; i <= argc; i++) {
        lua_geti(L, 1, i);
        if (!lua_isstring(L, -1))
            return luaL_error(L, "proc.run: argument list entry %d is a %s, not a string", (int)i, luaL_typename(L, -1));
        argv[i - 1] = lua_tostring(L, -1);   /* kept alive on the stack until the call returns */
    }
    argv[argc] = NULL;
    FILE *out = NULL;   /* the captured stdout; closed on every path below */
    if (capture && (out = tmpfile()) == NULL)
        return luaL_error(L, "proc.run: tmpfile: %s", strerror(errno));
    int err[2];
    if (pipe(err) != 0) {
        int e = errno;
        if (out) fclose(out);
        return luaL_error(L, "proc.run: pipe: %s", strerror(e));
    }
    fcntl(err[0], F_SETFD, FD_CLOEXEC);   /* the child keeps only its stderr end, as fd 2 */
    fcntl(err[1], F_SETFD, FD_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(err[0]);
        close(err[1]);
        if (out) fclose(out);
        return luaL_error(L, "proc.run: fork: %s", strerror(e));
    }
    if (pid == 0) {   /* the child: only async-signal-safe calls until exec */
        signal(SIGINT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        int null = open("/dev/null", O_RDWR);
        int stdout_fd = out ? fileno(out) : null;
        if (null < 0 || dup2(null, 0) < 0 || dup2(stdout_fd, 1) < 0 || dup2(err[1], 2) < 0)
            _exit(127);
        execv(argv[0], (char *const *)argv);
        static const char msg[] = "cannot run the program\n";
        (void)!write(2, msg, sizeof msg - 1);
        _exit(127);
    }
    close(err[1]);
    luaL_Buffer said;
    luaL_buffinit(L, &said);
    char chunk[4096];
    for (;;) {
        ssize_t got = read(err[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        luaL_addlstring(&said, chunk, (size_t)got);
    }
    close(err[0]);
    luaL_pushresult(&said);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    lua_pushboolean(L, code == 0);
    lua_insert(L, -2);   /* ok, said */
    lua_pushinteger(L, code);
    if (!out) return 3;
    push_file(L, out);
    fclose(out);
    return 4;
}

static const luaL_Reg proc_lib[] = {
    {"self", proc_self},
    {"shipped", proc_shipped},
    {"run", proc_run},
    {NULL, NULL},
};

int luaopen_mha_proc(lua_State *L) {
    luaL_newlib(L, proc_lib);
    return 1;
}
