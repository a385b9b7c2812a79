/* The accounting driver: device semantics without device memory. This file
 * holds its memory (plain allocations, VMM reservations and pages), its
 * life cycle and fault injection; streams and fences are in
 * accounting_streams.c. */
#include <stdlib.h>
#include <string.h>

#include "accounting_internal.h"

static int compare_ranges(const struct range *a, const struct range *b)
{
    return (a->address > b->address) - (a->address < b->address);
}

RB_GENERATE(accounting_range_tree, range, link, compare_ranges)

static const char *const operation_names[ACCOUNTING_OPERATION_COUNT] = {
    "device_alloc",   "device_free",     "memory_info",       "fence_stream",
    "fence_all_streams", "fence_query",  "fence_wait",        "synchronize_device", "page_granularity", "address_reserve", "address_free",
    "page_create",    "page_release",    "page_map",          "page_unmap",
    "set_access",
};

bool accounting_injected(struct accounting_driver *driver, enum accounting_operation operation,
                     gpucache_result *error)
{
    unsigned long call = ++driver->calls[operation];
    const struct injected_failure *failure = &driver->failures[operation];
    if (failure->first_call != 0 && call >= failure->first_call && call <= failure->last_call) {
        *error = failure->error;
        return true;
    }
    return false;
}

static uint64_t round_up(uint64_t value, uint64_t multiple)
{
    return (value + multiple - 1) / multiple * multiple;
}

static struct range *range_containing(struct accounting_range_tree *tree, uint64_t address, uint64_t size)
{
    struct range *node = RB_ROOT(tree);
    struct range *below = NULL;
    while (node != NULL) {
        if (node->address <= address) {
            below = node;
            node = RB_RIGHT(node, link);
        } else {
            node = RB_LEFT(node, link);
        }
    }
    if (below != NULL && address - below->address < below->size &&
        size <= below->size - (address - below->address))
        return below;
    return NULL;
}

static gpucache_result device_alloc(void *context, int device, size_t size, uint64_t *address)
{
    ENTER(context, ACCOUNTING_DEVICE_ALLOC);
    (void)device;
    struct range *range = NULL;
    if (size == 0 || address == NULL) {
        result = GPUCACHE_ERROR_INVALID_VALUE;
    } else if (size > driver->capacity - driver->used) {
        result = GPUCACHE_ERROR_OUT_OF_MEMORY;
    } else if ((range = calloc(1, sizeof *range)) == NULL) {
        result = GPUCACHE_ERROR_OUT_OF_MEMORY;
    } else {
        range->address = driver->next_plain;
        range->size = size;
        /* A gap after each allocation: segments are never address-adjacent,
         * so a merge across segments would show up as a broken tiling. */
        driver->next_plain += round_up(size, ADDRESS_ALIGNMENT) + ADDRESS_ALIGNMENT;
        RB_INSERT(accounting_range_tree, &driver->allocations, range);
        driver->used += size;
        *address = range->address;
    }
    LEAVE();
}

static gpucache_result device_free(void *context, int device, uint64_t address)
{
    ENTER(context, ACCOUNTING_DEVICE_FREE);
    (void)device;
    struct range key = {.address = address};
    struct range *range = RB_FIND(accounting_range_tree, &driver->allocations, &key);
    if (range == NULL) {
        result = GPUCACHE_ERROR_INVALID_VALUE;
    } else {
        RB_REMOVE(accounting_range_tree, &driver->allocations, range);
        driver->used -= range->size;
        free(range);
    }
    LEAVE();
}

static gpucache_result memory_info(void *context, int device, size_t *free_bytes,
                                   size_t *total_bytes)
{
    ENTER(context, ACCOUNTING_MEMORY_INFO);
    (void)device;
    *free_bytes = driver->capacity - driver->used;
    *total_bytes = driver->capacity;
    LEAVE();
}

static gpucache_result page_granularity(void *context, int device, size_t *granularity)
{
    ENTER(context, ACCOUNTING_PAGE_GRANULARITY);
    (void)device;
    *granularity = driver->granularity;
    LEAVE();
}

static gpucache_result address_reserve(void *context, int device, size_t size, uint64_t *address)
{
    ENTER(context, ACCOUNTING_ADDRESS_RESERVE);
    (void)device;
    struct range *range = NULL;
    if (size == 0 || size % driver->granularity != 0) {
        result = GPUCACHE_ERROR_INVALID_VALUE;
    } else if ((range = calloc(1, sizeof *range)) == NULL) {
        result = GPUCACHE_ERROR_OUT_OF_MEMORY;
    } else {
        range->address = driver->next_reserved;
        range->size = size;
        driver->next_reserved += size + driver->granularity;
        RB_INSERT(accounting_range_tree, &driver->reservations, range);
        *address = range->address;
    }
    LEAVE();
}

static bool page_mapped_inside(const struct accounting_driver *driver, uint64_t address,
                               uint64_t size)
{
    for (size_t i = 0; i < driver->page_count; i++) {
        const struct page *page = &driver->pages[i];
        if (page->mapped_at != 0 && page->mapped_at >= address &&
            page->mapped_at - address < size)
            return true;
    }
    return false;
}

static gpucache_result address_free(void *context, int device, uint64_t address, size_t size)
{
    ENTER(context, ACCOUNTING_ADDRESS_FREE);
    (void)device;
    struct range key = {.address = address};
    struct range *range = RB_FIND(accounting_range_tree, &driver->reservations, &key);
    if (range == NULL || range->size != size || page_mapped_inside(driver, address, size)) {
        result = GPUCACHE_ERROR_INVALID_VALUE;
    } else {
        RB_REMOVE(accounting_range_tree, &driver->reservations, range);
        free(range);
    }
    LEAVE();
}

static gpucache_result page_create(void *context, int device, size_t size,
                                   gpucache_page_handle *handle)
{
    ENTER(context, ACCOUNTING_PAGE_CREATE);
    (void)device;
    if (size == 0 || size % driver->granularity != 0) {
        result = GPUCACHE_ERROR_INVALID_VALUE;
        goto done;
    }
    if (size > driver->capacity - driver->used) {
        result = GPUCACHE_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    if (driver->page_count == driver->page_capacity) {
        size_t capacity = driver->page_capacity ? driver->page_capacity * 2 : 64;
        struct page *pages = realloc(driver->pages, capacity * sizeof *pages);
        if (pages == NULL) {
            result = GPUCACHE_ERROR_OUT_OF_MEMORY;
            goto done;
        }
        driver->pages = pages;
        driver->page_capacity = capacity;
    }
    driver->pages[driver->page_count] = (struct page){.size = size, .created = true};
    *handle = ++driver->page_count; /* handle = index + 1: 0 is never valid */
    driver->used += size;
    LEAVE();
}

static struct page *page_of(struct accounting_driver *driver, gpucache_page_handle handle)
{
    if (handle == 0 || handle > driver->page_count || !driver->pages[handle - 1].created)
        return NULL;
    return &driver->pages[handle - 1];
}

static gpucache_result page_release(void *context, int device, gpucache_page_handle handle)
{
    ENTER(context, ACCOUNTING_PAGE_RELEASE);
    (void)device;
    struct page *page = page_of(driver, handle);
    if (page == NULL) {
        result = GPUCACHE_ERROR_INVALID_VALUE;
    } else {
        page->created = false;
        /* As in CUDA, a mapped page's memory lives until it is unmapped. */
        if (page->mapped_at == 0)
            driver->used -= page->size;
    }
    LEAVE();
}

static gpucache_result page_map(void *context, int device, uint64_t address, size_t size,
                                gpucache_page_handle handle)
{
    ENTER(context, ACCOUNTING_PAGE_MAP);
    (void)device;
    struct page *page = page_of(driver, handle);
    if (page == NULL || page->mapped_at != 0 || page->size != size ||
        address % driver->granularity != 0 ||
        range_containing(&driver->reservations, address, size) == NULL ||
        page_mapped_inside(driver, address, size))
        result = GPUCACHE_ERROR_INVALID_VALUE;
    else
        page->mapped_at = address;
    LEAVE();
}

static gpucache_result page_unmap(void *context, int device, uint64_t address, size_t size)
{
    ENTER(context, ACCOUNTING_PAGE_UNMAP);
    (void)device;
    bool unmapped_any = false;
    for (size_t i = 0; i < driver->page_count; i++) {
        struct page *page = &driver->pages[i];
        if (page->mapped_at == 0 || page->mapped_at < address || page->mapped_at - address >= size)
            continue;
        page->mapped_at = 0;
        unmapped_any = true;
        if (!page->created)
            driver->used -= page->size;
    }
    if (!unmapped_any)
        result = GPUCACHE_ERROR_INVALID_VALUE;
    LEAVE();
}

static gpucache_result set_access(void *context, int device, uint64_t address, size_t size,
                                  const int *peers, size_t peer_count)
{
    ENTER(context, ACCOUNTING_SET_ACCESS);
    (void)device;
    (void)peers;
    (void)peer_count;
    if (range_containing(&driver->reservations, address, size) == NULL)
        result = GPUCACHE_ERROR_INVALID_VALUE;
    LEAVE();
}

struct accounting_driver *accounting_driver_create(uint64_t capacity, size_t granularity)
{
    struct accounting_driver *driver = calloc(1, sizeof *driver);
    if (driver == NULL)
        return NULL;
    pthread_mutex_init(&driver->mutex, NULL);
    driver->capacity = capacity;
    driver->granularity = granularity ? granularity : (size_t)2 << 20;
    driver->next_plain = PLAIN_REGION_BASE;
    driver->next_reserved = RESERVED_REGION_BASE;
    RB_INIT(&driver->allocations);
    RB_INIT(&driver->reservations);
    driver->interface = (struct gpucache_driver){
        .context = driver,
        .device_alloc = device_alloc,
        .device_free = device_free,
        .memory_info = memory_info,
        .page_granularity = page_granularity,
        .address_reserve = address_reserve,
        .address_free = address_free,
        .page_create = page_create,
        .page_release = page_release,
        .page_map = page_map,
        .page_unmap = page_unmap,
        .set_access = set_access,
    };
    accounting_streams_install(&driver->interface);
    return driver;
}

static void free_ranges(struct accounting_range_tree *tree)
{
    struct range *range;
    struct range *next;
    RB_FOREACH_SAFE(range, accounting_range_tree, tree, next) {
        RB_REMOVE(accounting_range_tree, tree, range);
        free(range);
    }
}

void accounting_driver_destroy(struct accounting_driver *driver)
{
    if (driver == NULL)
        return;
    free_ranges(&driver->allocations);
    free_ranges(&driver->reservations);
    accounting_streams_destroy(driver);
    free(driver->pages);
    pthread_mutex_destroy(&driver->mutex);
    free(driver);
}

const struct gpucache_driver *accounting_driver_interface(struct accounting_driver *driver)
{
    return &driver->interface;
}

void accounting_driver_fail_call(struct accounting_driver *driver,
                                 enum accounting_operation operation, unsigned long nth,
                                 unsigned long repeat, gpucache_result error)
{
    if (operation >= ACCOUNTING_OPERATION_COUNT || nth == 0 || repeat == 0)
        return;
    pthread_mutex_lock(&driver->mutex);
    struct injected_failure *failure = &driver->failures[operation];
    failure->first_call = driver->calls[operation] + nth;
    failure->last_call = failure->first_call + repeat - 1;
    failure->error = error;
    pthread_mutex_unlock(&driver->mutex);
}

enum accounting_operation accounting_driver_operation_named(const char *name)
{
    for (int i = 0; i < ACCOUNTING_OPERATION_COUNT; i++)
        if (strcmp(operation_names[i], name) == 0)
            return (enum accounting_operation)i;
    return ACCOUNTING_OPERATION_COUNT;
}

const char *accounting_driver_operation_name(enum accounting_operation operation)
{
    return operation < ACCOUNTING_OPERATION_COUNT ? operation_names[operation] : "unknown";
}

unsigned long accounting_driver_calls(const struct accounting_driver *driver,
                                      enum accounting_operation operation)
{
    return operation < ACCOUNTING_OPERATION_COUNT ? driver->calls[operation] : 0;
}

uint64_t accounting_driver_used_bytes(const struct accounting_driver *driver)
{
    return driver->used;
}

unsigned long accounting_driver_live_fences(const struct accounting_driver *driver)
{
    return driver->live_fences;
}
