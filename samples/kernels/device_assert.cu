// A kernel asserts on purpose: one element of its input breaks the
// invariant it checks. The launch itself succeeds; synchronizing reports
// cudaErrorAssert, and, as on a GPU, the error is sticky: later calls on the
// context keep failing with it. Exits 0 only if exactly that happened.
#include <cassert>

#include "sample_check.h"

__global__ void check_positive(const int *values, int n, int *checked)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        assert(values[i] > 0);
        atomicAdd(checked, 1);
    }
}

static int expect(const char *what, cudaError_t got, cudaError_t expected)
{
    std::printf("%s: %s\n", what, cudaGetErrorName(got));
    return got == expected ? 0 : 1;
}

int main()
{
    const int n = 1000, bad = 617;
    int host[n];
    for (int i = 0; i < n; i++)
        host[i] = i == bad ? -5 : i + 1;
    int *values, *checked;
    CHECK(cudaMalloc(&values, sizeof host));
    CHECK(cudaMalloc(&checked, sizeof(int)));
    CHECK(cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(checked, 0, sizeof(int)));
    CHECK(cudaDeviceSynchronize());

    // A clean launch first: the assertion holds everywhere but at `bad`.
    check_positive<<<(bad + 127) / 128 - 1, 128>>>(values, n, checked);
    CHECK_KERNEL();

    check_positive<<<(n + 127) / 128, 128>>>(values, n, checked);
    int failures = expect("launch", cudaGetLastError(), cudaSuccess);
    failures += expect("cudaDeviceSynchronize", cudaDeviceSynchronize(), cudaErrorAssert);
    // Sticky: the context is unusable from now on.
    failures += expect("cudaDeviceSynchronize again", cudaDeviceSynchronize(), cudaErrorAssert);
    int copied = 0;
    failures += expect("cudaMemcpy after the assert", cudaMemcpy(&copied, checked, sizeof copied,
                                                                  cudaMemcpyDeviceToHost),
                       cudaErrorAssert);
    if (failures) {
        std::printf("device_assert: %d results differ from a GPU's\n", failures);
        return 1;
    }
    std::printf("device_assert: the assertion failed as expected and the error stayed\n");
    return 0;
}
