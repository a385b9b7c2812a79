/* The per_process_memory_fraction cap: read from the device's total memory
 * before the cache first grows, and said once on stderr when it cannot be. */
#include <stdio.h>
#include <unistd.h>

#include "allocator_internal.h"

/* One line per allocator, the first time the device's size cannot be read:
 * the allocations that fail meanwhile say why. */
static void write_unknown_capacity_message(struct gpucache_allocator *allocator,
                                           gpucache_result result)
{
    if (allocator->capacity_error_reported)
        return;
    allocator->capacity_error_reported = true;
    char line[256];
    int length = snprintf(line, sizeof line,
                          "gpucache: device %d: per_process_memory_fraction needs the device's "
                          "memory size, but cuMemGetInfo failed with error %d; allocations "
                          "that must grow the cache fail with out of memory until it answers\n",
                          allocator->device, result);
    if (length > 0) {
        ssize_t written = write(STDERR_FILENO, line, (size_t)length < sizeof line ? (size_t)length
                                                                               : sizeof line - 1);
        (void)written; /* nothing better to do when stderr is gone */
    }
}

/* Resolves the memory fraction's cap (and with it garbage collection) from
 * the device's total memory, before the first growth. A failed query is
 * asked again at once and at every later growth; meanwhile growth fails as
 * out of memory, so an unknown cap is never taken for an unlimited one. */
bool resolve_memory_limits(struct gpucache_allocator *allocator, gpucache_result *result)
{
    if (allocator->memory_limits_known)
        return true;
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    gpucache_result query = GPUCACHE_SUCCESS;
    for (int attempt = 0; attempt < 2; attempt++) {
        DRIVER_CALL(allocator, query, memory_info, allocator->device, &free_bytes, &total_bytes);
        if (query == GPUCACHE_SUCCESS)
            break;
    }
    if (query != GPUCACHE_SUCCESS) {
        write_unknown_capacity_message(allocator, query);
        *result = GPUCACHE_ERROR_OUT_OF_MEMORY;
        return false;
    }
    allocator->allowed_memory_maximum =
        (uint64_t)(allocator->config->per_process_memory_fraction * (double)total_bytes);
    __atomic_store_n(&allocator->gc_enabled,
                     allocator->config->garbage_collection_threshold > 0.0, __ATOMIC_RELAXED);
    allocator->memory_limits_known = true;
    return true;
}
