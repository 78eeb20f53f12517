/* lua/kernel/kernel.c - the Jupyter messaging protocol 5.3 over ZeroMQ, JSON by jansson,
 * HMAC-SHA256 by OpenSSL: the channels, the wire format, the replies. What a cell does: mha.kernel.
 *
 * Threads: the main thread serves shell (and runs Lua); a control thread serves control (and drains
 * stdin, which no cell reads), so that an interrupt_request or a shutdown_request is answered while
 * a cell runs, and watches the front end: a kernel whose parent died ends; a heartbeat thread
 * echoes. Only the main thread touches the lua_State; iopub is shared under a mutex. SIGINT
 * (jupyter_client's interrupt) stops the running cell through stop(L), the REPL's Ctrl-C, which
 * reaches the core's kernels (mha_interrupt) and Lua loops in every coroutine (hooks) alike; the
 * control thread's interrupt_request sends the main thread that SIGINT, so stop(L) always runs
 * where the cell runs. MHA_CELL_SECONDS=N (a classroom's limit) gives each cell N seconds of CPU
 * time (ITIMER_PROF: every thread of the process counts); past them the same SIGINT stops it, and
 * mha.kernel.cpu_limit_hit() tells the cell's error to say why.
 *
 * Messages: no frame over MAX_FRAME_BYTES is taken; a message's signature is checked on its frames
 * as they arrived (nothing is copied first) and once: a signature seen before is a replay, refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <zmq.h>

#include <lauxlib.h>

#include "kernel.h"
#include "ljson.h"

#define PROTOCOL_VERSION "5.3"
#define DELIMITER        "<IDS|MSG>"
#define MAX_IDENTITIES   16
#define POLL_MS          100   /* how often the threads look at the stop flag and the parent */
#define GRACE_MS         1000  /* a cell that ignores the stop at shutdown gets this long */
#define MAX_FRAME_BYTES  (64 << 20)   /* ZMQ_MAXMSGSIZE: a longer frame drops its sender */
#define DIGEST_BYTES     32    /* HMAC-SHA256 */
#define HISTORY_SLOTS    65536 /* per generation of the digest history: remembers 32768 to 65536 */

/* One message as it travels: routing identities, then the four JSON parts. */
typedef struct message {
    zmq_msg_t ids[MAX_IDENTITIES];
    int nids;
    json_t *header, *parent, *metadata, *content;
} message;

typedef struct kernel {
    void *ctx, *shell, *control, *iopub, *stdin_socket, *heartbeat;
    char key[256];
    size_t keylen;
    char session[40];
    pthread_t main_thread, control_thread, heartbeat_thread;
    pthread_mutex_t iopub_lock;
    pid_t parent;                               /* the front end that started the kernel */
    int execution_count;
} kernel;

/* The signatures of the messages taken so far, as ipykernel's Session.digest_history: two
 * generations of open-addressing tables; the current one, half full, becomes the previous one. */
typedef struct digest_history {
    unsigned char (*current)[DIGEST_BYTES], (*previous)[DIGEST_BYTES];
    size_t count;
    pthread_mutex_t lock;                       /* shell and control both take messages */
} digest_history;

static kernel K;                                 /* kept across :reset, so the sockets stay bound */
static digest_history seen = {NULL, NULL, 0, PTHREAD_MUTEX_INITIALIZER};
static int started = 0;
static volatile sig_atomic_t stopping = 0;       /* shutdown_request seen: every loop ends */
static volatile sig_atomic_t restart_asked = 0;
static volatile sig_atomic_t executing = 0;      /* a cell runs: an interrupt stops it */
static lua_State *running = NULL;                /* the state a cell runs in, for the interrupt */
static void (*stop_fn)(lua_State *) = NULL;
static void (*stopped_fn)(lua_State *) = NULL;
static const json_t *current_parent = NULL;      /* the execute_request whose outputs go out now */
static double cell_seconds = 0;                  /* MHA_CELL_SECONDS: a cell's CPU time, 0: any */
static volatile sig_atomic_t cpu_limit_hit = 0;  /* the running cell was stopped by cell_seconds */


/* ---- the wire ---- */

/* hex of HMAC-SHA256(key, header parent metadata content) into out (65 bytes), over each part's
 * bytes (a NUL inside one is signed too); "" when there is no key. */
static int sign(char *out, const void *const parts[4], const size_t sizes[4]) {
    out[0] = '\0';
    if (K.keylen == 0) return 0;
    unsigned char mac[EVP_MAX_MD_SIZE];
    size_t maclen = sizeof mac;
    EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_HMAC, NULL, (const unsigned char *)K.key, K.keylen);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = key && ctx && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) == 1;
    for (int i = 0; ok && i < 4; i++) ok = EVP_DigestSignUpdate(ctx, parts[i], sizes[i]) == 1;
    ok = ok && EVP_DigestSignFinal(ctx, mac, &maclen) == 1 && maclen == DIGEST_BYTES;
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    if (!ok) return -1;
    for (size_t i = 0; i < maclen; i++) snprintf(out + 2 * i, 3, "%02x", mac[i]);
    return 0;
}

/* Whether digest is in table (HISTORY_SLOTS slots); its slot, or the empty slot it would go in. */
static int history_find(unsigned char (*table)[DIGEST_BYTES], const unsigned char *digest, size_t *slot) {
    static const unsigned char empty[DIGEST_BYTES];
    size_t at;
    memcpy(&at, digest, sizeof at);   /* an HMAC's bytes are as good as a hash */
    for (at %= HISTORY_SLOTS;; at = (at + 1) % HISTORY_SLOTS) {
        if (memcmp(table[at], digest, DIGEST_BYTES) == 0) { *slot = at; return 1; }
        if (memcmp(table[at], empty, DIGEST_BYTES) == 0) { *slot = at; return 0; }
    }
}

/* Records a message's signature (hex); returns 1 when seen before (a replay), -1 on no memory. */
static int seen_before(const char *hex) {
    unsigned char digest[DIGEST_BYTES];
    for (size_t i = 0; i < DIGEST_BYTES; i++) {
        unsigned int byte;
        sscanf(hex + 2 * i, "%2x", &byte);
        digest[i] = (unsigned char)byte;
    }
    pthread_mutex_lock(&seen.lock);
    int replay = -1;
    size_t slot;
    if (!seen.current) seen.current = calloc(HISTORY_SLOTS, DIGEST_BYTES);
    if (seen.current) {
        size_t elsewhere;
        replay = history_find(seen.current, digest, &slot)
                 || (seen.previous && history_find(seen.previous, digest, &elsewhere));
        if (!replay) {
            if (seen.count == HISTORY_SLOTS / 2) {   /* half full: a new generation */
                free(seen.previous);
                seen.previous = seen.current;
                seen.current = calloc(HISTORY_SLOTS, DIGEST_BYTES);
                seen.count = 0;
                if (seen.current) history_find(seen.current, digest, &slot);
                else replay = -1;
            }
            if (seen.current) {
                memcpy(seen.current[slot], digest, DIGEST_BYTES);
                seen.count++;
            }
        }
    }
    pthread_mutex_unlock(&seen.lock);
    return replay;
}

/* zmq_msg_recv and zmq_send, again when a signal (an interrupt) came in between: the main thread
 * takes SIGINT, and a message cut short would lose a request or an output. */
static int recv_frame(zmq_msg_t *frame, void *socket) {
    int r;
    while ((r = zmq_msg_recv(frame, socket, 0)) < 0 && errno == EINTR) {}
    return r;
}

static int send_frame(void *socket, const void *data, size_t size, int flags) {
    int r;
    while ((r = zmq_send(socket, data, size, flags)) < 0 && errno == EINTR) {}
    return r;
}

static void free_message(message *m) {
    for (int i = 0; i < m->nids; i++) zmq_msg_close(&m->ids[i]);
    m->nids = 0;
    json_decref(m->header);
    json_decref(m->parent);
    json_decref(m->metadata);
    json_decref(m->content);
    m->header = m->parent = m->metadata = m->content = NULL;
}

/* Reads one multipart message: identities, <IDS|MSG>, signature, four JSON parts, buffers
 * (dropped). The parts stay in their frames until the signature over them has been checked.
 * Returns 0, or -1 when it is malformed, its signature is wrong or was seen before (said on stderr,
 * and dropped). */
static int recv_message(void *socket, message *m) {
    memset(m, 0, sizeof *m);
    zmq_msg_t signature, parts[4];
    zmq_msg_init(&signature);
    for (int i = 0; i < 4; i++) zmq_msg_init(&parts[i]);
    int stage = 0, more = 1, bad = 0;  /* stage: 0 identities, 1 signature, 2..5 parts, 6 buffers */
    while (more) {
        zmq_msg_t frame;
        zmq_msg_init(&frame);
        if (recv_frame(&frame, socket) < 0) { zmq_msg_close(&frame); bad = 1; break; }
        more = zmq_msg_more(&frame);
        size_t size = zmq_msg_size(&frame);
        if (stage == 0 && size == strlen(DELIMITER) && memcmp(zmq_msg_data(&frame), DELIMITER, size) == 0) {
            stage = 1;
            zmq_msg_close(&frame);
        } else if (stage == 0) {
            if (m->nids < MAX_IDENTITIES) m->ids[m->nids++] = frame;
            else { zmq_msg_close(&frame); bad = 1; }
        } else if (stage == 1) {
            zmq_msg_move(&signature, &frame);
            stage++;
        } else if (stage <= 5) {
            zmq_msg_move(&parts[stage - 2], &frame);
            stage++;
        } else {
            zmq_msg_close(&frame);
        }
    }
    if (!bad && stage < 6) bad = 1;
    if (!bad) {
        char expected[2 * DIGEST_BYTES + 1];
        const void *const data[4] = {zmq_msg_data(&parts[0]), zmq_msg_data(&parts[1]), zmq_msg_data(&parts[2]),
                                     zmq_msg_data(&parts[3])};
        const size_t sizes[4] = {zmq_msg_size(&parts[0]), zmq_msg_size(&parts[1]), zmq_msg_size(&parts[2]),
                                 zmq_msg_size(&parts[3])};
        size_t given = zmq_msg_size(&signature);
        if (sign(expected, data, sizes) != 0 || strlen(expected) != given
            || CRYPTO_memcmp(expected, zmq_msg_data(&signature), given) != 0) {
            fprintf(stderr, "mha-repl kernel: a message with a bad signature was refused\n");
            bad = 1;
        } else if (K.keylen > 0 && seen_before(expected) != 0) {
            fprintf(stderr, "mha-repl kernel: a message whose signature was seen before (a replay) was refused\n");
            bad = 1;
        }
    }
    json_t **slots[4] = {&m->header, &m->parent, &m->metadata, &m->content};
    for (int i = 0; !bad && i < 4; i++) {
        json_error_t err;
        *slots[i] = json_loadb(zmq_msg_data(&parts[i]), zmq_msg_size(&parts[i]), 0, &err);
        if (!*slots[i] || !json_is_object(*slots[i])) {
            fprintf(stderr, "mha-repl kernel: a message part is not a JSON object: %s\n", err.text);
            bad = 1;
        }
    }
    zmq_msg_close(&signature);
    for (int i = 0; i < 4; i++) zmq_msg_close(&parts[i]);
    if (bad) { free_message(m); return -1; }
    return 0;
}

static json_t *new_header(const char *msg_type) {
    unsigned char r[16];
    if (RAND_bytes(r, sizeof r) != 1) return NULL;
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);   /* a version 4 UUID */
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
    char id[37];
    snprintf(id, sizeof id, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1],
             r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm utc;
    gmtime_r(&tv.tv_sec, &utc);
    char date[40], seconds[24];
    strftime(seconds, sizeof seconds, "%Y-%m-%dT%H:%M:%S", &utc);
    snprintf(date, sizeof date, "%s.%06ldZ", seconds, (long)tv.tv_usec);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "session", K.session, "username", "mha-repl",
                     "date", date, "msg_type", msg_type, "version", PROTOCOL_VERSION);
}

/* Sends msg_type with content (a reference is taken) in reply to parent (may be NULL) to ids. */
static void send_message(void *socket, zmq_msg_t *ids, int nids, const char *topic, const json_t *parent,
                         const char *msg_type, json_t *content) {
    json_t *header = new_header(msg_type), *metadata = json_object();
    json_t *parent_header = parent ? json_object_get(parent, "header") : NULL;
    char *parts[4] = {
        header ? json_dumps(header, JSON_COMPACT) : NULL,
        json_dumps(parent_header ? parent_header : metadata, JSON_COMPACT),
        json_dumps(metadata, JSON_COMPACT),
        content ? json_dumps(content, JSON_COMPACT) : NULL,
    };
    char signature[2 * DIGEST_BYTES + 1];
    int built = parts[0] && parts[1] && parts[2] && parts[3];
    const void *const p[4] = {parts[0], parts[1], parts[2], parts[3]};
    const size_t sizes[4] = {built ? strlen(parts[0]) : 0, built ? strlen(parts[1]) : 0,
                             built ? strlen(parts[2]) : 0, built ? strlen(parts[3]) : 0};
    if (built && sign(signature, p, sizes) == 0) {
        for (int i = 0; i < nids; i++)
            send_frame(socket, zmq_msg_data(&ids[i]), zmq_msg_size(&ids[i]), ZMQ_SNDMORE);
        if (topic) send_frame(socket, topic, strlen(topic), ZMQ_SNDMORE);
        send_frame(socket, DELIMITER, strlen(DELIMITER), ZMQ_SNDMORE);
        send_frame(socket, signature, strlen(signature), ZMQ_SNDMORE);
        for (int i = 0; i < 4; i++) send_frame(socket, parts[i], sizes[i], i < 3 ? ZMQ_SNDMORE : 0);
    } else {
        fprintf(stderr, "mha-repl kernel: could not build a %s message\n", msg_type);
    }
    for (int i = 0; i < 4; i++) free(parts[i]);
    json_decref(header);
    json_decref(metadata);
    json_decref(content);
}

/* A message of the form a parent is a message: one for send_message's parent argument. */
static json_t *parent_of(const message *m) {
    return json_pack("{s:O}", "header", m->header);
}

static void publish(const json_t *parent, const char *msg_type, json_t *content) {
    pthread_mutex_lock(&K.iopub_lock);
    send_message(K.iopub, NULL, 0, msg_type, parent, msg_type, content);
    pthread_mutex_unlock(&K.iopub_lock);
}

static void publish_status(const json_t *parent, const char *state) {
    publish(parent, "status", json_pack("{s:s}", "execution_state", state));
}

static void reply(void *socket, message *m, const char *msg_type, json_t *content) {
    json_t *parent = parent_of(m);
    send_message(socket, m->ids, m->nids, NULL, parent, msg_type, content);
    json_decref(parent);
}


/* ---- replies that need no Lua ---- */

static json_t *kernel_info(void) {
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}, s:[{s:s, s:s}]}",
        "status", "ok", "protocol_version", PROTOCOL_VERSION, "implementation", "mha-repl",
        "implementation_version", "0.1.0", "banner",
        "mha-repl: multi-head attention in Lua 5.4 - ? lists the commands, ?NAME explains a function",
        "language_info", "name", "lua", "version", "5.4", "mimetype", "text/x-lua", "file_extension", ".lua",
        "pygments_lexer", "lua",
        "help_links", "text", "Lua 5.4 manual", "url", "https://www.lua.org/manual/5.4/");
}

/* Stops the running cell: SIGINT to the main thread, whose handler (on_sigint) calls stop(L) there,
 * as a Ctrl-C would. An idle main thread sees the stop flag within POLL_MS anyway. */
static void interrupt_main(void) {
    if (executing) pthread_kill(K.main_thread, SIGINT);
}

/* Reads and drops whatever arrived on socket: the stdin channel, as no cell asks for input. */
static void drain(void *socket) {
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    while (zmq_msg_recv(&frame, socket, ZMQ_DONTWAIT) >= 0) {}
    zmq_msg_close(&frame);
}

/* The control channel's own thread: interrupt_request, shutdown_request, kernel_info_request; stdin
 * drained; the front end watched. When the kernel stops, a cell that goes on regardless (it catches
 * the interrupt, or a C call does not return) gets GRACE_MS, then the process ends:
 * nobody is left to ask. */
static void *control_loop(void *unused) {
    (void)unused;
    zmq_pollitem_t items[2] = {{K.control, 0, ZMQ_POLLIN, 0}, {K.stdin_socket, 0, ZMQ_POLLIN, 0}};
    while (!stopping) {
        /* the front end died without a shutdown_request: do not linger */
        if (getppid() != K.parent) {
            fprintf(stderr, "mha-repl kernel: the front end (pid %ld) is gone: shutting down\n", (long)K.parent);
            stopping = 1;
            interrupt_main();
            break;
        }
        if (zmq_poll(items, 2, POLL_MS) <= 0) continue;
        if (items[1].revents & ZMQ_POLLIN) drain(K.stdin_socket);
        if (!(items[0].revents & ZMQ_POLLIN)) continue;
        message m;
        if (recv_message(K.control, &m) != 0) continue;
        const char *type = json_string_value(json_object_get(m.header, "msg_type"));
        json_t *parent = parent_of(&m);
        publish_status(parent, "busy");
        if (type && strcmp(type, "interrupt_request") == 0) {
            interrupt_main();
            reply(K.control, &m, "interrupt_reply", json_pack("{s:s}", "status", "ok"));
        } else if (type && strcmp(type, "shutdown_request") == 0) {
            int restart = json_is_true(json_object_get(m.content, "restart"));
            reply(K.control, &m, "shutdown_reply", json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
            restart_asked = restart;
            stopping = 1;
            interrupt_main();
        } else if (type && strcmp(type, "kernel_info_request") == 0) {
            reply(K.control, &m, "kernel_info_reply", kernel_info());
        } else {
            fprintf(stderr, "mha-repl kernel: control message '%s' is not handled\n", type ? type : "?");
        }
        publish_status(parent, "idle");
        json_decref(parent);
        free_message(&m);
    }
    const struct timespec tick = {0, 10 * 1000 * 1000};
    for (int waited = 0; executing && waited < GRACE_MS; waited += 10) nanosleep(&tick, NULL);
    if (executing) {
        fprintf(stderr, "mha-repl kernel: the running cell does not stop: the kernel ends\n");
        _exit(EXIT_FAILURE);
    }
    return NULL;
}

/* The heartbeat: every ping comes straight back, whole, each of its frames. */
static void *heartbeat_loop(void *unused) {
    (void)unused;
    zmq_pollitem_t item = {K.heartbeat, 0, ZMQ_POLLIN, 0};
    while (!stopping) {
        if (zmq_poll(&item, 1, POLL_MS) <= 0) continue;
        zmq_msg_t frame;
        zmq_msg_init(&frame);
        while (zmq_msg_recv(&frame, K.heartbeat, ZMQ_DONTWAIT) >= 0) {
            int more = zmq_msg_more(&frame);
            if (zmq_msg_send(&frame, K.heartbeat, more ? ZMQ_SNDMORE : 0) < 0) break;
            if (!more) break;
        }
        zmq_msg_close(&frame);
    }
    return NULL;
}


/* ---- the cells: mha.kernel in Lua ---- */

/* Pushes mha.kernel's field name (after require); returns its type. */
static int push_kernel_field(lua_State *L, const char *name) {
    lua_getglobal(L, "require");
    lua_pushliteral(L, "mha.kernel");
    if (lua_pcall(L, 1, 1, 0) != LUA_OK || !lua_istable(L, -1)) {
        fprintf(stderr, "mha-repl kernel: mha.kernel: %s\n", luaL_tolstring(L, -1, NULL));
        lua_pop(L, 2);
        lua_pushnil(L);
        return LUA_TNIL;
    }
    lua_getfield(L, -1, name);
    lua_remove(L, -2);
    return lua_type(L, -1);
}

/* Calls the function below nargs arguments with the REPL's message handler; nres results or nil. */
static int call_lua(lua_State *L, int nargs, int nres) {
    int base = lua_gettop(L) - nargs;
    lua_getfield(L, LUA_REGISTRYINDEX, "mha.repl.msghandler");
    lua_insert(L, base);
    int status = lua_pcall(L, nargs, nres, base);
    lua_remove(L, base);
    if (status != LUA_OK) {
        fprintf(stderr, "mha-repl kernel: %s\n", luaL_tolstring(L, -1, NULL));
        lua_pop(L, 2);
        for (int i = 0; i < nres; i++) lua_pushnil(L);
    }
    return status;
}

/* mha.kernel's sink: one output of the running cell (an nbformat output as a table) goes out on
 * iopub as stream, execute_result, display_data or error. */
static int l_sink(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    json_t *output = mha_lua_tojson(L, 1);
    if (!output) return lua_error(L);
    char type[16] = "";   /* a copy: deleting the key below frees the string */
    const char *given = json_string_value(json_object_get(output, "output_type"));
    if (given && strlen(given) < sizeof type) memcpy(type, given, strlen(given) + 1);
    if ((strcmp(type, "stream") == 0 || strcmp(type, "error") == 0 || strcmp(type, "display_data") == 0
                 || strcmp(type, "execute_result") == 0)) {
        json_object_del(output, "output_type");
        if (strcmp(type, "execute_result") == 0)
            json_object_set_new(output, "execution_count", json_integer(K.execution_count));
        publish(current_parent, type, json_incref(output));
    }
    json_decref(output);
    return 0;
}

/* The CPU-time budget of a cell: ITIMER_PROF fires SIGPROF once after seconds of the process's
 * CPU time (0 disarms it). */
static void arm_cell_timer(double seconds) {
    struct itimerval t;
    memset(&t, 0, sizeof t);
    t.it_value.tv_sec = (time_t)seconds;
    t.it_value.tv_usec = (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6);
    setitimer(ITIMER_PROF, &t, NULL);
}

/* mha.kernel.cpu_limit_hit() -> the seconds of MHA_CELL_SECONDS when they stopped the running
 * cell, else nil: the cell's "interrupted" error then says which limit. */
static int l_cpu_limit_hit(lua_State *L) {
    if (!cpu_limit_hit) return 0;
    lua_pushnumber(L, cell_seconds);
    return 1;
}

/* nil and why, as a failed io call returns them. */
static int nil_and(lua_State *L, const char *why) {
    lua_pushnil(L);
    lua_pushstring(L, why);
    return 2;
}

/* mha.kernel.append_answer(line) -> true | nil, message: appends one line (a JSON record of what
 * answer() decided) to $MHA_ANSWERS, else, in a JupyterHub (JUPYTERHUB_USER set: a class's
 * server), to ~/.mha-repl/answers.jsonl (the folder made 0700, the file 0600); elsewhere nothing
 * is recorded. One write(2) on an O_APPEND descriptor: two kernels of one student never interleave
 * their lines and a reader never sees half of one (a line is far under PIPE_BUF). */
static int l_append_answer(lua_State *L) {
    size_t len;
    const char *line = luaL_checklstring(L, 1, &len);
    char path[4096];
    const char *file = getenv("MHA_ANSWERS"), *home = getenv("HOME");
    const char *hub_user = getenv("JUPYTERHUB_USER");
    if (file && *file) snprintf(path, sizeof path, "%s", file);
    else if (!hub_user || !*hub_user) return nil_and(L, "append_answer: not in a JupyterHub, no MHA_ANSWERS");
    else if (home && *home) {
        snprintf(path, sizeof path, "%s/.mha-repl", home);
        if (mkdir(path, 0700) != 0 && errno != EEXIST) goto fail;
        snprintf(path, sizeof path, "%s/.mha-repl/answers.jsonl", home);
    } else return nil_and(L, "append_answer: neither MHA_ANSWERS nor HOME is set");
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) goto fail;
    ssize_t n;
    do n = write(fd, line, len); while (n < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    errno = saved;
    if (n != (ssize_t)len) goto fail;
    lua_pushboolean(L, 1);
    return 1;
fail:
    return luaL_fileresult(L, 0, path);
}

/* execute_request: mha.kernel.execute(code) -> status ("ok", "error", "aborted"), the error output,
 * the action a command asked for ("reset", "quit"). Returns 1 when the action is :reset. */
static int execute(lua_State *L, message *m) {
    const char *code = json_string_value(json_object_get(m->content, "code"));
    int silent = json_is_true(json_object_get(m->content, "silent"));
    if (!code) code = "";
    if (!silent) K.execution_count++;
    json_t *parent = parent_of(m);
    current_parent = parent;
    publish(parent, "execute_input", json_pack("{s:s, s:i}", "code", code, "execution_count", K.execution_count));
    int top = lua_gettop(L);
    int reset = 0;
    json_t *content = NULL;
    if (push_kernel_field(L, "execute") == LUA_TFUNCTION) {
        lua_pushstring(L, code);
        lua_pushcfunction(L, l_sink);
        running = L;
        executing = 1;
        cpu_limit_hit = 0;
        arm_cell_timer(cell_seconds);
        call_lua(L, 2, 3);
        arm_cell_timer(0);
        executing = 0;
        if (stopped_fn) stopped_fn(L);
        const char *status = lua_tostring(L, -3);
        const char *action = lua_tostring(L, -1);
        reset = action && strcmp(action, "reset") == 0;
        if (action && strcmp(action, "quit") == 0) stopping = 1;
        if (status && strcmp(status, "ok") == 0) {
            content = json_pack("{s:s, s:i, s:{}, s:[]}", "status", "ok", "execution_count", K.execution_count,
                                "user_expressions", "payload");
        } else {
            json_t *err = lua_istable(L, -2) ? mha_lua_tojson(L, -2) : NULL;
            if (!err) err = json_pack("{s:s, s:s, s:[]}", "ename", "Error", "evalue", "the cell did not finish",
                                      "traceback");
            json_object_del(err, "output_type");
            json_object_set_new(err, "status", json_string("error"));
            json_object_set_new(err, "execution_count", json_integer(K.execution_count));
            content = err;
        }
    } else {
        content = json_pack("{s:s, s:s, s:s, s:[], s:i}", "status", "error", "ename", "KernelError", "evalue",
                            "the module mha.kernel is not in this build", "traceback", "execution_count",
                            K.execution_count);
    }
    lua_settop(L, top);
    current_parent = NULL;
    reply(K.shell, m, "execute_reply", content);
    json_decref(parent);
    return reset;
}

/* complete_request, inspect_request, is_complete_request: mha.kernel.complete/inspect/is_complete
 * give the reply's content as a table. */
static void answer_from_lua(lua_State *L, message *m, const char *fn, const char *reply_type) {
    int top = lua_gettop(L);
    json_t *content = NULL;
    if (push_kernel_field(L, fn) == LUA_TFUNCTION) {
        mha_lua_pushjson(L, m->content);
        if (call_lua(L, 1, 1) == LUA_OK && lua_istable(L, -1)) content = mha_lua_tojson(L, -1);
    }
    lua_settop(L, top);
    if (!content) content = json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", "KernelError", "evalue",
                                      "mha.kernel could not answer", "traceback");
    reply(K.shell, m, reply_type, content);
}

/* One shell message. Returns 1 when a cell asked for :reset. */
static int handle_shell(lua_State *L, message *m) {
    const char *type = json_string_value(json_object_get(m->header, "msg_type"));
    if (!type) return 0;
    json_t *parent = parent_of(m);
    int reset = 0;
    publish_status(parent, "busy");
    if (strcmp(type, "kernel_info_request") == 0) reply(K.shell, m, "kernel_info_reply", kernel_info());
    else if (strcmp(type, "execute_request") == 0) reset = execute(L, m);
    else if (strcmp(type, "complete_request") == 0) answer_from_lua(L, m, "complete", "complete_reply");
    else if (strcmp(type, "inspect_request") == 0) answer_from_lua(L, m, "inspect", "inspect_reply");
    else if (strcmp(type, "is_complete_request") == 0) answer_from_lua(L, m, "is_complete", "is_complete_reply");
    else if (strcmp(type, "history_request") == 0)
        reply(K.shell, m, "history_reply", json_pack("{s:s, s:[]}", "status", "ok", "history"));
    else if (strcmp(type, "comm_info_request") == 0)
        reply(K.shell, m, "comm_info_reply", json_pack("{s:s, s:{}}", "status", "ok", "comms"));
    else if (strcmp(type, "shutdown_request") == 0) {
        int restart = json_is_true(json_object_get(m->content, "restart"));
        reply(K.shell, m, "shutdown_reply", json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
        stopping = 1;
    } else fprintf(stderr, "mha-repl kernel: shell message '%s' is not handled\n", type);
    publish_status(parent, "idle");
    json_decref(parent);
    return reset;
}


/* ---- starting: the connection file, the sockets, the threads ---- */

static void on_sigint(int sig) {
    (void)sig;
    if (executing && running && stop_fn) stop_fn(running);   /* idle: nothing to stop */
}

/* The cell's CPU time is up: stop it as an interrupt does, on the main thread (SIGPROF may come to
 * any thread of the process). */
static void on_sigprof(int sig) {
    (void)sig;
    if (!executing) return;
    cpu_limit_hit = 1;
    pthread_kill(K.main_thread, SIGINT);
}

static int bind_socket(void **socket, int type, const char *transport, const char *ip, json_t *conn, const char *port_key) {
    json_t *port = json_object_get(conn, port_key);
    if (!json_is_integer(port)) {
        fprintf(stderr, "mha-repl --kernel: the connection file has no %s\n", port_key);
        return -1;
    }
    char endpoint[300];
    const char *sep = strcmp(transport, "ipc") == 0 ? "-" : ":";
    snprintf(endpoint, sizeof endpoint, "%s://%s%s%lld", transport, ip, sep, (long long)json_integer_value(port));
    *socket = zmq_socket(K.ctx, type);
    int linger = 1000;
    int64_t max_frame = MAX_FRAME_BYTES;
    if (*socket) zmq_setsockopt(*socket, ZMQ_LINGER, &linger, sizeof linger);
    if (*socket) zmq_setsockopt(*socket, ZMQ_MAXMSGSIZE, &max_frame, sizeof max_frame);
    if (!*socket || zmq_bind(*socket, endpoint) != 0) {
        fprintf(stderr, "mha-repl --kernel: cannot bind %s (%s): %s\n", endpoint, port_key, zmq_strerror(errno));
        return -1;
    }
    return 0;
}

static int start(const char *connection_file) {
    json_error_t err;
    json_t *conn = json_load_file(connection_file, 0, &err);
    if (!conn) {
        fprintf(stderr, "mha-repl --kernel: %s: %s\n", connection_file, err.text);
        return -1;
    }
    const char *transport = json_string_value(json_object_get(conn, "transport"));
    const char *ip = json_string_value(json_object_get(conn, "ip"));
    const char *key = json_string_value(json_object_get(conn, "key"));
    const char *scheme = json_string_value(json_object_get(conn, "signature_scheme"));
    if (!transport) transport = "tcp";
    if (!ip) ip = "127.0.0.1";
    if (!key) key = "";
    if (*key && scheme && strcmp(scheme, "hmac-sha256") != 0) {
        fprintf(stderr, "mha-repl --kernel: signature scheme '%s' is not supported (hmac-sha256 is)\n", scheme);
        json_decref(conn);
        return -1;
    }
    if (strlen(key) >= sizeof K.key) {
        fprintf(stderr, "mha-repl --kernel: the key is longer than %zu bytes\n", sizeof K.key - 1);
        json_decref(conn);
        return -1;
    }
    memcpy(K.key, key, strlen(key) + 1);
    K.keylen = strlen(key);
    if (K.keylen == 0)
        fprintf(stderr, "mha-repl --kernel: the connection file has no key: messages are not signed, and "
                        "anyone who can reach its ports can run code\n");
    unsigned char r[16];
    if (RAND_bytes(r, sizeof r) != 1) { json_decref(conn); return -1; }
    for (int i = 0; i < 16; i++) snprintf(K.session + 2 * i, 3, "%02x", r[i]);
    K.ctx = zmq_ctx_new();
    int bad = !K.ctx
        || bind_socket(&K.shell, ZMQ_ROUTER, transport, ip, conn, "shell_port")
        || bind_socket(&K.control, ZMQ_ROUTER, transport, ip, conn, "control_port")
        || bind_socket(&K.stdin_socket, ZMQ_ROUTER, transport, ip, conn, "stdin_port")
        || bind_socket(&K.iopub, ZMQ_PUB, transport, ip, conn, "iopub_port")
        || bind_socket(&K.heartbeat, ZMQ_REP, transport, ip, conn, "hb_port");
    json_decref(conn);
    if (bad) return -1;
    pthread_mutex_init(&K.iopub_lock, NULL);
    K.main_thread = pthread_self();
    K.parent = getppid();
    /* the threads never take SIGINT (it goes to the main thread, which runs the cells) nor the
     * cell timer's SIGPROF */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    pthread_create(&K.control_thread, NULL, control_loop, NULL);
    pthread_create(&K.heartbeat_thread, NULL, heartbeat_loop, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* what Lua writes goes to the notebook through mha.kernel, not to the server's log; a cell that
     * reads stdin reads nothing (no input_request on the stdin channel) instead of hanging */
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) { dup2(null, 0); dup2(null, 1); close(null); }
    publish_status(NULL, "starting");
    return 0;
}

static void finish(void) {
    stopping = 1;
    pthread_join(K.control_thread, NULL);
    pthread_join(K.heartbeat_thread, NULL);
    void *sockets[] = {K.shell, K.control, K.stdin_socket, K.iopub, K.heartbeat};
    for (size_t i = 0; i < sizeof sockets / sizeof sockets[0]; i++) zmq_close(sockets[i]);
    zmq_ctx_term(K.ctx);   /* waits (up to the linger) until the last replies are out */
    pthread_mutex_destroy(&K.iopub_lock);
}

int mha_kernel_serve(lua_State *L, const char *connection_file, void (*stop)(lua_State *L),
                     void (*stopped)(lua_State *L)) {
    stop_fn = stop;
    stopped_fn = stopped;
    if (!started) {
        if (start(connection_file) != 0) return MHA_KERNEL_ERROR;
        started = 1;
    }
    /* SIGINT stops the running cell, and only that: set again each time, as opening a new state for
     * :reset ran the REPL's docall, which leaves SIGINT at its default */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_sigprof;
    sigaction(SIGPROF, &sa, NULL);
    const char *limit = getenv("MHA_CELL_SECONDS");
    cell_seconds = limit ? strtod(limit, NULL) : 0;
    if (!(cell_seconds > 0 && cell_seconds < 1e9)) cell_seconds = 0;
    /* show's tables, plots kept; the cell's CPU limit, for the error that names it */
    if (push_kernel_field(L, "setup") == LUA_TFUNCTION) call_lua(L, 0, 0);
    else lua_pop(L, 1);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "mha.kernel");
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1)) {
        lua_pushcfunction(L, l_cpu_limit_hit);
        lua_setfield(L, -2, "cpu_limit_hit");
        lua_pushcfunction(L, l_append_answer);
        lua_setfield(L, -2, "append_answer");
    }
    lua_pop(L, 1);
    zmq_pollitem_t item = {K.shell, 0, ZMQ_POLLIN, 0};
    while (!stopping) {
        int r = zmq_poll(&item, 1, POLL_MS);
        if (r <= 0) continue;   /* the timeout, or EINTR from an interrupt while idle */
        message m;
        if (recv_message(K.shell, &m) != 0) continue;
        int reset = handle_shell(L, &m);
        free_message(&m);
        if (reset) return MHA_KERNEL_RESET;
    }
    finish();
    return MHA_KERNEL_DONE;
}
