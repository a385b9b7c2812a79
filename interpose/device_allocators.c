/* The allocators are published with atomics for the hot paths; creating and
 * forgetting one takes the device's allocator lock, then the registry's lock
 * inside it (never the other way round), and no lock of this file is held
 * across a call into a live allocator, which calls the registry back for
 * events while it holds its own lock. */
#include "device_allocators.h"

#include <pthread.h>

#include "cuda_driver.h"
#include "device_registry.h"
#include "library_lifecycle.h"
#include "library_reports.h"

struct device_allocator {
    pthread_mutex_t lock;
    struct gpucache_allocator *allocator; /* atomic; NULL until first use */

    /* The statistics of the last allocator forgotten with its context. */
    bool has_retired_stats;
    struct gpucache_stats retired_stats;
};

static struct device_allocator allocators[GPUCACHE_MAX_DEVICES];
static pthread_once_t allocators_once = PTHREAD_ONCE_INIT;

static void allocators_initialise(void)
{
    for (int i = 0; i < GPUCACHE_MAX_DEVICES; i++)
        pthread_mutex_init(&allocators[i].lock, NULL);
}

static struct device_allocator *allocator_slot(int device)
{
    if (device < 0 || device >= GPUCACHE_MAX_DEVICES)
        return NULL;
    pthread_once(&allocators_once, allocators_initialise);
    return &allocators[device];
}

void device_report_out_of_memory(struct gpucache_allocator *allocator, size_t size)
{
    struct library_reports_allocators serving;
    device_serving_allocators(&serving);
    library_reports_out_of_memory(allocator, size, &serving);
}

void device_serving_allocators(struct library_reports_allocators *serving)
{
    serving->count = 0;
    for (size_t device = 0; device < GPUCACHE_MAX_DEVICES; device++) {
        struct gpucache_allocator *allocator =
            device_context((int)device) ? device_allocator((int)device) : NULL;
        serving->by_device[device] = allocator;
        if (allocator)
            serving->count = device + 1;
    }
}

void device_allocators_write_requested_snapshot(void)
{
    if (!library_reports_take_snapshot_request())
        return;
    struct library_reports_allocators serving;
    device_serving_allocators(&serving);
    library_reports_signal_snapshot(&serving);
}

struct gpucache_allocator *device_allocator_for(int device, CUcontext context)
{
    struct device_allocator *slot = allocator_slot(device);
    if (!slot || !context)
        return NULL;
    struct gpucache_allocator *allocator = __atomic_load_n(&slot->allocator, __ATOMIC_ACQUIRE);
    CUcontext served = device_context(device);
    if (allocator && served == context)
        return allocator;
    if (served && served != context)
        return NULL;
    pthread_mutex_lock(&slot->lock);
    served = device_context(device);
    if (!served) {
        /* Context first, then the allocator: a reader that sees the
         * allocator also sees the context it serves. */
        struct gpucache_allocator *created =
            gpucache_allocator_create(library_config(), cuda_driver_interface(), device);
        if (created) {
            library_reports_allocator_created(created);
            device_set_context(device, context);
            __atomic_store_n(&slot->allocator, created, __ATOMIC_RELEASE);
            served = context;
        }
    }
    allocator = served == context ? slot->allocator : NULL;
    pthread_mutex_unlock(&slot->lock);
    return allocator;
}

struct gpucache_allocator *device_allocator(int device)
{
    struct device_allocator *slot = allocator_slot(device);
    return slot ? __atomic_load_n(&slot->allocator, __ATOMIC_ACQUIRE) : NULL;
}

gpucache_result device_free_anywhere(uint64_t address, enum gpucache_free_kind kind,
                                     gpucache_stream stream)
{
    for (int i = 0; i < GPUCACHE_MAX_DEVICES; i++) {
        struct gpucache_allocator *allocator = __atomic_load_n(&allocators[i].allocator,
                                                               __ATOMIC_ACQUIRE);
        if (!allocator || !device_context(i))
            continue;
        gpucache_result result = gpucache_allocator_free(allocator, address, kind, stream);
        if (result != GPUCACHE_ALLOCATOR_NOT_OURS)
            return result;
    }
    return GPUCACHE_ALLOCATOR_NOT_OURS;
}

gpucache_result device_free_preferring(struct gpucache_allocator *likely, uint64_t address,
                                       enum gpucache_free_kind kind, gpucache_stream stream)
{
    if (likely) {
        gpucache_result result = gpucache_allocator_free(likely, address, kind, stream);
        if (result != GPUCACHE_ALLOCATOR_NOT_OURS)
            return result;
    }
    return device_free_anywhere(address, kind, stream);
}

struct gpucache_allocator *device_allocator_owning(uint64_t address, int *device)
{
    for (int i = 0; i < GPUCACHE_MAX_DEVICES; i++) {
        struct gpucache_allocator *allocator = __atomic_load_n(&allocators[i].allocator,
                                                               __ATOMIC_ACQUIRE);
        if (allocator && device_context(i) && gpucache_allocator_owns(allocator, address)) {
            if (device)
                *device = i;
            return allocator;
        }
    }
    return NULL;
}

void device_forget(int device)
{
    struct device_allocator *slot = allocator_slot(device);
    if (!slot)
        return;
    pthread_mutex_lock(&slot->lock);
    /* The registry entry goes with or without an allocator (the
     * cudaMallocAsync backend records events on its streams too). */
    CUcontext served = device_registry_forget(device);
    /* Its memory went with the context too. */
    struct gpucache_allocator *abandoned = served ? slot->allocator : NULL;
    if (abandoned)
        __atomic_store_n(&slot->allocator, NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&slot->lock);
    if (!abandoned)
        return;
    /* Outside the lock: the allocator takes its own lock, and calls back
     * into the registry (for events) while it holds it. */
    struct gpucache_stats stats;
    gpucache_allocator_get_stats(abandoned, &stats);
    gpucache_allocator_abandon(abandoned);
    pthread_mutex_lock(&slot->lock);
    slot->retired_stats = stats;
    slot->has_retired_stats = true;
    pthread_mutex_unlock(&slot->lock);
}

void device_forget_context(CUcontext context)
{
    if (!context)
        return;
    for (int i = 0; i < GPUCACHE_MAX_DEVICES; i++)
        if (device_context(i) == context)
            device_forget(i);
}

bool device_retired_stats(int device, struct gpucache_stats *stats)
{
    struct device_allocator *slot = allocator_slot(device);
    if (!slot)
        return false;
    pthread_mutex_lock(&slot->lock);
    bool found = slot->has_retired_stats;
    if (found)
        *stats = slot->retired_stats;
    pthread_mutex_unlock(&slot->lock);
    return found;
}
