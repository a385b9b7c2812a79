// Twin of tests/sim/test_sim_pools.c and the event checks of
// tests/sim/test_sim_streams.c: memory pools and event timing rules.
#include <string.h>
#include <time.h>

#include "twin_driver.h"

static void CUDA_CB pause_60_milliseconds(void *argument)
{
    (void)argument;
    timespec pause = {0, 60 * 1000000L};
    nanosleep(&pause, NULL);
}

int main()
{
    twin_start();
    PFN_cuDeviceGetDefaultMemPool_v11020 default_pool_of = TWIN_ENTRY(cuDeviceGetDefaultMemPool, 11020);
    PFN_cuDeviceGetMemPool_v11020 current_pool_of = TWIN_ENTRY(cuDeviceGetMemPool, 11020);
    PFN_cuDeviceSetMemPool_v11020 set_current_pool = TWIN_ENTRY(cuDeviceSetMemPool, 11020);
    PFN_cuMemPoolCreate_v11020 pool_create = TWIN_ENTRY(cuMemPoolCreate, 11020);
    PFN_cuMemPoolDestroy_v11020 pool_destroy = TWIN_ENTRY(cuMemPoolDestroy, 11020);
    PFN_cuMemPoolGetAttribute_v11020 pool_attribute = TWIN_ENTRY(cuMemPoolGetAttribute, 11020);
    PFN_cuMemAllocFromPoolAsync_v11020 allocate_from = TWIN_ENTRY(cuMemAllocFromPoolAsync, 11020);
    PFN_cuMemFreeAsync_v11020 free_async = TWIN_ENTRY(cuMemFreeAsync, 11020);
    PFN_cuPointerGetAttribute_v4000 pointer_attribute = TWIN_ENTRY(cuPointerGetAttribute, 4000);
    PFN_cuCtxSynchronize_v2000 synchronize = TWIN_ENTRY(cuCtxSynchronize, 2000);
    PFN_cuEventCreate_v2000 event_create = TWIN_ENTRY(cuEventCreate, 2000);
    PFN_cuEventRecord_v2000 event_record = TWIN_ENTRY(cuEventRecord, 2000);
    PFN_cuEventQuery_v2000 event_query = TWIN_ENTRY(cuEventQuery, 2000);
    PFN_cuEventSynchronize_v2000 event_synchronize = TWIN_ENTRY(cuEventSynchronize, 2000);
    PFN_cuEventElapsedTime_v2000 elapsed = TWIN_ENTRY(cuEventElapsedTime, 2000);
    PFN_cuLaunchHostFunc_v10000 launch_host = TWIN_ENTRY(cuLaunchHostFunc, 10000);

    CUmemoryPool default_pool, current, created;
    TWIN_OK(default_pool_of(&default_pool, 0));
    TWIN_OK(current_pool_of(&current, 0));
    TWIN_CHECK(current == default_pool);
    CUmemPoolProps properties;
    memset(&properties, 0, sizeof properties);
    properties.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = 0;
    TWIN_OK(pool_create(&created, &properties));
    CUdeviceptr pointer;
    TWIN_OK(allocate_from(&pointer, 1 << 20, created, NULL));
    cuuint64_t used = 0;
    TWIN_OK(pool_attribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    TWIN_CHECK(used >= (1 << 20));
    CUmemoryPool owner = NULL;
    TWIN_OK(pointer_attribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pointer));
    TWIN_CHECK(owner == created);
    TWIN_OK(set_current_pool(0, created));
    TWIN_OK(current_pool_of(&current, 0));
    TWIN_CHECK(current == created);
    TWIN_OK(free_async(pointer, NULL));
    TWIN_OK(synchronize());
    TWIN_OK(pool_attribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    TWIN_CHECK(used == 0);
    TWIN_EXPECT(pool_destroy(default_pool), CUDA_ERROR_INVALID_VALUE);
    TWIN_OK(set_current_pool(0, default_pool));
    TWIN_OK(pool_destroy(created));

    CUevent start, end, untimed;
    TWIN_OK(event_create(&start, 0));
    TWIN_OK(event_create(&end, 0));
    TWIN_OK(event_create(&untimed, CU_EVENT_DISABLE_TIMING));
    TWIN_OK(event_query(start)); /* never recorded: complete */
    float milliseconds = 0;
    TWIN_EXPECT(elapsed(&milliseconds, start, end), CUDA_ERROR_INVALID_HANDLE);
    TWIN_OK(event_record(start, NULL));
    TWIN_OK(launch_host(NULL, pause_60_milliseconds, NULL));
    TWIN_OK(event_record(end, NULL));
    TWIN_OK(event_record(untimed, NULL));
    TWIN_EXPECT(elapsed(&milliseconds, start, end), CUDA_ERROR_NOT_READY);
    TWIN_OK(event_synchronize(end));
    TWIN_OK(elapsed(&milliseconds, start, end));
    TWIN_CHECK(milliseconds >= 55.0f && milliseconds < 5000.0f);
    TWIN_EXPECT(elapsed(&milliseconds, start, untimed), CUDA_ERROR_INVALID_HANDLE);
    return twin_finish("twin_pools_events");
}
