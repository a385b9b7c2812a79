// Four streams, each copying its own input in, running two dependent
// kernels, and copying the result back, with events ordering a final kernel
// on a fifth stream after all four. The legacy default stream then reads
// everything. Results are checked per stream.
#include <vector>

#include "sample_check.h"

__global__ void scale(int *data, int n, int factor)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] *= factor;
}

__global__ void offset(int *data, int n, int amount)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] += amount;
}

__global__ void combine(int *const *parts, int count, int n, int *sum)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int total = 0;
    for (int p = 0; p < count; p++)
        total += parts[p][i];
    sum[i] = total;
}

int main()
{
    const int streams_count = 4, n = 50000;
    cudaStream_t streams[streams_count + 1];
    cudaEvent_t done[streams_count];
    int *device[streams_count];
    int *host_in, *host_out;
    CHECK(cudaMallocHost(&host_in, streams_count * n * sizeof(int)));
    CHECK(cudaMallocHost(&host_out, streams_count * n * sizeof(int)));
    for (int s = 0; s <= streams_count; s++)
        CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
    for (int s = 0; s < streams_count; s++) {
        CHECK(cudaEventCreateWithFlags(&done[s], cudaEventDisableTiming));
        CHECK(cudaMalloc(&device[s], n * sizeof(int)));
        for (int i = 0; i < n; i++)
            host_in[s * n + i] = i + s;
    }
    int blocks = (n + 255) / 256;
    for (int s = 0; s < streams_count; s++) {
        CHECK(cudaMemcpyAsync(device[s], host_in + s * n, n * sizeof(int), cudaMemcpyHostToDevice, streams[s]));
        scale<<<blocks, 256, 0, streams[s]>>>(device[s], n, s + 2);
        offset<<<blocks, 256, 0, streams[s]>>>(device[s], n, 100 * s);
        CHECK(cudaMemcpyAsync(host_out + s * n, device[s], n * sizeof(int), cudaMemcpyDeviceToHost, streams[s]));
        CHECK(cudaEventRecord(done[s], streams[s]));
    }
    int **parts, *sum;
    CHECK(cudaMalloc(&parts, streams_count * sizeof(int *)));
    CHECK(cudaMalloc(&sum, n * sizeof(int)));
    CHECK(cudaMemcpyAsync(parts, device, sizeof device, cudaMemcpyHostToDevice, streams[streams_count]));
    for (int s = 0; s < streams_count; s++)
        CHECK(cudaStreamWaitEvent(streams[streams_count], done[s], 0));
    combine<<<blocks, 256, 0, streams[streams_count]>>>(parts, streams_count, n, sum);
    CHECK(cudaGetLastError());
    std::vector<int> sums(n);
    CHECK(cudaStreamSynchronize(streams[streams_count]));
    CHECK(cudaMemcpy(sums.data(), sum, n * sizeof(int), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int s = 0; s < streams_count; s++) {
        CHECK(cudaEventSynchronize(done[s]));
        for (int i = 0; i < n; i++)
            if (host_out[s * n + i] != (i + s) * (s + 2) + 100 * s)
                wrong++;
    }
    for (int i = 0; i < n; i++) {
        int expected = 0;
        for (int s = 0; s < streams_count; s++)
            expected += (i + s) * (s + 2) + 100 * s;
        if (sums[i] != expected)
            wrong++;
    }
    for (int s = 0; s < streams_count; s++) {
        CHECK(cudaFree(device[s]));
        CHECK(cudaEventDestroy(done[s]));
    }
    for (int s = 0; s <= streams_count; s++)
        CHECK(cudaStreamDestroy(streams[s]));
    CHECK(cudaFree(parts));
    CHECK(cudaFree(sum));
    CHECK(cudaFreeHost(host_in));
    CHECK(cudaFreeHost(host_out));
    if (wrong) {
        std::printf("streams: %d values wrong\n", wrong);
        return 1;
    }
    std::printf("streams: %d streams of %d values and their combination correct\n", streams_count, n);
    return 0;
}
