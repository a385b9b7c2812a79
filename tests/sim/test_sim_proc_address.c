/* cuGetProcAddress on the simulated driver: base name + version + flags
 * select the exported variant, as the real driver does. */
#include <dlfcn.h>

#include "sim_test_support.h"

#define PER_THREAD CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

/* The address `dlsym` gives for the exported name. */
static void *exported(const char *name)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(driver, "libcuda.so.1 is linked into the test");
    void *symbol = dlsym(driver, name);
    dlclose(driver);
    cr_assert_not_null(symbol, "%s is exported", name);
    return symbol;
}

static void expect_resolution(const char *base, int version, cuuint64_t flags, const char *variant)
{
    void *function = NULL;
    CUdriverProcAddressQueryResult status = 99;
    EXPECT_OK(cuGetProcAddress(base, &function, version, flags, &status));
    cr_assert_eq(status, CU_GET_PROC_ADDRESS_SUCCESS, "%s at %d", base, version);
    cr_assert_eq(function, exported(variant), "%s at %d flags %llu should be %s", base, version,
                 (unsigned long long)flags, variant);
}

Test(proc_address, versions_select_the_abi_variant)
{
    expect_resolution("cuMemAlloc", 3020, 0, "cuMemAlloc_v2");
    expect_resolution("cuMemAlloc", 13000, 0, "cuMemAlloc_v2");
    expect_resolution("cuMemAlloc", 2000, 0, "cuMemAlloc");
    expect_resolution("cuCtxGetDevice", 2000, 0, "cuCtxGetDevice");
    expect_resolution("cuCtxGetDevice", 12090, 0, "cuCtxGetDevice");
    expect_resolution("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2");
    expect_resolution("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
    expect_resolution("cuDevicePrimaryCtxReset", 7000, 0, "cuDevicePrimaryCtxReset");
    expect_resolution("cuDevicePrimaryCtxReset", 11000, 0, "cuDevicePrimaryCtxReset_v2");
    expect_resolution("cuDevicePrimaryCtxRelease", 7000, 0, "cuDevicePrimaryCtxRelease");
    expect_resolution("cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2");
    expect_resolution("cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2");
    expect_resolution("cuIpcOpenMemHandle", 4010, 0, "cuIpcOpenMemHandle");
    expect_resolution("cuIpcOpenMemHandle", 11000, 0, "cuIpcOpenMemHandle_v2");
    expect_resolution("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
    expect_resolution("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
    expect_resolution("cuStreamGetCaptureInfo", 10010, 0, "cuStreamGetCaptureInfo");
    expect_resolution("cuStreamGetCaptureInfo", 11030, 0, "cuStreamGetCaptureInfo_v2");
    expect_resolution("cuStreamGetCaptureInfo", 12030, 0, "cuStreamGetCaptureInfo_v3");
    expect_resolution("cuCtxCreate", 12000, 0, "cuCtxCreate_v3");
    expect_resolution("cuCtxCreate", 13000, 0, "cuCtxCreate_v4");
}

Test(proc_address, the_per_thread_flag_selects_ptsz_and_ptds)
{
    expect_resolution("cuMemAllocAsync", 11020, 0, "cuMemAllocAsync");
    expect_resolution("cuMemAllocAsync", 11020, PER_THREAD, "cuMemAllocAsync_ptsz");
    expect_resolution("cuMemFreeAsync", 11020, PER_THREAD, "cuMemFreeAsync_ptsz");
    expect_resolution("cuMemAllocFromPoolAsync", 11020, PER_THREAD, "cuMemAllocFromPoolAsync_ptsz");
    expect_resolution("cuMemcpyHtoD", 7000, PER_THREAD, "cuMemcpyHtoD_v2_ptds");
    expect_resolution("cuMemcpyHtoD", 3020, PER_THREAD, "cuMemcpyHtoD_v2");
    expect_resolution("cuMemcpyHtoD", 7000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemcpyHtoD_v2");
    expect_resolution("cuStreamSynchronize", 7000, PER_THREAD, "cuStreamSynchronize_ptsz");
    expect_resolution("cuStreamGetCaptureInfo", 12030, PER_THREAD, "cuStreamGetCaptureInfo_v3_ptsz");
    expect_resolution("cuStreamBeginCapture", 10000, PER_THREAD, "cuStreamBeginCapture_ptsz");
    expect_resolution("cuStreamBeginCapture", 10010, PER_THREAD, "cuStreamBeginCapture_v2_ptsz");
    /* No per-thread variant: the legacy one is returned. */
    expect_resolution("cuMemAlloc", 11020, PER_THREAD, "cuMemAlloc_v2");
    expect_resolution("cuStreamCreate", 2000, PER_THREAD, "cuStreamCreate");
}

Test(proc_address, unknown_names_and_versions)
{
    void *function = (void *)1;
    CUdriverProcAddressQueryResult status;
    EXPECT_OK(cuGetProcAddress("cuNoSuchEntryPoint", &function, 13000, 0, &status));
    cr_assert_null(function);
    cr_assert_eq(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    function = (void *)1;
    EXPECT_OK(cuGetProcAddress("", &function, 0, 0, &status));
    cr_assert_null(function, "the runtime's first probe finds nothing");
    cr_assert_eq(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    function = (void *)1;
    EXPECT_OK(cuGetProcAddress("cuMemAllocAsync", &function, 11010, 0, &status));
    cr_assert_null(function);
    cr_assert_eq(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT_RESULT(cuGetProcAddress("cuMemAlloc", &function, 13010, 0, &status),
                  CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuGetProcAddress("cuMemAlloc", &function, 13000, 4, &status),
                  CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuGetProcAddress(NULL, &function, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
}

typedef CUresult (*legacy_resolver)(const char *, void **, int, cuuint64_t);

Test(proc_address, works_before_cuInit_and_through_the_4_argument_form)
{
    void *function = NULL;
    EXPECT_OK(cuGetProcAddress("cuInit", &function, 2000, 0, NULL));
    cr_assert_eq(function, exported("cuInit"));
    legacy_resolver resolver = (legacy_resolver)exported("cuGetProcAddress");
    EXPECT_OK(resolver("cuCtxSynchronize", &function, 13000, 0));
    cr_assert_eq(function, exported("cuCtxSynchronize_v2"));
}

Test(proc_address, resolved_entry_points_work)
{
    CUresult (*init)(unsigned);
    CUresult (*allocate)(CUdeviceptr *, size_t);
    CUresult (*get_device)(CUdevice *, CUcontext);
    EXPECT_OK(cuGetProcAddress("cuInit", (void **)&init, 2000, 0, NULL));
    EXPECT_OK(cuGetProcAddress("cuMemAlloc", (void **)&allocate, 3020, 0, NULL));
    EXPECT_OK(cuGetProcAddress("cuCtxGetDevice", (void **)&get_device, 13000, 0, NULL));
    EXPECT_OK(init(0));
    CUcontext context;
    EXPECT_OK(cuDevicePrimaryCtxRetain(&context, 0));
    EXPECT_OK(cuCtxSetCurrent(context));
    CUdeviceptr pointer;
    EXPECT_OK(allocate(&pointer, 4096));
    CUdevice device = -1;
    EXPECT_OK(get_device(&device, context));
    cr_assert_eq(device, 0);
    cr_assert_eq(gpusim_call_count("cuMemAlloc_v2"), 1);
}
