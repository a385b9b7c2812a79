/* cudaMemGetInfo under the library: bytes the cache holds idle count as
 * free (programs size workspaces from this number), bytes in use do not,
 * and with meminfo:raw the driver's own numbers come back.
 *   memory_info cache   (default configuration)
 *   memory_info raw     (GPUCACHE_ALLOC_CONF=meminfo:raw) */
#include <cuda_runtime_api.h>
#include <string.h>

#include "test_support.h"

#define BLOCK (64u << 20)

int main(int argc, char **argv)
{
    CHECK(argc == 2 && (strcmp(argv[1], "cache") == 0 || strcmp(argv[1], "raw") == 0),
          "usage: memory_info cache|raw");
    bool raw = strcmp(argv[1], "raw") == 0;
    CHECK(library_is_loaded(), "run this under the library");
    size_t free_before, free_in_use, free_after, total;
    CHECK_CUDA(cudaFree(0));
    CHECK_CUDA(cudaMemGetInfo(&free_before, &total));
    size_t physical_before = simulated_physical_bytes(0);

    void *pointer = NULL;
    CHECK_CUDA(cudaMalloc(&pointer, BLOCK));
    CHECK_CUDA(cudaMemGetInfo(&free_in_use, &total));
    CHECK(free_in_use <= free_before - BLOCK, "a live block counted as free: %zu of %zu",
          free_in_use, free_before);
    CHECK_CUDA(cudaFree(pointer));
    CHECK_CUDA(cudaMemGetInfo(&free_after, &total));

    size_t held = simulated_physical_bytes(0) - physical_before;
    CHECK(held >= BLOCK, "the cache gave the segment back (%zu bytes held)", held);
    if (raw)
        CHECK(free_after == free_before - held,
              "meminfo:raw reported %zu free, the driver has %zu", free_after,
              free_before - held);
    else
        CHECK(free_after == free_before, "cached bytes not counted as free: %zu before, %zu after",
              free_before, free_after);
    CHECK(free_after <= total, "free %zu above total %zu", free_after, total);
    return 0;
}
