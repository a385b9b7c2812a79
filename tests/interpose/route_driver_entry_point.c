/* A program that fetches driver entry points through the runtime's
 * cudaGetDriverEntryPoint and cudaGetDriverEntryPointByVersion: the pointers
 * must be the library's hooks, of the right arity for the resolver itself. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "test_support.h"

#define ROUNDS 200

int main(void)
{
    CHECK_CUDA(cudaFree(0));
    void *by_flags = NULL, *by_version = NULL;
    enum cudaDriverEntryPointQueryResult status;
    /* Deprecated in CUDA 13, still exported: programs built earlier call it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    CHECK_CUDA(cudaGetDriverEntryPoint("cuMemAlloc", &by_flags, cudaEnableDefault, &status));
#pragma GCC diagnostic pop
    CHECK(status == cudaDriverEntryPointSuccess, "status %d", (int)status);
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuMemAlloc", &by_version, 3020,
                                                cudaEnableDefault, &status));
    CHECK(status == cudaDriverEntryPointSuccess, "status %d", (int)status);
    void *free_function = NULL;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuMemFree", &free_function, 3020,
                                                cudaEnableDefault, &status));

    if (library_is_loaded()) {
        void *hook = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
        CHECK(by_flags == hook, "cudaGetDriverEntryPoint did not return the hook");
        CHECK(by_version == hook, "cudaGetDriverEntryPointByVersion did not return the hook");
        void *resolver_v2 = NULL, *resolver_v1 = NULL;
        CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuGetProcAddress", &resolver_v2, 12000,
                                                    cudaEnableDefault, &status));
        CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuGetProcAddress", &resolver_v1, 11030,
                                                    cudaEnableDefault, &status));
        CHECK(resolver_v2 == dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"),
              "the 5-argument resolver is not the wrapper");
        CHECK(resolver_v1 == dlsym(RTLD_DEFAULT, "cuGetProcAddress"),
              "the 4-argument resolver is not the wrapper");
    }

    PFN_cuMemAlloc_v3020 allocate = (PFN_cuMemAlloc_v3020)by_version;
    PFN_cuMemFree_v3020 release = (PFN_cuMemFree_v3020)free_function;
    unsigned long long before = simulated_driver_calls("cuMemAlloc_v2");
    for (unsigned i = 0; i < ROUNDS; i++) {
        CUdeviceptr pointer = 0;
        CHECK_CUDA(allocate(&pointer, 3000 + (size_t)i * 100));
        CHECK_CUDA(release(pointer));
    }
    unsigned long long allocs = simulated_driver_calls("cuMemAlloc_v2") - before;
    check_driver_allocations(allocs, ROUNDS, "cuMemAlloc_v2");
    return 0;
}
