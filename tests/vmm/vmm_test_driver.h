/* A driver for tests that owns no memory: it hands out made-up addresses,
 * accounts every reservation, physical handle and mapping, flags calls a real
 * driver would reject (misuse), and can fail the Nth call of any operation. */
#ifndef VMM_TEST_DRIVER_H
#define VMM_TEST_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpucache_driver.h"

enum vmm_test_operation {
    VMM_TEST_GRANULARITY,
    VMM_TEST_ADDRESS_RESERVE,
    VMM_TEST_ADDRESS_FREE,
    VMM_TEST_PAGE_CREATE,
    VMM_TEST_PAGE_RELEASE,
    VMM_TEST_PAGE_MAP,
    VMM_TEST_PAGE_UNMAP,
    VMM_TEST_SET_ACCESS,
    VMM_TEST_OPERATION_COUNT
};

struct vmm_test_reservation {
    uint64_t base;
    size_t size;
    int device;
    bool live;
};

struct vmm_test_handle {
    size_t size;
    int device;
    unsigned map_count;
    bool live; /* not yet released (its memory may outlive it while mapped) */
};

struct vmm_test_mapping {
    uint64_t address;
    size_t size;
    gpucache_page_handle handle;
    uint64_t access_devices; /* bit per device granted read-write access */
    bool live;
};

struct vmm_test_driver {
    struct gpucache_driver driver; /* driver.context points back here */
    size_t granularity;
    size_t total_memory;
    size_t capacity;       /* physical bytes the device can hold */
    size_t physical_in_use;
    uint64_t next_address;
    struct vmm_test_reservation *reservations;
    size_t reservation_count;
    struct vmm_test_handle *handles; /* handle value = index + 1 */
    size_t handle_count;
    struct vmm_test_mapping *mappings;
    size_t mapping_count;
    uint64_t calls[VMM_TEST_OPERATION_COUNT];
    uint64_t fail_countdown[VMM_TEST_OPERATION_COUNT]; /* 0: no failure armed */
    gpucache_result fail_result[VMM_TEST_OPERATION_COUNT];
    uint64_t injected_failures;
    uint64_t misuse_count;
    char first_misuse[256];
};

/* A device of `total_memory` bytes (also its capacity) and `granularity`. */
void vmm_test_driver_init(struct vmm_test_driver *driver, size_t total_memory,
                            size_t granularity);
void vmm_test_driver_fini(struct vmm_test_driver *driver);

/* The `nth` call of `operation` from now (1 = the next) returns `result`. */
void vmm_test_driver_fail_call(struct vmm_test_driver *driver,
                                 enum vmm_test_operation operation, uint64_t nth,
                                 gpucache_result result);

/* Disarms every pending injected failure. */
void vmm_test_driver_disarm(struct vmm_test_driver *driver);

size_t vmm_test_driver_live_handles(const struct vmm_test_driver *driver);
size_t vmm_test_driver_live_mappings(const struct vmm_test_driver *driver);
size_t vmm_test_driver_live_reservations(const struct vmm_test_driver *driver);

/* Whether `device` may access the byte at `address` (mapped and granted). */
bool vmm_test_driver_accessible(const struct vmm_test_driver *driver, uint64_t address,
                                  int device);

/* Whether the byte at `address` is mapped at all. */
bool vmm_test_driver_mapped(const struct vmm_test_driver *driver, uint64_t address);

/* The live mapping holding the byte at `address`, or NULL. */
struct vmm_test_mapping *vmm_test_driver_mapping_at(const struct vmm_test_driver *driver,
                                                   uint64_t address);

/* The record of a handle the driver handed out, or NULL for a value it never
 * did. */
const struct vmm_test_handle *vmm_test_driver_handle(const struct vmm_test_driver *driver,
                                                     gpucache_page_handle handle);

/* Sum of calls over every VMM operation but the granularity query. */
uint64_t vmm_test_driver_total_calls(const struct vmm_test_driver *driver);

#endif
