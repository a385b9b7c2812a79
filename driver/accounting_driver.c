/* The accounting driver: device semantics without device memory. */
#include "accounting_driver.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/tree.h>

/* Plain allocations and VA reservations live in separate, far-apart
 * regions so that an address says which kind it is. */
#define PLAIN_REGION_BASE UINT64_C(0x100000000000)
#define RESERVED_REGION_BASE UINT64_C(0x500000000000)
#define ADDRESS_ALIGNMENT 512

struct range {
    RB_ENTRY(range) link;
    uint64_t address;
    uint64_t size;
};

static int compare_ranges(const struct range *a, const struct range *b)
{
    return (a->address > b->address) - (a->address < b->address);
}

RB_HEAD(accounting_range_tree, range);
RB_GENERATE(accounting_range_tree, range, link, compare_ranges)

struct page {
    uint64_t size;
    uint64_t mapped_at; /* 0: not mapped */
    bool created;       /* false once released */
};

struct stream_progress {
    gpucache_stream stream;
    uint64_t completed_time; /* work issued up to this clock value is done */
};

/* `waiter` was made to wait (accounting_driver_stream_wait) at clock `wait_time` for
 * the work of `target` up to `target_time`: once the waiter's work up to
 * wait_time is done, so is that work of the target. */
struct stream_dependency {
    gpucache_stream waiter;
    uint64_t wait_time;
    gpucache_stream target;
    uint64_t target_time;
    bool target_is_all;
};

struct gpucache_fence {
    gpucache_stream stream;
    bool all_streams;
    uint64_t time;
    /* Live fences, so that destroying the driver frees those never
     * released, as a destroyed context frees its events. */
    struct gpucache_fence *previous_live;
    struct gpucache_fence *next_live;
};

struct injected_failure {
    unsigned long first_call; /* 0: none */
    unsigned long last_call;
    gpucache_result error;
};

struct accounting_driver {
    struct gpucache_driver interface;
    pthread_mutex_t mutex;
    uint64_t capacity;
    uint64_t used;
    size_t granularity;
    uint64_t next_plain;
    uint64_t next_reserved;
    struct accounting_range_tree allocations;
    struct accounting_range_tree reservations;
    struct page *pages;
    size_t page_count;
    size_t page_capacity;

    bool fences_held;
    bool capture;
    uint64_t clock;
    uint64_t all_completed_time;
    struct stream_progress *streams;
    size_t stream_count;
    size_t stream_capacity;
    unsigned long live_fences;
    struct gpucache_fence *live;
    struct stream_dependency *dependencies;
    size_t dependency_count;
    size_t dependency_capacity;

    unsigned long calls[ACCOUNTING_OPERATION_COUNT];
    struct injected_failure failures[ACCOUNTING_OPERATION_COUNT];
};

static const char *const operation_names[ACCOUNTING_OPERATION_COUNT] = {
    "device_alloc",   "device_free",     "memory_info",       "fence_stream",
    "fence_all_streams", "fence_query",  "fence_wait",        "synchronize_device", "page_granularity", "address_reserve", "address_free",
    "page_create",    "page_release",    "page_map",          "page_unmap",
    "set_access",
};

/* Counts a call and says whether fault injection fails it. Called with the
 * mutex held. */
static bool injected(struct accounting_driver *driver, enum accounting_operation operation,
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

#define ENTER(driver_context, operation)                                        \
    struct accounting_driver *driver = (struct accounting_driver *)(driver_context); \
    gpucache_result result = GPUCACHE_SUCCESS;                                  \
    pthread_mutex_lock(&driver->mutex);                                         \
    if (injected(driver, (operation), &result))                                 \
        goto done

#define LEAVE()                                                                 \
    done:                                                                       \
    pthread_mutex_unlock(&driver->mutex);                                       \
    return result

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

static struct stream_progress *progress_of(struct accounting_driver *driver,
                                           gpucache_stream stream)
{
    for (size_t i = 0; i < driver->stream_count; i++)
        if (driver->streams[i].stream == stream)
            return &driver->streams[i];
    if (driver->stream_count == driver->stream_capacity) {
        size_t capacity = driver->stream_capacity ? driver->stream_capacity * 2 : 8;
        struct stream_progress *streams =
            realloc(driver->streams, capacity * sizeof *streams);
        if (streams == NULL)
            return NULL;
        driver->streams = streams;
        driver->stream_capacity = capacity;
    }
    struct stream_progress *progress = &driver->streams[driver->stream_count++];
    progress->stream = stream;
    progress->completed_time = 0;
    return progress;
}

/* All work issued up to `time` is done: waits issued before it are moot. */
static void complete_all_until(struct accounting_driver *driver, uint64_t time)
{
    if (driver->all_completed_time < time)
        driver->all_completed_time = time;
    for (size_t i = 0; i < driver->dependency_count;) {
        if (driver->dependencies[i].wait_time <= driver->all_completed_time)
            driver->dependencies[i] = driver->dependencies[--driver->dependency_count];
        else
            i++;
    }
}

/* Work of `stream` issued up to `time` is done, and so is the work its
 * waits depended on. */
static void complete_stream_until(struct accounting_driver *driver, gpucache_stream stream,
                                  uint64_t time)
{
    struct stream_progress *progress = progress_of(driver, stream);
    if (progress == NULL || progress->completed_time >= time)
        return;
    progress->completed_time = time;
    for (size_t i = 0; i < driver->dependency_count;) {
        struct stream_dependency dependency = driver->dependencies[i];
        if (dependency.waiter != stream || dependency.wait_time > time) {
            i++;
            continue;
        }
        driver->dependencies[i] = driver->dependencies[--driver->dependency_count];
        if (dependency.target_is_all) {
            complete_all_until(driver, dependency.target_time);
        } else {
            complete_stream_until(driver, dependency.target, dependency.target_time);
        }
        i = 0; /* the recursion may have removed entries */
    }
}

static gpucache_result new_fence(struct accounting_driver *driver, gpucache_stream stream,
                                 bool all_streams, gpucache_fence **fence)
{
    struct gpucache_fence *created = calloc(1, sizeof *created);
    if (created == NULL || (!all_streams && progress_of(driver, stream) == NULL)) {
        free(created);
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    }
    created->stream = stream;
    created->all_streams = all_streams;
    created->time = ++driver->clock;
    created->next_live = driver->live;
    if (driver->live != NULL)
        driver->live->previous_live = created;
    driver->live = created;
    driver->live_fences++;
    *fence = created;
    return GPUCACHE_SUCCESS;
}

static gpucache_result fence_stream(void *context, int device, gpucache_stream stream,
                                    gpucache_fence **fence)
{
    ENTER(context, ACCOUNTING_FENCE_STREAM);
    (void)device;
    result = new_fence(driver, stream, false, fence);
    LEAVE();
}

static gpucache_result fence_all_streams(void *context, int device, gpucache_fence **fence)
{
    ENTER(context, ACCOUNTING_FENCE_ALL_STREAMS);
    (void)device;
    result = new_fence(driver, 0, true, fence);
    LEAVE();
}

static bool fence_complete(struct accounting_driver *driver, const gpucache_fence *fence)
{
    if (!driver->fences_held || driver->all_completed_time >= fence->time)
        return true;
    if (fence->all_streams)
        return false;
    const struct stream_progress *progress = progress_of(driver, fence->stream);
    return progress != NULL && progress->completed_time >= fence->time;
}

static gpucache_result fence_query(void *context, gpucache_fence *fence)
{
    ENTER(context, ACCOUNTING_FENCE_QUERY);
    result = fence_complete(driver, fence) ? GPUCACHE_SUCCESS : GPUCACHE_ERROR_NOT_READY;
    LEAVE();
}

static gpucache_result fence_wait(void *context, gpucache_fence *fence)
{
    ENTER(context, ACCOUNTING_FENCE_WAIT);
    /* Waiting lets the device run up to the fence. */
    if (fence->all_streams) {
        complete_all_until(driver, fence->time);
    } else {
        complete_stream_until(driver, fence->stream, fence->time);
    }
    LEAVE();
}

static void fence_release(void *context, gpucache_fence *fence)
{
    struct accounting_driver *driver = context;
    pthread_mutex_lock(&driver->mutex);
    if (fence != NULL) {
        if (fence->previous_live != NULL)
            fence->previous_live->next_live = fence->next_live;
        else
            driver->live = fence->next_live;
        if (fence->next_live != NULL)
            fence->next_live->previous_live = fence->previous_live;
        driver->live_fences--;
    }
    pthread_mutex_unlock(&driver->mutex);
    free(fence);
}

static gpucache_result synchronize_device(void *context, int device)
{
    ENTER(context, ACCOUNTING_SYNCHRONIZE_DEVICE);
    (void)device;
    complete_all_until(driver, driver->clock);
    LEAVE();
}

static bool capture_active(void *context, int device)
{
    struct accounting_driver *driver = context;
    (void)device;
    pthread_mutex_lock(&driver->mutex);
    bool active = driver->capture;
    pthread_mutex_unlock(&driver->mutex);
    return active;
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
        .fence_stream = fence_stream,
        .fence_all_streams = fence_all_streams,
        .fence_query = fence_query,
        .fence_wait = fence_wait,
        .fence_release = fence_release,
        .synchronize_device = synchronize_device,
        .capture_active = capture_active,
        .page_granularity = page_granularity,
        .address_reserve = address_reserve,
        .address_free = address_free,
        .page_create = page_create,
        .page_release = page_release,
        .page_map = page_map,
        .page_unmap = page_unmap,
        .set_access = set_access,
    };
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
    while (driver->live != NULL) {
        struct gpucache_fence *fence = driver->live;
        driver->live = fence->next_live;
        free(fence);
    }
    free(driver->pages);
    free(driver->streams);
    free(driver->dependencies);
    pthread_mutex_destroy(&driver->mutex);
    free(driver);
}

const struct gpucache_driver *accounting_driver_interface(struct accounting_driver *driver)
{
    return &driver->interface;
}

void accounting_driver_hold_fences(struct accounting_driver *driver, bool held)
{
    pthread_mutex_lock(&driver->mutex);
    driver->fences_held = held;
    pthread_mutex_unlock(&driver->mutex);
}

void accounting_driver_complete_stream(struct accounting_driver *driver, gpucache_stream stream)
{
    pthread_mutex_lock(&driver->mutex);
    complete_stream_until(driver, stream, driver->clock);
    pthread_mutex_unlock(&driver->mutex);
}

void accounting_driver_complete_all(struct accounting_driver *driver)
{
    pthread_mutex_lock(&driver->mutex);
    complete_all_until(driver, driver->clock);
    pthread_mutex_unlock(&driver->mutex);
}

bool accounting_driver_stream_wait(struct accounting_driver *driver, gpucache_stream stream,
                                   const gpucache_fence *fence)
{
    bool recorded = true;
    pthread_mutex_lock(&driver->mutex);
    if (fence_complete(driver, fence))
        goto done; /* nothing left to wait for */
    if (driver->dependency_count == driver->dependency_capacity) {
        size_t capacity = driver->dependency_capacity ? driver->dependency_capacity * 2 : 16;
        struct stream_dependency *dependencies =
            realloc(driver->dependencies, capacity * sizeof *dependencies);
        if (dependencies == NULL) {
            recorded = false;
            goto done;
        }
        driver->dependencies = dependencies;
        driver->dependency_capacity = capacity;
    }
    driver->dependencies[driver->dependency_count++] = (struct stream_dependency){
        .waiter = stream,
        .wait_time = ++driver->clock,
        .target = fence->stream,
        .target_time = fence->time,
        .target_is_all = fence->all_streams,
    };
done:
    pthread_mutex_unlock(&driver->mutex);
    return recorded;
}

void accounting_driver_set_capture(struct accounting_driver *driver, bool active)
{
    pthread_mutex_lock(&driver->mutex);
    driver->capture = active;
    pthread_mutex_unlock(&driver->mutex);
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
