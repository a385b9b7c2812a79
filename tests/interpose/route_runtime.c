/* A program that allocates only through the CUDA runtime. Built three ways:
 * against the shared runtime, against the static runtime archive (the nvcc
 * default), and with per-thread default streams. Under the library every
 * cudaMalloc and cudaMallocAsync must reach the cache: a few driver
 * allocations serve hundreds of runtime ones. Without it, each runtime call
 * is one driver call. scripts/gpu-check.sh builds it with nvcc for a real
 * GPU, where the library's report does the counting. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "test_support.h"

#define ROUNDS 200

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#define ASYNC_ALLOC_ENTRY "cuMemAllocAsync_ptsz"
#else
#define ASYNC_ALLOC_ENTRY "cuMemAllocAsync"
#endif

int main(void)
{
    CHECK_CUDA(cudaFree(0));
    unsigned long long allocs_before = simulated_driver_calls("cuMemAlloc_v2");
    unsigned char host[4096];
    for (unsigned i = 0; i < ROUNDS; i++) {
        void *pointer = NULL;
        size_t size = 4096 + (size_t)(i % 50) * 512;
        CHECK_CUDA(cudaMalloc(&pointer, size));
        CHECK_CUDA(cudaMemset(pointer, (int)(i & 0xff), size));
        CHECK_CUDA(cudaMemcpy(host, pointer, sizeof host, cudaMemcpyDeviceToHost));
        CHECK(host[0] == (unsigned char)i && host[sizeof host - 1] == (unsigned char)i,
              "round %u read back %u", i, host[0]);
        CHECK_CUDA(cudaFree(pointer));
    }
    unsigned long long sync_allocs = simulated_driver_calls("cuMemAlloc_v2") - allocs_before;

    unsigned long long async_before = simulated_driver_calls(ASYNC_ALLOC_ENTRY);
    for (unsigned i = 0; i < ROUNDS; i++) {
        void *pointer = NULL;
        CHECK_CUDA(cudaMallocAsync(&pointer, 8192 + (size_t)(i % 7) * 1024, 0));
        CHECK_CUDA(cudaMemsetAsync(pointer, 0x3c, 8192, 0));
        CHECK_CUDA(cudaFreeAsync(pointer, 0));
    }
    CHECK_CUDA(cudaStreamSynchronize(0));
    unsigned long long async_allocs = simulated_driver_calls(ASYNC_ALLOC_ENTRY) - async_before;

    check_driver_allocations(sync_allocs, ROUNDS, "cudaMalloc");
    check_driver_allocations(async_allocs, ROUNDS, "cudaMallocAsync");
    if (simulated_driver_present() && library_is_caching())
        CHECK(async_allocs == 0, "%llu %s calls reached the driver", async_allocs,
              ASYNC_ALLOC_ENTRY);
    printf("%s: %llu driver allocations for %d cudaMalloc, %llu %s for %d cudaMallocAsync\n",
           library_is_loaded() ? "cached" : "native", sync_allocs, ROUNDS, async_allocs,
           ASYNC_ALLOC_ENTRY, ROUNDS);
    return 0;
}
