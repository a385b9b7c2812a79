/* cudaIpcGetMemHandle under the library. A large block is a whole plain
 * segment: it exports, and its segment is pinned, so a later allocation
 * never gets that memory again while a peer may have it mapped. A small
 * block sits inside a shared segment: exporting it fails with
 * cudaErrorInvalidValue (and one line on stderr), because the peer would map
 * the whole segment, not the block. */
#include <cuda_runtime_api.h>

#include "test_support.h"

#define LARGE (64u << 20)

int main(void)
{
    CHECK(library_is_loaded(), "run this under the library");
    void *large = NULL;
    CHECK_CUDA(cudaMalloc(&large, LARGE));
    cudaIpcMemHandle_t handle;
    CHECK_CUDA(cudaIpcGetMemHandle(&handle, large));

    /* Two small blocks share one segment: the second is not its base. */
    void *first_small = NULL, *small = NULL;
    CHECK_CUDA(cudaMalloc(&first_small, 4096));
    CHECK_CUDA(cudaMalloc(&small, 4096));
    CHECK((char *)small > (char *)first_small, "the second small block is below the first");
    cudaError_t result = cudaIpcGetMemHandle(&handle, small);
    CHECK(result == cudaErrorInvalidValue, "exporting an interior block returned %d",
          (int)result);
    (void)cudaGetLastError();

    CHECK_CUDA(cudaFree(large));
    void *again = NULL;
    CHECK_CUDA(cudaMalloc(&again, LARGE));
    CHECK(again != large, "the exported (pinned) segment was handed out again");
    CHECK_CUDA(cudaFree(again));
    CHECK_CUDA(cudaFree(small));
    CHECK_CUDA(cudaFree(first_small));
    return 0;
}
