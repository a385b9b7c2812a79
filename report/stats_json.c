/* gpucache_stats_to_json: the statistics flattened and sorted the way
 * torch.cuda.memory_stats() returns them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucache_report.h"

struct entry {
    char name[64];
    int64_t value;
};

/* 9 stat arrays of 3 x 4 values, 4 single stats of 4, 11 scalars. */
#define MAX_ENTRIES (9 * 12 + 4 * 4 + 11)

struct entries {
    struct entry items[MAX_ENTRIES];
    size_t count;
};

static void add(struct entries *entries, const char *name, int64_t value)
{
    struct entry *entry = &entries->items[entries->count++];
    snprintf(entry->name, sizeof entry->name, "%s", name);
    entry->value = value;
}

static void add_stat(struct entries *entries, const char *prefix, const struct gpucache_stat *stat)
{
    static const char *const fields[] = {"current", "peak", "allocated", "freed"};
    const int64_t values[] = {stat->current, stat->peak, stat->allocated, stat->freed};
    for (size_t i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s", prefix, fields[i]);
        add(entries, name, values[i]);
    }
}

static void add_stat_array(struct entries *entries, const char *name,
                           const struct gpucache_stat array[GPUCACHE_STAT_TYPE_COUNT])
{
    static const char *const types[] = {"all", "small_pool", "large_pool"};
    for (size_t i = 0; i < GPUCACHE_STAT_TYPE_COUNT; i++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s.%s", name, types[i]);
        add_stat(entries, prefix, &array[i]);
    }
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

size_t gpucache_stats_to_json(const struct gpucache_stats *stats, char *out, size_t capacity)
{
    struct entries *entries = calloc(1, sizeof *entries);
    if (entries == NULL) {
        if (capacity > 0)
            out[0] = '\0';
        return 0;
    }
    add_stat_array(entries, "allocation", stats->allocation);
    add_stat_array(entries, "segment", stats->segment);
    add_stat_array(entries, "active", stats->active);
    add_stat_array(entries, "inactive_split", stats->inactive_split);
    add_stat_array(entries, "allocated_bytes", stats->allocated_bytes);
    add_stat_array(entries, "reserved_bytes", stats->reserved_bytes);
    add_stat_array(entries, "active_bytes", stats->active_bytes);
    add_stat_array(entries, "inactive_split_bytes", stats->inactive_split_bytes);
    add_stat_array(entries, "requested_bytes", stats->requested_bytes);
    add_stat(entries, "oversize_allocations", &stats->oversize_allocations);
    add_stat(entries, "oversize_segments", &stats->oversize_segments);
    add_stat(entries, "gpucache.pending_blocks", &stats->pending_blocks);
    add_stat(entries, "gpucache.pending_bytes", &stats->pending_bytes);
    add(entries, "num_alloc_retries", stats->num_alloc_retries);
    add(entries, "num_ooms", stats->num_ooms);
    add(entries, "num_oom_rejections", stats->num_oom_rejections);
    add(entries, "num_sync_all_streams", stats->num_sync_all_streams);
    add(entries, "num_device_alloc", stats->num_device_alloc);
    add(entries, "num_device_free", stats->num_device_free);
    add(entries, "max_split_size", stats->max_split_size);
    add(entries, "gpucache.num_device_synchronizations", stats->num_device_synchronizations);
    add(entries, "gpucache.num_fence_waits", stats->num_fence_waits);
    add(entries, "gpucache.num_epochs_closed", stats->num_epochs_closed);
    add(entries, "gpucache.driver_nanoseconds", stats->driver_nanoseconds);
    qsort(entries->items, entries->count, sizeof entries->items[0], compare_names);

    size_t length = 0;
    for (size_t i = 0; i <= entries->count; i++) {
        char *at = length < capacity ? out + length : NULL;
        size_t room = length < capacity ? capacity - length : 0;
        int written = i == entries->count
                          ? snprintf(at, room, "}")
                          : snprintf(at, room, "%s\"%s\": %" PRId64, i == 0 ? "{" : ", ",
                                     entries->items[i].name, entries->items[i].value);
        length += (size_t)written;
    }
    free(entries);
    return length;
}
