/* core/base/status.h - how the core fails and stops: every function's mha_status, the message of
 * the last failure (naming function, argument and shapes), and the interrupt flag long loops
 * poll. */
#ifndef MHA_STATUS_H
#define MHA_STATUS_H

#include <stdbool.h>

typedef enum {
    MHA_OK = 0,
    MHA_E_ARG,         /* a bad argument: dimension out of range, bad option, bad index */
    MHA_E_SHAPE,       /* shapes that do not fit together */
    MHA_E_DTYPE,       /* a float tensor where a bool one is needed, or the reverse */
    MHA_E_NOMEM,       /* allocation failed, or an element count overflowed size_t */
    MHA_E_IO,          /* a file could not be opened, read or written */
    MHA_E_FORMAT,      /* a malformed, truncated or unsupported .npy file */
    MHA_E_INTERRUPTED  /* mha_interrupt() was called while a kernel ran */
} mha_status;

const char *mha_errmsg(void);                 /* message of the last failure on this thread */
mha_status mha_fail(mha_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;                                         /* sets the message, returns status */
const char *mha_status_name(mha_status status);

void mha_interrupt(void);        /* async-signal-safe: ask running kernels to stop */
void mha_interrupt_clear(void);
bool mha_interrupted(void);      /* kernels poll this; cheap (one volatile load) */

#endif
