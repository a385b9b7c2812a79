/* Pointers the cache did not hand out go to the real driver: memory the
 * driver allocated behind the library's back (as before the library was
 * active), managed and pitched memory, and host memory, whose cudaFree fails
 * exactly as it would without the library. Double and interior frees of
 * cached blocks fail with cudaErrorInvalidValue, as the driver's do. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "test_support.h"

/* The driver's own cuMemAlloc_v2, reached past every hook: dlvsym is not
 * hooked, and it accepts any version for an unversioned library. */
static PFN_cuMemAlloc_v3020 driver_allocation_function(void)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(driver != NULL, "libcuda.so.1 not loaded");
    void *function = dlvsym(driver, "cuMemAlloc_v2", "libcuda.so.1");
    CHECK(function != NULL, "dlvsym found no cuMemAlloc_v2: %s", dlerror());
    return (PFN_cuMemAlloc_v3020)function;
}

int main(void)
{
    CHECK_CUDA(cudaFree(0));

    /* Allocated by the driver itself: the library has never seen it. */
    CUdeviceptr unseen = 0;
    CHECK_CUDA(driver_allocation_function()(&unseen, 1 << 20));
    unsigned long long frees_before = simulated_driver_calls("cuMemFree_v2");
    CHECK_CUDA(cudaFree((void *)unseen));
    CHECK(simulated_driver_calls("cuMemFree_v2") == frees_before + 1,
          "the unseen pointer was not freed by the driver");

    void *managed = NULL;
    CHECK_CUDA(cudaMallocManaged(&managed, 1 << 20, cudaMemAttachGlobal));
    CHECK_CUDA(cudaFree(managed));

    void *pitched = NULL;
    size_t pitch = 0;
    CHECK_CUDA(cudaMallocPitch(&pitched, &pitch, 1000, 100));
    CHECK_CUDA(cudaFree(pitched));

    void *host = NULL;
    CHECK_CUDA(cudaMallocHost(&host, 4096));
    frees_before = simulated_driver_calls("cuMemFree_v2");
    cudaError_t host_free = cudaFree(host);
    CHECK(host_free != cudaSuccess, "cudaFree accepted a host pointer");
    if (library_is_loaded())
        CHECK(simulated_driver_calls("cuMemFree_v2") == frees_before + 1,
              "the host pointer's free did not reach the driver");
    (void)cudaGetLastError();
    CHECK_CUDA(cudaFreeHost(host));

    void *block = NULL;
    CHECK_CUDA(cudaMalloc(&block, 8192));
    CHECK(cudaFree((char *)block + 512) == cudaErrorInvalidValue,
          "an interior free was not rejected");
    (void)cudaGetLastError();
    CHECK_CUDA(cudaFree(block));
    CHECK(cudaFree(block) == cudaErrorInvalidValue, "a double free was not rejected");
    (void)cudaGetLastError();

    void *still_usable = NULL;
    CHECK_CUDA(cudaMalloc(&still_usable, 8192));
    CHECK_CUDA(cudaMemset(still_usable, 1, 8192));
    CHECK_CUDA(cudaFree(still_usable));
    return 0;
}
