/* Out of memory on a 256 MiB device (GPUSIM_MEMORY=256MiB), for the
 * oom_message line (check_oom_message.sh reads stderr):
 *   oom_message fill    8 MiB blocks until the first failure
 *   oom_message holes   the same, then every other block freed and one
 *                       16 MiB request, which the holes cannot hold
 * Prints ooms=N: the failures the program saw, each of which must have
 * returned cudaErrorMemoryAllocation. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "test_support.h"

#define MiB (1u << 20)
#define MAX_BLOCKS 64

int main(int argc, char **argv)
{
    CHECK(argc == 2 && (!strcmp(argv[1], "fill") || !strcmp(argv[1], "holes")),
          "usage: oom_message fill|holes");
    void *blocks[MAX_BLOCKS];
    int count = 0, ooms = 0;
    cudaError_t error = cudaSuccess;
    while (count < MAX_BLOCKS && (error = cudaMalloc(&blocks[count], 8 * MiB)) == cudaSuccess)
        count++;
    CHECK(error == cudaErrorMemoryAllocation, "filling the device ended with %d", (int)error);
    CHECK(cudaGetLastError() == cudaErrorMemoryAllocation, "the error is not the last error");
    ooms++;
    if (!strcmp(argv[1], "holes")) {
        for (int i = 0; i < count; i += 2)
            CHECK_CUDA(cudaFree(blocks[i]));
        void *large = NULL;
        error = cudaMalloc(&large, 16 * MiB);
        if (error == cudaSuccess)
            CHECK_CUDA(cudaFree(large));
        else {
            CHECK(error == cudaErrorMemoryAllocation, "16 MiB returned %d", (int)error);
            (void)cudaGetLastError();
            ooms++;
        }
        for (int i = 1; i < count; i += 2)
            CHECK_CUDA(cudaFree(blocks[i]));
    } else {
        for (int i = 0; i < count; i++)
            CHECK_CUDA(cudaFree(blocks[i]));
    }
    printf("ooms=%d\n", ooms);
    return 0;
}
