/* A program linked to libcuda directly, calling the driver API: the
 * library's exported driver hooks must take its allocations. */
#include <cuda.h>

#include "test_support.h"

#define ROUNDS 200

int main(void)
{
    CUdevice device;
    CUcontext context;
    CHECK_CUDA(cuInit(0));
    CHECK_CUDA(cuDeviceGet(&device, 0));
    CHECK_CUDA(cuDevicePrimaryCtxRetain(&context, device));
    CHECK_CUDA(cuCtxSetCurrent(context));

    unsigned long long before = simulated_driver_calls("cuMemAlloc_v2");
    for (unsigned i = 0; i < ROUNDS; i++) {
        CUdeviceptr pointer = 0;
        CHECK_CUDA(cuMemAlloc(&pointer, 65536 + (size_t)(i % 9) * 4096));
        CHECK_CUDA(cuMemsetD8(pointer, 0x11, 65536));
        CHECK_CUDA(cuMemFree(pointer));
    }
    unsigned long long allocs = simulated_driver_calls("cuMemAlloc_v2") - before;

    unsigned long long async_before = simulated_driver_calls("cuMemAllocAsync");
    for (unsigned i = 0; i < ROUNDS; i++) {
        CUdeviceptr pointer = 0;
        CHECK_CUDA(cuMemAllocAsync(&pointer, 4096, NULL));
        CHECK_CUDA(cuMemFreeAsync(pointer, NULL));
    }
    CHECK_CUDA(cuCtxSynchronize());
    unsigned long long async_allocs = simulated_driver_calls("cuMemAllocAsync") - async_before;

    check_driver_allocations(allocs, ROUNDS, "cuMemAlloc");
    check_driver_allocations(async_allocs, ROUNDS, "cuMemAllocAsync");
    if (simulated_driver_present() && library_is_caching())
        CHECK(async_allocs == 0, "%llu cuMemAllocAsync calls reached the driver", async_allocs);
    CHECK_CUDA(cuDevicePrimaryCtxRelease(device));
    return 0;
}
