/* What only the tests ask of an allocator: its invariants, a live block's
 * requested size and what its lanes served. Not part of the interface the
 * interposer and the replay use (gpucache_allocator.h). */
#ifndef GPUCACHE_ALLOCATOR_TESTING_H
#define GPUCACHE_ALLOCATOR_TESTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpucache_allocator.h"

/* The block that `address` starts, if live: its size as requested. */
bool gpucache_allocator_block_size(struct gpucache_allocator *allocator, uint64_t address,
                                   size_t *requested_size);

/* Checks every structural invariant (blocks tile segments, no overlap, stats
 * equal their recomputed values). Returns true when all hold; otherwise
 * writes the first violation into `why`. */
bool gpucache_allocator_check(struct gpucache_allocator *allocator, char *why, size_t why_size);

/* How many hits and frees the fronts' lanes served (without the allocator's
 * lock) since the allocator was created. */
void gpucache_allocator_lane_counts(struct gpucache_allocator *allocator, uint64_t *hits,
                                    uint64_t *frees);

/* Of those frees, the synchronous ones. */
uint64_t gpucache_allocator_lane_synchronous_frees(struct gpucache_allocator *allocator);

/* Takes (`held`) or lets go of the allocator's lock, for tests of what the
 * lanes do without it. */
void gpucache_allocator_hold_lock(struct gpucache_allocator *allocator, bool held);

#endif
