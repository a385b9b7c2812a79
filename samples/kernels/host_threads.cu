// Four host threads share the device, each with its own stream: each
// allocates with cudaMalloc and cudaMallocAsync, copies its input in, runs
// kernels, copies the result back and checks it, several times over. The
// main thread joins them and prints one line.
#include <atomic>
#include <thread>
#include <vector>

#include "sample_check.h"

__global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

__global__ void negate_odd(float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i % 2)
        y[i] = -y[i];
}

// One thread's work; returns how many values were wrong.
static int work(int worker, int iterations)
{
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int wrong = 0;
    for (int iteration = 0; iteration < iterations; iteration++) {
        int n = 20000 + 3000 * worker + 101 * iteration;
        std::vector<float> x(n), y(n), out(n);
        for (int i = 0; i < n; i++) {
            x[i] = (float)(i % 97);
            y[i] = (float)(worker * 10 + iteration);
        }
        float *device_x, *device_y;
        CHECK(cudaMalloc(&device_x, n * sizeof(float)));
        CHECK(cudaMallocAsync(&device_y, n * sizeof(float), stream));
        CHECK(cudaMemcpyAsync(device_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
        CHECK(cudaMemcpyAsync(device_y, y.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
        float a = (float)(worker + 1);
        int blocks = (n + 255) / 256;
        saxpy<<<blocks, 256, 0, stream>>>(a, device_x, device_y, n);
        negate_odd<<<blocks, 256, 0, stream>>>(device_y, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(out.data(), device_y, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
        CHECK(cudaFreeAsync(device_y, stream));
        CHECK(cudaStreamSynchronize(stream));
        CHECK(cudaFree(device_x));
        for (int i = 0; i < n; i++) {
            float expected = a * x[i] + y[i];
            if (i % 2)
                expected = -expected;
            if (out[i] != expected)
                wrong++;
        }
    }
    CHECK(cudaStreamDestroy(stream));
    return wrong;
}

int main()
{
    const int workers = 4, iterations = 5;
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int worker = 0; worker < workers; worker++)
        threads.emplace_back([worker, &wrong] { wrong += work(worker, iterations); });
    for (std::thread &thread : threads)
        thread.join();
    if (wrong) {
        std::printf("host_threads: %d values wrong\n", wrong.load());
        return 1;
    }
    std::printf("host_threads: %d threads with their own streams, %d iterations each, correct\n", workers,
                iterations);
    return 0;
}
