/* An address-ordered tree (libbsd's sys/tree.h) under one lock: these modes
 * exist for A/B comparisons, not for speed. */
#include "tracked_allocations.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/tree.h>

#include "device_registry.h"
#include "library_reports.h"

struct tracked {
    RB_ENTRY(tracked) link;
    uint64_t address;
    size_t size;
    int device;
};

static int tracked_compare(const struct tracked *a, const struct tracked *b)
{
    return a->address < b->address ? -1 : a->address > b->address;
}

RB_HEAD(tracked_tree, tracked);
/* RB_GENERATE_STATIC needs a __unused that libbsd leaves undefined. */
RB_GENERATE_INTERNAL(tracked_tree, tracked, link, tracked_compare, __attribute__((unused)) static)

static struct tracked_tree tree = RB_INITIALIZER(&tree);
static struct tracked_totals totals[GPUCACHE_MAX_DEVICES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct tracked_totals *totals_of(int device)
{
    return device >= 0 && device < GPUCACHE_MAX_DEVICES ? &totals[device] : NULL;
}

void tracked_allocation_added(int device, uint64_t address, size_t size)
{
    struct tracked *entry = malloc(sizeof *entry);
    pthread_mutex_lock(&lock);
    struct tracked_totals *device_totals = totals_of(device);
    if (device_totals) {
        device_totals->allocations++;
        device_totals->current_bytes += size;
        if (device_totals->current_bytes > device_totals->peak_bytes)
            device_totals->peak_bytes = device_totals->current_bytes;
    }
    if (entry) {
        *entry = (struct tracked){.address = address, .size = size, .device = device};
        struct tracked *previous = RB_INSERT(tracked_tree, &tree, entry);
        if (previous) { /* the driver reused an address we missed a free of */
            previous->size = size;
            previous->device = device;
            free(entry);
        }
    }
    pthread_mutex_unlock(&lock);
    library_reports_bypassed_allocation(device, address, size, 0);
}

void tracked_allocation_failed(int device)
{
    pthread_mutex_lock(&lock);
    struct tracked_totals *device_totals = totals_of(device);
    if (device_totals)
        device_totals->failed_allocations++;
    pthread_mutex_unlock(&lock);
}

bool tracked_allocation_removed(uint64_t address, int *device)
{
    struct tracked key = {.address = address};
    pthread_mutex_lock(&lock);
    struct tracked *entry = RB_FIND(tracked_tree, &tree, &key);
    if (entry) {
        RB_REMOVE(tracked_tree, &tree, entry);
        struct tracked_totals *device_totals = totals_of(entry->device);
        if (device_totals) {
            device_totals->frees++;
            device_totals->current_bytes -= entry->size;
        }
        if (device)
            *device = entry->device;
    }
    pthread_mutex_unlock(&lock);
    bool found = entry != NULL;
    if (entry)
        library_reports_bypassed_free(entry->device, address, entry->size, 0);
    free(entry);
    return found;
}

void tracked_allocation_totals(int device, struct tracked_totals *out)
{
    pthread_mutex_lock(&lock);
    struct tracked_totals *device_totals = totals_of(device);
    *out = device_totals ? *device_totals : (struct tracked_totals){0};
    pthread_mutex_unlock(&lock);
}
