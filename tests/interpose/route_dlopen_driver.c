/* A program that dlopens libcuda.so.1 and fetches entry points with dlsym,
 * as the CUDA runtime itself does: the dlsym hook must hand out the
 * library's hooks for the exact variants it hooks and nothing else. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include "test_support.h"

#define ROUNDS 200

int main(void)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(driver != NULL, "dlopen: %s", dlerror());
    PFN_cuInit_v2000 init = (PFN_cuInit_v2000)dlsym(driver, "cuInit");
    PFN_cuDeviceGet_v2000 device_get = (PFN_cuDeviceGet_v2000)dlsym(driver, "cuDeviceGet");
    PFN_cuDevicePrimaryCtxRetain_v7000 retain =
        (PFN_cuDevicePrimaryCtxRetain_v7000)dlsym(driver, "cuDevicePrimaryCtxRetain");
    PFN_cuCtxSetCurrent_v4000 set_current =
        (PFN_cuCtxSetCurrent_v4000)dlsym(driver, "cuCtxSetCurrent");
    PFN_cuMemAlloc_v3020 mem_alloc = (PFN_cuMemAlloc_v3020)dlsym(driver, "cuMemAlloc_v2");
    PFN_cuMemFree_v3020 mem_free = (PFN_cuMemFree_v3020)dlsym(driver, "cuMemFree_v2");
    PFN_cuGetProcAddress_v12000 get_proc_address =
        (PFN_cuGetProcAddress_v12000)dlsym(driver, "cuGetProcAddress_v2");
    void *legacy_alloc = dlsym(driver, "cuMemAlloc");
    CHECK(init && device_get && retain && set_current && mem_alloc && mem_free &&
              get_proc_address && legacy_alloc,
          "an entry point is missing");

    if (library_is_loaded()) {
        /* The library's exports are what the global scope finds first. */
        CHECK((void *)mem_alloc == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"),
              "dlsym(libcuda, cuMemAlloc_v2) did not return the hook");
        CHECK((void *)get_proc_address == dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"),
              "dlsym(libcuda, cuGetProcAddress_v2) did not return the resolver wrapper");
        /* cuMemAlloc is the 32-bit v1 ABI: never replaced by the v2 hook. */
        CHECK(legacy_alloc != (void *)mem_alloc, "the v1 cuMemAlloc was replaced");
    }

    CUdevice device;
    CUcontext context;
    CHECK_CUDA(init(0));
    CHECK_CUDA(device_get(&device, 0));
    CHECK_CUDA(retain(&context, device));
    CHECK_CUDA(set_current(context));

    /* Entry points fetched through the resolver are hooks too. */
    void *resolved_alloc = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK_CUDA(get_proc_address("cuMemAlloc", &resolved_alloc, 3020, 0, &status));
    CHECK(status == CU_GET_PROC_ADDRESS_SUCCESS, "status %d", (int)status);
    if (library_is_loaded())
        CHECK(resolved_alloc == (void *)mem_alloc, "cuGetProcAddress_v2 did not return the hook");

    unsigned long long before = simulated_driver_calls("cuMemAlloc_v2");
    for (unsigned i = 0; i < ROUNDS; i++) {
        CUdeviceptr pointer = 0;
        PFN_cuMemAlloc_v3020 allocate = (i & 1) ? mem_alloc : (PFN_cuMemAlloc_v3020)resolved_alloc;
        CHECK_CUDA(allocate(&pointer, 1024 + (size_t)i * 512));
        CHECK_CUDA(mem_free(pointer));
    }
    unsigned long long allocs = simulated_driver_calls("cuMemAlloc_v2") - before;
    check_driver_allocations(allocs, ROUNDS, "cuMemAlloc_v2");
    return 0;
}
