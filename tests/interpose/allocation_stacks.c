/* Allocations from known functions, for the call stacks of snapshots
 * (check_allocation_stacks.py): alloc_weights makes four 8 MiB buffers,
 * alloc_activations sixteen 1 MiB ones, all alive at exit, and the program
 * prints the line of each cudaMalloc call so the check knows what the
 * frames must say. With the argument "oom" it then asks for more than the
 * device has, so that the library writes its out-of-memory snapshot. */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "test_support.h"

#define MiB (1u << 20)

static void *weights[4];
static void *activations[16];
static int weights_line, activations_line;

__attribute__((noinline)) static void alloc_weights(void)
{
    for (int i = 0; i < 4; i++) {
        weights_line = __LINE__ + 1;
        CHECK_CUDA(cudaMalloc(&weights[i], 8 * MiB));
    }
}

__attribute__((noinline)) static void alloc_activations(void)
{
    for (int i = 0; i < 16; i++) {
        activations_line = __LINE__ + 1;
        CHECK_CUDA(cudaMalloc(&activations[i], MiB));
    }
}

int main(int argc, char **argv)
{
    alloc_weights();
    alloc_activations();
    if (argc > 1 && argv[1][0] == 'o') {
        void *too_large = NULL;
        CHECK(cudaMalloc(&too_large, (size_t)1 << 50) == cudaErrorMemoryAllocation,
              "a PiB allocation did not fail");
        (void)cudaGetLastError();
    }
    printf("weights_line=%d activations_line=%d\n", weights_line, activations_line);
    return 0;
}
