/* tests/fuzz/fuzz_npz.c - libFuzzer target for the .npz reader: any bytes given to mha_npz_parse either
 * load (every member's tensor then holds exactly the elements its shape names) or are refused with a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/npz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mha_npz archive = {0};
    mha_status st = mha_npz_parse(&archive, data, size, "<fuzz>");
    if (st == MHA_OK) {
        /* read every element and name back: an out-of-bounds shape or name shows up under ASan */
        double sum = 0;
        for (size_t k = 0; k < archive.count; k++) {
            const mha_tensor *t = &archive.entries[k].tensor;
            sum += (double)strlen(archive.entries[k].name);
            size_t n = mha_numel(t);
            for (size_t i = 0; i < n; i++) sum += t->dtype == MHA_BOOL ? mha_bool(t)[i] : mha_f32(t)[i];
        }
        (void)sum;
        mha_npz_release(&archive);
    } else if (strncmp(mha_errmsg(), "npz_parse: ", 11) != 0 || archive.count != 0) {
        fprintf(stderr, "fuzz_npz: a refusal without its message, or with members left: status %d, \"%s\"\n",
                (int)st, mha_errmsg());
        abort();
    }
    if (mha_live_bytes() != 0) {
        fprintf(stderr, "fuzz_npz: %zu bytes still live after the parse\n", mha_live_bytes());
        abort();
    }
    return 0;
}
