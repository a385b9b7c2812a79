/* cuGetProcAddress on the simulated driver: base name + version + flags
 * select the exported variant, as the real driver does. */
#include <dlfcn.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    expect_resolution("cuGraphInstantiate", 10000, 0, "cuGraphInstantiate");
    expect_resolution("cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2");
    expect_resolution("cuGraphInstantiateWithFlags", 13000, 0, "cuGraphInstantiateWithFlags");
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
    expect_resolution("cuGraphLaunch", 10000, PER_THREAD, "cuGraphLaunch_ptsz");
    expect_resolution("cuGraphUpload", 11010, PER_THREAD, "cuGraphUpload_ptsz");
    expect_resolution("cuGraphInstantiateWithParams", 12000, PER_THREAD,
                      "cuGraphInstantiateWithParams_ptsz");
    expect_resolution("cuGraphExecDestroy", 12000, PER_THREAD, "cuGraphExecDestroy");
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

struct table_row {
    const char *base;
    int version;
    bool per_thread;
    const char *exported;
};

static const struct table_row table_rows[] = {
#define SIM_ENTRY_POINT(base, version, per_thread, symbol) {#base, version, per_thread, #symbol},
#include "sim_entry_points.def"
#undef SIM_ENTRY_POINT
};

Test(proc_address, every_table_row_resolves_to_its_exported_function)
{
    size_t rows = sizeof table_rows / sizeof table_rows[0];
    cr_assert_gt(rows, 150);
    for (size_t i = 0; i < rows; i++) {
        const struct table_row *row = &table_rows[i];
        expect_resolution(row->base, row->version, row->per_thread ? PER_THREAD : 0,
                          row->exported);
    }
}

/* Whether the table has `base` at exactly `version` in the given class. */
static bool table_has(const char *base, int version, bool per_thread)
{
    for (size_t i = 0; i < sizeof table_rows / sizeof table_rows[0]; i++)
        if (strcmp(table_rows[i].base, base) == 0 && table_rows[i].version == version &&
            table_rows[i].per_thread == per_thread)
            return true;
    return false;
}

/* The highest version the table has for `base` in the given class, or 0. */
static int table_highest(const char *base, bool per_thread)
{
    int highest = 0;
    for (size_t i = 0; i < sizeof table_rows / sizeof table_rows[0]; i++)
        if (strcmp(table_rows[i].base, base) == 0 && table_rows[i].per_thread == per_thread &&
            table_rows[i].version > highest)
            highest = table_rows[i].version;
    return highest;
}

/* A request for a newer ABI than the table's newest variant would get an
 * older function with another signature: every version the CUDA headers
 * define below the newest implemented one, or above it, must be present
 * whenever an older one is. */
Test(proc_address, no_abi_version_is_skipped)
{
    FILE *header = fopen(CUDA_TYPEDEFS_HEADER, "r");
    cr_assert_not_null(header, "cannot read %s", CUDA_TYPEDEFS_HEADER);
    char line[1024];
    int checked = 0;
    while (fgets(line, sizeof line, header) != NULL) {
        char *typedef_name = strstr(line, "(CUDAAPI *PFN_");
        if (typedef_name == NULL)
            continue;
        char name[128];
        if (sscanf(typedef_name, "(CUDAAPI *PFN_%127[A-Za-z0-9_])", name) != 1)
            continue;
        bool per_thread = strstr(name, "_ptds") != NULL || strstr(name, "_ptsz") != NULL;
        char *version_mark = strrchr(name, 'v');
        while (version_mark != NULL && (version_mark == name || version_mark[-1] != '_'))
            version_mark = NULL;
        if (version_mark == NULL)
            continue;
        int version = atoi(version_mark + 1);
        version_mark[-1] = '\0';
        int highest = table_highest(name, per_thread);
        if (highest == 0)
            continue; /* not simulated at all */
        checked++;
        /* Missing old variants are only VERSION_NOT_SUFFICIENT; a missing
         * newer one would hand out the wrong ABI. */
        int lowest_present = 1 << 30;
        for (size_t i = 0; i < sizeof table_rows / sizeof table_rows[0]; i++)
            if (strcmp(table_rows[i].base, name) == 0 && table_rows[i].per_thread == per_thread &&
                table_rows[i].version < lowest_present)
                lowest_present = table_rows[i].version;
        if (version > lowest_present)
            cr_expect(table_has(name, version, per_thread), "%s%s at %d is not simulated",
                      name, per_thread ? " (per-thread)" : "", version);
    }
    fclose(header);
    cr_assert_gt(checked, 150);
}

static bool table_exports(const char *exported)
{
    for (size_t i = 0; i < sizeof table_rows / sizeof table_rows[0]; i++)
        if (strcmp(table_rows[i].exported, exported) == 0)
            return true;
    return false;
}

/* Every cu* function the library exports is reachable through
 * cuGetProcAddress, the only way the CUDA runtime looks entry points up. */
Test(proc_address, every_exported_entry_point_is_in_the_table)
{
    Dl_info info;
    cr_assert_neq(dladdr((void *)cuInit, &info), 0);
    FILE *library = fopen(info.dli_fname, "rb");
    cr_assert_not_null(library, "cannot open %s", info.dli_fname);
    fseek(library, 0, SEEK_END);
    long size = ftell(library);
    char *image = malloc((size_t)size);
    fseek(library, 0, SEEK_SET);
    cr_assert_eq(fread(image, 1, (size_t)size, library), (size_t)size);
    fclose(library);
    const Elf64_Ehdr *header = (const Elf64_Ehdr *)image;
    const Elf64_Shdr *sections = (const Elf64_Shdr *)(image + header->e_shoff);
    int exported = 0;
    for (int i = 0; i < header->e_shnum; i++) {
        if (sections[i].sh_type != SHT_DYNSYM)
            continue;
        const Elf64_Sym *symbols = (const Elf64_Sym *)(image + sections[i].sh_offset);
        const char *names = image + sections[sections[i].sh_link].sh_offset;
        size_t count = sections[i].sh_size / sizeof *symbols;
        for (size_t j = 0; j < count; j++) {
            const char *name = names + symbols[j].st_name;
            if (ELF64_ST_TYPE(symbols[j].st_info) != STT_FUNC || symbols[j].st_shndx == SHN_UNDEF ||
                strncmp(name, "cu", 2) != 0)
                continue;
            exported++;
            cr_expect(table_exports(name), "%s is exported but cuGetProcAddress cannot find it",
                      name);
        }
    }
    free(image);
    cr_assert_eq((size_t)exported, sizeof table_rows / sizeof table_rows[0],
                 "one table row per exported entry point");
}
