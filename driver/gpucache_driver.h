/* The small driver interface the allocator and vmm/ are written against.
 * interpose/ implements it over the real (or simulated) libcuda; the offline
 * replay implements it with pure accounting. The allocator never calls CUDA
 * directly, so the same code is tested with and without a device. */
#ifndef GPUCACHE_DRIVER_H
#define GPUCACHE_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Results use CUDA's CUresult numbering so they pass straight through:
 * 0 success, 1 invalid value, 2 out of memory, 600 not ready. */
typedef int gpucache_result;
#define GPUCACHE_SUCCESS 0
#define GPUCACHE_ERROR_INVALID_VALUE 1
#define GPUCACHE_ERROR_OUT_OF_MEMORY 2
#define GPUCACHE_ERROR_NOT_READY 600

/* Opaque stream handle: the CUstream value (0 = the legacy default stream).
 * Only compared and passed back to the driver, never dereferenced. */
typedef uintptr_t gpucache_stream;

/* The stream of a synchronous allocation (cuMemAlloc). Such memory may be
 * used on any stream at once, non-blocking ones included, so it may only
 * receive a block that no stream's work can still touch; a block freed in
 * order on the legacy stream is not one. Never a driver handle (those are
 * aligned pointers, 0 is the legacy stream) nor a per-thread token (odd). */
#define GPUCACHE_STREAM_SYNCHRONOUS ((gpucache_stream)UINTPTR_MAX - 1)

/* Opaque fence: whatever the driver needs to say "work issued before this
 * point has finished" (one event, or a set of events for an epoch). */
typedef struct gpucache_fence gpucache_fence;

/* Opaque physical page handle (CUmemGenericAllocationHandle). */
typedef uint64_t gpucache_page_handle;

struct gpucache_driver {
    void *context; /* passed as the first argument of every call */

    /* Plain device memory (cuMemAlloc_v2 / cuMemFree_v2). */
    gpucache_result (*device_alloc)(void *context, int device, size_t size,
                                    uint64_t *address);
    gpucache_result (*device_free)(void *context, int device, uint64_t address);
    /* Free and total device memory as the driver reports them. */
    gpucache_result (*memory_info)(void *context, int device, size_t *free_bytes,
                                   size_t *total_bytes);

    /* A fence after the work already issued on `stream`. */
    gpucache_result (*fence_stream)(void *context, int device, gpucache_stream stream,
                                    gpucache_fence **fence);
    /* A fence after the work issued on every stream that a synchronous free
     * must wait for: the legacy default stream and each live non-blocking
     * stream. Fails with NOT_READY-free semantics only if capture is active. */
    gpucache_result (*fence_all_streams)(void *context, int device,
                                         gpucache_fence **fence);
    /* SUCCESS when complete, NOT_READY when not yet. */
    gpucache_result (*fence_query)(void *context, gpucache_fence *fence);
    gpucache_result (*fence_wait)(void *context, gpucache_fence *fence);
    void (*fence_release)(void *context, gpucache_fence *fence);
    /* Frees the host memory of a fence whose context is gone, without a
     * driver call (its events died with the context). May be NULL when the
     * implementation reclaims such fences itself. */
    void (*fence_forget)(void *context, gpucache_fence *fence);
    /* Blocks until all work in the device's context is done. */
    gpucache_result (*synchronize_device)(void *context, int device);
    /* True while a stream capture is active in the device's context: no
     * events may be recorded then. */
    bool (*capture_active)(void *context, int device);

    /* VMM (expandable segments). */
    gpucache_result (*page_granularity)(void *context, int device, size_t *granularity);
    gpucache_result (*address_reserve)(void *context, int device, size_t size,
                                       uint64_t *address);
    gpucache_result (*address_free)(void *context, int device, uint64_t address,
                                    size_t size);
    gpucache_result (*page_create)(void *context, int device, size_t size,
                                   gpucache_page_handle *handle);
    gpucache_result (*page_release)(void *context, int device,
                                    gpucache_page_handle handle);
    gpucache_result (*page_map)(void *context, int device, uint64_t address,
                                size_t size, gpucache_page_handle handle);
    gpucache_result (*page_unmap)(void *context, int device, uint64_t address,
                                  size_t size);
    /* Read-write access for `device` and each device in `peers`. */
    gpucache_result (*set_access)(void *context, int device, uint64_t address,
                                  size_t size, const int *peers, size_t peer_count);
};

#endif
