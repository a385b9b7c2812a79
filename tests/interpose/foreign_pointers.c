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

/* Memory the library never saw: allocated by a library opened with
 * RTLD_DEEPBIND (see foreign_allocator.c). Sanitizer runtimes refuse
 * RTLD_DEEPBIND, so sanitizer builds skip this part. */
static void free_memory_the_library_never_saw(const char *helper)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    (void)helper;
#else
    void *library = dlopen(helper, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    CHECK(library != NULL, "dlopen %s: %s", helper, dlerror());
    unsigned long long (*allocate)(size_t) =
        (unsigned long long (*)(size_t))dlsym(library, "allocate_behind_the_library");
    CHECK(allocate != NULL, "no allocate_behind_the_library");
    unsigned long long allocs_before = simulated_driver_calls("cuMemAlloc_v2");
    CUdeviceptr unseen = allocate(1 << 20);
    CHECK(unseen != 0, "the driver did not allocate");
    CHECK(simulated_driver_calls("cuMemAlloc_v2") == allocs_before + 1,
          "the helper did not reach the driver");
    unsigned long long frees_before = simulated_driver_calls("cuMemFree_v2");
    CHECK_CUDA(cudaFree((void *)unseen));
    CHECK(simulated_driver_calls("cuMemFree_v2") == frees_before + 1,
          "the unseen pointer was not freed by the driver");
#endif
}

int main(int argc, char **argv)
{
    CHECK(argc == 2, "usage: foreign_pointers PATH_OF_FOREIGN_ALLOCATOR_LIBRARY");
    CHECK_CUDA(cudaFree(0));
    free_memory_the_library_never_saw(argv[1]);

    /* From an explicit pool: never cached, freed by the driver. */
    void *get_default_pool = NULL;
    enum cudaDriverEntryPointQueryResult status;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuDeviceGetDefaultMemPool", &get_default_pool,
                                                11020, cudaEnableDefault, &status));
    CUmemoryPool pool;
    CHECK_CUDA(((PFN_cuDeviceGetDefaultMemPool_v11020)get_default_pool)(&pool, 0));
    void *from_pool = NULL;
    CHECK_CUDA(cudaMallocFromPoolAsync(&from_pool, 1 << 16, (cudaMemPool_t)pool, 0));
    CHECK_CUDA(cudaStreamSynchronize(0));
    unsigned long long frees_before = simulated_driver_calls("cuMemFree_v2");
    CHECK_CUDA(cudaFree(from_pool));
    CHECK(simulated_driver_calls("cuMemFree_v2") == frees_before + 1,
          "the pool allocation was not freed by the driver");

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
