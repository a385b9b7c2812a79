/* Helpers shared by the simulated runtime's suites: asserting CUDA results by
 * name, and reaching the loaded driver directly to observe what the runtime
 * did to it. */
#ifndef RUNTIME_TEST_SUPPORT_H
#define RUNTIME_TEST_SUPPORT_H

#include <dlfcn.h>
#include <string.h>

#include <criterion/criterion.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

/* Asserts a runtime call returns `expected`, naming both codes on failure. */
#define assert_cuda(call, expected)                                                                \
    do {                                                                                           \
        cudaError_t actual_ = (call);                                                              \
        cr_assert_eq(actual_, (expected), "%s returned %s, expected %s", #call,                    \
                     cudaGetErrorName(actual_), cudaGetErrorName(expected));                       \
    } while (0)

#define assert_cuda_success(call) assert_cuda(call, cudaSuccess)

/* Asserts a driver call succeeds. */
#define assert_driver_success(call)                                                                \
    do {                                                                                           \
        CUresult actual_ = (call);                                                                 \
        cr_assert_eq(actual_, CUDA_SUCCESS, "%s returned driver error %d", #call, (int)actual_);   \
    } while (0)

/* The address of an exported driver symbol, by its exact name (the
 * libcuda.so.1 the runtime loaded: dlopen returns the same object). */
static inline void *driver_symbol(const char *exact_name)
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOW);
    cr_assert_not_null(handle, "libcuda.so.1 not loadable: %s", dlerror());
    void *symbol = dlsym(handle, exact_name);
    cr_assert_not_null(symbol, "the driver does not export %s", exact_name);
    return symbol;
}

/* Skips the test when the loaded driver does not export `exact_name`: the
 * runtime then fails the call with cudaErrorNotSupported, and there is no
 * behaviour of the runtime left to check. */
static inline void skip_unless_driver_exports(const char *exact_name)
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOW);
    cr_assert_not_null(handle, "libcuda.so.1 not loadable: %s", dlerror());
    if (dlsym(handle, exact_name) == NULL)
        cr_skip_test("the driver does not provide %s", exact_name);
}

/* Calls to an exported driver entry point so far, from the sim's own count. */
static inline unsigned long long driver_call_count(const char *exact_name)
{
    unsigned long long (*count)(const char *);
    void *symbol = driver_symbol("gpusim_call_count");
    memcpy(&count, &symbol, sizeof count);
    return count(exact_name);
}

#endif
