/* core/io/npy.h - NumPy .npy files read and written, and the file glue .npy and .npz share: a file
 * read whole into memory, and a save that leaves the old file in place unless all of the new one
 * was written. */
#ifndef MHA_NPY_H
#define MHA_NPY_H

#include <stdio.h>
#include "tensor/tensor.h"

/* ---- NumPy .npy files (format 1.0, 2.0 and 3.0 read; 1.0 written, 2.0 when the header needs it)
 * ---- */
mha_status mha_npy_load(mha_tensor *out, const char *path);
/* a whole file in memory */
mha_status mha_npy_parse(mha_tensor *out, const void *bytes, size_t nbytes);
mha_status mha_npy_save(const char *path, const mha_tensor *t);
/* For archives (.npz, core/npz.c): parse names its source in errors as "fname: what: ..."; encode
 * puts exactly what mha_npy_save writes into *bytes (mha_alloc'd, *nbytes long; mha_free(*bytes,
 * *nbytes)). */
mha_status mha_npy_parse_from(mha_tensor *out, const void *bytes, size_t nbytes, const char *fname, const char *what);
mha_status mha_npy_encode(unsigned char **bytes, size_t *nbytes, const mha_tensor *t, const char *fname, const char *what);
/* The loading glue of .npy and .npz (core/npy.c): reads the file at path whole and returns
 * parse(out, its bytes, what) with what = "'path'" for messages; the reading's own errors start
 * "load: ". */
typedef mha_status mha_file_parser(void *out, const unsigned char *bytes, size_t nbytes, const char *what);
mha_status mha_load_file(void *out, const char *path, mha_file_parser *parse);
/* The saving glue of .npy and .npz (core/npy.c): path gets all of what write(f, ctx) writes or
 * keeps what it had. write goes to PATH.tmpXXXXXX in the same folder, which is flushed to disk and
 * renamed over path; on any failure it is removed and path is left as it was. Temporary files of
 * path that a killed save left are removed first (our own, of exactly that pattern, that no live
 * save holds). A device or pipe (/dev/null) is written in place. write returns MHA_E_IO without a
 * message when writing to f fails (errno says why; the message is made here), or any other failure
 * with its message. */
typedef mha_status mha_file_writer(FILE *f, const void *ctx);
mha_status mha_save_file(const char *path, mha_file_writer *write, const void *ctx);

#endif
