/* Allocation patterns whose outcome depends on one configuration key each.
 * check_configuration_keys.py runs a pattern with and without its key and
 * compares what this program prints: "name=value" lines (counts of driver
 * calls, physical MiB held by the simulator, free MiB, error codes).
 * usage: configuration_probe PATTERN */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <string.h>

#include "test_support.h"

#define MiB ((size_t)1 << 20)

static unsigned long long calls_at_start[8];
static const char *const counted_calls[] = {
    "cuMemAlloc_v2",   "cuMemFree_v2",        "cuMemCreate",   "cuMemAddressReserve",
    "cuMemAllocAsync", "cuCtxSynchronize",    "cuEventRecord", "cuMemRelease",
};
#define COUNTED (sizeof counted_calls / sizeof counted_calls[0])

static void start_counting(void)
{
    for (size_t i = 0; i < COUNTED; i++)
        calls_at_start[i] = simulated_driver_calls(counted_calls[i]);
}

static void print_counts(void)
{
    for (size_t i = 0; i < COUNTED; i++)
        printf("%s=%llu\n", counted_calls[i],
               simulated_driver_calls(counted_calls[i]) - calls_at_start[i]);
    printf("physical_mib=%zu\n", simulated_physical_bytes(0) / MiB);
}

static void *allocate(size_t bytes)
{
    void *pointer = NULL;
    CHECK_CUDA(cudaMalloc(&pointer, bytes));
    return pointer;
}

static void *allocate_on(size_t bytes, cudaStream_t stream)
{
    void *pointer = NULL;
    CHECK_CUDA(cudaMallocAsync(&pointer, bytes, stream));
    return pointer;
}

/* 100 MiB blocks until the device (or the memory fraction) says no. */
static void fill(void)
{
    void *blocks[64];
    int count = 0;
    cudaError_t error = cudaSuccess;
    while (count < 64 && (error = cudaMalloc(&blocks[count], 100 * MiB)) == cudaSuccess)
        count++;
    (void)cudaGetLastError();
    printf("blocks=%d\nerror=%d\n", count, (int)error);
    for (int i = 0; i < count; i++)
        CHECK_CUDA(cudaFree(blocks[i]));
}

/* A cached 100 MiB block, then a smaller request: split, or a new segment. */
static void reuse_cached(size_t second_mib)
{
    CHECK_CUDA(cudaFree(allocate(100 * MiB)));
    start_counting();
    CHECK_CUDA(cudaFree(allocate(second_mib * MiB)));
}

/* Five cached 100 MiB blocks, then 600 MiB: under a 1 GiB cap the cache
 * must give them back first, which throw_on_cudamalloc_oom forbids. */
static void over_the_cap(void)
{
    void *blocks[5];
    for (int i = 0; i < 5; i++)
        blocks[i] = allocate(100 * MiB);
    for (int i = 0; i < 5; i++)
        CHECK_CUDA(cudaFree(blocks[i]));
    void *large = NULL;
    cudaError_t error = cudaMalloc(&large, 600 * MiB);
    (void)cudaGetLastError();
    printf("error=%d\n", (int)error);
    if (error == cudaSuccess)
        CHECK_CUDA(cudaFree(large));
}

/* Stream 1: [live 20][idle free 300], then a miss on stream 2: garbage
 * collection gives the idle tail back. */
static void collect_tail(void)
{
    cudaStream_t first, second;
    CHECK_CUDA(cudaStreamCreate(&first));
    CHECK_CUDA(cudaStreamCreate(&second));
    allocate_on(20 * MiB, first);
    void *middle = allocate_on(300 * MiB, first);
    CHECK_CUDA(cudaFreeAsync(middle, first));
    CHECK_CUDA(cudaDeviceSynchronize());
    allocate_on(320 * MiB, second);
    CHECK_CUDA(cudaDeviceSynchronize());
}

/* One synchronous free and a request of the same size: reused after an
 * event fence (async), a context synchronize (conservative) or at once. */
static void free_then_reuse(void)
{
    void *first = allocate(10 * MiB);
    CHECK_CUDA(cudaMemset(first, 1, 10 * MiB));
    start_counting();
    CHECK_CUDA(cudaFree(first));
    void *second = allocate(10 * MiB);
    printf("reused=%d\n", second == first);
}

static void report_free_memory(void)
{
    CHECK_CUDA(cudaFree(allocate(100 * MiB)));
    size_t free_bytes = 0, total_bytes = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    printf("missing_mib=%zu\n", (total_bytes - free_bytes) / MiB);
}

static volatile sig_atomic_t own_handler_calls;

static void own_handler(int signal_number)
{
    (void)signal_number;
    own_handler_calls++;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2, "usage: configuration_probe PATTERN");
    const char *pattern = argv[1];
    CHECK_CUDA(cudaFree(0));
    start_counting();
    if (strcmp(pattern, "fill") == 0)
        fill();
    else if (strcmp(pattern, "one") == 0)
        CHECK_CUDA(cudaFree(allocate(30 * MiB)));
    else if (strcmp(pattern, "keep_three") == 0)
        allocate(3 * MiB);
    else if (strcmp(pattern, "keep_1100") == 0)
        allocate(1100 * MiB);
    else if (strcmp(pattern, "split") == 0)
        reuse_cached(30);
    else if (strcmp(pattern, "unsplit_rounding") == 0)
        reuse_cached(70);
    else if (strcmp(pattern, "over_the_cap") == 0)
        over_the_cap();
    else if (strcmp(pattern, "collect_tail") == 0)
        collect_tail();
    else if (strcmp(pattern, "size_classes") == 0) {
        allocate(30 * MiB);
        allocate(300 * MiB);
    } else if (strcmp(pattern, "stitch") == 0) {
        /* [40 | 40], the first freed, then 60 MiB: stitching moves the freed
         * handles to the growth, so 20 MiB are created instead of 60. */
        void *first = allocate(40 * MiB);
        allocate(40 * MiB);
        CHECK_CUDA(cudaFree(first));
        /* The free's fence may complete late on a loaded machine: after the
         * synchronize its handles are idle whatever the timing. */
        CHECK_CUDA(cudaDeviceSynchronize());
        allocate(60 * MiB);
    } else if (strcmp(pattern, "sixty") == 0) {
        CHECK_CUDA(cudaFree(allocate(60 * MiB)));
    } else if (strcmp(pattern, "keep_600") == 0) {
        void *large = NULL;
        cudaError_t error = cudaMalloc(&large, 600 * MiB);
        (void)cudaGetLastError();
        printf("error=%d\n", (int)error);
    } else if (strcmp(pattern, "pairs") == 0) {
        for (int i = 0; i < 100; i++)
            CHECK_CUDA(cudaFree(allocate(MiB)));
    } else if (strcmp(pattern, "free_then_reuse") == 0)
        free_then_reuse();
    else if (strcmp(pattern, "memory_info") == 0)
        report_free_memory();
    else if (strcmp(pattern, "signal") == 0) {
        /* The snapshot is written at the next call into CUDA after it. */
        signal(SIGUSR1, own_handler);
        void *block = allocate(5 * MiB);
        raise(SIGUSR1);
        CHECK_CUDA(cudaFree(block));
        printf("own_handler_calls=%d\n", (int)own_handler_calls);
    } else
        CHECK(false, "unknown pattern %s", pattern);
    print_counts();
    return 0;
}
