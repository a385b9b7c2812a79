// One kernel, several phases separated by grid-wide barriers (cooperative
// groups' grid.sync()): every block sums its part, block 0 sums the
// partial sums, and then every thread scales its elements by the total.
// The grid is sized from the occupancy query, as a cooperative launch must
// be (every block resident at once).
#include <cooperative_groups.h>
#include <cstdio>
#include <vector>

#include "sample_check.h"

namespace cg = cooperative_groups;

constexpr int threads_per_block = 256;

__global__ void normalize(const float *in, float *out, float *partials, float *total, int n)
{
    cg::grid_group grid = cg::this_grid();
    __shared__ float sums[threads_per_block];
    float mine = 0.0f;
    for (int i = (int)grid.thread_rank(); i < n; i += (int)grid.size())
        mine += in[i];
    sums[threadIdx.x] = mine;
    __syncthreads();
    for (int stride = threads_per_block / 2; stride > 0; stride /= 2) {
        if ((int)threadIdx.x < stride)
            sums[threadIdx.x] += sums[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partials[blockIdx.x] = sums[0];
    grid.sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        float sum = 0.0f;
        for (unsigned block = 0; block < gridDim.x; block++)
            sum += partials[block];
        *total = sum;
    }
    grid.sync();
    float scale = 1.0f / *total;
    for (int i = (int)grid.thread_rank(); i < n; i += (int)grid.size())
        out[i] = in[i] * scale;
}

int main()
{
    int cooperative = 0, processors = 0, per_processor = 0;
    CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, 0));
    CHECK(cudaDeviceGetAttribute(&processors, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_processor, normalize, threads_per_block, 0));
    if (!cooperative || per_processor < 1) {
        std::printf("grid_sync: the device cannot launch cooperative kernels\n");
        return 1;
    }
    // A few blocks per processor would do on a GPU; 8 keep the simulated
    // run short while still spanning many blocks.
    int blocks = processors * per_processor < 8 ? processors * per_processor : 8;
    const int n = 1 << 16;
    std::vector<float> host(n);
    for (int i = 0; i < n; i++)
        host[i] = (float)(i % 100 + 1);
    float *in, *out, *partials, *total;
    CHECK(cudaMalloc(&in, n * sizeof(float)));
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    CHECK(cudaMalloc(&partials, blocks * sizeof(float)));
    CHECK(cudaMalloc(&total, sizeof(float)));
    CHECK(cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    int count = n;
    void *arguments[] = {&in, &out, &partials, &total, &count};
    CHECK(cudaLaunchCooperativeKernel((void *)normalize, blocks, threads_per_block, arguments, 0, 0));
    CHECK_KERNEL();
    std::vector<float> result(n);
    float device_total = 0.0f;
    CHECK(cudaMemcpy(result.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&device_total, total, sizeof(float), cudaMemcpyDeviceToHost));
    double expected_total = 0.0;
    for (int i = 0; i < n; i++)
        expected_total += host[i];
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        double expected = host[i] / expected_total;
        if (std::fabs(result[i] - expected) > 1e-6 * expected + 1e-12)
            wrong++;
    }
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    CHECK(cudaFree(partials));
    CHECK(cudaFree(total));
    if (wrong || std::fabs(device_total - expected_total) > 1e-3 * expected_total) {
        std::printf("grid_sync: %d wrong elements, total %.1f, expected %.1f\n", wrong, device_total,
                    expected_total);
        return 1;
    }
    std::printf("grid_sync: %d elements over %d blocks normalized across two grid barriers\n", n, blocks);
    return 0;
}
