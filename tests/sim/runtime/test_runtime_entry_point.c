/* cudaGetDriverEntryPoint* hand out exactly the driver function the driver's
 * cuGetProcAddress picks for the version and default-stream flavour. */
#include "runtime_test_support.h"

/* cudaGetDriverEntryPoint is deprecated in CUDA 13 but still exported and used. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

extern cudaError_t CUDARTAPI cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                                          unsigned long long flags,
                                                          enum cudaDriverEntryPointQueryResult *driverStatus);
extern cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus);

static void *entry_point_by_version(const char *symbol, unsigned int version, unsigned long long flags)
{
    void *function = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    assert_cuda_success(cudaGetDriverEntryPointByVersion(symbol, &function, version, flags, &found));
    cr_assert_eq(found, cudaDriverEntryPointSuccess, "%s at %u not found", symbol, version);
    return function;
}

/* One lookup and the exported driver function it must give. */
struct expected_entry_point {
    const char *symbol;
    unsigned int version;
    unsigned long long flags;
    const char *exported_name;
};

static void expect_entry_points(const struct expected_entry_point *cases, size_t count)
{
    for (size_t i = 0; i < count; i++)
        cr_assert_eq(entry_point_by_version(cases[i].symbol, cases[i].version, cases[i].flags),
                     driver_symbol(cases[i].exported_name), "%s at %u with flags %llu is not %s",
                     cases[i].symbol, cases[i].version, cases[i].flags, cases[i].exported_name);
}

Test(runtime_entry_point, the_version_selects_the_abi_variant)
{
    static const struct expected_entry_point cases[] = {
        {"cuMemAlloc", 3020, cudaEnableDefault, "cuMemAlloc_v2"},
        {"cuMemAlloc", 2000, cudaEnableDefault, "cuMemAlloc"},
        {"cuCtxGetDevice", 13000, cudaEnableDefault, "cuCtxGetDevice_v2"},
        {"cuCtxGetDevice", 12000, cudaEnableDefault, "cuCtxGetDevice"},
        {"cuDevicePrimaryCtxReset", 7000, cudaEnableDefault, "cuDevicePrimaryCtxReset"},
        {"cuDevicePrimaryCtxReset", 11000, cudaEnableDefault, "cuDevicePrimaryCtxReset_v2"},
    };
    expect_entry_points(cases, sizeof cases / sizeof cases[0]);
}

Test(runtime_entry_point, the_flags_select_the_default_stream_variant)
{
    static const struct expected_entry_point cases[] = {
        {"cuMemAllocAsync", 11020, cudaEnableDefault, "cuMemAllocAsync"},
        {"cuMemAllocAsync", 11020, cudaEnableLegacyStream, "cuMemAllocAsync"},
        {"cuMemAllocAsync", 11020, cudaEnablePerThreadDefaultStream, "cuMemAllocAsync_ptsz"},
        {"cuMemcpyHtoD", 7000, cudaEnablePerThreadDefaultStream, "cuMemcpyHtoD_v2_ptds"},
        /* Without a per-thread variant the legacy one is the answer. */
        {"cuMemAlloc", 3020, cudaEnablePerThreadDefaultStream, "cuMemAlloc_v2"},
    };
    expect_entry_points(cases, sizeof cases / sizeof cases[0]);
}

Test(runtime_entry_point, the_per_thread_exports_default_to_per_thread_variants)
{
    void *function = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    assert_cuda_success(cudaGetDriverEntryPointByVersion_ptsz("cuMemFreeAsync", &function, 11020,
                                                              cudaEnableDefault, &found));
    cr_assert_eq(function, driver_symbol("cuMemFreeAsync_ptsz"));
    assert_cuda_success(cudaGetDriverEntryPoint_ptsz("cuStreamQuery", &function, cudaEnableDefault, &found));
    cr_assert_eq(function, driver_symbol("cuStreamQuery_ptsz"));
    assert_cuda_success(cudaGetDriverEntryPoint_ptsz("cuStreamQuery", &function, cudaEnableLegacyStream, &found));
    cr_assert_eq(function, driver_symbol("cuStreamQuery"));
}

Test(runtime_entry_point, the_unversioned_lookup_uses_the_runtime_version)
{
    void *function = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    assert_cuda_success(cudaGetDriverEntryPoint("cuMemGetInfo", &function, cudaEnableDefault, &found));
    cr_assert_eq(found, cudaDriverEntryPointSuccess);
    cr_assert_eq(function, driver_symbol("cuMemGetInfo_v2"));
    assert_cuda_success(cudaGetDriverEntryPoint("cuCtxSynchronize", &function, cudaEnableDefault, NULL));
    cr_assert_eq(function, driver_symbol("cuCtxSynchronize_v2"));
}

Test(runtime_entry_point, an_unknown_symbol_is_found_nowhere_but_is_no_error)
{
    void *function = (void *)0x1;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSuccess;
    assert_cuda_success(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &function, 12000,
                                                         cudaEnableDefault, &found));
    cr_assert_null(function);
    cr_assert_eq(found, cudaDriverEntryPointSymbolNotFound);
    assert_cuda_success(cudaPeekAtLastError());
}

Test(runtime_entry_point, a_version_newer_than_the_driver_or_bad_flags_are_invalid)
{
    void *function = NULL;
    assert_cuda(cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 99000, cudaEnableDefault, NULL),
                cudaErrorInvalidValue);
    assert_cuda(cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 13000, 8, NULL),
                cudaErrorInvalidValue);
    assert_cuda(cudaGetDriverEntryPointByVersion(NULL, &function, 13000, cudaEnableDefault, NULL),
                cudaErrorInvalidValue);
    assert_cuda(cudaGetLastError(), cudaErrorInvalidValue);
}
