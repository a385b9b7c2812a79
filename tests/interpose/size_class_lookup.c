/* A cache lookup never grows memory (expandable segments with size
 * classes): a 4 MiB request finds nothing free in its class but a large
 * class's free 100 MiB slot, while its own class's block waits in an epoch
 * of synchronous frees. The miss chain must take that block after the
 * epoch's fence instead of mapping new memory first, as a lookup that grew
 * the class did. Run with
 *   GPUCACHE_ALLOC_CONF=expandable_segments:True,expandable_segments_size_class_mb:50 */
#include <cuda_runtime_api.h>

#include "test_support.h"

#define MiB ((size_t)1 << 20)

int main(void)
{
    CHECK(library_is_caching(), "run this under the caching library");
    void *small = NULL, *filler = NULL, *slot = NULL, *neighbour = NULL, *again = NULL;
    CHECK_CUDA(cudaMalloc(&small, 4 * MiB));
    CHECK_CUDA(cudaMalloc(&filler, 16 * MiB)); /* the small class's first growth is full */
    CHECK_CUDA(cudaMalloc(&slot, 100 * MiB));
    CHECK_CUDA(cudaMalloc(&neighbour, 100 * MiB));
    CHECK_CUDA(cudaFree(slot));
    CHECK_CUDA(cudaDeviceSynchronize()); /* the slot is free and cleared */
    CHECK_CUDA(cudaFree(small));         /* pending until its epoch's fence */
    unsigned long long creates = simulated_driver_calls("cuMemCreate");
    CHECK_CUDA(cudaMalloc(&again, 4 * MiB));
    CHECK(simulated_driver_calls("cuMemCreate") == creates,
          "the lookup mapped new memory before the miss chain waited for the free");
    CHECK(again == small, "the freed block of the request's class did not serve it (%p, %p)",
          small, again);
    printf("the 4 MiB request took its class's freed block; nothing was mapped\n");
    CHECK_CUDA(cudaFree(again));
    CHECK_CUDA(cudaFree(filler));
    CHECK_CUDA(cudaFree(neighbour));
    return 0;
}
