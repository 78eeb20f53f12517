/* tests/check.h - the small assertion kit every C test in tests/ uses: each check prints one
 * "PASS name" or "FAIL name: why" line, which tests/run.sh counts into "N passed, M failed". */
#ifndef MHA_CHECK_H
#define MHA_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failures = 0;

/* Record one named result; fmt explains a failure. */
static void check_report(int ok, const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
#include <stdarg.h>
static void check_report(int ok, const char *name, const char *fmt, ...) {
    if (ok) { printf("PASS %s\n", name); return; }
    check_failures++;
    printf("FAIL %s: ", name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* |got - want| <= atol + rtol*|want|; NaN equals NaN, inf equals inf of the same sign. */
static inline int check_close_value(double got, double want, double rtol, double atol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Compare n floats; on failure name the first differing flat index and both values. */
static inline int check_close_array(const char *name, const float *got, const float *want, size_t n,
                             double rtol, double atol) {
    for (size_t i = 0; i < n; i++) {
        if (!check_close_value(got[i], want[i], rtol, atol)) {
            check_report(0, name, "element %zu: got %.9g, want %.9g (rtol %g, atol %g)", i,
                         (double)got[i], (double)want[i], rtol, atol);
            return 0;
        }
    }
    check_report(1, name, "%s", "");
    return 1;
}

#define CHECK(name, cond, ...) check_report((cond) ? 1 : 0, (name), __VA_ARGS__)
/* Exit status of a test program: non-zero when any check failed. */
#define CHECK_DONE() return check_failures ? 1 : 0

#endif
