/* The entry-point resolvers: cuGetProcAddress in its 4- and 5-argument forms
 * and the runtime's cudaGetDriverEntryPoint family. Each calls the real
 * resolver with the caller's exact arguments and then swaps in a hook only
 * for the exact real variant that came back, so the version and per-thread
 * semantics the caller asked for stay the driver's decision. A lookup of the
 * resolver itself returns the real resolver of matching arity, which the
 * table maps to the wrapper of the same arity. */
#include <dlfcn.h>
#include <string.h>

#include "hooks.h"
#include "real_driver.h"
#include "runtime_entry_points.h"

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    const struct real_driver *driver = real_driver_get(false);
    if (!driver || !driver->get_proc_address_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = driver->get_proc_address_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (result == CUDA_SUCCESS && pfn &&
        (!symbolStatus || *symbolStatus == CU_GET_PROC_ADDRESS_SUCCESS))
        *pfn = real_driver_substitute(*pfn);
    return result;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    const struct real_driver *driver = real_driver_get(false);
    if (!driver || !driver->get_proc_address)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = driver->get_proc_address(symbol, pfn, cudaVersion, flags);
    if (result == CUDA_SUCCESS && pfn)
        *pfn = real_driver_substitute(*pfn);
    return result;
}

typedef cudaError_t (*entry_point_lookup)(const char *, void **, unsigned long long,
                                          enum cudaDriverEntryPointQueryResult *);
typedef cudaError_t (*entry_point_lookup_by_version)(const char *, void **, unsigned int,
                                                     unsigned long long,
                                                     enum cudaDriverEntryPointQueryResult *);

struct runtime_lookup {
    const char *name;
    void *wrapper;
    void *real; /* accessed atomically */
};

static struct runtime_lookup runtime_lookups[] = {
    {"cudaGetDriverEntryPoint", (void *)cudaGetDriverEntryPoint, NULL},
    {"cudaGetDriverEntryPoint_ptsz", (void *)cudaGetDriverEntryPoint_ptsz, NULL},
    {"cudaGetDriverEntryPointByVersion", (void *)cudaGetDriverEntryPointByVersion, NULL},
    {"cudaGetDriverEntryPointByVersion_ptsz", (void *)cudaGetDriverEntryPointByVersion_ptsz,
     NULL},
};
#define RUNTIME_LOOKUP_COUNT (sizeof runtime_lookups / sizeof runtime_lookups[0])

static struct runtime_lookup *runtime_lookup_named(const char *name)
{
    for (size_t i = 0; i < RUNTIME_LOOKUP_COUNT; i++)
        if (strcmp(runtime_lookups[i].name, name) == 0)
            return &runtime_lookups[i];
    return NULL;
}

int runtime_entry_point_is_wrapped(const char *name)
{
    return runtime_lookup_named(name) != NULL;
}

void *runtime_entry_point_substitute(const char *name, void *real_function)
{
    struct runtime_lookup *lookup = runtime_lookup_named(name);
    if (!lookup || real_function == lookup->wrapper)
        return real_function;
    __atomic_store_n(&lookup->real, real_function, __ATOMIC_RELEASE);
    return lookup->wrapper;
}

/* The runtime's definition: the one a dlsym on libcudart returned, else the
 * next definition after this library (the shared runtime's). */
static void *real_runtime_lookup(size_t index)
{
    struct runtime_lookup *lookup = &runtime_lookups[index];
    void *real = __atomic_load_n(&lookup->real, __ATOMIC_ACQUIRE);
    if (real)
        return real;
    dlsym_function real_dlsym = real_dlsym_get();
    real = real_dlsym ? real_dlsym(RTLD_NEXT, lookup->name) : NULL;
    if (real == lookup->wrapper)
        real = NULL;
    if (real)
        __atomic_store_n(&lookup->real, real, __ATOMIC_RELEASE);
    return real;
}

static void substitute_runtime_result(cudaError_t result, void **funcPtr,
                                      enum cudaDriverEntryPointQueryResult *status)
{
    if (result != cudaSuccess || !funcPtr || (status && *status != cudaDriverEntryPointSuccess))
        return;
    if (real_driver_get(true))
        *funcPtr = real_driver_substitute(*funcPtr);
}

static cudaError_t lookup_without_version(size_t index, const char *symbol, void **funcPtr,
                                          unsigned long long flags,
                                          enum cudaDriverEntryPointQueryResult *status)
{
    entry_point_lookup real = (entry_point_lookup)real_runtime_lookup(index);
    if (!real)
        return cudaErrorNotSupported;
    cudaError_t result = real(symbol, funcPtr, flags, status);
    substitute_runtime_result(result, funcPtr, status);
    return result;
}

static cudaError_t lookup_with_version(size_t index, const char *symbol, void **funcPtr,
                                       unsigned int cudaVersion, unsigned long long flags,
                                       enum cudaDriverEntryPointQueryResult *status)
{
    entry_point_lookup_by_version real = (entry_point_lookup_by_version)real_runtime_lookup(index);
    if (!real)
        return cudaErrorNotSupported;
    cudaError_t result = real(symbol, funcPtr, cudaVersion, flags, status);
    substitute_runtime_result(result, funcPtr, status);
    return result;
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *status)
{
    return lookup_without_version(0, symbol, funcPtr, flags, status);
}

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                         unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *status)
{
    return lookup_without_version(1, symbol, funcPtr, flags, status);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *status)
{
    return lookup_with_version(2, symbol, funcPtr, cudaVersion, flags, status);
}

cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
                                                  unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *status)
{
    return lookup_with_version(3, symbol, funcPtr, cudaVersion, flags, status);
}
