/* Request rounding, pool choice, segment sizing and split thresholds. */
#include "size_policy.h"

static size_t round_up(size_t value, size_t multiple)
{
    return (value + multiple - 1) / multiple * multiple;
}

static unsigned floor_log2(uint64_t value)
{
    return 63u - (unsigned)__builtin_clzll(value);
}

/* Rounds to one of `divisions` equal steps between the two powers of two
 * around `size`. */
static size_t round_to_power2_division(size_t size, uint32_t divisions)
{
    if ((size & (size - 1)) == 0)
        return size;
    size_t floor_power = (size_t)1 << floor_log2(size);
    size_t step = floor_power >> floor_log2(divisions);
    if (step == 0)
        return floor_power * 2;
    return round_up(size, step);
}

bool size_policy_rounds_plainly(const struct gpucache_config *config)
{
    for (int bucket = 0; bucket < GPUCACHE_ROUNDUP_BUCKETS; bucket++)
        if (config->roundup_power2_divisions[bucket] > 1)
            return false;
    return true;
}

size_t size_policy_round(const struct gpucache_config *config, size_t size)
{
    if (size < MIN_BLOCK_SIZE)
        return MIN_BLOCK_SIZE;
    uint32_t divisions = gpucache_config_roundup_divisions(config, size);
    /* A division count of 1 means no rounding, as in PyTorch. */
    if (divisions > 1 && size > MIN_BLOCK_SIZE * divisions)
        return round_to_power2_division(size, divisions);
    return round_up(size, MIN_BLOCK_SIZE);
}

size_t size_policy_segment_size(const struct gpucache_config *config, size_t rounded_size)
{
    if (rounded_size <= SMALL_SIZE)
        return SMALL_BUFFER;
    if (rounded_size < MIN_LARGE_ALLOC)
        return config->large_segment_size;
    return round_up(rounded_size, ROUND_LARGE);
}

bool size_policy_should_split(const struct gpucache_config *config, bool small_pool,
                              bool expandable, size_t block_size, size_t rounded_size)
{
    size_t remaining = block_size - rounded_size;
    if (small_pool || expandable)
        return remaining >= MIN_BLOCK_SIZE;
    return rounded_size < config->max_split_size && remaining > SMALL_SIZE;
}
