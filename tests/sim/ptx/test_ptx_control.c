/* Control flow, warps and threads: divergent branches and loops reconverge,
 * barriers order shared memory, warp shuffles and votes see their warp, the
 * special registers describe the launch, and faults become sticky errors. */
#include "ptx_test_support.h"

#include <criterion/redirect.h>

static void run_1d(const char *ptx, const char *name, unsigned grid, unsigned block, CUdeviceptr out)
{
    CUmodule module = load_ptx(ptx);
    CUfunction function = kernel_of(module, name);
    void *params[] = {&out};
    EXPECT_OK(cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuModuleUnload(module));
}

/* Thread t loops t % 7 times inside an if/else on t % 3, then all lanes
 * shuffle: the shuffle sees every lane, so they reconverged. */
static const char divergence_ptx[] = PTX_HEADER
    ".visible .entry diverge(.param .u64 out)\n{\n"
    ".reg .b32 %r<20>; .reg .b64 %rd<8>; .reg .pred %p<6>;\n"
    "mov.u32 %r1, %tid.x; mov.u32 %r2, 0;\n"
    "rem.u32 %r3, %r1, 3; setp.eq.s32 %p1, %r3, 0;\n"
    "@%p1 bra $else;\n"
    "rem.u32 %r4, %r1, 7; mov.u32 %r5, 0;\n"
    "$loop:\n"
    "setp.ge.u32 %p2, %r5, %r4; @%p2 bra $done;\n"
    "add.s32 %r2, %r2, 10; add.s32 %r5, %r5, 1; bra.uni $loop;\n"
    "$done:\n"
    "bra.uni $join;\n"
    "$else:\n"
    "mov.u32 %r2, 1000;\n"
    "$join:\n"
    "shfl.sync.bfly.b32 %r6, %r2, 1, 31, -1;\n"
    "add.s32 %r7, %r2, %r6;\n"
    "ld.param.u64 %rd1, [out]; mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r7;\n"
    "ret;\n}\n";

static unsigned divergence_value(unsigned t)
{
    return t % 3 == 0 ? 1000 : 10 * (t % 7);
}

Test(ptx_control, divergent_paths_reconverge_before_a_shuffle)
{
    start_device(0);
    enum { THREADS = 96 };
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, THREADS * 4));
    run_1d(divergence_ptx, "diverge", 1, THREADS, out);
    uint32_t r[THREADS];
    EXPECT_OK(cuMemcpyDtoH(r, out, sizeof r));
    for (unsigned t = 0; t < THREADS; t++)
        cr_expect_eq(r[t], divergence_value(t) + divergence_value(t ^ 1), "thread %u: %u", t, r[t]);
}

/* Each shuffle mode and its in-range predicate, with a 16-lane clamp for
 * idx/down (c = 0x1f or segment masks) and up (c = 0). */
static const char shuffle_ptx[] = PTX_HEADER
    ".visible .entry shuffles(.param .u64 out)\n{\n"
    ".reg .b32 %r<20>; .reg .b64 %rd<8>; .reg .pred %p<6>;\n"
    "mov.u32 %r1, %laneid; mul.lo.s32 %r2, %r1, 100;\n"
    "shfl.sync.up.b32 %r3|%p1, %r2, 3, 0, -1;\n"
    "shfl.sync.down.b32 %r4|%p2, %r2, 5, 31, -1;\n"
    "shfl.sync.idx.b32 %r5, %r2, 7, 31, -1;\n"
    "shfl.sync.idx.b32 %r6, %r2, 2, 0x181f, -1;\n" /* segments of 8 lanes: lane 2 of each */
    "shfl.sync.down.b32 %r7|%p3, %r2, 4, 0x181f, -1;\n"
    "selp.u32 %r8, 1, 0, %p1; selp.u32 %r9, 1, 0, %p2; selp.u32 %r10, 1, 0, %p3;\n"
    "mov.u32 %r11, %tid.x; mul.wide.u32 %rd2, %r11, 32; ld.param.u64 %rd1, [out]; add.s64 %rd3, %rd1, %rd2;\n"
    "st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r6};\n"
    "st.global.v4.u32 [%rd3+16], {%r7, %r8, %r9, %r10};\n"
    "ret;\n}\n";

Test(ptx_control, shuffles_in_every_mode)
{
    start_device(0);
    enum { THREADS = 64 };
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, THREADS * 32));
    run_1d(shuffle_ptx, "shuffles", 1, THREADS, out);
    uint32_t r[THREADS][8];
    EXPECT_OK(cuMemcpyDtoH(r, out, sizeof r));
    for (unsigned t = 0; t < THREADS; t++) {
        unsigned lane = t % 32;
        bool up_ok = lane >= 3, down_ok = lane + 5 <= 31;
        cr_expect_eq(r[t][0], 100 * (up_ok ? lane - 3 : lane), "up lane %u", lane);
        cr_expect_eq(r[t][1], 100 * (down_ok ? lane + 5 : lane), "down lane %u", lane);
        cr_expect_eq(r[t][2], 700);
        cr_expect_eq(r[t][3], 100 * ((lane & ~7u) + 2), "segment idx lane %u", lane);
        bool segment_down_ok = (lane & 7) + 4 <= 7;
        cr_expect_eq(r[t][4], 100 * (segment_down_ok ? lane + 4 : lane), "segment down lane %u", lane);
        cr_expect_eq(r[t][5], up_ok);
        cr_expect_eq(r[t][6], down_ok);
        cr_expect_eq(r[t][7], segment_down_ok);
    }
}

static const char vote_ptx[] = PTX_HEADER
    ".visible .entry votes(.param .u64 out)\n{\n"
    ".reg .b32 %r<20>; .reg .b64 %rd<8>; .reg .pred %p<8>;\n"
    "mov.u32 %r1, %laneid; and.b32 %r2, %r1, 1; setp.eq.s32 %p1, %r2, 1;\n"
    "vote.sync.ballot.b32 %r3, %p1, -1;\n"
    "vote.sync.all.pred %p2, %p1, -1;\n"
    "setp.lt.u32 %p3, %r1, 40;\n"
    "vote.sync.all.pred %p4, %p3, -1;\n"
    "vote.sync.any.pred %p5, %p1, -1;\n"
    "vote.sync.uni.pred %p6, %p1, -1;\n"
    "vote.sync.ballot.b32 %r4, !%p1, -1;\n"
    "selp.u32 %r5, 1, 0, %p2; selp.u32 %r6, 1, 0, %p4; selp.u32 %r7, 1, 0, %p5; selp.u32 %r8, 1, 0, %p6;\n"
    "setp.lt.u32 %p7, %r1, 10;\n"
    "mov.u32 %r9, 0;\n"
    "@%p7 activemask.b32 %r9;\n"
    "match.any.sync.b32 %r10, %r2, -1;\n"
    "mov.u32 %r11, %tid.x; mul.wide.u32 %rd2, %r11, 32; ld.param.u64 %rd1, [out]; add.s64 %rd3, %rd1, %rd2;\n"
    "st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r6};\n"
    "st.global.v4.u32 [%rd3+16], {%r7, %r8, %r9, %r10};\n"
    "ret;\n}\n";

Test(ptx_control, votes_ballots_and_active_masks)
{
    start_device(0);
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, 32 * 32));
    run_1d(vote_ptx, "votes", 1, 32, out);
    uint32_t r[32][8];
    EXPECT_OK(cuMemcpyDtoH(r, out, sizeof r));
    for (unsigned lane = 0; lane < 32; lane++) {
        cr_expect_eq(r[lane][0], 0xaaaaaaaau);
        cr_expect_eq(r[lane][1], 0x55555555u);
        cr_expect_eq(r[lane][2], 0);
        cr_expect_eq(r[lane][3], 1);
        cr_expect_eq(r[lane][4], 1);
        cr_expect_eq(r[lane][5], 0);
        cr_expect_eq(r[lane][6], lane < 10 ? 0xffffffffu : 0, "activemask lane %u: 0x%x", lane, r[lane][6]);
        cr_expect_eq(r[lane][7], lane & 1 ? 0xaaaaaaaau : 0x55555555u);
    }
}

/* A partial last warp, 3-D blocks and grids: every special register. */
static const char special_ptx[] = PTX_HEADER
    ".visible .entry specials(.param .u64 out)\n{\n"
    ".reg .b32 %r<30>; .reg .b64 %rd<12>; .reg .pred %p<6>;\n"
    "mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y; mov.u32 %r3, %tid.z;\n"
    "mov.u32 %r4, %ntid.x; mov.u32 %r5, %ntid.y; mov.u32 %r6, %ntid.z;\n"
    "mov.u32 %r7, %ctaid.x; mov.u32 %r8, %ctaid.y; mov.u32 %r9, %ctaid.z;\n"
    "mov.u32 %r10, %nctaid.x; mov.u32 %r11, %nctaid.y; mov.u32 %r12, %nctaid.z;\n"
    "mov.u32 %r13, %laneid; mov.u32 %r14, %warpid; mov.u32 %r15, %smid; mov.u32 %r16, %nsmid;\n"
    "mov.u32 %r17, %lanemask_lt;\n"
    "mov.u64 %rd1, %clock64; mov.u64 %rd2, %globaltimer; mov.u32 %r18, %clock;\n"
    "mov.u64 %rd3, %clock64; sub.s64 %rd4, %rd3, %rd1; setp.ge.s64 %p1, %rd4, 0; selp.u32 %r19, 1, 0, %p1;\n"
    "setp.ne.s64 %p2, %rd2, 0; selp.u32 %r20, 1, 0, %p2;\n"
    /* linear thread and block index */
    "mad.lo.s32 %r21, %r3, %r5, %r2; mad.lo.s32 %r21, %r21, %r4, %r1;\n"
    "mad.lo.s32 %r22, %r9, %r11, %r8; mad.lo.s32 %r22, %r22, %r10, %r7;\n"
    "mul.lo.s32 %r23, %r4, %r5; mul.lo.s32 %r23, %r23, %r6; mad.lo.s32 %r24, %r22, %r23, %r21;\n"
    "mul.wide.u32 %rd5, %r24, 64; ld.param.u64 %rd6, [out]; add.s64 %rd7, %rd6, %rd5;\n"
    "st.global.v4.u32 [%rd7], {%r1, %r2, %r3, %r4};\n"
    "st.global.v4.u32 [%rd7+16], {%r5, %r6, %r7, %r8};\n"
    "st.global.v4.u32 [%rd7+32], {%r9, %r10, %r11, %r12};\n"
    "st.global.v4.u32 [%rd7+48], {%r13, %r14, %r17, %r19};\n"
    "setp.lt.u32 %p3, %r15, %r16; @!%p3 trap;\n"
    "setp.eq.s32 %p4, %r20, 0; @%p4 trap;\n"
    "ret;\n}\n";

Test(ptx_control, special_registers_describe_the_launch)
{
    start_device(0);
    CUmodule module = load_ptx(special_ptx);
    CUfunction function = kernel_of(module, "specials");
    const unsigned bx = 5, by = 3, bz = 3, gx = 2, gy = 3, gz = 2;
    const unsigned threads = bx * by * bz, total = threads * gx * gy * gz;
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, total * 64));
    void *params[] = {&out};
    EXPECT_OK(cuLaunchKernel(function, gx, gy, gz, bx, by, bz, 0, NULL, params, NULL));
    EXPECT_OK(cuCtxSynchronize());
    uint32_t *r = malloc(total * 64);
    EXPECT_OK(cuMemcpyDtoH(r, out, total * 64));
    for (unsigned block = 0; block < gx * gy * gz; block++)
        for (unsigned t = 0; t < threads; t++) {
            uint32_t *v = r + (block * threads + t) * 16;
            cr_expect_eq(v[0], t % bx);
            cr_expect_eq(v[1], (t / bx) % by);
            cr_expect_eq(v[2], t / (bx * by));
            cr_expect(v[3] == bx && v[4] == by && v[5] == bz);
            cr_expect_eq(v[6], block % gx);
            cr_expect_eq(v[7], (block / gx) % gy);
            cr_expect_eq(v[8], block / (gx * gy));
            cr_expect(v[9] == gx && v[10] == gy && v[11] == gz);
            cr_expect_eq(v[12], t % 32);
            cr_expect_eq(v[13], t / 32);
            cr_expect_eq(v[14], (1u << (t % 32)) - 1);
            cr_expect_eq(v[15], 1);
        }
    free(r);
    EXPECT_OK(cuModuleUnload(module));
}

/* Threads leave early; the rest still meet at the barrier (exited threads
 * do not hold it up), and a producer/consumer handoff through shared
 * memory is ordered by it. */
static const char barrier_ptx[] = PTX_HEADER
    ".visible .entry barriers(.param .u64 out)\n{\n"
    ".reg .b32 %r<12>; .reg .b64 %rd<8>; .reg .pred %p<4>;\n"
    ".shared .align 4 .b8 slots[4096];\n"
    "mov.u32 %r1, %tid.x; mov.u32 %r2, %ntid.x;\n"
    "setp.ge.u32 %p1, %r1, 900; @%p1 exit;\n"
    "shl.b32 %r3, %r1, 2; mov.u32 %r4, slots; add.s32 %r5, %r4, %r3; mul.lo.s32 %r6, %r1, %r1; st.shared.u32 [%r5], %r6;\n"
    "bar.sync 0;\n"
    "add.s32 %r7, %r1, 1; rem.u32 %r7, %r7, 900; shl.b32 %r7, %r7, 2; add.s32 %r7, %r4, %r7; ld.shared.u32 %r8, [%r7];\n"
    "bar.sync 0;\n"
    "st.shared.u32 [%r5], 0;\n"
    "bar.sync 0;\n"
    "ld.shared.u32 %r9, [%r7]; add.s32 %r8, %r8, %r9;\n"
    "ld.param.u64 %rd1, [out]; mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r8;\n"
    "ret;\n}\n";

Test(ptx_control, barriers_with_exited_threads)
{
    start_device(0);
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, 1024 * 4));
    EXPECT_OK(cuMemsetD32(out, 0xdead, 1024));
    run_1d(barrier_ptx, "barriers", 2, 1024, out);
    uint32_t r[1024];
    EXPECT_OK(cuMemcpyDtoH(r, out, sizeof r));
    for (unsigned t = 0; t < 900; t++) {
        unsigned next = (t + 1) % 900;
        cr_expect_eq(r[t], next * next, "thread %u", t);
    }
    cr_expect_eq(r[950], 0xdead);
}

/* Faults: the launch succeeds, the synchronize that waits for it returns
 * the error, and so does every later call in the context. */
static const char fault_ptx[] = PTX_HEADER
    ".visible .entry wild(.param .u64 address)\n{\n"
    ".reg .b64 %rd<4>; .reg .b32 %r<2>;\n"
    "ld.param.u64 %rd1, [address]; st.global.u32 [%rd1], 1;\n"
    "ret;\n}\n"
    ".visible .entry trapper(.param .u64 address)\n{\n"
    "trap;\n}\n"
    ".visible .entry breakpoint(.param .u64 address)\n{\n"
    "brkpt;\n}\n"
    ".visible .entry misaligned(.param .u64 address)\n{\n"
    ".reg .b64 %rd<4>;\n"
    "ld.param.u64 %rd1, [address]; add.s64 %rd2, %rd1, 2; st.global.u32 [%rd2], 1;\n"
    "ret;\n}\n";

static void expect_sticky_fault(const char *kernel, CUdeviceptr address, CUresult expected)
{
    start_device(0);
    CUmodule module = load_ptx(fault_ptx);
    CUfunction function = kernel_of(module, kernel);
    void *params[] = {&address};
    EXPECT_OK(cuLaunchKernel(function, 4, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
    EXPECT_RESULT(cuCtxSynchronize(), expected);
    CUdeviceptr more;
    EXPECT_RESULT(cuMemAlloc(&more, 16), expected);
    EXPECT_RESULT(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), expected);
    /* A primary-context reset clears it, as on a GPU. */
    EXPECT_OK(cuDevicePrimaryCtxReset(0));
    start_device(0);
    EXPECT_OK(cuMemAlloc(&more, 16));
}

Test(ptx_control, an_illegal_address_is_a_sticky_error)
{
    expect_sticky_fault("wild", 0x10, CUDA_ERROR_ILLEGAL_ADDRESS);
}

Test(ptx_control, a_trap_is_a_sticky_launch_failure)
{
    expect_sticky_fault("trapper", 0, CUDA_ERROR_LAUNCH_FAILED);
}

/* With no debugger attached, a breakpoint ends the kernel like a trap. */
Test(ptx_control, a_breakpoint_without_a_debugger_is_a_sticky_launch_failure)
{
    expect_sticky_fault("breakpoint", 0, CUDA_ERROR_LAUNCH_FAILED);
}

Test(ptx_control, a_misaligned_store_is_a_sticky_error)
{
    CUdeviceptr memory;
    start_device(0);
    EXPECT_OK(cuMemAlloc(&memory, 64));
    expect_sticky_fault("misaligned", memory, CUDA_ERROR_MISALIGNED_ADDRESS);
}

/* A spin lock taken by every lane of a warp: the lane holding it must get
 * to release it while the others spin (independent thread scheduling). */
static const char lock_ptx[] = PTX_HEADER
    ".visible .entry locked(.param .u64 out)\n{\n"
    ".reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<2>;\n"
    "ld.param.u64 %rd1, [out];\n"
    "$spin:\n"
    "atom.global.cas.b32 %r1, [%rd1], 0, 1;\n"
    "setp.ne.s32 %p1, %r1, 0;\n"
    "@%p1 bra $spin;\n"
    "ld.volatile.global.u32 %r2, [%rd1+4]; add.s32 %r2, %r2, 1; st.volatile.global.u32 [%rd1+4], %r2;\n"
    "atom.global.exch.b32 %r3, [%rd1], 0;\n"
    "ret;\n}\n";

Test(ptx_control, spin_locks_within_a_warp_make_progress)
{
    start_device(0);
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, 8));
    EXPECT_OK(cuMemsetD32(out, 0, 2));
    run_1d(lock_ptx, "locked", 4, 64, out);
    uint32_t r[2];
    EXPECT_OK(cuMemcpyDtoH(r, out, sizeof r));
    cr_expect_eq(r[0], 0);
    cr_expect_eq(r[1], 256);
}

static const char printf_ptx[] = PTX_HEADER
    ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);\n"
    ".global .align 1 .b8 $str[28] = {116, 104, 114, 101, 97, 100, 32, 37, 100, 58, 32, 37, 53, 46, 50, 102, 32,"
    " 37, 115, 32, 37, 108, 108, 120, 10, 0, 0, 0};\n"
    ".global .align 1 .b8 $word[3] = {111, 107, 0};\n"
    ".visible .entry say(.param .u64 out)\n{\n"
    ".local .align 8 .b8 depot[32];\n"
    ".reg .b32 %r<4>; .reg .b64 %rd<10>; .reg .f64 %fd<2>;\n"
    "mov.u64 %rd1, depot; cvta.local.u64 %rd2, %rd1;\n"
    "mov.u32 %r1, %tid.x; st.local.u32 [%rd1], %r1;\n"
    "cvt.rn.f64.u32 %fd1, %r1; st.local.f64 [%rd1+8], %fd1;\n"
    "cvta.global.u64 %rd3, $word; st.local.u64 [%rd1+16], %rd3;\n"
    "mov.u64 %rd4, 0xabcdef; st.local.u64 [%rd1+24], %rd4;\n"
    "cvta.global.u64 %rd5, $str;\n"
    "{\n.param .b64 param0;\n.param .b64 param1;\n.param .b32 retval0;\n"
    "st.param.b64 [param0], %rd5;\nst.param.b64 [param1], %rd2;\n"
    "call.uni (retval0), vprintf, (param0, param1);\nld.param.b32 %r2, [retval0];\n}\n"
    "ld.param.u64 %rd6, [out]; mul.wide.u32 %rd7, %r1, 4; add.s64 %rd8, %rd6, %rd7;\n"
    "st.global.u32 [%rd8], %r2;\n"
    "ret;\n}\n";

Test(ptx_control, device_printf_formats_each_thread, .init = cr_redirect_stdout)
{
    start_device(0);
    CUmodule module = load_ptx(printf_ptx);
    CUfunction function = kernel_of(module, "say");
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, 8));
    void *params[] = {&out};
    EXPECT_OK(cuLaunchKernel(function, 1, 1, 1, 2, 1, 1, 0, NULL, params, NULL));
    EXPECT_OK(cuCtxSynchronize());
    fflush(stdout);
    cr_expect_stdout_eq_str("thread 0:  0.00 ok abcdef\nthread 1:  1.00 ok abcdef\n");
    /* CUDA's printf returns the number of arguments it parsed, not the
     * characters written. */
    int32_t returned[2];
    EXPECT_OK(cuMemcpyDtoH(returned, out, sizeof returned));
    cr_expect_eq(returned[0], 4);
    cr_expect_eq(returned[1], 4);
}

/* assert() in device code: nvcc calls __assertfail, which reports the
 * failing thread on stderr and stops the kernel with a sticky
 * CUDA_ERROR_ASSERT. */
static const char assert_ptx[] = PTX_HEADER
    ".extern .func __assertfail(.param .b64 a, .param .b64 b, .param .b32 c, .param .b64 d, .param .b64 e);\n"
    ".global .align 1 .b8 $message[6] = {120, 32, 62, 32, 48, 0};\n"
    ".global .align 1 .b8 $file[5] = {107, 46, 99, 117, 0};\n"
    ".global .align 1 .b8 $function[2] = {107, 0};\n"
    ".visible .entry checked(.param .u32 x)\n{\n"
    ".reg .b32 %r<4>; .reg .b64 %rd<8>; .reg .pred %p<2>;\n"
    "ld.param.u32 %r1, [x]; mov.u32 %r2, %tid.x; setp.ne.s32 %p1, %r2, 3; @%p1 bra $ok;\n"
    "setp.gt.s32 %p1, %r1, 0; @%p1 bra $ok;\n"
    "cvta.global.u64 %rd1, $message; cvta.global.u64 %rd2, $file; cvta.global.u64 %rd3, $function;\n"
    "{ // callseq 0, 0\n.reg .b32 temp_param_reg;\n"
    ".param .b64 param0;\nst.param.b64 [param0+0], %rd1;\n.param .b64 param1;\nst.param.b64 [param1+0], %rd2;\n"
    ".param .b32 param2;\nst.param.b32 [param2+0], 42;\n.param .b64 param3;\nst.param.b64 [param3+0], %rd3;\n"
    ".param .b64 param4;\nst.param.b64 [param4+0], 1;\n"
    "call.uni \n__assertfail, \n(\nparam0, \nparam1, \nparam2, \nparam3, \nparam4\n);\n} // callseq 0\n"
    "$ok:\nret;\n}\n";

Test(ptx_control, a_failed_device_assert_reports_and_is_sticky, .init = cr_redirect_stderr)
{
    start_device(0);
    CUmodule module = load_ptx(assert_ptx);
    CUfunction function = kernel_of(module, "checked");
    int x = 1;
    void *params[] = {&x};
    EXPECT_OK(cuLaunchKernel(function, 1, 1, 1, 8, 1, 1, 0, NULL, params, NULL));
    EXPECT_OK(cuCtxSynchronize());
    x = 0;
    EXPECT_OK(cuLaunchKernel(function, 2, 1, 1, 8, 1, 1, 0, NULL, params, NULL));
    EXPECT_RESULT(cuCtxSynchronize(), CUDA_ERROR_ASSERT);
    fflush(stderr);
    char text[2048] = {0};
    fread(text, 1, sizeof text - 1, cr_get_redirected_stderr());
    cr_expect(strstr(text, "k.cu:42: k: block: [0,0,0], thread: [3,0,0] Assertion `x > 0` failed.") != NULL, "%s",
              text);
}

/* A by-value struct indexed at run time: nvcc takes the parameter's
 * address with cvta.param and reads it through a generic pointer. */
static const char param_address_ptx[] = PTX_HEADER
    ".visible .entry pick(.param .align 4 .b8 table[16], .param .u32 index, .param .u64 out)\n{\n"
    ".reg .b32 %r<4>; .reg .b64 %rd<8>;\n"
    "mov.b64 %rd1, table; cvta.param.u64 %rd2, %rd1;\n"
    "ld.param.u32 %r1, [index]; mul.wide.u32 %rd3, %r1, 4; add.s64 %rd4, %rd2, %rd3; ld.u32 %r2, [%rd4];\n"
    "ld.param.u64 %rd5, [out]; st.global.u32 [%rd5], %r2;\nret;\n}\n";

Test(ptx_control, parameters_read_through_generic_addresses)
{
    start_device(0);
    CUmodule module = load_ptx(param_address_ptx);
    CUfunction function = kernel_of(module, "pick");
    uint32_t table[4] = {11, 22, 33, 44}, index = 2;
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, 4));
    void *params[] = {table, &index, &out};
    EXPECT_OK(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    uint32_t value = 0;
    EXPECT_OK(cuMemcpyDtoH(&value, out, 4));
    cr_expect_eq(value, 33);
}

/* __syncthreads_count/_and/_or: bar.red reduces a predicate over the CTA. */
static const char barrier_reduction_ptx[] = PTX_HEADER
    ".visible .entry reduce(.param .u64 out)\n{\n"
    ".reg .b32 %r<12>; .reg .b64 %rd<8>; .reg .pred %p<6>;\n"
    "mov.u32 %r1, %tid.x; rem.u32 %r2, %r1, 3; setp.eq.s32 %p1, %r2, 0;\n"
    "bar.red.popc.u32 %r3, 0, %p1;\n"
    "setp.lt.u32 %p2, %r1, 1000; bar.red.and.pred %p3, 0, %p2;\n"
    "setp.eq.u32 %p4, %r1, 5; bar.red.or.pred %p5, 1, !%p4;\n"
    "selp.u32 %r4, 10, 0, %p3; selp.u32 %r5, 1, 0, %p5; mad.lo.s32 %r6, %r3, 100, %r4; add.s32 %r6, %r6, %r5;\n"
    "ld.param.u64 %rd1, [out]; mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r6;\n"
    "ret;\n}\n";

Test(ptx_control, barrier_reductions_count_and_combine_predicates)
{
    start_device(0);
    enum { THREADS = 300 };
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, THREADS * 4));
    run_1d(barrier_reduction_ptx, "reduce", 2, THREADS, out);
    uint32_t r[THREADS];
    EXPECT_OK(cuMemcpyDtoH(r, out, sizeof r));
    for (unsigned t = 0; t < THREADS; t++)
        cr_expect_eq(r[t], 100 * 100 + 10 + 1, "thread %u: %u", t, r[t]);
}

/* Device functions nvcc does not inline (the slow paths of double sin/cos
 * and pow are such): appended to the kernel, with their own registers,
 * local memory and parameters. Lanes call from a divergent branch, one
 * function calls another, and the lanes that skipped the call wait for the
 * callers before a shuffle of the whole warp. */
static const char calls_ptx[] = PTX_HEADER
    ".func (.param .b32 result) twice(.param .b32 value);\n"
    ".visible .entry calls(.param .u64 out)\n{\n"
    ".reg .b32 %r<12>; .reg .b64 %rd<8>; .reg .pred %p<3>;\n"
    "mov.u32 %r1, %laneid; mov.u32 %r2, 0;\n"
    "and.b32 %r3, %r1, 1; setp.eq.s32 %p1, %r3, 0; @%p1 bra $skip;\n"
    "{\n.param .b32 param0;\n.param .b32 retval0;\nst.param.b32 [param0+0], %r1;\n"
    "call.uni (retval0), plus_one_twice, (param0);\nld.param.b32 %r2, [retval0+0];\n}\n"
    "$skip:\n"
    "shfl.sync.bfly.b32 %r4, %r2, 1, 31, -1;\n"
    "add.s32 %r5, %r2, %r4;\n"
    "ld.param.u64 %rd1, [out]; mov.u32 %r6, %tid.x; mul.wide.u32 %rd2, %r6, 4; add.s64 %rd3, %rd1, %rd2;\n"
    "st.global.u32 [%rd3], %r5;\nret;\n}\n"
    ".func (.param .b32 result) plus_one_twice(.param .b32 value)\n{\n"
    ".local .align 4 .b8 depot[8];\n"
    ".reg .b32 %r<6>; .reg .b64 %rd<3>;\n"
    "ld.param.u32 %r1, [value]; add.s32 %r2, %r1, 1;\n"
    "mov.u64 %rd1, depot; st.local.u32 [%rd1+4], %r2;\n"
    "{\n.param .b32 param0;\n.param .b32 retval0;\nst.param.b32 [param0+0], %r2;\n"
    "call.uni (retval0), twice, (param0);\nld.param.b32 %r3, [retval0+0];\n}\n"
    "ld.local.u32 %r4, [%rd1+4]; add.s32 %r5, %r3, %r4; sub.s32 %r5, %r5, %r2;\n"
    "st.param.b32 [result+0], %r5;\nret;\n}\n"
    ".func (.param .b32 result) twice(.param .b32 value)\n{\n"
    ".reg .b32 %r<3>;\nld.param.u32 %r1, [value]; shl.b32 %r2, %r1, 1; st.param.b32 [result], %r2;\nret;\n}\n"
    ".func loop_forever()\n{\n"
    "{\n call.uni loop_forever, ();\n}\nret;\n}\n"
    ".visible .entry recursive()\n{\ncall.uni loop_forever, ();\nret;\n}\n";

Test(ptx_control, device_functions_are_called_and_return, .init = cr_redirect_stderr)
{
    start_device(0);
    enum { THREADS = 64 };
    CUdeviceptr out;
    EXPECT_OK(cuMemAlloc(&out, THREADS * 4));
    run_1d(calls_ptx, "calls", 1, THREADS, out);
    uint32_t r[THREADS];
    EXPECT_OK(cuMemcpyDtoH(r, out, sizeof r));
    for (unsigned t = 0; t < THREADS; t++) {
        unsigned odd_lane = (t % 32) | 1;
        cr_expect_eq(r[t], 2 * (odd_lane + 1), "thread %u: %u", t, r[t]);
    }
    CUmodule module = load_ptx(calls_ptx);
    EXPECT_RESULT(cuLaunchKernel(kernel_of(module, "recursive"), 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                  CUDA_ERROR_NOT_SUPPORTED);
}

Test(ptx_control, warp_reductions_and_bit_scans)
{
    start_device(0);
    CHECK_CASES("bfind.shiftamt.u32 %r20, %r10;\n" RESULT_R32, {0x00010000u, 0, 0, 15}, {0, 0, 0, 0xffffffffu},
                {1, 0, 0, 31});
    /* Lane i holds a = i (the template's inputs): add, max, and over 32 lanes. */
    uint64_t inputs[3 * 32], results[32];
    for (unsigned i = 0; i < 32; i++) {
        inputs[3 * i] = i;
        inputs[3 * i + 1] = inputs[3 * i + 2] = 0;
    }
    run_template("redux.sync.add.s32 %r2, %r10, -1;\nredux.sync.max.u32 %r3, %r10, -1;\n"
                 "redux.sync.or.b32 %r4, %r10, -1;\nmov.b64 %rd20, {%r2, %r3};\nadd.s32 %r4, %r4, 0;\n"
                 "cvt.u64.u32 %rd21, %r4;\nshl.b64 %rd21, %rd21, 56;\nadd.s64 %rd20, %rd20, %rd21;\n",
                 32, inputs, results);
    for (unsigned i = 0; i < 32; i++)
        cr_expect_eq(results[i], ((uint64_t)31 << 56) + ((uint64_t)31 << 32) + 496, "lane %u: 0x%llx", i,
                     (unsigned long long)results[i]);
}

/* Environment registers and performance counters exist and read 0: the
 * driver passes no environment values and nothing counts events. */
Test(ptx_control, environment_registers_and_counters_read_zero)
{
    start_device(0);
    CHECK_CASES("mov.u32 %r20, %envreg0;\nmov.u32 %r21, %envreg31;\nor.b32 %r20, %r20, %r21;\n"
                "mov.u32 %r21, %pm0;\nor.b32 %r20, %r20, %r21;\nmov.u64 %rd21, %pm7_64;\n"
                "cvt.u32.u64 %r21, %rd21;\nor.b32 %r20, %r20, %r21;\nadd.u32 %r20, %r20, 7;\n" RESULT_R32,
                {0, 0, 0, 7});
}

/* A cooperative grid's CTAs are all resident: each one arrives at a
 * counter and spins until every CTA has, which can only finish if every
 * CTA runs in turns (there are more CTAs than host threads). %envreg1 and
 * %envreg2 hold the grid barrier's address, as cooperative groups read it. */
static const char resident_ptx[] = PTX_HEADER
    ".visible .entry meet(.param .u64 counter, .param .u64 out)\n{\n"
    ".reg .pred %p<3>; .reg .b32 %r<10>; .reg .b64 %rd<8>;\n"
    "ld.param.u64 %rd1, [counter]; ld.param.u64 %rd2, [out];\n"
    "mov.u32 %r1, %tid.x; setp.ne.u32 %p1, %r1, 0; @%p1 bra DONE;\n"
    "mov.u32 %r2, %nctaid.x; atom.global.add.u32 %r3, [%rd1], 1;\n"
    "SPIN:\nld.volatile.global.u32 %r4, [%rd1]; setp.lt.u32 %p2, %r4, %r2; @%p2 bra SPIN;\n"
    "mov.u32 %r5, %ctaid.x; mul.wide.u32 %rd3, %r5, 8; add.s64 %rd4, %rd2, %rd3;\n"
    "mov.u32 %r6, %envreg1; mov.u32 %r7, %envreg2; st.global.v2.u32 [%rd4], {%r7, %r6};\n"
    "DONE:\nret;\n}\n";

Test(ptx_control, a_cooperative_grid_runs_every_cta_in_turns)
{
    setenv("GPUSIM_KERNEL_THREADS", "1", 1);
    start_device(0);
    CUmodule module = load_ptx(resident_ptx);
    CUfunction function = kernel_of(module, "meet");
    const unsigned blocks = 24;
    CUdeviceptr counter, out;
    EXPECT_OK(cuMemAlloc(&counter, 4));
    EXPECT_OK(cuMemAlloc(&out, blocks * 8));
    EXPECT_OK(cuMemsetD32(counter, 0, 1));
    EXPECT_OK(cuMemsetD32(out, 0, blocks * 2));
    void *params[] = {&counter, &out};
    EXPECT_OK(cuLaunchCooperativeKernel(function, blocks, 1, 1, 64, 1, 1, 0, NULL, params));
    EXPECT_OK(cuCtxSynchronize());
    uint64_t workspace[24];
    EXPECT_OK(cuMemcpyDtoH(workspace, out, sizeof workspace));
    for (unsigned block = 0; block < blocks; block++) {
        cr_expect_neq(workspace[block], 0, "block %u sees no grid barrier", block);
        cr_expect_eq(workspace[block], workspace[0], "block %u sees another barrier", block);
    }
    /* Outside a cooperative launch there is no grid barrier. */
    EXPECT_OK(cuMemsetD32(counter, 0, 1));
    EXPECT_OK(cuLaunchKernel(function, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuMemcpyDtoH(workspace, out, 8));
    cr_expect_eq(workspace[0], 0);
    EXPECT_OK(cuModuleUnload(module));
}
