/* The caching allocator of each device: created on first use and bound to
 * the context current then, found by device or by address, forgotten with
 * its context, and the statistics it had when it was. The one owner of the
 * allocators and the one caller of the reports they feed. */
#ifndef GPUCACHE_INTERPOSE_DEVICE_ALLOCATORS_H
#define GPUCACHE_INTERPOSE_DEVICE_ALLOCATORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_headers.h"
#include "device_registry.h"
#include "gpucache_allocator.h"
#include "library_reports.h"

/* The allocator of `device` if it serves `context`, creating it when the
 * device has none yet. NULL when the device is served in another context
 * (the caller then bypasses the cache). */
struct gpucache_allocator *device_allocator_for(int device, CUcontext context);

/* The device's allocator if it has one, whatever its context. */
struct gpucache_allocator *device_allocator(int device);

/* Reports that `allocator` answered out of memory for `size` bytes. */
void device_report_out_of_memory(struct gpucache_allocator *allocator, size_t size);

/* Allocates from `allocator` (which serves `context`, current on this
 * thread). Driver calls the allocator makes meanwhile know the current
 * context from device_thread_context() without asking the driver. An out of
 * memory answer is reported before the caller sees it (before the program
 * can free anything in answer). Inline: every cache hit runs it. */
static inline gpucache_result device_allocate(struct gpucache_allocator *allocator,
                                              CUcontext context, size_t size,
                                              gpucache_stream stream, uint64_t *address)
{
    device_set_thread_context(context);
    gpucache_result result = gpucache_allocator_malloc(allocator, size, stream, address);
    device_set_thread_context(NULL);
    if (result == GPUCACHE_ERROR_OUT_OF_MEMORY)
        device_report_out_of_memory(allocator, size);
    return result;
}

/* Frees `address` in whichever allocator handed it out. Returns the
 * allocator's result, or GPUCACHE_ALLOCATOR_NOT_OURS. */
gpucache_result device_free_anywhere(uint64_t address, enum gpucache_free_kind kind,
                                     gpucache_stream stream);
/* The same, asking `likely` (a live allocator, or NULL) first. */
gpucache_result device_free_preferring(struct gpucache_allocator *likely, uint64_t address,
                                       enum gpucache_free_kind kind, gpucache_stream stream);

/* The allocator serving each device, for the reports. */
void device_serving_allocators(struct library_reports_allocators *serving);

/* Called by the hooks outside every lock: writes the snapshot the signal
 * asked for, if it did. Costs one load otherwise (inline: every hook asks). */
void device_allocators_write_requested_snapshot(void);
static inline void device_allocators_safe_point(void)
{
    if (__atomic_load_n(&library_reports_snapshot_pending, __ATOMIC_RELAXED))
        device_allocators_write_requested_snapshot();
}

/* The allocator that owns `address`, or NULL. */
struct gpucache_allocator *device_allocator_owning(uint64_t address, int *device);

/* The context of `device` (or the context `context`) is gone: the device's
 * registry entry and its cache are forgotten without a driver call. */
void device_forget(int device);
void device_forget_context(CUcontext context);

/* The statistics the device's allocator had when its context was last
 * forgotten; false if it never was. */
bool device_retired_stats(int device, struct gpucache_stats *stats);

#endif
