/* cudaFreeAsync of memory from cudaMalloc: the driver places no restriction
 * on the memory cuMemFreeAsync frees (cuda.h lists none, unlike cuMemFree,
 * outside stream capture), so it succeeds, natively and under the library;
 * the work queued before it still sees the memory, a second free is
 * cudaErrorInvalidValue, and the memory is given back (natively) or
 * reusable (cached). */
#include <cuda_runtime_api.h>

#include "test_support.h"

#define MiB ((size_t)1 << 20)

int main(void)
{
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    size_t physical_before = simulated_physical_bytes(0);
    unsigned char *block = NULL;
    CHECK_CUDA(cudaMalloc((void **)&block, 8 * MiB));
    unsigned char byte = 0;
    CHECK_CUDA(cudaMemsetAsync(block, 0x6b, 8 * MiB, stream));
    CHECK_CUDA(cudaMemcpyAsync(&byte, block + 8 * MiB - 1, 1, cudaMemcpyDeviceToHost, stream));
    cudaError_t result = cudaFreeAsync(block, stream);
    CHECK(result == cudaSuccess, "cudaFreeAsync of cudaMalloc memory returned %d", (int)result);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK(byte == 0x6b, "the work before the free read %u", byte);

    result = cudaFreeAsync(block, stream);
    CHECK(result == cudaErrorInvalidValue, "a second cudaFreeAsync returned %d", (int)result);
    (void)cudaGetLastError();
    if (!library_is_caching())
        CHECK(simulated_physical_bytes(0) == physical_before,
              "the freed memory was not given back");

    unsigned char *again = NULL;
    CHECK_CUDA(cudaMalloc((void **)&again, 8 * MiB));
    CHECK_CUDA(cudaMemset(again, 1, 8 * MiB));
    CHECK_CUDA(cudaFree(again));
    CHECK_CUDA(cudaStreamDestroy(stream));
    return 0;
}
