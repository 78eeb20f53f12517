/* lua/repl/history.c - the REPL's input history, kept across sessions in $MHA_REPL_HISTORY or
 * ~/.mha_repl_history (readline's history list in memory, this file on disk).
 *
 * The file starts with the line HISTORY_HEADER, then one entry per line, UTF-8, oldest first. A
 * multi-line entry stays one entry: in the file a newline inside an entry is written as the two
 * characters \n and a backslash as \\ (nothing else is escaped). At most HISTORY_MAX entries; a
 * repeat of the previous entry is not added. At exit the file is rewritten atomically: under flock
 * on FILE itself, re-read what other REPLs wrote meanwhile, append this session's entries, write
 * FILE.tmp-XXXXXX in the same directory, fsync, rename over FILE. Two REPLs exiting at once thus
 * both keep their entries. The file is written as soon as an entry is added, so a REPL ended at
 * once (a second SIGTERM, SIGKILL) has lost nothing typed. The rewritten file keeps the mode and
 * owner of the old one; a file we may not write (0444) is left alone, with the warning;
 * FILE.tmp-XXXXXX left by a REPL killed while writing are removed
 * (under the lock, no other REPL can be writing one). A device (/dev/null) or an empty
 * MHA_REPL_HISTORY turns the history off; a folder does too, with the warning. Any failure is one
 * warning, never an error.
 *
 * Files that are not ours are never rewritten (history_refusal): a file whose first line is not
 * HISTORY_HEADER (one without it is taken only at the default path, from an older mha-repl, when it
 * is ours); a symbolic link on the way that another user owns (root's are the system's), or that
 * sits in a folder anyone may write to with the sticky bit (/tmp) and is not ours; a file in such a
 * folder that is not ours. Links are followed one at a time here, never by realpath(), which would
 * step around the kernel's fs.protected_symlinks; the file itself is opened with O_NOFOLLOW. A
 * refused file turns the history off with one warning. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <readline/readline.h>
#include <readline/history.h>

#include "history.h"

#define HISTORY_MAX      1000
#define HISTORY_ENV      "MHA_REPL_HISTORY"
#define TEMP_SUFFIX      ".tmp-XXXXXX"   /* the file being written, beside FILE: FILE.tmp-Ab3xY9 */
#define HISTORY_HEADER   "# mha-repl history 1"   /* the first line, so that no other file is
                                                     rewritten */
#define LINK_DEPTH       8

static char *history_path = NULL;
static char **session_entries = NULL;   /* entries typed in this session, oldest first */
static size_t session_count = 0, session_cap = 0;
static int history_warned = 0;
static int history_headerless_ok = 0;   /* the default file of an older mha-repl: taken without the
                                           header */
static const char *history_program = "mha-repl";   /* the name warnings start with */

static void history_warn(const char *what, const char *path) {
    if (history_warned) return;
    history_warned = 1;
    fprintf(stderr, "%s: warning: cannot %s the history file %s: %s (history is not kept)\n", history_program, what,
            path, strerror(errno));
}

/* Whether the folder path would be written in is one (errno set when not: ENOENT, ENOTDIR). */
static int folder_exists(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return 1;   /* the working directory */
    char folder[PATH_MAX];
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof folder) return 1;   /* too long to check here: the write will say */
    memcpy(folder, path, n);
    folder[n] = '\0';
    struct stat st;
    if (stat(folder, &st) != 0) return 0;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return 0;
    }
    return 1;
}

/* One warning that the file is not used, and why: history is off for the session. */
static void history_refuse(const char *path, const char *why) {
    if (!history_warned)
        fprintf(stderr, "%s: warning: history not kept: %s %s\n", history_program, path, why);
    history_warned = 1;
}

static char *history_escape(const char *s) {
    size_t n = 0;
    for (const char *p = s; *p; p++) n += (*p == '\n' || *p == '\\') ? 2 : 1;
    char *out = malloc(n + 1), *q = out;
    if (!out) return NULL;
    for (const char *p = s; *p; p++) {
        if (*p == '\n') { *q++ = '\\'; *q++ = 'n'; }
        else if (*p == '\\') { *q++ = '\\'; *q++ = '\\'; }
        else *q++ = *p;
    }
    *q = '\0';
    return out;
}

/* The entry a line of the file holds (malloc'd), from its len bytes: \n a newline, \\ a backslash.
 * A NUL byte (another program wrote it; readline never gives one) becomes the two characters \0,
 * which is what it means inside a Lua string, so the entry is neither cut at it nor dropped when it
 * starts with one, and the file is written back without losing it. NULL when out of memory. */
static char *history_unescape(const char *line, size_t len) {
    char *out = malloc(2 * len + 1), *q = out;
    if (!out) return NULL;
    for (size_t i = 0; i < len; i++) {
        if (line[i] == '\0') { *q++ = '\\'; *q++ = '0'; }
        else if (line[i] == '\\' && i + 1 < len && line[i + 1] == 'n') { *q++ = '\n'; i++; }
        else if (line[i] == '\\' && i + 1 < len && line[i + 1] == '\\') { *q++ = '\\'; i++; }
        else *q++ = line[i];
    }
    *q = '\0';
    return out;
}

static void free_entries(char **entries, size_t n) {
    for (size_t i = 0; i < n; i++) free(entries[i]);
    free(entries);
}

/* Reads the history file into a malloc'd array of entries (*n of them). A missing file is empty.
 * *headed: 1 when the file starts with HISTORY_HEADER (not an entry), 0 when it is empty or
 * missing, -1 when it has lines but not the header. Returns -1 (errno set) when the file exists but
 * cannot be read; a symbolic link there (put in place after the checks) cannot be read (ELOOP). */
static int history_read(const char *path, char ***entries, size_t *n, int *headed) {
    *entries = NULL;
    *n = 0;
    *headed = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return errno == ENOENT ? 0 : -1;
    }
    size_t cap = 0;
    char *line = NULL;
    size_t linecap = 0;
    ssize_t len;
    int first = 1;
    while ((len = getline(&line, &linecap, f)) >= 0) {
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        if (first) {
            first = 0;
            *headed = (size_t)len == strlen(HISTORY_HEADER) && memcmp(line, HISTORY_HEADER, (size_t)len) == 0 ? 1 : -1;
            if (*headed == 1) continue;
        }
        if (len == 0) continue;
        char *entry = history_unescape(line, (size_t)len);
        if (*n == cap || !entry) {
            cap = cap ? 2 * cap : 256;
            char **grown = entry ? realloc(*entries, cap * sizeof *grown) : NULL;
            if (!grown) {  /* a partial list would be written back as the whole: fail instead */
                free(entry);
                free(line);
                fclose(f);
                free_entries(*entries, *n);
                *entries = NULL;
                *n = 0;
                errno = ENOMEM;
                return -1;
            }
            *entries = grown;
        }
        (*entries)[(*n)++] = entry;
    }
    free(line);
    fclose(f);
    return 0;
}

/* The folder of path (malloc'd): "." for a bare name, "/" for a name at the root. */
static char *folder_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* True when the folder of path is one anyone may write to, with the sticky bit (/tmp): there a name
 * is its owner's to change, and another user's name may lead anywhere. */
static int in_public_folder(const char *path) {
    char *dir = folder_of(path);
    struct stat st;
    int public = dir && stat(dir, &st) == 0 && (st.st_mode & S_ISVTX) && (st.st_mode & S_IWOTH);
    free(dir);
    return public;
}

/* Why the symbolic link at path (lstat'd into st) may not be followed, or NULL. */
static const char *link_refusal(const char *path, const struct stat *st) {
    if (st->st_uid == geteuid()) return NULL;
    if (in_public_folder(path)) return "is another user's symbolic link, in a folder anyone may write to";
    if (st->st_uid != 0) return "is another user's symbolic link";
    return NULL;
}

/* What the symbolic link at path says (malloc'd), relative to the link's folder when it is
 * relative. */
static char *link_text(const char *path) {
    char to[PATH_MAX];
    ssize_t n = readlink(path, to, sizeof to - 1);
    if (n <= 0) return NULL;
    to[n] = '\0';
    const char *slash = strrchr(path, '/');
    size_t dirlen = (to[0] != '/' && slash) ? (size_t)(slash - path) + 1 : 0;
    char *out = malloc(dirlen + (size_t)n + 1);
    if (!out) return NULL;
    memcpy(out, path, dirlen);
    memcpy(out + dirlen, to, (size_t)n + 1);
    return out;
}

/* Checks every symbolic link on the way to path, those its links lead through included: NULL when
 * all may be followed, else why not, with the link's name in where. */
static const char *check_links(const char *path, int depth, char *where, size_t wn) {
    if (depth > LINK_DEPTH) {
        snprintf(where, wn, "%s", path);
        return "leads through too many symbolic links";
    }
    size_t len = strlen(path);
    char *prefix = malloc(len + 1);
    if (!prefix) return NULL;
    const char *why = NULL;
    for (size_t i = 1; i <= len && !why; i++) {
        if ((i < len && path[i] != '/') || path[i - 1] == '/') continue;   /* each name, once */
        memcpy(prefix, path, i);
        prefix[i] = '\0';
        struct stat st;
        if (lstat(prefix, &st) != 0) break;   /* missing: nothing further is followed */
        if (!S_ISLNK(st.st_mode)) continue;
        why = link_refusal(prefix, &st);
        if (why) {
            snprintf(where, wn, "%s", prefix);
            break;
        }
        char *to = link_text(prefix);
        if (to) why = check_links(to, depth + 1, where, wn);
        free(to);
    }
    free(prefix);
    return why;
}

/* The file the history is kept in (malloc'd): path, or where its symbolic links lead (for a link
 * whose target does not exist yet, that target), followed one at a time. NULL: no memory. */
static char *final_target(const char *path) {
    char *current = strdup(path);
    for (int depth = 0; current && depth < LINK_DEPTH; depth++) {
        struct stat st;
        if (lstat(current, &st) != 0 || !S_ISLNK(st.st_mode)) return current;
        char *to = link_text(current);
        if (!to) return current;
        free(current);
        current = to;
    }
    return current;
}

/* Why the history file at path (after check_links) is not ours to rewrite, or NULL. st: its lstat
 * or fstat when it exists (exists = 0: it does not); headed: what history_read said. */
static const char *history_refusal(const char *path, const struct stat *st, int exists, int headed) {
    if (exists && st->st_uid != geteuid() && in_public_folder(path))
        return "is another user's file, in a folder anyone may write to";
    if (headed < 0 && !(history_headerless_ok && exists && st->st_uid == geteuid()))
        return "is not an mha-repl history file (its first line is not '" HISTORY_HEADER "'): it is left alone";
    return NULL;
}

/* Chooses the path and loads the file into readline's history. */
void repl_history_load(const char *program) {
    history_program = program;
    stifle_history(HISTORY_MAX);   /* readline's list keeps the newest HISTORY_MAX, as the file
                                      does */
    const char *env = getenv(HISTORY_ENV);
    if (env) {
        if (*env == '\0') return;
        history_path = strdup(env);
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home) return;
        size_t n = strlen(home) + sizeof HISTORY_DEFAULT + 1;
        history_path = malloc(n);
        if (history_path) snprintf(history_path, n, "%s/%s", home, HISTORY_DEFAULT);
    }
    if (!history_path) return;
    history_headerless_ok = env == NULL;   /* ~/.mha_repl_history of an older mha-repl: ours by its
                                              name */
    char where[PATH_MAX];
    const char *why = check_links(history_path, 0, where, sizeof where);
    if (why) {
        history_refuse(where, why);
        free(history_path);
        history_path = NULL;
        return;
    }
    /* a symbolic link: its target is the file read and rewritten (rename would replace the link) */
    char *target = final_target(history_path);
    if (target) {
        free(history_path);
        history_path = target;
    }
    struct stat st;
    int exists = lstat(history_path, &st) == 0;
    if (!exists && !folder_exists(history_path)) {   /* said now, not after the first input */
        history_warn("use", history_path);
        free(history_path);
        history_path = NULL;
        return;
    }
    if (exists && !S_ISREG(st.st_mode)) {  /* /dev/null: no history */
        if (S_ISDIR(st.st_mode)) {
            errno = EISDIR;
            history_warn("use", history_path);
        }
        free(history_path);
        history_path = NULL;
        return;
    }
    char **entries;
    size_t n;
    int headed;
    if (history_read(history_path, &entries, &n, &headed) != 0) {
        history_warn("read", history_path);
        return;
    }
    why = history_refusal(history_path, &st, exists, headed);
    if (why) {
        history_refuse(history_path, why);
        free_entries(entries, n);
        free(history_path);
        history_path = NULL;
        return;
    }
    for (size_t i = n > HISTORY_MAX ? n - HISTORY_MAX : 0; i < n; i++) add_history(entries[i]);
    free_entries(entries, n);
}

/* Adds a complete input to readline's history and to this session's entries, unless it repeats the
 * previous entry. */
void repl_history_add(const char *entry) {
    if (!*entry) return;
    HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
    if (last && strcmp(last->line, entry) == 0) return;
    add_history(entry);
    if (session_count == session_cap) {
        size_t cap = session_cap ? 2 * session_cap : 64;
        char **grown = realloc(session_entries, cap * sizeof *grown);
        if (!grown) return;
        session_entries = grown;
        session_cap = cap;
    }
    char *copy = strdup(entry);
    if (copy) session_entries[session_count++] = copy;
    repl_history_save();   /* on disk at once: a REPL killed later loses nothing */
}

/* Takes the lock on the history file: flock on the file itself, opened for reading
 * (and created when missing, so there is something to lock). The file this REPL waited on may have
 * been renamed over by the REPL that held the lock; then the lock is on a file no longer in the
 * directory, and it is taken again on the new one. Returns the locked descriptor, or -1
 * (errno set). */
static int history_lock(void) {
    for (;;) {
        int fd = open(history_path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) return -1;
        struct stat locked, named;
        if (flock(fd, LOCK_EX) != 0 || fstat(fd, &locked) != 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (lstat(history_path, &named) == 0 && named.st_dev == locked.st_dev && named.st_ino == locked.st_ino)
            return fd;
        close(fd);  /* replaced while we waited: lock the new one */
    }
}

/* Removes FILE.tmp-XXXXXX files beside the history file. Called under the lock, when no other REPL
 * can be writing one, so each was left by a REPL killed between writing it and renaming it. */
static void remove_stale_temps(void) {
    const char *slash = strrchr(history_path, '/');
    const char *base = slash ? slash + 1 : history_path;
    size_t baselen = strlen(base), suffixlen = sizeof TEMP_SUFFIX - 1;
    char *dir = slash ? strndup(history_path, (size_t)(slash - history_path) + 1) : strdup("./");
    if (!dir) return;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            const char *name = e->d_name;
            if (strlen(name) != baselen + suffixlen || strncmp(name, base, baselen) != 0 ||
                strncmp(name + baselen, TEMP_SUFFIX, suffixlen - 6) != 0)
                continue;
            size_t n = strlen(dir) + strlen(name) + 1;
            char *stale = malloc(n);
            if (stale) {
                snprintf(stale, n, "%s%s", dir, name);
                struct stat st;   /* only our own regular files: never another user's, never a
                                     link */
                if (lstat(stale, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) unlink(stale);
                free(stale);
            }
        }
        closedir(d);
    }
    free(dir);
}

/* Writes the history file at exit (see above); registered with atexit so os.exit() keeps it too. */
void repl_history_save(void) {
    if (!history_path || session_count == 0) return;
    char *tmp = NULL, **entries = NULL;
    size_t n = 0;
    int lockfd = -1, fd = -1, made_tmp = 0;
    FILE *f = NULL;
    size_t plen = strlen(history_path);
    tmp = malloc(plen + sizeof TEMP_SUFFIX);
    if (!tmp) goto fail;
    snprintf(tmp, plen + sizeof TEMP_SUFFIX, "%s" TEMP_SUFFIX, history_path);
    if ((lockfd = history_lock()) < 0) goto fail;
    struct stat old;
    if (fstat(lockfd, &old) != 0) goto fail;
    /* a file made read-only (0444) is not ours to replace, not even root's: rename would ignore its
     * mode */
    if (!(old.st_mode & S_IWUSR) || access(history_path, W_OK) != 0) {
        errno = EACCES;
        goto fail;
    }
    remove_stale_temps();
    int headed;
    if (history_read(history_path, &entries, &n, &headed) != 0) goto fail;
    /* changed since the start? */
    const char *why = history_refusal(history_path, &old, 1, headed);
    if (why) {
        history_refuse(history_path, why);
        free(history_path);
        history_path = NULL;
        goto done;
    }
    /* the merged list: the file as it is now, then this session's entries, no repeats in a row */
    size_t total = n + session_count;
    char **merged = realloc(entries, (total ? total : 1) * sizeof *merged);
    if (!merged) goto fail;
    entries = merged;
    for (size_t i = 0; i < session_count; i++) {
        if (n > 0 && strcmp(entries[n - 1], session_entries[i]) == 0) continue;
        entries[n] = strdup(session_entries[i]);
        if (!entries[n]) goto fail;
        n++;
    }
    fd = mkstemp(tmp);
    if (fd < 0) goto fail;
    made_tmp = 1;
    /* the new file as the old one: its mode, and its owner when we may give it
     * (root editing a user's) */
    if (fchmod(fd, old.st_mode & 07777) != 0) goto fail;
    if (fchown(fd, old.st_uid, old.st_gid) != 0 && errno != EPERM) goto fail;
    f = fdopen(fd, "w");
    if (!f) goto fail;
    fd = -1;
    fprintf(f, "%s\n", HISTORY_HEADER);
    for (size_t i = n > HISTORY_MAX ? n - HISTORY_MAX : 0; i < n; i++) {
        char *e = history_escape(entries[i]);
        if (!e) goto fail;
        fprintf(f, "%s\n", e);
        free(e);
    }
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) goto fail;
    if (fclose(f) != 0) { f = NULL; goto fail; }
    f = NULL;
    if (rename(tmp, history_path) != 0) goto fail;
    goto done;
fail:
    history_warn("write", history_path);
    if (f) fclose(f);
    if (fd >= 0) close(fd);
    if (made_tmp) unlink(tmp);  /* remove the partial file */
done:
    if (lockfd >= 0) close(lockfd);  /* releases the flock */
    free_entries(entries, n);
    free(tmp);
    free_entries(session_entries, session_count);
    session_entries = NULL;
    session_count = session_cap = 0;
}
