/* core/kernels/kernels_testing.h - what only the tests use of the kernels (core/kernels/kernels.h):
 * switches that force one path of the matrix multiply, the size from which a call is split over
 * threads, and where its parts run. */
#ifndef MHA_KERNELS_TESTING_H
#define MHA_KERNELS_TESTING_H

#include <stdbool.h>

/* false keeps every product on the packed path: no dot products of rows for a short A times a
 * Bᵀ. */
void mha_kernels_set_dot_rows(bool on);
/* false packs A always, even for a narrow product whose A has contiguous rows: the two paths held
 * equal. */
void mha_kernels_set_a_unpacked(bool on);
/* false runs a ragged last panel of A rows on the whole tile, its zero padding multiplied too:
 * k->tile_part held equal to it. */
void mha_kernels_set_tile_part(bool on);
/* false keeps a single query (L = 1) on the fused path's tiles: attend_one held equal to them. */
void mha_kernels_set_one_query(bool on);
/* The work (in FLOP, 8e6 unless set) under which mha_kernels_parts keeps a call on one thread; 0
 * splits every call of two units or more. */
void mha_kernels_set_split_min(double flops);
/* false: the caller of a split call waits for the workers to take their parts instead of running
 * the parts not taken yet itself, so each part runs on a thread of its own whatever the load. */
void mha_kernels_set_take_back(bool on);

#endif
