// printf from kernels: integers, unsigned and hexadecimal values, floats
// and doubles, strings and characters, with widths, precision and flags.
// Each launch prints from one thread at a time (a single thread, or thread
// 0 after a barrier), so the output order does not depend on scheduling;
// the host synchronizes after every launch so device and host lines
// interleave the same way on every run. Every printf's result is stored and
// must be what CUDA's printf returns: the number of arguments it parsed.
#include <cstdio>

#include "sample_check.h"

__global__ void print_scalars(int i, unsigned u, long long big, float f, double d, int *results)
{
    results[0] = printf("ints: %d %i %5d|%-5d|%05d %+d\n", i, -i, i, i, i, i);
    results[1] = printf("unsigned: %u hex %x %X %#x octal %o\n", u, u, u, u, u);
    results[2] = printf("long long: %lld %llx\n", big, (unsigned long long)big);
    results[3] = printf("float: %f %.2f %8.3f|%-8.1f|%e\n", f, f, f, f, f);
    results[4] = printf("double: %.10f %g %G %.3e\n", d, d, d * 1e10, d);
    results[5] = printf("strings: [%s] [%10s] [%-10s] [%.3s] char %c%c%c\n", "device", "right", "left",
                        "truncated", 'o', 'k', '!');
    results[6] = printf("percent: 100%%\n");
}

// Thread 0 of the block prints the block's sum after every thread stored
// its value.
__global__ void print_block_sum(const int *values, int n, int *result)
{
    __shared__ int sum;
    if (threadIdx.x == 0)
        sum = 0;
    __syncthreads();
    if ((int)threadIdx.x < n)
        atomicAdd(&sum, values[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0)
        *result = printf("block %d of %d threads: sum %d, first %d, last %d\n", (int)blockIdx.x,
                         (int)blockDim.x, sum, values[0], values[n - 1]);
}

// One line per launch from the one thread of each.
__global__ void print_line(int launch, double value, int *result)
{
    *result = printf("launch %2d: %08.4f %s\n", launch, value, launch % 2 ? "odd" : "even");
}

int main()
{
    const int lines = 12;
    int *results;
    CHECK(cudaMalloc(&results, lines * sizeof(int)));
    CHECK(cudaMemset(results, 0xff, lines * sizeof(int)));
    CHECK(cudaDeviceSynchronize());
    std::fflush(stdout);
    print_scalars<<<1, 1>>>(42, 3735928559u, -1234567890123LL, 3.14159265f, 2.718281828459045, results);
    CHECK_KERNEL();
    std::fflush(stdout);

    const int n = 64;
    int host[n], *values;
    for (int i = 0; i < n; i++)
        host[i] = i * i - 7;
    CHECK(cudaMalloc(&values, sizeof host));
    CHECK(cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice));
    print_block_sum<<<1, n>>>(values, n, results + 7);
    CHECK_KERNEL();
    std::fflush(stdout);
    CHECK(cudaFree(values));

    for (int launch = 0; launch < 4; launch++) {
        print_line<<<1, 1>>>(launch, launch * 1.25 - 2.0, results + 8 + launch);
        CHECK_KERNEL();
        std::fflush(stdout);
        std::printf("host after launch %d\n", launch);
        std::fflush(stdout);
    }
    int host_results[lines];
    CHECK(cudaMemcpy(host_results, results, sizeof host_results, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(results));
    // The arguments each call passes, in the order the results were stored.
    const int expected[lines] = {6, 5, 2, 5, 4, 7, 0, 5, 3, 3, 3, 3};
    int failed = 0;
    for (int k = 0; k < lines; k++) {
        if (host_results[k] != expected[k]) {
            std::printf("device_printf: call %d returned %d, expected %d\n", k, host_results[k],
                        expected[k]);
            failed++;
        }
    }
    if (failed) {
        std::printf("device_printf: %d of %d printf calls returned the wrong count\n", failed, lines);
        return 1;
    }
    std::printf("device_printf: %d device printf calls succeeded\n", lines);
    return 0;
}
