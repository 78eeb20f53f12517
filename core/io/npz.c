/* core/io/npz.c - NumPy .npz archives: the zip container (stored and deflated members; zlib does
 * deflate and CRC-32) around .npy members, which core/io/npy.c encodes and parses.
 *
 * The zip layout (PKWARE APPNOTE 6.3), every integer little-endian:
 *     per member:  local header (30 bytes) name extra | data
 *     then:        central directory: one header (46 bytes) name extra comment per member
 *     then:        end of central directory record (22 bytes) comment
 * The reader trusts the central directory for sizes, CRC-32 and offsets - np.savez's local headers
 * hold 0xFFFFFFFF sizes with a zip64 extra field, and a streaming writer leaves them zero and
 * appends a data descriptor - and reads from each local header only the lengths that say where its
 * data starts, after checking that it names the same member. Every offset is checked against the
 * bytes it is given. */

#include "io/npz.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define SIG_LOCAL          0x04034b50u
#define SIG_CENTRAL        0x02014b50u
#define SIG_END            0x06054b50u
#define SIG_END64_LOCATOR  0x07064b50u
#define LOCAL_LEN          30
#define CENTRAL_LEN        46
#define END_LEN            22
#define END64_LOCATOR_LEN  20
#define MAX_COMMENT        0xffffu
#define ZIP64_EXTRA_ID     0x0001u
#define ZIP32_MAX          0xffffffffu  /* a 32-bit field at this value defers to the zip64 extra
                                           field */
#define METHOD_STORED      0
#define METHOD_DEFLATED    8
#define FLAG_ENCRYPTED     0x0001u
#define FLAG_UTF8          0x0800u      /* the name is UTF-8 (set, as Python's zipfile does, for
                                           non-ASCII) */
#define VERSION_NEEDED     20           /* 2.0: deflate */
#define VERSION_MADE_BY    (3u << 8 | 20u)  /* Unix, 2.0 */
#define DOS_DATE_1980      0x0021u      /* 1980-01-01, the earliest date a zip can hold; time
                                           00:00:00 */
#define FILE_ATTRS         (0100644u << 16) /* a regular file, rw-r--r-- */
#define DEFLATE_MAX_RATIO  1032u        /* deflate never expands a byte into more than 1032 bytes */
#define NPY_SUFFIX         ".npy"

/* ---- little-endian fields ---- */

static uint32_t rd16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const unsigned char *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr16(unsigned char *p, uint32_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void wr32(unsigned char *p, uint32_t v) { wr16(p, v & 0xffffu); wr16(p + 2, v >> 16); }

/* zlib's CRC-32 over any length (its length argument is an unsigned int). */
static uint32_t crc32_of(const unsigned char *p, size_t n) {
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt chunk = n > UINT_MAX ? UINT_MAX : (uInt)n;
        crc = crc32(crc, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)crc;
}

void mha_npz_release(mha_npz *archive) {
    if (archive == NULL || archive->entries == NULL) return;
    for (size_t i = 0; i < archive->count; i++) {
        mha_npz_entry *e = &archive->entries[i];
        if (e->name) mha_free(e->name, strlen(e->name) + 1);
        mha_release(&e->tensor);
    }
    mha_free(archive->entries, archive->count * sizeof *archive->entries);
    archive->entries = NULL;
    archive->count = 0;
}

/* ---- names: every member's name differs from every other's ---- */

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* *repeated = a name two of names[0..n) share, or NULL when all differ. n log n - a sorted copy of
 * the pointers - so that an archive of 65,000 members is checked at once. False when out of
 * memory. */
static bool find_repeated(const char **repeated, const char *const *names, size_t n) {
    *repeated = NULL;
    if (n < 2) return true;
    const char **sorted = mha_alloc(n * sizeof *sorted);
    if (sorted == NULL) return false;
    memcpy(sorted, names, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, compare_names);
    for (size_t i = 1; i < n && *repeated == NULL; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) *repeated = sorted[i];
    mha_free(sorted, n * sizeof *sorted);
    return true;
}

/* ---- reading ---- */

/* What the central directory says about one member. */
typedef struct zip_member {
    const unsigned char *name;
    size_t name_len;
    uint32_t flags, method, crc;
    uint64_t comp_size, size, offset;
    char shown[96];  /* the name for messages: control bytes as '?', long names cut with "..." */
} zip_member;

/* Where errors come from: "load: 'm.npz': ..." */
typedef struct zip_source {
    const char *fname, *what;
} zip_source;

static void show_name(char *buf, size_t n, const unsigned char *name, size_t len) {
    size_t k = 0;
    for (size_t i = 0; i < len && k + 4 < n; i++) buf[k++] = (name[i] < 0x20 || name[i] == 0x7f) ? '?' : (char)name[i];
    if (k < len && k + 4 >= n) { memcpy(buf + k, "...", 3); k += 3; }
    buf[k] = '\0';
}

/* The end of central directory record: the last "PK\5\6" whose comment ends exactly at the end. */
static mha_status find_end_record(size_t *pos, const unsigned char *b, size_t n, const zip_source *src) {
    if (n < END_LEN)
        return mha_fail(MHA_E_FORMAT, "%s: %s: not a .npz archive: %zu bytes, fewer than a zip's 22-byte end record",
                        src->fname, src->what, n);
    size_t lowest = n - END_LEN > MAX_COMMENT ? n - END_LEN - MAX_COMMENT : 0;
    for (size_t p = n - END_LEN + 1; p-- > lowest;) {
        if (rd32(b + p) == SIG_END && p + END_LEN + rd16(b + p + 20) == n) {
            *pos = p;
            return MHA_OK;
        }
    }
    bool zip_start = n >= 4 && b[0] == 'P' && b[1] == 'K';
    return mha_fail(MHA_E_FORMAT, "%s: %s: %s: no zip end-of-central-directory record at its end", src->fname, src->what,
                    zip_start ? "truncated or corrupt .npz archive" : "not a .npz archive");
}

/* Sizes and offset from the zip64 extra field, for the 32-bit fields that hold 0xFFFFFFFF. */
static mha_status read_zip64_extra(zip_member *m, const unsigned char *extra, size_t len, const zip_source *src) {
    bool want_size = m->size == ZIP32_MAX, want_comp = m->comp_size == ZIP32_MAX, want_off = m->offset == ZIP32_MAX;
    if (!want_size && !want_comp && !want_off) return MHA_OK;
    for (size_t p = 0; p + 4 <= len;) {
        uint32_t id = rd16(extra + p), field_len = rd16(extra + p + 2);
        if (field_len > len - p - 4) break;
        if (id == ZIP64_EXTRA_ID) {
            const unsigned char *f = extra + p + 4;
            size_t need = 8u * ((size_t)want_size + (size_t)want_comp + (size_t)want_off);
            if (field_len < need) break;
            if (want_size) { m->size = rd64(f); f += 8; }
            if (want_comp) { m->comp_size = rd64(f); f += 8; }
            if (want_off) m->offset = rd64(f);
            return MHA_OK;
        }
        p += 4 + field_len;
    }
    return mha_fail(MHA_E_FORMAT, "%s: %s: member '%s': its sizes are in a zip64 extra field that is missing or "
                    "too short (corrupt archive)", src->fname, src->what, m->shown);
}

/* Reads the central directory entry at *p (advancing it) into m, with every check that needs no
 * data. */
static mha_status read_central(zip_member *m, size_t *p, const unsigned char *b, size_t cd_end, size_t index,
                               const zip_source *src) {
    size_t at = *p;
    if (cd_end - at < CENTRAL_LEN || rd32(b + at) != SIG_CENTRAL)
        return mha_fail(MHA_E_FORMAT, "%s: %s: central directory entry %zu is corrupt (no header signature at byte %zu)",
                        src->fname, src->what, index + 1, at);
    const unsigned char *h = b + at;
    size_t name_len = rd16(h + 28), extra_len = rd16(h + 30), comment_len = rd16(h + 32);
    if (cd_end - at - CENTRAL_LEN < name_len + extra_len + comment_len)
        return mha_fail(MHA_E_FORMAT, "%s: %s: central directory entry %zu runs past the directory's end (corrupt archive)",
                        src->fname, src->what, index + 1);
    *m = (zip_member){.name = h + CENTRAL_LEN, .name_len = name_len, .flags = rd16(h + 8), .method = rd16(h + 10),
                      .crc = rd32(h + 16), .comp_size = rd32(h + 20), .size = rd32(h + 24), .offset = rd32(h + 42)};
    show_name(m->shown, sizeof m->shown, m->name, name_len);
    *p = at + CENTRAL_LEN + name_len + extra_len + comment_len;
    mha_status st = read_zip64_extra(m, h + CENTRAL_LEN + name_len, extra_len, src);
    if (st != MHA_OK) return st;
    if (m->flags & FLAG_ENCRYPTED)
        return mha_fail(MHA_E_FORMAT, "%s: %s: member '%s' is encrypted, which mha does not read", src->fname, src->what,
                        m->shown);
    if (m->method != METHOD_STORED && m->method != METHOD_DEFLATED)
        return mha_fail(MHA_E_FORMAT, "%s: %s: member '%s' uses compression method %u; mha reads stored (0) and "
                        "deflated (8) members, as np.savez and np.savez_compressed write", src->fname, src->what,
                        m->shown, (unsigned)m->method);
    if (memchr(m->name, '\0', name_len))
        return mha_fail(MHA_E_FORMAT, "%s: %s: member '%s' has a NUL byte in its name", src->fname, src->what, m->shown);
    size_t suffix = strlen(NPY_SUFFIX);
    if (name_len <= suffix || memcmp(m->name + name_len - suffix, NPY_SUFFIX, suffix) != 0)
        return mha_fail(MHA_E_FORMAT, "%s: %s: member '%s' is not a .npy array (a .npz holds only NAME.npy members, "
                        "as np.savez writes them)", src->fname, src->what, m->shown);
    return MHA_OK;
}

/* The member's data: checked against its local header and the file's end. */
static mha_status locate_data(const unsigned char **data, const zip_member *m, const unsigned char *b, size_t n,
                              const zip_source *src) {
    if (m->offset > n || n - m->offset < LOCAL_LEN || rd32(b + m->offset) != SIG_LOCAL)
        return mha_fail(MHA_E_FORMAT, "%s: %s: member '%s': no local header at byte %llu (truncated or corrupt archive)",
                        src->fname, src->what, m->shown, (unsigned long long)m->offset);
    const unsigned char *h = b + m->offset;
    size_t name_len = rd16(h + 26), extra_len = rd16(h + 28);
    size_t start = (size_t)m->offset + LOCAL_LEN;
    if (n - start < name_len + extra_len)
        return mha_fail(MHA_E_FORMAT, "%s: %s: member '%s': local header runs past the end of the file (truncated archive)",
                        src->fname, src->what, m->shown);
    if (name_len != m->name_len || memcmp(h + LOCAL_LEN, m->name, name_len) != 0)
        return mha_fail(MHA_E_FORMAT, "%s: %s: member '%s': its local header names another member (corrupt archive)",
                        src->fname, src->what, m->shown);
    start += name_len + extra_len;
    if (m->comp_size > n - start)
        return mha_fail(MHA_E_FORMAT, "%s: %s: member '%s': %llu bytes of data run past the end of the file "
                        "(truncated archive)", src->fname, src->what, m->shown, (unsigned long long)m->comp_size);
    *data = b + start;
    return MHA_OK;
}

/* Raw deflate (no zlib header, as zip stores it) of m->comp_size bytes into exactly m->size
 * bytes. */
static mha_status inflate_member(unsigned char *out, const unsigned char *in, const zip_member *m, const zip_source *src) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
        return mha_fail(MHA_E_NOMEM, "%s: %s: member '%s': zlib cannot start inflating (out of memory)", src->fname,
                        src->what, m->shown);
    size_t in_left = (size_t)m->comp_size, out_left = (size_t)m->size;
    zs.next_in = (unsigned char *)in; /* zlib's API is not const; it only reads */
    zs.next_out = out;
    int rc = Z_OK;
    while (rc == Z_OK) {
        if (zs.avail_in == 0 && in_left > 0) {
            zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
            in_left -= zs.avail_in;
        }
        if (zs.avail_out == 0 && out_left > 0) {
            zs.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
            out_left -= zs.avail_out;
        }
        rc = inflate(&zs, Z_NO_FLUSH);
        /* input ended before the stream did */
        if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) break;
        /* more output than the directory says */
        if (rc == Z_BUF_ERROR && zs.avail_out == 0 && out_left == 0) break;
        if (rc == Z_BUF_ERROR) rc = Z_OK;
    }
    size_t produced = (size_t)m->size - out_left - zs.avail_out;
    bool output_full = zs.avail_out == 0 && out_left == 0;
    const char *zmsg = zs.msg ? zs.msg : "no detail";
    char why[160];
    if (rc == Z_STREAM_END && produced == m->size) why[0] = '\0';
    else if (rc == Z_STREAM_END) snprintf(why, sizeof why, "it inflates to %zu bytes, the directory says %llu", produced,
                                          (unsigned long long)m->size);
    else if (rc == Z_DATA_ERROR) snprintf(why, sizeof why, "corrupt deflate data (%s)", zmsg);
    else if (rc == Z_MEM_ERROR) snprintf(why, sizeof why, "zlib ran out of memory");
    else if (output_full) snprintf(why, sizeof why, "it inflates to more than the %llu bytes the directory says",
                                   (unsigned long long)m->size);
    else snprintf(why, sizeof why, "the deflate data ends early (truncated)");
    inflateEnd(&zs);
    if (why[0] == '\0') return MHA_OK;
    return mha_fail(rc == Z_MEM_ERROR ? MHA_E_NOMEM : MHA_E_FORMAT, "%s: %s: member '%s': %s", src->fname, src->what,
                    m->shown, why);
}

/* One member into e: its data (inflated if need be), CRC-32 checked, parsed as .npy. */
static mha_status read_member(mha_npz_entry *e, const zip_member *m, const unsigned char *b, size_t n,
                              const zip_source *src) {
    const unsigned char *data = NULL;
    mha_status st = locate_data(&data, m, b, n, src);
    if (st != MHA_OK) return st;
    unsigned char *inflated = NULL;
    if (m->method == METHOD_STORED && m->size != m->comp_size)
        return mha_fail(MHA_E_FORMAT, "%s: %s: member '%s' is stored uncompressed but its sizes differ (%llu and %llu; "
                        "corrupt archive)", src->fname, src->what, m->shown, (unsigned long long)m->size,
                        (unsigned long long)m->comp_size);
    if (m->method == METHOD_DEFLATED) {
        if (m->size / DEFLATE_MAX_RATIO > m->comp_size || m->size > SIZE_MAX - 1)
            return mha_fail(MHA_E_FORMAT, "%s: %s: member '%s' claims %llu bytes from %llu compressed, more than deflate "
                            "can expand (corrupt archive)", src->fname, src->what, m->shown,
                            (unsigned long long)m->size, (unsigned long long)m->comp_size);
        inflated = mha_alloc(m->size ? (size_t)m->size : 1);
        if (inflated == NULL)
            return mha_fail(MHA_E_NOMEM, "%s: %s: member '%s': cannot allocate %llu bytes to inflate it", src->fname,
                            src->what, m->shown, (unsigned long long)m->size);
        st = inflate_member(inflated, data, m, src);
        data = inflated;
    }
    uint32_t crc = st == MHA_OK ? crc32_of(data, (size_t)m->size) : 0;
    if (st == MHA_OK && crc != m->crc)
        st = mha_fail(MHA_E_FORMAT, "%s: %s: member '%s': CRC-32 is %08x but the directory says %08x (corrupt archive)",
                      src->fname, src->what, m->shown, (unsigned)crc, (unsigned)m->crc);
    if (st == MHA_OK) {
        char what[4096 + 128];
        snprintf(what, sizeof what, "%s member '%s'", src->what, m->shown);
        st = mha_npy_parse_from(&e->tensor, data, (size_t)m->size, src->fname, what);
    }
    if (inflated) mha_free(inflated, m->size ? (size_t)m->size : 1);
    return st;
}

/* Two members of one name: np.load would keep only one, so the archive is refused. */
static mha_status refuse_repeated_members(const mha_npz *archive, const zip_source *src) {
    size_t n = archive->count;
    const char **names = n ? mha_alloc(n * sizeof *names) : NULL;
    if (n && names == NULL)
        return mha_fail(MHA_E_NOMEM, "%s: %s: cannot allocate the list of %zu member names", src->fname, src->what, n);
    for (size_t i = 0; i < n; i++) names[i] = archive->entries[i].name;
    const char *repeated = NULL;
    bool ok = find_repeated(&repeated, names, n);
    mha_status st = MHA_OK;
    if (!ok) st = mha_fail(MHA_E_NOMEM, "%s: %s: cannot allocate the list of %zu member names", src->fname, src->what, n);
    else if (repeated) {
        char shown[96];
        show_name(shown, sizeof shown, (const unsigned char *)repeated, strlen(repeated));
        st = mha_fail(MHA_E_FORMAT, "%s: %s: two members are named '%s.npy' (np.load would keep only one)", src->fname,
                      src->what, shown);
    }
    mha_free(names, n * sizeof *names);
    return st;
}

static mha_status parse_archive(mha_npz *out, const unsigned char *b, size_t n, const zip_source *src) {
    size_t end = 0;
    mha_status st = find_end_record(&end, b, n, src);
    if (st != MHA_OK) return st;
    const unsigned char *e = b + end;
    uint32_t disk = rd16(e + 4), cd_disk = rd16(e + 6), here = rd16(e + 8), count = rd16(e + 10);
    uint32_t cd_size = rd32(e + 12), cd_offset = rd32(e + 16);
    bool locator = end >= END64_LOCATOR_LEN && rd32(b + end - END64_LOCATOR_LEN) == SIG_END64_LOCATOR;
    if (locator || count == 0xffffu || cd_size == ZIP32_MAX || cd_offset == ZIP32_MAX)
        return mha_fail(MHA_E_FORMAT, "%s: %s: the archive has a zip64 end record (over 4 GiB or 65535 members), "
                        "which mha does not read", src->fname, src->what);
    if (disk != 0 || cd_disk != 0 || here != count)
        return mha_fail(MHA_E_FORMAT, "%s: %s: the archive spans several disks, which mha does not read", src->fname,
                        src->what);
    if (cd_offset > end || cd_size > end - cd_offset)
        return mha_fail(MHA_E_FORMAT, "%s: %s: the central directory (%u bytes at byte %u) runs past its end record "
                        "at byte %zu (truncated or corrupt archive)", src->fname, src->what, (unsigned)cd_size,
                        (unsigned)cd_offset, end);
    mha_npz archive = {0};
    if (count > 0) {
        archive.entries = mha_alloc(count * sizeof *archive.entries);
        if (archive.entries == NULL)
            return mha_fail(MHA_E_NOMEM, "%s: %s: cannot allocate the table of %u members", src->fname, src->what,
                            (unsigned)count);
        memset(archive.entries, 0, count * sizeof *archive.entries);
    }
    size_t p = cd_offset, cd_end = (size_t)cd_offset + cd_size;
    for (size_t i = 0; i < count && st == MHA_OK; i++) {
        zip_member m;
        st = read_central(&m, &p, b, cd_end, i, src);
        if (st != MHA_OK) break;
        size_t key_len = m.name_len - strlen(NPY_SUFFIX);
        mha_npz_entry *entry = &archive.entries[i];
        archive.count = i + 1; /* from here on, release frees this entry too */
        entry->name = mha_alloc(key_len + 1);
        if (entry->name == NULL) {
            st = mha_fail(MHA_E_NOMEM, "%s: %s: cannot allocate the name of member '%s'", src->fname, src->what, m.shown);
            break;
        }
        memcpy(entry->name, m.name, key_len);
        entry->name[key_len] = '\0';
        st = read_member(entry, &m, b, n, src);
    }
    if (st == MHA_OK && p != cd_end)
        st = mha_fail(MHA_E_FORMAT, "%s: %s: the central directory has %zu bytes after its %u entries (corrupt archive)",
                      src->fname, src->what, cd_end - p, (unsigned)count);
    if (st == MHA_OK) st = refuse_repeated_members(&archive, src);
    if (st != MHA_OK) {
        archive.count = count; /* entries past the failure are zeroed: release skips them */
        mha_npz_release(&archive);
        return st;
    }
    archive.count = count;
    *out = archive;
    return MHA_OK;
}

mha_status mha_npz_parse(mha_npz *out, const void *bytes, size_t nbytes, const char *what) {
    const zip_source src = {"npz_parse", what ? what : "<memory>"};
    if (bytes == NULL && nbytes != 0) return mha_fail(MHA_E_ARG, "npz_parse: bytes is NULL but nbytes is %zu", nbytes);
    return parse_archive(out, bytes ? bytes : (const void *)"", bytes ? nbytes : 0, &src);
}

static mha_status parse_loaded(void *out, const unsigned char *bytes, size_t nbytes, const char *what) {
    const zip_source src = {"load", what};
    return parse_archive(out, bytes, nbytes, &src);
}

mha_status mha_npz_load(mha_npz *out, const char *path) { return mha_load_file(out, path, parse_loaded); }

bool mha_npz_sniff(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return false;
    unsigned char magic[4];
    bool zip = fread(magic, 1, 4, f) == 4 && magic[0] == 'P' && magic[1] == 'K' &&
               ((magic[2] == 3 && magic[3] == 4) || (magic[2] == 5 && magic[3] == 6));
    fclose(f);
    return zip;
}

/* ---- writing ---- */

/* The central directory, built while the members are written. */
typedef struct zip_writer {
    FILE *f;
    const char *path;
    uint64_t offset;          /* bytes written so far */
    unsigned char *central;   /* cap bytes */
    size_t central_len, cap;
} zip_writer;

/* A compressed member: len bytes of raw deflate in buf, which holds cap bytes
 * (mha_free(buf, cap)). */
typedef struct packed_data {
    unsigned char *buf;
    size_t len, cap;
} packed_data;

static mha_status deflate_member(packed_data *out, const unsigned char *in, size_t n, const char *path,
                                 const char *member) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    /* Python's zipfile: zlib.compressobj(Z_DEFAULT_COMPRESSION, DEFLATED, -15), memory level 8 */
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return mha_fail(MHA_E_NOMEM, "save: '%s': member '%s': zlib cannot start deflating (out of memory)", path, member);
    uLong bound = deflateBound(&zs, (uLong)n);
    unsigned char *buf = bound <= UINT_MAX ? mha_alloc(bound) : NULL;
    if (buf == NULL) {
        deflateEnd(&zs);
        return mha_fail(MHA_E_NOMEM, "save: '%s': member '%s': cannot allocate %lu bytes to compress it", path, member,
                        (unsigned long)bound);
    }
    zs.next_in = (unsigned char *)in; /* zlib only reads it */
    zs.avail_in = (uInt)n;             /* n < 4 GiB: checked by the caller */
    zs.next_out = buf;
    zs.avail_out = (uInt)bound;
    int rc = deflate(&zs, Z_FINISH);   /* one call: deflateBound guarantees the room */
    size_t len = (size_t)zs.total_out;
    deflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        mha_free(buf, bound);
        return mha_fail(MHA_E_NOMEM, "save: '%s': member '%s': zlib could not compress it (code %d)", path, member, rc);
    }
    *out = (packed_data){buf, len, bound};
    return MHA_OK;
}

static bool write_all(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n; }

/* One member: local header, name, data; its central directory entry is appended to w->central. */
static mha_status write_member(zip_writer *w, const char *name, const mha_tensor *t, bool compress) {
    char member[4096];
    snprintf(member, sizeof member, "%s%s", name, NPY_SUFFIX);
    char what[4096 + 128];
    snprintf(what, sizeof what, "'%s' member '%s'", w->path, member);
    unsigned char *npy;
    size_t npy_len;
    packed_data packed = {0};
    mha_status st = mha_npy_encode(&npy, &npy_len, t, "save", what);
    if (st != MHA_OK) return st;
    if (npy_len >= ZIP32_MAX || w->offset >= ZIP32_MAX)
        st = mha_fail(MHA_E_ARG, "save: '%s': member '%s' would pass 4 GiB, which needs zip64; mha writes plain zip "
                      "archives (save big tensors as .npy files)", w->path, member);
    if (st == MHA_OK && compress) st = deflate_member(&packed, npy, npy_len, w->path, member);
    if (st != MHA_OK) { mha_free(npy, npy_len); return st; }
    const unsigned char *data = compress ? packed.buf : npy;
    size_t data_len = compress ? packed.len : npy_len;
    size_t name_len = strlen(member);
    bool ascii = true;
    for (size_t i = 0; i < name_len; i++) ascii = ascii && (unsigned char)member[i] < 0x80;

    unsigned char local[LOCAL_LEN] = {0};
    wr32(local, SIG_LOCAL);
    wr16(local + 4, VERSION_NEEDED);
    wr16(local + 6, ascii ? 0 : FLAG_UTF8);
    wr16(local + 8, compress ? METHOD_DEFLATED : METHOD_STORED);
    wr16(local + 10, 0);                      /* time 00:00:00 */
    wr16(local + 12, DOS_DATE_1980);
    wr32(local + 14, crc32_of(npy, npy_len));
    wr32(local + 18, (uint32_t)data_len);
    wr32(local + 22, (uint32_t)npy_len);
    wr16(local + 26, (uint32_t)name_len);
    wr16(local + 28, 0);                      /* no extra field */
    bool ok = write_all(w->f, local, sizeof local) && write_all(w->f, member, name_len) && write_all(w->f, data, data_len);
    int err = errno;
    if (packed.buf) mha_free(packed.buf, packed.cap);
    mha_free(npy, npy_len);
    if (!ok) {
        errno = err;
        return MHA_E_IO;   /* mha_save_file words it */
    }

    unsigned char *c = w->central + w->central_len;
    memset(c, 0, CENTRAL_LEN);
    wr32(c, SIG_CENTRAL);
    wr16(c + 4, VERSION_MADE_BY);
    memcpy(c + 6, local + 4, 26);        /* version needed .. name length: as in the local header */
    wr32(c + 38, FILE_ATTRS);
    wr32(c + 42, (uint32_t)w->offset);
    memcpy(c + CENTRAL_LEN, member, name_len);
    w->central_len += CENTRAL_LEN + name_len;
    w->offset += LOCAL_LEN + name_len + data_len;
    return MHA_OK;
}

/* Names a .npz can hold as np.load shows them: non-empty, distinct, short enough for a zip name. */
static mha_status check_names(const char *path, const char *const *names, size_t n, size_t *central_cap) {
    if (n >= 0xffffu)
        return mha_fail(MHA_E_ARG, "save: '%s': %zu tensors; a zip without zip64 holds at most 65534", path, n);
    size_t cap = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (len == 0) return mha_fail(MHA_E_ARG, "save: '%s': tensor %zu has an empty name", path, i + 1);
        if (len > 4000) return mha_fail(MHA_E_ARG, "save: '%s': the name of tensor %zu is %zu bytes; at most 4000",
                                        path, i + 1, len);
        cap += CENTRAL_LEN + len + strlen(NPY_SUFFIX);
    }
    const char *repeated;
    if (!find_repeated(&repeated, names, n))
        return mha_fail(MHA_E_NOMEM, "save: '%s': cannot allocate the list of %zu names", path, n);
    if (repeated) return mha_fail(MHA_E_ARG, "save: '%s': two tensors are named '%s'", path, repeated);
    *central_cap = cap + END_LEN;
    return MHA_OK;
}

/* What mha_npz_save hands mha_save_file's writer. */
typedef struct npz_file {
    const char *path;
    const char *const *names;
    const mha_tensor *const *tensors;
    size_t n;
    bool compress;
    unsigned char *central;   /* central_cap bytes */
    size_t central_cap;
} npz_file;

/* Writes the whole archive to f; mha_save_file makes it durable and renames it. */
static mha_status write_archive(FILE *f, const void *ctx) {
    const npz_file *file = ctx;
    zip_writer w = {.f = f, .path = file->path, .central = file->central, .cap = file->central_cap};
    for (size_t i = 0; i < file->n; i++) {
        mha_status st = write_member(&w, file->names[i], file->tensors[i], file->compress);
        if (st != MHA_OK) return st;
    }
    if (w.offset >= ZIP32_MAX)
        return mha_fail(MHA_E_ARG, "save: '%s': the archive would pass 4 GiB, which needs zip64; mha writes plain zip "
                        "archives (save big tensors as .npy files)", w.path);
    unsigned char *e = w.central + w.central_len;
    memset(e, 0, END_LEN);
    wr32(e, SIG_END);
    wr16(e + 8, (uint32_t)file->n);
    wr16(e + 10, (uint32_t)file->n);
    wr32(e + 12, (uint32_t)w.central_len);
    wr32(e + 16, (uint32_t)w.offset);
    return write_all(f, w.central, w.central_len + END_LEN) ? MHA_OK : MHA_E_IO;
}

mha_status mha_npz_save(const char *path, const char *const *names, const mha_tensor *const *tensors, size_t n,
                        bool compress) {
    size_t central_cap = 0;
    mha_status st = check_names(path, names, n, &central_cap);
    if (st != MHA_OK) return st;
    unsigned char *central = mha_alloc(central_cap);
    if (central == NULL) return mha_fail(MHA_E_NOMEM, "save: '%s': cannot allocate the archive's directory", path);
    const npz_file file = {path, names, tensors, n, compress, central, central_cap};
    st = mha_save_file(path, write_archive, &file);
    mha_free(central, central_cap);
    return st;
}
