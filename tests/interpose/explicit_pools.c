/* cudaMallocAsync is cached only while the device's current pool is its
 * default pool: after the program makes another pool current
 * (cuDeviceSetMemPool), its allocations must come from that pool, through
 * the driver; once the default pool is current again, the cache serves
 * them again. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <string.h>

#include "test_support.h"

#define ROUNDS 20

static void *driver_entry(const char *name, unsigned version)
{
    void *function = NULL;
    enum cudaDriverEntryPointQueryResult status;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion(name, &function, version, cudaEnableDefault,
                                                &status));
    CHECK(function != NULL && status == cudaDriverEntryPointSuccess, "no %s", name);
    return function;
}

/* Driver stream-ordered allocations made by ROUNDS cudaMallocAsync. */
static unsigned long long driver_async_allocations(void)
{
    unsigned long long before = simulated_driver_calls("cuMemAllocAsync");
    for (int i = 0; i < ROUNDS; i++) {
        void *pointer = NULL;
        CHECK_CUDA(cudaMallocAsync(&pointer, 65536, 0));
        CHECK_CUDA(cudaFreeAsync(pointer, 0));
    }
    CHECK_CUDA(cudaStreamSynchronize(0));
    return simulated_driver_calls("cuMemAllocAsync") - before;
}

int main(void)
{
    CHECK(library_is_caching(), "run this under the caching library");
    CHECK_CUDA(cudaFree(0));
    PFN_cuMemPoolCreate_v11020 pool_create =
        (PFN_cuMemPoolCreate_v11020)driver_entry("cuMemPoolCreate", 11020);
    PFN_cuMemPoolDestroy_v11020 pool_destroy =
        (PFN_cuMemPoolDestroy_v11020)driver_entry("cuMemPoolDestroy", 11020);
    PFN_cuDeviceSetMemPool_v11020 set_pool =
        (PFN_cuDeviceSetMemPool_v11020)driver_entry("cuDeviceSetMemPool", 11020);
    PFN_cuDeviceGetDefaultMemPool_v11020 default_pool_of =
        (PFN_cuDeviceGetDefaultMemPool_v11020)driver_entry("cuDeviceGetDefaultMemPool", 11020);

    CHECK(driver_async_allocations() == 0, "the default pool's allocations were not cached");

    CUmemPoolProps properties;
    memset(&properties, 0, sizeof properties);
    properties.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = 0;
    CUmemoryPool own_pool, default_pool;
    CHECK_CUDA(pool_create(&own_pool, &properties));
    CHECK_CUDA(default_pool_of(&default_pool, 0));
    CHECK_CUDA(set_pool(0, own_pool));
    unsigned long long from_own_pool = driver_async_allocations();
    CHECK(from_own_pool == ROUNDS, "%llu of %d allocations reached the program's own pool",
          from_own_pool, ROUNDS);

    CHECK_CUDA(set_pool(0, default_pool));
    CHECK(driver_async_allocations() == 0, "caching did not resume with the default pool");
    CHECK_CUDA(pool_destroy(own_pool));
    return 0;
}
