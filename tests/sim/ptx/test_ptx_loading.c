/* Loading and launching: fat binaries (plain, LZ4 and zstd entries, the
 * choice among architectures, SASS-only images), cubins, PTX files,
 * libraries and CUkernel handles, the driver's launch-configuration checks,
 * kernels the interpreter cannot run, and kernels ordered with copies and
 * host functions on streams. */
#include <lz4.h>
#include <zstd.h>

#include "ptx_test_support.h"

#include <criterion/redirect.h>

/* Writes `value` to *out. */
static void store_kernel(char *ptx, size_t size, unsigned arch, unsigned value)
{
    snprintf(ptx, size,
             ".version 8.0\n.target sm_%u\n.address_size 64\n"
             ".visible .entry store(.param .u64 out)\n{\n.reg .b64 %%rd<2>;\n"
             "ld.param.u64 %%rd1, [out];\nst.global.u32 [%%rd1], %u;\nret;\n}\n",
             arch, value);
}

enum compression { PLAIN, WITH_LZ4, WITH_ZSTD };

struct builder {
    unsigned char bytes[1 << 16];
    size_t used;
};

static void begin_container(struct builder *builder)
{
    memset(builder, 0, sizeof *builder);
    builder->used = 16;
}

/* One entry: kind 1 (PTX) or 2 (ELF), with the header layout nvcc writes. */
static void add_entry(struct builder *builder, unsigned kind, unsigned arch, const void *payload, size_t size,
                      enum compression compression)
{
    unsigned char compressed[8192];
    size_t stored = size;
    const void *data = payload;
    uint64_t flags = 0x11;
    if (compression == WITH_LZ4) {
        stored = (size_t)LZ4_compress_default(payload, (char *)compressed, (int)size, sizeof compressed);
        data = compressed;
        flags |= 0x2000;
    } else if (compression == WITH_ZSTD) {
        stored = ZSTD_compress(compressed, sizeof compressed, payload, size, 3);
        data = compressed;
        flags |= 0x8000;
    }
    size_t padded = (stored + 7) / 8 * 8;
    unsigned char *header = builder->bytes + builder->used;
    uint16_t kind16 = (uint16_t)kind, version = 0x101;
    uint32_t header_size = 64, compressed_size = compression == PLAIN ? 0 : (uint32_t)stored, arch32 = arch;
    uint64_t payload_size = padded, decompressed = compression == PLAIN ? 0 : size;
    memcpy(header, &kind16, 2);
    memcpy(header + 2, &version, 2);
    memcpy(header + 4, &header_size, 4);
    memcpy(header + 8, &payload_size, 8);
    memcpy(header + 16, &compressed_size, 4);
    memcpy(header + 28, &arch32, 4);
    memcpy(header + 40, &flags, 8);
    memcpy(header + 56, &decompressed, 8);
    memcpy(header + 64, data, stored);
    builder->used += 64 + padded;
}

static const void *end_container(struct builder *builder)
{
    uint32_t magic = 0xba55ed50u;
    uint16_t version = 1, header_size = 16;
    uint64_t size = builder->used - 16;
    memcpy(builder->bytes, &magic, 4);
    memcpy(builder->bytes + 4, &version, 2);
    memcpy(builder->bytes + 6, &header_size, 2);
    memcpy(builder->bytes + 8, &size, 8);
    return builder->bytes;
}

static uint32_t run_store(CUmodule module)
{
    CUfunction function = kernel_of(module, "store");
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, 4));
    void *params[] = {&out};
    EXPECT_OK(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    uint32_t value = 0;
    EXPECT_OK(cuMemcpyDtoH(&value, out, 4));
    EXPECT_OK(cuMemFree(out));
    return value;
}

static struct builder container;

Test(ptx_loading, a_fat_binary_runs_its_best_ptx_in_any_compression)
{
    start_device(0);
    enum compression modes[] = {PLAIN, WITH_LZ4, WITH_ZSTD};
    for (unsigned m = 0; m < 3; m++) {
        char ptx52[512], ptx80[512];
        store_kernel(ptx52, sizeof ptx52, 52, 52);
        store_kernel(ptx80, sizeof ptx80, 80, 80);
        const char too_new[] = "this is not PTX the simulator could parse";
        begin_container(&container);
        add_entry(&container, 2, 90, "\177ELF-not-really", 16, PLAIN);
        add_entry(&container, 1, 52, ptx52, strlen(ptx52) + 1, modes[m]);
        add_entry(&container, 1, 100, too_new, sizeof too_new, modes[m]);
        add_entry(&container, 1, 80, ptx80, strlen(ptx80) + 1, modes[m]);
        CUmodule module;
        EXPECT_OK(cuModuleLoadFatBinary(&module, end_container(&container)));
        cr_expect_eq(run_store(module), 80, "compression %u", m);
        EXPECT_OK(cuModuleUnload(module));
        /* The wrapper nvcc embeds points at the same container. */
        struct {
            uint32_t magic, version;
            const void *data;
            const void *unused;
        } wrapper = {0x466243b1u, 1, container.bytes, NULL};
        EXPECT_OK(cuModuleLoadData(&module, &wrapper));
        cr_expect_eq(run_store(module), 80);
        EXPECT_OK(cuModuleUnload(module));
    }
}

Test(ptx_loading, sass_only_images_cannot_run, .init = cr_redirect_stderr)
{
    start_device(0);
    begin_container(&container);
    add_entry(&container, 2, 90, "\177ELF-not-really", 16, PLAIN);
    CUmodule module;
    EXPECT_RESULT(cuModuleLoadData(&module, end_container(&container)), CUDA_ERROR_NO_BINARY_FOR_GPU);
    EXPECT_RESULT(cuModuleLoadData(&module, "\177ELF\2\1\1"), CUDA_ERROR_NO_BINARY_FOR_GPU);
    fflush(stderr);
    char text[1024] = {0};
    FILE *errors = cr_get_redirected_stderr();
    fread(text, 1, sizeof text - 1, errors);
    cr_expect(strstr(text, "built without PTX") != NULL, "%s", text);
    cr_expect(strstr(text, "-gencode arch=compute_90,code=compute_90") != NULL, "%s", text);
    cr_expect(strstr(text, "sm_90") != NULL, "%s", text);
}

Test(ptx_loading, ptx_files_libraries_and_kernel_handles)
{
    start_device(0);
    char ptx[512];
    store_kernel(ptx, sizeof ptx, 90, 7);
    char path[] = "/tmp/ptx_loading_XXXXXX";
    int descriptor = mkstemp(path);
    cr_assert_geq(descriptor, 0);
    cr_assert_eq(write(descriptor, ptx, strlen(ptx)), (ssize_t)strlen(ptx));
    close(descriptor);
    CUmodule module;
    EXPECT_OK(cuModuleLoad(&module, path));
    cr_expect_eq(run_store(module), 7);
    EXPECT_OK(cuModuleUnload(module));
    EXPECT_RESULT(cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE);
    unlink(path);
    EXPECT_RESULT(cuModuleLoad(&module, "/nonexistent.ptx"), CUDA_ERROR_FILE_NOT_FOUND);

    CUlibrary library;
    EXPECT_OK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel kernel;
    EXPECT_OK(cuLibraryGetKernel(&kernel, library, "store"));
    EXPECT_RESULT(cuLibraryGetKernel(&kernel, library, "missing"), CUDA_ERROR_NOT_FOUND);
    EXPECT_OK(cuLibraryGetKernel(&kernel, library, "store"));
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, 4));
    void *params[] = {&out};
    /* A CUkernel is accepted wherever a CUfunction is. */
    EXPECT_OK(cuLaunchKernel((CUfunction)kernel, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    CUfunction function;
    EXPECT_OK(cuKernelGetFunction(&function, kernel));
    const char *name;
    EXPECT_OK(cuFuncGetName(&name, function));
    cr_expect_str_eq(name, "store");
    uint32_t value = 0;
    EXPECT_OK(cuMemcpyDtoH(&value, out, 4));
    cr_expect_eq(value, 7);
    EXPECT_OK(cuLibraryUnload(library));
    EXPECT_RESULT(cuLaunchKernel((CUfunction)kernel, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL),
                  CUDA_ERROR_INVALID_HANDLE);
}

static const char config_ptx[] = PTX_HEADER
    ".visible .entry any(.param .u64 out)\n{\nret;\n}\n"
    ".visible .entry small(.param .u64 out)\n.maxntid 64, 1, 1\n{\nret;\n}\n";

Test(ptx_loading, launch_configurations_are_checked_like_the_driver)
{
    start_device(0);
    CUmodule module = load_ptx(config_ptx);
    CUfunction any = kernel_of(module, "any"), small = kernel_of(module, "small");
    CUdeviceptr out = 0;
    void *params[] = {&out};
    EXPECT_OK(cuLaunchKernel(any, 1, 1, 1, 1024, 1, 1, 0, NULL, params, NULL));
    EXPECT_RESULT(cuLaunchKernel(any, 1, 1, 1, 1025, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuLaunchKernel(any, 1, 1, 1, 32, 32, 2, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuLaunchKernel(any, 1, 1, 1, 1, 1, 65, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuLaunchKernel(any, 1, 65536, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuLaunchKernel(any, 0, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuLaunchKernel(any, 1, 1, 1, 1, 1, 1, 49 * 1024, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuFuncSetAttribute(any, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100 * 1024));
    EXPECT_OK(cuLaunchKernel(any, 1, 1, 1, 1, 1, 1, 100 * 1024, NULL, params, NULL));
    EXPECT_RESULT(cuFuncSetAttribute(any, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 300 * 1024),
                  CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuLaunchKernel(any, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuLaunchKernel(small, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
    EXPECT_RESULT(cuLaunchKernel(small, 1, 1, 1, 65, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    int threads;
    EXPECT_OK(cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, small));
    cr_expect_eq(threads, 64);
    EXPECT_RESULT(cuLaunchCooperativeKernel(any, 100000, 1, 1, 1024, 1, 1, 0, NULL, params),
                  CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    EXPECT_OK(cuLaunchCooperativeKernel(any, 132, 1, 1, 1024, 1, 1, 0, NULL, params));
    CUlaunchAttribute attribute = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value.cooperative = 1};
    CUlaunchConfig config = {.gridDimX = 2, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1,
                             .blockDimZ = 1, .attrs = &attribute, .numAttrs = 1};
    EXPECT_OK(cuLaunchKernelEx(&config, any, params, NULL));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuModuleUnload(module));
}

Test(ptx_loading, unsupported_instructions_fail_the_launch_with_their_text, .init = cr_redirect_stderr)
{
    start_device(0);
    CUmodule module = load_ptx(PTX_HEADER ".visible .entry odd()\n{\n.reg .b32 %r<4>;\n"
                                          "frobnicate.b32 %r1, %r2;\nret;\n}\n"
                                          ".visible .entry fine()\n{\nret;\n}\n");
    EXPECT_RESULT(cuLaunchKernel(kernel_of(module, "odd"), 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                  CUDA_ERROR_NOT_SUPPORTED);
    EXPECT_OK(cuLaunchKernel(kernel_of(module, "fine"), 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    EXPECT_OK(cuCtxSynchronize());
    fflush(stderr);
    char text[1024] = {0};
    fread(text, 1, sizeof text - 1, cr_get_redirected_stderr());
    cr_expect(strstr(text, "frobnicate.b32") != NULL, "%s", text);
    cr_expect(strstr(text, "line 7") != NULL, "%s", text);
}

Test(ptx_loading, malformed_ptx_is_invalid_ptx_with_a_log)
{
    start_device(0);
    char log[256] = "";
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, (void *)(uintptr_t)sizeof log};
    CUmodule module;
    EXPECT_RESULT(cuModuleLoadDataEx(&module, PTX_HEADER ".visible .entry broken(\n{\n", 2, options, values),
                  CUDA_ERROR_INVALID_PTX);
    cr_expect(strlen(log) > 0);
}

static const char scale_ptx[] = PTX_HEADER
    ".visible .entry scale(.param .u64 data, .param .u32 n, .param .u32 factor)\n{\n"
    ".reg .b32 %r<8>; .reg .b64 %rd<6>; .reg .pred %p<2>;\n"
    "ld.param.u64 %rd1, [data]; ld.param.u32 %r1, [n]; ld.param.u32 %r2, [factor];\n"
    "mov.u32 %r3, %ctaid.x; mov.u32 %r4, %ntid.x; mov.u32 %r5, %tid.x; mad.lo.s32 %r6, %r3, %r4, %r5;\n"
    "setp.ge.u32 %p1, %r6, %r1; @%p1 bra $end;\n"
    "mul.wide.u32 %rd2, %r6, 4; add.s64 %rd3, %rd1, %rd2; ld.global.u32 %r7, [%rd3];\n"
    "mul.lo.s32 %r7, %r7, %r2; st.global.u32 [%rd3], %r7;\n"
    "$end:\nret;\n}\n";

static void check_doubled(void *data)
{
    uint32_t *values = data;
    for (unsigned i = 0; i < 1000; i++)
        if (values[i] != 6 * i)
            values[0] = 0xbad;
}

Test(ptx_loading, kernels_are_ordered_with_copies_events_and_host_functions)
{
    start_device(0);
    CUmodule module = load_ptx(scale_ptx);
    CUfunction function = kernel_of(module, "scale");
    enum { N = 1000 };
    static uint32_t host[2][N], back[2][N];
    CUstream streams[2];
    CUdeviceptr data[2];
    CUevent done[2];
    for (unsigned s = 0; s < 2; s++) {
        EXPECT_OK(cuStreamCreate(&streams[s], CU_STREAM_NON_BLOCKING));
        EXPECT_OK(cuEventCreate(&done[s], 0));
        EXPECT_OK(cuMemAlloc(&data[s], N * 4));
        for (unsigned i = 0; i < N; i++)
            host[s][i] = i;
    }
    for (unsigned s = 0; s < 2; s++) {
        unsigned n = N, two = 2, three = 3;
        void *first[] = {&data[s], &n, &two}, *second[] = {&data[s], &n, &three};
        EXPECT_OK(cuMemcpyHtoDAsync(data[s], host[s], N * 4, streams[s]));
        EXPECT_OK(cuLaunchKernel(function, (N + 127) / 128, 1, 1, 128, 1, 1, 0, streams[s], first, NULL));
        EXPECT_OK(cuLaunchKernel(function, (N + 127) / 128, 1, 1, 128, 1, 1, 0, streams[s], second, NULL));
        EXPECT_OK(cuMemcpyDtoHAsync(back[s], data[s], N * 4, streams[s]));
        EXPECT_OK(cuLaunchHostFunc(streams[s], check_doubled, back[s]));
        EXPECT_OK(cuEventRecord(done[s], streams[s]));
    }
    for (unsigned s = 0; s < 2; s++) {
        EXPECT_OK(cuEventSynchronize(done[s]));
        for (unsigned i = 0; i < N; i++)
            cr_expect_eq(back[s][i], 6 * i, "stream %u element %u", s, i);
        EXPECT_OK(cuStreamDestroy(streams[s]));
    }
    EXPECT_OK(cuModuleUnload(module));
}

Test(ptx_loading, a_context_from_cuda13_cuCtxCreate_parameters)
{
    EXPECT_OK(cuInit(0));
    CUctxCreateParams parameters;
    memset(&parameters, 0, sizeof parameters);
    CUcontext context;
    EXPECT_OK(cuCtxCreate_v4(&context, &parameters, 0, 0));
    char ptx[512];
    store_kernel(ptx, sizeof ptx, 90, 11);
    CUmodule module = load_ptx(ptx);
    cr_expect_eq(run_store(module), 11);
    EXPECT_OK(cuModuleUnload(module));
    EXPECT_OK(cuCtxDestroy(context));
}

/* Every prefix of a real nvcc module (and some with a corrupted byte)
 * either loads or is refused with CUDA_ERROR_INVALID_PTX: never a crash,
 * and (in the sanitizer build) never a leak. */
Test(ptx_loading, truncated_and_corrupted_ptx_is_refused_cleanly, .init = cr_redirect_stderr)
{
    start_device(0);
    FILE *file = fopen(BENCHMARK_PTX, "rb");
    cr_assert_not_null(file, "%s", BENCHMARK_PTX);
    static char text[1 << 16];
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    static char copy[1 << 16];
    unsigned loaded = 0, refused = 0, seed = 1;
    for (size_t cut = 0; cut < length; cut += 11) {
        memcpy(copy, text, cut);
        copy[cut] = '\0';
        if (cut % 3 == 0 && cut > 0) {
            seed = seed * 1103515245u + 12345u;
            copy[seed % cut] = (char)(seed >> 16);
        }
        CUmodule module;
        CUresult result = cuModuleLoadData(&module, copy);
        if (result == CUDA_SUCCESS) {
            loaded++;
            EXPECT_OK(cuModuleUnload(module));
        } else {
            cr_expect(result == CUDA_ERROR_INVALID_PTX, "cut at %zu: %s", cut, result_name(result));
            refused++;
        }
    }
    cr_expect_gt(loaded, 0);
    cr_expect_gt(refused, 0);
}
