/* PyTorch's Stat update rules, and the clock used to time driver calls. */
#include <time.h>

#include "allocator_internal.h"

void stat_increase(struct gpucache_stat *stat, int64_t amount)
{
    stat->current += amount;
    if (stat->current > stat->peak)
        stat->peak = stat->current;
    stat->allocated += amount;
}

void stat_decrease(struct gpucache_stat *stat, int64_t amount)
{
    stat->current -= amount;
    stat->freed += amount;
}

void stat_change(struct gpucache_stat *stat, int64_t delta)
{
    if (delta > 0)
        stat_increase(stat, delta);
    else if (delta < 0)
        stat_decrease(stat, -delta);
}

void stat_array_change(struct gpucache_stat array[GPUCACHE_STAT_TYPE_COUNT],
                       enum pool_kind pool, int64_t delta)
{
    stat_change(&array[GPUCACHE_STAT_ALL], delta);
    stat_change(&array[pool == POOL_SMALL ? GPUCACHE_STAT_SMALL_POOL : GPUCACHE_STAT_LARGE_POOL],
                delta);
}

int64_t monotonic_nanoseconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}
