/* lua/bind/embedded.h - the Lua helper modules (the .lua files in lua/) compiled into the binary by
 * tools/bin2c.c, registered in package.preload by luaopen_mha so both mha-repl and `require "mha"`
 * find them. */
#ifndef MHA_EMBEDDED_H
#define MHA_EMBEDDED_H
#include <stddef.h>
typedef struct mha_embedded_file {
    const char *module;  /* "mha.display" */
    const char *path;    /* "lua/show/display.lua", the chunk name errors show */
    const char *source;
    size_t size;
} mha_embedded_file;
extern const mha_embedded_file mha_embedded[]; /* ends with a {0} entry */
#endif
