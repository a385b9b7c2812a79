/* Stream-ordered allocation on the simulated driver: memory pools,
 * cuMemAllocAsync and cuMemFreeAsync in stream order. */
#include <string.h>

#include "sim_test_support.h"

Test(async_allocation, free_is_stream_ordered)
{
    start_device(0);
    CUstream stream;
    EXPECT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAllocAsync(&pointer, 3 << 20, stream));
    cr_assert_eq(gpusim_physical_bytes(0), (size_t)4 << 20);
    struct late_write late = {.delay_milliseconds = 100, .written = 1};
    EXPECT_OK(cuLaunchHostFunc(stream, write_late, &late));
    EXPECT_OK(cuMemFreeAsync(pointer, stream));
    cr_assert_eq(gpusim_physical_bytes(0), (size_t)4 << 20, "not yet reached by the stream");
    ((volatile char *)pointer)[0] = 1; /* still valid: the free has not run */
    EXPECT_RESULT(cuMemFreeAsync(pointer, stream), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuStreamSynchronize(stream));
    cr_assert_eq(gpusim_physical_bytes(0), 0);
    cr_assert(faults_in_child(read_byte, (void *)pointer), "use after the stream-ordered free");
    EXPECT_OK(cuStreamDestroy(stream));
}

Test(async_allocation, pools)
{
    start_device(0);
    CUmemoryPool default_pool, current, created;
    EXPECT_OK(cuDeviceGetDefaultMemPool(&default_pool, 0));
    EXPECT_OK(cuDeviceGetMemPool(&current, 0));
    cr_assert_eq(default_pool, current);
    CUmemPoolProps properties;
    memset(&properties, 0, sizeof properties);
    properties.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = 0;
    EXPECT_OK(cuMemPoolCreate(&created, &properties));
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAllocFromPoolAsync(&pointer, 1000, created, NULL));
    cuuint64_t used, used_default;
    EXPECT_OK(cuMemPoolGetAttribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    EXPECT_OK(cuMemPoolGetAttribute(default_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used_default));
    cr_assert_eq(used, 1000);
    cr_assert_eq(used_default, 0);
    CUmemoryPool owner;
    EXPECT_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pointer));
    cr_assert_eq(owner, created);
    EXPECT_OK(cuDeviceSetMemPool(0, created));
    CUmemLocation device_zero = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    EXPECT_OK(cuMemGetMemPool(&current, &device_zero, CU_MEM_ALLOCATION_TYPE_PINNED));
    cr_assert_eq(current, created, "the location form sees the same current pool");
    EXPECT_OK(cuMemGetDefaultMemPool(&current, &device_zero, CU_MEM_ALLOCATION_TYPE_PINNED));
    cr_assert_eq(current, default_pool);
    CUdeviceptr from_current;
    allocate_async_function allocate_ptsz =
        (allocate_async_function)per_thread_variant("cuMemAllocAsync", 11020);
    EXPECT_OK(allocate_ptsz(&from_current, 10, NULL));
    EXPECT_OK(cuMemPoolGetAttribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    cr_assert_eq(used, 1010);
    EXPECT_OK(cuMemFreeAsync(pointer, NULL));
    EXPECT_OK(cuMemFree(from_current));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuMemPoolGetAttribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    cr_assert_eq(used, 0);
    CUmemAccess_flags access;
    CUmemLocation owner_location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    EXPECT_OK(cuMemPoolGetAccess(&access, created, &owner_location));
    cr_assert_eq(access, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CUmemAccessDesc revoke = {.location = owner_location, .flags = CU_MEM_ACCESS_FLAGS_PROT_NONE};
    EXPECT_RESULT(cuMemPoolSetAccess(created, &revoke, 1), CUDA_ERROR_INVALID_DEVICE);
    EXPECT_RESULT(cuMemPoolDestroy(default_pool), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemPoolDestroy(created));
    EXPECT_OK(cuDeviceGetMemPool(&current, 0));
    cr_assert_eq(current, default_pool);
}

