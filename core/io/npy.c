/* core/io/npy.c - NumPy .npy files: read versions 1.0, 2.0 and 3.0 of any float, int, uint or bool
 * dtype (converted to float32 or bool, C or Fortran order), and write float32/bool exactly as
 * np.save does.
 *
 * The format (numpy/lib/format.py, NEP 1):
 *     "\x93NUMPY"  major minor  header_len  header  data
 *   header_len is a little-endian uint16 in version 1.0 and uint32 in 2.0 and 3.0 (3.0: UTF-8
 *   header). The header is a Python dict literal, padded with spaces and ended by '\n' so the data
 *   starts on a 64-byte boundary:
 *       {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 *   The data is numel elements of descr, in C order (last index fastest) or Fortran order (first
 *   fastest).
 *
 * Reading takes what numpy's own reader takes for these dtypes
 * (keys in any order, either quote, any spacing or padding, Python 2's 3L) and refuses anything
 * else with an error naming the file and the fault; the parser never reads outside the bytes it is
 * given. A file with bytes after the data is refused too (np.load would ignore them; here they most
 * likely mean two arrays saved into one file). A value float32 cannot stand for is refused, not
 * rounded away (element_loss): an integer it cannot hold exactly, a float64 beyond its range or one
 * that would become 0.
 *
 * Saving (this file's mha_save_file, for .npz too) writes a temporary file beside the target and
 * renames it, so a full disk or a kill mid-save leaves the old file whole. */

#include "tensor/tensor.h"
#include "io/npy.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define NPY_MAGIC     "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN     64  /* np.save pads the header so the data starts on this boundary */
#define NPY_GROWTH    21  /* numpy 1.24's GROWTH_AXIS_MAX_DIGITS: spare header room for the growing
                             axis */
#define NPY_MAX_PARSED_DIMS 64  /* numpy itself allows 32; a longer shape is refused while
                                   parsing */

/* Where a parse comes from, for messages: "load: 'a.npy': ..." or "npy_parse: <memory>: ...". */
typedef struct npy_source {
    const char *fname;  /* the public function's name */
    const char *what;   /* the quoted path, or "<memory>" */
} npy_source;

/* The element type of a file, decoded from its descr string. */
typedef struct npy_dtype {
    char kind;        /* 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool */
    size_t size;      /* bytes per element: 1, 2, 4 or 8 */
    bool big_endian;  /* byte order of multi-byte elements */
} npy_dtype;

/* What the header says. */
typedef struct npy_header {
    char descr[32];
    bool have_descr, have_fortran, have_shape;
    bool fortran_order;
    size_t ndim;                /* may exceed MHA_MAX_DIMS: refused after parsing, with the count */
    size_t shape[MHA_MAX_DIMS];
} npy_header;

/* A cursor over the header text, for the little dict parser below. */
typedef struct npy_cursor {
    const char *start, *p, *end;
    bool allow_long_suffix;  /* versions 1.0/2.0 may come from Python 2, which wrote 3L for ints */
    char err[160];           /* what went wrong, when a parse function returns false */
} npy_cursor;

static bool host_is_big_endian(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 0;
}

/* "(3,4)", "(5)" for a vector, "()" for a scalar: as mha_shape_str writes a tensor's shape. */
static char *dims_str(char *buf, size_t n, size_t ndim, const size_t *shape) {
    size_t used = (size_t)snprintf(buf, n, "(");
    for (size_t d = 0; d < ndim && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, d ? ",%zu" : "%zu", shape[d]);
    if (used < n) snprintf(buf + used, n - used, ")");
    return buf;
}

static bool cursor_fail(npy_cursor *c, const char *what) {
    snprintf(c->err, sizeof c->err, "%s at header byte %zu", what, (size_t)(c->p - c->start));
    return false;
}

static void skip_space(npy_cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool accept(npy_cursor *c, char ch) {
    skip_space(c);
    if (c->p < c->end && *c->p == ch) { c->p++; return true; }
    return false;
}

/* A quoted Python string without escapes ('x' or "x") into buf. */
static bool parse_string(npy_cursor *c, char *buf, size_t n) {
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return cursor_fail(c, "expected a quoted string");
    char quote = *c->p++;
    size_t len = 0;
    while (c->p < c->end && *c->p != quote) {
        if (*c->p == '\\') return cursor_fail(c, "escape sequences in strings are not supported");
        if (*c->p == '\n') return cursor_fail(c, "unterminated string");
        /* Python refuses it too */
        if (*c->p == '\0') return cursor_fail(c, "a NUL byte inside a string");
        if (len + 1 >= n) return cursor_fail(c, "string too long");
        buf[len++] = *c->p++;
    }
    if (c->p >= c->end) return cursor_fail(c, "unterminated string");
    c->p++;
    buf[len] = '\0';
    return true;
}

/* A bare word: True, False. */
static bool parse_bool(npy_cursor *c, bool *value) {
    skip_space(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && memcmp(c->p, "True", 4) == 0) { *value = true; c->p += 4; }
    else if (left >= 5 && memcmp(c->p, "False", 5) == 0) { *value = false; c->p += 5; }
    else return cursor_fail(c, "'fortran_order' must be True or False");
    if (c->p < c->end && (*c->p == '_' || isalnum((unsigned char)*c->p)))
        return cursor_fail(c, "'fortran_order' must be True or False");
    return true;
}

/* A non-negative decimal integer that fits size_t. */
static bool parse_dim(npy_cursor *c, size_t *value) {
    skip_space(c);
    if (c->p < c->end && *c->p == '-') return cursor_fail(c, "negative dimension in 'shape'");
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return cursor_fail(c, "expected a dimension in 'shape'");
    size_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        size_t digit = (size_t)(*c->p - '0');
        if (v > (SIZE_MAX - digit) / 10) return cursor_fail(c, "dimension in 'shape' does not fit size_t");
        v = v * 10 + digit;
        c->p++;
    }
    if (c->allow_long_suffix && c->p < c->end && (*c->p == 'L' || *c->p == 'l')) c->p++;
    *value = v;
    return true;
}

/* A Python tuple of ints: (), (3,), (3, 4), (3, 4,). "(3)" is an int in Python, not a tuple:
 * refused. */
static bool parse_shape(npy_cursor *c, npy_header *h) {
    if (!accept(c, '(')) return cursor_fail(c, "'shape' must be a tuple like (3, 4)");
    h->ndim = 0;
    if (accept(c, ')')) return true;
    for (;;) {
        size_t dim;
        if (!parse_dim(c, &dim)) return false;
        if (h->ndim == NPY_MAX_PARSED_DIMS) return cursor_fail(c, "'shape' has more than 64 dimensions");
        if (h->ndim < MHA_MAX_DIMS) h->shape[h->ndim] = dim;  /* more dims are counted, then
                                                                 refused */
        h->ndim++;
        bool comma = accept(c, ',');
        if (accept(c, ')')) {
            if (h->ndim == 1 && !comma) return cursor_fail(c, "'shape' (n) is not a tuple; numpy writes (n,)");
            return true;
        }
        if (!comma) return cursor_fail(c, "expected ',' or ')' in 'shape'");
    }
}

/* The whole header: the dict np.save writes, with exactly the keys descr, fortran_order and
 * shape. */
static bool parse_header(npy_cursor *c, npy_header *h) {
    if (!accept(c, '{')) return cursor_fail(c, "expected '{' (the header is not a Python dict)");
    while (!accept(c, '}')) {
        char key[32];
        if (!parse_string(c, key, sizeof key)) return false;
        if (!accept(c, ':')) return cursor_fail(c, "expected ':' after a key");
        bool *seen;
        if (strcmp(key, "descr") == 0) {
            seen = &h->have_descr;
            skip_space(c);
            if (c->p < c->end && *c->p == '[')
                return cursor_fail(c, "'descr' is a list (a structured dtype), which mha does not read");
            if (!parse_string(c, h->descr, sizeof h->descr)) return false;
        } else if (strcmp(key, "fortran_order") == 0) {
            seen = &h->have_fortran;
            if (!parse_bool(c, &h->fortran_order)) return false;
        } else if (strcmp(key, "shape") == 0) {
            seen = &h->have_shape;
            if (!parse_shape(c, h)) return false;
        } else {
            snprintf(c->err, sizeof c->err, "unknown key '%s' (numpy writes descr, fortran_order, shape)", key);
            return false;
        }
        if (*seen) {
            snprintf(c->err, sizeof c->err, "key '%s' appears twice", key);
            return false;
        }
        *seen = true;
        if (!accept(c, ',')) {
            if (accept(c, '}')) break;
            return cursor_fail(c, "expected ',' or '}' after a value");
        }
    }
    skip_space(c);
    if (c->p != c->end) return cursor_fail(c, "text after the closing '}'");
    const char *missing = !h->have_descr ? "descr" : !h->have_fortran ? "fortran_order"
                        : !h->have_shape ? "shape" : NULL;
    if (missing) {
        snprintf(c->err, sizeof c->err, "missing key '%s'", missing);
        return false;
    }
    return true;
}

/* descr like '<f4', '>i2', '|b1', '|u1' -> kind, size, byte order; false with why otherwise. */
static bool parse_descr(npy_dtype *dt, const char *descr, const char **why) {
    const char *p = descr;
    bool big = host_is_big_endian();
    if (*p == '<') { big = false; p++; }
    else if (*p == '>') { big = true; p++; }
    else if (*p == '|' || *p == '=') p++;
    char kind = *p ? *p++ : '\0';
    size_t size = 0;
    if (*p >= '1' && *p <= '9' && p[1] == '\0') size = (size_t)(*p - '0');
    *why = "";
    switch (kind) {
    case 'c': *why = " (complex)"; return false;
    case 'O': *why = " (Python objects)"; return false;
    case 'U': case 'S': case 'a': *why = " (strings)"; return false;
    case 'V': *why = " (raw bytes or records)"; return false;
    case 'M': case 'm': *why = " (dates or time spans)"; return false;
    case 'f': if (size == 2 || size == 4 || size == 8) break; return false;
    case 'i': case 'u': if (size == 1 || size == 2 || size == 4 || size == 8) break; return false;
    case 'b': if (size == 1) break; return false;
    default: return false;
    }
    dt->kind = kind;
    dt->size = size;
    dt->big_endian = big;
    return true;
}

/* IEEE 754 binary16 -> float: 1 sign, 5 exponent (bias 15), 10 fraction bits. */
static float half_to_float(uint16_t h) {
    int exponent = (h >> 10) & 0x1f;
    float magnitude;
    if (exponent == 0) magnitude = ldexpf((float)(h & 0x3ff), -24);          /* subnormal or zero */
    else if (exponent == 31) magnitude = (h & 0x3ff) ? NAN : INFINITY;
    else magnitude = ldexpf((float)((h & 0x3ff) | 0x400), exponent - 25);
    return (h & 0x8000) ? -magnitude : magnitude;
}

/* The bits of one element at p (any alignment, the file's byte order), in the low dt->size
 * bytes. */
static uint64_t element_bits(const unsigned char *p, const npy_dtype *dt) {
    uint64_t bits = 0;
    for (size_t i = 0; i < dt->size; i++) {
        size_t shift = 8 * (dt->big_endian ? dt->size - 1 - i : i);
        bits |= (uint64_t)p[i] << shift;
    }
    return bits;
}

static int64_t signed_of(uint64_t bits, size_t size) {
    /* sign-extend */
    if (size < 8 && (bits >> (8 * size - 1)) & 1) bits |= ~(uint64_t)0 << (8 * size);
    int64_t v;
    memcpy(&v, &bits, 8);
    return v;
}

static double double_of(uint64_t bits) {
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

/* Why an element's float32 would not be the file's value, or NULL when it is. An integer must be
 * held exactly (2^24 + 1 has no float32: a token id read as its neighbour is a wrong answer, not
 * rounding). A float64 is rounded to the nearest float32, as a.astype(np.float32) does, but must
 * stay in float32's range: becoming inf, or 0 from a value that is not, is refused. */
#define INEXACT_INTEGER "which float32 cannot hold exactly (it holds every integer from -2^24 to 2^24 = 16777216)"
static const char *element_loss(uint64_t bits, const npy_dtype *dt, float value) {
    if (dt->kind == 'f' && dt->size == 8) {
        double d = double_of(bits);
        if (isfinite(d) && isinf(value)) return "beyond float32's range (it would become inf)";
        if (d != 0.0 && value == 0.0f) return "too small for float32 (it would become 0)";
        return NULL;
    }
    /* int8/16: always exact */
    if ((dt->kind != 'i' && dt->kind != 'u') || dt->size < 4) return NULL;
    double held = (double)value;   /* exact: a float32 is a double */
    if (dt->kind == 'i') {
        int64_t v = signed_of(bits, dt->size);
        return held < 0x1p63 && (int64_t)held == v ? NULL : INEXACT_INTEGER;
    }
    return held < 0x1p64 && (uint64_t)held == bits ? NULL : INEXACT_INTEGER;
}

/* One element's float32 (bool reads as 0/1). */
static float element_value(uint64_t bits, const npy_dtype *dt) {
    switch (dt->kind) {
    case 'f':
        if (dt->size == 2) return half_to_float((uint16_t)bits);
        if (dt->size == 4) { uint32_t b32 = (uint32_t)bits; float f; memcpy(&f, &b32, 4); return f; }
        return (float)double_of(bits);
    case 'i': return (float)signed_of(bits, dt->size);
    case 'u': return (float)bits;
    default:  return bits ? 1.0f : 0.0f;  /* 'b': numpy writes 0/1; any non-zero byte is true */
    }
}

/* The file's value of an element, as NumPy prints it, for messages. */
static void element_text(char *buf, size_t n, uint64_t bits, const npy_dtype *dt) {
    if (dt->kind == 'i') snprintf(buf, n, "%lld", (long long)signed_of(bits, dt->size));
    else if (dt->kind == 'u') snprintf(buf, n, "%llu", (unsigned long long)bits);
    else {   /* the shortest text that reads back as the same double, as NumPy's repr: 1e+300 */
        double d = double_of(bits);
        for (int digits = 1; digits <= 17; digits++) {
            snprintf(buf, n, "%.*g", digits, d);
            if (strtod(buf, NULL) == d) break;
        }
    }
}

/* Fill out (C order, numel elements) from data (the file's order); refuses, naming the first
 * element in C order (NumPy's a.flat[i]), a value float32 cannot stand for (element_loss). */
static mha_status convert_data(mha_tensor *out, const unsigned char *data, const npy_dtype *dt, const npy_header *h,
                               const npy_source *from) {
    size_t n = mha_numel(out);
    if (n == 0) return MHA_OK;
    /* source element stride of each output dim: C order, or Fortran (first index fastest) */
    size_t src_stride[MHA_MAX_DIMS];
    size_t step = 1;
    for (size_t k = 0; k < h->ndim; k++) {
        size_t d = h->fortran_order ? k : h->ndim - 1 - k;
        src_stride[d] = step;
        step *= h->shape[d];
    }
    size_t index[MHA_MAX_DIMS] = {0};
    size_t src = 0;
    float *f = out->dtype == MHA_FLOAT32 ? mha_f32(out) : NULL;
    bool *b = out->dtype == MHA_BOOL ? mha_bool(out) : NULL;
    bool plain_f32 = !h->fortran_order && dt->kind == 'f' && dt->size == 4 && dt->big_endian == host_is_big_endian();
    if (plain_f32) { memcpy(f, data, n * 4); return MHA_OK; }
    for (size_t i = 0; i < n; i++) {
        uint64_t bits = element_bits(data + src * dt->size, dt);
        float v = element_value(bits, dt);
        const char *loss = element_loss(bits, dt, v);
        if (loss) {
            char value[40];
            element_text(value, sizeof value, bits, dt);
            return mha_fail(MHA_E_FORMAT, "%s: %s: a.flat[%zu] of dtype '%s' is %s, %s; mha tensors are float32. "
                            "Convert in NumPy first if that is what you want: a.astype(np.float32)", from->fname,
                            from->what, i, h->descr, value, loss);
        }
        if (f) f[i] = v; else b[i] = v != 0.0f;
        /* next C-order index, carrying into the slower dims */
        for (size_t d = h->ndim; d-- > 0;) {
            src += src_stride[d];
            if (++index[d] < h->shape[d]) break;
            src -= src_stride[d] * index[d];
            index[d] = 0;
        }
    }
    return MHA_OK;
}

static mha_status parse_named(mha_tensor *out, const unsigned char *bytes, size_t nbytes, const npy_source *from) {
    const char *fn = from->fname, *what = from->what;
    if (nbytes < NPY_MAGIC_LEN || memcmp(bytes, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return mha_fail(MHA_E_FORMAT, "%s: %s: not a .npy file (it does not start with \\x93NUMPY)", fn, what);
    if (nbytes < NPY_MAGIC_LEN + 2)
        return mha_fail(MHA_E_FORMAT, "%s: %s: truncated after the magic string (%zu bytes)", fn, what, nbytes);
    unsigned major = bytes[6], minor = bytes[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        return mha_fail(MHA_E_FORMAT, "%s: %s: unknown .npy format version %u.%u (mha reads 1.0, 2.0 and 3.0)",
                        fn, what, major, minor);
    size_t len_bytes = major == 1 ? 2 : 4;
    size_t preamble = NPY_MAGIC_LEN + 2 + len_bytes;
    if (nbytes < preamble)
        return mha_fail(MHA_E_FORMAT, "%s: %s: truncated: %zu bytes, the header length needs %zu",
                        fn, what, nbytes, preamble);
    size_t header_len = 0;
    for (size_t i = 0; i < len_bytes; i++) header_len |= (size_t)bytes[8 + i] << (8 * i);
    if (header_len > nbytes - preamble)
        return mha_fail(MHA_E_FORMAT, "%s: %s: truncated header: header length %zu runs past the end of the "
                        "file (%zu bytes after the preamble)", fn, what, header_len, nbytes - preamble);

    npy_header h = {0};
    npy_cursor c = {.start = (const char *)bytes + preamble, .allow_long_suffix = major < 3};
    c.p = c.start;
    c.end = c.start + header_len;
    if (!parse_header(&c, &h))
        return mha_fail(MHA_E_FORMAT, "%s: %s: header is not the dict numpy writes: %s", fn, what, c.err);
    if (h.ndim > MHA_MAX_DIMS)
        return mha_fail(MHA_E_FORMAT, "%s: %s: the array has %zu dimensions; mha tensors have at most %d",
                        fn, what, h.ndim, MHA_MAX_DIMS);
    npy_dtype dt;
    const char *why;
    if (!parse_descr(&dt, h.descr, &why))
        return mha_fail(MHA_E_FORMAT, "%s: %s: unsupported dtype '%s'%s; mha reads float (f2 f4 f8), int and uint "
                        "(1, 2, 4, 8 bytes) and bool (b1)", fn, what, h.descr, why);

    char shape[MHA_MAX_DIMS * 22 + 4];
    dims_str(shape, sizeof shape, h.ndim, h.shape);
    size_t numel = 1;
    bool overflow = false;
    for (size_t d = 0; d < h.ndim; d++) {
        if (h.shape[d] == 0) { numel = 0; overflow = false; break; }  /* a 0 anywhere: no
                                                                         elements */
        if (numel > SIZE_MAX / h.shape[d]) overflow = true;
        else numel *= h.shape[d];
    }
    if (overflow || numel > SIZE_MAX / dt.size)
        return mha_fail(MHA_E_FORMAT, "%s: %s: shape %s has more elements than size_t can count", fn, what, shape);
    /* with no element a size may still pass what a stride holds: (2^63, 0), (0, 2^62, 2^62) */
    for (size_t d = 0; d < h.ndim; d++)
        if (h.shape[d] > (size_t)PTRDIFF_MAX)
            return mha_fail(MHA_E_FORMAT, "%s: %s: shape %s: size %zu is more than 2^63-1, the largest size a "
                            "dim may have", fn, what, shape, h.shape[d]);
    size_t inner = 1;
    for (size_t d = h.ndim; d-- > 1;) {
        size_t n = h.shape[d] ? h.shape[d] : 1;
        if (inner > (size_t)PTRDIFF_MAX / n)
            return mha_fail(MHA_E_FORMAT, "%s: %s: shape %s: its strides overflow (sizes multiply past 2^63)", fn,
                            what, shape);
        inner *= n;
    }
    size_t need = numel * dt.size;
    size_t have = nbytes - preamble - header_len;
    if (have < need)
        return mha_fail(MHA_E_FORMAT, "%s: %s: truncated data: %zu bytes, shape %s of '%s' needs %zu",
                        fn, what, have, shape, h.descr, need);
    if (have > need)
        return mha_fail(MHA_E_FORMAT, "%s: %s: %zu bytes after the data of shape %s of '%s' (two arrays saved "
                        "into one file?)", fn, what, have - need, shape, h.descr);

    mha_status st = mha_empty_named(out, dt.kind == 'b' ? MHA_BOOL : MHA_FLOAT32, h.ndim, h.shape, fn);
    if (st != MHA_OK) return st;
    st = convert_data(out, bytes + preamble + header_len, &dt, &h, from);
    if (st != MHA_OK) mha_release(out);
    return st;
}

mha_status mha_npy_parse(mha_tensor *out, const void *bytes, size_t nbytes) {
    const npy_source from = {"npy_parse", "<memory>"};
    if (bytes == NULL && nbytes != 0)
        return mha_fail(MHA_E_ARG, "npy_parse: bytes is NULL but nbytes is %zu", nbytes);
    return parse_named(out, bytes ? bytes : "", nbytes, &from);
}

mha_status mha_npy_parse_from(mha_tensor *out, const void *bytes, size_t nbytes, const char *fname, const char *what) {
    const npy_source from = {fname, what};
    return parse_named(out, bytes ? bytes : "", bytes ? nbytes : 0, &from);
}

/* The whole file at path in *bytes (mha_alloc'd with max(*nbytes, 1) bytes); errors start
 * "fname: ". */
static mha_status read_file(unsigned char **bytes, size_t *nbytes, const char *path, const char *fname) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return mha_fail(MHA_E_IO, "%s: cannot open '%s': %s", fname, path, strerror(errno));
    struct stat st_file;
    if (fstat(fileno(f), &st_file) != 0) {
        int err = errno;
        fclose(f);
        return mha_fail(MHA_E_IO, "%s: cannot read '%s': %s", fname, path, strerror(err));
    }
    if (!S_ISREG(st_file.st_mode)) {
        bool dir = S_ISDIR(st_file.st_mode);
        fclose(f);
        return mha_fail(MHA_E_IO, "%s: cannot read '%s': %s", fname, path, dir ? "it is a directory" : "not a regular file");
    }
    if ((uintmax_t)st_file.st_size > SIZE_MAX - 1) {
        fclose(f);
        return mha_fail(MHA_E_NOMEM, "%s: '%s' is too large to read into memory", fname, path);
    }
    size_t size = (size_t)st_file.st_size;
    unsigned char *buf = mha_alloc(size ? size : 1);
    if (buf == NULL) {
        fclose(f);
        return mha_fail(MHA_E_NOMEM, "%s: '%s': cannot allocate %zu bytes to read it", fname, path, size);
    }
    size_t got = fread(buf, 1, size, f);
    bool failed = ferror(f) != 0;
    fclose(f);
    if (failed || got != size) {
        mha_free(buf, size ? size : 1);
        return mha_fail(MHA_E_IO, "%s: cannot read '%s': read %zu of %zu bytes", fname, path, got, size);
    }
    *bytes = buf;
    *nbytes = size;
    return MHA_OK;
}

mha_status mha_load_file(void *out, const char *path, mha_file_parser *parse) {
    unsigned char *bytes = NULL;
    size_t nbytes = 0;
    mha_status st = read_file(&bytes, &nbytes, path, "load");
    if (st != MHA_OK) return st;
    char what[4096];
    snprintf(what, sizeof what, "'%s'", path);
    st = parse(out, bytes, nbytes, what);
    mha_free(bytes, nbytes ? nbytes : 1);
    return st;
}

static mha_status parse_loaded(void *out, const unsigned char *bytes, size_t nbytes, const char *what) {
    const npy_source from = {"load", what};
    return parse_named(out, bytes, nbytes, &from);
}

mha_status mha_npy_load(mha_tensor *out, const char *path) { return mha_load_file(out, path, parse_loaded); }

/* The header np.save (numpy 1.24) writes for a C-order array: the dict with sorted keys and the
 * repr of the shape tuple, NPY_GROWTH - len(repr(shape[0])) spaces of room to grow, then spaces and
 * '\n' up to the next 64-byte boundary. np.save moves to version 2.0 only for a header over 65535
 * bytes; with at most MHA_MAX_DIMS dimensions of at most 20 digits ours stays under 400, so it is
 * always version 1.0. */
_Static_assert(MHA_MAX_DIMS * 22 + 128 < 65535, "an mha header always fits version 1.0's uint16 length");
static size_t build_header(unsigned char *buf, size_t n, const char *descr, size_t ndim, const size_t *shape) {
    char dict[MHA_MAX_DIMS * 24 + 128];
    size_t len = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (size_t d = 0; d < ndim; d++)
        len += (size_t)snprintf(dict + len, sizeof dict - len, d ? ", %zu" : "%zu", shape[d]);
    len += (size_t)snprintf(dict + len, sizeof dict - len, "%s), }", ndim == 1 ? "," : "");
    if (ndim > 0) {
        int digits = snprintf(NULL, 0, "%zu", shape[0]);
        for (int i = digits; i < NPY_GROWTH; i++) dict[len++] = ' ';
    }
    size_t prefix = NPY_MAGIC_LEN + 2 + 2;            /* magic, version 1.0, uint16 header length */
    size_t hlen = len + 1;                              /* with the final '\n' */
    size_t pad = NPY_ALIGN - (prefix + hlen) % NPY_ALIGN;
    size_t total = prefix + hlen + pad;
    if (total > n) return 0;
    memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
    buf[6] = 1;
    buf[7] = 0;
    size_t header_len = hlen + pad;
    buf[8] = (unsigned char)(header_len & 0xff);
    buf[9] = (unsigned char)(header_len >> 8);
    memcpy(buf + prefix, dict, len);
    memset(buf + prefix + len, ' ', pad);
    buf[total - 1] = '\n';
    return total;
}

/* Elements [first, first+count) of a contiguous tensor as little-endian float32 or 0/1 bytes into
 * dst, which has room for count elements. Returns the bytes written. */
static size_t encode_elements(unsigned char *dst, const mha_tensor *t, size_t first, size_t count) {
    if (t->dtype == MHA_BOOL) {
        const bool *b = mha_bool(t) + first;
        for (size_t i = 0; i < count; i++) dst[i] = b[i] ? 1 : 0;
        return count;
    }
    const float *x = mha_f32(t) + first;
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        for (size_t j = 0; j < 4; j++) dst[4 * i + j] = (unsigned char)(bits >> (8 * j));
    }
    return 4 * count;
}

/* Write a contiguous tensor's data as little-endian float32 or 0/1 bytes, a block at a time. */
static bool write_data(FILE *f, const mha_tensor *t) {
    size_t n = mha_numel(t);
    unsigned char block[4096];
    size_t per_block = sizeof block / (t->dtype == MHA_BOOL ? 1 : 4);
    for (size_t i = 0; i < n; i += per_block) {
        size_t k = encode_elements(block, t, i, n - i < per_block ? n - i : per_block);
        if (fwrite(block, 1, k, f) != k) return false;
    }
    return true;
}

mha_status mha_npy_encode(unsigned char **bytes, size_t *nbytes, const mha_tensor *t, const char *fname, const char *what) {
    if (t == NULL || t->storage == NULL)
        return mha_fail(MHA_E_ARG, "%s: %s: the tensor is empty (released or never filled)", fname, what);
    unsigned char header[1024];
    size_t header_len = build_header(header, sizeof header, t->dtype == MHA_BOOL ? "|b1" : "<f4", t->ndim, t->shape);
    if (header_len == 0) return mha_fail(MHA_E_ARG, "%s: %s: header does not fit its buffer", fname, what);
    size_t n = mha_numel(t), esize = t->dtype == MHA_BOOL ? 1 : 4;
    if (n > (SIZE_MAX - header_len) / esize)
        return mha_fail(MHA_E_NOMEM, "%s: %s: %zu elements do not fit in memory as a .npy file", fname, what, n);
    size_t total = header_len + n * esize;
    mha_tensor c = MHA_TENSOR_EMPTY;
    mha_status st = mha_contiguous(&c, t);
    if (st != MHA_OK) return st;
    unsigned char *buf = mha_alloc(total);
    if (buf == NULL) {
        mha_release(&c);
        return mha_fail(MHA_E_NOMEM, "%s: %s: cannot allocate %zu bytes for the .npy data", fname, what, total);
    }
    memcpy(buf, header, header_len);
    encode_elements(buf + header_len, &c, 0, n);
    mha_release(&c);
    *bytes = buf;
    *nbytes = total;
    return MHA_OK;
}

/* ---- saving: the whole new file or the old one, never half of either ---- */

#define TEMP_SUFFIX     ".tmpXXXXXX"   /* mkstemp's pattern: the file being written is
                                          PATH.tmpAb3xY9 */
#define TEMP_RANDOM_LEN 6

/* The folder part of path ("." when there is none), into buf. */
static void folder_of(char *buf, size_t n, const char *path) {
    const char *slash = strrchr(path, '/');
    if (slash == NULL) snprintf(buf, n, ".");
    else snprintf(buf, n, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

/* fsync of the folder after a rename, so the new name survives a power cut too. */
static void sync_folder(const char *path) {
    char dir[4096];
    folder_of(dir, sizeof dir, path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;  /* best effort: the rename itself is what keeps the file whole */
    fsync(fd);
    close(fd);
}

/* True when name is base + ".tmp" + six letters or digits: exactly the names mkstemp gives ours. */
static bool is_our_temp_name(const char *name, const char *base) {
    size_t blen = strlen(base), plen = strlen(TEMP_SUFFIX) - TEMP_RANDOM_LEN;
    if (strlen(name) != blen + plen + TEMP_RANDOM_LEN || strncmp(name, base, blen) != 0 ||
        strncmp(name + blen, TEMP_SUFFIX, plen) != 0)
        return false;
    for (const char *c = name + blen + plen; *c; c++)
        if (!isalnum((unsigned char)*c)) return false;
    return true;
}

/* Removes PATH.tmpXXXXXX files a save killed between writing and renaming left behind: only our own
 * regular files of exactly that name, and only those no writer holds. A writer holds an flock on
 * its temporary file until it is renamed, and a process's flocks go when it dies, so a file we can
 * lock is abandoned. (A writer that finds its new file unlinked before it could lock it starts
 * again.) */
static void remove_stale_temps(const char *path) {
    char dir[4096];
    folder_of(dir, sizeof dir, path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    DIR *d = opendir(dir);
    if (d == NULL) return;
    int dfd = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!is_our_temp_name(e->d_name, base)) continue;
        int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat held, named;
        if (fstat(fd, &held) == 0 && S_ISREG(held.st_mode) && held.st_uid == geteuid() &&
            flock(fd, LOCK_EX | LOCK_NB) == 0 && fstatat(dfd, e->d_name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
            named.st_dev == held.st_dev && named.st_ino == held.st_ino)
            unlinkat(dfd, e->d_name, 0);
        close(fd);   /* releases the lock */
    }
    closedir(d);
}

/* A new temporary file beside path, named in tmp (room for strlen(path) + sizeof TEMP_SUFFIX),
 * locked against remove_stale_temps. Returns its descriptor, or -1 with errno set. */
static int create_temp(char *tmp, size_t n, const char *path) {
    for (int attempt = 0; attempt < 8; attempt++) {
        snprintf(tmp, n, "%s" TEMP_SUFFIX, path);
        int fd = mkstemp(tmp);
        if (fd < 0) return -1;
        fcntl(fd, F_SETFD, FD_CLOEXEC);   /* a gnuplot started meanwhile must not hold it open */
        struct stat st;
        if (flock(fd, LOCK_EX) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0) return fd;
        close(fd);   /* another save took it for a stale one between mkstemp and flock: try again */
    }
    errno = EAGAIN;
    return -1;
}

/* The message of a failed save: opening (the file could not be made) or writing; old says whether
 * path had a file, which is then kept as it was. */
static mha_status save_failed(const char *path, bool opening, int err, bool old) {
    if (opening) return mha_fail(MHA_E_IO, "save: cannot open '%s' for writing: %s", path, strerror(err));
    return mha_fail(MHA_E_IO, "save: cannot write '%s': %s%s", path, strerror(err),
                    old ? " (the old file is kept as it was)" : "");
}

/* A device or a pipe (/dev/null, /dev/stdout) is written in place: there is nothing to rename
 * over. */
static mha_status save_in_place(const char *path, mha_file_writer *write, const void *ctx) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) return save_failed(path, true, errno, false);
    errno = 0;
    mha_status st = write(f, ctx);
    int err = errno;
    if (fclose(f) != 0 && st == MHA_OK) { st = MHA_E_IO; err = errno; }
    if (st == MHA_E_IO) return save_failed(path, false, err ? err : EIO, false);
    return st;
}

/* True when the symbolic link at path (lstat'd into st) may be followed to write through it: ours
 * or root's (/dev/stdout), and not in a folder anyone may write to with the sticky bit (/tmp)
 * unless ours. Another user's link is replaced by the rename instead, so it cannot aim a save at a
 * device or file. */
static bool link_trusted(const char *path, const struct stat *st) {
    if (st->st_uid == geteuid()) return true;
    if (st->st_uid != 0) return false;
    char dir[4096];
    folder_of(dir, sizeof dir, path);
    struct stat folder;
    return stat(dir, &folder) == 0 && !((folder.st_mode & S_ISVTX) && (folder.st_mode & S_IWOTH));
}

mha_status mha_save_file(const char *path, mha_file_writer *write, const void *ctx) {
    struct stat old;
    bool had_old = lstat(path, &old) == 0;
    if (had_old && S_ISLNK(old.st_mode))   /* a link we trust stands for its target; another is
                                              replaced */
        had_old = link_trusted(path, &old) && stat(path, &old) == 0;
    if (had_old && S_ISDIR(old.st_mode)) return save_failed(path, false, EISDIR, false);
    if (had_old && !S_ISREG(old.st_mode)) return save_in_place(path, write, ctx);
    remove_stale_temps(path);
    size_t tmp_len = strlen(path) + sizeof TEMP_SUFFIX;
    char *tmp = mha_alloc(tmp_len);
    if (tmp == NULL) return mha_fail(MHA_E_NOMEM, "save: '%s': cannot allocate the name of a temporary file", path);
    int fd = create_temp(tmp, tmp_len, path);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (f == NULL) {
        int err = errno;
        if (fd >= 0) { close(fd); unlink(tmp); }
        mha_free(tmp, tmp_len);
        return save_failed(path, true, err, false);
    }
    errno = 0;
    mha_status st = write(f, ctx);
    int err = errno;
    /* the new file gets the old one's permissions and, where we may give it, its owner
     * (root saving over a student's file); else what a new file gets (0666 less the umask) */
    mode_t mask = umask(0);
    umask(mask);
    mode_t mode = had_old ? old.st_mode & 07777 : 0666 & ~mask;
    if (st == MHA_OK && had_old && fchown(fd, old.st_uid, old.st_gid) != 0 && errno != EPERM) { st = MHA_E_IO; err = errno; }
    if (st == MHA_OK && (fflush(f) != 0 || fsync(fd) != 0 || fchmod(fd, mode) != 0)) { st = MHA_E_IO; err = errno; }
    if (st == MHA_E_IO) st = save_failed(path, false, err ? err : EIO, had_old);
    if (st == MHA_OK && rename(tmp, path) != 0) st = save_failed(path, false, errno, had_old);
    if (st != MHA_OK) unlink(tmp);
    fclose(f);   /* after the rename: the lock is held until the name is final */
    if (st == MHA_OK) sync_folder(path);
    mha_free(tmp, tmp_len);
    return st;
}

/* The .npy file of a contiguous tensor: header then data. */
typedef struct npy_file {
    const unsigned char *header;
    size_t header_len;
    const mha_tensor *data;
} npy_file;

static mha_status write_npy(FILE *f, const void *ctx) {
    const npy_file *file = ctx;
    bool ok = fwrite(file->header, 1, file->header_len, f) == file->header_len && write_data(f, file->data);
    return ok ? MHA_OK : MHA_E_IO;
}

mha_status mha_npy_save(const char *path, const mha_tensor *t) {
    if (t == NULL || t->storage == NULL)
        return mha_fail(MHA_E_ARG, "save: '%s': the tensor is empty (released or never filled)", path);
    unsigned char header[1024];
    size_t header_len = build_header(header, sizeof header, t->dtype == MHA_BOOL ? "|b1" : "<f4", t->ndim, t->shape);
    if (header_len == 0) return mha_fail(MHA_E_ARG, "save: '%s': header does not fit its buffer", path);
    mha_tensor c = MHA_TENSOR_EMPTY;
    mha_status st = mha_contiguous_named(&c, t, "save");
    if (st != MHA_OK) return st;
    const npy_file file = {header, header_len, &c};
    st = mha_save_file(path, write_npy, &file);
    mha_release(&c);
    return st;
}
