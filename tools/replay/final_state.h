/* The allocator's segments and blocks when a replay ends (or stops short),
 * copied out in the shape of a memory snapshot's `segments`, so the report
 * can show what memory looked like, at an out-of-memory failure above all. */
#ifndef GPUCACHE_REPLAY_FINAL_STATE_H
#define GPUCACHE_REPLAY_FINAL_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpucache_allocator.h"

struct replay_final_state {
    struct gpucache_segment_info *segments; /* address order; blocks point into `blocks` */
    size_t segment_count;
    struct gpucache_block_info *blocks;
    size_t block_count;
};

/* Copies the allocator's segments. False when host memory ran out (the
 * state is empty then). */
bool replay_final_state_capture(struct gpucache_allocator *allocator,
                                struct replay_final_state *state);

/* Frees the copy and empties it. */
void replay_final_state_release(struct replay_final_state *state);

/* The largest block free in the cache: the biggest request the cache could
 * have served without asking the driver. */
uint64_t replay_final_state_largest_free_block(const struct replay_final_state *state);

#endif
