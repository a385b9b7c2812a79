/* The driver hands out its own entry points even when another object in the
 * process exports the same names first (this executable does, below), as
 * the real libcuda does: an interposer has to substitute them explicitly. */
#include <dlfcn.h>

#include "sim_test_support.h"

/* Shadows the driver's export in the global symbol scope. */
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    (void)dptr;
    (void)bytesize;
    return CUDA_ERROR_UNKNOWN;
}

Test(symbol_binding, cuGetProcAddress_returns_the_drivers_own_function)
{
    void *shadow = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    cr_assert_eq(shadow, (void *)cuMemAlloc_v2, "the executable's definition comes first");
    void *resolved = NULL;
    EXPECT_OK(cuGetProcAddress("cuMemAlloc", &resolved, 3020, 0, NULL));
    cr_assert_neq(resolved, shadow);
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(driver);
    cr_assert_eq(resolved, dlsym(driver, "cuMemAlloc_v2"));
    dlclose(driver);
    start_device(0);
    CUdeviceptr pointer;
    EXPECT_OK(((CUresult(*)(CUdeviceptr *, size_t))resolved)(&pointer, 4096));
    cr_assert_eq(gpusim_physical_bytes(0), 4096);
}
