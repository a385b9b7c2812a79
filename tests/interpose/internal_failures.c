/* A driver call the library makes on its own (GPUSIM_FAIL injects its
 * failure: cuMemGetInfo, cuMemGetAllocationGranularity, cuMemSetAccess)
 * never reaches the program as an error of a call it did not make. A
 * single failure is retried and the program's cudaMalloc succeeds, as it
 * does natively; a failure that persists makes it fail with
 * cudaErrorMemoryAllocation, and the program goes on.
 * usage: internal_failures once|always */
#include <cuda_runtime_api.h>
#include <string.h>

#include "test_support.h"

#define MiB ((size_t)1 << 20)

int main(int argc, char **argv)
{
    CHECK(argc == 2, "usage: internal_failures once|always");
    bool always = strcmp(argv[1], "always") == 0;
    CHECK_CUDA(cudaFree(0));
    void *block = NULL;
    cudaError_t result = cudaMalloc(&block, 30 * MiB);
    if (always) {
        CHECK(result == cudaErrorMemoryAllocation,
              "a persistent internal failure gave %d, not cudaErrorMemoryAllocation",
              (int)result);
        CHECK(cudaGetLastError() == cudaErrorMemoryAllocation, "the error was not recorded");
        return 0;
    }
    CHECK(result == cudaSuccess, "one internal failure made cudaMalloc return %d", (int)result);
    unsigned char byte = 0;
    CHECK_CUDA(cudaMemset(block, 0x3c, 30 * MiB));
    CHECK_CUDA(cudaMemcpy(&byte, (char *)block + 30 * MiB - 1, 1, cudaMemcpyDeviceToHost));
    CHECK(byte == 0x3c, "read back %u", byte);
    void *second = NULL;
    CHECK_CUDA(cudaMalloc(&second, 50 * MiB));
    CHECK_CUDA(cudaFree(second));
    CHECK_CUDA(cudaFree(block));
    return 0;
}
