/* Cache-hit malloc + free pairs, side by side: CUB's CachingDeviceAllocator
 * (the header the toolkit ships) against the stream-ordered runtime calls,
 * which gpucache serves when it is preloaded. Built by nvcc with -cudart
 * shared, so it runs on the simulated runtime as a real NVIDIA client would.
 *
 *   cub_pairs cub|runtime [batches]
 *
 * Prints "pair_ns=" (the median over batches of 1000 pairs, after a warm-up)
 * and "pairs=". The timed loops are run_cub_pairs and run_runtime_pairs
 * alone, so that callgrind can count them:
 *   valgrind --tool=callgrind --collect-atstart=no \
 *       --toggle-collect='run_cub_pairs*' cub_pairs cub 20 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include <cub/util_allocator.cuh>

static const int kPairsPerBatch = 1000;
static const size_t kBytes = 1 << 20;

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t checked = (call);                                                \
        if (checked != cudaSuccess) {                                                \
            std::fprintf(stderr, "cub_pairs: %s failed: %s\n", #call,                \
                         cudaGetErrorString(checked));                               \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

static long long now_ns()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((noinline)) void run_cub_pairs(cub::CachingDeviceAllocator &cache,
                                             cudaStream_t stream, int pairs)
{
    for (int i = 0; i < pairs; i++) {
        void *pointer = nullptr;
        CHECK(cache.DeviceAllocate(&pointer, kBytes, stream));
        CHECK(cache.DeviceFree(pointer));
    }
}

__attribute__((noinline)) void run_runtime_pairs(cudaStream_t stream, int pairs)
{
    for (int i = 0; i < pairs; i++) {
        void *pointer = nullptr;
        CHECK(cudaMallocAsync(&pointer, kBytes, stream));
        CHECK(cudaFreeAsync(pointer, stream));
    }
}

int main(int argc, char **argv)
{
    bool use_cub = argc >= 2 && std::strcmp(argv[1], "cub") == 0;
    bool use_runtime = argc >= 2 && std::strcmp(argv[1], "runtime") == 0;
    int batches = argc >= 3 ? std::atoi(argv[2]) : 201;
    if ((!use_cub && !use_runtime) || batches < 1) {
        std::fprintf(stderr, "usage: cub_pairs cub|runtime [batches]\n");
        return 2;
    }
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cub::CachingDeviceAllocator cache;
    std::vector<double> batch_ns;
    for (int batch = -1; batch < batches; batch++) { /* batch -1 warms up */
        long long started = now_ns();
        if (use_cub)
            run_cub_pairs(cache, stream, kPairsPerBatch);
        else
            run_runtime_pairs(stream, kPairsPerBatch);
        if (batch >= 0)
            batch_ns.push_back((double)(now_ns() - started) / kPairsPerBatch);
    }
    std::sort(batch_ns.begin(), batch_ns.end());
    std::printf("pair_ns=%.1f\npairs=%lld\n", batch_ns[batch_ns.size() / 2],
                (long long)(batches + 1) * kPairsPerBatch);
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaStreamDestroy(stream));
    return 0;
}
