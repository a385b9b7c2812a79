/* What the accounting driver's files share: its state, fault injection and
 * the lock-and-count prologue every entry point starts with. */
#ifndef GPUCACHE_ACCOUNTING_INTERNAL_H
#define GPUCACHE_ACCOUNTING_INTERNAL_H

#include <pthread.h>
#include <sys/tree.h>

#include "accounting_driver.h"

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

RB_HEAD(accounting_range_tree, range);

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

/* Counts a call and says whether fault injection fails it. Called with the
 * mutex held (accounting_driver.c). */
bool accounting_injected(struct accounting_driver *driver, enum accounting_operation operation,
                         gpucache_result *error);

/* Fills the fence, synchronize and capture entries of `interface`
 * (accounting_streams.c). */
void accounting_streams_install(struct gpucache_driver *interface);

/* Frees the fences, stream clocks and dependencies (accounting_streams.c). */
void accounting_streams_destroy(struct accounting_driver *driver);

#define ENTER(driver_context, operation)                                        \
    struct accounting_driver *driver = (struct accounting_driver *)(driver_context); \
    gpucache_result result = GPUCACHE_SUCCESS;                                  \
    pthread_mutex_lock(&driver->mutex);                                         \
    if (accounting_injected(driver, (operation), &result))                                 \
        goto done

#define LEAVE()                                                                 \
    done:                                                                       \
    pthread_mutex_unlock(&driver->mutex);                                       \
    return result

#endif
