/* A synchronize the program makes anyway proves that all work issued before
 * it has finished: blocks freed before it become reusable at no cost. On a
 * device with room for one 16 MiB block (GPUSIM_MEMORY=24MiB), the next
 * allocation after the program's own synchronize must reuse the freed block
 * without any fence wait or synchronize of the library's.
 *   program_synchronize device   cudaFree, then cudaDeviceSynchronize
 *   program_synchronize stream   cudaFreeAsync on the legacy stream, then
 *                                cudaStreamSynchronize(0). A legacy-stream
 *                                sync proves nothing about blocking streams'
 *                                later work, so it clears only what was
 *                                freed on the legacy stream itself. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <string.h>

#include "gpucache_stats.h"
#include "test_support.h"

#define BLOCK (16u << 20)

static struct gpucache_stats device_stats(void)
{
    int (*stats_of)(int, struct gpucache_stats *) =
        (int (*)(int, struct gpucache_stats *))dlsym(RTLD_DEFAULT, "gpucache_device_stats");
    CHECK(stats_of != NULL, "gpucache_device_stats is not exported");
    struct gpucache_stats stats;
    CHECK(stats_of(0, &stats) == 0, "no statistics for device 0");
    return stats;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2 && (strcmp(argv[1], "device") == 0 || strcmp(argv[1], "stream") == 0),
          "usage: program_synchronize device|stream");
    CHECK(library_is_caching(), "run this under the caching library");
    void *first = NULL, *second = NULL;
    CHECK_CUDA(cudaMalloc(&first, BLOCK));
    CHECK_CUDA(cudaMemset(first, 1, BLOCK));
    if (strcmp(argv[1], "device") == 0) {
        CHECK_CUDA(cudaFree(first));
        CHECK_CUDA(cudaDeviceSynchronize());
    } else {
        CHECK_CUDA(cudaFreeAsync(first, 0));
        CHECK_CUDA(cudaStreamSynchronize(0));
    }
    struct gpucache_stats before = device_stats();
    CHECK_CUDA(cudaMalloc(&second, BLOCK));
    struct gpucache_stats after = device_stats();
    CHECK(second == first, "the freed block was not reused (%p, then %p)", first, second);
    CHECK(after.num_fence_waits == before.num_fence_waits,
          "the library waited on a fence after the program's own synchronize");
    CHECK(after.num_device_synchronizations == before.num_device_synchronizations,
          "the library synchronized after the program's own synchronize");
    CHECK_CUDA(cudaFree(second));
    return 0;
}
