/* cudaDeviceReset destroys the context and all its memory behind the
 * library's back: the cache of that device must be forgotten (plain
 * segments are never freed a second time), allocations afterwards must work
 * and be cached again, and nothing may leak across resets. Expandable
 * segments' physical handles and reservations belong to the process, not
 * the context, so the library gives them back itself: free memory, and the
 * physical bytes the simulator holds, come back to where they were after
 * every reset. Run plain and with expandable_segments:True. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "test_support.h"

#define MiB ((size_t)1 << 20)
#define RESETS 3

static bool expandable_segments(void)
{
    const char *configuration = getenv("GPUCACHE_ALLOC_CONF");
    return library_is_caching() && configuration &&
           strstr(configuration, "expandable_segments:True");
}

static size_t driver_free_bytes(void)
{
    size_t free_bytes = 0, total_bytes = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    return free_bytes;
}

/* One block kept live, one freed into the cache: the reset must take both. */
static void fill_the_cache(void)
{
    void *kept = NULL;
    CHECK_CUDA(cudaMalloc(&kept, 1 * MiB));
    CHECK_CUDA(cudaMemset(kept, 1, 1 * MiB));
    void *cached = NULL;
    CHECK_CUDA(cudaMalloc(&cached, 30 * MiB));
    CHECK_CUDA(cudaFree(cached));
}

int main(void)
{
    CHECK_CUDA(cudaFree(0));
    size_t free_at_start = driver_free_bytes();
    unsigned long long releases_before = simulated_driver_calls("cuMemRelease");
    unsigned long long address_frees_before = simulated_driver_calls("cuMemAddressFree");
    for (int reset = 1; reset <= RESETS; reset++) {
        fill_the_cache();
        CHECK_CUDA(cudaDeviceReset());
        CHECK_CUDA(cudaFree(0));
        size_t free_now = driver_free_bytes();
        CHECK(free_now == free_at_start,
              "after reset %d, %zu MiB less free memory than at the start", reset,
              (free_at_start - free_now) / MiB);
        CHECK(simulated_physical_bytes(0) == 0,
              "after reset %d the device still holds %zu MiB", reset,
              simulated_physical_bytes(0) / MiB);
    }
    if (expandable_segments()) {
        unsigned long long releases = simulated_driver_calls("cuMemRelease") - releases_before;
        unsigned long long address_frees =
            simulated_driver_calls("cuMemAddressFree") - address_frees_before;
        CHECK(releases >= RESETS, "%llu cuMemRelease calls for %d resets", releases, RESETS);
        CHECK(address_frees >= RESETS, "%llu cuMemAddressFree calls for %d resets",
              address_frees, RESETS);
    }

    unsigned long long frees_before = simulated_driver_calls("cuMemFree_v2");
    unsigned long long allocs_before = simulated_driver_calls("cuMemAlloc_v2");
    for (int i = 0; i < 100; i++) {
        void *pointer = NULL;
        CHECK_CUDA(cudaMalloc(&pointer, 1 << 20));
        unsigned char byte = 0;
        CHECK_CUDA(cudaMemset(pointer, 0x42, 1 << 20));
        CHECK_CUDA(cudaMemcpy(&byte, pointer, 1, cudaMemcpyDeviceToHost));
        CHECK(byte == 0x42, "read back %u after the reset", byte);
        CHECK_CUDA(cudaFree(pointer));
    }
    unsigned long long allocs = simulated_driver_calls("cuMemAlloc_v2") - allocs_before;
    if (library_is_loaded()) {
        CHECK(allocs <= 1, "%llu driver allocations after the reset: not cached", allocs);
        CHECK(simulated_driver_calls("cuMemFree_v2") == frees_before,
              "the library freed memory the reset had already freed");
    }
    CHECK_CUDA(cudaDeviceReset());
    CHECK(simulated_physical_bytes(0) == 0, "the device holds %zu MiB after the last reset",
          simulated_physical_bytes(0) / MiB);
    return 0;
}
