/* cuGetProcAddress: resolves a base name, a requested CUDA version and the
 * per-thread-stream flag to one exported variant, from the table in
 * sim_entry_points.def. */
#include "sim_internal.h"

#include <dlfcn.h>
#include <stdio.h>

#include <string.h>

struct entry_point_variant {
    const char *base_name;
    int version;     /* the CUDA version that introduced this variant */
    bool per_thread; /* a _ptds/_ptsz variant */
    void *function;
    const char *exported_name;
};

static const struct entry_point_variant variants[] = {
#define SIM_ENTRY_POINT(base, version, per_thread, symbol) \
    {#base, version, per_thread, (void *)symbol, #symbol},
#include "sim_entry_points.def"
#undef SIM_ENTRY_POINT
};

bool sim_is_entry_point_name(const char *name)
{
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        if (strcmp(variants[i].base_name, name) == 0 || strcmp(variants[i].exported_name, name) == 0)
            return true;
    return false;
}

/* NVIDIA's CUDA runtime verifies the driver through cuGetExportTable, a
 * private interface the simulator does not imitate, and then fails every
 * call (a program linked with nvcc's default static runtime, or a vendor
 * library that carries that runtime inside, such as cuBLAS). Without this
 * line a user sees only that library's own status code. Once per process,
 * naming the module that asked. */
static void explain_foreign_runtime(void)
{
    static atomic_bool explained;
    if (atomic_exchange(&explained, true))
        return;
    const char *module = "the program";
    Dl_info info;
    const void *caller = sim_call_site.return_address;
    if (caller != NULL && dladdr(caller, &info) != 0 && info.dli_fname != NULL &&
        info.dli_fname[0] != '\0') {
        const char *slash = strrchr(info.dli_fname, '/');
        module = slash != NULL ? slash + 1 : info.dli_fname;
    }
    fprintf(stderr,
            "gpusim: %s carries NVIDIA's CUDA runtime, which cannot run on the simulated device "
            "(it needs private driver tables): build programs with nvcc -cudart shared so the "
            "simulator's libcudart.so.13 is used; vendor libraries that carry NVIDIA's runtime "
            "(cuBLAS, cuDNN, cuFFT and the like) cannot run here\n",
            module);
}

static CUresult resolve(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *symbolStatus)
{
    const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                             CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if (symbol == NULL || pfn == NULL || (flags & ~known) != 0 ||
        cudaVersion > SIM_DRIVER_VERSION)
        return CUDA_ERROR_INVALID_VALUE;
    /* The driver cannot see how the caller was compiled, so the default is
     * the legacy stream, as for CU_GET_PROC_ADDRESS_LEGACY_STREAM. */
    bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct entry_point_variant *legacy = NULL, *threaded = NULL;
    bool known_name = false;
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        const struct entry_point_variant *variant = &variants[i];
        if (strcmp(variant->base_name, symbol) != 0)
            continue;
        known_name = true;
        if (variant->version > cudaVersion)
            continue;
        const struct entry_point_variant **best = variant->per_thread ? &threaded : &legacy;
        if (*best == NULL || variant->version > (*best)->version)
            *best = variant;
    }
    const struct entry_point_variant *chosen = per_thread && threaded != NULL ? threaded : legacy;
    *pfn = chosen != NULL ? chosen->function : NULL;
    if (chosen == NULL && strcmp(symbol, "cuGetExportTable") == 0)
        explain_foreign_runtime();
    if (symbolStatus != NULL)
        *symbolStatus = chosen != NULL ? CU_GET_PROC_ADDRESS_SUCCESS
                        : known_name   ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                       : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags)
{
    SIM_ENTER_BEFORE_INIT("cuGetProcAddress");
    return resolve(symbol, pfn, cudaVersion, flags, NULL);
}

SIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                        cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbolStatus)
{
    SIM_ENTER_BEFORE_INIT("cuGetProcAddress_v2");
    return resolve(symbol, pfn, cudaVersion, flags, symbolStatus);
}
