/* tests/fuzz/fuzz_npy.c - libFuzzer target for the .npy reader: any bytes given to mha_npy_parse either
 * load (and then hold exactly the elements the header's shape names) or are refused with a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"
#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mha_tensor t = MHA_TENSOR_EMPTY;
    mha_status st = mha_npy_parse(&t, data, size);
    if (st == MHA_OK) {
        /* read every element back: an out-of-bounds shape or stride shows up under ASan */
        double sum = 0;
        size_t n = mha_numel(&t);
        for (size_t i = 0; i < n; i++) sum += t.dtype == MHA_BOOL ? mha_bool(&t)[i] : mha_f32(&t)[i];
        (void)sum;
        mha_release(&t);
    } else if (mha_errmsg()[0] == '\0' || strncmp(mha_errmsg(), "npy_parse: ", 11) != 0) {
        fprintf(stderr, "fuzz_npy: a refusal without its message: status %d, \"%s\"\n", (int)st, mha_errmsg());
        abort();
    }
    if (mha_live_bytes() != 0) {
        fprintf(stderr, "fuzz_npy: %zu bytes still live after the parse\n", mha_live_bytes());
        abort();
    }
    return 0;
}
