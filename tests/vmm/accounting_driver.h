/* A driver for tests that owns no memory: it hands out made-up addresses,
 * accounts every reservation, physical handle and mapping, flags calls a real
 * driver would reject (misuse), and can fail the Nth call of any operation. */
#ifndef ACCOUNTING_DRIVER_H
#define ACCOUNTING_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpucache_driver.h"

enum accounting_operation {
    ACCOUNTING_GRANULARITY,
    ACCOUNTING_ADDRESS_RESERVE,
    ACCOUNTING_ADDRESS_FREE,
    ACCOUNTING_PAGE_CREATE,
    ACCOUNTING_PAGE_RELEASE,
    ACCOUNTING_PAGE_MAP,
    ACCOUNTING_PAGE_UNMAP,
    ACCOUNTING_SET_ACCESS,
    ACCOUNTING_DEVICE_ALLOC,
    ACCOUNTING_DEVICE_FREE,
    ACCOUNTING_OPERATION_COUNT
};

struct accounting_reservation {
    uint64_t base;
    size_t size;
    int device;
    bool live;
};

struct accounting_handle {
    size_t size;
    int device;
    unsigned map_count;
    bool live; /* not yet released (its memory may outlive it while mapped) */
};

struct accounting_mapping {
    uint64_t address;
    size_t size;
    gpucache_page_handle handle;
    uint64_t access_devices; /* bit per device granted read-write access */
    bool live;
};

struct accounting_allocation {
    uint64_t address;
    size_t size;
    bool live;
};

struct accounting_driver {
    struct gpucache_driver driver; /* driver.context points back here */
    size_t granularity;
    size_t total_memory;
    size_t capacity;       /* physical bytes the device can hold */
    size_t physical_in_use;
    uint64_t next_address;
    struct accounting_reservation *reservations;
    size_t reservation_count;
    struct accounting_handle *handles; /* handle value = index + 1 */
    size_t handle_count;
    struct accounting_mapping *mappings;
    size_t mapping_count;
    struct accounting_allocation *allocations;
    size_t allocation_count;
    uint64_t calls[ACCOUNTING_OPERATION_COUNT];
    uint64_t fail_countdown[ACCOUNTING_OPERATION_COUNT]; /* 0: no failure armed */
    gpucache_result fail_result[ACCOUNTING_OPERATION_COUNT];
    uint64_t injected_failures;
    uint64_t misuse_count;
    char first_misuse[256];
    long live_fences;
};

/* A device of `total_memory` bytes (also its capacity) and `granularity`. */
void accounting_driver_init(struct accounting_driver *driver, size_t total_memory,
                            size_t granularity);
void accounting_driver_fini(struct accounting_driver *driver);

/* The `nth` call of `operation` from now (1 = the next) returns `result`. */
void accounting_driver_fail_call(struct accounting_driver *driver,
                                 enum accounting_operation operation, uint64_t nth,
                                 gpucache_result result);

/* Disarms every pending injected failure. */
void accounting_driver_disarm(struct accounting_driver *driver);

size_t accounting_driver_live_handles(const struct accounting_driver *driver);
size_t accounting_driver_live_mappings(const struct accounting_driver *driver);
size_t accounting_driver_live_reservations(const struct accounting_driver *driver);
size_t accounting_driver_live_allocations(const struct accounting_driver *driver);

/* Whether `device` may access the byte at `address` (mapped and granted). */
bool accounting_driver_accessible(const struct accounting_driver *driver, uint64_t address,
                                  int device);

/* Whether the byte at `address` is mapped at all. */
bool accounting_driver_mapped(const struct accounting_driver *driver, uint64_t address);

/* Sum of calls over every VMM operation and device alloc/free. */
uint64_t accounting_driver_total_calls(const struct accounting_driver *driver);

#endif
