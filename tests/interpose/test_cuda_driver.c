/* The allocator's driver interface over the simulated driver, called
 * directly: VMM pages, plain memory from another device's context, and
 * fences made of events (one stream, every stream, cross-stream waits, none
 * during a capture). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "cuda_driver.h"
#include "device_allocators.h"
#include "device_registry.h"
#include "real_driver.h"

static const struct gpucache_driver *driver;
static CUcontext contexts[2];

static struct {
    PFN_cuInit_v2000 init;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuCtxSetCurrent_v4000 set_current;
    PFN_cuStreamCreate_v2000 stream_create; /* the library's hook */
    PFN_cuLaunchHostFunc_v10000 launch_host_function;
    PFN_cuStreamBeginCapture_v10010 begin_capture;
    PFN_cuStreamEndCapture_v10000 end_capture;
    PFN_cuGraphDestroy_v10000 graph_destroy;
    PFN_cuEventCreate_v2000 event_create;
    PFN_cuEventRecord_v2000 event_record;
    PFN_cuEventQuery_v2000 event_query;
    PFN_cuEventSynchronize_v2000 event_synchronize;
} api;

static void *entry_point(const char *name)
{
    void *driver_library = dlopen("libcuda.so.1", RTLD_NOW);
    cr_assert_not_null(driver_library, "dlopen: %s", dlerror());
    void *function = dlsym(driver_library, name);
    cr_assert_not_null(function, "no %s", name);
    return function;
}

static void start_device(void)
{
    api.init = entry_point("cuInit");
    api.retain = entry_point("cuDevicePrimaryCtxRetain");
    api.set_current = entry_point("cuCtxSetCurrent");
    api.stream_create = entry_point("cuStreamCreate");
    api.launch_host_function = entry_point("cuLaunchHostFunc");
    api.begin_capture = entry_point("cuStreamBeginCapture_v2");
    api.end_capture = entry_point("cuStreamEndCapture");
    api.graph_destroy = entry_point("cuGraphDestroy");
    api.event_create = entry_point("cuEventCreate");
    api.event_record = entry_point("cuEventRecord");
    api.event_query = entry_point("cuEventQuery");
    api.event_synchronize = entry_point("cuEventSynchronize");
    cr_assert_eq(api.init(0), CUDA_SUCCESS);
    for (int device = 0; device < 2; device++)
        cr_assert_eq(api.retain(&contexts[device], device), CUDA_SUCCESS);
    cr_assert_eq(api.set_current(contexts[0]), CUDA_SUCCESS);
    cr_assert_not_null(real_driver_get(false));
    /* Binds device 0 to its primary context, as the first allocation does. */
    cr_assert_not_null(device_allocator_for(0, contexts[0]));
    driver = cuda_driver_interface();
}

TestSuite(cuda_driver, .init = start_device, .timeout = 30);

static void CUDA_CB hold_stream(void *unused)
{
    (void)unused;
    usleep(150000);
}

static CUstream busy_non_blocking_stream(void)
{
    CUstream stream;
    cr_assert_eq(api.stream_create(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    cr_assert_eq(api.launch_host_function(stream, hold_stream, NULL), CUDA_SUCCESS);
    return stream;
}

Test(cuda_driver, expandable_pages_reserve_map_access_and_release)
{
    size_t granularity = 0;
    cr_assert_eq(driver->page_granularity(driver->context, 0, &granularity), GPUCACHE_SUCCESS);
    cr_assert_gt(granularity, 0);
    uint64_t base = 0;
    gpucache_page_handle page = 0;
    cr_assert_eq(driver->address_reserve(driver->context, 0, 2 * granularity, &base), 0);
    cr_assert_eq(driver->page_create(driver->context, 0, granularity, &page), 0);
    cr_assert_eq(driver->page_map(driver->context, 0, base + granularity, granularity, page), 0);
    cr_assert_eq(driver->set_access(driver->context, 0, base + granularity, granularity, NULL, 0),
                 0);
    /* Device memory is host memory in the simulator: the mapping is live. */
    memset((void *)(uintptr_t)(base + granularity), 0x5a, granularity);
    cr_assert_eq(((unsigned char *)(uintptr_t)base)[2 * granularity - 1], 0x5a);
    cr_assert_eq(driver->page_unmap(driver->context, 0, base + granularity, granularity), 0);
    cr_assert_eq(driver->page_release(driver->context, 0, page), 0);
    cr_assert_eq(driver->address_free(driver->context, 0, base, 2 * granularity), 0);
}

Test(cuda_driver, access_is_granted_to_peers_the_program_enabled)
{
    size_t granularity = 0;
    uint64_t base = 0;
    gpucache_page_handle page = 0;
    cr_assert_eq(driver->page_granularity(driver->context, 0, &granularity), 0);
    cr_assert_eq(driver->address_reserve(driver->context, 0, granularity, &base), 0);
    cr_assert_eq(driver->page_create(driver->context, 0, granularity, &page), 0);
    cr_assert_eq(driver->page_map(driver->context, 0, base, granularity, page), 0);
    device_grant_peer(0, 1);
    int listed_peer = 1; /* named twice: once by the caller, once granted */
    cr_assert_eq(driver->set_access(driver->context, 0, base, granularity, &listed_peer, 1), 0);
    int peers[4];
    cr_assert_eq(device_peers(0, peers, 4), 1);
    cr_assert_eq(peers[0], 1);
    cr_assert_eq(driver->page_unmap(driver->context, 0, base, granularity), 0);
    cr_assert_eq(driver->page_release(driver->context, 0, page), 0);
    cr_assert_eq(driver->address_free(driver->context, 0, base, granularity), 0);
}

Test(cuda_driver, plain_memory_is_freed_in_its_own_context)
{
    uint64_t address = 0;
    cr_assert_eq(driver->device_alloc(driver->context, 0, 1 << 20, &address), 0);
    size_t free_bytes = 0, total_bytes = 0;
    cr_assert_eq(driver->memory_info(driver->context, 0, &free_bytes, &total_bytes), 0);
    cr_assert_leq(free_bytes + (1 << 20), total_bytes);
    /* Another device is current: the free must run in device 0's context. */
    cr_assert_eq(api.set_current(contexts[1]), CUDA_SUCCESS);
    cr_assert_eq(driver->device_free(driver->context, 0, address), 0);
    CUcontext current = NULL;
    cr_assert_eq(real_driver_get(false)->ctx_get_current(&current), CUDA_SUCCESS);
    cr_assert_eq(current, contexts[1], "the pushed context was not popped");
}

Test(cuda_driver, a_stream_fence_completes_with_the_stream)
{
    CUstream stream = busy_non_blocking_stream();
    gpucache_fence *fence = NULL;
    cr_assert_eq(driver->fence_stream(driver->context, 0, (gpucache_stream)stream, &fence), 0);
    cr_assert_eq(driver->fence_query(driver->context, fence), GPUCACHE_ERROR_NOT_READY);
    cr_assert_eq(driver->fence_wait(driver->context, fence), GPUCACHE_SUCCESS);
    cr_assert_eq(driver->fence_query(driver->context, fence), GPUCACHE_SUCCESS);
    driver->fence_release(driver->context, fence);
}

Test(cuda_driver, an_all_streams_fence_waits_for_live_non_blocking_streams)
{
    busy_non_blocking_stream();
    gpucache_fence *fence = NULL;
    cr_assert_eq(driver->fence_all_streams(driver->context, 0, &fence), 0);
    /* The legacy stream is idle: only the non-blocking stream's event can
     * keep the fence open. */
    cr_assert_eq(driver->fence_query(driver->context, fence), GPUCACHE_ERROR_NOT_READY);
    cr_assert_eq(driver->fence_wait(driver->context, fence), GPUCACHE_SUCCESS);
    driver->fence_release(driver->context, fence);
}

Test(cuda_driver, no_fence_is_recorded_during_a_capture)
{
    CUstream stream;
    cr_assert_eq(api.stream_create(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    cr_assert_not(driver->capture_active(driver->context, 0));
    cr_assert_eq(api.begin_capture(stream, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    cr_assert(driver->capture_active(driver->context, 0));
    gpucache_fence *fence = NULL;
    cr_assert_eq(driver->fence_all_streams(driver->context, 0, &fence), GPUCACHE_ERROR_NOT_READY);
    cr_assert_null(fence);
    CUgraph graph;
    cr_assert_eq(api.end_capture(stream, &graph), CUDA_SUCCESS);
    cr_assert_eq(api.graph_destroy(graph), CUDA_SUCCESS);
    cr_assert_not(driver->capture_active(driver->context, 0));
}

/* What a re-created stream with a destroyed one's handle value looks like
 * to the library: the create hook registers the same value on another
 * device. The sim's handles are its streams' memory, which it does not
 * hand out again soon enough to wait for, so the registration is made
 * directly. */
static CUstream stream_known_on_device_0(void)
{
    CUstream stream;
    cr_assert_eq(api.stream_create(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    cr_assert_eq(device_of_stream(real_driver_get(false), stream), 0);
    cr_assert_eq(device_of_stream(real_driver_get(false), stream), 0, "kept answer");
    return stream;
}

Test(cuda_driver, a_destroyed_streams_device_is_not_kept_for_its_handle)
{
    cr_assert_not_null(device_allocator_for(1, contexts[1]));
    PFN_cuStreamDestroy_v4000 destroy = entry_point("cuStreamDestroy_v2");
    CUstream stream = stream_known_on_device_0();
    cr_assert_eq(destroy(stream), CUDA_SUCCESS);
    device_stream_created(1, stream, true);
    cr_assert_eq(device_of_stream(real_driver_get(false), stream), 1,
                 "the destroyed stream's device was kept for a new stream with its handle");
    cr_assert_eq(device_stream_destroyed(stream, NULL), 1);
}

Test(cuda_driver, a_created_streams_device_is_not_kept_for_its_handle)
{
    cr_assert_not_null(device_allocator_for(1, contexts[1]));
    CUstream stream = stream_known_on_device_0();
    /* A destroy the library did not see (no hook), then a create it sees
     * that hands the value out again, on device 1. */
    cr_assert_eq(device_stream_destroyed(stream, NULL), 0);
    CUstream other;
    cr_assert_eq(api.stream_create(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    device_stream_created(1, stream, true);
    cr_assert_eq(device_of_stream(real_driver_get(false), stream), 1,
                 "a stream create kept the device another stream had under its handle");
    cr_assert_eq(device_stream_destroyed(stream, NULL), 1);
}
