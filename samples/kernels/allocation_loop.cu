// The pattern a caching allocator exists for: 150 iterations that each
// allocate a few buffers of varying size (from 1 KiB to 768 KiB), fill them
// with a kernel, transform one into another, check a checksum computed on
// the device, and free them again, some with cudaFreeAsync on a stream.
#include "sample_check.h"

__global__ void fill(unsigned *data, size_t count, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        data[i] = (unsigned)i * 2654435761u + seed;
}

__global__ void transform(const unsigned *in, unsigned *out, size_t count)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        out[i] = in[i] ^ (in[i] >> 7);
}

__global__ void checksum(const unsigned *data, size_t count, unsigned long long *sum)
{
    unsigned long long local = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        local += data[i];
    atomicAdd(sum, local);
}

static unsigned long long host_checksum(size_t count, unsigned seed)
{
    unsigned long long sum = 0;
    for (size_t i = 0; i < count; i++) {
        unsigned value = (unsigned)i * 2654435761u + seed;
        sum += value ^ (value >> 7);
    }
    return sum;
}

int main()
{
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    unsigned long long *sum;
    CHECK(cudaMalloc(&sum, sizeof *sum));
    unsigned state = 7;
    int wrong = 0;
    const int iterations = 150;
    size_t total_bytes = 0;
    for (int iteration = 0; iteration < iterations; iteration++) {
        state = state * 1664525u + 1013904223u;
        // Mostly small buffers, now and then a large one.
        size_t count = (state >> 8) % 8 == 0 ? 64 * 1024 + (state >> 12) % (128 * 1024) : 256 + (state >> 12) % 4096;
        unsigned *first, *second, *scratch;
        CHECK(cudaMalloc(&first, count * sizeof(unsigned)));
        CHECK(cudaMalloc(&second, count * sizeof(unsigned)));
        CHECK(cudaMallocAsync(&scratch, 4096 + count % 4096, stream));
        total_bytes += 2 * count * sizeof(unsigned);
        fill<<<64, 256, 0, stream>>>(first, count, state);
        transform<<<64, 256, 0, stream>>>(first, second, count);
        CHECK(cudaMemsetAsync(sum, 0, sizeof *sum, stream));
        checksum<<<32, 256, 0, stream>>>(second, count, sum);
        CHECK(cudaGetLastError());
        CHECK(cudaFreeAsync(scratch, stream));
        unsigned long long result = 0;
        CHECK(cudaMemcpyAsync(&result, sum, sizeof result, cudaMemcpyDeviceToHost, stream));
        CHECK(cudaStreamSynchronize(stream));
        if (result != host_checksum(count, state))
            wrong++;
        CHECK(cudaFree(first));
        CHECK(cudaFree(second));
    }
    CHECK(cudaFree(sum));
    CHECK(cudaStreamDestroy(stream));
    if (wrong) {
        std::printf("allocation_loop: %d of %d iterations wrong\n", wrong, iterations);
        return 1;
    }
    std::printf("allocation_loop: %d iterations over %zu MiB of buffers correct\n", iterations, total_bytes >> 20);
    return 0;
}
