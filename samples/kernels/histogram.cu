// A 256-bin histogram of 2M bytes: per-block bins in shared memory with
// shared atomics, merged into the global histogram with global atomics;
// a second pass counts with global atomics only. Both must match the host.
#include <vector>

#include "sample_check.h"

#define BINS 256

__global__ void histogram_shared(const unsigned char *data, int n, unsigned *bins)
{
    __shared__ unsigned local[BINS];
    for (int i = threadIdx.x; i < BINS; i += blockDim.x)
        local[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < BINS; i += blockDim.x)
        if (local[i])
            atomicAdd(&bins[i], local[i]);
}

__global__ void histogram_global(const unsigned char *data, int n, unsigned *bins)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&bins[data[i]], 1u);
}

int main()
{
    const int n = 2 << 20;
    std::vector<unsigned char> data(n);
    std::vector<unsigned> expected(BINS, 0), bins(BINS);
    unsigned state = 12345;
    for (int i = 0; i < n; i++) {
        state = state * 1103515245u + 12345u;
        // Skewed towards low bins, so some bins are heavily contended.
        data[i] = (unsigned char)((state >> 16) % ((state >> 28) + 1 == 1 ? 8 : 256));
        expected[data[i]]++;
    }
    unsigned char *device_data;
    unsigned *device_bins;
    CHECK(cudaMalloc(&device_data, n));
    CHECK(cudaMalloc(&device_bins, BINS * sizeof(unsigned)));
    CHECK(cudaMemcpy(device_data, data.data(), n, cudaMemcpyHostToDevice));
    int failures = 0;
    for (int pass = 0; pass < 2; pass++) {
        CHECK(cudaMemset(device_bins, 0, BINS * sizeof(unsigned)));
        if (pass == 0)
            histogram_shared<<<120, 512>>>(device_data, n, device_bins);
        else
            histogram_global<<<60, 256>>>(device_data, n / 8, device_bins);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(bins.data(), device_bins, BINS * sizeof(unsigned), cudaMemcpyDeviceToHost));
        std::vector<unsigned> want(BINS, 0);
        for (int i = 0; i < (pass == 0 ? n : n / 8); i++)
            want[data[i]]++;
        for (int b = 0; b < BINS; b++)
            if (bins[b] != want[b]) {
                std::printf("histogram pass %d: bin %d holds %u, expected %u\n", pass, b, bins[b], want[b]);
                failures++;
                break;
            }
    }
    CHECK(cudaFree(device_data));
    CHECK(cudaFree(device_bins));
    if (failures)
        return 1;
    std::printf("histogram: %d bytes in %d bins correct (bin 0 holds %u)\n", n, BINS, expected[0]);
    return 0;
}
