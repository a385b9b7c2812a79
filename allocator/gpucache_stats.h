/* Allocator statistics with the names and meaning of PyTorch's
 * torch.cuda.memory_stats(), plus gpucache's own counters about reuse safety
 * and driver cost. */
#ifndef GPUCACHE_STATS_H
#define GPUCACHE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One PyTorch Stat: current value, its peak, and the running totals of
 * increases ("allocated") and decreases ("freed"). */
struct gpucache_stat {
    int64_t current;
    int64_t peak;
    int64_t allocated;
    int64_t freed;
};

/* The three slots of PyTorch's StatArray. */
enum gpucache_stat_type {
    GPUCACHE_STAT_ALL = 0,
    GPUCACHE_STAT_SMALL_POOL,
    GPUCACHE_STAT_LARGE_POOL,
    GPUCACHE_STAT_TYPE_COUNT
};

struct gpucache_stats {
    /* PyTorch's DeviceStats. */
    struct gpucache_stat allocation[GPUCACHE_STAT_TYPE_COUNT];
    struct gpucache_stat segment[GPUCACHE_STAT_TYPE_COUNT];
    struct gpucache_stat active[GPUCACHE_STAT_TYPE_COUNT];
    struct gpucache_stat inactive_split[GPUCACHE_STAT_TYPE_COUNT];
    struct gpucache_stat allocated_bytes[GPUCACHE_STAT_TYPE_COUNT];
    struct gpucache_stat reserved_bytes[GPUCACHE_STAT_TYPE_COUNT];
    struct gpucache_stat active_bytes[GPUCACHE_STAT_TYPE_COUNT];
    struct gpucache_stat inactive_split_bytes[GPUCACHE_STAT_TYPE_COUNT];
    struct gpucache_stat requested_bytes[GPUCACHE_STAT_TYPE_COUNT];
    struct gpucache_stat oversize_allocations;
    struct gpucache_stat oversize_segments;
    int64_t num_alloc_retries;
    int64_t num_ooms;
    int64_t num_oom_rejections;
    int64_t num_sync_all_streams;
    int64_t num_device_alloc;
    int64_t num_device_free;
    int64_t max_split_size; /* -1 when unlimited, as PyTorch reports SIZE_MAX */

    /* gpucache's own. Blocks whose free was requested but that are not yet
     * reusable, because GPU work issued before the free may still use them. */
    struct gpucache_stat pending_blocks;
    struct gpucache_stat pending_bytes;
    int64_t num_device_synchronizations; /* synchronize_device calls we issued */
    int64_t num_fence_waits;             /* host waits on a fence we issued */
    int64_t num_epochs_closed;           /* fences recorded for synchronous frees */
    int64_t driver_nanoseconds;          /* wall time spent inside driver calls */
};

#endif
