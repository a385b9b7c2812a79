/* Stream capture under the library. Allocations and frees on a capturing
 * stream must stay graph memory nodes (they reach the driver, never the
 * cache), and the library must add nothing to the program's graph: a
 * synchronous free of a cached block during the capture records no event on
 * any stream, so the capture still ends cleanly. */
#include <cuda_runtime_api.h>

#include "test_support.h"

int main(void)
{
    CHECK(library_is_loaded(), "run this under the library");
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    void *cached[64];
    for (int i = 0; i < 64; i++)
        CHECK_CUDA(cudaMalloc(&cached[i], 4096));

    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
    unsigned long long async_before = simulated_driver_calls("cuMemAllocAsync");
    unsigned long long free_async_before = simulated_driver_calls("cuMemFreeAsync");
    void *graph_memory = NULL;
    CHECK_CUDA(cudaMallocAsync(&graph_memory, 1 << 20, stream));
    CHECK_CUDA(cudaFreeAsync(graph_memory, stream));
    CHECK(simulated_driver_calls("cuMemAllocAsync") == async_before + 1,
          "the captured allocation did not reach the driver");
    CHECK(simulated_driver_calls("cuMemFreeAsync") == free_async_before + 1,
          "the captured free did not reach the driver");
    /* Enough synchronous frees to close an epoch: no event may be recorded
     * while the capture is active. */
    unsigned long long records_before = simulated_driver_calls("cuEventRecord");
    for (int i = 0; i < 64; i++)
        CHECK_CUDA(cudaFree(cached[i]));
    CHECK(simulated_driver_calls("cuEventRecord") == records_before,
          "an event was recorded during the capture");
    cudaGraph_t graph;
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphDestroy(graph));

    /* The same frees outside a capture do close an epoch with events. */
    for (int i = 0; i < 64; i++)
        CHECK_CUDA(cudaMalloc(&cached[i], 4096));
    records_before = simulated_driver_calls("cuEventRecord");
    for (int i = 0; i < 64; i++)
        CHECK_CUDA(cudaFree(cached[i]));
    CHECK(simulated_driver_calls("cuEventRecord") > records_before,
          "64 frees outside a capture recorded no event: the check above proves nothing");
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaStreamDestroy(stream));
    return 0;
}
