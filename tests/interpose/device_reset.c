/* cudaDeviceReset destroys the context and all its memory behind the
 * library's back: the cache of that device must be forgotten (never freed a
 * second time), and allocations afterwards must work and be cached again. */
#include <cuda_runtime_api.h>

#include "test_support.h"

int main(void)
{
    void *before_reset = NULL;
    CHECK_CUDA(cudaMalloc(&before_reset, 1 << 20));
    CHECK_CUDA(cudaMemset(before_reset, 1, 1 << 20));
    void *cached = NULL;
    CHECK_CUDA(cudaMalloc(&cached, 3 << 20));
    CHECK_CUDA(cudaFree(cached));

    CHECK_CUDA(cudaDeviceReset());

    unsigned long long frees_before = simulated_driver_calls("cuMemFree_v2");
    unsigned long long allocs_before = simulated_driver_calls("cuMemAlloc_v2");
    for (int i = 0; i < 100; i++) {
        void *pointer = NULL;
        CHECK_CUDA(cudaMalloc(&pointer, 1 << 20));
        unsigned char byte = 0;
        CHECK_CUDA(cudaMemset(pointer, 0x42, 1 << 20));
        CHECK_CUDA(cudaMemcpy(&byte, pointer, 1, cudaMemcpyDeviceToHost));
        CHECK(byte == 0x42, "read back %u after the reset", byte);
        CHECK_CUDA(cudaFree(pointer));
    }
    unsigned long long allocs = simulated_driver_calls("cuMemAlloc_v2") - allocs_before;
    if (library_is_loaded()) {
        CHECK(allocs <= 1, "%llu driver allocations after the reset: not cached", allocs);
        CHECK(simulated_driver_calls("cuMemFree_v2") == frees_before,
              "the library freed memory the reset had already freed");
    }
    CHECK_CUDA(cudaDeviceReset());
    return 0;
}
