// Twin of tests/sim/test_sim_proc_address.c: cuGetProcAddress picks the
// exported variant by base name, requested version and per-thread flag.
#include <string.h>

#include "twin_driver.h"

static void expect_variant(const char *base, int version, cuuint64_t flags, const char *exported)
{
    void *resolved = twin_entry(base, version, flags);
    void *symbol = dlsym(twin_library, exported);
    if (resolved == NULL || resolved != symbol) {
        fprintf(stderr, "%s at %d flags %llu: got %p, %s is %p\n", base, version,
                (unsigned long long)flags, resolved, exported, symbol);
        twin_failures++;
    }
}

int main()
{
    twin_start();
    const cuuint64_t per_thread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    expect_variant("cuMemAlloc", 3020, 0, "cuMemAlloc_v2");
    expect_variant("cuMemFree", 3020, 0, "cuMemFree_v2");
    expect_variant("cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2");
    expect_variant("cuCtxGetDevice", 2000, 0, "cuCtxGetDevice");
    expect_variant("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2");
    expect_variant("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
    expect_variant("cuDevicePrimaryCtxReset", 7000, 0, "cuDevicePrimaryCtxReset");
    expect_variant("cuDevicePrimaryCtxReset", 11000, 0, "cuDevicePrimaryCtxReset_v2");
    expect_variant("cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2");
    expect_variant("cuIpcOpenMemHandle", 11000, 0, "cuIpcOpenMemHandle_v2");
    expect_variant("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
    expect_variant("cuStreamGetCaptureInfo", 12030, 0, "cuStreamGetCaptureInfo_v3");
    expect_variant("cuMemAllocAsync", 11020, 0, "cuMemAllocAsync");
    expect_variant("cuMemAllocAsync", 11020, per_thread, "cuMemAllocAsync_ptsz");
    expect_variant("cuMemFreeAsync", 11020, per_thread, "cuMemFreeAsync_ptsz");
    expect_variant("cuMemcpyHtoD", 7000, per_thread, "cuMemcpyHtoD_v2_ptds");
    expect_variant("cuStreamSynchronize", 7000, per_thread, "cuStreamSynchronize_ptsz");
    expect_variant("cuMemAlloc", 11020, per_thread, "cuMemAlloc_v2");

    void *function = (void *)1;
    CUdriverProcAddressQueryResult status;
    TWIN_OK(twin_resolver("cuNoSuchEntryPoint", &function, 13000, 0, &status));
    TWIN_CHECK(function == NULL && status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    function = (void *)1;
    TWIN_OK(twin_resolver("cuMemAllocAsync", &function, 11010, 0, &status));
    TWIN_CHECK(function == NULL && status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    int driver_version = 0;
    TWIN_OK(TWIN_ENTRY(cuDriverGetVersion, 2020)(&driver_version));
    TWIN_EXPECT(twin_resolver("cuMemAlloc", &function, driver_version + 10, 0, &status),
                CUDA_ERROR_INVALID_VALUE);
    return twin_finish("twin_proc_address");
}
