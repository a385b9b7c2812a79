/* gpucache_driver over the real driver. Every call runs in the context the
 * device's allocator serves: a free may arrive while another device is
 * current (legal under unified addressing), so the context is pushed when
 * it is not already the current one. */
#include "cuda_driver.h"

#include <stdlib.h>
#include <string.h>

#include "capture_tracking.h"
#include "device_registry.h"
#include "real_driver.h"
#include "stream_tokens.h"

struct gpucache_fence {
    int device;
    unsigned generation;
    size_t count;
    size_t completed; /* events known complete, a prefix of `events` */
    CUevent events[];
};

struct context_scope {
    bool pushed;
};

static const struct real_driver *driver(void)
{
    return real_driver_if_resolved();
}

static CUresult enter_device_context(int device, struct context_scope *scope)
{
    scope->pushed = false;
    CUcontext wanted = device_context(device);
    if (!wanted)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* The library never enters a context while inside another it entered,
     * so the program's current context, as kept per thread, is the one
     * current now. */
    CUcontext current = device_thread_context();
    if (current != wanted)
        current = device_current_context(driver());
    if (current == wanted)
        return CUDA_SUCCESS;
    CUresult result = driver()->ctx_push_current(wanted);
    scope->pushed = result == CUDA_SUCCESS;
    return result;
}

static void leave_device_context(struct context_scope *scope)
{
    if (scope->pushed) {
        CUcontext popped;
        driver()->ctx_pop_current(&popped);
    }
}

/* Our bookkeeping calls must not invalidate a capture the program runs in
 * another thread under the global capture mode. While no capture is in
 * progress there is none to invalidate, and none can begin until
 * leave_relaxed_capture_mode (capture_tracking_hold), so the mode is left
 * as it is. */
struct capture_mode_scope {
    bool exchanged;
    CUstreamCaptureMode previous;
};

static struct capture_mode_scope enter_relaxed_capture_mode(void)
{
    struct capture_mode_scope scope = {false, CU_STREAM_CAPTURE_MODE_RELAXED};
    capture_tracking_hold();
    if (capture_tracking_any_in_progress() && driver()->thread_exchange_capture_mode)
        scope.exchanged = driver()->thread_exchange_capture_mode(&scope.previous) == CUDA_SUCCESS;
    return scope;
}

static void leave_relaxed_capture_mode(struct capture_mode_scope *scope)
{
    if (scope->exchanged)
        driver()->thread_exchange_capture_mode(&scope->previous);
    capture_tracking_release();
}

static gpucache_result device_alloc(void *context, int device, size_t size, uint64_t *address)
{
    (void)context;
    struct context_scope scope;
    CUresult result = enter_device_context(device, &scope);
    CUdeviceptr pointer = 0;
    if (result == CUDA_SUCCESS)
        result = driver()->mem_alloc_v2(&pointer, size);
    leave_device_context(&scope);
    *address = pointer;
    return result;
}

static gpucache_result device_free(void *context, int device, uint64_t address)
{
    (void)context;
    struct context_scope scope;
    CUresult result = enter_device_context(device, &scope);
    if (result == CUDA_SUCCESS)
        result = driver()->mem_free_v2(address);
    leave_device_context(&scope);
    return result;
}

static gpucache_result memory_info(void *context, int device, size_t *free_bytes,
                                   size_t *total_bytes)
{
    (void)context;
    struct context_scope scope;
    CUresult result = enter_device_context(device, &scope);
    if (result == CUDA_SUCCESS)
        result = driver()->mem_get_info_v2(free_bytes, total_bytes);
    leave_device_context(&scope);
    return result;
}

bool cuda_driver_capture_active(int device)
{
    if (!driver()->stream_is_capturing || !capture_tracking_any_in_progress())
        return false;
    if (real_driver_stream_capturing(driver(), CU_STREAM_LEGACY, false))
        return true;
    size_t count = 0;
    CUstream *streams = device_non_blocking_streams(device, &count);
    bool active = false;
    for (size_t i = 0; i < count && !active; i++)
        active = real_driver_stream_capturing(driver(), streams[i], false);
    free(streams);
    return active;
}

static bool capture_active(void *context, int device)
{
    (void)context;
    if (!capture_tracking_any_in_progress())
        return false;
    struct context_scope scope;
    if (enter_device_context(device, &scope) != CUDA_SUCCESS)
        return false;
    bool active = cuda_driver_capture_active(device);
    leave_device_context(&scope);
    return active;
}

static struct gpucache_fence *fence_new(int device, size_t capacity)
{
    struct gpucache_fence *fence = calloc(1, sizeof *fence + capacity * sizeof(CUevent));
    if (fence)
        fence->device = device;
    return fence;
}

static void fence_release(void *context, struct gpucache_fence *fence)
{
    (void)context;
    if (!fence)
        return;
    for (size_t i = 0; i < fence->count; i++)
        device_return_event(driver(), fence->device, fence->events[i], fence->generation);
    free(fence);
}

static void fence_forget(void *context, struct gpucache_fence *fence)
{
    (void)context;
    free(fence);
}

/* Records one more event of `fence` on `stream`. */
static CUresult fence_record(struct gpucache_fence *fence, CUstream stream)
{
    CUevent event = device_take_event(driver(), fence->device, &fence->generation);
    if (!event)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult result = driver()->event_record(event, stream);
    if (result != CUDA_SUCCESS) {
        device_return_event(driver(), fence->device, event, fence->generation);
        return result;
    }
    fence->events[fence->count++] = event;
    return CUDA_SUCCESS;
}

static gpucache_result fence_stream(void *context, int device, gpucache_stream stream,
                                    struct gpucache_fence **out)
{
    *out = NULL;
    struct context_scope scope;
    CUresult result = enter_device_context(device, &scope);
    if (result != CUDA_SUCCESS)
        return result;
    struct gpucache_fence *fence = fence_new(device, 1);
    if (!fence) {
        leave_device_context(&scope);
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    }
    struct capture_mode_scope capture_mode = enter_relaxed_capture_mode();
    result = fence_record(fence, stream_handle(stream));
    leave_relaxed_capture_mode(&capture_mode);
    leave_device_context(&scope);
    if (result != CUDA_SUCCESS) {
        fence_release(context, fence);
        return result;
    }
    *out = fence;
    return GPUCACHE_SUCCESS;
}

static gpucache_result fence_all_streams(void *context, int device, struct gpucache_fence **out)
{
    *out = NULL;
    struct context_scope scope;
    CUresult result = enter_device_context(device, &scope);
    if (result != CUDA_SUCCESS)
        return result;
    size_t count = 0;
    CUstream *streams = device_non_blocking_streams(device, &count);
    struct gpucache_fence *fence = fence_new(device, count + 1);
    if (!fence) {
        free(streams);
        leave_device_context(&scope);
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    }
    /* The capture check inside the capture mode's scope: no capture can
     * begin between it and the records. */
    struct capture_mode_scope capture_mode = enter_relaxed_capture_mode();
    if (cuda_driver_capture_active(device)) {
        /* An event on the legacy stream would join the program's graph. */
        result = GPUCACHE_ERROR_NOT_READY;
    } else {
        /* The legacy stream orders after every blocking and per-thread
         * default stream; non-blocking streams need their own event. */
        result = fence_record(fence, CU_STREAM_LEGACY);
        for (size_t i = 0; i < count && result == CUDA_SUCCESS; i++)
            result = fence_record(fence, streams[i]);
    }
    leave_relaxed_capture_mode(&capture_mode);
    leave_device_context(&scope);
    free(streams);
    if (result != CUDA_SUCCESS) {
        fence_release(context, fence);
        return result;
    }
    *out = fence;
    return GPUCACHE_SUCCESS;
}

static gpucache_result fence_query(void *context, struct gpucache_fence *fence)
{
    (void)context;
    while (fence->completed < fence->count) {
        CUresult result = driver()->event_query(fence->events[fence->completed]);
        if (result != CUDA_SUCCESS)
            return result;
        fence->completed++;
    }
    return GPUCACHE_SUCCESS;
}

static gpucache_result fence_wait(void *context, struct gpucache_fence *fence)
{
    (void)context;
    while (fence->completed < fence->count) {
        CUresult result = driver()->event_synchronize(fence->events[fence->completed]);
        if (result != CUDA_SUCCESS)
            return result;
        fence->completed++;
    }
    return GPUCACHE_SUCCESS;
}

static gpucache_result synchronize_device(void *context, int device)
{
    (void)context;
    struct context_scope scope;
    CUresult result = enter_device_context(device, &scope);
    if (result == CUDA_SUCCESS)
        result = driver()->ctx_synchronize();
    leave_device_context(&scope);
    return result;
}

static CUmemAllocationProp device_memory_properties(int device)
{
    CUmemAllocationProp properties;
    memset(&properties, 0, sizeof properties);
    properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = device;
    return properties;
}

static gpucache_result page_granularity(void *context, int device, size_t *granularity)
{
    (void)context;
    CUmemAllocationProp properties = device_memory_properties(device);
    return driver()->mem_get_allocation_granularity(granularity, &properties,
                                                     CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

static gpucache_result address_reserve(void *context, int device, size_t size, uint64_t *address)
{
    (void)context;
    struct context_scope scope;
    CUresult result = enter_device_context(device, &scope);
    CUdeviceptr pointer = 0;
    if (result == CUDA_SUCCESS)
        result = driver()->mem_address_reserve(&pointer, size, 0, 0, 0);
    leave_device_context(&scope);
    *address = pointer;
    return result;
}

static gpucache_result address_free(void *context, int device, uint64_t address, size_t size)
{
    (void)context;
    /* A reservation outlives the context it was made in: after a reset the
     * forgotten allocator still gives its reservations back, with no
     * context left to enter. */
    if (!device_context(device))
        return driver()->mem_address_free(address, size);
    struct context_scope scope;
    CUresult result = enter_device_context(device, &scope);
    if (result == CUDA_SUCCESS)
        result = driver()->mem_address_free(address, size);
    leave_device_context(&scope);
    return result;
}

static gpucache_result page_create(void *context, int device, size_t size,
                                   gpucache_page_handle *handle)
{
    (void)context;
    CUmemAllocationProp properties = device_memory_properties(device);
    CUmemGenericAllocationHandle created = 0;
    CUresult result = driver()->mem_create(&created, size, &properties, 0);
    *handle = created;
    return result;
}

static gpucache_result page_release(void *context, int device, gpucache_page_handle handle)
{
    (void)context;
    (void)device;
    return driver()->mem_release(handle);
}

static gpucache_result page_map(void *context, int device, uint64_t address, size_t size,
                                gpucache_page_handle handle)
{
    (void)context;
    (void)device;
    return driver()->mem_map(address, size, 0, handle, 0);
}

static gpucache_result page_unmap(void *context, int device, uint64_t address, size_t size)
{
    (void)context;
    (void)device;
    return driver()->mem_unmap(address, size);
}

static gpucache_result set_access(void *context, int device, uint64_t address, size_t size,
                                  const int *peers, size_t peer_count)
{
    (void)context;
    int granted[GPUCACHE_MAX_DEVICES];
    size_t granted_count = device_peers(device, granted, GPUCACHE_MAX_DEVICES);
    CUmemAccessDesc access[1 + 2 * GPUCACHE_MAX_DEVICES];
    size_t count = 0;
    bool listed[GPUCACHE_MAX_DEVICES] = {false};
    /* The owner first, then the peers the allocator names and the peers the
     * program enabled: each device once. */
    int candidates[1 + 2 * GPUCACHE_MAX_DEVICES];
    size_t candidate_count = 0;
    candidates[candidate_count++] = device;
    for (size_t i = 0; i < peer_count && i < GPUCACHE_MAX_DEVICES; i++)
        candidates[candidate_count++] = peers[i];
    for (size_t i = 0; i < granted_count; i++)
        candidates[candidate_count++] = granted[i];
    for (size_t i = 0; i < candidate_count; i++) {
        int target = candidates[i];
        if (target < 0 || target >= GPUCACHE_MAX_DEVICES || listed[target])
            continue;
        listed[target] = true;
        memset(&access[count], 0, sizeof access[count]);
        access[count].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        access[count].location.id = target;
        access[count].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        count++;
    }
    return driver()->mem_set_access(address, size, access, count);
}

/* Makes the legacy stream of the current context wait for the work queued
 * so far on `stream`, without blocking the host; with `only_when_busy`,
 * nothing is added when that work is already done, so the program's legacy
 * stream keeps its own timing (a record and a query in the common case). */
static CUresult order_legacy_after_stream(int device, CUstream stream, bool only_when_busy)
{
    unsigned generation = 0;
    CUevent event = device_take_event(driver(), device, &generation);
    if (!event)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult result = driver()->event_record(event, stream);
    if (result == CUDA_SUCCESS &&
        (!only_when_busy || driver()->event_query(event) == CUDA_ERROR_NOT_READY))
        result = driver()->stream_wait_event(CU_STREAM_LEGACY, event, 0);
    /* Reusing the event later is safe: a wait uses the record it saw. */
    device_return_event(driver(), device, event, generation);
    return result;
}

CUresult cuda_driver_stream_retiring(int device, CUstream stream)
{
    /* Without a context of the library's (the cudaMallocAsync backend binds
     * none), the program's current one is the stream's. */
    struct context_scope scope = {.pushed = false};
    CUresult result = device_context(device) ? enter_device_context(device, &scope) : CUDA_SUCCESS;
    if (result != CUDA_SUCCESS)
        return result;
    result = order_legacy_after_stream(device, stream, true);
    leave_device_context(&scope);
    return result;
}

CUresult cuda_driver_order_legacy_after_all_streams(int device)
{
    size_t count = 0;
    device_streams_hold();
    CUstream *streams = device_non_blocking_streams(device, &count);
    CUresult result = CUDA_SUCCESS;
    for (size_t i = 0; i < count && result == CUDA_SUCCESS; i++)
        result = order_legacy_after_stream(device, streams[i], false);
    device_streams_release();
    free(streams);
    return result;
}

static const struct gpucache_driver cuda_driver = {
    .context = NULL,
    .device_alloc = device_alloc,
    .device_free = device_free,
    .memory_info = memory_info,
    .fence_stream = fence_stream,
    .fence_all_streams = fence_all_streams,
    .fence_query = fence_query,
    .fence_wait = fence_wait,
    .fence_release = fence_release,
    .fence_forget = fence_forget,
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

const struct gpucache_driver *cuda_driver_interface(void)
{
    return &cuda_driver;
}
