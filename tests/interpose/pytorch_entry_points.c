/* The entry points PyTorch's CUDAPluggableAllocator calls, found the way
 * PyTorch finds them (dlsym on the library): gpucache_malloc and
 * gpucache_free serve repeated allocations from the cache, a pointer the
 * cache never handed out is freed by the driver, and gpucache_empty_cache
 * gives the cached memory back. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "test_support.h"

#define ROUNDS 100
#define BLOCK (1u << 20)

int main(void)
{
    CHECK(library_is_loaded(), "run this under the library");
    void *(*allocate)(size_t, int, cudaStream_t) =
        (void *(*)(size_t, int, cudaStream_t))dlsym(RTLD_DEFAULT, "gpucache_malloc");
    void (*release)(void *, size_t, int, cudaStream_t) =
        (void (*)(void *, size_t, int, cudaStream_t))dlsym(RTLD_DEFAULT, "gpucache_free");
    void (*empty_cache)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gpucache_empty_cache");
    CHECK(allocate && release && empty_cache, "an entry point is not exported");

    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(0));
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    size_t physical_before = simulated_physical_bytes(0);
    unsigned long long allocs_before = simulated_driver_calls("cuMemAlloc_v2");
    for (unsigned i = 0; i < ROUNDS; i++) {
        void *pointer = allocate(BLOCK, 0, stream);
        CHECK(pointer != NULL, "gpucache_malloc failed in round %u", i);
        CHECK_CUDA(cudaMemsetAsync(pointer, 1, BLOCK, stream));
        release(pointer, BLOCK, 0, stream);
    }
    CHECK_CUDA(cudaStreamSynchronize(stream));
    unsigned long long allocs = simulated_driver_calls("cuMemAlloc_v2") - allocs_before;
    CHECK(allocs <= 1, "%llu driver allocations for %d gpucache_malloc calls", allocs, ROUNDS);
    CHECK(simulated_physical_bytes(0) > physical_before, "nothing cached");

    void *foreign = NULL;
    CHECK_CUDA(cudaMallocManaged(&foreign, BLOCK, cudaMemAttachGlobal));
    unsigned long long frees_before = simulated_driver_calls("cuMemFree_v2");
    release(foreign, BLOCK, 0, stream);
    CHECK(simulated_driver_calls("cuMemFree_v2") == frees_before + 1,
          "the foreign pointer was not freed by the driver");

    empty_cache();
    CHECK(simulated_physical_bytes(0) == physical_before, "empty_cache kept %zu bytes",
          simulated_physical_bytes(0) - physical_before);
    CHECK_CUDA(cudaStreamDestroy(stream));
    return 0;
}
