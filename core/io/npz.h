/* core/io/npz.h - NumPy .npz archives (np.savez, np.savez_compressed): a zip of NAME.npy members,
 * read and written with zlib, so a checkpoint moves between mha-repl and NumPy/PyTorch. */
#ifndef MHA_NPZ_H
#define MHA_NPZ_H

#include "tensor/tensor.h"
#include "io/npy.h"

/* One member of an archive: its key (the member name without ".npy", as np.load shows it) and
 * tensor. */
typedef struct mha_npz_entry {
    char *name;         /* NUL-terminated, mha_alloc'd */
    mha_tensor tensor;
} mha_npz_entry;

/* A whole archive in memory, members in the archive's order. Zeroed means empty. */
typedef struct mha_npz {
    size_t count;
    mha_npz_entry *entries;  /* count entries, mha_alloc'd */
} mha_npz;

void mha_npz_release(mha_npz *archive);  /* frees every name and tensor; archive becomes empty */

/* Reads the archive at path into out (zeroed on entry; still empty on failure). Members may be
 * stored or deflated (np.savez, np.savez_compressed), with or without zip64 extra fields in their
 * headers. Refused, naming the file and the member: a truncated or corrupt archive, a bad CRC-32,
 * encryption, other compression methods, the zip64 end record (archives over 4 GiB), a member whose
 * name does not end in .npy, two members with the same name, and any .npy error
 * (mha_npy_parse_from's). */
mha_status mha_npz_load(mha_npz *out, const char *path);
/* The same from bytes in memory; what names them in errors ("'m.npz'", "<memory>"). */
mha_status mha_npz_parse(mha_npz *out, const void *bytes, size_t nbytes, const char *what);

/* Writes tensors[i] as member names[i] + ".npy", as np.savez does
 * (compress: as np.savez_compressed), atomically: into a temporary file in the same directory,
 * flushed to disk, then renamed over path, so path holds the old archive or the whole new one,
 * never half of one. Names must be distinct and non-empty. Every member's date is 1980-01-01 00:00,
 * so the same tensors give the same bytes. */
mha_status mha_npz_save(const char *path, const char *const *names, const mha_tensor *const *tensors, size_t n,
                        bool compress);

/* True when the file at path starts like a zip archive ("PK\3\4", or "PK\5\6" for an empty one). */
bool mha_npz_sniff(const char *path);

#endif
