/* 10 000 cudaMalloc/cudaFree pairs of mixed sizes (512 B to 8 MiB). Run
 * natively and under the library with GPUSIM_STATS set, the two counts of
 * cuMemAlloc_v2 in the simulator's statistics measure what caching saves. */
#include <cuda_runtime_api.h>

#include "test_support.h"

#define PAIRS 10000

int main(void)
{
    unsigned state = 777;
    for (unsigned i = 0; i < PAIRS; i++) {
        void *pointer = NULL;
        size_t size = 512u << (next_random(&state) % 15); /* 512 B .. 8 MiB */
        size += next_random(&state) % size;
        CHECK_CUDA(cudaMalloc(&pointer, size));
        CHECK_CUDA(cudaFree(pointer));
    }
    return 0;
}
