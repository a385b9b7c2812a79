/* gpucache_device_stats: the statistics of one device in PyTorch's names,
 * from the caching allocator (the live one, or the last one whose context
 * was destroyed), or from the counts kept by the passthrough:True and
 * backend:cudaMallocAsync modes. */
#include <string.h>

#include "device_allocators.h"
#include "device_registry.h"
#include "gpucache_public.h"
#include "tracked_allocations.h"

int gpucache_device_stats(int device, struct gpucache_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    struct gpucache_allocator *allocator = device_allocator(device);
    if (allocator && device_context(device)) {
        gpucache_allocator_get_stats(allocator, stats);
        return 0;
    }
    if (device_retired_stats(device, stats))
        return 0;
    struct tracked_totals totals;
    tracked_allocation_totals(device, &totals);
    if (totals.allocations == 0 && totals.failed_allocations == 0)
        return -1;
    struct gpucache_stat *allocations = &stats->allocation[GPUCACHE_STAT_ALL];
    allocations->current = (int64_t)(totals.allocations - totals.frees);
    allocations->allocated = (int64_t)totals.allocations;
    allocations->freed = (int64_t)totals.frees;
    struct gpucache_stat *bytes = &stats->allocated_bytes[GPUCACHE_STAT_ALL];
    bytes->current = (int64_t)totals.current_bytes;
    bytes->peak = (int64_t)totals.peak_bytes;
    stats->num_device_alloc = (int64_t)totals.allocations;
    stats->num_device_free = (int64_t)totals.frees;
    stats->num_ooms = (int64_t)totals.failed_allocations;
    stats->max_split_size = -1;
    return 0;
}
