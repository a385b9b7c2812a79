/* The allocations the library forwarded to the driver while it only counts
 * (passthrough:True) or routes to the driver's stream-ordered pool
 * (backend:cudaMallocAsync): their sizes, so frees can be counted, and the
 * running totals per device. */
#ifndef GPUCACHE_INTERPOSE_TRACKED_ALLOCATIONS_H
#define GPUCACHE_INTERPOSE_TRACKED_ALLOCATIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tracked_totals {
    uint64_t allocations;     /* successful allocations so far */
    uint64_t frees;           /* successful frees of tracked pointers */
    uint64_t current_bytes;   /* bytes allocated and not yet freed */
    uint64_t peak_bytes;      /* highest current_bytes seen */
    uint64_t failed_allocations;
};

/* Records a successful allocation of `size` bytes at `address`. */
void tracked_allocation_added(int device, uint64_t address, size_t size);

/* Records a failed allocation (the driver returned an error). */
void tracked_allocation_failed(int device);

/* Forgets `address` if tracked; true when it was (the caller then knows it
 * came through the library), with its device. */
bool tracked_allocation_removed(uint64_t address, int *device);

/* The totals of `device` so far. */
void tracked_allocation_totals(int device, struct tracked_totals *totals);

#endif
