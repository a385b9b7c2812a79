/* The two A/B modes:
 *   alternative_backends driver-pool   (backend:cudaMallocAsync) every
 *       cudaMalloc becomes a cuMemAllocAsync on the driver's default pool,
 *       cudaFree a stream-ordered free after the work of every stream: no
 *       cuMemAlloc_v2 reaches the driver, the data stays intact, and the
 *       reuse hazard stays closed.
 *   alternative_backends count-only    (passthrough:True) every call goes
 *       to the driver unchanged and the library only counts them. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "gpucache_stats.h"
#include "test_support.h"

#define ROUNDS 100
#define BLOCK (1u << 20)

static void CUDART_CB delay_stream(void *unused)
{
    (void)unused;
    usleep(100000);
}

static void allocate_and_check(void)
{
    unsigned char *host = malloc(BLOCK);
    CHECK(host != NULL, "no host memory");
    for (unsigned i = 0; i < ROUNDS; i++) {
        void *pointer = NULL;
        CHECK_CUDA(cudaMalloc(&pointer, BLOCK));
        CHECK_CUDA(cudaMemset(pointer, (int)(i & 0xff), BLOCK));
        CHECK_CUDA(cudaMemcpy(host, pointer, BLOCK, cudaMemcpyDeviceToHost));
        CHECK(host[0] == (unsigned char)i && host[BLOCK - 1] == (unsigned char)i,
              "round %u read back %u", i, host[0]);
        CHECK_CUDA(cudaFree(pointer));
    }
    free(host);
}

/* A late write on a non-blocking stream into a freed block must not reach
 * the block's next owner (see reuse_hazard.c). */
static void late_write_stays_out(void)
{
    cudaStream_t late;
    CHECK_CUDA(cudaStreamCreateWithFlags(&late, cudaStreamNonBlocking));
    void *first = NULL, *second = NULL;
    CHECK_CUDA(cudaMalloc(&first, BLOCK));
    CHECK_CUDA(cudaLaunchHostFunc(late, delay_stream, NULL));
    CHECK_CUDA(cudaMemsetAsync(first, 0xAA, BLOCK, late));
    CHECK_CUDA(cudaFree(first));
    CHECK_CUDA(cudaMalloc(&second, BLOCK));
    CHECK_CUDA(cudaMemset(second, 0x55, BLOCK));
    CHECK_CUDA(cudaDeviceSynchronize());
    unsigned char *host = malloc(BLOCK);
    CHECK(host != NULL, "no host memory");
    CHECK_CUDA(cudaMemcpy(host, second, BLOCK, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < BLOCK; i++)
        CHECK(host[i] == 0x55, "byte %zu is %u: the late write reached the new owner", i,
              host[i]);
    free(host);
    CHECK_CUDA(cudaFree(second));
    CHECK_CUDA(cudaStreamDestroy(late));
}

int main(int argc, char **argv)
{
    CHECK(argc == 2 && (strcmp(argv[1], "driver-pool") == 0 || strcmp(argv[1], "count-only") == 0),
          "usage: alternative_backends driver-pool|count-only");
    CHECK(library_is_loaded(), "run this under the library");
    bool driver_pool = strcmp(argv[1], "driver-pool") == 0;
    CHECK_CUDA(cudaFree(0));
    unsigned long long plain_before = simulated_driver_calls("cuMemAlloc_v2");
    unsigned long long pool_before = simulated_driver_calls("cuMemAllocAsync");
    allocate_and_check();
    unsigned long long plain = simulated_driver_calls("cuMemAlloc_v2") - plain_before;
    unsigned long long pool = simulated_driver_calls("cuMemAllocAsync") - pool_before;
    if (driver_pool) {
        CHECK(plain == 0 && pool == ROUNDS, "%llu cuMemAlloc_v2 and %llu cuMemAllocAsync calls",
              plain, pool);
        late_write_stays_out();
    } else {
        CHECK(plain == ROUNDS && pool == 0, "%llu cuMemAlloc_v2 and %llu cuMemAllocAsync calls",
              plain, pool);
    }
    int (*device_stats)(int, struct gpucache_stats *) =
        (int (*)(int, struct gpucache_stats *))dlsym(RTLD_DEFAULT, "gpucache_device_stats");
    CHECK(device_stats != NULL, "gpucache_device_stats is not exported");
    struct gpucache_stats stats;
    CHECK(device_stats(0, &stats) == 0, "no statistics for device 0");
    CHECK(stats.num_device_alloc >= ROUNDS, "%lld allocations counted",
          (long long)stats.num_device_alloc);
    CHECK(stats.allocated_bytes[GPUCACHE_STAT_ALL].current == 0,
          "%lld bytes still counted as allocated",
          (long long)stats.allocated_bytes[GPUCACHE_STAT_ALL].current);
    CHECK(stats.allocated_bytes[GPUCACHE_STAT_ALL].peak >= BLOCK, "peak %lld",
          (long long)stats.allocated_bytes[GPUCACHE_STAT_ALL].peak);
    return 0;
}
