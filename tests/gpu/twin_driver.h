/* Support for the GPU twins: each twin checks, on whatever libcuda.so.1 the
 * loader finds (a real driver, or the simulator through LD_LIBRARY_PATH),
 * a CUDA semantic that a sim/ test asserts. The driver is reached the way
 * the CUDA runtime reaches it: dlopen, then cuGetProcAddress_v2, so a
 * machine without a driver skips instead of failing to start.
 *
 * Exit status: 0 all checks held, 1 a check failed, 77 no GPU (skip). */
#ifndef TWIN_DRIVER_H
#define TWIN_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define TWIN_SKIP 77

static void *twin_library;
static PFN_cuGetProcAddress_v12000 twin_resolver;
static int twin_failures;

/* Fetches `base` at `version` with `flags`; NULL when absent. */
static void *twin_entry(const char *base, int version, cuuint64_t flags)
{
    void *function = NULL;
    CUdriverProcAddressQueryResult status;
    if (twin_resolver(base, &function, version, flags, &status) != CUDA_SUCCESS ||
        status != CU_GET_PROC_ADDRESS_SUCCESS)
        return NULL;
    return function;
}

/* A typed entry point, e.g. TWIN_ENTRY(cuMemAlloc, 3020) has the type
 * PFN_cuMemAlloc_v3020. Exits 1 when the driver lacks it. */
#define TWIN_ENTRY(base, version) \
    ((PFN_##base##_v##version)twin_require(#base, version, 0))
#define TWIN_ENTRY_PER_THREAD(base, version) \
    ((PFN_##base##_v##version##_ptsz)twin_require(#base, version, \
                                                  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))

static void *twin_require(const char *base, int version, cuuint64_t flags)
{
    void *function = twin_entry(base, version, flags);
    if (function == NULL) {
        fprintf(stderr, "driver has no %s at version %d\n", base, version);
        exit(1);
    }
    return function;
}

/* Loads the driver, runs cuInit and makes device 0's primary context
 * current; exits 77 when there is no driver or no device. */
static void twin_start(void)
{
    twin_library = dlopen("libcuda.so.1", RTLD_NOW);
    if (twin_library == NULL) {
        printf("skip: no libcuda.so.1 (%s)\n", dlerror());
        exit(TWIN_SKIP);
    }
    twin_resolver = (PFN_cuGetProcAddress_v12000)dlsym(twin_library, "cuGetProcAddress_v2");
    if (twin_resolver == NULL) {
        printf("skip: libcuda.so.1 has no cuGetProcAddress_v2\n");
        exit(TWIN_SKIP);
    }
    int count = 0;
    if (TWIN_ENTRY(cuInit, 2000)(0) != CUDA_SUCCESS ||
        TWIN_ENTRY(cuDeviceGetCount, 2000)(&count) != CUDA_SUCCESS || count == 0) {
        printf("skip: no CUDA device\n");
        exit(TWIN_SKIP);
    }
    CUcontext context;
    if (TWIN_ENTRY(cuDevicePrimaryCtxRetain, 7000)(&context, 0) != CUDA_SUCCESS ||
        TWIN_ENTRY(cuCtxSetCurrent, 4000)(context) != CUDA_SUCCESS) {
        fprintf(stderr, "cannot make the primary context current\n");
        exit(1);
    }
}

static const char *twin_result_name(CUresult result)
{
    const char *name = "(unnamed)";
    TWIN_ENTRY(cuGetErrorName, 6000)(result, &name);
    return name;
}

#define TWIN_CHECK(condition)                                                              \
    do {                                                                                   \
        if (!(condition)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition);  \
            twin_failures++;                                                               \
        }                                                                                  \
    } while (0)

#define TWIN_EXPECT(call, expected)                                                        \
    do {                                                                                   \
        CUresult actual_ = (call);                                                         \
        if (actual_ != (expected)) {                                                       \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__,    \
                    #call, twin_result_name(actual_), twin_result_name(expected));         \
            twin_failures++;                                                           \
        }                                                                                  \
    } while (0)

#define TWIN_OK(call) TWIN_EXPECT(call, CUDA_SUCCESS)

/* The end of main: reports and returns the exit status. */
static int twin_finish(const char *name)
{
    printf("%s: %d failed checks\n", name, twin_failures);
    return twin_failures == 0 ? 0 : 1;
}

#endif
