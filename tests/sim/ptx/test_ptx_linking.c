/* Linking several PTX texts into one module with the driver's JIT linker
 * (cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete): calls and
 * .extern variables resolve across texts, each text keeps its private
 * symbols, and unresolved or duplicate symbols fail the link. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fat_binary_builder.h"
#include "ptx_test_support.h"
#include <criterion/redirect.h>

/* The kernel's text: it calls `twice` and `from_b` and reads `offset`,
 * which only text B defines, and has a private `$str` and `helper` whose
 * names text B uses for its own. Thread t writes out[5t..5t+4]. */
static const char text_a[] = PTX_HEADER
    ".extern .func (.param .b32 r) twice (.param .b32 x);\n"
    ".extern .func (.param .b32 r) from_b (.param .b32 x);\n"
    ".extern .global .align 4 .u32 offset;\n"
    ".global .align 4 .u32 $str[1] = {100};\n"
    ".func (.param .b32 r) helper (.param .b32 x)\n{\n.reg .b32 %r<3>;\n"
    "ld.param.u32 %r1, [x];\nadd.u32 %r2, %r1, 1000;\nst.param.b32 [r], %r2;\nret;\n}\n"
    ".visible .entry k(.param .u64 out)\n{\n.reg .b32 %r<10>;\n.reg .b64 %rd<6>;\n"
    "ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\n"
    "{\n.param .b32 p0;\nst.param.b32 [p0], %r1;\n.param .b32 rv;\n"
    "call.uni (rv), twice, (p0);\nld.param.b32 %r2, [rv];\n}\n"
    "ld.global.u32 %r3, [offset];\n"
    "mov.u64 %rd2, $str;\nld.global.u32 %r4, [%rd2];\n"
    "{\n.param .b32 p0;\nst.param.b32 [p0], %r1;\n.param .b32 rv;\n"
    "call.uni (rv), helper, (p0);\nld.param.b32 %r5, [rv];\n}\n"
    "{\n.param .b32 p0;\nst.param.b32 [p0], %r1;\n.param .b32 rv;\n"
    "call.uni (rv), from_b, (p0);\nld.param.b32 %r6, [rv];\n}\n"
    "mul.wide.u32 %rd3, %r1, 20;\nadd.s64 %rd4, %rd1, %rd3;\n"
    "st.global.u32 [%rd4], %r2;\nst.global.u32 [%rd4+4], %r3;\nst.global.u32 [%rd4+8], %r4;\n"
    "st.global.u32 [%rd4+12], %r5;\nst.global.u32 [%rd4+16], %r6;\nret;\n}\n";

/* twice(x) = 2x + B's $str (200); from_b(x) = B's helper(x) = x + 2000. */
static const char text_b[] = PTX_HEADER
    ".visible .global .align 4 .u32 offset = 5;\n"
    ".global .align 4 .u32 $str[1] = {200};\n"
    ".func (.param .b32 r) helper (.param .b32 x)\n{\n.reg .b32 %r<3>;\n"
    "ld.param.u32 %r1, [x];\nadd.u32 %r2, %r1, 2000;\nst.param.b32 [r], %r2;\nret;\n}\n"
    ".visible .func (.param .b32 r) twice (.param .b32 x)\n{\n.reg .b32 %r<5>;\n"
    "ld.param.u32 %r1, [x];\nshl.b32 %r2, %r1, 1;\nld.global.u32 %r3, [$str];\nadd.u32 %r4, %r2, %r3;\n"
    "st.param.b32 [r], %r4;\nret;\n}\n"
    ".visible .func (.param .b32 r) from_b (.param .b32 x)\n{\n.reg .b32 %r<3>;\n"
    "ld.param.u32 %r1, [x];\n"
    "{\n.param .b32 p0;\nst.param.b32 [p0], %r1;\n.param .b32 rv;\n"
    "call.uni (rv), helper, (p0);\nld.param.b32 %r2, [rv];\n}\n"
    "st.param.b32 [r], %r2;\nret;\n}\n";

#define THREADS 32

/* The info log of the last link_state(). */
static char info_log[256];

static CUlinkState link_state(char *log, size_t log_size)
{
    CUlinkState state;
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_INFO_LOG_BUFFER,
                              CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, (void *)(uintptr_t)log_size, (void *)(uintptr_t)3, info_log,
                      (void *)(uintptr_t)sizeof info_log};
    info_log[0] = '\0';
    EXPECT_OK(cuLinkCreate(5, options, values, &state));
    return state;
}

static void add_ptx(CUlinkState state, const char *text, const char *name)
{
    EXPECT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, (void *)text, strlen(text) + 1, name, 0, NULL, NULL));
}

/* Links texts A and B (in either order) and loads the result. */
static CUmodule link_a_and_b(bool b_first)
{
    char log[256] = "";
    CUlinkState state = link_state(log, sizeof log);
    add_ptx(state, b_first ? text_b : text_a, "first.ptx");
    add_ptx(state, b_first ? text_a : text_b, "second.ptx");
    void *image;
    size_t size = 0;
    EXPECT_OK(cuLinkComplete(state, &image, &size));
    cr_expect_gt(size, 0);
    cr_expect(strstr(info_log, "linked 2 PTX texts") != NULL, "info log: %s", info_log);
    CUmodule module;
    EXPECT_OK(cuModuleLoadData(&module, image));
    EXPECT_OK(cuLinkDestroy(state));
    return module;
}

static void run_k(CUmodule module, uint32_t *results)
{
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, THREADS * 20));
    void *params[] = {&out};
    EXPECT_OK(cuLaunchKernel(kernel_of(module, "k"), 1, 1, 1, THREADS, 1, 1, 0, NULL, params, NULL));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuMemcpyDtoH(results, out, THREADS * 20));
    EXPECT_OK(cuMemFree(out));
}

Test(ptx_linking, a_kernel_calls_functions_another_text_defines)
{
    start_device(0);
    for (int order = 0; order < 2; order++) {
        CUmodule module = link_a_and_b(order == 1);
        uint32_t results[THREADS * 5];
        run_k(module, results);
        for (unsigned t = 0; t < THREADS; t++) {
            cr_expect_eq(results[5 * t], 2 * t + 200, "order %d: twice(%u) gave %u", order, t, results[5 * t]);
            cr_expect_eq(results[5 * t + 4], t + 2000, "order %d: from_b(%u) gave %u", order, t,
                         results[5 * t + 4]);
        }
        EXPECT_OK(cuModuleUnload(module));
    }
}

Test(ptx_linking, an_extern_global_is_the_definition_of_the_other_text)
{
    start_device(0);
    CUmodule module = link_a_and_b(false);
    uint32_t results[THREADS * 5];
    run_k(module, results);
    cr_expect_eq(results[1], 5, "offset read %u, B initializes it to 5", results[1]);
    /* The address the module reports is the memory the kernel reads. */
    CUdeviceptr offset;
    size_t bytes;
    EXPECT_OK(cuModuleGetGlobal(&offset, &bytes, module, "offset"));
    cr_expect_eq(bytes, 4);
    uint32_t nine = 9;
    EXPECT_OK(cuMemcpyHtoD(offset, &nine, sizeof nine));
    run_k(module, results);
    for (unsigned t = 0; t < THREADS; t++)
        cr_expect_eq(results[5 * t + 1], 9, "thread %u read offset %u after it was set to 9", t,
                     results[5 * t + 1]);
    EXPECT_OK(cuModuleUnload(module));
}

Test(ptx_linking, private_symbols_of_two_texts_with_one_name_stay_apart)
{
    start_device(0);
    CUmodule module = link_a_and_b(false);
    uint32_t results[THREADS * 5];
    run_k(module, results);
    for (unsigned t = 0; t < THREADS; t++) {
        cr_expect_eq(results[5 * t + 2], 100, "A's $str read %u", results[5 * t + 2]);
        cr_expect_eq(results[5 * t + 3], t + 1000, "A's helper(%u) gave %u", t, results[5 * t + 3]);
        /* twice (B) adds B's $str, from_b calls B's helper. */
        cr_expect_eq(results[5 * t], 2 * t + 200);
        cr_expect_eq(results[5 * t + 4], t + 2000);
    }
    EXPECT_OK(cuModuleUnload(module));
}

static const char calls_missing[] = PTX_HEADER
    ".extern .func (.param .b32 r) missing_function (.param .b32 x);\n"
    ".visible .entry caller(.param .u64 out)\n{\n.reg .b32 %r<3>;\n.reg .b64 %rd<2>;\n"
    "ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\n"
    "{\n.param .b32 p0;\nst.param.b32 [p0], %r1;\n.param .b32 rv;\n"
    "call.uni (rv), missing_function, (p0);\nld.param.b32 %r2, [rv];\n}\n"
    "st.global.u32 [%rd1], %r2;\nret;\n}\n";

static const char reads_missing[] = PTX_HEADER
    ".extern .global .align 4 .u32 missing_variable;\n"
    ".visible .entry reader(.param .u64 out)\n{\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n"
    "ld.param.u64 %rd1, [out];\nld.global.u32 %r1, [missing_variable];\nst.global.u32 [%rd1], %r1;\nret;\n}\n";

static void expect_link_failure(const char *first, const char *second, CUresult expected, const char *symbol)
{
    char log[256] = "";
    CUlinkState state = link_state(log, sizeof log);
    add_ptx(state, first, "first.ptx");
    if (second != NULL)
        add_ptx(state, second, "second.ptx");
    void *image = NULL;
    size_t size = 0;
    EXPECT_RESULT(cuLinkComplete(state, &image, &size), expected);
    cr_expect(strstr(log, symbol) != NULL, "the error log names '%s': %s", symbol, log);
    EXPECT_OK(cuLinkDestroy(state));
}

static void expect_stderr_names(const char *symbol, const char *result)
{
    fflush(stderr);
    char text[4096] = {0};
    fread(text, 1, sizeof text - 1, cr_get_redirected_stderr());
    cr_expect(strstr(text, symbol) != NULL, "stderr names '%s': %s", symbol, text);
    cr_expect(strstr(text, result) != NULL, "stderr names %s: %s", result, text);
}

Test(ptx_linking, an_unresolved_extern_fails_the_link_naming_it, .init = cr_redirect_stderr)
{
    start_device(0);
    expect_link_failure(calls_missing, text_b, CUDA_ERROR_NOT_FOUND, "missing_function");
    expect_link_failure(text_b, reads_missing, CUDA_ERROR_NOT_FOUND, "missing_variable");
    /* Alone, text A needs B: linking it by itself fails too. */
    expect_link_failure(text_a, NULL, CUDA_ERROR_NOT_FOUND, "offset");
    expect_stderr_names("missing_variable", "CUDA_ERROR_NOT_FOUND");
}

Test(ptx_linking, a_symbol_two_texts_define_visibly_fails_the_link, .init = cr_redirect_stderr)
{
    start_device(0);
    static const char another_twice[] = PTX_HEADER
        ".visible .func (.param .b32 r) twice (.param .b32 x)\n{\n.reg .b32 %r<2>;\n"
        "ld.param.u32 %r1, [x];\nst.param.b32 [r], %r1;\nret;\n}\n";
    static const char another_offset[] = PTX_HEADER ".visible .global .align 4 .u32 offset = 6;\n";
    expect_link_failure(text_b, another_twice, CUDA_ERROR_INVALID_PTX, "twice");
    expect_link_failure(another_offset, text_b, CUDA_ERROR_INVALID_PTX, "offset");
    expect_stderr_names("duplicate definition of 'offset'", "CUDA_ERROR_INVALID_PTX");

    /* A .weak definition gives way to the .visible one. */
    static const char weak_twice[] = PTX_HEADER
        ".weak .func (.param .b32 r) twice (.param .b32 x)\n{\n.reg .b32 %r<2>;\n"
        "ld.param.u32 %r1, [x];\nst.param.b32 [r], %r1;\nret;\n}\n";
    char log[256] = "";
    CUlinkState state = link_state(log, sizeof log);
    add_ptx(state, weak_twice, "weak.ptx");
    add_ptx(state, text_a, "a.ptx");
    add_ptx(state, text_b, "b.ptx");
    void *image;
    EXPECT_OK(cuLinkComplete(state, &image, NULL));
    CUmodule module;
    EXPECT_OK(cuModuleLoadData(&module, image));
    EXPECT_OK(cuLinkDestroy(state));
    uint32_t results[THREADS * 5];
    run_k(module, results);
    cr_expect_eq(results[5 * 3], 2 * 3 + 200, "B's .visible twice, not the .weak one: %u", results[15]);
    EXPECT_OK(cuModuleUnload(module));
}

Test(ptx_linking, ptx_files_link_and_other_inputs_are_not_supported, .init = cr_redirect_stderr)
{
    start_device(0);
    char path_a[] = "/tmp/ptx_linking_a_XXXXXX", path_b[] = "/tmp/ptx_linking_b_XXXXXX";
    int file_a = mkstemp(path_a), file_b = mkstemp(path_b);
    cr_assert(file_a >= 0 && file_b >= 0);
    cr_assert_eq(write(file_a, text_a, strlen(text_a)), (ssize_t)strlen(text_a));
    cr_assert_eq(write(file_b, text_b, strlen(text_b)), (ssize_t)strlen(text_b));
    close(file_a);
    close(file_b);

    char log[256] = "";
    CUlinkState state = link_state(log, sizeof log);
    EXPECT_OK(cuLinkAddFile(state, CU_JIT_INPUT_PTX, path_a, 0, NULL, NULL));
    EXPECT_OK(cuLinkAddFile(state, CU_JIT_INPUT_PTX, path_b, 0, NULL, NULL));
    EXPECT_RESULT(cuLinkAddFile(state, CU_JIT_INPUT_PTX, "/nonexistent/x.ptx", 0, NULL, NULL),
                  CUDA_ERROR_FILE_NOT_FOUND);
    static const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
    CUjitInputType unsupported[] = {CU_JIT_INPUT_CUBIN, CU_JIT_INPUT_OBJECT, CU_JIT_INPUT_LIBRARY};
    for (unsigned i = 0; i < 3; i++)
        EXPECT_RESULT(cuLinkAddData(state, unsupported[i], (void *)elf, sizeof elf, "x", 0, NULL, NULL),
                      CUDA_ERROR_NOT_SUPPORTED);
    cr_expect(strstr(log, "PTX only") != NULL, "the error log says why: %s", log);
    /* The refused inputs left the link as it was. */
    void *image;
    EXPECT_OK(cuLinkComplete(state, &image, NULL));
    CUmodule module;
    EXPECT_OK(cuModuleLoadData(&module, image));
    EXPECT_OK(cuLinkDestroy(state));
    EXPECT_RESULT(cuLinkDestroy(state), CUDA_ERROR_INVALID_HANDLE);
    uint32_t results[THREADS * 5];
    run_k(module, results);
    cr_expect_eq(results[5 * 7], 2 * 7 + 200);
    cr_expect_eq(results[5 * 7 + 1], 5);
    EXPECT_OK(cuModuleUnload(module));
    unlink(path_a);
    unlink(path_b);
    expect_stderr_names("PTX only", "cuLink");
}

Test(ptx_linking, a_text_loaded_alone_keeps_its_extern_variable)
{
    /* Without the linker, an .extern variable with a size still gets memory
     * of its own, as before linking existed. */
    start_device(0);
    CUmodule module;
    EXPECT_OK(cuModuleLoadData(&module, reads_missing));
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, 4));
    void *params[] = {&out};
    EXPECT_OK(cuLaunchKernel(kernel_of(module, "reader"), 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    EXPECT_OK(cuCtxSynchronize());
    uint32_t value = 1;
    EXPECT_OK(cuMemcpyDtoH(&value, out, 4));
    cr_expect_eq(value, 0);
    EXPECT_OK(cuMemFree(out));
    EXPECT_OK(cuModuleUnload(module));
}

Test(ptx_linking, a_fat_binary_input_contributes_the_ptx_loading_would_pick, .init = cr_redirect_stderr)
{
    start_device(0);
    static unsigned char fat_binary[16384], sass_only[1024];
    /* Text B as compute_90 PTX, next to SASS and to PTX too new for the
     * device, which would not parse. */
    const struct fat_entry entries[] = {
        {2, 90, "\177ELF not really"},
        {1, 90, text_b},
        {1, 75, "not PTX either"},
        {1, 100, "nor this"},
    };
    size_t size = build_fat_binary(fat_binary, sizeof fat_binary, entries, 4);
    char log[256] = "";
    CUlinkState state = link_state(log, sizeof log);
    add_ptx(state, text_a, "a.ptx");
    EXPECT_OK(cuLinkAddData(state, CU_JIT_INPUT_FATBINARY, fat_binary, size, "b.fatbin", 0, NULL, NULL));
    void *image;
    EXPECT_OK(cuLinkComplete(state, &image, NULL));
    CUmodule module;
    EXPECT_OK(cuModuleLoadData(&module, image));
    uint32_t results[THREADS * 5];
    run_k(module, results);
    cr_expect_eq(results[5 * 4], 2 * 4 + 200);
    cr_expect_eq(results[5 * 4 + 1], 5);
    EXPECT_OK(cuModuleUnload(module));

    const struct fat_entry sass[] = {{2, 90, "\177ELF not really"}};
    size = build_fat_binary(sass_only, sizeof sass_only, sass, 1);
    EXPECT_RESULT(cuLinkAddData(state, CU_JIT_INPUT_FATBINARY, sass_only, size, "sass.fatbin", 0, NULL, NULL),
                  CUDA_ERROR_NO_BINARY_FOR_GPU);
    EXPECT_RESULT(cuLinkAddData(state, CU_JIT_INPUT_FATBINARY, (void *)text_b, sizeof text_b, "b.ptx", 0, NULL,
                                NULL),
                  CUDA_ERROR_INVALID_IMAGE);
    EXPECT_OK(cuLinkDestroy(state));
    expect_stderr_names("without PTX", "sm_90");
}
