/* Out of memory on a 256 MiB device (GPUSIM_MEMORY=256MiB). Cached free
 * segments are given back before a large request fails (the retry chain);
 * a request larger than the device returns cudaErrorMemoryAllocation and
 * the program goes on allocating normally. */
#include <cuda_runtime_api.h>

#include "test_support.h"

#define MiB (1u << 20)
#define SMALL_BLOCKS 60

int main(void)
{
    CHECK_CUDA(cudaFree(0));
    void *blocks[SMALL_BLOCKS];
    for (int i = 0; i < SMALL_BLOCKS; i++)
        CHECK_CUDA(cudaMalloc(&blocks[i], 3 * MiB));
    for (int i = 0; i < SMALL_BLOCKS; i++)
        CHECK_CUDA(cudaFree(blocks[i]));

    /* The cache now holds about 200 MiB of free segments of another shape:
     * only giving them back makes room for this one. */
    void *large = NULL;
    CHECK_CUDA(cudaMalloc(&large, 200 * MiB));
    CHECK_CUDA(cudaMemset(large, 7, 200 * MiB));
    CHECK_CUDA(cudaFree(large));

    void *too_large = NULL;
    cudaError_t result = cudaMalloc(&too_large, 1024 * MiB);
    CHECK(result == cudaErrorMemoryAllocation, "1 GiB on a 256 MiB device returned %d",
          (int)result);
    CHECK(cudaGetLastError() == cudaErrorMemoryAllocation, "the error was not recorded");
    CHECK(cudaGetLastError() == cudaSuccess, "the error was not cleared");

    result = cudaMallocAsync(&too_large, 1024 * MiB, 0);
    CHECK(result == cudaErrorMemoryAllocation, "async 1 GiB returned %d", (int)result);
    (void)cudaGetLastError();

    void *after = NULL;
    CHECK_CUDA(cudaMalloc(&after, 16 * MiB));
    unsigned char byte = 0;
    CHECK_CUDA(cudaMemset(after, 0x5a, 16 * MiB));
    CHECK_CUDA(cudaMemcpy(&byte, (char *)after + 16 * MiB - 1, 1, cudaMemcpyDeviceToHost));
    CHECK(byte == 0x5a, "read back %u", byte);
    CHECK_CUDA(cudaFree(after));
    return 0;
}
