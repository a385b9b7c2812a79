/* Real-GPU twin of the runtime route tests: cudaMalloc/cudaFree and
 * cudaMallocAsync/cudaFreeAsync loops, built by scripts/gpu-check.sh with the
 * static runtime (nvcc's default), the shared runtime and per-thread default
 * streams. gpu-check.sh reads the driver allocations from the library's
 * report; the program checks the data and, under the library, that
 * cudaGetDriverEntryPoint hands out the library's hook. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <string.h>

#include "test_support.h"

#define ROUNDS 200

int main(void)
{
    unsigned char host[4096];
    for (unsigned i = 0; i < ROUNDS; i++) {
        void *pointer = NULL;
        size_t size = 4096 + (size_t)(i % 50) * 512;
        CHECK_CUDA(cudaMalloc(&pointer, size));
        CHECK_CUDA(cudaMemset(pointer, (int)(i & 0xff), size));
        CHECK_CUDA(cudaMemcpy(host, pointer, sizeof host, cudaMemcpyDeviceToHost));
        CHECK(host[0] == (unsigned char)i && host[sizeof host - 1] == (unsigned char)i,
              "round %u read back %u", i, host[0]);
        CHECK_CUDA(cudaFree(pointer));
    }
    for (unsigned i = 0; i < ROUNDS; i++) {
        void *pointer = NULL;
        CHECK_CUDA(cudaMallocAsync(&pointer, 8192 + (size_t)(i % 7) * 1024, 0));
        CHECK_CUDA(cudaMemsetAsync(pointer, 0x3c, 8192, 0));
        CHECK_CUDA(cudaMemcpyAsync(host, pointer, 64, cudaMemcpyDeviceToHost, 0));
        CHECK_CUDA(cudaStreamSynchronize(0));
        CHECK(host[63] == 0x3c, "async round %u read back %u", i, host[63]);
        CHECK_CUDA(cudaFreeAsync(pointer, 0));
    }
    CHECK_CUDA(cudaDeviceSynchronize());

    void *entry = NULL;
    enum cudaDriverEntryPointQueryResult status;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuMemAlloc", &entry, 3020, cudaEnableDefault,
                                                &status));
    CHECK(status == cudaDriverEntryPointSuccess, "status %d", (int)status);
    if (library_is_loaded())
        CHECK(entry == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"),
              "cudaGetDriverEntryPointByVersion did not return the hook");
    printf("%d cudaMalloc, %d cudaMallocAsync\n", ROUNDS, ROUNDS);
    return 0;
}
