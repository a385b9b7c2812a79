/* PyTorch's size rules: request rounding, pool choice, segment size and the
 * split decision. Pure functions of the size and the configuration. */
#ifndef GPUCACHE_SIZE_POLICY_H
#define GPUCACHE_SIZE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpucache_config.h"

#define MIN_BLOCK_SIZE ((size_t)512)          /* minimum and granule of a block */
#define SMALL_SIZE ((size_t)1 << 20)          /* largest small-pool request */
#define SMALL_BUFFER ((size_t)2 << 20)        /* small-pool segment size */
#define MIN_LARGE_ALLOC ((size_t)10 << 20)    /* below: one large_segment_size segment */
#define ROUND_LARGE ((size_t)2 << 20)         /* rounding of larger segments */
#define ALLOCATION_HARD_LIMIT ((uint64_t)1 << 60)

/* The block size for a request of `size` bytes (512 minimum and multiple,
 * or roundup_power2_divisions rounding). */
size_t size_policy_round(const struct gpucache_config *config, size_t size);

/* True when a rounded size is served from the small pool (<= 1 MiB).
 * Inline: every allocation asks. */
static inline bool size_policy_is_small(size_t rounded_size)
{
    return rounded_size <= SMALL_SIZE;
}

/* True when no roundup_power2_divisions apply: every request is then
 * rounded to a multiple of 512 (size_policy_round_plainly). */
bool size_policy_rounds_plainly(const struct gpucache_config *config);

/* size_policy_round under size_policy_rounds_plainly, inline for the hit
 * path. */
static inline size_t size_policy_round_plainly(size_t size)
{
    if (size < MIN_BLOCK_SIZE)
        return MIN_BLOCK_SIZE;
    return (size + MIN_BLOCK_SIZE - 1) & ~(MIN_BLOCK_SIZE - 1);
}

/* The size of a new segment for a rounded request. */
size_t size_policy_segment_size(const struct gpucache_config *config, size_t rounded_size);

/* Whether a free block of `block_size` given to a request of `rounded_size`
 * is split, leaving the rest free. Blocks of expandable segments split like
 * small ones: their slivers can merge back across pages. */
bool size_policy_should_split(const struct gpucache_config *config, bool small_pool,
                              bool expandable, size_t block_size, size_t rounded_size);

#endif
