/* A library that reaches the driver past every hook: opened with
 * RTLD_DEEPBIND, its dlsym reference binds to the C library's own, so the
 * cuMemAlloc_v2 it finds is the driver's. Memory it allocates is memory the
 * caching library never saw, like memory allocated before it was active. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

unsigned long long allocate_behind_the_library(size_t size)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!driver)
        return 0;
    PFN_cuMemAlloc_v3020 allocate = (PFN_cuMemAlloc_v3020)dlsym(driver, "cuMemAlloc_v2");
    CUdeviceptr pointer = 0;
    if (!allocate || allocate(&pointer, size) != CUDA_SUCCESS)
        pointer = 0;
    dlclose(driver);
    return pointer;
}
