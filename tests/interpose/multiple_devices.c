/* Two devices (GPUSIM_DEVICES=2): one cache per device; a block freed while
 * the other device is current goes back to its own device's cache and is
 * reused there; cudaMemGetInfo counts each device's own cache; enabling
 * peer access passes through. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include "test_support.h"

#define ROUNDS 50

int main(void)
{
    int count = 0;
    CHECK_CUDA(cudaGetDeviceCount(&count));
    CHECK(count == 2, "expected 2 devices, found %d", count);
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(0));
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CUDA(cudaFree(0));

    unsigned long long before = simulated_driver_calls("cuMemAlloc_v2");
    for (int i = 0; i < ROUNDS; i++) {
        void *on_one = NULL, *on_zero = NULL;
        CHECK_CUDA(cudaSetDevice(1));
        CHECK_CUDA(cudaMalloc(&on_one, 1 << 20));
        CHECK_CUDA(cudaMemset(on_one, 1, 1 << 20));
        CHECK_CUDA(cudaSetDevice(0));
        CHECK_CUDA(cudaMalloc(&on_zero, 1 << 20));
        CHECK(on_zero != on_one, "both devices handed out %p", on_zero);
        CHECK_CUDA(cudaFree(on_one)); /* device 0 is current */
        CHECK_CUDA(cudaFree(on_zero));
    }
    unsigned long long allocs = simulated_driver_calls("cuMemAlloc_v2") - before;
    if (library_is_caching())
        CHECK(allocs <= 2, "%llu driver allocations for %d rounds on two devices", allocs,
              ROUNDS);

    size_t free_zero, free_one, total;
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CUDA(cudaMemGetInfo(&free_one, &total));
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaMemGetInfo(&free_zero, &total));
    CHECK(free_zero == total && free_one == total,
          "idle caches not counted as free: %zu and %zu of %zu", free_zero, free_one, total);

    /* Device 0 may access device 1's memory: the hook forwards the call and
     * the driver's answer comes back unchanged. */
    void *retain = NULL, *enable = NULL, *release = NULL;
    enum cudaDriverEntryPointQueryResult status;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxRetain", &retain, 7000,
                                                cudaEnableDefault, &status));
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuCtxEnablePeerAccess", &enable, 4000,
                                                cudaEnableDefault, &status));
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxRelease", &release, 7000,
                                                cudaEnableDefault, &status));
    CUcontext device_one;
    CHECK_CUDA(((PFN_cuDevicePrimaryCtxRetain_v7000)retain)(&device_one, 1));
    CUresult peer = ((PFN_cuCtxEnablePeerAccess_v4000)enable)(device_one, 0);
    CHECK(peer == CUDA_SUCCESS || peer == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
          "cuCtxEnablePeerAccess returned %d", (int)peer);
    CHECK(((PFN_cuCtxEnablePeerAccess_v4000)enable)(device_one, 0) ==
              (peer == CUDA_SUCCESS ? CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED : peer),
          "a second enable did not give the driver's answer");
    CHECK_CUDA(((PFN_cuDevicePrimaryCtxRelease_v11000)release)(1));
    void *still = NULL;
    CHECK_CUDA(cudaMalloc(&still, 4096));
    CHECK_CUDA(cudaFree(still));
    return 0;
}
