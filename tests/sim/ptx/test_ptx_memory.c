/* State spaces and atomics: global vectors, sign-extending loads, shared
 * memory (static and dynamic), local memory, .const and .global module
 * variables with initializers, struct parameters, and every atomic
 * operation on global and shared memory with many threads contending. */
#include "ptx_test_support.h"

static void launch(CUfunction function, unsigned grid, unsigned block, unsigned shared, void **params)
{
    EXPECT_OK(cuLaunchKernel(function, grid, 1, 1, block, 1, 1, shared, NULL, params, NULL));
    EXPECT_OK(cuCtxSynchronize());
}

static const char vector_ptx[] = PTX_HEADER
    ".visible .entry copy4(.param .u64 out, .param .u64 in)\n{\n"
    ".reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .f32 %f<8>; .reg .pred %p<2>;\n"
    "ld.param.u64 %rd1, [out]; ld.param.u64 %rd2, [in];\n"
    "mov.u32 %r1, %tid.x; mul.wide.u32 %rd3, %r1, 16; add.s64 %rd4, %rd2, %rd3; add.s64 %rd5, %rd1, %rd3;\n"
    "ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4];\n"
    "st.global.v4.f32 [%rd5], {%f4, %f3, %f2, %f1};\n"
    "ld.global.nc.v2.u32 {%r2, %r3}, [%rd4];\n"
    "st.global.v2.u32 [%rd5+8], {%r3, %r2};\n"
    "ld.global.s8 %r4, [%rd4+3];\n"
    "ld.global.u8 %r5, [%rd4+3];\n"
    "st.global.b8 [%rd5+1], %r5;\n"
    "setp.lt.s32 %p1, %r4, 0;\n"
    "@%p1 st.global.u8 [%rd5], 0x7;\n"
    "ret;\n}\n";

Test(ptx_memory, vector_and_narrow_global_accesses)
{
    start_device(0);
    CUmodule module = load_ptx(vector_ptx);
    CUfunction function = kernel_of(module, "copy4");
    float input[8] = {1, 2, 3, 4, -5, 6, 7, 8};
    CUdeviceptr in, out;
    EXPECT_OK(cuMemAlloc(&in, sizeof input));
    EXPECT_OK(cuMemAlloc(&out, sizeof input));
    EXPECT_OK(cuMemcpyHtoD(in, input, sizeof input));
    void *params[] = {&out, &in};
    launch(function, 1, 2, 0, params);
    unsigned char bytes[32];
    EXPECT_OK(cuMemcpyDtoH(bytes, out, sizeof bytes));
    uint32_t words[8];
    memcpy(words, bytes, sizeof words);
    /* Thread 0: v4 reversed, then the v2 words of 1.0f and 2.0f swapped
     * over the middle; byte 3 of 1.0f (0x3f) is positive as s8, so only
     * byte 1 of 4.0f (0x40800000) was overwritten with it. */
    cr_expect_eq(words[0], 0x40803f00u, "0x%x", words[0]);
    cr_expect_eq(words[1], f32_bits(3.0f));
    cr_expect_eq(words[2], f32_bits(2.0f));
    cr_expect_eq(words[3], f32_bits(1.0f));
    /* Thread 1: byte 3 of -5.0f (0xc0a00000) is negative as s8: byte 0 of
     * 8.0f (0x41000000) became 7 and byte 1 0xc0. */
    cr_expect_eq(words[4], 0x4100c007u, "0x%x", words[4]);
    cr_expect_eq(words[6], f32_bits(6.0f));
    cr_expect_eq(words[7], f32_bits(-5.0f));
    EXPECT_OK(cuModuleUnload(module));
}

static const char shared_ptx[] = PTX_HEADER
    ".shared .align 4 .b8 tile[1024];\n"
    ".extern .shared .align 16 .b8 dynamic[];\n"
    ".visible .entry reverse(.param .u64 out)\n{\n"
    ".reg .b32 %r<12>; .reg .b64 %rd<8>; .reg .pred %p<2>;\n"
    ".shared .align 4 .u32 local_counter;\n"
    "ld.param.u64 %rd1, [out];\n"
    "mov.u32 %r1, %tid.x; mov.u32 %r2, %ntid.x;\n"
    "shl.b32 %r3, %r1, 2; mov.u32 %r4, tile; add.s32 %r5, %r4, %r3;\n"
    "st.shared.u32 [%r5], %r1;\n"
    "mov.u32 %r6, dynamic; add.s32 %r7, %r6, %r3; mul.lo.s32 %r8, %r1, 10; st.shared.u32 [%r7], %r8;\n"
    "setp.eq.s32 %p1, %r1, 0;\n"
    "@%p1 st.shared.u32 [local_counter], 0;\n"
    "bar.sync 0;\n"
    "atom.shared.add.u32 %r9, [local_counter], 1;\n"
    "sub.s32 %r9, %r2, %r1; sub.s32 %r9, %r9, 1; shl.b32 %r9, %r9, 2;\n"
    "add.s32 %r10, %r4, %r9; ld.shared.u32 %r11, [%r10];\n"
    "add.s32 %r10, %r6, %r9; ld.shared.u32 %r10, [%r10]; add.s32 %r11, %r11, %r10;\n"
    "barrier.sync 0;\n"
    "ld.shared.u32 %r10, [local_counter]; add.s32 %r11, %r11, %r10;\n"
    /* generic access to shared memory through cvta */
    "cvta.shared.u64 %rd2, tile; ld.u32 %r10, [%rd2]; add.s32 %r11, %r11, %r10;\n"
    "mul.wide.u32 %rd3, %r1, 4; add.s64 %rd4, %rd1, %rd3; st.global.u32 [%rd4], %r11;\n"
    "ret;\n}\n";

Test(ptx_memory, static_and_dynamic_shared_memory_with_barriers)
{
    start_device(0);
    CUmodule module = load_ptx(shared_ptx);
    CUfunction function = kernel_of(module, "reverse");
    int attribute;
    EXPECT_OK(cuFuncGetAttribute(&attribute, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function));
    cr_expect_eq(attribute, 1024 + 4);
    enum { THREADS = 200 };
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, THREADS * 4));
    void *params[] = {&out};
    launch(function, 3, THREADS, THREADS * 4, params);
    uint32_t result[THREADS];
    EXPECT_OK(cuMemcpyDtoH(result, out, sizeof result));
    for (unsigned t = 0; t < THREADS; t++) {
        unsigned mirror = THREADS - 1 - t;
        cr_expect_eq(result[t], mirror + mirror * 10 + THREADS + 0, "thread %u: %u", t, result[t]);
    }
    EXPECT_OK(cuModuleUnload(module));
}

static const char local_ptx[] = PTX_HEADER
    ".visible .entry locals(.param .u64 out)\n{\n"
    ".local .align 8 .b8 depot[64];\n"
    ".reg .b32 %r<8>; .reg .b64 %rd<12>;\n"
    "mov.u64 %rd1, depot; cvta.local.u64 %rd2, %rd1;\n"
    "mov.u32 %r1, %tid.x;\n"
    "st.local.u32 [%rd1+4], %r1;\n"
    "ld.u32 %r2, [%rd2+4];\n"        /* generic view of the same local word */
    "mul.lo.s32 %r2, %r2, 3; st.u32 [%rd2+8], %r2;\n"
    "ld.local.u32 %r3, [depot+8];\n"
    "ld.param.u64 %rd3, [out]; mul.wide.u32 %rd4, %r1, 4; add.s64 %rd5, %rd3, %rd4; st.global.u32 [%rd5], %r3;\n"
    "ret;\n}\n";

Test(ptx_memory, local_memory_is_private_per_thread)
{
    start_device(0);
    CUmodule module = load_ptx(local_ptx);
    CUfunction function = kernel_of(module, "locals");
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, 64 * 4));
    void *params[] = {&out};
    launch(function, 1, 64, 0, params);
    uint32_t result[64];
    EXPECT_OK(cuMemcpyDtoH(result, out, sizeof result));
    for (unsigned t = 0; t < 64; t++)
        cr_expect_eq(result[t], 3 * t);
    EXPECT_OK(cuModuleUnload(module));
}

static const char variables_ptx[] = PTX_HEADER
    ".const .align 4 .u32 table[4] = {10, 20, 30, 40};\n"
    ".global .align 8 .u64 counter = 5;\n"
    ".global .align 4 .f32 weights[2] = {0f3F800000, 0f40000000};\n"
    ".visible .entry variables(.param .align 8 .b8 pair[16], .param .u64 out)\n{\n"
    ".reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .f32 %f<4>;\n"
    "ld.param.u32 %r1, [pair]; ld.param.u64 %rd1, [pair+8]; ld.param.u64 %rd2, [out];\n"
    "mov.u64 %rd3, table; ld.const.u32 %r2, [%rd3+8];\n"
    "ld.const.u32 %r3, [table+12];\n"
    "add.s32 %r4, %r2, %r3; add.s32 %r4, %r4, %r1;\n"
    "ld.global.f32 %f1, [weights+4]; cvt.rzi.s32.f32 %r5, %f1; add.s32 %r4, %r4, %r5;\n"
    "atom.global.add.u64 %rd4, [counter], %rd1;\n"
    "st.global.u32 [%rd2], %r4; st.global.u64 [%rd2+8], %rd4;\n"
    "ret;\n}\n";

Test(ptx_memory, module_variables_and_struct_parameters)
{
    start_device(0);
    CUmodule module = load_ptx(variables_ptx);
    CUfunction function = kernel_of(module, "variables");
    CUdeviceptr out, counter;
    size_t size;
    EXPECT_OK(cuModuleGetGlobal(&counter, &size, module, "counter"));
    cr_expect_eq(size, 8);
    CUdeviceptr table;
    EXPECT_OK(cuModuleGetGlobal(&table, &size, module, "table"));
    cr_expect_eq(size, 16);
    EXPECT_RESULT(cuModuleGetGlobal(&table, &size, module, "missing"), CUDA_ERROR_NOT_FOUND);
    EXPECT_OK(cuMemAlloc(&out, 16));
    struct {
        uint32_t first;
        uint32_t padding;
        uint64_t second;
    } pair = {7, 0, 100};
    void *params[] = {&pair, &out};
    launch(function, 1, 1, 0, params);
    uint64_t result[2];
    EXPECT_OK(cuMemcpyDtoH(result, out, sizeof result));
    cr_expect_eq((uint32_t)result[0], 30 + 40 + 7 + 2);
    cr_expect_eq(result[1], 5);
    uint64_t counter_value;
    EXPECT_OK(cuMemcpyDtoH(&counter_value, counter, 8));
    cr_expect_eq(counter_value, 105);
    /* Parameters through `extra`, as one packed buffer. */
    unsigned char buffer[24] = {0};
    memcpy(buffer, &pair, 16);
    memcpy(buffer + 16, &out, 8);
    size_t buffer_size = sizeof buffer;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &buffer_size,
                     CU_LAUNCH_PARAM_END};
    EXPECT_OK(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuMemcpyDtoH(&counter_value, counter, 8));
    cr_expect_eq(counter_value, 205);
    EXPECT_OK(cuModuleUnload(module));
}

/* Every thread of 8 blocks of 256 applies each atomic to shared words and
 * to global words; the final values are known whatever the order. */
static const char atomics_ptx[] = PTX_HEADER
    ".visible .entry atomics(.param .u64 g)\n{\n"
    ".reg .b32 %r<20>; .reg .b64 %rd<20>; .reg .f32 %f<4>; .reg .f64 %fd<4>; .reg .pred %p<4>;\n"
    ".shared .align 8 .b8 s[64];\n"
    "ld.param.u64 %rd1, [g];\n"
    "mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mad.lo.s32 %r4, %r2, %r3, %r1;\n"
    "setp.eq.s32 %p1, %r1, 0;\n"
    "@%p1 st.shared.u32 [s], 0;\n"
    "@%p1 st.shared.u32 [s+4], 0;\n"
    "bar.sync 0;\n"
    "atom.global.add.u32 %r5, [%rd1], 1;\n"
    "atom.global.add.f32 %f1, [%rd1+4], 0f3F000000;\n"
    "atom.global.min.s32 %r5, [%rd1+8], %r4;\n"
    "atom.global.max.u32 %r5, [%rd1+12], %r4;\n"
    "atom.global.inc.u32 %r5, [%rd1+16], 99;\n"
    "atom.global.dec.u32 %r5, [%rd1+20], 1000000;\n"
    "atom.global.or.b32 %r5, [%rd1+24], %r4;\n"
    "and.b32 %r6, %r4, 1; atom.global.xor.b32 %r5, [%rd1+28], %r6;\n"
    "not.b32 %r7, %r4; or.b32 %r7, %r7, 1; atom.global.and.b32 %r5, [%rd1+32], %r7;\n"
    "atom.global.exch.b32 %r5, [%rd1+36], 7;\n"
    /* A spin lock built from cas guards a non-atomic increment. */
    "$spin:\n"
    "atom.global.cas.b32 %r8, [%rd1+40], 0, 1;\n"
    "setp.ne.s32 %p2, %r8, 0;\n"
    "@%p2 bra $spin;\n"
    "ld.volatile.global.u32 %r9, [%rd1+44]; add.s32 %r9, %r9, 1; st.volatile.global.u32 [%rd1+44], %r9;\n"
    "atom.global.exch.b32 %r8, [%rd1+40], 0;\n"
    "cvt.u64.u32 %rd2, %r4; atom.global.add.u64 %rd3, [%rd1+48], %rd2;\n"
    "atom.global.add.f64 %fd1, [%rd1+56], 0d3FF0000000000000;\n"
    "red.global.add.u32 [%rd1+64], 2;\n"
    "atom.add.u32 %r5, [%rd1+68], 1;\n"
    "atom.shared.add.u32 %r10, [s], 1;\n"
    "red.shared.add.u32 [s+4], 3;\n"
    "bar.sync 0;\n"
    "@%p1 ld.shared.u32 %r11, [s];\n"
    "@%p1 ld.shared.u32 %r12, [s+4];\n"
    "@%p1 add.s32 %r11, %r11, %r12;\n"
    "@%p1 red.global.add.u32 [%rd1+72], %r11;\n"
    "ret;\n}\n";

Test(ptx_memory, atomics_on_global_and_shared_memory)
{
    start_device(0);
    CUmodule module = load_ptx(atomics_ptx);
    CUfunction function = kernel_of(module, "atomics");
    enum { BLOCKS = 8, THREADS = 256, TOTAL = BLOCKS * THREADS };
    uint32_t initial[20] = {0};
    initial[2] = 0x7fffffff; /* min */
    initial[5] = 5000;       /* dec */
    initial[8] = 0xffffffff; /* and */
    CUdeviceptr g;
    EXPECT_OK(cuMemAlloc(&g, sizeof initial));
    EXPECT_OK(cuMemcpyHtoD(g, initial, sizeof initial));
    void *params[] = {&g};
    launch(function, BLOCKS, THREADS, 0, params);
    uint32_t r[20];
    EXPECT_OK(cuMemcpyDtoH(r, g, sizeof r));
    float sum;
    memcpy(&sum, &r[1], 4);
    cr_expect_eq(r[0], TOTAL);
    cr_expect_eq(sum, TOTAL * 0.5f);
    cr_expect_eq(r[2], 0);
    cr_expect_eq(r[3], TOTAL - 1);
    cr_expect_eq(r[4], TOTAL % 100);
    cr_expect_eq(r[5], 5000 - TOTAL);
    cr_expect_eq(r[6], 2047);
    cr_expect_eq(r[7], 0); /* 1024 odd indices flip bit 0 an even number of times */
    cr_expect_eq(r[8], ~(uint32_t)((TOTAL - 1) & ~1u)); /* bits 1..10 cleared by some index */
    cr_expect_eq(r[9], 7);
    cr_expect_eq(r[10], 0);
    cr_expect_eq(r[11], TOTAL);
    uint64_t wide;
    memcpy(&wide, &r[12], 8);
    cr_expect_eq(wide, (uint64_t)TOTAL * (TOTAL - 1) / 2);
    double doubles;
    memcpy(&doubles, &r[14], 8);
    cr_expect_eq(doubles, (double)TOTAL);
    cr_expect_eq(r[16], 2 * TOTAL);
    cr_expect_eq(r[17], TOTAL);
    cr_expect_eq(r[18], BLOCKS * (THREADS + 3 * THREADS));
    EXPECT_OK(cuModuleUnload(module));
}

/* cp.async (sm_80 asynchronous copies to shared memory): the copy is done
 * at once, the bytes past the source size are zero-filled, and
 * commit_group/wait_group have nothing left to wait for. */
static const char async_copy_ptx[] = PTX_HEADER
    ".visible .entry async_copy(.param .u64 in, .param .u64 out)\n{\n"
    ".reg .b32 %r<8>; .reg .b64 %rd<8>;\n"
    ".shared .align 16 .b8 staging[1024];\n"
    "ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out]; mov.u32 %r1, %tid.x;\n"
    "shl.b32 %r2, %r1, 4; mov.u32 %r3, staging; add.s32 %r4, %r3, %r2;\n"
    "cvt.u64.u32 %rd3, %r2; add.s64 %rd4, %rd1, %rd3;\n"
    "cp.async.cg.shared.global [%r4], [%rd4], 16, 12;\n"
    "cp.async.commit_group;\ncp.async.wait_group 0;\nbar.sync 0;\n"
    "ld.shared.v4.u32 {%r5, %r6, %r7, %r1}, [%r4];\n"
    "add.s64 %rd5, %rd2, %rd3; st.global.v4.u32 [%rd5], {%r5, %r6, %r7, %r1};\n"
    "ret;\n}\n";

Test(ptx_memory, asynchronous_copies_to_shared_memory)
{
    start_device(0);
    CUmodule module = load_ptx(async_copy_ptx);
    CUfunction function = kernel_of(module, "async_copy");
    enum { THREADS = 64 };
    uint32_t input[THREADS * 4];
    for (unsigned i = 0; i < THREADS * 4; i++)
        input[i] = 1000 + i;
    CUdeviceptr in, out;
    EXPECT_OK(cuMemAlloc(&in, sizeof input));
    EXPECT_OK(cuMemAlloc(&out, sizeof input));
    EXPECT_OK(cuMemcpyHtoD(in, input, sizeof input));
    void *params[] = {&in, &out};
    launch(function, 1, THREADS, 0, params);
    uint32_t result[THREADS * 4];
    EXPECT_OK(cuMemcpyDtoH(result, out, sizeof result));
    for (unsigned t = 0; t < THREADS; t++)
        for (unsigned e = 0; e < 4; e++)
            cr_expect_eq(result[t * 4 + e], e < 3 ? input[t * 4 + e] : 0, "thread %u word %u", t, e);
    EXPECT_OK(cuModuleUnload(module));
}

/* cvta between generic and shared or local addresses, both ways. */
static const char cvta_ptx[] = PTX_HEADER
    ".visible .entry round_trip(.param .u64 out)\n{\n"
    ".reg .b32 %r<8>; .reg .b64 %rd<12>;\n"
    ".shared .align 4 .b8 words[256];\n.local .align 4 .b8 depot[16];\n"
    "mov.u32 %r1, %tid.x; shl.b32 %r2, %r1, 2; mov.u32 %r3, words; add.s32 %r4, %r3, %r2;\n"
    "cvt.u64.u32 %rd1, %r4; cvta.shared.u64 %rd2, %rd1; st.u32 [%rd2], %r1;\n"      /* generic store */
    "cvta.to.shared.u64 %rd3, %rd2; cvt.u32.u64 %r5, %rd3; ld.shared.u32 %r6, [%r5];\n" /* and back */
    "mov.u64 %rd4, depot; cvta.local.u64 %rd5, %rd4; st.u32 [%rd5+4], %r6;\n"
    "cvta.to.local.u64 %rd6, %rd5; ld.local.u32 %r7, [%rd6+4]; add.s32 %r7, %r7, 100;\n"
    "ld.param.u64 %rd7, [out]; cvta.to.global.u64 %rd8, %rd7; mul.wide.u32 %rd9, %r1, 4; add.s64 %rd10, %rd8, %rd9;\n"
    "st.global.u32 [%rd10], %r7;\nret;\n}\n";

Test(ptx_memory, generic_addresses_convert_both_ways)
{
    start_device(0);
    CUmodule module = load_ptx(cvta_ptx);
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, 64 * 4));
    void *params[] = {&out};
    launch(kernel_of(module, "round_trip"), 1, 64, 0, params);
    uint32_t result[64];
    EXPECT_OK(cuMemcpyDtoH(result, out, sizeof result));
    for (unsigned t = 0; t < 64; t++)
        cr_expect_eq(result[t], t + 100, "thread %u: %u", t, result[t]);
    EXPECT_OK(cuModuleUnload(module));
}

/* ldu: a load of a value every thread of the warp reads alike (a hint the
 * interpreter has no use for: it is a plain global load). */
Test(ptx_memory, ldu_loads_like_ld)
{
    start_device(0);
    CHECK_CASES("ldu.global.u32 %r20, [%rd4];\n" RESULT_R32, {0x12345678u, 0, 0, 0x12345678u},
                {0xfedcba9876543210ull, 0, 0, 0x76543210u});
    CHECK_CASES("ldu.global.u64 %rd20, [%rd4+8];\n", {0, 0xfedcba9876543210ull, 0, 0xfedcba9876543210ull});
}
