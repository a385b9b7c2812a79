// A sum over 1M integers in two stages: each block reduces with warp
// shuffles and shared memory, then one block reduces the partial sums.
// Block sizes from 32 to 1024 threads; the result must equal the host's.
#include <vector>

#include "sample_check.h"

__device__ long long warp_sum(long long value)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        value += __shfl_down_sync(0xffffffffu, value, offset);
    return value;
}

__global__ void block_sums(const int *input, long long *partial, int n)
{
    __shared__ long long per_warp[32];
    long long value = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        value += input[i];
    value = warp_sum(value);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0)
        per_warp[warp] = value;
    __syncthreads();
    if (warp == 0) {
        value = lane < (int)(blockDim.x + 31) / 32 ? per_warp[lane] : 0;
        value = warp_sum(value);
        if (lane == 0)
            partial[blockIdx.x] = value;
    }
}

__global__ void final_sum(const long long *partial, int count, long long *total)
{
    extern __shared__ long long scratch[];
    long long value = 0;
    for (int i = threadIdx.x; i < count; i += blockDim.x)
        value += partial[i];
    scratch[threadIdx.x] = value;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride)
            scratch[threadIdx.x] += scratch[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *total = scratch[0];
}

int main()
{
    const int n = 1 << 20;
    std::vector<int> input(n);
    long long expected = 0;
    for (int i = 0; i < n; i++) {
        input[i] = (int)((long long)i * 7919 % 2001) - 1000; /* no signed overflow */
        expected += input[i];
    }
    int *device_input;
    long long *partial, *total;
    const int blocks = 240;
    CHECK(cudaMalloc(&device_input, n * sizeof(int)));
    CHECK(cudaMalloc(&partial, blocks * sizeof(long long)));
    CHECK(cudaMalloc(&total, sizeof(long long)));
    CHECK(cudaMemcpy(device_input, input.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    int failures = 0;
    for (int threads = 32; threads <= 1024; threads *= 2) {
        block_sums<<<blocks, threads>>>(device_input, partial, n);
        CHECK_KERNEL();
        final_sum<<<1, 256, 256 * sizeof(long long)>>>(partial, blocks, total);
        CHECK_KERNEL();
        long long result = 0;
        CHECK(cudaMemcpy(&result, total, sizeof result, cudaMemcpyDeviceToHost));
        if (result != expected) {
            std::printf("reduction: %d threads per block: %lld, expected %lld\n", threads, result, expected);
            failures++;
        }
    }
    CHECK(cudaFree(device_input));
    CHECK(cudaFree(partial));
    CHECK(cudaFree(total));
    if (failures)
        return 1;
    std::printf("reduction: sum %lld correct for block sizes 32..1024\n", expected);
    return 0;
}
