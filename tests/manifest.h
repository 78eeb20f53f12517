/* tests/manifest.h - reads the manifest.txt the array fixture generators write (tests/fixtures/npy, npz):
 * one line per array, "name kind ndim dims... count values...", kind f32 or bool, values exact reprs. */
#ifndef MHA_TEST_MANIFEST_H
#define MHA_TEST_MANIFEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"

typedef struct entry {
    char name[96];
    bool is_bool;
    size_t ndim, shape[MHA_MAX_DIMS], n;
    double *values;  /* n values, malloc'd */
} entry;

/* Reads up to max entries of the manifest at path into entries; returns how many (0 when it is absent). */
static size_t read_manifest_file(const char *path, entry *entries, size_t max) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *line = NULL;
    size_t cap = 0, count = 0;
    while (getline(&line, &cap, f) > 0 && count < max) {
        entry *e = &entries[count];
        char kind[8];
        int used;
        if (sscanf(line, "%95s %7s %zu%n", e->name, kind, &e->ndim, &used) != 3 || e->ndim > MHA_MAX_DIMS) break;
        char *p = line + used;
        for (size_t d = 0; d < e->ndim; d++) e->shape[d] = strtoull(p, &p, 10);
        e->n = strtoull(p, &p, 10);
        e->is_bool = strcmp(kind, "bool") == 0;
        e->values = malloc((e->n ? e->n : 1) * sizeof *e->values);
        for (size_t i = 0; i < e->n; i++) e->values[i] = strtod(p, &p);
        count++;
    }
    free(line);
    fclose(f);
    return count;
}

#endif
