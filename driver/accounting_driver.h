/* A gpucache_driver with no real memory: distinct 512-byte-aligned
 * addresses from a bump allocator, capacity accounting, fences that
 * complete at once or when told to, VMM calls with accounting, and fault
 * injection. The tests' device and the offline replay's simulated device. */
#ifndef GPUCACHE_ACCOUNTING_DRIVER_H
#define GPUCACHE_ACCOUNTING_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpucache_driver.h"

/* The driver operations, for call counts and fault injection. */
enum accounting_operation {
    ACCOUNTING_DEVICE_ALLOC = 0,
    ACCOUNTING_DEVICE_FREE,
    ACCOUNTING_MEMORY_INFO,
    ACCOUNTING_FENCE_STREAM,
    ACCOUNTING_FENCE_ALL_STREAMS,
    ACCOUNTING_FENCE_QUERY,
    ACCOUNTING_FENCE_WAIT,
    ACCOUNTING_SYNCHRONIZE_DEVICE,
    ACCOUNTING_PAGE_GRANULARITY,
    ACCOUNTING_ADDRESS_RESERVE,
    ACCOUNTING_ADDRESS_FREE,
    ACCOUNTING_PAGE_CREATE,
    ACCOUNTING_PAGE_RELEASE,
    ACCOUNTING_PAGE_MAP,
    ACCOUNTING_PAGE_UNMAP,
    ACCOUNTING_SET_ACCESS,
    ACCOUNTING_OPERATION_COUNT
};

struct accounting_driver;

/* A device of `capacity` bytes whose VMM granularity is `granularity`
 * (0: 2 MiB). Fences complete at once until accounting_driver_hold_fences.
 * NULL when host memory is exhausted. */
struct accounting_driver *accounting_driver_create(uint64_t capacity, size_t granularity);
void accounting_driver_destroy(struct accounting_driver *driver);

/* The interface to pass to gpucache_allocator_create. */
const struct gpucache_driver *accounting_driver_interface(struct accounting_driver *driver);

/* With `held`, fences complete only when their stream is completed below
 * (or waited on, or the device synchronized); without, at once. A stream
 * made to wait for a fence (accounting_driver_stream_wait) completes that
 * fence's work when its own work after the wait completes, as on a device. */
void accounting_driver_hold_fences(struct accounting_driver *driver, bool held);
/* All work issued so far on `stream` finishes. */
void accounting_driver_complete_stream(struct accounting_driver *driver, gpucache_stream stream);
/* All work issued so far on every stream finishes. */
void accounting_driver_complete_all(struct accounting_driver *driver);
/* What a program's cuStreamWaitEvent does: `stream`'s later work waits for
 * the fence's (the allocator never asks for this; tests that play a correct
 * program's cross-stream ordering do). False when host memory is exhausted. */
bool accounting_driver_stream_wait(struct accounting_driver *driver, gpucache_stream stream,
                                   const gpucache_fence *fence);

/* Makes capture_active answer `active`. */
void accounting_driver_set_capture(struct accounting_driver *driver, bool active);

/* Fails `repeat` calls of `operation` with `error`, starting with the
 * `nth` call from now (1: the next call). */
void accounting_driver_fail_call(struct accounting_driver *driver,
                                 enum accounting_operation operation, unsigned long nth,
                                 unsigned long repeat, gpucache_result error);
/* The operation named like the driver field ("device_alloc", ...), or
 * ACCOUNTING_OPERATION_COUNT when the name is unknown. */
enum accounting_operation accounting_driver_operation_named(const char *name);
const char *accounting_driver_operation_name(enum accounting_operation operation);

/* Calls of `operation` so far, failed ones included. */
unsigned long accounting_driver_calls(const struct accounting_driver *driver,
                                      enum accounting_operation operation);
/* Bytes of device memory in use (plain allocations and physical pages). */
uint64_t accounting_driver_used_bytes(const struct accounting_driver *driver);
/* Fences created and not yet released. */
unsigned long accounting_driver_live_fences(const struct accounting_driver *driver);

#endif
