// Stream-ordered allocation: two streams each allocate buffers of varying
// sizes with cudaMallocAsync, fill and check them with kernels, and free
// them with cudaFreeAsync, round after round, from the device's default
// pool (whose release threshold is raised so freed memory stays cached)
// and from an explicitly created pool (cudaMallocFromPoolAsync). Pools are
// trimmed at the end. Every buffer's contents are checked on the device and
// a sample of them on the host.
#include <cstdint>
#include <vector>

#include "sample_check.h"

__global__ void fill(unsigned *data, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        data[i] = seed * 2654435761u + (unsigned)i;
}

// Counts the elements that differ from what fill wrote, and copies the
// first and last elements out for the host to check.
__global__ void verify(const unsigned *data, size_t n, unsigned seed, unsigned *wrong, unsigned *ends)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        if (data[i] != seed * 2654435761u + (unsigned)i)
            atomicAdd(wrong, 1u);
        if (i == 0)
            ends[0] = data[i];
        if (i == n - 1)
            ends[1] = data[i];
    }
}

int main()
{
    const int streams_count = 2, rounds = 6;
    cudaStream_t streams[streams_count];
    for (int s = 0; s < streams_count; s++)
        CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));

    int device = 0;
    CHECK(cudaGetDevice(&device));
    cudaMemPool_t default_pool;
    CHECK(cudaDeviceGetDefaultMemPool(&default_pool, device));
    unsigned long long threshold = 64ull << 20, read_back = 0;
    CHECK(cudaMemPoolSetAttribute(default_pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    CHECK(cudaMemPoolGetAttribute(default_pool, cudaMemPoolAttrReleaseThreshold, &read_back));
    bool threshold_right = read_back == threshold;

    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t own_pool;
    CHECK(cudaMemPoolCreate(&own_pool, &props));
    unsigned long long own_threshold = 8ull << 20, own_read_back = 0;
    CHECK(cudaMemPoolSetAttribute(own_pool, cudaMemPoolAttrReleaseThreshold, &own_threshold));
    CHECK(cudaMemPoolGetAttribute(own_pool, cudaMemPoolAttrReleaseThreshold, &own_read_back));
    threshold_right = threshold_right && own_read_back == own_threshold;

    // Per stream and round: the wrong count and the two end values.
    unsigned *results;
    CHECK(cudaMallocHost(&results, streams_count * rounds * 2 * 3 * sizeof(unsigned)));
    unsigned *device_results;
    CHECK(cudaMalloc(&device_results, streams_count * rounds * 2 * 3 * sizeof(unsigned)));
    CHECK(cudaMemset(device_results, 0, streams_count * rounds * 2 * 3 * sizeof(unsigned)));
    CHECK(cudaDeviceSynchronize());

    const size_t sizes[] = { 1000, 1 << 16, 3 << 14, 250000, 17, 1 << 20 };
    const int kinds = sizeof sizes / sizeof sizes[0];
    for (int round = 0; round < rounds; round++)
        for (int s = 0; s < streams_count; s++)
            for (int from_own = 0; from_own < 2; from_own++) {
                size_t n = sizes[(round + 2 * s + from_own) % kinds] + (size_t)round * 13;
                unsigned seed = (unsigned)(round * 10 + s * 2 + from_own + 1);
                unsigned *buffer;
                if (from_own)
                    CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void **>(&buffer), n * sizeof(unsigned),
                                                  own_pool, streams[s]));
                else
                    CHECK(cudaMallocAsync(&buffer, n * sizeof(unsigned), streams[s]));
                int blocks = (int)((n + 255) / 256 < 64 ? (n + 255) / 256 : 64);
                unsigned *slot = device_results + ((round * streams_count + s) * 2 + from_own) * 3;
                fill<<<blocks, 256, 0, streams[s]>>>(buffer, n, seed);
                verify<<<blocks, 256, 0, streams[s]>>>(buffer, n, seed, slot, slot + 1);
                CHECK(cudaGetLastError());
                CHECK(cudaFreeAsync(buffer, streams[s]));
            }
    for (int s = 0; s < streams_count; s++)
        CHECK(cudaStreamSynchronize(streams[s]));
    CHECK(cudaMemcpy(results, device_results, streams_count * rounds * 2 * 3 * sizeof(unsigned),
                     cudaMemcpyDeviceToHost));

    int wrong = 0;
    for (int round = 0; round < rounds; round++)
        for (int s = 0; s < streams_count; s++)
            for (int from_own = 0; from_own < 2; from_own++) {
                size_t n = sizes[(round + 2 * s + from_own) % kinds] + (size_t)round * 13;
                unsigned seed = (unsigned)(round * 10 + s * 2 + from_own + 1);
                const unsigned *slot = results + ((round * streams_count + s) * 2 + from_own) * 3;
                if (slot[0] != 0 || slot[1] != seed * 2654435761u ||
                    slot[2] != seed * 2654435761u + (unsigned)(n - 1))
                    wrong++;
            }

    CHECK(cudaMemPoolTrimTo(default_pool, 0));
    CHECK(cudaMemPoolTrimTo(own_pool, 0));
    CHECK(cudaMemPoolDestroy(own_pool));
    CHECK(cudaFree(device_results));
    CHECK(cudaFreeHost(results));
    for (int s = 0; s < streams_count; s++)
        CHECK(cudaStreamDestroy(streams[s]));
    if (wrong || !threshold_right) {
        std::printf("memory_pools: %d buffers wrong, release thresholds %s\n", wrong,
                    threshold_right ? "kept" : "lost");
        return 1;
    }
    std::printf("memory_pools: %d stream-ordered buffers on %d streams from 2 pools correct\n",
                rounds * streams_count * 2, streams_count);
    return 0;
}
