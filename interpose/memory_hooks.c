/* The allocation hooks. cudaMalloc/cudaFree reach cuMemAlloc_v2/cuMemFree_v2
 * and cudaMallocAsync/cudaFreeAsync the async pair (legacy or _ptsz); the
 * cache serves them, and every pointer it did not hand out goes to the real
 * driver, which keeps its exact error codes. */
#include "alternative_backends.h"
#include "capture_tracking.h"
#include "device_allocators.h"
#include "device_registry.h"
#include "hook_support.h"
#include "hooks.h"
#include "library_reports.h"
#include "stream_tokens.h"

/* The stream token of cuMemAlloc's blocks. A test build (only ever loaded by
 * tests/interpose) puts back the defect of giving them the legacy stream's
 * token, so that the tests can show the simulated device's race detector
 * finds it. */
#ifdef GPUCACHE_TEST_MUTATION_SYNCHRONOUS_AS_LEGACY
#define SYNCHRONOUS_ALLOCATION_STREAM ((gpucache_stream)0)
#else
#define SYNCHRONOUS_ALLOCATION_STREAM GPUCACHE_STREAM_SYNCHRONOUS
#endif

/* Not a bypass worth counting (a NULL pointer argument: the driver
 * answers with its error). */
#define BYPASS_UNCOUNTED GPUCACHE_BYPASS_REASON_COUNT

/* Where this thread's last allocation of a kind went, valid while its stamp
 * is current (device_route_stamp_now): found once, not asked of the driver
 * and the registry for every call. A route exists only once the real driver
 * was resolved, so a hook that follows one needs no driver lookup. */
struct allocation_route {
    struct device_route_stamp stamp; /* stamp.shared == 0: none yet */
    CUstream stream;
    bool per_thread;
    gpucache_stream token;
    CUcontext context;
    struct gpucache_allocator *allocator;
};
static __thread struct allocation_route synchronous_route
    __attribute__((tls_model("initial-exec")));
static __thread struct allocation_route async_route __attribute__((tls_model("initial-exec")));

static inline bool route_current(const struct allocation_route *route)
{
    return device_route_stamp_equal(route->stamp, device_route_stamp_now());
}

/* True when cuMemAlloc/cuMemFree may follow this thread's kept route. */
static inline bool synchronous_route_applies(void)
{
    return hook_hot_path_open() && route_current(&synchronous_route);
}

/* True when an async call on `stream` may follow this thread's kept route. */
static inline bool async_route_applies(CUstream stream, bool per_thread)
{
    return hook_stream_hot_path_open() && route_current(&async_route) &&
           async_route.stream == stream && async_route.per_thread == per_thread;
}

/* The route's allocator if the route is still current, else NULL: the
 * allocator a free on this thread most likely returns to. */
static struct gpucache_allocator *current_route_allocator(const struct allocation_route *route)
{
    return route_current(route) ? route->allocator : NULL;
}

/* Counts a call the driver served untouched; returns its result. */
static CUresult bypassed(CUresult result, enum gpucache_bypass_reason reason)
{
    if (reason != BYPASS_UNCOUNTED)
        library_reports_count_bypass(reason);
    return result;
}

static inline CUresult allocate_on_route(const struct allocation_route *route, CUdeviceptr *dptr,
                                         size_t bytesize)
{
    uint64_t address = 0;
    gpucache_result result =
        device_allocate(route->allocator, route->context, bytesize, route->token, &address);
    if (result == GPUCACHE_SUCCESS)
        *dptr = (CUdeviceptr)address;
    return (CUresult)result;
}

/* The full path of cuMemAlloc: every check, then the route found anew. Out
 * of line, so that the hot path saves no registers for it. */
static __attribute__((noinline)) CUresult allocate_synchronous(CUdeviceptr *dptr,
                                                               size_t bytesize)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!dptr || hook_bypassed_after_fork())
        return bypassed(driver->mem_alloc_v2(dptr, bytesize),
                        dptr ? GPUCACHE_BYPASS_AFTER_FORK : BYPASS_UNCOUNTED);
    device_allocators_safe_point();
    switch (hook_mode()) {
    case HOOK_MODE_COUNT_ONLY:
        return bypassed(count_only_alloc(driver, dptr, bytesize), GPUCACHE_BYPASS_CONFIGURED);
    case HOOK_MODE_DRIVER_POOL:
        return bypassed(driver_pool_alloc(driver, dptr, bytesize), GPUCACHE_BYPASS_ASYNC_BACKEND);
    case HOOK_MODE_CACHE:
        break;
    }
    struct allocation_route *route = &synchronous_route;
    struct device_route_stamp now = device_route_stamp_now();
    if (!device_route_stamp_equal(route->stamp, now)) {
        CUcontext context;
        int device;
        struct gpucache_allocator *allocator = NULL;
        if (device_of_current_context(driver, &context, &device))
            allocator = device_allocator_for(device, context);
        if (!allocator)
            return bypassed(driver->mem_alloc_v2(dptr, bytesize), GPUCACHE_BYPASS_NO_ALLOCATOR);
        /* Memory from cuMemAlloc may be used on any stream at once. */
        *route = (struct allocation_route){.stamp = now, .token = SYNCHRONOUS_ALLOCATION_STREAM,
                                           .context = context, .allocator = allocator};
    }
    return allocate_on_route(route, dptr, bytesize);
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    if (dptr && synchronous_route_applies())
        return allocate_on_route(&synchronous_route, dptr, bytesize);
    return allocate_synchronous(dptr, bytesize);
}

/* A pointer the thread's likely allocator did not hand out: another
 * allocator's, or the driver's (which answers with its own error codes). */
static __attribute__((noinline)) CUresult free_synchronous_elsewhere(CUdeviceptr dptr)
{
    gpucache_result result = device_free_anywhere(dptr, GPUCACHE_FREE_SYNCHRONOUS, 0);
    if (result == GPUCACHE_ALLOCATOR_NOT_OURS)
        return bypassed(hook_driver()->mem_free_v2(dptr), GPUCACHE_BYPASS_FOREIGN_POINTER);
    return (CUresult)result;
}

static __attribute__((noinline)) CUresult free_synchronous(CUdeviceptr dptr)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!dptr || hook_bypassed_after_fork())
        return bypassed(driver->mem_free_v2(dptr),
                        dptr ? GPUCACHE_BYPASS_AFTER_FORK : BYPASS_UNCOUNTED);
    device_allocators_safe_point();
    switch (hook_mode()) {
    case HOOK_MODE_COUNT_ONLY:
        return bypassed(count_only_free(driver, dptr), GPUCACHE_BYPASS_CONFIGURED);
    case HOOK_MODE_DRIVER_POOL:
        return bypassed(driver_pool_free(driver, dptr), GPUCACHE_BYPASS_ASYNC_BACKEND);
    case HOOK_MODE_CACHE:
        break;
    }
    gpucache_result result = device_free_preferring(current_route_allocator(&synchronous_route),
                                                    dptr, GPUCACHE_FREE_SYNCHRONOUS, 0);
    if (result == GPUCACHE_ALLOCATOR_NOT_OURS)
        return bypassed(driver->mem_free_v2(dptr), GPUCACHE_BYPASS_FOREIGN_POINTER);
    return (CUresult)result;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    if (dptr && synchronous_route_applies()) {
        gpucache_result result = gpucache_allocator_free(synchronous_route.allocator, dptr,
                                                         GPUCACHE_FREE_SYNCHRONOUS, 0);
        return result == GPUCACHE_ALLOCATOR_NOT_OURS ? free_synchronous_elsewhere(dptr)
                                                     : (CUresult)result;
    }
    return free_synchronous(dptr);
}

/* The device and context an async call on `stream` allocates in, and the
 * allocator that serves them; NULL to bypass the cache. */
static struct gpucache_allocator *allocator_for_stream(const struct real_driver *driver,
                                                       gpucache_stream token, CUstream stream,
                                                       CUcontext *context,
                                                       enum gpucache_bypass_reason *reason)
{
    int device;
    *reason = GPUCACHE_BYPASS_NO_ALLOCATOR;
    if (!device_of_current_context(driver, context, &device))
        return NULL;
    if (!stream_token_is_default(token)) {
        int stream_device = device_of_stream(driver, stream);
        if (stream_device >= 0 && stream_device != device) {
            device = stream_device;
            *context = device_context(device);
        }
    }
    if (!device_uses_default_pool(driver, device)) {
        *reason = GPUCACHE_BYPASS_EXPLICIT_POOL;
        return NULL;
    }
    return device_allocator_for(device, *context);
}

/* The real async entry points a hook forwards to, by its variant. */
static PFN_cuMemAllocAsync_v11020 real_alloc_async(const struct real_driver *driver,
                                                   bool per_thread)
{
    return per_thread ? driver->mem_alloc_async_ptsz : driver->mem_alloc_async;
}

static PFN_cuMemFreeAsync_v11020 real_free_async(const struct real_driver *driver,
                                                 bool per_thread)
{
    return per_thread ? driver->mem_free_async_ptsz : driver->mem_free_async;
}

/* The full path of cuMemAllocAsync[_ptsz]. */
static __attribute__((noinline)) CUresult allocate_async(bool per_thread, CUdeviceptr *dptr,
                                                         size_t bytesize, CUstream stream)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    PFN_cuMemAllocAsync_v11020 forward = real_alloc_async(driver, per_thread);
    if (!dptr || hook_bypassed_after_fork())
        return bypassed(forward(dptr, bytesize, stream),
                        dptr ? GPUCACHE_BYPASS_AFTER_FORK : BYPASS_UNCOUNTED);
    device_allocators_safe_point();
    switch (hook_mode()) {
    case HOOK_MODE_COUNT_ONLY:
        return bypassed(count_only_alloc_async(driver, forward, dptr, bytesize, stream),
                        GPUCACHE_BYPASS_CONFIGURED);
    case HOOK_MODE_DRIVER_POOL:
        return bypassed(forward(dptr, bytesize, stream), GPUCACHE_BYPASS_ASYNC_BACKEND);
    case HOOK_MODE_CACHE:
        break;
    }
    /* Graph memory nodes must stay graph memory nodes: nothing on a
     * capturing stream is served from the cache. */
    if (capture_tracking_stream_capturing(driver, stream, per_thread))
        return bypassed(forward(dptr, bytesize, stream), GPUCACHE_BYPASS_GRAPH_CAPTURE);
    struct allocation_route *route = &async_route;
    struct device_route_stamp now = device_route_stamp_now();
    if (!device_route_stamp_equal(route->stamp, now) || route->stream != stream ||
        route->per_thread != per_thread) {
        gpucache_stream token = stream_token(stream, per_thread);
        CUcontext context = NULL;
        enum gpucache_bypass_reason reason;
        struct gpucache_allocator *allocator =
            allocator_for_stream(driver, token, stream, &context, &reason);
        if (!allocator)
            return bypassed(forward(dptr, bytesize, stream), reason);
        *route = (struct allocation_route){now, stream, per_thread, token, context, allocator};
    }
    return allocate_on_route(route, dptr, bytesize);
}

/* A pointer the thread's likely allocator did not hand out. */
static __attribute__((noinline)) CUresult free_async_elsewhere(bool per_thread, CUdeviceptr dptr,
                                                               CUstream stream,
                                                               gpucache_stream token)
{
    gpucache_result result = device_free_anywhere(dptr, GPUCACHE_FREE_STREAM_ORDERED, token);
    if (result == GPUCACHE_ALLOCATOR_NOT_OURS)
        return bypassed(real_free_async(hook_driver(), per_thread)(dptr, stream),
                        GPUCACHE_BYPASS_FOREIGN_POINTER);
    return (CUresult)result;
}

/* The full path of cuMemFreeAsync[_ptsz]. */
static __attribute__((noinline)) CUresult free_async(bool per_thread, CUdeviceptr dptr,
                                                     CUstream stream)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    PFN_cuMemFreeAsync_v11020 forward = real_free_async(driver, per_thread);
    if (!dptr || hook_bypassed_after_fork())
        return bypassed(forward(dptr, stream),
                        dptr ? GPUCACHE_BYPASS_AFTER_FORK : BYPASS_UNCOUNTED);
    device_allocators_safe_point();
    switch (hook_mode()) {
    case HOOK_MODE_COUNT_ONLY:
        return bypassed(count_only_free_async(forward, dptr, stream), GPUCACHE_BYPASS_CONFIGURED);
    case HOOK_MODE_DRIVER_POOL:
        return bypassed(forward(dptr, stream), GPUCACHE_BYPASS_ASYNC_BACKEND);
    case HOOK_MODE_CACHE:
        break;
    }
    if (capture_tracking_stream_capturing(driver, stream, per_thread))
        return bypassed(forward(dptr, stream), GPUCACHE_BYPASS_GRAPH_CAPTURE);
    const struct allocation_route *route = &async_route;
    struct gpucache_allocator *likely = current_route_allocator(route);
    gpucache_stream token = likely && route->stream == stream && route->per_thread == per_thread
                                ? route->token
                                : stream_token(stream, per_thread);
    gpucache_result result =
        device_free_preferring(likely, dptr, GPUCACHE_FREE_STREAM_ORDERED, token);
    if (result == GPUCACHE_ALLOCATOR_NOT_OURS)
        return bypassed(forward(dptr, stream), GPUCACHE_BYPASS_FOREIGN_POINTER);
    return (CUresult)result;
}

static inline CUresult free_async_on_route(bool per_thread, CUdeviceptr dptr, CUstream stream)
{
    gpucache_result result = gpucache_allocator_free(async_route.allocator, dptr,
                                                     GPUCACHE_FREE_STREAM_ORDERED,
                                                     async_route.token);
    return result == GPUCACHE_ALLOCATOR_NOT_OURS
               ? free_async_elsewhere(per_thread, dptr, stream, async_route.token)
               : (CUresult)result;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    if (dptr && async_route_applies(hStream, false))
        return allocate_on_route(&async_route, dptr, bytesize);
    return allocate_async(false, dptr, bytesize, hStream);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    if (dptr && async_route_applies(hStream, true))
        return allocate_on_route(&async_route, dptr, bytesize);
    return allocate_async(true, dptr, bytesize, hStream);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    if (dptr && async_route_applies(hStream, false))
        return free_async_on_route(false, dptr, hStream);
    return free_async(false, dptr, hStream);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    if (dptr && async_route_applies(hStream, true))
        return free_async_on_route(true, dptr, hStream);
    return free_async(true, dptr, hStream);
}

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = driver->mem_get_info_v2(free, total);
    if (result != CUDA_SUCCESS || !free || hook_bypassed_after_fork() ||
        hook_mode() != HOOK_MODE_CACHE ||
        library_config()->meminfo == GPUCACHE_MEMINFO_RAW)
        return result;
    /* Programs size their workspaces from this number; memory the cache
     * holds idle is theirs to use. */
    CUcontext context;
    int device;
    if (!device_of_current_context(driver, &context, &device) ||
        device_context(device) != context)
        return result;
    struct gpucache_allocator *allocator = device_allocator(device);
    if (!allocator)
        return result;
    size_t cached = gpucache_allocator_cached_free_bytes(allocator);
    size_t reported = *free + cached < *free ? SIZE_MAX : *free + cached;
    if (total && reported > *total)
        reported = *total;
    *free = reported;
    return result;
}
