/* core/base/status.c - the message of the last failure, one per thread, and the interrupt flag a
 * signal handler sets and kernel threads poll. */
#include "base/status.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

/* ---- errors ---- */

static _Thread_local char errbuf[512];

const char *mha_errmsg(void) { return errbuf; }

mha_status mha_fail(mha_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return status;
}

const char *mha_status_name(mha_status status) {
    switch (status) {
    case MHA_OK: return "ok";
    case MHA_E_ARG: return "bad argument";
    case MHA_E_SHAPE: return "shape mismatch";
    case MHA_E_DTYPE: return "wrong dtype";
    case MHA_E_NOMEM: return "out of memory";
    case MHA_E_IO: return "i/o error";
    case MHA_E_FORMAT: return "bad file format";
    case MHA_E_INTERRUPTED: return "interrupted";
    }
    return "unknown status";
}

/* ---- interrupts: a flag a signal handler sets and kernel threads poll ----
 * A lock-free C11 atomic, not volatile sig_atomic_t: with MHA_THREADS worker threads read it while
 * the handler writes it on another, which only an atomic makes well defined
 * (lock-free ones are also safe in a signal handler). Relaxed order is enough: nothing else is
 * published through it. */

static atomic_int interrupt_flag = 0;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the interrupt flag must be lock-free to be set in a signal handler");

void mha_interrupt(void) { atomic_store_explicit(&interrupt_flag, 1, memory_order_relaxed); }
void mha_interrupt_clear(void) { atomic_store_explicit(&interrupt_flag, 0, memory_order_relaxed); }
bool mha_interrupted(void) { return atomic_load_explicit(&interrupt_flag, memory_order_relaxed) != 0; }
