/* Real-GPU twin of the driver route tests: a program linked to libcuda
 * calling cuMemAlloc/cuMemFree, and the same through dlopen + dlsym and
 * cuGetProcAddress. Under the library the dlsym'd pointers must be the
 * library's hooks and the v1 cuMemAlloc must stay the driver's. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include "test_support.h"

#define ROUNDS 200

int main(void)
{
    CUdevice device;
    CUcontext context;
    CHECK_CUDA(cuInit(0));
    CHECK_CUDA(cuDeviceGet(&device, 0));
    CHECK_CUDA(cuDevicePrimaryCtxRetain(&context, device));
    CHECK_CUDA(cuCtxSetCurrent(context));
    for (unsigned i = 0; i < ROUNDS; i++) {
        CUdeviceptr pointer = 0;
        CHECK_CUDA(cuMemAlloc(&pointer, 65536 + (size_t)(i % 9) * 4096));
        CHECK_CUDA(cuMemsetD8(pointer, 0x11, 65536));
        CHECK_CUDA(cuMemFree(pointer));
    }

    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(driver != NULL, "dlopen: %s", dlerror());
    PFN_cuMemAlloc_v3020 mem_alloc = (PFN_cuMemAlloc_v3020)dlsym(driver, "cuMemAlloc_v2");
    PFN_cuMemFree_v3020 mem_free = (PFN_cuMemFree_v3020)dlsym(driver, "cuMemFree_v2");
    PFN_cuGetProcAddress_v12000 resolve =
        (PFN_cuGetProcAddress_v12000)dlsym(driver, "cuGetProcAddress_v2");
    void *legacy_alloc = dlsym(driver, "cuMemAlloc");
    CHECK(mem_alloc && mem_free && resolve && legacy_alloc, "an entry point is missing");
    void *resolved = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK_CUDA(resolve("cuMemAlloc", &resolved, 3020, 0, &status));
    if (library_is_loaded()) {
        CHECK((void *)mem_alloc == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), "dlsym: not the hook");
        CHECK(resolved == (void *)mem_alloc, "cuGetProcAddress_v2: not the hook");
        CHECK(legacy_alloc != (void *)mem_alloc, "the v1 cuMemAlloc was replaced");
    }
    for (unsigned i = 0; i < ROUNDS; i++) {
        CUdeviceptr pointer = 0;
        PFN_cuMemAlloc_v3020 allocate = (i & 1) ? mem_alloc : (PFN_cuMemAlloc_v3020)resolved;
        CHECK_CUDA(allocate(&pointer, 1024 + (size_t)i * 512));
        CHECK_CUDA(mem_free(pointer));
    }
    CHECK_CUDA(cuDevicePrimaryCtxRelease(device));
    printf("%d cuMemAlloc, %d through dlsym and cuGetProcAddress\n", ROUNDS, ROUNDS);
    return 0;
}
