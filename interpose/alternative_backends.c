/* The allocation paths that bypass the cache: forwarded calls that are only
 * recorded, and the driver's stream-ordered pool standing in for it. */
#include "alternative_backends.h"

#include "cuda_driver.h"
#include "device_registry.h"
#include "tracked_allocations.h"

static int current_device(const struct real_driver *driver)
{
    CUcontext context;
    int device = -1;
    if (!device_of_current_context(driver, &context, &device))
        return -1;
    return device;
}

static CUresult record_allocation(CUresult result, int device, CUdeviceptr *dptr, size_t size)
{
    if (result == CUDA_SUCCESS)
        tracked_allocation_added(device, *dptr, size);
    else
        tracked_allocation_failed(device);
    return result;
}

CUresult count_only_alloc(const struct real_driver *driver, CUdeviceptr *dptr, size_t size)
{
    CUresult result = driver->mem_alloc_v2(dptr, size);
    return record_allocation(result, current_device(driver), dptr, size);
}

CUresult count_only_free(const struct real_driver *driver, CUdeviceptr dptr)
{
    CUresult result = driver->mem_free_v2(dptr);
    if (result == CUDA_SUCCESS)
        tracked_allocation_removed(dptr, NULL);
    return result;
}

CUresult count_only_alloc_async(const struct real_driver *driver,
                                PFN_cuMemAllocAsync_v11020 real_alloc_async, CUdeviceptr *dptr,
                                size_t size, CUstream stream)
{
    CUresult result = real_alloc_async(dptr, size, stream);
    return record_allocation(result, current_device(driver), dptr, size);
}

CUresult count_only_free_async(PFN_cuMemFreeAsync_v11020 real_free_async, CUdeviceptr dptr,
                               CUstream stream)
{
    CUresult result = real_free_async(dptr, stream);
    if (result == CUDA_SUCCESS)
        tracked_allocation_removed(dptr, NULL);
    return result;
}

CUresult driver_pool_alloc(const struct real_driver *driver, CUdeviceptr *dptr, size_t size)
{
    int device = current_device(driver);
    if (device < 0)
        return driver->mem_alloc_v2(dptr, size);
    CUresult result = driver->mem_alloc_async(dptr, size, CU_STREAM_LEGACY);
    /* Non-blocking streams do not wait for the legacy stream: before one of
     * them may touch the memory, the pool's own ordering point must pass. */
    if (result == CUDA_SUCCESS && device_has_non_blocking_streams(device))
        result = driver->stream_synchronize(CU_STREAM_LEGACY);
    return record_allocation(result, device, dptr, size);
}

CUresult driver_pool_free(const struct real_driver *driver, CUdeviceptr dptr)
{
    int device = -1;
    if (!tracked_allocation_removed(dptr, &device))
        return driver->mem_free_v2(dptr);
    CUresult result = cuda_driver_order_legacy_after_all_streams(device);
    if (result == CUDA_SUCCESS)
        result = driver->mem_free_async(dptr, CU_STREAM_LEGACY);
    return result;
}
